//! sysbench's `fileio` test: prepare/cleanup of `test_file.N` and the six run modes over sync
//! (pread/pwrite), async (io_uring) and mmap I/O.
//!
//! Shape, and why:
//!
//! * [`FileIo`] holds the validated options (checked once in [`Config::new`], for prepare and run
//!   alike; the run-only checks and the opening of the files happen in
//!   [`Workload::before_run`], before the banner, so a missing `prepare` fails before anything
//!   is printed and creates nothing).
//! * The request sequence (shared sequential cursor, fsync bursts) is sysbench's, computed from
//!   one global atomic ticket by the pure functions of [`schedule`] instead of under a mutex.
//!   Random modes without periodic fsync do not touch any shared state at all.
//! * Workers own their counters and publish them with single-writer stores into their own
//!   cache-line-aligned [`IoSlot`]; the collector diffs the slots for each interim line
//!   (`interim`) and sums them for the final `File operations:` block.
//! * `rndrw` picks read or write from the worker's own completed-operation counts (sysbench
//!   uses global ones); each worker converges to the same `file_rw_ratio`, so the mix is the
//!   same and no counter is shared between threads.
//! * `seqwr` unlinks and re-creates the files (O_EXCL) like sysbench, so it is the one mode that
//!   runs without a prepare; every other mode refuses missing or short files.
//! * One file per I/O concern: [`files`] (descriptors, mappings, sync/mmap ops), [`uring`]
//!   (async), [`validate`] (checksummed blocks).

pub mod files;
pub mod schedule;
pub mod uring;
pub mod validate;

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use self::files::{AlignedBuf, ExtraFlags, Files, OpenSpec};
use self::schedule::{Extent, FsyncSchedule, Geometry, Slot};
use super::config::{RunConfig, UNBOUNDED};
use super::driver::{Admin, EventResult, Scope, Worker, Workload};
use super::option::{Kind, OptSpec, Reader};
use super::random::Rng;
use super::spec::{DataSpec, Setup, WorkloadSpec, never};
use super::{EngineError, IntervalSample, Metrics, StepOutcome, console};

/// The fileio workload's entry in [`super::catalog`]: its files are its dataset, shaped by the
/// number and total size of the files, their directory and whether blocks carry checksums.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "fileio",
    summary: "file I/O speed: sequential and random reads and writes",
    options: &[OPTIONS],
    data: DataSpec {
        family: Some("fileio"),
        keys: &["file_num", "file_total_size", "file_dir", "validate"],
        fresh_per_run: false,
    },
    needs_target: false,
    needs_local_files: true,
    ends_by_itself: never,
    build,
    definition: crate::engine::Definition::Builtin,
};

/// fileio test modes, in sysbench's order.
pub const FILE_TEST_MODES: &[&str] = &["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"];

static OPTIONS: &[OptSpec] = &[
    OptSpec {
        name: "file_num",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("128"),
        help: "how many files the data set is split into",
    },
    OptSpec {
        name: "file_block_size",
        kind: Kind::Size,
        default: Some("16384"),
        help: "bytes per read or write request",
    },
    OptSpec {
        name: "file_total_size",
        kind: Kind::Size,
        default: Some("2G"),
        help: "size of all files together",
    },
    OptSpec {
        name: "file_test_mode",
        kind: Kind::Enum(FILE_TEST_MODES),
        default: None,
        help: "access pattern: sequential write, rewrite or read, random read, write or both (required for run)",
    },
    OptSpec {
        name: "file_io_mode",
        kind: Kind::Enum(&["sync", "async", "mmap"]),
        default: Some("sync"),
        help: "how requests are issued: blocking calls, io_uring, or memory-mapped files",
    },
    OptSpec {
        name: "file_async_backlog",
        kind: Kind::Int {
            min: 1,
            max: UNBOUNDED,
        },
        default: Some("128"),
        help: "requests each thread keeps in flight in async mode",
    },
    OptSpec {
        name: "file_extra_flags",
        kind: Kind::List(Some(&["sync", "dsync", "direct"])),
        default: Some("\"\""),
        help: "extra open() flags: O_SYNC, O_DSYNC, O_DIRECT",
    },
    OptSpec {
        name: "file_fsync_freq",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("100"),
        help: "sync after every N requests (0: never)",
    },
    OptSpec {
        name: "file_fsync_all",
        kind: Kind::Bool,
        default: Some("false"),
        help: "sync after every write request",
    },
    OptSpec {
        name: "file_fsync_end",
        kind: Kind::Bool,
        default: Some("true"),
        help: "sync every file when the run ends",
    },
    OptSpec {
        name: "file_fsync_mode",
        kind: Kind::Enum(&["fsync", "fdatasync"]),
        default: Some("fsync"),
        help: "the system call that syncs",
    },
    OptSpec {
        name: "file_merged_requests",
        kind: Kind::Int {
            min: 0,
            max: UNBOUNDED,
        },
        default: Some("0"),
        help: "combine up to N adjacent requests into one (0: never)",
    },
    OptSpec {
        name: "file_rw_ratio",
        kind: Kind::Float { min: 0.0, max: 1e9 },
        default: Some("1.5"),
        help: "reads per write in rndrw mode",
    },
    OptSpec {
        name: "file_dir",
        kind: Kind::Str,
        default: Some("."),
        help: "directory for the test files (sysbench always uses the working directory)",
    },
];

