//! The upload engine: textures and buffers streamed to a device by transfer
//! workers, so the caller (a render loop, a decoder) never waits for a copy.
//! [`Engine`] is written once against [`TransferBackend`]; wgpu
//! ([`UploadEngine`]) and CUDA ([`cuda::CudaUploadEngine`]) implement it.
//!
//! The protocol:
//! 1. one engine per device: it starts the workers and the completion
//!    thread that turns finished copies into resolved uploads;
//! 2. create each streamed resource with its [`StagingPolicy`]
//!    ([`UploadEngine::create_texture`], [`UploadEngine::create_buffer`],
//!    [`cuda::CudaUploadEngine::create_buffer`]);
//! 3. `upload` / `try_upload` / `upload_async` / `upload_with` return an
//!    [`Upload`]; poll it, wait on it, give it a callback or `.await` it;
//! 4. drop the resource (or `release` it): queued uploads are cancelled,
//!    those in flight land, the staging buffers go back to the pool (and
//!    from there to the device after [`EngineConfig::staging_idle`]);
//! 5. drop the engine: queued uploads are cancelled, started ones land,
//!    every thread is joined.
//!
//! How uploads are ordered (the schedule, turns and completion) is written
//! down in the `schedule` module: uploads start by priority, are filled by
//! several threads at once, and are submitted and land in the order they
//! started, so the last upload to a region wins.
//!
//! A texture shows its previous contents until an upload has landed: each
//! upload's copy is one submission, ordered against the render thread's.
//! Callbacks run on the engine's threads (or on the caller's, if the upload
//! had already ended); they must not block on the engine.

mod admission;
/// The upload engine on CUDA (feature `cuda`): [`CudaUploadEngine`](cuda::CudaUploadEngine)
/// and its streamed buffers, written in `backend/cuda/upload.rs`.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use crate::backend::cuda::upload::{CudaStreamedBuffer, CudaUploadEngine};
}
mod admit;
mod core;
mod engine;
mod error;
pub(crate) mod frame_queue;
mod frame_slot;
mod future;
pub mod region;
pub(crate) mod resource;
mod schedule;
mod stats;
mod streamed;
mod transfer;
mod worker;

#[cfg(all(test, feature = "model-check"))]
mod models;
#[cfg(test)]
mod tests;

pub use crate::backend::wgpu::upload::{StreamedTexture, UploadEngine};
pub use crate::diag::sections::upload::UploadStats;
pub use admission::IfFull;
pub use admit::Admit;
pub use engine::{Engine, MAX_STAGING_BUFFERS, set_priority};
pub use error::UploadError;
pub use frame_queue::{FrameQueue, FrameQueueConfig, FrameStats, Presented, WaitReady};
pub use frame_slot::FrameSlot;
pub use future::{Cancel, StageTimes, Upload, UploadOutcome, UploadPhase, UploadStatus};
pub use region::{CopyLayout, SourceLayout, TextureRegion};
pub use resource::{ResourceStats, StagingPolicy};
pub use streamed::StreamedBuffer;
pub use transfer::{CopyPlan, InPlace, TransferBackend};

use std::sync::Arc;
use std::time::Duration;

/// Scheduling priority of the engine's threads (not of uploads: that is
/// [`UploadPriority`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThreadPriority {
    /// Below the render thread: uploads yield the CPU. A worker also
    /// submits to the device queue, holding the driver's locks while it
    /// does; where the render thread submits on the same device (a
    /// player), a low worker can leave it waiting on a lock held by a
    /// thread that is not running: keep such workers `Normal`.
    Low,
    /// The OS default.
    #[default]
    Normal,
    /// Above normal, where the OS allows it (often it needs privileges).
    High,
}

/// Which of a worker's queued uploads it starts first.
///
/// Each worker takes the oldest upload of the highest priority waiting.
/// Order within one resource is kept (a resource has one priority).
/// Background uploads also obey the engine's per-frame byte budget
/// ([`EngineConfig::background_bytes_per_frame`]), so a video stream given
/// this priority cannot starve the others: over budget it waits for
/// [`UploadEngine::end_frame`], and newer frames supersede the queued ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum UploadPriority {
    /// Ahead of everything else.
    High = 0,
    /// The default.
    #[default]
    Normal = 1,
    /// Last, and within the per-frame budget.
    Background = 2,
}

