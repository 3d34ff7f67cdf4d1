//! The upload engine: textures and buffers streamed to the GPU by transfer
//! workers, so the caller (a render loop, a decoder) never waits for a copy.
//!
//! The protocol:
//! 1. [`UploadEngine::new`] once per device: it starts the workers and the
//!    poller that turns GPU completions into resolved uploads;
//! 2. create each streamed resource with its [`StagingPolicy`]
//!    ([`UploadEngine::create_texture`], [`UploadEngine::create_buffer`]);
//! 3. `upload` / `try_upload` / `upload_with` return an [`Upload`] at once;
//!    poll it, wait on it, give it a callback or `.await` it;
//! 4. drop the resource (or `release` it): queued uploads are cancelled,
//!    those in flight land, the staging buffers go back to the pool;
//! 5. drop the engine: queued uploads are cancelled, in-flight ones land,
//!    every thread is joined.
//!
//! The texture shows its previous contents until an upload has landed: the
//! GPU copy is one queue submission, ordered against the render thread's.
//! Callbacks run on the engine's poller thread (or on the caller's, if the
//! upload had already ended); they must not block on the engine.

mod admit;
#[cfg(feature = "cuda")]
pub mod cuda;
mod engine;
mod error;
mod frame_queue;
mod future;
pub mod region;
mod resource;
mod stats;
mod worker;

pub use admit::Admit;
pub use error::UploadError;
pub use frame_queue::{FrameQueue, FrameQueueConfig, FrameStats, Presented, WaitReady};
pub use future::{Cancel, StageTimes, Upload, UploadOutcome, UploadStatus};
pub use region::{CopyLayout, SourceLayout, TextureRegion};
pub use resource::{ResourceStats, StagingPolicy, StreamedBuffer, StreamedTexture};

pub use stats::UploadStats;

use crate::backend::wgpu::{BufferBackend, Gpu, buffer_pool};
use crate::diag::sections::UploadSection;
use crate::pool::PoolConfig;
use crate::pool::Pooled;
use engine::EngineShared;
use region::{TextureInfo, staging_pitch};
use resource::{Kind, ResourceShared, Streamed};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use worker::STAGING_USAGE;

/// Scheduling priority of the transfer workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Priority {
    /// Below the render thread: uploads yield the CPU.
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

/// How the engine runs. Defaults are starting points, not tuned values.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Transfer worker threads; at least 1. Default 2.
    pub workers: usize,
    /// Their priority. Default normal.
    pub priority: Priority,
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            workers: 2,
            priority: Priority::Normal,
            max_in_flight_bytes: 512 << 20,
            timeline: None,
            background_bytes_per_frame: None,
            staging_idle: Some(Duration::from_secs(1)),
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

/// The upload engine of one device. Dropping it cancels queued uploads,
/// lets in-flight ones land, and joins every thread.
pub struct UploadEngine {
    shared: Arc<EngineShared>,
    workers: Vec<JoinHandle<()>>,
    poller: Option<JoinHandle<()>>,
    priority: String,
}

