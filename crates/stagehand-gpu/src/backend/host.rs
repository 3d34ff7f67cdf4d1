//! Host memory as a pool backend: CPU buffers kept and handed out again by
//! the same [`Pool`](crate::pool::Pool) that keeps device memory, with its
//! capacity classes, budget, statistics and out-of-memory error.
//!
//! For buffers that are large and made again and again (a player's decoded
//! frames, 12 to 130 MB each at 4K): the allocator gives memory of that size
//! back to the kernel when it is freed, so the next frame's buffer is
//! faulted in and cleared page by page all over again. A pooled buffer is
//! touched once and reused.
//!
//! A block is an anonymous memory mapping (given back to the kernel when
//! freed), zeroed when it is allocated and holding whatever its last user
//! left afterwards. A mapping the machine cannot make is
//! [`AllocError::OutOfMemory`], never an abort.

use crate::pool::{AllocError, PoolBackend};
use memmap2::MmapMut;

/// Blocks of host memory. It has no state: every block is its own
/// allocation, freed when the pool gives it back.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostMemory;

/// The largest host block: beyond it a request is refused as invalid
/// rather than tried (64 GiB; no frame comes near it).
pub const MAX_HOST_BLOCK: u64 = 64 << 30;

impl PoolBackend for HostMemory {
    /// Host memory has no kinds: any block of a class serves any request.
    type Key = ();
    type Block = MmapMut;

    const CLASSES: bool = true;

    fn check(&self, _key: &(), capacity: u64) -> Result<(), AllocError> {
        if capacity > MAX_HOST_BLOCK || usize::try_from(capacity).is_err() {
            return Err(AllocError::Invalid(format!(
                "{capacity} bytes of host memory is over the largest block ({MAX_HOST_BLOCK} bytes)"
            )));
        }
        Ok(())
    }

    fn allocate(&self, _key: &(), capacity: u64) -> Result<MmapMut, AllocError> {
        let len = usize::try_from(capacity).map_err(|_| AllocError::OutOfMemory)?;
        // An anonymous mapping: the kernel zeroes each page when it is
        // first written, so pages never written (a class's rounding) cost
        // address space, not memory; a mapping it cannot make is an error,
        // not an abort.
        // No huge-page advice: with the kernel's default defrag setting a
        // fault in an advised mapping compacts memory on the spot, and
        // measured here it made frames slower to fill, not faster.
        MmapMut::map_anon(len).map_err(|_| AllocError::OutOfMemory)
    }

    fn free(&self, _key: &(), block: MmapMut) {
        drop(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{Pool, PoolConfig};

    #[test]
    fn a_buffer_given_back_is_the_next_one_taken() {
        let pool = Pool::new(HostMemory, PoolConfig::named("host")).unwrap();
        let mut a = pool.take((), 3 << 20).unwrap();
        assert!(a.len() >= 3 << 20);
        a[0] = 7;
        let at = a.as_ptr();
        drop(a);
        let b = pool.take((), 3 << 20).unwrap();
        assert_eq!(b.as_ptr(), at, "the same memory came back");
        assert_eq!(b[0], 7, "a reused block holds what its last user left");
        let stats = pool.stats();
        assert_eq!((stats.hits, stats.misses), (1, 1));
    }

    #[test]
    fn a_request_past_the_largest_block_is_invalid_and_changes_nothing() {
        let pool = Pool::new(HostMemory, PoolConfig::named("host")).unwrap();
        let err = pool.take((), MAX_HOST_BLOCK + 1).unwrap_err();
        assert!(!err.is_oom(), "{err}");
        assert_eq!(pool.stats().held, 0);
    }
}
