//! The test files during a run: opened once, shared by every worker, plus the synchronous and
//! mmap operations on them.
//!
//! sysbench opens its files once for all threads (`pread`/`pwrite` take an explicit offset, so
//! one descriptor serves every thread); so do we. In mmap mode each file is also mapped once,
//! shared and read-write, and an fsync becomes `msync`. Buffers are page-aligned because
//! `O_DIRECT` requires aligned memory (and sysbench aligns its buffers the same way).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::EngineError;

/// Alignment of I/O buffers (a page; what `O_DIRECT` needs on every common filesystem).
pub const ALIGN: usize = 4096;

/// A zeroed, page-aligned byte buffer.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is uniquely owned heap memory, like a `Box<[u8]>`.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> Result<Self, EngineError> {
        let size = len.max(1).next_multiple_of(ALIGN);
        let layout = std::alloc::Layout::from_size_align(size, ALIGN)
            .map_err(|e| EngineError::Failed(format!("buffer of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw).ok_or_else(|| {
            EngineError::Failed(format!("could not allocate an I/O buffer of {len} bytes"))
        })?;
        Ok(Self { ptr, len: size })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised (zeroed) bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this exact layout.
        unsafe {
            std::alloc::dealloc(
                self.ptr.as_ptr(),
                std::alloc::Layout::from_size_align_unchecked(self.len, ALIGN),
            );
        }
    }
}

/// `O_*` flags from `file_extra_flags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtraFlags {
    pub sync: bool,
    pub dsync: bool,
    pub direct: bool,
}

impl ExtraFlags {
    pub fn bits(self) -> i32 {
        let mut f = 0;
        if self.sync {
            f |= libc::O_SYNC;
        }
        if self.dsync {
            f |= libc::O_DSYNC;
        }
        if self.direct {
            f |= libc::O_DIRECT;
        }
        f
    }

    /// sysbench's "Extra file open flags: …" value.
    pub fn describe(self) -> String {
        let mut s = String::new();
        if self.sync {
            s.push_str("sync ");
        }
        if self.dsync {
            s.push_str("dsync ");
        }
        if self.direct {
            s.push_str("directio");
        }
        if s.is_empty() {
            s.push_str("(none)");
        }
        s
    }
}

/// `DIR/test_file.I`.
pub fn path_of(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("test_file.{i}"))
}

/// `open(2)` with explicit flags (std's `OpenOptions` cannot express O_DSYNC with O_SYNC and
/// reports EINVAL from O_DIRECT the same way, so the raw call keeps errors precise).
pub fn open(path: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated path; the mode argument is read only with O_CREAT.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The error of an `open` with `file_extra_flags`, naming direct I/O when that is the cause.
pub fn open_error(path: &Path, e: &io::Error, flags: ExtraFlags) -> EngineError {
    if flags.direct && e.raw_os_error() == Some(libc::EINVAL) {
        EngineError::Failed(format!(
            "cannot open {} with O_DIRECT: the filesystem refuses direct I/O (EINVAL); drop `direct` from `file_extra_flags=direct` or set `file_dir` to a filesystem that supports it",
            path.display()
        ))
    } else {
        // The same error again (io::Error is not Clone): the OS error when there is one.
        let e = e.raw_os_error().map_or_else(
            || io::Error::new(e.kind(), e.to_string()),
            io::Error::from_raw_os_error,
        );
        EngineError::io(format!("cannot open {}", path.display()), e)
    }
}

/// `ours` with sysbench 1.0.20's own lines for the same failure (see
/// [`EngineError::Sysbench`]).
fn as_sysbench(ours: EngineError, sysbench: String) -> EngineError {
    EngineError::Sysbench {
        sysbench,
        usage: false,
        message: ours.to_string(),
    }
}

/// A test file as sysbench names it in its lines: `test_file.N` (sysbench has no `file_dir`:
/// in another directory, the path).
fn shown(path: &Path) -> String {
    match path.parent() {
        Some(dir) if dir == Path::new(".") || dir.as_os_str().is_empty() => {
            path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        }
        _ => path.display().to_string(),
    }
}

/// sysbench's `log_errno` ending: `errno = 2 (No such file or directory)`.
fn errno(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let text = io::Error::from_raw_os_error(n).to_string();
            let text = text
                .strip_suffix(&format!(" (os error {n})"))
                .unwrap_or(&text);
            format!("errno = {n} ({text})")
        }
        None => format!("({e})"),
    }
}

