//! A sysbench Lua script with the modules it `require`s, as one value that can travel to
//! another process and be written back to disk there (#27: Lua scripts on `[clients]`).
//!
//! Shape, and why:
//! * The coordinator of a multi-client run loaded the script from its own disk; an agent may
//!   run on another machine, or in a working directory where other files of the same name
//!   lie. So the coordinator ships the script's source and every module it found for it
//!   (each with its path relative to the directory `require` searched, `./NAME.lua` or
//!   `./NAME/init.lua`, and its SHA-256), and the agent writes them into a private directory
//!   of its own with the same layout ([`ScriptBundle::materialize`]).
//! * Each file's SHA-256 is checked before it is written: a file that does not match what the
//!   coordinator recorded is refused, never run, so an agent runs exactly the code the
//!   coordinator loaded (and the run's `suite.toml` records).
//! * The private module directory goes first on `package.path` ([`super::Script::module_root`]),
//!   so the shipped copy wins over anything in the agent's working directory; modules the
//!   coordinator did not find in its working directory (sysbench's own `oltp_common`, a
//!   `LUA_PATH` entry) are looked up on the agent's path as before.
//! * Contents travel as base64: a Lua file need not be UTF-8, and its hash is of its bytes.

use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most modules a bundle may carry (a script with hundreds of modules is not a benchmark).
pub const MAX_MODULES: usize = 1024;

/// The most bytes a bundle's files may hold together.
pub const MAX_BYTES: usize = 16 << 20;

/// One file of a [`ScriptBundle`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleFile {
    /// Relative, `/`-separated: the module's path below the directory `require` searched, or
    /// the script's file name.
    pub path: String,
    /// SHA-256 of the contents, lowercase hex.
    pub sha256: String,
    /// The contents, base64.
    pub base64: String,
}

impl std::fmt::Debug for BundleFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundleFile")
            .field("path", &self.path)
            .field("sha256", &self.sha256)
            .field("bytes", &(self.base64.len() / 4 * 3))
            .finish()
    }
}

impl BundleFile {
    /// The file at relative `path` with `bytes`, hashed.
    pub fn new(path: impl Into<String>, bytes: &[u8]) -> BundleFile {
        BundleFile {
            path: path.into(),
            sha256: sha256_hex(bytes),
            base64: BASE64.encode(bytes),
        }
    }
}

/// A script and the modules it `require`s from the working directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptBundle {
    /// The script as the suite names it (the workload's name, `sysbench.cmdline.script_path`).
    pub typed: String,
    /// The script itself; its `path` is its file name.
    pub script: BundleFile,
    /// Its modules, by their path below the directory `require` searched.
    pub modules: Vec<BundleFile>,
}

/// Where [`ScriptBundle::materialize`] put a bundle.
#[derive(Debug)]
pub struct Materialized {
    /// The script's file.
    pub script: PathBuf,
    /// The directory its modules are in, with the layout they had on the coordinator: first on
    /// `package.path`.
    pub module_root: PathBuf,
}

