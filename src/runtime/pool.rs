//! Reuse of large byte buffers across exchanges.
//!
//! Every start copies its input into a fresh buffer and the in-process
//! all-reduce accumulates its chunk in another; for large messages the
//! allocator hands back fresh pages each time (glibc `mmap`s them), and
//! faulting those in costs more than moving the data. Buffers of at least
//! [`MIN_BYTES`] go back here when their exchange is done and are handed
//! out again for a message of about the same size; at most [`MAX_BYTES`]
//! are kept.

use std::sync::{Mutex, PoisonError};

/// Smaller buffers are left to the allocator.
pub const MIN_BYTES: usize = 1 << 20;
/// Most bytes kept for reuse.
pub const MAX_BYTES: usize = 2 << 30;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for `len` bytes: a kept one of a capacity
/// between `len` and `2 len` if there is one, else a new one.
pub(crate) fn take(len: usize) -> Vec<u8> {
    if len >= MIN_BYTES {
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        let best = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len && b.capacity() / 2 <= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        if let Some(i) = best {
            let mut buffer = pool.swap_remove(i);
            buffer.clear();
            return buffer;
        }
    }
    Vec::with_capacity(len)
}

/// Keeps `buffer` for reuse if it is large and there is room.
pub(crate) fn give(buffer: Vec<u8>) {
    if buffer.capacity() < MIN_BYTES {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    let kept: usize = pool.iter().map(Vec::capacity).sum();
    if kept + buffer.capacity() <= MAX_BYTES {
        pool.push(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_come_back_small_ones_do_not() {
        let big = vec![7u8; MIN_BYTES * 3];
        let address = big.as_ptr();
        give(big);
        let again = take(MIN_BYTES * 2);
        assert!(again.is_empty() && again.capacity() >= MIN_BYTES * 2);
        // Another test may have taken it first; when it is ours, it is reused.
        if again.as_ptr() == address {
            assert_eq!(again.capacity(), MIN_BYTES * 3);
        }
        give(again);
        give(vec![0u8; 16]);
        assert_eq!(take(16).capacity(), 16);
    }
}
