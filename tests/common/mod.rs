//! Helpers shared by the integration tests.

use assert_cmd::Command;

/// The built `sbsuite` binary, with the developer's own SBSUITE_* variables removed (they
/// would override suite keys).
pub fn sbsuite() -> Command {
    let mut cmd = Command::cargo_bin("sbsuite").unwrap();
    for (k, _) in std::env::vars() {
        if k.starts_with("SBSUITE_") {
            cmd.env_remove(k);
        }
    }
    cmd
}