/// A bundle that cannot be written: a file whose contents do not match its hash, a path that
/// would leave the directory, a directory that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(
        "{what} `{path}` of script `{typed}` does not match its sha256: the coordinator recorded {want}, the bytes that arrived hash to {got}; nothing of it ran (check the link between the coordinator and this client, and that both run the same sbsuite)"
    )]
    Mismatch {
        typed: String,
        what: &'static str,
        path: String,
        want: String,
        got: String,
    },
    #[error("script `{typed}`: {message}")]
    Invalid { typed: String, message: String },
    #[error("script `{typed}`: cannot write {path}: {source}")]
    Write {
        typed: String,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Lowercase hex of SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `path` as a relative path of normal components only (no `..`, no root, no `.`).
fn relative(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    let ok = !path.is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && !path.contains('\\');
    ok.then(|| p.to_path_buf())
}

impl ScriptBundle {
    /// Checks every file against its hash and writes the script to `dir/script/` and the
    /// modules below `dir/modules/` with their layout. `dir` should be empty and private to
    /// this process (a fresh temporary directory).
    pub fn materialize(&self, dir: &Path) -> Result<Materialized, BundleError> {
        let invalid = |message: String| BundleError::Invalid {
            typed: self.typed.clone(),
            message,
        };
        if self.modules.len() > MAX_MODULES {
            return Err(invalid(format!(
                "{} modules, more than the {MAX_MODULES} a script may bring",
                self.modules.len()
            )));
        }
        let module_root = dir.join("modules");
        // Lua's path template: `;` separates entries and `?` stands for the module name.
        if module_root.to_string_lossy().contains([';', '?']) {
            return Err(invalid(format!(
                "the temporary directory {} has `;` or `?` in its path, which package.path cannot hold: set TMPDIR to another directory",
                module_root.display()
            )));
        }
        let mut total = 0usize;
        let mut files = Vec::with_capacity(self.modules.len() + 1);
        let script_name = relative(&self.script.path)
            .filter(|p| p.components().count() == 1)
            .ok_or_else(|| {
                invalid(format!(
                    "the script's file name `{}` is not a plain file name",
                    self.script.path
                ))
            })?;
        let script_path = dir.join("script").join(script_name);
        for (what, file, at) in std::iter::once(("script", &self.script, script_path.clone()))
            .chain(self.modules.iter().map(|m| {
                let at = relative(&m.path).map_or_else(PathBuf::new, |p| module_root.join(p));
                ("module", m, at)
            }))
        {
            if at.as_os_str().is_empty() {
                return Err(invalid(format!(
                    "module path `{}` is not a relative path inside the module directory",
                    file.path
                )));
            }
            let bytes = BASE64
                .decode(&file.base64)
                .map_err(|e| invalid(format!("{what} `{}` is not valid base64: {e}", file.path)))?;
            total += bytes.len();
            if total > MAX_BYTES {
                return Err(invalid(format!(
                    "its files hold more than {MAX_BYTES} bytes together"
                )));
            }
            let got = sha256_hex(&bytes);
            if !got.eq_ignore_ascii_case(&file.sha256) {
                return Err(BundleError::Mismatch {
                    typed: self.typed.clone(),
                    what,
                    path: file.path.clone(),
                    want: file.sha256.clone(),
                    got,
                });
            }
            files.push((at, bytes));
        }
        // Written only once every file checked out: a refused bundle leaves nothing to load.
        for (at, bytes) in files {
            let write = || -> std::io::Result<()> {
                if let Some(parent) = at.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&at, bytes)
            };
            write().map_err(|source| BundleError::Write {
                typed: self.typed.clone(),
                path: at.clone(),
                source,
            })?;
        }
        std::fs::create_dir_all(&module_root).map_err(|source| BundleError::Write {
            typed: self.typed.clone(),
            path: module_root.clone(),
            source,
        })?;
        Ok(Materialized {
            script: script_path,
            module_root,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> ScriptBundle {
        ScriptBundle {
            typed: "scripts/sel.lua".into(),
            script: BundleFile::new("sel.lua", b"local h = require 'lib.helpers'\n"),
            modules: vec![BundleFile::new(
                "lib/helpers.lua",
                b"return { n = 1 } -- \xe9 not UTF-8\n",
            )],
        }
    }

    #[test]
    fn it_is_written_with_its_layout() {
        let dir = tempfile::tempdir().unwrap();
        let m = bundle().materialize(dir.path()).expect("materializes");
        assert_eq!(m.script, dir.path().join("script/sel.lua"));
        assert_eq!(
            std::fs::read(m.module_root.join("lib/helpers.lua")).unwrap(),
            b"return { n = 1 } -- \xe9 not UTF-8\n"
        );
        assert!(std::fs::read(&m.script).unwrap().starts_with(b"local h"));
    }

    /// A module whose bytes do not match the hash the coordinator recorded is refused, and
    /// nothing is written.
    #[test]
    fn a_tampered_file_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = bundle();
        b.modules[0].base64 = BASE64.encode(b"os.execute('rm -rf /')\n");
        let e = b.materialize(dir.path()).expect_err("tampered").to_string();
        assert!(
            e.contains(
                "module `lib/helpers.lua` of script `scripts/sel.lua` does not match its sha256"
            ),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut b = bundle();
        b.script.sha256 = sha256_hex(b"another");
        let e = b.materialize(dir.path()).expect_err("tampered").to_string();
        assert!(e.contains("script `sel.lua`"), "{e}");
    }

    #[test]
    fn paths_that_leave_the_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../x.lua", "/etc/x.lua", "", "a/../../x.lua", "./x.lua"] {
            let mut b = bundle();
            b.modules[0] = BundleFile::new(bad, b"return 1");
            let e = b.materialize(dir.path()).expect_err(bad).to_string();
            assert!(e.contains("not a relative path"), "{bad}: {e}");
        }
        let mut b = bundle();
        b.script = BundleFile::new("../sel.lua", b"x");
        assert!(b.materialize(dir.path()).is_err());
    }
}
