//! `host.json`: the client machine a run was measured on, so that a comparison of two runs can
//! say when they came from different machines (users publish comparisons of two machines side
//! by side, and a different CPU explains more than any setting).
//!
//! Schema (version 1), written atomically (a temporary file and a rename) when `sbsuite run`
//! creates the run directory:
//!
//! ```json
//! {
//!   "schema": 1,
//!   "client": {
//!     "recorded_at": "2026-12-01T16:00:00Z",
//!     "hostname": "bench-1",
//!     "os": "Debian GNU/Linux 12 (bookworm)",
//!     "kernel": "6.1.0-18-amd64",
//!     "cpu_model": "AMD EPYC 7B13",
//!     "logical_cores": 2,
//!     "memory_bytes": 8335151104,
//!     "sbsuite_version": "0.1.0",
//!     "wire_io": "io_uring",
//!     "unreadable": { "cpu_model": "/proc/cpuinfo: no `model name` line" }
//!   },
//!   "resumed_on": [ { "recorded_at": "…", "hostname": "bench-2", … } ],
//!   "server_process": { "recorded_at": "…", "source": "ssh:root@db1", "hostname": "db1",
//!                       "process": "mariadbd", "pid": 812 }
//! }
//! ```
//!
//! - `client`: every fact is read where Linux keeps it (`/proc/cpuinfo` `model name` and its
//!   `processor` entries, `/proc/meminfo` `MemTotal`, `/proc/sys/kernel/osrelease` as
//!   `uname -r` prints it, `/etc/os-release` `PRETTY_NAME`, `/proc/sys/kernel/hostname`). A
//!   fact that cannot be read is `null`, and `unreadable` (left out when empty) says why:
//!   failing to describe the machine costs the record, never the run. `wire_io` is how the
//!   MySQL and PostgreSQL wire clients drove their sockets ([`crate::db::ring`]): `io_uring`,
//!   or `blocking (why)` (`SBSUITE_WIRE_IO=blocking`, a kernel that refuses io_uring).
//! - `resumed_on`: `run --resume` keeps the file; when the machine that resumes differs from
//!   `client` (or from the last entry), its facts are appended here, so a run finished on
//!   another machine says so. Left out when empty.
//! - `server_process`: where the server's process CPU and the host CPU and disk counters of
//!   `server_counters.csv` were read (#29): `local` (this host) or `[target] server_host`, that
//!   host's name, the process's name and pid; the last one found (a restarted server is found
//!   again). Left out when they were read nowhere (a server on another host without
//!   `server_host`, SQLite, `server_cost = false`).
//!
//! The server side is not here: the server's version and host facts (MySQL/MariaDB
//! `version`, `version_comment`, `hostname`, `innodb_buffer_pool_size`…; PostgreSQL
//! `version()`, `server_version`, `inet_server_addr()`…) are in the per-variant capture
//! `server/<variant>.csv` that `sbsuite run` already writes ([`crate::runner`]'s server
//! module), so they are read from there, not queried twice. Directories without `host.json`
//! (older builds, `sbsuite import`) still load: their client host is unknown.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::{ResultsError, io_err};

/// The file name inside a run directory.
pub const HOST_FILE: &str = "host.json";

/// The schema version written in `host.json`.
pub const HOST_SCHEMA: u32 = 1;

/// The contents of `host.json` (see the module documentation for the schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub schema: u32,
    /// The machine that started the run.
    pub client: HostFacts,
    /// Machines that resumed the run and differ from `client` (in order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed_on: Vec<HostFacts>,
    /// Where the server's process CPU and the host's CPU and disk counters of
    /// `server_counters.csv` were read (#29); left out when they were read nowhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<ServerProcess>,
}

/// The server process whose /proc the cost counters come from: the last one found (a
/// restarted server is found again).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerProcess {
    /// When it was found (RFC 3339, UTC).
    pub recorded_at: String,
    /// `local` (this host), or `[target] server_host` as written (`ssh:root@db1`,
    /// `kubernetes:bench/mariadb-0`).
    pub source: String,
    /// That host's name (`/proc/sys/kernel/hostname` there).
    pub hostname: Option<String>,
    /// The process's name (`/proc/PID/comm`) and pid there.
    pub process: String,
    pub pid: i32,
}