const MIB: f64 = 1024.0 * 1024.0;

/// `file_test_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    SeqWr,
    SeqRewr,
    SeqRd,
    RndRd,
    RndWr,
    RndRw,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "seqwr" => Mode::SeqWr,
            "seqrewr" => Mode::SeqRewr,
            "seqrd" => Mode::SeqRd,
            "rndrd" => Mode::RndRd,
            "rndwr" => Mode::RndWr,
            "rndrw" => Mode::RndRw,
            _ => return None,
        })
    }

    fn sequential(self) -> bool {
        matches!(self, Mode::SeqWr | Mode::SeqRewr | Mode::SeqRd)
    }

    fn writes(self) -> bool {
        !matches!(self, Mode::SeqRd | Mode::RndRd)
    }

    /// sysbench's "Doing … test" words.
    fn describe(self) -> &'static str {
        match self {
            Mode::SeqWr => "sequential write (creation)",
            Mode::SeqRewr => "sequential rewrite",
            Mode::SeqRd => "sequential read",
            Mode::RndRd => "random read",
            Mode::RndWr => "random write",
            Mode::RndRw => "random r/w",
        }
    }
}

/// `file_io_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    Sync,
    Async,
    Mmap,
}

/// The validated options.
#[derive(Clone, Debug)]
pub struct Config {
    pub files: usize,
    pub block: u64,
    pub total: u64,
    pub file_size: u64,
    pub mode: Option<Mode>,
    pub io: IoMode,
    pub backlog: usize,
    pub flags: ExtraFlags,
    /// Effective values: `file_fsync_all` turns periodic and end fsyncs off, as sysbench.
    pub fsync_freq: u64,
    pub fsync_all: bool,
    pub fsync_end: bool,
    pub fdatasync: bool,
    pub merged: u64,
    pub rw_ratio: f64,
    pub validate: bool,
    pub dir: PathBuf,
    pub threads: usize,
    pub events: u64,
    pub seed: u64,
    pub percentile: f64,
    /// The general `verbosity`: at 5 the banner names each file opened, as sysbench does.
    pub verbosity: u8,
}

fn fail(msg: String) -> EngineError {
    EngineError::Failed(msg)
}

