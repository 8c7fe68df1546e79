//! Which request comes next: sysbench's request generator as pure functions of a global ticket.
//!
//! sysbench hands out requests under one mutex: a shared sequential cursor (file, position) and
//! a shared count of read/write requests that, every `file_fsync_freq` requests once something
//! was written, inserts a burst of `file_num` fsync requests (files 0..N−1). Both are functions
//! of how many requests were handed out before, so here one atomic ticket counter replaces the
//! mutex: ticket `t` falls in a cycle of `freq + num` tickets, the first `freq` are read/write
//! request number `n` (which fixes the sequential position), the last `num` are the fsyncs. The
//! result is the same sequence sysbench produces, without a lock on the hot path, and every
//! mapping here is a pure function that the tests pin down.
//!
//! One difference: sysbench skips a burst when nothing was written since the last one (possible
//! only in `rndrw` with an extreme `file_rw_ratio`); here the fsync tickets of such a cycle turn
//! into ordinary requests (see [`Slot::Fsync`] handling in the worker).

/// What one ticket is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Read/write request number `n` (0-based, fsyncs not counted).
    Io(u64),
    /// The fsync of file `file` in a burst.
    Fsync(usize),
}

/// The periodic fsync schedule: `freq` read/write requests, then one fsync per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsyncSchedule {
    /// 0 = no periodic fsync.
    pub freq: u64,
    pub files: usize,
}

impl FsyncSchedule {
    /// The meaning of ticket `t`.
    pub fn slot(&self, t: u64) -> Slot {
        if self.freq == 0 || self.files == 0 {
            return Slot::Io(t);
        }
        let cycle = self.freq + self.files as u64;
        let (c, r) = (t / cycle, t % cycle);
        if r < self.freq {
            Slot::Io(c * self.freq + r)
        } else {
            Slot::Fsync((r - self.freq) as usize)
        }
    }
}

/// One read or write: `len` bytes of file `file` at `pos`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub file: usize,
    pub pos: u64,
    pub len: u64,
}

/// The geometry of the file set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub files: usize,
    /// Bytes per file (`file_total_size / file_num`).
    pub file_size: u64,
    pub block: u64,
    /// Sequential request size: block × `file_merged_requests` (block when 0).
    pub seq_request: u64,
}

impl Geometry {
    /// Sequential request `n` under sysbench's shared cursor: requests of `seq_request` bytes
    /// through file 0, the last one cut at the end of the file, then file 1, …, and back to
    /// file 0 after the last file.
    pub fn sequential(&self, n: u64) -> Extent {
        let per_file = self.file_size.div_ceil(self.seq_request).max(1);
        let file = ((n / per_file) % self.files as u64) as usize;
        let pos = (n % per_file) * self.seq_request;
        Extent {
            file,
            pos,
            len: self.seq_request.min(self.file_size - pos),
        }
    }

    /// A random request from a uniform draw `u` in [0, 1): offset ⌊u·total⌋ rounded down to a
    /// block, then split into file and position as sysbench does (so with a file size that is
    /// not a block multiple, positions need not be block-aligned — as in sysbench).
    pub fn random(&self, u: f64) -> Extent {
        let total = self.file_size * self.files as u64;
        let mut off = ((u * total as f64) as u64).min(total.saturating_sub(1));
        off -= off % self.block;
        let file = (off / self.file_size) as usize;
        let pos = off % self.file_size;
        Extent {
            file,
            pos,
            len: self.block.min(self.file_size - pos),
        }
    }
}

/// `rndrw`'s choice: read while (reads+1)/(writes+1) < ratio, from completed operations.
pub fn choose_read(reads: u64, writes: u64, ratio: f64) -> bool {
    ((reads + 1) as f64 / (writes + 1) as f64) < ratio
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(files: usize, file_size: u64, block: u64, merged: u64) -> Geometry {
        Geometry {
            files,
            file_size,
            block,
            seq_request: block * merged.max(1),
        }
    }

    #[test]
    fn fsync_bursts_follow_every_freq_requests() {
        let s = FsyncSchedule { freq: 3, files: 2 };
        let got: Vec<Slot> = (0..11).map(|t| s.slot(t)).collect();
        use Slot::*;
        assert_eq!(
            got,
            [
                Io(0),
                Io(1),
                Io(2),
                Fsync(0),
                Fsync(1),
                Io(3),
                Io(4),
                Io(5),
                Fsync(0),
                Fsync(1),
                Io(6)
            ]
        );
        let off = FsyncSchedule { freq: 0, files: 2 };
        assert_eq!(off.slot(7), Io(7));
    }

    #[test]
    fn sequential_cursor_walks_files_and_wraps() {
        // 2 files of 40 bytes, requests of 16: 0,16,32(len 8) per file.
        let g = geo(2, 40, 16, 0);
        let ext: Vec<(usize, u64, u64)> = (0..7)
            .map(|n| g.sequential(n))
            .map(|e| (e.file, e.pos, e.len))
            .collect();
        assert_eq!(
            ext,
            [
                (0, 0, 16),
                (0, 16, 16),
                (0, 32, 8),
                (1, 0, 16),
                (1, 16, 16),
                (1, 32, 8),
                (0, 0, 16)
            ]
        );
        // merged requests: 2 blocks per request
        let m = geo(1, 64, 16, 2);
        assert_eq!(
            m.sequential(1),
            Extent {
                file: 0,
                pos: 32,
                len: 32
            }
        );
        assert_eq!(
            m.sequential(2),
            Extent {
                file: 0,
                pos: 0,
                len: 32
            }
        );
    }

    #[test]
    fn random_offsets_are_block_aligned_and_in_range() {
        let g = geo(4, 4 << 20, 16384, 0);
        assert_eq!(
            g.random(0.0),
            Extent {
                file: 0,
                pos: 0,
                len: 16384
            }
        );
        let last = g.random(0.999_999_999);
        assert_eq!(last.file, 3);
        assert_eq!(last.pos, (4 << 20) - 16384);
        let mid = g.random(0.5);
        assert_eq!((mid.file, mid.pos), (2, 0));
        let mut rng = crate::engine::random::Rng::for_thread(7, 0);
        for _ in 0..10_000 {
            let e = g.random(rng.unit());
            assert!(e.file < 4 && e.pos.is_multiple_of(16384) && e.pos + e.len <= 4 << 20);
        }
        // file size not a block multiple: sysbench's split, length cut at the end of the file
        let odd = geo(3, 40, 16, 0);
        assert_eq!(
            odd.random(0.5),
            Extent {
                file: 1,
                pos: 8,
                len: 16
            }
        );
        assert_eq!(
            odd.random(0.99),
            Extent {
                file: 2,
                pos: 32,
                len: 8
            }
        );
    }

    #[test]
    fn rw_ratio_gives_sixty_forty() {
        let (mut r, mut w) = (0u64, 0u64);
        for _ in 0..1000 {
            if choose_read(r, w, 1.5) {
                r += 1;
            } else {
                w += 1;
            }
        }
        assert_eq!((r, w), (600, 400));
        assert!(choose_read(0, 0, 1.5));
        assert!(!choose_read(0, 0, 1.0));
    }
}
