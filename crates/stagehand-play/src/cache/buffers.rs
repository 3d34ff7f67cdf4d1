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
use stagehand_gpu::Gpu;
use stagehand_gpu::backend::host::HostMemory;
use stagehand_gpu::pool::{Pool, PoolConfig, PoolStats, Pooled};
use std::sync::Arc;

/// A pool of frame buffers, shared by a player's decode threads.
///
/// Made [`importing`](FrameBuffers::importing), its buffers are also
/// buffers of the GPU's where its device imports host memory (Vulkan's
/// `VK_EXT_external_memory_host`: lavapipe, the desktop drivers), and a
/// frame written into one in its upload's own layout (rows at the staging
/// pitch) is copied to its texture from where it lies
/// ([`FrameBuffers::in_place_at`]).
pub struct FrameBuffers {
    pool: Pool<HostMemory>,
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
        Arc::new(Self { pool })
    }

    /// Where the GPU finds the byte at `at` of a frame in one of these
    /// buffers, where they are the GPU's: the buffer, and the byte's
    /// offset in it. `None` where the byte is in none of them, or the GPU
    /// cannot import host memory. The buffer is the frame's for as long
    /// as the frame holds it.
    pub fn in_place_at(&self, at: *const u8) -> Option<(wgpu::Buffer, u64)> {
        self.pool.backend().device_at(at)
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