impl Config {
    /// The typed configuration, from the workload's options and the general ones (checked
    /// once, for prepare and run alike).
    pub fn new(o: &Reader<'_>, run: &RunConfig) -> Result<Self, EngineError> {
        let files = usize::try_from(o.uint("file_num")?).unwrap_or(usize::MAX);
        let block = o.uint("file_block_size")?;
        let total = o.uint("file_total_size")?;
        if files == 0 {
            return Err(fail("option `file_num` must be at least 1".into()));
        }
        if block == 0 {
            return Err(fail(
                "option `file_block_size` must be at least 1 byte".into(),
            ));
        }
        let file_size = total / files as u64;
        if file_size < block {
            return Err(fail(format!(
                "`file_total_size` ({total} bytes) / `file_num` ({files}) gives files of {file_size} bytes, smaller than one `file_block_size` ({block} bytes): raise `file_total_size` or lower `file_num` or `file_block_size`"
            )));
        }
        let mode_text = o.text("file_test_mode")?;
        let mode = if mode_text.is_empty() {
            None
        } else {
            Some(Mode::parse(mode_text).ok_or_else(|| {
                fail(format!(
                    "option `file_test_mode` is `{mode_text}`: use one of {}",
                    FILE_TEST_MODES.join(", ")
                ))
            })?)
        };
        let io = match o.text("file_io_mode")? {
            "" | "sync" => IoMode::Sync,
            "async" => IoMode::Async,
            "mmap" => IoMode::Mmap,
            other => {
                return Err(fail(format!(
                    "option `file_io_mode` is `{other}`: use sync, async or mmap"
                )));
            }
        };
        let mut flags = ExtraFlags::default();
        for f in o.list("file_extra_flags")? {
            match f.trim() {
                "sync" => flags.sync = true,
                "dsync" => flags.dsync = true,
                "direct" => flags.direct = true,
                "" => {}
                other => {
                    return Err(fail(format!(
                        "option `file_extra_flags` has `{other}`: use a list of sync, dsync, direct"
                    )));
                }
            }
        }
        let align = files::ALIGN as u64;
        if flags.direct && (!block.is_multiple_of(align) || !file_size.is_multiple_of(align)) {
            return Err(fail(format!(
                "`file_extra_flags=direct` needs {align}-byte aligned requests: `file_block_size` ({block}) and the file size `file_total_size`/`file_num` ({file_size}) must be multiples of {align}"
            )));
        }
        let validate = run.validate;
        if validate && block <= validate::TRAILER as u64 {
            return Err(fail(format!(
                "`validate` stores a {}-byte checksum in each block: `file_block_size` must be larger",
                validate::TRAILER
            )));
        }
        let merged = o.uint("file_merged_requests")?;
        if block.checked_mul(merged.max(1)).is_none_or(|r| r > 1 << 30) {
            return Err(fail(
                "`file_block_size` × `file_merged_requests` must stay below 1 GiB".into(),
            ));
        }
        let fsync_all = o.flag("file_fsync_all")?;
        let dir = match o.text("file_dir")? {
            "" => PathBuf::from("."),
            d => PathBuf::from(d),
        };
        Ok(Config {
            files,
            block,
            total,
            file_size,
            mode,
            io,
            backlog: usize::try_from(o.uint("file_async_backlog")?.max(1)).unwrap_or(128),
            flags,
            fsync_freq: if fsync_all {
                0
            } else {
                o.uint("file_fsync_freq")?
            },
            fsync_all,
            fsync_end: !fsync_all && o.flag("file_fsync_end")?,
            fdatasync: o.text("file_fsync_mode")? == "fdatasync",
            merged,
            rw_ratio: o.float("file_rw_ratio")?,
            validate,
            dir,
            threads: run.threads.max(1),
            events: run.events,
            seed: run.seed,
            verbosity: run.verbosity,
            percentile: run.percentile,
        })
    }

    fn geometry(&self) -> Geometry {
        Geometry {
            files: self.files,
            file_size: self.file_size,
            block: self.block,
            seq_request: self.block * self.merged.max(1),
        }
    }
}

/// sysbench's size format: `%.5g` of the value in the largest binary unit it reaches
/// (`1MiB`, `1GiB`, `4.8828KiB`; checked against sysbench 1.0.20).
pub fn size_str(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{}{}", g5(v), UNITS[i])
}

