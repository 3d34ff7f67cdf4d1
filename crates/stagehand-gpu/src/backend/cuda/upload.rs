//! The upload engine on CUDA: host bytes to device buffers through pinned
//! staging, on a transfer stream, without the caller waiting. The engine
//! is the same [`Engine`] as on wgpu, over [`CudaTransfer`]: priorities
//! and the background budget, supersede, fill in place, `upload_async`,
//! the timeline and release work alike.
//!
//! Work queued on a destination's stream before an upload is submitted
//! runs first: the transfer stream waits for it on the device. Work queued
//! on any stream after the upload has landed sees its bytes.

use super::{Cuda, CudaTransfer, DeviceBuffer, Stream};
use crate::upload::{
    Engine, EngineConfig, FrameQueue, FrameQueueConfig, StagingPolicy, StreamOptions,
    StreamedBuffer, UploadError, UploadPriority,
};
use std::sync::Arc;

/// The upload engine of a CUDA device.
pub type CudaUploadEngine = Engine<CudaTransfer>;

/// A device buffer streamed through a [`CudaUploadEngine`].
pub type CudaStreamedBuffer = StreamedBuffer<CudaTransfer>;

impl Engine<CudaTransfer> {
    /// Starts an engine on `cuda`: its transfer stream, its pinned staging
    /// pool and its threads. The config is checked before any of them is
    /// made.
    ///
    /// Errors: [`UploadError::InvalidConfig`], [`UploadError::Device`].
    pub fn new(cuda: &Cuda, config: EngineConfig) -> Result<Self, UploadError> {
        config.validate()?;
        Self::with_backend(CudaTransfer::new(cuda)?, config)
    }

    /// Streams uploads into `dst`; each staging buffer holds all of it (a
    /// ring's are taken from the pinned pool now).
    pub fn create_buffer(
        &self,
        dst: Arc<DeviceBuffer>,
        policy: StagingPolicy,
    ) -> Result<CudaStreamedBuffer, UploadError> {
        self.create_buffer_with(dst, policy.into())
    }

    /// Streams uploads into `dst`, with more options. `rows_per_submit` is
    /// for textures: a buffer given one is an [`UploadError::InvalidConfig`].
    pub fn create_buffer_with(
        &self,
        dst: Arc<DeviceBuffer>,
        options: StreamOptions,
    ) -> Result<CudaStreamedBuffer, UploadError> {
        if options.rows_per_submit.is_some() {
            return Err(UploadError::InvalidConfig(
                "rows_per_submit applies to textures, not buffers".into(),
            ));
        }
        let capacity = dst.len();
        if capacity == 0 {
            return Err(UploadError::ZeroSized);
        }
        Ok(StreamedBuffer {
            inner: self.streamed(dst, options, capacity)?,
        })
    }

    /// The transfer stream.
    pub fn stream(&self) -> &Stream {
        self.backend().stream()
    }

    /// The pinned staging pool's numbers.
    pub fn staging_stats(&self) -> crate::pool::PoolStats {
        self.backend().pinned_pool().stats()
    }
}

impl StreamedBuffer<CudaTransfer> {
    /// The device buffer.
    pub fn buffer(&self) -> &Arc<DeviceBuffer> {
        &self.inner.resource.target
    }
}

impl FrameQueue<CudaStreamedBuffer> {
    /// A queue whose slots are `buffers` (one per slot: their number must be
    /// `config.depth`), each filled whole by one frame through `engine`
    /// with a ring of `config.staging_buffers` pinned buffers.
    /// `config.rows_per_submit` is for textures and not used.
    ///
    /// Errors: [`UploadError::InvalidConfig`] when the numbers disagree or
    /// are out of range, [`UploadError::ZeroSized`] for an empty buffer.
    pub fn cuda(
        engine: &CudaUploadEngine,
        buffers: Vec<Arc<DeviceBuffer>>,
        config: FrameQueueConfig,
    ) -> Result<Self, UploadError> {
        if buffers.len() != config.depth {
            return Err(UploadError::InvalidConfig(format!(
                "a frame queue of depth {} was given {} buffers",
                config.depth,
                buffers.len()
            )));
        }
        let options = StreamOptions {
            priority: UploadPriority::Normal,
            policy: StagingPolicy::Ring(config.staging_buffers),
            rows_per_submit: None,
        };
        let slots = buffers
            .into_iter()
            .map(|dst| engine.create_buffer_with(dst, options))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_slots(slots, config.frame_duration)
    }

    /// The device buffer of a slot.
    pub fn buffer(&self, slot: usize) -> &Arc<DeviceBuffer> {
        self.slot(slot).buffer()
    }
}