/// The facts of one client machine; `None` where a fact could not be read (`unreadable`
/// says why).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// When these facts were read (RFC 3339, UTC).
    #[serde(default)]
    pub recorded_at: String,
    pub hostname: Option<String>,
    /// `/etc/os-release` `PRETTY_NAME`.
    pub os: Option<String>,
    /// The kernel release (`uname -r`).
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    /// Logical CPUs of the machine (`processor` entries of `/proc/cpuinfo`).
    pub logical_cores: Option<u64>,
    /// Total memory (`MemTotal`), in bytes.
    pub memory_bytes: Option<u64>,
    /// The version of sbsuite that ran.
    #[serde(default)]
    pub sbsuite_version: String,
    /// How the MySQL and PostgreSQL wire clients drove their sockets (#32): `io_uring`, or
    /// `blocking (why)`; left out by builds before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_io: Option<String>,
    /// Fact name → why it could not be read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unreadable: BTreeMap<String, String>,
}

/// The texts [`HostFacts::parse`] reads the facts from, each the file's content or why it
/// could not be read.
pub struct Sources {
    pub cpuinfo: Result<String, String>,
    pub meminfo: Result<String, String>,
    pub os_release: Result<String, String>,
    pub kernel: Result<String, String>,
    pub hostname: Result<String, String>,
}

impl Sources {
    /// The files of this machine.
    pub fn read() -> Sources {
        let read = |p: &str| fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        Sources {
            cpuinfo: read("/proc/cpuinfo"),
            meminfo: read("/proc/meminfo"),
            os_release: read("/etc/os-release"),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
        }
    }
}

impl HostFacts {
    /// The facts of this machine, now.
    pub fn collect(now: DateTime<Utc>) -> HostFacts {
        HostFacts::parse(&Sources::read(), now)
    }

    /// The facts in `src` (pure: unit-tested on sample files).
    pub fn parse(src: &Sources, now: DateTime<Utc>) -> HostFacts {
        let mut unreadable = BTreeMap::new();
        let mut fact = |name: &str, value: Result<Option<String>, String>, what: &str| match value {
            Ok(Some(v)) if !v.is_empty() => Some(v),
            Ok(_) => {
                unreadable.insert(name.to_string(), format!("no {what}"));
                None
            }
            Err(e) => {
                unreadable.insert(name.to_string(), e);
                None
            }
        };
        let cpuinfo = src.cpuinfo.as_deref().map_err(String::clone);
        let cpu_model = fact(
            "cpu_model",
            cpuinfo.clone().map(|t| field(t, ':', "model name")),
            "`model name` line in /proc/cpuinfo",
        );
        let cores = fact(
            "logical_cores",
            cpuinfo.map(|t| {
                let n = t
                    .lines()
                    .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
                    .count();
                (n > 0).then(|| n.to_string())
            }),
            "`processor` entries in /proc/cpuinfo",
        );
        let memory = fact(
            "memory_bytes",
            src.meminfo.as_deref().map_err(String::clone).map(|t| {
                field(t, ':', "MemTotal").and_then(|v| {
                    let kib: u64 = v.trim_end_matches("kB").trim().parse().ok()?;
                    Some((kib * 1024).to_string())
                })
            }),
            "`MemTotal` in /proc/meminfo",
        );
        let os = fact(
            "os",
            src.os_release
                .as_deref()
                .map_err(String::clone)
                .map(|t| field(t, '=', "PRETTY_NAME").map(|v| v.trim_matches('"').to_string())),
            "`PRETTY_NAME` in /etc/os-release",
        );
        let trimmed = |r: &Result<String, String>| r.clone().map(|t| Some(t.trim().to_string()));
        let kernel = fact("kernel", trimmed(&src.kernel), "kernel release");
        let hostname = fact("hostname", trimmed(&src.hostname), "hostname");
        HostFacts {
            recorded_at: now.to_rfc3339_opts(SecondsFormat::Secs, true),
            hostname,
            os,
            kernel,
            cpu_model,
            logical_cores: cores.and_then(|c| c.parse().ok()),
            memory_bytes: memory.and_then(|m| m.parse().ok()),
            sbsuite_version: env!("CARGO_PKG_VERSION").to_string(),
            wire_io: None,
            unreadable,
        }
    }

