//! Rendering of results for people.
//!
//! [`console`] prints sysbench 1.0.20's text (banner, interim lines, final report) character for
//! character, because users parse that text with existing scripts. [`html`] draws runs as one
//! self-contained page with SVG charts (`sbsuite report`).

pub mod console;
pub mod html;
