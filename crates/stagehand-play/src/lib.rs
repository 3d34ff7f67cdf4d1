//! Playback: an image sequence (or synthetic frames) streamed through the
//! upload engine into a frame queue, drawn by a real render pass at the
//! target rate, with a summary of what was shown, dropped and late, and how
//! long the render thread waited.
//!
//! `stagehand play` is a thin front over [`play`]. The core library,
//! `stagehand_gpu`, knows nothing of decoders: this crate brings them.

pub mod cache;
mod error;
pub mod format;
pub mod pattern;
mod render;
pub mod source;
mod summary;

pub use cache::{CacheConfig, CacheStats, FrameCache};
pub use error::PlayError;
pub use format::{FormatChoice, FormatPlan};

pub use render::Renderer;
pub use source::natural_cmp;

use serde::Serialize;
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{
    EngineConfig, FrameQueue, FrameQueueConfig, FrameStats, UploadEngine, UploadError,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to play and how.
#[derive(Clone, Debug)]
pub struct PlayOptions {
    /// A folder of frames; `None` plays synthetic frames.
    pub dir: Option<PathBuf>,
    /// Frames per second.
    pub fps: f64,
    /// Size of synthetic frames (a folder's frames keep their own).
    pub size: (u32, u32),
    /// Size of the render target.
    pub output_size: (u32, u32),
    /// Frames to play; `None`: the folder once, or 5 seconds of synthetic frames.
    pub frames: Option<u64>,
    /// Decode threads.
    pub threads: usize,
    /// Staging buffers per frame-queue slot.
    pub staging_buffers: usize,
    /// Frame-queue slots.
    pub depth: usize,
    /// Play a folder again from the start until `frames` have played.
    pub looped: bool,
    /// Render ticks (from 0) whose output to read back.
    pub save_ticks: Vec<u64>,
    /// Where to record decode, render and memory; `None` records nothing.
    pub timeline: Option<Arc<stagehand_gpu::diag::Timeline>>,
}

impl Default for PlayOptions {
    fn default() -> Self {
        Self {
            dir: None,
            fps: 24.0,
            size: (3840, 2160),
            output_size: (1920, 1080),
            frames: None,
            threads: 2,
            staging_buffers: 1,
            depth: 3,
            looped: false,
            save_ticks: Vec::new(),
            timeline: None,
        }
    }
}

impl PlayOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<(), PlayError> {
        let bad = |m: &str| Err(PlayError::InvalidOption(m.to_owned()));
        if !(self.fps.is_finite() && self.fps > 0.0 && self.fps <= 1000.0) {
            return bad("fps must be above 0 and at most 1000");
        }
        if self.size.0 == 0
            || self.size.1 == 0
            || self.output_size.0 == 0
            || self.output_size.1 == 0
        {
            return bad("sizes must not be zero");
        }
        if self.threads == 0 || self.staging_buffers == 0 || self.depth < 2 {
            return bad("threads and staging buffers must be at least 1, depth at least 2");
        }
        if self.frames == Some(0) {
            return bad("frames must be at least 1");
        }
        Ok(())
    }
}

/// Progress while playing, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Render ticks done.
    pub tick: u64,
    /// Render ticks in all.
    pub ticks: u64,
    /// Frames shown and dropped so far.
    pub frames: FrameStats,
    /// Upload bandwidth over the last second, bytes per second.
    pub bandwidth: f64,
}

/// Percentiles in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Millis {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Millis {
    fn of(mut samples: Vec<f64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: usize| samples[(samples.len() * q / 100).min(samples.len() - 1)];
        Self {
            p50: at(50),
            p99: at(99),
            max: samples[samples.len() - 1],
        }
    }
}

/// What a playback did.
#[derive(Clone, Debug, Serialize)]
pub struct PlaySummary {
    /// The adapter it ran on.
    pub adapter: String,
    /// Frame size.
    pub size: (u32, u32),
    /// Render target size.
    pub output_size: (u32, u32),
    /// Target rate.
    pub fps: f64,
    /// Seconds spent waiting for the first frames before the clock started.
    pub preroll: f64,
    /// Frames pushed, shown, dropped, late.
    pub frames: FrameStats,
    /// Render ticks run.
    pub ticks: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Upload latency, queued to GPU complete.
    pub upload_latency: Millis,
    /// Render-thread time per tick spent on uploads: choosing the frame to
    /// show (the frame queue). Drawing is not in it.
    pub blocked: Millis,
    /// Render-thread time per tick drawing and submitting the pass.
    pub render: Millis,
    /// Decoding speed per decode thread, bytes per second (0 for synthetic).
    pub decode_bandwidth: f64,
    /// Bytes uploaded per second of the run.
    pub upload_bandwidth: f64,
    /// Highest bytes the staging pool held.
    pub peak_staging: u64,
    /// Highest texture bytes alive.
    pub peak_textures: u64,
    /// Highest staging bytes held after the first second (0 for runs of a
    /// second or less); equal to `peak_staging` when memory stays flat.
    pub peak_staging_after_warmup: u64,
    /// Frames read back at the ticks asked for: tick, frame shown, pixels.
    #[serde(skip)]
    pub saved: Vec<Saved>,
}