    /// `(field, value)` of every fact that describes the machine (not `recorded_at` nor
    /// `unreadable`), values as the comparison shows them; an unread fact is `unknown`.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        vec![
            ("cpu", text(&self.cpu_model)),
            (
                "cores",
                self.logical_cores
                    .map_or("unknown".into(), |c| c.to_string()),
            ),
            (
                "memory",
                self.memory_bytes.map_or("unknown".into(), |b| {
                    format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30))
                }),
            ),
            ("kernel", text(&self.kernel)),
            ("os", text(&self.os)),
            ("hostname", text(&self.hostname)),
            ("sbsuite", self.sbsuite_version.clone()),
            ("wire I/O", text(&self.wire_io)),
        ]
    }

    /// The same machine and build: every fact but the time of reading equal.
    fn same_machine(&self, other: &HostFacts) -> bool {
        self.fields() == other.fields()
    }
}

/// The value of the first `key<sep>value` line of `text` (both sides trimmed).
fn field(text: &str, sep: char, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(sep)?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// Writes `host.json` for a new run in `dir` with `client` (atomically).
pub fn write_new(dir: &Path, client: HostFacts) -> Result<(), ResultsError> {
    write(
        dir,
        &HostRecord {
            schema: HOST_SCHEMA,
            client,
            resumed_on: Vec::new(),
            server_process: None,
        },
    )
}

/// Records in the `host.json` of the run in `dir` where the cost's process counters come
/// from. A directory without a readable `host.json` is left as it is.
pub fn record_server_process(dir: &Path, server: ServerProcess) -> Result<(), ResultsError> {
    let Ok(mut record) = read(dir) else {
        return Ok(());
    };
    if record.server_process.as_ref().is_some_and(|s| {
        (&s.source, &s.hostname, &s.process, s.pid)
            == (
                &server.source,
                &server.hostname,
                &server.process,
                server.pid,
            )
    }) {
        return Ok(());
    }
    record.server_process = Some(server);
    write(dir, &record)
}

/// On `run --resume` of the run in `dir` on the machine `now_on`: the record is kept, and
/// `now_on` is appended to `resumed_on` when it differs from the last machine recorded. A
/// run directory without a readable `host.json` (started by an older build) is left without
/// one: the machine that started it is unknown, and recording the resuming one as its client
/// would be wrong.
pub fn record_resume(dir: &Path, now_on: HostFacts) -> Result<(), ResultsError> {
    let Ok(mut record) = read(dir) else {
        return Ok(());
    };
    let last = record.resumed_on.last().unwrap_or(&record.client);
    if last.same_machine(&now_on) {
        return Ok(());
    }
    record.resumed_on.push(now_on);
    write(dir, &record)
}

fn write(dir: &Path, record: &HostRecord) -> Result<(), ResultsError> {
    let path = dir.join(HOST_FILE);
    let mut json = serde_json::to_string_pretty(record).map_err(|source| ResultsError::Json {
        path: path.clone(),
        source,
    })?;
    json.push('\n');
    let tmp = dir.join(format!("{HOST_FILE}.tmp"));
    fs::write(&tmp, json).map_err(io_err(&tmp))?;
    fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io_err(&tmp))?;
    fs::rename(&tmp, &path).map_err(io_err(&path))
}

/// Why a run's client machine is unknown: it has no `host.json` (an older build or an imported
/// run), or the file cannot be read or parsed. Clone (sources shared), as the loaded run is.
#[derive(Clone, Debug, thiserror::Error)]
pub enum HostFileError {
    #[error("no {HOST_FILE}")]
    Missing,
    #[error("{}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    #[error("{}: {source}", .path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: std::sync::Arc<serde_json::Error>,
    },
}