/// C's `%.5g` for the values `size_str` produces.
fn g5(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let sci = format!("{v:.4e}");
    let exp: i32 = sci
        .rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    if !(-4..5).contains(&exp) {
        return sci;
    }
    let s = format!("{:.*}", (4 - exp) as usize, v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Operation counts of one worker (or a sum of them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Tally {
    reads: u64,
    writes: u64,
    fsyncs: u64,
    read_bytes: u64,
    written_bytes: u64,
}

impl Tally {
    fn minus(self, o: Tally) -> Tally {
        Tally {
            reads: self.reads.saturating_sub(o.reads),
            writes: self.writes.saturating_sub(o.writes),
            fsyncs: self.fsyncs.saturating_sub(o.fsyncs),
            read_bytes: self.read_bytes.saturating_sub(o.read_bytes),
            written_bytes: self.written_bytes.saturating_sub(o.written_bytes),
        }
    }

    /// The five fileio metrics over `secs`.
    fn metrics(self, secs: f64) -> Metrics {
        let ps = |c| console::per_second(c, secs);
        vec![
            ("file_reads_ps", ps(self.reads)),
            ("file_writes_ps", ps(self.writes)),
            ("file_fsyncs_ps", ps(self.fsyncs)),
            ("read_mib_per_s", ps(self.read_bytes) / MIB),
            ("written_mib_per_s", ps(self.written_bytes) / MIB),
        ]
    }
}

/// A worker's published counters, alone on their cache lines (single writer: its worker).
#[repr(align(128))]
#[derive(Default)]
struct IoSlot {
    reads: AtomicU64,
    writes: AtomicU64,
    fsyncs: AtomicU64,
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
}

impl IoSlot {
    fn publish(&self, t: &Tally) {
        self.reads.store(t.reads, Ordering::Relaxed);
        self.writes.store(t.writes, Ordering::Relaxed);
        self.fsyncs.store(t.fsyncs, Ordering::Relaxed);
        self.read_bytes.store(t.read_bytes, Ordering::Relaxed);
        self.written_bytes.store(t.written_bytes, Ordering::Relaxed);
    }

    fn load(&self) -> Tally {
        Tally {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            fsyncs: self.fsyncs.load(Ordering::Relaxed),
            read_bytes: self.read_bytes.load(Ordering::Relaxed),
            written_bytes: self.written_bytes.load(Ordering::Relaxed),
        }
    }
}

/// The previous interim snapshot (collector thread only).
#[derive(Default)]
struct Prev {
    /// When the previous snapshot was taken (`None`: none yet, the interval starts with the
    /// run). An instant rather than a stamp, because stamps restart at the end of a warmup.
    at: Option<std::time::Instant>,
    tally: Tally,
}

/// The fileio workload.
pub struct FileIo {
    cfg: Config,
    geo: Geometry,
    schedule: FsyncSchedule,
    slots: Box<[IoSlot]>,
    /// The global request ticket (see [`schedule`]), on its own cache lines.
    tickets: Padded<AtomicU64>,
    /// Something was written since the last fsync burst (random write modes).
    dirty: Padded<AtomicBool>,
    files: OnceLock<Files>,
    /// Why async I/O runs synchronously (io_uring refused), when it does.
    uring_refused: OnceLock<String>,
    prev: Mutex<Prev>,
    /// Totals when the statistics were last reset (warmup end, checkpoints): the final
    /// metrics cover only what came after, like every other statistic.
    base: Mutex<Tally>,
}

#[repr(align(128))]
#[derive(Default)]
struct Padded<T>(T);

fn build(s: &Setup<'_>) -> Result<Box<dyn Workload>, EngineError> {
    Ok(Box::new(FileIo::new(Config::new(&s.options, s.run)?)))
}

impl FileIo {
    pub fn new(cfg: Config) -> Self {
        let periodic = cfg.mode.is_some_and(Mode::writes);
        FileIo {
            geo: cfg.geometry(),
            schedule: FsyncSchedule {
                freq: if periodic { cfg.fsync_freq } else { 0 },
                files: cfg.files,
            },
            slots: (0..cfg.threads).map(|_| IoSlot::default()).collect(),
            tickets: Padded::default(),
            dirty: Padded::default(),
            files: OnceLock::new(),
            uring_refused: OnceLock::new(),
            prev: Mutex::new(Prev::default()),
            base: Mutex::new(Tally::default()),
            cfg,
        }
    }

    fn mode(&self) -> Result<Mode, EngineError> {
        self.cfg.mode.ok_or_else(|| EngineError::Sysbench {
            sysbench: "FATAL: Missing required argument: --file-test-mode".into(),
            usage: true,
            message: format!(
                "option `file_test_mode` is required for a fileio run: set it to one of {}",
                FILE_TEST_MODES.join(", ")
            ),
        })
    }

    fn check_dir(&self) -> Result<(), EngineError> {
        if self.cfg.dir.is_dir() {
            Ok(())
        } else {
            Err(fail(format!(
                "`file_dir` {} is not an existing directory: create it or point `file_dir` elsewhere",
                self.cfg.dir.display()
            )))
        }
    }

    fn total(&self) -> Tally {
        self.slots
            .iter()
            .map(IoSlot::load)
            .fold(Tally::default(), |a, t| Tally {
                reads: a.reads + t.reads,
                writes: a.writes + t.writes,
                fsyncs: a.fsyncs + t.fsyncs,
                read_bytes: a.read_bytes + t.read_bytes,
                written_bytes: a.written_bytes + t.written_bytes,
            })
    }

    fn async_active(&self) -> bool {
        self.cfg.io == IoMode::Async && self.uring_refused.get().is_none()
    }

    fn create_files(&self, out: &mut dyn Write, stop: &AtomicBool) -> Result<(), EngineError> {
        let c = &self.cfg;
        let io_err = |e: io::Error| fail(format!("writing the prepare output failed: {e}"));
        writeln!(
            out,
            "{} files, {}Kb each, {}Mb total",
            c.files,
            c.file_size / 1024,
            c.file_size * c.files as u64 / (1024 * 1024)
        )
        .map_err(io_err)?;
        writeln!(out, "Creating files for the test...").map_err(io_err)?;
        writeln!(out, "Extra file open flags: {}", c.flags.describe()).map_err(io_err)?;
        let block = usize::try_from(c.block).map_err(|_| fail("block too large".into()))?;
        let mut buf = AlignedBuf::new(block)?;
        let mut rng = Rng::for_thread(c.seed, 0);
        let started = Instant::now();
        let mut written: u64 = 0;
        for i in 0..c.files {
            let path = files::path_of(&c.dir, i);
            let name = format!("test_file.{i}");
            let fd = files::open(&path, libc::O_CREAT | libc::O_WRONLY | c.flags.bits())
                .map_err(|e| files::open_error(&path, &e, c.flags))?;
            let len = std::fs::metadata(&path)
                .map_err(|e| fail(format!("{}: {e}", path.display())))?
                .len();
            if len >= c.file_size {
                writeln!(out, "Reusing existing file {name}").map_err(io_err)?;
                continue;
            }
            let verb = if len > 0 {
                "Extending existing file"
            } else {
                "Creating file"
            };
            writeln!(out, "{verb} {name}").map_err(io_err)?;
            out.flush().map_err(io_err)?;
            let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
            let mut off = len - len % c.block;
            while off < c.file_size {
                if stop.load(Ordering::Relaxed) {
                    return Err(fail(format!("prepare interrupted while writing {name}")));
                }
                let chunk = &mut buf.as_mut_slice()[..block];
                if c.validate {
                    validate::fill(chunk, off, block, &mut rng);
                }
                // SAFETY: `chunk` is valid for `block` bytes.
                let n =
                    unsafe { libc::pwrite(raw, chunk.as_ptr().cast(), block, off as libc::off_t) };
                files::complete(n, block, "write", i, off)
                    .map_err(|e| fail(format!("{}: {e}", path.display())))?;
                written += c.block;
                off += c.block;
            }
            // SAFETY: plain syscall on an owned descriptor.
            if unsafe { libc::fsync(raw) } != 0 {
                return Err(fail(format!(
                    "fsync of {} failed: {}",
                    path.display(),
                    io::Error::last_os_error()
                )));
            }
        }
        if written > 0 {
            let secs = started.elapsed().as_secs_f64();
            writeln!(
                out,
                "{written} bytes written in {secs:.2} seconds ({:.2} MiB/sec).",
                console::per_second(written, secs) / MIB
            )
            .map_err(io_err)?;
        } else {
            writeln!(out, "No bytes written.").map_err(io_err)?;
        }
        Ok(())
    }

    fn remove_files(&self, out: &mut dyn Write) -> Result<(), EngineError> {
        writeln!(out, "Removing test files...")
            .map_err(|e| fail(format!("writing the cleanup output failed: {e}")))?;
        for i in 0..self.cfg.files {
            let path = files::path_of(&self.cfg.dir, i);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(fail(format!("cannot remove {}: {e}", path.display()))),
            }
        }
        Ok(())
    }
}

impl Workload for FileIo {
    /// sysbench refuses a run without `--file-test-mode` before its options header; whether
    /// io_uring works is known here, before the banner says which I/O mode runs.
    fn start(&self) -> Result<(), EngineError> {
        self.mode()?;
        if self.cfg.io == IoMode::Async
            && let Err(e) = uring::probe()
        {
            let _ = self.uring_refused.set(e.to_string());
        }
        Ok(())
    }

    /// After `Doing … test`, where sysbench opens and checks its files (its `FATAL` for a
    /// missing or short file comes before `Initializing worker threads...`).
    fn after_banner(&self) -> Result<(), EngineError> {
        let mode = self.mode()?;
        self.check_dir()?;
        let opened = Files::open(&OpenSpec {
            dir: &self.cfg.dir,
            files: self.cfg.files,
            file_size: self.cfg.file_size,
            flags: self.cfg.flags,
            recreate: mode == Mode::SeqWr,
            mmap: self.cfg.io == IoMode::Mmap,
            fdatasync: self.cfg.fdatasync,
        })?;
        let _ = self.files.set(opened);
        Ok(())
    }

    fn banner(&self, out: &mut dyn Write) -> io::Result<()> {
        let c = &self.cfg;
        writeln!(out, "Extra file open flags: {}", c.flags.describe())?;
        writeln!(out, "{} files, {} each", c.files, size_str(c.file_size))?;
        writeln!(out, "{} total file size", size_str(c.total))?;
        writeln!(out, "Block size {}", size_str(c.block))?;
        if c.merged > 0 {
            writeln!(
                out,
                "Merging requests up to {} for sequential IO.",
                size_str(c.block * c.merged)
            )?;
        }
        let mode = c.mode.unwrap_or(Mode::RndRw);
        if !mode.sequential() {
            writeln!(out, "Number of IO requests: {}", c.events)?;
            writeln!(
                out,
                "Read/Write ratio for combined random IO test: {:.2}",
                c.rw_ratio
            )?;
        }
        if c.fsync_freq > 0 {
            writeln!(
                out,
                "Periodic FSYNC enabled, calling fsync() each {} requests.",
                c.fsync_freq
            )?;
        }
        if c.fsync_end {
            writeln!(out, "Calling fsync() at the end of test, Enabled.")?;
        }
        if c.fsync_all {
            writeln!(out, "Calling fsync() after each write operation.")?;
        }
        let io_words = match c.io {
            IoMode::Sync => "synchronous",
            IoMode::Async if self.async_active() => "asynchronous",
            IoMode::Async => {
                writeln!(
                    out,
                    "NOTE: io_uring is not available here ({}): file_io_mode=async runs synchronous I/O",
                    self.uring_refused.get().map_or("", String::as_str)
                )?;
                "synchronous"
            }
            IoMode::Mmap => "fast mmaped",
        };
        writeln!(out, "Using {io_words} I/O mode")?;
        if c.validate {
            writeln!(out, "Using checksums validation.")?;
        }
        writeln!(out, "Doing {} test", mode.describe())?;
        // `after_banner` opens the files next; sysbench reports each here at level 5.
        if c.verbosity >= 5 {
            for i in 0..c.files {
                writeln!(out, "DEBUG: Opening file: test_file.{i}")?;
            }
        }
        Ok(())
    }

    fn new_worker<'a>(
        &'a self,
        id: usize,
        _stop: &'a Scope,
    ) -> Result<Box<dyn Worker + 'a>, EngineError> {
        let files = self
            .files
            .get()
            .ok_or_else(|| fail("fileio: the test files were not opened before the run".into()))?;
        let slot = self
            .slots
            .get(id)
            .ok_or_else(|| fail(format!("fileio: no counter slot for worker {id}")))?;
        let mode = self.mode()?;
        let buf_len = usize::try_from(self.geo.seq_request.max(self.geo.block))
            .map_err(|_| fail("request too large".into()))?;
        let backend = if self.async_active() {
            Backend::Async(Box::new(uring::Ring::new(self.cfg.backlog, buf_len)?))
        } else {
            Backend::Sync(AlignedBuf::new(buf_len)?)
        };
        Ok(Box::new(FileWorker {
            w: self,
            files,
            slot,
            mode,
            rng: Rng::for_thread(self.cfg.seed, id),
            tally: Tally::default(),
            backend,
        }))
    }

    fn report(&self, outcome: &StepOutcome, out: &mut dyn Write) -> io::Result<()> {
        let m = &outcome.metrics;
        let v = |name| super::metric(m, name).unwrap_or(0.0);
        let line = |out: &mut dyn Write, label: &str, value: f64| {
            writeln!(out, "    {label:<30}{value:.2}")
        };
        writeln!(out)?;
        writeln!(out, "File operations:")?;
        line(out, "reads/s:", v("file_reads_ps"))?;
        line(out, "writes/s:", v("file_writes_ps"))?;
        line(out, "fsyncs/s:", v("file_fsyncs_ps"))?;
        writeln!(out)?;
        writeln!(out, "Throughput:")?;
        line(out, "read, MiB/s:", v("read_mib_per_s"))?;
        line(out, "written, MiB/s:", v("written_mib_per_s"))?;
        writeln!(out)
    }

    fn interim(&self, sample: &mut IntervalSample) -> Option<String> {
        let now = self.total();
        let mut prev = self.prev.lock().unwrap_or_else(|e| e.into_inner());
        let at = std::time::Instant::now();
        let secs = prev
            .at
            .map_or(sample.time_s, |p| at.duration_since(p).as_secs_f64());
        let d = now.minus(prev.tally);
        *prev = Prev {
            at: Some(at),
            tally: now,
        };
        drop(prev);
        sample.metrics.extend(d.metrics(secs));
        let v = |name| super::metric(&sample.metrics, name).unwrap_or(0.0);
        let pct = console::percentile_field(self.cfg.percentile);
        Some(format!(
            "[ {:.0}s ] reads: {:4.2} MiB/s writes: {:4.2} MiB/s fsyncs: {:4.2}/s latency (ms,{}%): {:4.3}",
            sample.time_s,
            v("read_mib_per_s"),
            v("written_mib_per_s"),
            v("file_fsyncs_ps"),
            pct.trim_start(),
            sample.lat_pct_ms
        ))
    }

    fn finish_outcome(&self, outcome: &mut StepOutcome) {
        let base = *self.base.lock().unwrap_or_else(|e| e.into_inner());
        outcome
            .metrics
            .extend(self.total().minus(base).metrics(outcome.seconds));
    }

    fn reset_counters(&self) {
        let now = self.total();
        *self.base.lock().unwrap_or_else(|e| e.into_inner()) = now;
        *self.prev.lock().unwrap_or_else(|e| e.into_inner()) = Prev {
            at: Some(std::time::Instant::now()),
            tally: now,
        };
    }

    fn admin(&self) -> &dyn Admin {
        self
    }
}

