//! Rendering of results for people.
//!
//! [`html`] draws runs as one self-contained page with SVG charts (`sbsuite report`). The
//! sysbench-shaped console text of a running step is the engines' (`crate::engine::console`).

pub mod html;
