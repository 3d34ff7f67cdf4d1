//! [`FrameBuffers`]: the host memory decoded frames live in, recycled.
//!
//! Decoders write each frame into a buffer taken from here, and the buffer
//! comes back when the last reference to the frame goes (the cache evicts
//! it, its upload is done): the next frame of the same size is written
//! into memory already touched. Without it, every 4K frame is memory the
//! allocator maps afresh (12 to 130 MB, above its mapping threshold) and
//! the kernel faults in and clears page by page: a cost paid on every
//! frame, on the decode threads, that recycling pays once per buffer.
//!
//! Built on the core library's pool ([`Pool`] over [`HostMemory`]): its
//! capacity classes let frames of nearby sizes (a converted frame and its
//! source) share buffers, and its statistics say how often a frame needed
//! fresh memory.

use crate::PlayError;
use bytes::Bytes;
use parking_lot::Mutex;
use stagehand_gpu::Gpu;
use stagehand_gpu::backend::host::HostMemory;
use stagehand_gpu::pool::{Pool, PoolConfig, PoolStats, Pooled};
use std::collections::HashMap;
use std::sync::Arc;

/// A pool of frame buffers, shared by a player's decode threads.
///
/// Made [`importing`](FrameBuffers::importing), its buffers are also
/// buffers of the GPU's where its device imports host memory (Vulkan's
/// `VK_EXT_external_memory_host`: lavapipe, the desktop drivers), and a
/// frame a decoder wrote in the upload's own layout is copied to its
/// texture from where it lies ([`FrameBuffers::in_place_at`]).
pub struct FrameBuffers {
    pool: Pool<HostMemory>,
    /// Frames laid out as their upload's staging, by the address of their
    /// first byte: the buffer that holds them, as the GPU's, and where in
    /// it they start. An entry lives as long as its frame's buffer is
    /// lent ([`InPlaceMark`]).
    in_place: Mutex<HashMap<usize, (wgpu::Buffer, u64)>>,
}

impl std::fmt::Debug for FrameBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameBuffers")
            .field("stats", &self.pool.stats())
            .finish()
    }
}

impl FrameBuffers {
    /// An empty pool; buffers are allocated on first use.
    pub fn new() -> Arc<Self> {
        Self::with(HostMemory::new())
    }

    /// An empty pool whose buffers `gpu` copies from in place where its
    /// device can import host memory (else as [`FrameBuffers::new`]).
    pub fn importing(gpu: Arc<Gpu>) -> Arc<Self> {
        Self::with(HostMemory::importing(gpu))
    }

    fn with(memory: HostMemory) -> Arc<Self> {
        let pool = Pool::new(memory, PoolConfig::named("frame buffers"))
            .unwrap_or_else(|e| unreachable!("the default pool config is valid: {e}"));
        Arc::new(Self {
            pool,
            in_place: Mutex::new(HashMap::new()),
        })
    }

    /// Where the GPU finds the frame whose first byte is at `at`, laid out
    /// as its upload's staging: the buffer that holds it, as the GPU's,
    /// and the offset of that byte. `None` where no such frame is lent.
    pub fn in_place_at(&self, at: *const u8) -> Option<(wgpu::Buffer, u64)> {
        self.in_place.lock().get(&(at as usize)).cloned()
    }

    /// Records that the frame starting `offset` bytes into `buffer` (at
    /// `at`) is laid out as its upload's staging, until the mark is
    /// dropped. `None` where the buffer is not the GPU's.
    pub(crate) fn mark_in_place(
        self: &Arc<Self>,
        buffer: &FrameBuffer,
        offset: usize,
    ) -> Option<InPlaceMark> {
        let device = buffer.block.device_buffer()?.clone();
        let at = buffer.block.as_ptr() as usize + offset;
        self.in_place.lock().insert(at, (device, offset as u64));
        Some(InPlaceMark {
            buffers: Arc::clone(self),
            at,
        })
    }

    /// A buffer of `len` bytes, its contents whatever its last frame left
    /// (zero when new): the caller writes every byte it keeps.
    pub fn take(&self, len: usize) -> Result<FrameBuffer, PlayError> {
        let block = self.pool.take((), len.max(1) as u64)?;
        Ok(FrameBuffer { block, len })
    }

    /// What the pool has done: `misses` are buffers allocated, `hits`
    /// buffers reused.
    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }
}

/// A frame's entry among those laid out for the GPU to copy in place,
/// removed when dropped (before the frame's buffer goes back).
pub(crate) struct InPlaceMark {
    buffers: Arc<FrameBuffers>,
    at: usize,
}

impl Drop for InPlaceMark {
    fn drop(&mut self) {
        self.buffers.in_place.lock().remove(&self.at);
    }
}

/// One frame's buffer, on loan from [`FrameBuffers`]: written by a decoder,
/// then [frozen](Self::freeze) into the frame's shared bytes.
pub struct FrameBuffer {
    block: Pooled<HostMemory>,
    len: usize,
}

impl FrameBuffer {
    /// The bytes to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.block[..self.len]
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer as shared, immutable bytes; it goes back to its pool when
    /// the last clone is dropped.
    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for FrameBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.block[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_dropped_gives_its_buffer_to_the_next_one() {
        let buffers = FrameBuffers::new();
        let mut first = buffers.take(1 << 20).unwrap();
        first.as_mut_slice().fill(9);
        let bytes = first.freeze();
        let shared = bytes.clone();
        drop(bytes);
        assert_eq!(
            buffers.stats().in_use,
            buffers.stats().held,
            "still referenced"
        );
        drop(shared);
        let second = buffers.take(1 << 20).unwrap();
        assert_eq!(second.as_ref()[0], 9, "the same memory, reused");
        let stats = buffers.stats();
        assert_eq!((stats.misses, stats.hits), (1, 1));
    }
}