/// A shared read-write mapping of one file.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory that lives as long as `Mapping`; workers only copy
// bytes in and out of it through raw pointers (as sysbench's threads do with memcpy).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` come from a successful mmap and are unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The open test files of a run.
pub struct Files {
    fds: Vec<OwnedFd>,
    maps: Vec<Mapping>,
    pub file_size: u64,
    pub fdatasync: bool,
}

/// How a run opens its files.
pub struct OpenSpec<'a> {
    pub dir: &'a Path,
    pub files: usize,
    pub file_size: u64,
    pub flags: ExtraFlags,
    /// seqwr: unlink and re-create each file (O_EXCL), as sysbench.
    pub recreate: bool,
    pub mmap: bool,
    pub fdatasync: bool,
}

impl Files {
    pub fn open(spec: &OpenSpec<'_>) -> Result<Self, EngineError> {
        let mut fds = Vec::with_capacity(spec.files);
        for i in 0..spec.files {
            let path = path_of(spec.dir, i);
            let fd = if spec.recreate {
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(EngineError::io(
                            format!("cannot remove {} before re-creating it", path.display()),
                            e,
                        ));
                    }
                }
                open(
                    &path,
                    libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | spec.flags.bits(),
                )
                .map_err(|e| {
                    as_sysbench(
                        open_error(&path, &e, spec.flags),
                        format!("FATAL: Cannot create file '{}' {}", shown(&path), errno(&e)),
                    )
                })?
            } else {
                let fd = open(&path, libc::O_RDWR | spec.flags.bits()).map_err(|e| {
                    let ours = if e.kind() == io::ErrorKind::NotFound {
                        EngineError::Failed(format!(
                            "test file {} does not exist: run `prepare` first (with the same `file_num`, `file_total_size` and `file_dir`)",
                            path.display()
                        ))
                    } else {
                        open_error(&path, &e, spec.flags)
                    };
                    as_sysbench(
                        ours,
                        format!(
                            "FATAL: Cannot open file '{}' {}\nWARNING: Did you forget to run the prepare step?",
                            shown(&path),
                            errno(&e)
                        ),
                    )
                })?;
                let len = fs::metadata(&path)
                    .map_err(|e| EngineError::io(path.display().to_string(), e))?
                    .len();
                if len < spec.file_size {
                    return Err(as_sysbench(
                        EngineError::Failed(format!(
                            "test file {} is {len} bytes but at least {} are expected: run `prepare` first with the same `file_num` and `file_total_size`",
                            path.display(),
                            spec.file_size
                        )),
                        format!(
                            "FATAL: Size of file '{}' is {}, but at least {} is expected.\nWARNING: Did you run 'prepare' with different --file-total-size or --file-num values?",
                            shown(&path),
                            super::size_str(len),
                            super::size_str(spec.file_size)
                        ),
                    ));
                }
                fd
            };
            if spec.recreate && spec.mmap {
                // A mapping beyond the end of a file faults (SIGBUS): give the new file its size.
                // SAFETY: plain syscall on an owned descriptor.
                if unsafe { libc::ftruncate(fd.as_raw_fd(), spec.file_size as libc::off_t) } != 0 {
                    return Err(EngineError::io(
                        format!("cannot size {}", path.display()),
                        io::Error::last_os_error(),
                    ));
                }
            }
            fds.push(fd);
        }
        let mut maps = Vec::new();
        if spec.mmap {
            let len = usize::try_from(spec.file_size)
                .map_err(|_| EngineError::Failed("file too large to map".into()))?;
            for (i, fd) in fds.iter().enumerate() {
                // SAFETY: a fresh shared mapping of an open file; the result is checked.
                let ptr = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len.max(1),
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_SHARED,
                        fd.as_raw_fd(),
                        0,
                    )
                };
                if ptr == libc::MAP_FAILED {
                    return Err(EngineError::io(
                        format!("cannot mmap {}", path_of(spec.dir, i).display()),
                        io::Error::last_os_error(),
                    ));
                }
                maps.push(Mapping {
                    ptr: ptr.cast(),
                    len: len.max(1),
                });
            }
        }
        Ok(Self {
            fds,
            maps,
            file_size: spec.file_size,
            fdatasync: spec.fdatasync,
        })
    }

    pub fn raw_fd(&self, file: usize) -> RawFd {
        self.fds[file].as_raw_fd()
    }

    pub fn count(&self) -> usize {
        self.fds.len()
    }

    /// Reads `buf.len()` bytes of `file` at `pos` (pread, or a copy out of the mapping).
    pub fn read(&self, file: usize, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Some(m) = self.maps.get(file) {
            check_range(m, pos, buf.len())?;
            // SAFETY: the range lies inside the mapping (checked above); `buf` is a distinct
            // allocation.
            unsafe {
                std::ptr::copy_nonoverlapping(m.ptr.add(pos as usize), buf.as_mut_ptr(), buf.len())
            };
            return Ok(());
        }
        // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
        let n = unsafe {
            libc::pread(
                self.raw_fd(file),
                buf.as_mut_ptr().cast(),
                buf.len(),
                pos as libc::off_t,
            )
        };
        complete(n, buf.len(), "read", file, pos)
    }

    /// Writes `buf` to `file` at `pos` (pwrite, or a copy into the mapping).
    pub fn write(&self, file: usize, pos: u64, buf: &[u8]) -> io::Result<()> {
        if let Some(m) = self.maps.get(file) {
            check_range(m, pos, buf.len())?;
            // SAFETY: as in `read`, in the other direction.
            unsafe {
                std::ptr::copy_nonoverlapping(buf.as_ptr(), m.ptr.add(pos as usize), buf.len())
            };
            return Ok(());
        }
        // SAFETY: `buf` is valid for `buf.len()` bytes of reads.
        let n = unsafe {
            libc::pwrite(
                self.raw_fd(file),
                buf.as_ptr().cast(),
                buf.len(),
                pos as libc::off_t,
            )
        };
        complete(n, buf.len(), "write", file, pos)
    }

    /// fsync/fdatasync of `file`, or msync of its mapping.
    pub fn sync(&self, file: usize) -> io::Result<()> {
        // SAFETY: plain syscalls on owned descriptors / an owned mapping.
        let rc = unsafe {
            if let Some(m) = self.maps.get(file) {
                libc::msync(m.ptr.cast(), m.len, libc::MS_SYNC)
            } else if self.fdatasync {
                libc::fdatasync(self.raw_fd(file))
            } else {
                libc::fsync(self.raw_fd(file))
            }
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn check_range(m: &Mapping, pos: u64, len: usize) -> io::Result<()> {
    if pos as usize + len > m.len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "request beyond the mapped file",
        ));
    }
    Ok(())
}

/// A syscall's byte count as a complete transfer or an error.
pub fn complete(n: isize, want: usize, op: &str, file: usize, pos: u64) -> io::Result<()> {
    if n < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("{op} of test_file.{file} at offset {pos} failed: {e}"),
        ));
    }
    if n as usize != want {
        return Err(io::Error::other(format!(
            "short {op} of test_file.{file} at offset {pos}: {n} of {want} bytes"
        )));
    }
    Ok(())
}
