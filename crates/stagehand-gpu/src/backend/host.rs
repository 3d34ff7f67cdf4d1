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
//! freed; an imported block once the device has also destroyed the buffer
//! that aliases it), zeroed when it is allocated and holding whatever its
//! last user left afterwards. A mapping the machine cannot make is
//! [`AllocError::OutOfMemory`], never an abort.

use crate::Gpu;
use crate::diag::Tracked;
use crate::pool::{AllocError, PoolBackend};
use memmap2::MmapRaw;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Blocks of host memory: every block is its own mapping, freed when the
/// pool gives it back. Made [`importing`](HostMemory::importing), each
/// block is also a buffer of the GPU's (where its device imports host
/// memory), which copies read in place: a frame written into it goes to
/// the GPU with no copy into staging.
#[derive(Clone, Debug, Default)]
pub struct HostMemory {
    /// The GPU each block is imported into, if any.
    import: Option<Arc<Gpu>>,
    /// The imported blocks, by first byte: their length and their buffer.
    /// Shared by the clones of this backend (a pool's, and its user's).
    imported: Arc<Mutex<BTreeMap<usize, (usize, wgpu::Buffer)>>>,
}

impl HostMemory {
    /// Plain host memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Host memory that `gpu` copies from in place, where its device can
    /// import host memory ([`Device::import_host_memory`](crate::Device::import_host_memory));
    /// elsewhere plain host memory.
    pub fn importing(gpu: Arc<Gpu>) -> Self {
        let can = gpu.device().host_import_alignment().is_some();
        Self {
            import: can.then_some(gpu),
            imported: Arc::default(),
        }
    }

    /// Where the GPU finds the byte at `at`: the buffer of the imported
    /// block it lies in, and its offset there; `None` where it lies in
    /// none (not this backend's, or not imported). The block stays the
    /// GPU's for as long as it lives, which whoever holds the byte's
    /// block (a frame) decides.
    pub fn device_at(&self, at: *const u8) -> Option<(wgpu::Buffer, u64)> {
        let at = at as usize;
        let imported = self.imported.lock();
        let (&start, (len, buffer)) = imported.range(..=at).next_back()?;
        let offset = at - start;
        (offset < *len).then(|| (buffer.clone(), offset as u64))
    }
}

/// A block of host memory: an anonymous mapping, and the same memory as a
/// GPU buffer where its pool imports.
pub struct HostBlock {
    map: Arc<MmapRaw>,
    len: usize,
    device: Option<Tracked<wgpu::Buffer>>,
}

impl HostBlock {
    /// The block as a buffer the GPU copies from and into in place
    /// (`COPY_SRC | COPY_DST`), where it was imported; offsets in it are
    /// offsets in the block.
    pub fn device_buffer(&self) -> Option<&wgpu::Buffer> {
        self.device.as_deref()
    }
}

impl std::ops::Deref for HostBlock {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the mapping is at least `len` bytes, lives as long as
        // `self` (its `Arc`), and is written only through `&mut self`.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.map.as_ptr(), self.len)
        }
    }
}

impl std::ops::DerefMut for HostBlock {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `deref`; `&mut self` is the one way to write it.
        // The device reads it only in copies its user waits for before
        // writing again (the pool hands it out only once given back).
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(self.map.as_mut_ptr(), self.len)
        }
    }
}

/// A block's mapping as the device's, kept until the device has destroyed
/// the buffer that aliases it.
struct Mapping(Arc<MmapRaw>);

// SAFETY: the block's mapping stays mapped, at one address and length,
// while this `Arc` holds it.
#[allow(unsafe_code)]
unsafe impl crate::HostRegion for Mapping {
    fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The largest host block: beyond it a request is refused as invalid
/// rather than tried (64 GiB; no frame comes near it).
pub const MAX_HOST_BLOCK: u64 = 64 << 30;

impl PoolBackend for HostMemory {
    /// Host memory has no kinds: any block of a class serves any request.
    type Key = ();
    type Block = HostBlock;

    const CLASSES: bool = true;

    fn check(&self, _key: &(), capacity: u64) -> Result<(), AllocError> {
        if capacity > MAX_HOST_BLOCK || usize::try_from(capacity).is_err() {
            return Err(AllocError::Invalid(format!(
                "{capacity} bytes of host memory is over the largest block ({MAX_HOST_BLOCK} bytes)"
            )));
        }
        Ok(())
    }

    fn allocate(&self, _key: &(), capacity: u64) -> Result<HostBlock, AllocError> {
        let len = usize::try_from(capacity).map_err(|_| AllocError::OutOfMemory)?;
        let align = self
            .import
            .as_ref()
            .and_then(|gpu| gpu.device().host_import_alignment())
            .unwrap_or(1);
        let mapped = len
            .max(1)
            .checked_next_multiple_of(align)
            .ok_or(AllocError::OutOfMemory)?;
        // An anonymous mapping: the kernel zeroes each page when it is
        // first written, so pages never written (a class's rounding) cost
        // address space, not memory; a mapping it cannot make is an error,
        // not an abort.
        // No huge-page advice: with the kernel's default defrag setting a
        // fault in an advised mapping compacts memory on the spot, and
        // measured here it made frames slower to fill, not faster.
        let map = memmap2::MmapOptions::new()
            .len(mapped)
            .map_anon()
            .map_err(|_| AllocError::OutOfMemory)?;
        let map = Arc::new(MmapRaw::from(map));
        let device = self.import.as_ref().and_then(|gpu| {
            let region = Box::new(Mapping(Arc::clone(&map)));
            // SAFETY: the device only reads the block, in copies its
            // users wait for before the block is written again (see
            // `DerefMut`).
            #[allow(unsafe_code)]
            let imported = unsafe {
                gpu.device()
                    .import_host_memory(region, Some("host block (imported)"))
            };
            imported.and_then(Result::ok)
        });
        if let Some(buffer) = &device {
            let start = map.as_ptr() as usize;
            let entry = (mapped, (**buffer).clone());
            self.imported.lock().insert(start, entry);
        }
        Ok(HostBlock { map, len, device })
    }

    fn free(&self, _key: &(), block: HostBlock) {
        if block.device.is_some() {
            self.imported.lock().remove(&(block.map.as_ptr() as usize));
        }
        // The mapping goes once the device has destroyed its buffer.
        drop(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{Pool, PoolConfig};

    #[test]
    fn a_buffer_given_back_is_the_next_one_taken() {
        let pool = Pool::new(HostMemory::new(), PoolConfig::named("host")).unwrap();
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
        let pool = Pool::new(HostMemory::new(), PoolConfig::named("host")).unwrap();
        let err = pool.take((), MAX_HOST_BLOCK + 1).unwrap_err();
        assert!(!err.is_oom(), "{err}");
        assert_eq!(pool.stats().held, 0);
    }
}