impl Admin for FileIo {
    /// Every test file is there, at least `file_total_size / file_num` long.
    fn check_existing(&self) -> Result<(), EngineError> {
        for i in 0..self.cfg.files {
            let path = files::path_of(&self.cfg.dir, i);
            let len = std::fs::metadata(&path).map(|m| m.len());
            let why = match len {
                Ok(len) if len >= self.cfg.file_size => continue,
                Ok(len) => format!(
                    "is {} long, shorter than {} (file_total_size / file_num)",
                    size_str(len),
                    size_str(self.cfg.file_size)
                ),
                Err(e) => format!("cannot be read: {e}"),
            };
            return Err(fail(format!(
                "[suite] dataset = \"existing\": test file {} {why}; prepare the files first \
                 (sbsuite sysbench fileio --file-num={} --file-total-size={} prepare) or remove \
                 dataset = \"existing\" so that the suite prepares its own",
                path.display(),
                self.cfg.files,
                self.cfg.total,
            )));
        }
        Ok(())
    }

    fn prepare(
        &self,
        cleanup: bool,
        out: &mut dyn Write,
        stop: &AtomicBool,
    ) -> Result<(), EngineError> {
        self.check_dir()?;
        if cleanup {
            self.remove_files(out)
        } else {
            self.create_files(out, stop)
        }
    }
}

