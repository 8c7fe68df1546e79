//! The integration tests, as one test binary with a module per area (#27).
//!
//! Each file under `tests/` used to be a test binary of its own, and each linked the library
//! with LuaJIT, SQLite and both client stacks: 38 links after every change of `src/`, about
//! 6 GB of binaries in `target/`. One binary links once. Run one area, or one test, with a
//! filter on the module path:
//!
//! ```sh
//! cargo test --test all mysql_oltp::
//! cargo test --test all stop::a_looping_prepare_ends_at_the_first_ctrl_c
//! ```
//!
//! A filter matches anywhere in the name: `compat::` also runs `lua_compat::`, `run::` also
//! `lua_run::`, `hosts::` also `netns_hosts::` (add `--skip lua_compat::` and so on).
//!
//! What the areas now share, being one process, and how the tests live with it:
//! - The shared database servers. The harness runs the tests two or more at a time in the
//!   order of their names, so any area may overlap any other (they ran one binary after the
//!   other before): a test that reads the servers' global counters or changes their settings
//!   holds them alone, every other test that uses them holds them shared
//!   (`common::server_lock`, taken by the helpers of `common::db`).
//! - A child's peak RSS: `wait4` counts the memory a child inherits at its fork, which is now
//!   every running test's, so `common::measure` has the child started by a shell instead.
//! - The process is a child subreaper once a test needed one (`common::measure`,
//!   `common::private_server`): orphans of any test end as its zombies, not init's; the
//!   tests that look for leftover processes count zombies as gone.
//! - The working directory is the package root for every test, as cargo sets it, so relative
//!   paths (`tests/fixtures/…`, `tests/lua/…`) read as before; no test changes it or the
//!   process's environment, only those of the children it starts.
//! - `lua_sql`'s counting global allocator serves the whole binary; it counts only on a thread
//!   that turned counting on.

#[path = "../common/mod.rs"]
mod common;

mod bisect;
mod capacity;
mod cli;
mod client_threads;
mod clients;
mod clients_ssh;
mod compare;
mod compat;
mod completions;
mod connections;
mod cost;
mod cost_remote;
mod custom_def;
mod custom_workloads;
mod db_fetch;
mod docs;
mod faults;
mod fileio;
mod fuzz_suite;
mod general_options;
mod groups;
mod hostile_mysql;
mod hostile_pgsql;
mod hosts;
mod import;
mod kubernetes_example;
mod layers;
mod library;
mod lua_compat;
mod lua_run;
mod lua_sql;
mod lua_state;
mod lua_suite;
mod mysql_oltp;
mod netns_hosts;
mod observe;
mod oceanbase;
mod oceanbase_compat;
mod open_loop;
mod pgsql_oltp;
mod phases;
mod report;
mod resume;
mod run;
mod signals;
mod sqlite_oltp;
mod steady;
mod stop;
mod sysbench_shape;
mod system_engines;
mod tpcc;
mod tpch;
mod transactions;
mod txn_flow;
mod txn_language;
mod txn_rules;
mod user_data;
mod wire_io;