/// One read-back render target.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The render tick.
    pub tick: u64,
    /// The frame the queue said was on screen.
    pub frame: Option<u64>,
    /// Target width and height.
    pub size: (u32, u32),
    /// Tightly packed RGBA8.
    pub rgba: Vec<u8>,
}

fn texture_desc(size: (u32, u32)) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some("play frame"),
        size: wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    }
}

/// Plays a sequence and returns what happened; `progress` is called once per
/// render tick. The engine is passed in so its stats can join a report.
pub fn play(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    mut progress: impl FnMut(Progress),
) -> Result<PlaySummary, PlayError> {
    options.validate()?;
    let files = options
        .dir
        .as_deref()
        .map(source::list_frames)
        .transpose()?;
    let size = match &files {
        Some(files) => {
            let (w, h, _) = source::legacy_decode(&files[0], None)?;
            (w, h)
        }
        None => options.size,
    };
    let total = match (&files, options.frames) {
        (_, Some(n)) => n,
        (Some(files), None) => files.len() as u64,
        (None, None) => (options.fps * 5.0).ceil() as u64,
    };
    let period = Duration::from_secs_f64(1.0 / options.fps);
    let config = FrameQueueConfig {
        depth: options.depth,
        staging_buffers: options.staging_buffers,
        frame_duration: period,
        ..FrameQueueConfig::default()
    };
    let queue = Arc::new(FrameQueue::new(engine, &texture_desc(size), config)?);
    let renderer = Renderer::new(gpu, &queue, options.output_size)?;
    let latencies = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let decode_nanos = Arc::new(AtomicU64::new(0));
    let producer = spawn_producer(
        &queue,
        files,
        options,
        size,
        total,
        &latencies,
        &decode_nanos,
        period,
    )?;
    // Pre-roll: start the clock with the first frames landed, as a player
    // does, so start-up costs do not count as late or dropped frames.
    let preroll_started = Instant::now();
    // Every slot can hold a ready frame before the first is shown.
    let wanted = options.depth.min(total as usize);
    let deadline = preroll_started + Duration::from_secs(10);
    // Stop early if the producer has ended (a bad file fails it at once).
    while queue.preroll(wanted, Duration::from_millis(20)) < wanted
        && !producer.is_finished()
        && Instant::now() < deadline
    {}
    let preroll = preroll_started.elapsed().as_secs_f64();
    let start = Instant::now();
    gpu.tracker().reset_peaks();
    let mut run = Run::default();
    let mut first_second_peak = None;
    for tick in 0..total {
        pace(start, tick, period);
        run.tick(gpu, &queue, &renderer, start, tick, options)?;
        if let Some(timeline) = &options.timeline {
            let staging = engine.staging_pool().stats().held as f64;
            let textures = gpu
                .tracker()
                .stats(stagehand_gpu::ObjectKind::Texture)
                .bytes as f64;
            timeline.counter(
                "memory",
                Instant::now(),
                &[("staging pool", staging), ("textures", textures)],
            );
        }
        if first_second_peak.is_none() && start.elapsed() > Duration::from_secs(1) {
            // From here on the pool must not grow: measure its peak afresh.
            first_second_peak = Some(engine.staging_pool().stats().peak_held);
            engine.staging_pool().reset_peaks();
        }
        progress(Progress {
            tick: tick + 1,
            ticks: total,
            frames: queue.stats(),
            bandwidth: engine.stats().bandwidth,
        });
    }
    // The clock has run out: a producer still waiting for a slot must stop.
    queue.close();
    let produced = producer
        .join()
        .map_err(|_| PlayError::InvalidOption("the producer thread panicked".into()))?;
    match produced {
        // Closed because playback ended: frames it had not pushed are not played.
        Err(PlayError::Upload(UploadError::Released)) | Ok(()) => {}
        Err(e) => return Err(e),
    }
    let frames = queue.finish();
    let seconds = start.elapsed().as_secs_f64();
    let frame_bytes = u64::from(size.0) * u64::from(size.1) * 4;
    let decoded = decode_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let peak_now = engine.staging_pool().stats().peak_held;
    let peak_staging_after_warmup = if first_second_peak.is_some() {
        peak_now
    } else {
        0
    };
    let summary = PlaySummary {
        adapter: format!("{} ({:?})", gpu.info().name, gpu.info().backend),
        size,
        output_size: options.output_size,
        fps: options.fps,
        preroll,
        frames,
        ticks: total,
        seconds,
        upload_latency: Millis::of(latencies.lock().clone()),
        blocked: Millis::of(run.blocked),
        render: Millis::of(run.render),
        decode_bandwidth: if decoded > 0.0 {
            (frames.pushed * frame_bytes) as f64 / decoded
        } else {
            0.0
        },
        upload_bandwidth: (frames.pushed * frame_bytes) as f64 / seconds,
        peak_staging: peak_now.max(first_second_peak.unwrap_or(0)),
        peak_textures: gpu
            .tracker()
            .stats(stagehand_gpu::ObjectKind::Texture)
            .peak_bytes,
        peak_staging_after_warmup,
        saved: run.saved,
    };
    Ok(summary)
}