/// How a worker performs its reads and writes.
enum Backend {
    /// pread/pwrite or mmap copies through one page-aligned buffer.
    Sync(AlignedBuf),
    Async(Box<uring::Ring>),
}

/// One request.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Request {
    Fsync(usize),
    Io { extent: Extent, write: bool },
}

struct FileWorker<'a> {
    w: &'a FileIo,
    files: &'a Files,
    slot: &'a IoSlot,
    mode: Mode,
    rng: Rng,
    /// Completed operations (the rw-ratio choice reads them too, as sysbench).
    tally: Tally,
    backend: Backend,
}

fn io_fail(e: io::Error) -> EngineError {
    fail(e.to_string())
}

fn check_read(w: &FileIo, e: Extent, buf: &[u8]) -> io::Result<()> {
    if w.cfg.validate {
        validate::verify(buf, e.pos, w.cfg.block as usize).map_err(|off| {
            io::Error::other(format!(
                "validation failed on file test_file.{}, block offset {off}: the data read is not what was written (were the files prepared with `validate` on?)",
                e.file
            ))
        })?;
    }
    Ok(())
}

/// Counts a completed asynchronous request (validating reads).
fn count_done(w: &FileIo, tally: &mut Tally, d: &uring::Done<'_>) -> io::Result<()> {
    if d.write {
        tally.writes += 1;
        tally.written_bytes += d.extent.len;
    } else {
        check_read(w, d.extent, d.buf)?;
        tally.reads += 1;
        tally.read_bytes += d.extent.len;
    }
    Ok(())
}

