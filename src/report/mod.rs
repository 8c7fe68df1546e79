//! Rendering of results for people.
//!
//! [`html`] draws runs as one self-contained page with SVG charts (`sbsuite report`);
//! [`transactions`] is the per-transaction table of a custom workload's run, in the page and
//! as text, Markdown or JSON (`sbsuite report --format`); [`html::capacity`] tells and draws
//! a capacity search's curve (#30), for the search's own output and for the page. The
//! sysbench-shaped console text of a running step is the engines' (`crate::engine::console`).

pub mod html;
pub mod transactions;
