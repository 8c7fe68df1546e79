//! `file_io_mode=async` on io_uring: one ring per worker, up to `file_async_backlog` requests
//! in flight.
//!
//! sysbench uses libaio here: an event submits one request and waits only when the backlog is
//! full, so an event's latency is its submit time (plus any wait for a free slot), and the
//! operation counters move when requests complete. io_uring gives the same shape with buffered
//! I/O too (libaio is only truly asynchronous with O_DIRECT). Each in-flight request owns one
//! slot: a page-aligned buffer and the extent it covers, so completed reads can be validated.
//! Kernels or sandboxes that refuse io_uring (EPERM, ENOSYS) are detected once by [`probe`]; the
//! workload then runs synchronous I/O and says so in its banner.
//!
//! Where io_uring beats libaio is batching: queued requests reach the kernel in one
//! `io_uring_enter` every `batch` events (`file_async_backlog / 8`, 1 to 32) instead of
//! one `io_submit` per event, and the wait for a free slot submits whatever is queued. An event
//! is still one request, and a request is still counted when it completes.

use std::io;

use io_uring::{IoUring, opcode, types};

use super::EngineError;
use super::files::{AlignedBuf, Files};
use super::schedule::Extent;

/// Whether this process may create an io_uring; the error when not.
pub fn probe() -> Result<(), io::Error> {
    IoUring::new(2).map(drop)
}

/// A request in flight.
struct Slot {
    buf: AlignedBuf,
    extent: Extent,
    write: bool,
}

/// A finished request, handed back to the worker for its counters and validation.
pub struct Done<'a> {
    pub extent: Extent,
    pub write: bool,
    pub buf: &'a [u8],
}

/// One worker's ring and slots.
pub struct Ring {
    // Declared first: dropped (after `Drop` drained it) before the buffers it points into.
    ring: IoUring,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Reused between reaps, so reaping allocates nothing.
    reaped: Vec<(u64, i32)>,
    /// Requests queued in the submission ring but not yet handed to the kernel.
    queued: usize,
    /// Submit once this many requests are queued.
    batch: usize,
}

impl Ring {
    pub fn new(backlog: usize, buf_len: usize) -> Result<Self, EngineError> {
        let entries = u32::try_from(backlog.next_power_of_two())
            .unwrap_or(32768)
            .min(32768);
        let ring = IoUring::new(entries).map_err(|e| {
            EngineError::Failed(format!(
                "cannot create an io_uring of {entries} entries for `file_io_mode=async` (lower `file_async_backlog`): {e}"
            ))
        })?;
        let mut slots = Vec::with_capacity(backlog);
        for _ in 0..backlog {
            slots.push(Slot {
                buf: AlignedBuf::new(buf_len)?,
                extent: Extent {
                    file: 0,
                    pos: 0,
                    len: 0,
                },
                write: false,
            });
        }
        Ok(Self {
            ring,
            free: (0..backlog).rev().collect(),
            slots,
            reaped: Vec::with_capacity(backlog),
            queued: 0,
            batch: (backlog / 8).clamp(1, 32),
        })
    }

    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// A free slot's buffer, waiting for completions (handled by `on_done`) while none is free.
    pub fn free_buffer(
        &mut self,
        on_done: &mut dyn FnMut(Done<'_>) -> io::Result<()>,
    ) -> io::Result<&mut [u8]> {
        while self.free.is_empty() {
            self.reap(1, on_done)?;
        }
        let i = self.free[self.free.len() - 1];
        Ok(self.slots[i].buf.as_mut_slice())
    }

    /// Submits a read or write of `extent` from the buffer last returned by `free_buffer`.
    pub fn submit(&mut self, files: &Files, extent: Extent, write: bool) -> io::Result<()> {
        let Some(i) = self.free.pop() else {
            return Err(io::Error::other("no free io_uring slot"));
        };
        let slot = &mut self.slots[i];
        slot.extent = extent;
        slot.write = write;
        let fd = types::Fd(files.raw_fd(extent.file));
        let ptr = slot.buf.as_mut_slice().as_mut_ptr();
        let len = extent.len as u32;
        let sqe = if write {
            opcode::Write::new(fd, ptr, len).offset(extent.pos).build()
        } else {
            opcode::Read::new(fd, ptr, len).offset(extent.pos).build()
        }
        .user_data(i as u64);
        // SAFETY: the buffer belongs to slot `i`, which stays out of the free list (and alive:
        // `Drop` drains the ring before the slots go) until its completion is reaped.
        let pushed = unsafe { self.ring.submission().push(&sqe) };
        if pushed.is_err() {
            self.free.push(i);
            return Err(io::Error::other("io_uring submission queue full"));
        }
        self.queued += 1;
        if self.queued >= self.batch {
            self.ring.submit()?;
            self.queued = 0;
        }
        Ok(())
    }

    /// Waits for at least `want` completions, then hands every available one to `on_done`.
    pub fn reap(
        &mut self,
        want: usize,
        on_done: &mut dyn FnMut(Done<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        if want > 0 {
            loop {
                // Also hands the queued requests to the kernel.
                match self.ring.submit_and_wait(want) {
                    Ok(_) => {
                        self.queued = 0;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        self.reaped.clear();
        self.reaped
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        let mut first_err = None;
        for k in 0..self.reaped.len() {
            let (data, res) = self.reaped[k];
            let i = data as usize;
            let Some(slot) = self.slots.get(i) else {
                continue;
            };
            self.free.push(i);
            let e = slot.extent;
            let op = if slot.write { "write" } else { "read" };
            let outcome = if res < 0 {
                Err(io::Error::other(format!(
                    "asynchronous {op} of test_file.{} at offset {} failed: {}",
                    e.file,
                    e.pos,
                    io::Error::from_raw_os_error(-res)
                )))
            } else if res as u64 != e.len {
                Err(io::Error::other(format!(
                    "short asynchronous {op} of test_file.{} at offset {}: {res} of {} bytes",
                    e.file, e.pos, e.len
                )))
            } else {
                on_done(Done {
                    extent: e,
                    write: slot.write,
                    buf: &slot.buf.as_slice()[..e.len as usize],
                })
            };
            if let Err(err) = outcome {
                first_err.get_or_insert(err);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Waits for every request in flight.
    pub fn drain(&mut self, on_done: &mut dyn FnMut(Done<'_>) -> io::Result<()>) -> io::Result<()> {
        let mut result = Ok(());
        while self.in_flight() > 0 {
            if let Err(e) = self.reap(1, on_done) {
                if result.is_ok() {
                    result = Err(e);
                }
                if self.reaped.is_empty() {
                    break; // the wait itself failed: nothing more will arrive
                }
            }
        }
        result
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // The kernel may still write into the slot buffers: wait for every request first.
        let _ = self.drain(&mut |_| Ok(()));
    }
}