/// The `host.json` of the run in `dir`, or why there is none to read.
pub fn read(dir: &Path) -> Result<HostRecord, HostFileError> {
    let path = dir.join(HOST_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(HostFileError::Missing);
        }
        Err(e) => {
            return Err(HostFileError::Unreadable {
                path,
                source: e.into(),
            });
        }
    };
    serde_json::from_str(&text).map_err(|e| HostFileError::Malformed {
        path,
        source: e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 16, 0, 0).unwrap()
    }

    fn sources() -> Sources {
        Sources {
            cpuinfo: Ok("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n".into()),
            meminfo: Ok("MemTotal:        8139796 kB\nMemFree:  1 kB\n".into()),
            os_release: Ok("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n".into()),
            kernel: Ok("6.1.0-18-amd64\n".into()),
            hostname: Ok("bench-1\n".into()),
        }
    }

    #[test]
    fn facts_are_read_from_the_linux_files() {
        let f = HostFacts::parse(&sources(), now());
        assert_eq!(f.cpu_model.as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(f.logical_cores, Some(2));
        assert_eq!(f.memory_bytes, Some(8_139_796 * 1024));
        assert_eq!(f.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
        assert_eq!(f.kernel.as_deref(), Some("6.1.0-18-amd64"));
        assert_eq!(f.hostname.as_deref(), Some("bench-1"));
        assert_eq!(f.recorded_at, "2026-12-01T16:00:00Z");
        assert!(f.unreadable.is_empty(), "{:?}", f.unreadable);
    }

    #[test]
    fn an_unreadable_fact_is_null_with_the_reason() {
        let mut s = sources();
        s.cpuinfo = Ok("processor : 0\nHardware : BCM2835\n".into());
        s.meminfo = Err("/proc/meminfo: Permission denied".into());
        let f = HostFacts::parse(&s, now());
        assert_eq!((f.cpu_model, f.logical_cores), (None, Some(1)));
        assert_eq!(f.memory_bytes, None);
        assert_eq!(
            f.unreadable["cpu_model"],
            "no `model name` line in /proc/cpuinfo"
        );
        assert_eq!(
            f.unreadable["memory_bytes"],
            "/proc/meminfo: Permission denied"
        );
    }

    #[test]
    fn a_resume_keeps_the_record_and_appends_another_machine() {
        let dir = tempfile::tempdir().unwrap();
        let here = HostFacts::parse(&sources(), now());
        write_new(dir.path(), here.clone()).unwrap();
        let first = fs::read_to_string(dir.path().join(HOST_FILE)).unwrap();
        // Same machine, later: nothing changes.
        let mut later = here.clone();
        later.recorded_at = "2026-12-02T00:00:00Z".into();
        record_resume(dir.path(), later).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join(HOST_FILE)).unwrap(),
            first
        );
        // Another machine: appended once.
        let mut other = here.clone();
        other.hostname = Some("bench-2".into());
        record_resume(dir.path(), other.clone()).unwrap();
        record_resume(dir.path(), other.clone()).unwrap();
        let r = read(dir.path()).unwrap();
        assert_eq!((r.client, r.resumed_on), (here, vec![other]));
        assert!(!dir.path().join("host.json.tmp").exists());
        // No file (a run of an older build resumed): its first machine stays unknown.
        let old = tempfile::tempdir().unwrap();
        assert_eq!(read(old.path()).unwrap_err().to_string(), "no host.json");
        record_resume(old.path(), HostFacts::parse(&sources(), now())).unwrap();
        assert_eq!(read(old.path()).unwrap_err().to_string(), "no host.json");
    }

    #[test]
    fn the_server_process_is_recorded_and_replaced_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        write_new(dir.path(), HostFacts::parse(&sources(), now())).unwrap();
        let server = ServerProcess {
            recorded_at: "2026-12-01T16:00:00Z".into(),
            source: "ssh:root@db1".into(),
            hostname: Some("db1".into()),
            process: "mariadbd".into(),
            pid: 812,
        };
        record_server_process(dir.path(), server.clone()).unwrap();
        let text = fs::read_to_string(dir.path().join(HOST_FILE)).unwrap();
        assert!(text.contains("\"server_process\": {"), "{text}");
        // The same process found again later: the record stays as it was.
        let later = ServerProcess {
            recorded_at: "2026-12-01T17:00:00Z".into(),
            ..server.clone()
        };
        record_server_process(dir.path(), later).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join(HOST_FILE)).unwrap(),
            text
        );
        // Restarted: the new pid replaces it.
        let restarted = ServerProcess {
            pid: 900,
            ..server.clone()
        };
        record_server_process(dir.path(), restarted.clone()).unwrap();
        assert_eq!(read(dir.path()).unwrap().server_process, Some(restarted));
        // A host.json without it (older builds) still reads.
        let old = r#"{"schema": 1, "client": {"hostname": null, "os": null, "kernel": null,
            "cpu_model": null, "logical_cores": null, "memory_bytes": null}}"#;
        fs::write(dir.path().join(HOST_FILE), old).unwrap();
        assert_eq!(read(dir.path()).unwrap().server_process, None);
    }
}