impl FileWorker<'_> {
    fn random_io(&mut self) -> Request {
        let write = match self.mode {
            Mode::RndRw => {
                !schedule::choose_read(self.tally.reads, self.tally.writes, self.w.cfg.rw_ratio)
            }
            m => m.writes(),
        };
        let extent = self.w.geo.random(self.rng.unit());
        if write && !self.w.dirty.0.load(Ordering::Relaxed) {
            self.w.dirty.0.store(true, Ordering::Relaxed);
        }
        Request::Io { extent, write }
    }

    fn next_request(&mut self) -> Request {
        let w = self.w;
        if !self.mode.sequential() && w.schedule.freq == 0 {
            return self.random_io();
        }
        let t = w.tickets.0.fetch_add(1, Ordering::Relaxed);
        match w.schedule.slot(t) {
            Slot::Fsync(file) => {
                if !self.mode.sequential() && !w.dirty.0.load(Ordering::Relaxed) {
                    return self.random_io();
                }
                if file + 1 == w.cfg.files {
                    w.dirty.0.store(false, Ordering::Relaxed);
                }
                Request::Fsync(file)
            }
            Slot::Io(n) if self.mode.sequential() => Request::Io {
                extent: w.geo.sequential(n),
                write: self.mode.writes(),
            },
            Slot::Io(_) => self.random_io(),
        }
    }

    fn fsync(&mut self, file: usize) -> io::Result<()> {
        self.files.sync(file)?;
        self.tally.fsyncs += 1;
        Ok(())
    }

    fn io(&mut self, e: Extent, write: bool) -> io::Result<()> {
        let w = self.w;
        let block = w.cfg.block as usize;
        let len = e.len as usize;
        let FileWorker {
            files,
            rng,
            tally,
            backend,
            ..
        } = self;
        match backend {
            Backend::Sync(buf) => {
                let b = &mut buf.as_mut_slice()[..len];
                if write {
                    if w.cfg.validate {
                        validate::fill(b, e.pos, block, rng);
                    }
                    files.write(e.file, e.pos, b)?;
                    tally.writes += 1;
                    tally.written_bytes += e.len;
                } else {
                    files.read(e.file, e.pos, b)?;
                    check_read(w, e, b)?;
                    tally.reads += 1;
                    tally.read_bytes += e.len;
                }
            }
            Backend::Async(ring) => {
                let mut on_done = |d: uring::Done<'_>| count_done(w, tally, &d);
                let b = ring.free_buffer(&mut on_done)?;
                if write && w.cfg.validate {
                    validate::fill(&mut b[..len], e.pos, block, rng);
                }
                ring.submit(files, e, write)?;
                // Count what already completed (no system call: the completion queue is shared
                // memory), so the interim lines and the rw-ratio choice stay current.
                ring.reap(0, &mut on_done)?;
            }
        }
        Ok(())
    }

    fn step(&mut self) -> io::Result<()> {
        match self.next_request() {
            Request::Fsync(file) => self.fsync(file)?,
            Request::Io { extent, write } => {
                self.io(extent, write)?;
                if write && self.w.cfg.fsync_all {
                    self.fsync(extent.file)?;
                }
            }
        }
        self.slot.publish(&self.tally);
        Ok(())
    }
}

impl Worker for FileWorker<'_> {
    fn event(&mut self) -> EventResult {
        match self.step() {
            Ok(()) => EventResult::Done,
            Err(e) => EventResult::Fatal(io_fail(e)),
        }
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        let w = self.w;
        if let Backend::Async(ring) = &mut self.backend {
            let tally = &mut self.tally;
            ring.drain(&mut |d| count_done(w, tally, &d))
                .map_err(io_fail)?;
        }
        if w.cfg.fsync_end && self.mode.writes() {
            for file in 0..self.files.count() {
                self.fsync(file).map_err(io_fail)?;
            }
        }
        self.slot.publish(&self.tally);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
