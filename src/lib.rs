//! sbsuite: benchmark suites for databases and systems.
//!
//! Data flows one way, one module per phase: a suite file ([`suite`]) is loaded and validated,
//! expanded into an ordered [`plan`], executed by the [`runner`] through the workload
//! [`engine`]s (which also print sysbench-shaped text and list every workload in
//! `engine::catalog`), and stored as CSV by [`results`]. [`report`] renders stored runs and
//! [`stats`] holds the latency histograms every engine shares. [`clients`] runs the run steps
//! from several client machines (ssh, Kubernetes, local child processes). [`source`], under
//! both the suite and the engines, maps TOML key paths to file positions for the errors of
//! hand-written configuration.
//!
//! Library modules return typed outcomes and errors; [`app`], the binary's edge, is the only
//! place that prints errors and turns them into exit codes.

// Config errors carry a file position and source line; they are returned once per command, never
// on a hot path, so their size does not matter.
#![allow(clippy::result_large_err)]

pub mod app;
pub mod bisect;
pub mod capacity;
pub mod cli;
pub mod clients;
pub mod compare;
pub mod compat;
pub mod db;
pub mod engine;
pub mod import;
pub mod plan;
pub mod report;
pub mod results;
pub mod runner;
pub mod source;
pub mod stats;
pub mod suite;
pub mod value;

pub use value::{Options, Value};