/// How a streamed texture or buffer is uploaded. The default: a ring of two
/// staging buffers, normal priority, whole-upload submissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamOptions {
    /// Where uploads are staged.
    pub policy: StagingPolicy,
    /// Which queued uploads its worker starts first.
    pub priority: UploadPriority,
    /// Split each single-layer copy into submissions of at most this many
    /// rows (of blocks). On adapters that run copies on the CPU under the
    /// queue's lock (lavapipe, llvmpipe), a whole 4K frame holds that lock
    /// for milliseconds and the render thread's own submit waits behind it;
    /// strips bound that wait. The price: between strips the texture holds
    /// part of the new frame, so use it only for textures that are not being
    /// shown while they fill (the slots of a frame queue). `None`: one
    /// submission per upload.
    pub rows_per_submit: Option<u32>,
}

/// How an engine runs, on any backend. Defaults are starting points, not
/// tuned values.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Transfer worker threads; at least 1. Default 2.
    pub workers: usize,
    /// Their priority. Default normal.
    pub priority: ThreadPriority,
    /// Staging bytes in flight across the engine before uploads wait.
    /// Default 512 MiB: fifteen 4K RGBA8 frames.
    pub max_in_flight_bytes: u64,
    /// Where to record each landed upload's stages; `None` records nothing.
    pub timeline: Option<Arc<crate::diag::Timeline>>,
    /// Bytes [`UploadPriority::Background`] uploads may start between two
    /// calls of [`UploadEngine::end_frame`]; `None` (the default) for no cap.
    /// Each worker may start one upload past the budget before it waits.
    pub background_bytes_per_frame: Option<u64>,
    /// How long a staging buffer may sit idle in the engine's pool (a
    /// dropped ring's, a finished burst's) before it goes back to the
    /// device by itself: buffers no upload asked for in that time are freed,
    /// about one to two such times after they went idle. Default 1 s;
    /// `None` keeps them until [`UploadEngine::trim_staging`]. 1 ms to 1 h.
    pub staging_idle: Option<Duration>,
    /// Threads that fill one upload's staging at once (the worker that took
    /// it and `fill_threads - 1` helpers shared by the engine), so one
    /// large stream can use more than one core. Default 1: on llvmpipe
    /// (GL), parallel fill of 4K frames raised the process's resident
    /// plateau by several frames, and its gain is not measured yet. 1 to 64.
    pub fill_threads: usize,
    /// The smallest share of an upload one fill thread copies: uploads under
    /// twice this are filled by one thread. Default 1 MiB; 4 KiB to 1 GiB.
    pub chunk_bytes: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            workers: 2,
            priority: ThreadPriority::Normal,
            max_in_flight_bytes: 512 << 20,
            timeline: None,
            background_bytes_per_frame: None,
            staging_idle: Some(Duration::from_secs(1)),
            fill_threads: 1,
            chunk_bytes: 1 << 20,
        }
    }
}

impl EngineConfig {
    /// Checks every field is in range.
    pub fn validate(&self) -> Result<(), UploadError> {
        if self.workers == 0 || self.workers > 64 {
            return Err(UploadError::InvalidConfig(format!(
                "workers must be 1 to 64, not {}",
                self.workers
            )));
        }
        if let Some(idle) = self.staging_idle
            && !(Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&idle)
        {
            return Err(UploadError::InvalidConfig(format!(
                "staging_idle must be 1 ms to 1 h, not {idle:?}"
            )));
        }
        if self.fill_threads == 0 || self.fill_threads > 64 {
            return Err(UploadError::InvalidConfig(format!(
                "fill_threads must be 1 to 64, not {}",
                self.fill_threads
            )));
        }
        if !(4096..=1 << 30).contains(&self.chunk_bytes) {
            return Err(UploadError::InvalidConfig(format!(
                "chunk_bytes must be 4 KiB to 1 GiB, not {}",
                self.chunk_bytes
            )));
        }
        if self.max_in_flight_bytes == 0 {
            return Err(UploadError::InvalidConfig(
                "max_in_flight_bytes must be above 0".into(),
            ));
        }
        if self.background_bytes_per_frame == Some(0) {
            return Err(UploadError::InvalidConfig(
                "background_bytes_per_frame of 0 would never start a background upload; use None for no cap".into(),
            ));
        }
        Ok(())
    }
}

impl From<StagingPolicy> for StreamOptions {
    /// `policy`, and the defaults for the rest.
    fn from(policy: StagingPolicy) -> Self {
        Self {
            policy,
            ..Self::default()
        }
    }
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            policy: StagingPolicy::Ring(2),
            priority: UploadPriority::Normal,
            rows_per_submit: None,
        }
    }
}