impl UploadEngine {
    /// Starts an engine on `gpu`.
    pub fn new(gpu: Arc<Gpu>, config: EngineConfig) -> Result<Self, UploadError> {
        config.validate()?;
        let staging = buffer_pool(Arc::clone(&gpu), PoolConfig::named("staging"))?;
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..config.workers).map(|_| worker::lanes()).unzip();
        let (frame_ticks, tick_receivers): (Vec<_>, Vec<_>) = (0..config.workers)
            .map(|_| crossbeam_channel::bounded(1))
            .unzip();
        let shared = Arc::new(EngineShared {
            gpu,
            staging,
            jobs: parking_lot::RwLock::new(Some(senders)),
            frame_ticks,
            background_budget: config.background_bytes_per_frame,
            staging_idle: config.staging_idle,
            background_spent: AtomicU64::new(0),
            next_worker: AtomicUsize::new(0),
            completions: crossbeam_channel::unbounded(),
            outstanding: AtomicUsize::new(0),
            wake_poller: (parking_lot::Mutex::new(()), parking_lot::Condvar::new()),
            admission: parking_lot::Mutex::new(engine::Admission::default()),
            admitted: parking_lot::Condvar::new(),
            max_in_flight_bytes: config.max_in_flight_bytes,
            shut_down: AtomicBool::new(false),
            counters: Default::default(),
            window: Default::default(),
            panics: Arc::new(AtomicU64::new(0)),
            workers_alive: AtomicUsize::new(config.workers),
            room_wakers: parking_lot::Mutex::new(Vec::new()),
            timeline: config.timeline.clone(),
        });
        let (report_tx, report_rx) = crossbeam_channel::bounded(config.workers);
        let mut workers = Vec::with_capacity(config.workers);
        for (i, (lanes, tick)) in receivers.into_iter().zip(tick_receivers).enumerate() {
            let (for_worker, report) = (Arc::clone(&shared), report_tx.clone());
            let priority = config.priority;
            let spawned = std::thread::Builder::new()
                .name(format!("stagehand-upload-{i}"))
                .spawn(move || {
                    let _ = report.send(set_priority(priority));
                    engine::EngineThread::Worker.mark();
                    worker::run(for_worker, worker::Queues::new(lanes, tick))
                });
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    shared
                        .workers_alive
                        .fetch_sub(config.workers - i, Ordering::AcqRel);
                    return Err(UploadError::InvalidConfig(format!(
                        "could not start a worker: {e}"
                    )));
                }
            }
        }
        let poll_shared = Arc::clone(&shared);
        let (started_tx, started) = crossbeam_channel::bounded(1);
        let poller = std::thread::Builder::new()
            .name("stagehand-poll".into())
            .spawn(move || {
                let _ = started_tx.send(());
                poll_shared.poll_loop()
            })
            .map_err(|e| UploadError::InvalidConfig(format!("could not start the poller: {e}")))?;
        // Every thread is running (and named) when `new` returns.
        let _ = started.recv_timeout(std::time::Duration::from_secs(5));
        let results = (0..workers.len()).map_while(|_| {
            report_rx
                .recv_timeout(std::time::Duration::from_secs(5))
                .ok()
        });
        let refused = results.filter_map(Result::err).next();
        let priority = match refused {
            Some(e) => format!("{:?} (not applied: {e})", config.priority),
            None => format!("{:?}", config.priority),
        };
        Ok(Self {
            shared,
            workers,
            poller: Some(poller),
            priority,
        })
    }

    /// The engine's staging pool.
    pub fn staging_pool(&self) -> &crate::backend::wgpu::BufferPool {
        &self.shared.staging
    }

    /// Creates a streamed texture. Its ring (if any) is allocated and mapped
    /// now, sized for one layer of mip 0. Each upload lands in one
    /// submission, so the texture never shows half of one.
    pub fn create_texture(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
        policy: StagingPolicy,
    ) -> Result<StreamedTexture, UploadError> {
        self.create_texture_with(
            desc,
            StreamOptions {
                policy,
                ..StreamOptions::default()
            },
        )
    }

    /// Creates a streamed texture with more options.
    pub fn create_texture_with(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
        options: StreamOptions,
    ) -> Result<StreamedTexture, UploadError> {
        let policy = options.policy;
        check_options(options)?;
        if options.rows_per_submit == Some(0) {
            return Err(UploadError::InvalidConfig(
                "rows_per_submit must be at least 1".into(),
            ));
        }
        let mut desc = desc.clone();
        desc.usage |= wgpu::TextureUsages::COPY_DST;
        let texture = self
            .shared
            .gpu
            .device()
            .create_texture(&desc)
            .map_err(|e| UploadError::Create(e.to_string()))?;
        let info = TextureInfo::of(&texture);
        let capacity = frame_staging_bytes(&info)?;
        let ring = self.ring(policy, capacity)?;
        let kind = Kind::Texture { texture, info };
        let shared = self.resource(kind, options, capacity, ring);
        Ok(StreamedTexture {
            inner: Streamed { shared },
        })
    }

    /// Creates a streamed buffer; its staging buffers hold the whole buffer.
    pub fn create_buffer(
        &self,
        desc: &wgpu::BufferDescriptor<'_>,
        policy: StagingPolicy,
    ) -> Result<StreamedBuffer, UploadError> {
        let options = StreamOptions {
            policy,
            ..StreamOptions::default()
        };
        self.create_buffer_with(desc, options)
    }

    /// Creates a streamed buffer with more options. `rows_per_submit` is for
    /// textures: a buffer given one is an [`UploadError::InvalidConfig`].
    pub fn create_buffer_with(
        &self,
        desc: &wgpu::BufferDescriptor<'_>,
        options: StreamOptions,
    ) -> Result<StreamedBuffer, UploadError> {
        let policy = options.policy;
        check_options(options)?;
        if options.rows_per_submit.is_some() {
            return Err(UploadError::InvalidConfig(
                "rows_per_submit applies to textures, not buffers".into(),
            ));
        }
        let mut desc = desc.clone();
        desc.usage |= wgpu::BufferUsages::COPY_DST;
        let buffer = self
            .shared
            .gpu
            .device()
            .create_buffer(&desc)
            .map_err(|e| UploadError::Create(e.to_string()))?;
        let capacity = buffer.size();
        let ring = self.ring(policy, capacity)?;
        let kind = Kind::Buffer { buffer };
        let shared = self.resource(kind, options, capacity, ring);
        Ok(StreamedBuffer {
            inner: Streamed { shared },
        })
    }

    /// The shared state of a new resource, given the next worker.
    fn resource(
        &self,
        kind: Kind,
        options: StreamOptions,
        capacity: u64,
        ring: Vec<Pooled<BufferBackend>>,
    ) -> Arc<ResourceShared> {
        let worker = self.next_worker();
        Arc::new(ResourceShared::new(
            Arc::clone(&self.shared),
            kind,
            options,
            capacity,
            ring,
            worker,
        ))
    }

    /// Ends a frame: background uploads may start another
    /// [`EngineConfig::background_bytes_per_frame`] bytes. What they spent
    /// past the budget carries over, so over many frames they average to
    /// the budget. Call it once per rendered frame; without a budget it does
    /// nothing.
    pub fn end_frame(&self) {
        let Some(budget) = self.shared.background_budget else {
            return;
        };
        let _ = self.shared.background_spent.fetch_update(
            Ordering::AcqRel,
            Ordering::Acquire,
            |spent| Some(spent.saturating_sub(budget)),
        );
        for tick in &self.shared.frame_ticks {
            let _ = tick.try_send(());
        }
    }

    fn next_worker(&self) -> usize {
        self.shared.next_worker.fetch_add(1, Ordering::Relaxed) % self.workers.len().max(1)
    }

    /// Takes a ring's staging buffers from the pool and maps them.
    fn ring(
        &self,
        policy: StagingPolicy,
        capacity: u64,
    ) -> Result<Vec<crate::pool::Pooled<crate::backend::wgpu::BufferBackend>>, UploadError> {
        let StagingPolicy::Ring(n) = policy else {
            return Ok(Vec::new());
        };
        let slots = (0..n)
            .map(|_| self.shared.staging.take(STAGING_USAGE, capacity))
            .collect::<Result<Vec<_>, _>>()?;
        let failed = Arc::new(AtomicBool::new(false));
        for slot in &slots {
            let failed = Arc::clone(&failed);
            slot.slice(..).map_async(wgpu::MapMode::Write, move |r| {
                if r.is_err() {
                    failed.store(true, Ordering::Release);
                }
            });
        }
        let device = self.shared.gpu.device();
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| UploadError::Device(e.to_string()))?;
        if failed.load(Ordering::Acquire) {
            return Err(UploadError::Device("could not map a staging buffer".into()));
        }
        Ok(slots)
    }

    /// The engine's numbers now.
    pub fn stats(&self) -> UploadStats {
        self.shared.counters.stats(
            self.workers.len(),
            self.priority.clone(),
            self.shared.window.lock().rate(),
            self.shared.staging.stats().held,
            self.shared.panics.load(Ordering::Relaxed),
        )
    }

    /// The report section of this engine.
    pub fn section(&self) -> UploadSection {
        UploadSection {
            engine: self.stats(),
        }
    }

    /// Gives every idle staging buffer back to the device.
    pub fn trim_staging(&self) {
        self.shared.staging.trim();
    }
}

