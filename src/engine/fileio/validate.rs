//! `validate`: blocks that carry their own checksum and offset, as sysbench's `--validate`.
//!
//! Each block is random bytes, then the zlib CRC32 of those bytes (4 bytes), then the block's
//! offset in its file (8 bytes), little-endian as sysbench writes its `int` and `long` on
//! x86-64. A read verifies every whole, block-aligned block it covers, so a corrupted byte or a
//! block landing at the wrong offset is caught. Partial or unaligned blocks (possible when the
//! file size is not a block multiple) cannot carry a trailer and are not checked.

use crate::engine::random::Rng;

/// Bytes of trailer after the data: CRC32 + offset.
pub const TRAILER: usize = 4 + 8;

/// zlib's CRC32 table (reflected polynomial 0xEDB88320), built at compile time.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// zlib's `crc32(0, data, len)`.
pub fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// Fills `buf` (starting at file offset `pos`) with checked blocks of `block` bytes.
pub fn fill(buf: &mut [u8], pos: u64, block: usize, rng: &mut Rng) {
    for (i, chunk) in buf.chunks_mut(block).enumerate() {
        for b in chunk.iter_mut() {
            *b = rng.next_u64() as u8;
        }
        if chunk.len() == block && block > TRAILER {
            let data = block - TRAILER;
            let crc = crc32(&chunk[..data]);
            chunk[data..data + 4].copy_from_slice(&crc.to_le_bytes());
            let off = pos + (i * block) as u64;
            chunk[data + 4..].copy_from_slice(&off.to_le_bytes());
        }
    }
}

/// Checks the whole blocks of `buf`, read at file offset `pos`. Returns the file offset of
/// the first bad block.
pub fn verify(buf: &[u8], pos: u64, block: usize) -> Result<(), u64> {
    if block <= TRAILER || !pos.is_multiple_of(block as u64) {
        return Ok(());
    }
    for (i, chunk) in buf.chunks(block).enumerate() {
        if chunk.len() != block {
            continue;
        }
        let off = pos + (i * block) as u64;
        let data = block - TRAILER;
        let crc = u32::from_le_bytes([
            chunk[data],
            chunk[data + 1],
            chunk[data + 2],
            chunk[data + 3],
        ]);
        let mut stored = [0u8; 8];
        stored.copy_from_slice(&chunk[data + 4..]);
        if crc != crc32(&chunk[..data]) || u64::from_le_bytes(stored) != off {
            return Err(off);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
    }

    #[test]
    fn verify_accepts_filled_blocks_and_catches_corruption() {
        let mut rng = Rng::for_thread(1, 0);
        let mut buf = vec![0u8; 4 * 64];
        fill(&mut buf, 128, 64, &mut rng);
        assert_eq!(verify(&buf, 128, 64), Ok(()));
        // a flipped data byte in the third block
        let mut bad = buf.clone();
        bad[2 * 64 + 5] ^= 1;
        assert_eq!(verify(&bad, 128, 64), Err(128 + 128));
        // the right blocks at the wrong offset
        assert_eq!(verify(&buf, 0, 64), Err(0));
        // zeros (an unvalidated prepare) fail too: CRC32 of zeros is not 0
        assert_eq!(verify(&[0u8; 64], 0, 64), Err(0));
    }
}
