//! The one way a test skips: without a server, sysbench or chromium on a developer's machine a
//! test says why and passes, but `cargo test` hides the stderr of passing tests, so a skip would
//! look like a pass. Every skip therefore also appends a line to the file named by
//! [`SKIP_LOG_ENV`] (`.ci/run` sets it, counts the lines and prints them in its summary), and
//! fails outright under `CI`, where everything a test needs is provided.
//!
//! Shared by the integration tests (`tests/common/mod.rs`) and the library's unit tests
//! (`src/db/io.rs`'s `testing` module, through `#[path]`), so both kinds skip the same way.

use std::io::Write;

/// The environment variable naming the file every skip appends one line to
/// (`<test binary> <test name>: <reason>`). Not an `SBSUITE_*` name: those are suite keys, and
/// every `sbsuite` a test starts would refuse an unknown one.
pub const SKIP_LOG_ENV: &str = "SKIPPED_TESTS_LOG";

/// Records that the calling test skips for `reason` (which says what is missing and how to get
/// it); the caller returns right after. Fails the test instead when `CI` is set.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    // The test binary's name without cargo's `-<hash>` suffix (`all`, `sbsuite`); the
    // harness names the thread after the test's path (`mysql_oltp::wrong_password_…`).
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, _)) => name.to_string(),
            None => s,
        })
        .unwrap_or_default();
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One write per line with O_APPEND: lines of tests running in parallel never mix.
        let line = format!("{binary} {test}: {reason}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!(
                "cannot append to {SKIP_LOG_ENV}={}: {e}",
                path.to_string_lossy()
            );
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but {test} would skip: {reason}"
    );
    eprintln!("skipped: {reason}");
}