impl Drop for UploadEngine {
    fn drop(&mut self) {
        self.shared.shut_down.store(true, Ordering::Release);
        // Closing the queue lets workers drain it (cancelling what is left)
        // and exit.
        self.shared.jobs.write().take();
        self.shared.wake_poller.1.notify_all();
        if engine::EngineThread::current() != engine::EngineThread::None {
            // Dropped inside a callback, on one of the engine's threads: a
            // worker may be waiting for a staging map only the poller
            // delivers, and the poller may be this thread. They are told to
            // stop and end on their own once their work is drained.
            self.workers.clear();
            self.poller.take();
            return;
        }
        join_others(self.workers.drain(..));
        self.shared.wake_poller.1.notify_all();
        join_others(self.poller.take());
    }
}

/// Joins an engine's threads, except the one running this: an engine dropped
/// from a callback is dropped on one of its own threads, which cannot join
/// itself; the others still end, and it ends when the callback returns.
pub(crate) fn join_others(threads: impl IntoIterator<Item = JoinHandle<()>>) {
    let me = std::thread::current().id();
    for thread in threads.into_iter().filter(|t| t.thread().id() != me) {
        let _ = thread.join();
    }
}

impl std::fmt::Debug for UploadEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadEngine")
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

fn check_options(options: StreamOptions) -> Result<(), UploadError> {
    if options.policy == StagingPolicy::Synchronous
        && options.priority == UploadPriority::Background
    {
        return Err(UploadError::InvalidConfig(
            "background uploads need a worker (for their budget): use a policy other than Synchronous".into(),
        ));
    }
    check_policy(options.policy)
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

fn check_policy(policy: StagingPolicy) -> Result<(), UploadError> {
    match policy {
        StagingPolicy::Ring(0) | StagingPolicy::PerUpload(0) => Err(UploadError::InvalidConfig(
            "a staging policy needs at least one buffer".into(),
        )),
        _ => Ok(()),
    }
}

/// Staging bytes of one layer of mip 0: what each ring slot holds.
fn frame_staging_bytes(info: &TextureInfo) -> Result<u64, UploadError> {
    let format = info.format;
    let block = format
        .block_copy_size(None)
        .ok_or(UploadError::UnsupportedFormat(format))?;
    let (bw, bh) = format.block_dimensions();
    let row = u64::from(info.size.width.div_ceil(bw)) * u64::from(block);
    let rows = u64::from(info.size.height.div_ceil(bh));
    Ok(staging_pitch(row) * rows)
}

/// Applies `priority` to the calling thread (a decoder of a player, say,
/// that should yield to the transfer workers); `Err` says why the OS
/// refused.
pub fn set_priority(priority: Priority) -> Result<(), String> {
    use thread_priority::{ThreadPriority, set_current_thread_priority};
    let value = match priority {
        Priority::Normal => return Ok(()),
        Priority::Low => ThreadPriority::Min,
        Priority::High => ThreadPriority::Max,
    };
    set_current_thread_priority(value).map_err(|e| format!("{e:?}"))
}