/// The render loop's measurements.
#[derive(Default)]
struct Run {
    blocked: Vec<f64>,
    render: Vec<f64>,
    saved: Vec<Saved>,
}

impl Run {
    fn tick(
        &mut self,
        gpu: &Gpu,
        queue: &FrameQueue,
        renderer: &Renderer,
        start: Instant,
        tick: u64,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let t = Instant::now();
        let shown = queue.present(start.elapsed());
        let t2 = Instant::now();
        renderer.draw(gpu, shown.map(|p| p.slot))?;
        let t3 = Instant::now();
        self.blocked.push((t2 - t).as_secs_f64() * 1e3);
        self.render.push((t3 - t2).as_secs_f64() * 1e3);
        if let Some(timeline) = &options.timeline {
            timeline.span("render", "present", t, t2);
            timeline.span("render", "render pass", t2, t3);
        }
        if options.save_ticks.contains(&tick) {
            let (w, h, rgba) = renderer.read_back(gpu)?;
            self.saved.push(Saved {
                tick,
                frame: shown.map(|p| p.frame),
                size: (w, h),
                rgba,
            });
        }
        Ok(())
    }
}

fn pace(start: Instant, tick: u64, period: Duration) {
    let due = start + period.mul_f64(tick as f64);
    if let Some(wait) = due.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
}

/// Starts the thread that pushes frames into the queue in order: generated
/// in place, or decoded by `options.threads` decoders and put back in order.
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
fn spawn_producer(
    queue: &Arc<FrameQueue>,
    files: Option<Vec<PathBuf>>,
    options: &PlayOptions,
    size: (u32, u32),
    total: u64,
    latencies: &Arc<parking_lot::Mutex<Vec<f64>>>,
    decode_nanos: &Arc<AtomicU64>,
    period: Duration,
) -> Result<std::thread::JoinHandle<Result<(), PlayError>>, PlayError> {
    let (queue, latencies, decode_nanos) = (
        Arc::clone(queue),
        Arc::clone(latencies),
        Arc::clone(decode_nanos),
    );
    let (threads, looped, timeline) = (options.threads, options.looped, options.timeline.clone());
    let record = move |upload: stagehand_gpu::upload::Upload,
                       latencies: &Arc<parking_lot::Mutex<Vec<f64>>>| {
        let latencies = Arc::clone(latencies);
        upload.on_complete(move |o| {
            if let Some(l) = o.times.latency() {
                latencies.lock().push(l.as_secs_f64() * 1e3);
            }
        });
    };
    let handle = std::thread::spawn(move || -> Result<(), PlayError> {
        match files {
            None => {
                let painter = Arc::new(pattern::Painter::new(size.0, size.1));
                for k in 0..total {
                    let painter = Arc::clone(&painter);
                    let fill =
                        move |mut out: wgpu::WriteOnly<'_, [u8]>,
                              layout: &stagehand_gpu::upload::CopyLayout| {
                            painter.paint(k, &mut out, layout.staging_pitch as usize);
                        };
                    record(
                        queue.push_with(k, period.mul_f64(k as f64), fill)?,
                        &latencies,
                    );
                }
                Ok(())
            }
            Some(files) => {
                let rounds = if looped {
                    total.div_ceil(files.len() as u64)
                } else {
                    1
                };
                let total = total.min(files.len() as u64 * rounds);
                let (tx, rx) = crossbeam_channel::bounded(threads * 2);
                let decoders = source::spawn_decoders(
                    files,
                    rounds,
                    threads,
                    size,
                    tx,
                    decode_nanos,
                    timeline,
                );
                let mut waiting = BTreeMap::new();
                let mut next = 0u64;
                for (k, frame) in rx.iter() {
                    waiting.insert(k, frame);
                    while let Some(frame) = waiting.remove(&next) {
                        if next < total {
                            record(
                                queue.push(next, period.mul_f64(next as f64), frame?)?,
                                &latencies,
                            );
                        }
                        next += 1;
                    }
                    if next >= total {
                        break;
                    }
                }
                drop(rx);
                for d in decoders {
                    let _ = d.join();
                }
                Ok(())
            }
        }
    });
    Ok(handle)
}

/// A default engine for playback: decode and upload threads below the render thread.
pub fn engine_config(workers: usize) -> EngineConfig {
    EngineConfig {
        workers: workers.max(1),
        priority: stagehand_gpu::upload::Priority::Low,
        ..EngineConfig::default()
    }
}
