//! A suite's database on SQLite or a shared server, made fresh for a test, and running a suite
//! text with its results in a test's directory: what the custom-workload and library tests
//! share.

use std::collections::HashMap;
use std::path::Path;

use super::db::{admin_my, admin_pg};

/// Where a test's suite runs.
#[derive(Clone, Copy, Debug)]
pub enum Db {
    Lite,
    My,
    Pg,
}

impl Db {
    /// A fresh database `db` on the shared server and the suite's `[target]` for it; `None`
    /// after a recorded skip when the server is not there. (SQLite: see [`Db::fresh_in`].)
    pub fn fresh(self, db: &str) -> Option<String> {
        self.fresh_in(db, &std::env::temp_dir())
    }

    /// [`Db::fresh`], SQLite's database being the file `dir/db.db`.
    pub fn fresh_in(self, db: &str, dir: &Path) -> Option<String> {
        let (made, skip, target) = match self {
            Db::Lite => {
                return Some(format!(
                    "[target]\ndriver = \"sqlite\"\npath = \"{}\"\n",
                    dir.join(format!("{db}.db")).display()
                ));
            }
            Db::My => (
                admin_my(&[
                    format!("DROP DATABASE IF EXISTS {db}"),
                    format!("CREATE DATABASE {db}"),
                ]),
                "no MySQL/MariaDB server accepts root@127.0.0.1:3306 (.ci/run starts one)",
                format!(
                    "[target]\ndriver = \"mysql\"\nhosts = [\"127.0.0.1:3306\"]\nuser = \"root\"\ndatabase = \"{db}\"\n"
                ),
            ),
            Db::Pg => (
                admin_pg(&[
                    format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
                    format!("CREATE DATABASE {db}"),
                ]),
                "no PostgreSQL server accepts postgres@127.0.0.1:5432 (.ci/run starts one)",
                format!(
                    "[target]\ndriver = \"pgsql\"\nhosts = [\"127.0.0.1:5432\"]\nuser = \"postgres\"\ndatabase = \"{db}\"\n"
                ),
            ),
        };
        if made.is_none() {
            super::skip(skip);
        }
        made.map(|()| target)
    }

    /// Drops the server database `db` (SQLite's file goes with the test's directory).
    pub fn drop(self, db: &str) {
        match self {
            Db::Lite => None,
            Db::My => admin_my(&[format!("DROP DATABASE IF EXISTS {db}")]),
            Db::Pg => admin_pg(&[format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")]),
        };
    }
}

/// Runs the suite `text` (written to `dir/suite.toml`) with its results under `dir/results`:
/// exit code, stdout, stderr.
pub fn run(dir: &Path, text: &str) -> (Option<i32>, String, String) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    let out = super::sbsuite()
        .arg("run")
        .arg(&path)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .args(["--progress", "off"])
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The transaction rows of the transactions.csv files under `root`: name → (count, errors,
/// rollbacks).
pub fn txn_counts(root: &Path) -> HashMap<String, (i64, i64, i64)> {
    let mut out = HashMap::new();
    for r in super::csv_rows(root, "transactions.csv") {
        if r["kind"] != "transaction" {
            continue;
        }
        let n = |k: &str| r[k].parse::<i64>().unwrap();
        let e = out.entry(r["transaction"].clone()).or_insert((0, 0, 0));
        e.0 += n("count");
        e.1 += n("errors");
        e.2 += n("rollbacks");
    }
    out
}
