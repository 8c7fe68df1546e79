//! Rendering of results for people.
//!
//! [`console`] prints sysbench 1.0.20's text (banner, interim lines, final report) character for
//! character, because users parse that text with existing scripts. Other formats (HTML/SVG
//! charts) will get their own file next to it.

pub mod console;
