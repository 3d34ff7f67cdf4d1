//! The player: a feed of frames (decoded through the frame cache, or
//! generated) pushed into the frame queue by a producer thread, and the
//! render loop that picks the frame due at each tick and draws it.
//!
//! Frames in the queue are numbered by render tick (`k` is due at
//! `k / fps`); the sequence position of tick `k` is `k % len` when
//! looping. Ticks on a gap push nothing, so the previous frame stays up.

use crate::PlayError;
use crate::cache::{CacheConfig, FrameCache};
use crate::format::{self, FormatPlan};
use crate::gpu_cache::{GpuCache, Handoff, Residency};
use crate::options::{Mode, PlayOptions, Preroll};
use crate::pattern;
use crate::render::{Renderer, read_texture};
use crate::source::{self, Frame, FrameInfo, SampleType, Sequence};
use crate::summary::{Millis, PassStats, PlaySummary, Progress, Saved, SavedTick};
use parking_lot::Mutex;
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{
    CopyLayout, EngineConfig, FrameQueue, FrameQueueConfig, Upload, UploadEngine, UploadError,
    WaitReady,
};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A default engine for playback: transfer workers below the render
/// thread (the decoders run there too, so decoding ahead shares the CPU
/// with the uploads of frames already decoded instead of starving them).
pub fn engine_config(workers: usize) -> EngineConfig {
    EngineConfig {
        workers: workers.max(1),
        priority: stagehand_gpu::upload::Priority::Low,
        ..EngineConfig::default()
    }
}

/// The features the player uses where the adapter has them: 16-bit
/// normalised textures (16-bit sources at full precision) and filtering of
/// 32-bit float textures.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::TEXTURE_FORMAT_16BIT_NORM | wgpu::Features::FLOAT32_FILTERABLE
}

/// Where frames come from, opened and checked.
enum Feed {
    Synthetic(Arc<pattern::Painter>),
    Sequence {
        sequence: Arc<Sequence>,
        cache: Arc<FrameCache>,
    },
}

/// The player's clock: starts after pre-roll; in every-frame mode it
/// stands still while the render loop waits for a frame.
#[derive(Default)]
struct Clock {
    start: OnceLock<Instant>,
    waited_nanos: AtomicU64,
}

impl Clock {
    fn start(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    fn waited(&self) -> Duration {
        Duration::from_nanos(self.waited_nanos.load(Ordering::Relaxed))
    }

    /// Play time now; `None` before the clock starts.
    fn now(&self) -> Option<Duration> {
        let start = *self.start.get()?;
        Some(start.elapsed().saturating_sub(self.waited()))
    }

    fn wait_added(&self, d: Duration) {
        self.waited_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// Pushes remembered by tick: more than the producer can run ahead of the
/// render loop (the frame queue's slots and the GPU tier's hand-off bound it).
const RECENT_PUSHES: usize = 4 * crate::options::MAX_DEPTH + 8;

/// What the producer and decoders count.
#[derive(Default)]
struct Counters {
    latencies: Arc<Mutex<Vec<f64>>>,
    decode_nanos: AtomicU64,
    decoded_bytes: AtomicU64,
    decoded_frames: AtomicU64,
    /// The last ticks pushed, newest last: pushes past the ticks the
    /// render loop ran (it stopped early) are not counted in the summary.
    recent_pushes: Mutex<std::collections::VecDeque<u64>>,
    pushed: AtomicU64,
    /// Ticks the producer left to the GPU tier.
    left_to_tier: AtomicU64,
}

/// Everything one run shares between its threads.
struct Shared {
    queue: Arc<FrameQueue>,
    clock: Clock,
    counters: Counters,
    period: Duration,
    total: u64,
    mode: Mode,
    texture: wgpu::TextureFormat,
    timeline: Option<Arc<stagehand_gpu::diag::Timeline>>,
    /// The GPU tier's shared half, when `--gpu-cache` is on.
    tier: Option<Tier>,
}

/// What the producer and the render loop share of the GPU tier.
struct Tier {
    residency: Arc<Residency>,
    handoff: Handoff,
}

/// Where the picture on screen comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Picture {
    /// A frame-queue slot.
    Slot(usize),
    /// A texture of the GPU tier, by sequence position.
    Tier(usize),
}

impl Shared {
    fn pts(&self, tick: u64) -> Duration {
        self.period.mul_f64(tick as f64)
    }
}

/// Plays and returns what happened; `progress` is called once per render
/// tick, and ends playback early by returning `ControlFlow::Break` (the
/// summary then covers the ticks run). The engine is passed in so its stats can join a report; open the
/// GPU with [`wanted_features`] for 16-bit sources at full precision.
pub fn play(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    mut progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    options.validate()?;
    let opened = open_feed(gpu, options)?;
    if let Some(&tick) = options.save_ticks.iter().find(|&&t| t >= opened.total) {
        return Err(PlayError::InvalidOption(format!(
            "--save-frame {tick}: playback has only {} ticks (0 to {})",
            opened.total,
            opened.total.saturating_sub(1)
        )));
    }
    let period = Duration::from_secs_f64(1.0 / options.fps);
    let config = FrameQueueConfig {
        depth: options.depth,
        staging_buffers: options.staging_buffers,
        frame_duration: period,
        ..FrameQueueConfig::default()
    };
    let desc = texture_desc(opened.size, opened.plan.texture);
    let queue = Arc::new(FrameQueue::new(engine, &desc, config)?);
    // Float sources are scene-linear, whatever texture holds them; integer
    // sources are display-referred and drawn as stored.
    let display = opened
        .plan
        .source
        .sample
        .is_float()
        .then_some(options.display);
    let renderer = Renderer::new(gpu, &queue, opened.size, options.output_size, display)?;
    let gpu_cache = match (&opened.feed, options.gpu_cache_bytes) {
        (Feed::Sequence { sequence, .. }, Some(budget)) if budget > 0 => {
            Some(GpuCache::new(gpu, &desc, budget, sequence.len())?)
        }
        _ => None,
    };
    let tier = gpu_cache.as_ref().map(|c| Tier {
        residency: Arc::clone(c.residency()),
        handoff: Handoff::new(options.depth),
    });
    let shared = Arc::new(Shared {
        queue,
        clock: Clock::default(),
        counters: Counters::default(),
        period,
        total: opened.total,
        mode: options.mode,
        texture: opened.plan.texture,
        timeline: options.timeline.clone(),
        tier,
    });
    let decoders = match &opened.feed {
        Feed::Sequence { sequence, cache } => spawn_decoders(
            sequence,
            cache,
            opened.plan.source,
            options.threads,
            &shared,
        )?,
        Feed::Synthetic(_) => Vec::new(),
    };
    let mut run = Run {
        shared: Arc::clone(&shared),
        feed: &opened.feed,
        producer: None,
        decoders,
        blocked: Vec::new(),
        render: Vec::new(),
        saved: Vec::new(),
        passes: Vec::new(),
        gpu_cache,
        screen: None,
        gaps: 0,
        tier_leftover: 0,
    };
    let result = run.play(gpu, engine, &renderer, options, &mut progress);
    let frames_run = run.stop();
    let (ticks, preroll, prerolled, first_second_peak) = result?;
    let frames = frames_run?;
    let c = &shared.counters;
    let seconds = shared
        .clock
        .start
        .get()
        .map_or(0.0, |s| s.elapsed().as_secs_f64());
    let frame_bytes = u64::from(opened.size.0)
        * u64::from(opened.size.1)
        * format::texel_bytes(opened.plan.texture) as u64;
    let decoded = c.decode_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let peak_now = engine.staging_pool().stats().peak_held;
    // What the render loop ran: pushes (and ticks left to the GPU tier)
    // past its last tick do not count, and neither do frames they made.
    let gaps = run.gaps;
    let frames_in_range = ticks.saturating_sub(gaps);
    let beyond = c
        .recent_pushes
        .lock()
        .iter()
        .filter(|&&k| k >= ticks)
        .count() as u64;
    let pushed = c.pushed.load(Ordering::Relaxed) - beyond;
    let mut frames = frames;
    frames.pushed = frames.pushed.saturating_sub(beyond);
    frames.dropped = frames.dropped.saturating_sub(beyond);
    let left_to_tier = c
        .left_to_tier
        .load(Ordering::Relaxed)
        .saturating_sub(run.tier_leftover);
    let source_numbers = |k: u64| match &opened.feed {
        Feed::Sequence { sequence, .. } => {
            let pos = (k % sequence.len() as u64) as usize;
            sequence.entries[pos].number.unwrap_or(pos as i64)
        }
        Feed::Synthetic(_) => k as i64,
    };
    Ok(PlaySummary {
        adapter: format!("{} ({:?})", gpu.info().name, gpu.info().backend),
        source: options
            .source
            .as_ref()
            .map_or_else(|| "synthetic".into(), |p| p.display().to_string()),
        size: opened.size,
        output_size: options.output_size,
        fps: options.fps,
        mode: options.mode,
        format: opened.plan.clone(),
        display,
        preroll,
        prerolled_frames: prerolled,
        frames_in_range,
        frames,
        never_pushed: frames_in_range.saturating_sub(pushed + left_to_tier),
        gaps,
        passes: std::mem::take(&mut run.passes),
        ticks,
        seconds,
        achieved_fps: if seconds > 0.0 {
            frames.shown as f64 / seconds
        } else {
            0.0
        },
        waited: shared.clock.waited().as_secs_f64(),
        upload_latency: Millis::of(c.latencies.lock().clone()),
        blocked: Millis::of(std::mem::take(&mut run.blocked)),
        render: Millis::of(std::mem::take(&mut run.render)),
        decode_bandwidth: if decoded > 0.0 {
            c.decoded_bytes.load(Ordering::Relaxed) as f64 / decoded
        } else {
            0.0
        },
        decode_fps_per_thread: if decoded > 0.0 {
            c.decoded_frames.load(Ordering::Relaxed) as f64 / decoded
        } else {
            0.0
        },
        upload_bandwidth: if seconds > 0.0 {
            (frames.pushed * frame_bytes) as f64 / seconds
        } else {
            0.0
        },
        gpu_cache: run.gpu_cache.as_ref().map(GpuCache::stats),
        cache: match &opened.feed {
            Feed::Sequence { cache, .. } => Some(cache.stats()),
            Feed::Synthetic(_) => None,
        },
        peak_staging: peak_now.max(first_second_peak.unwrap_or(0)),
        peak_textures: gpu
            .tracker()
            .stats(stagehand_gpu::ObjectKind::Texture)
            .peak_bytes,
        peak_staging_after_warmup: if first_second_peak.is_some() {
            peak_now
        } else {
            0
        },
        saved_frames: run
            .saved
            .iter()
            .map(|s| SavedTick {
                tick: s.tick,
                frame: s.frame.map(source_numbers),
            })
            .collect(),
        saved: std::mem::take(&mut run.saved),
    })
}

/// A feed, opened: its frames' size and format, and how many ticks to run.
struct Opened {
    feed: Feed,
    size: (u32, u32),
    plan: FormatPlan,
    total: u64,
}

/// Opens the sequence (reading every frame's header, so a frame of
/// another size or type is an error before anything plays) or the
/// synthetic painter, and chooses the texture format.
fn open_feed(gpu: &Gpu, options: &PlayOptions) -> Result<Opened, PlayError> {
    let has_16bit_norm = gpu
        .device()
        .features()
        .contains(wgpu::Features::TEXTURE_FORMAT_16BIT_NORM);
    let Some(spec) = &options.source else {
        let info = FrameInfo {
            width: options.size.0,
            height: options.size.1,
            channels: 4,
            sample: SampleType::U8,
        };
        let plan = format::choose(info, crate::FormatChoice::Rgba8, has_16bit_norm)?;
        let total = options
            .frames
            .unwrap_or_else(|| (options.fps * 5.0).ceil() as u64);
        return Ok(Opened {
            feed: Feed::Synthetic(Arc::new(pattern::Painter::new(
                options.size.0,
                options.size.1,
            ))),
            size: options.size,
            plan,
            total,
        });
    };
    let sequence = Sequence::open(spec, options.range)?;
    let first = sequence
        .first_file()
        .ok_or_else(|| PlayError::NoFrames(spec.clone()))?
        .to_owned();
    let first_info = source::probe(&first)?;
    // Every header is read now, so a frame of another size is an error
    // before anything plays. Frames may differ in channels and sample type
    // (a folder of 8- and 16-bit PNGs): the texture is chosen for the most
    // precise of them, so none loses precision to another.
    let mut info = first_info;
    let mut largest = first_info.bytes();
    for path in sequence.entries.iter().filter_map(|e| e.path.as_deref()) {
        let got = source::probe(path)?;
        check_size(path, &first_info, &got)?;
        if got.sample.is_float() != first_info.sample.is_float() {
            return Err(PlayError::Unsupported {
                path: path.to_owned(),
                reason: format!(
                    "it is {} but {} is {}: a sequence is scene-linear or display-referred, not both",
                    kind_of(got.sample),
                    first.display(),
                    kind_of(first_info.sample)
                ),
            });
        }
        if precision(got.sample) > precision(info.sample) {
            info = got;
        }
        largest = largest.max(got.bytes());
    }
    let plan = format::choose(info, options.format, has_16bit_norm)?;
    let len = sequence.len() as u64;
    let total = match options.frames {
        Some(n) if options.looped => n,
        Some(n) => n.min(len),
        None => len,
    };
    let frame_bytes = largest as u64;
    let read_behind = (options.read_behind * options.fps).ceil() as usize;
    let config = CacheConfig {
        budget: options
            .cache_bytes
            .unwrap_or_else(crate::cache::default_budget),
        read_behind,
        looped: options.looped,
        hand_over: options.threads + 1,
    };
    let gaps: HashSet<usize> = sequence
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.path.is_none())
        .map(|(i, _)| i)
        .collect();
    let cache = Arc::new(FrameCache::new(config, sequence.len(), gaps, frame_bytes));
    Ok(Opened {
        feed: Feed::Sequence {
            sequence: Arc::new(sequence),
            cache,
        },
        size: (info.width, info.height),
        plan,
        total,
    })
}

/// A frame must match the sequence's first in size.
fn check_size(path: &Path, expected: &FrameInfo, got: &FrameInfo) -> Result<(), PlayError> {
    if (got.width, got.height) != (expected.width, expected.height) {
        return Err(PlayError::SizeMismatch {
            path: path.to_owned(),
            expected: (expected.width, expected.height),
            got: (got.width, got.height),
        });
    }
    Ok(())
}

fn kind_of(sample: SampleType) -> &'static str {
    if sample.is_float() {
        "scene-linear (float)"
    } else {
        "display-referred (integer)"
    }
}

/// Orders sample types by how much they hold.
fn precision(sample: SampleType) -> u8 {
    match sample {
        SampleType::U8 => 0,
        SampleType::U16 => 1,
        SampleType::F16 => 2,
        SampleType::F32 => 3,
    }
}

fn texture_desc(size: (u32, u32), format: wgpu::TextureFormat) -> wgpu::TextureDescriptor<'static> {
    // COPY_SRC: frames are read back for --save-frame and copied into the
    // GPU tier.
    let usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_SRC;
    crate::render::texture_2d("play frame", size, format, usage)
}

/// Starts `threads` decoders: each claims the most useful position the
/// cache wants, decodes it and hands it in, until the cache closes.
fn spawn_decoders(
    sequence: &Arc<Sequence>,
    cache: &Arc<FrameCache>,
    expected: FrameInfo,
    threads: usize,
    shared: &Arc<Shared>,
) -> Result<Vec<JoinHandle<()>>, PlayError> {
    let mut handles = Vec::with_capacity(threads);
    for id in 0..threads {
        let (sequence, cache2, shared) =
            (Arc::clone(sequence), Arc::clone(cache), Arc::clone(shared));
        let spawned = std::thread::Builder::new()
            .name(format!("decode {id}"))
            .spawn(move || decode_loop(id, &sequence, &cache2, expected, &shared));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                // The decoders already started stop, and let their frames go.
                cache.close();
                for h in handles {
                    let _ = h.join();
                }
                return Err(PlayError::InvalidOption(format!(
                    "cannot start a decode thread: {e}"
                )));
            }
        }
    }
    Ok(handles)
}

/// One decoder: claims the most useful position the cache wants, decodes
/// it and hands it in, until the cache closes. A decoder that panics on a
/// file hands in an error for it, so nobody waits for that frame.
fn decode_loop(
    id: usize,
    sequence: &Sequence,
    cache: &FrameCache,
    expected: FrameInfo,
    shared: &Shared,
) {
    // Decoding ahead must not starve the uploads of frames already
    // decoded: decoders run at the transfer workers' priority, below the
    // render thread (a refusal by the OS leaves them where they are).
    let _ = stagehand_gpu::upload::set_priority(stagehand_gpu::upload::Priority::Low);
    while let Some(pos) = cache.claim() {
        let start = Instant::now();
        let frame = match sequence.entries[pos].path.as_deref() {
            None => Err(PlayError::InvalidOption(format!(
                "position {pos} of the sequence is a gap"
            ))),
            Some(path) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                source::decode(path).and_then(|f| {
                    check_size(path, &expected, &f.info)?;
                    Ok(f)
                })
            }))
            .unwrap_or_else(|_| {
                Err(PlayError::Decode {
                    path: path.to_owned(),
                    reason: "the decoder panicked on this file".into(),
                })
            }),
        };
        let end = Instant::now();
        let c = &shared.counters;
        c.decode_nanos
            .fetch_add((end - start).as_nanos() as u64, Ordering::Relaxed);
        if let Ok(f) = &frame {
            c.decoded_bytes
                .fetch_add(f.info.bytes() as u64, Ordering::Relaxed);
            c.decoded_frames.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(t) = &shared.timeline {
            t.span(format!("decode {id}"), "decode", start, end);
        }
        cache.complete(pos, frame);
    }
}

/// Starts the thread that pushes frames into the queue in tick order.
fn spawn_producer(
    shared: &Arc<Shared>,
    feed: &Feed,
) -> Result<JoinHandle<Result<(), PlayError>>, PlayError> {
    let shared = Arc::clone(shared);
    let feed = match feed {
        Feed::Synthetic(p) => Feed::Synthetic(Arc::clone(p)),
        Feed::Sequence { sequence, cache } => Feed::Sequence {
            sequence: Arc::clone(sequence),
            cache: Arc::clone(cache),
        },
    };
    std::thread::Builder::new()
        .name("play producer".into())
        .spawn(move || produce(&shared, &feed))
        .map_err(|e| PlayError::InvalidOption(format!("cannot start the producer thread: {e}")))
}

fn produce(shared: &Shared, feed: &Feed) -> Result<(), PlayError> {
    let result = (0..shared.total).try_for_each(|k| {
        produce_one(shared, feed, k)?;
        if let Some(tier) = &shared.tier {
            tier.handoff.decided(k + 1);
        }
        Ok(())
    });
    if result.is_err()
        && let Some(tier) = &shared.tier
    {
        // The render loop must not wait for ticks that will never come.
        tier.handoff.close();
    }
    match result {
        // Closed because playback ended: what was not pushed is counted
        // as never pushed.
        Err(PlayError::Upload(UploadError::Released)) => Ok(()),
        other => other,
    }
}

fn produce_one(shared: &Shared, feed: &Feed, k: u64) -> Result<(), PlayError> {
    let pts = shared.pts(k);
    let upload = match feed {
        Feed::Synthetic(painter) => {
            let painter = Arc::clone(painter);
            shared
                .queue
                .push_with(k, pts, move |mut out, layout: &CopyLayout| {
                    painter.paint(k, &mut out, layout.staging_pitch as usize);
                })?
        }
        Feed::Sequence { sequence, cache } => {
            let pos = (k % sequence.len() as u64) as usize;
            if sequence.entries[pos].path.is_none() {
                return Ok(());
            }
            // Realtime: a frame whose time on screen has already passed is
            // not worth decoding or uploading; skip to what is due.
            if shared.mode == Mode::Realtime
                && shared
                    .clock
                    .now()
                    .is_some_and(|now| now > pts + shared.period)
            {
                let next = pos + 1;
                let looped = shared.total > sequence.len() as u64;
                cache.set_playhead(if looped { next % sequence.len() } else { next });
                return Ok(());
            }
            cache.set_playhead(pos);
            if let Some(tier) = &shared.tier
                && tier.residency.contains(pos)
            {
                // On the device already: no decode, no upload.
                if !tier.handoff.leave_to_tier(k) {
                    return Err(PlayError::Upload(UploadError::Released));
                }
                shared.counters.left_to_tier.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            let frame: Arc<Frame> = match cache.fetch(pos) {
                Ok(Ok(frame)) => frame,
                Ok(Err(e)) => return Err(PlayError::Frame(e)),
                Err(_) => return Err(PlayError::Upload(UploadError::Released)),
            };
            let texture = shared.texture;
            shared
                .queue
                .push_with(k, pts, move |mut out, layout: &CopyLayout| {
                    format::fill_staging(&frame, texture, &mut out, layout.staging_pitch as usize);
                })?
        }
    };
    shared.counters.pushed.fetch_add(1, Ordering::Relaxed);
    let mut recent = shared.counters.recent_pushes.lock();
    recent.push_back(k);
    if recent.len() > RECENT_PUSHES {
        recent.pop_front();
    }
    drop(recent);
    record_latency(upload, shared);
    Ok(())
}

fn record_latency(upload: Upload, shared: &Shared) {
    let latencies = Arc::clone(&shared.counters.latencies);
    upload.on_complete(move |o| {
        if let Some(l) = o.times.latency() {
            latencies.lock().push(l.as_secs_f64() * 1e3);
        }
    });
}

/// The render loop's state and measurements.
struct Run<'a> {
    shared: Arc<Shared>,
    feed: &'a Feed,
    producer: Option<JoinHandle<Result<(), PlayError>>>,
    decoders: Vec<JoinHandle<()>>,
    blocked: Vec<f64>,
    render: Vec<f64>,
    saved: Vec<Saved>,
    passes: Vec<PassStats>,
    gpu_cache: Option<GpuCache>,
    /// The tick of the frame on screen and where it comes from.
    screen: Option<(u64, Picture)>,
    /// Ticks run that fell on a gap.
    gaps: u64,
    /// Ticks left to the GPU tier past the last tick run.
    tier_leftover: u64,
}

/// Ticks run, pre-roll seconds, frames pre-rolled, and the staging peak
/// of the first second.
type Played = (u64, f64, u64, Option<u64>);

impl Drop for Run<'_> {
    /// A run left early (an error, or a panic in the progress callback)
    /// still stops its threads and lets its frames go.
    fn drop(&mut self) {
        if self.producer.is_some() || !self.decoders.is_empty() {
            let _ = self.stop();
        }
    }
}

impl Run<'_> {
    fn play(
        &mut self,
        gpu: &Gpu,
        engine: &UploadEngine,
        renderer: &Renderer,
        options: &PlayOptions,
        progress: &mut impl FnMut(Progress) -> ControlFlow<()>,
    ) -> Result<Played, PlayError> {
        let preroll_started = Instant::now();
        let prerolled = self.preroll(options)?;
        let preroll = preroll_started.elapsed().as_secs_f64();
        let shared = Arc::clone(&self.shared);
        let start = shared.clock.start();
        gpu.tracker().reset_peaks();
        let mut first_second_peak = None;
        let mut last_frame_tick = None;
        let mut ticks = 0;
        let mut pass = PassStats::default();
        let mut shown_before = 0;
        for tick in 0..shared.total {
            ticks = tick + 1;
            self.check_failed()?;
            let due = start + shared.clock.waited() + shared.pts(tick);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if self.is_frame(tick) {
                last_frame_tick = Some(tick);
            }
            let from_tier = self.tier_tick(tick);
            if shared.mode == Mode::EveryFrame
                && !from_tier
                && let Some(want) = last_frame_tick
            {
                self.wait_for(want)?;
            }
            let t = match shared.mode {
                Mode::Realtime => shared.clock.now().unwrap_or_default(),
                Mode::EveryFrame => shared.pts(tick),
            };
            self.tick(gpu, renderer, tick, t, from_tier, options)?;
            self.sample(gpu, engine, &shared);
            pass.frames += u64::from(self.is_frame(tick));
            self.gaps += u64::from(!self.is_frame(tick));
            if self.ends_pass(tick) {
                let shown = self.shown();
                self.close_pass(&mut pass, shown - shown_before);
                shown_before = shown;
            }
            if first_second_peak.is_none() && start.elapsed() > Duration::from_secs(1) {
                // From here on the pool must not grow: measure its peak afresh.
                first_second_peak = Some(engine.staging_pool().stats().peak_held);
                engine.staging_pool().reset_peaks();
            }
            let asked = progress(Progress {
                tick: tick + 1,
                ticks: shared.total,
                frames: shared.queue.stats(),
                bandwidth: engine.stats().bandwidth,
            });
            if asked.is_break() {
                break;
            }
        }
        if pass.frames > 0 {
            let shown = self.shown();
            self.close_pass(&mut pass, shown - shown_before);
        }
        Ok((ticks, preroll, prerolled, first_second_peak))
    }

    /// Frames put on screen so far, from the queue and the GPU tier.
    fn shown(&self) -> u64 {
        self.shared.queue.stats().shown + self.gpu_cache.as_ref().map_or(0, |c| c.stats().shown)
    }

    /// Whether the GPU tier shows tick `tick` (the producer left it to the
    /// tier). In every-frame mode it first waits for the producer's word.
    fn tier_tick(&mut self, tick: u64) -> bool {
        let (Some(tier), Some(cache)) = (&self.shared.tier, &mut self.gpu_cache) else {
            return false;
        };
        if self.shared.mode == Mode::EveryFrame {
            tier.handoff.wait_decided(tick);
        }
        let (mine, passed_over) = tier.handoff.take(tick);
        cache.count_shown(mine, passed_over);
        mine
    }

    /// The position in the sequence of tick `tick`.
    fn position(&self, tick: u64) -> usize {
        match self.feed {
            Feed::Synthetic(_) => 0,
            Feed::Sequence { sequence, .. } => (tick % sequence.len() as u64) as usize,
        }
    }

    /// The picture for tick `tick`: the GPU tier's, or the frame queue's
    /// at time `t`, never one older than the picture on screen. A frame
    /// newly shown from the queue is kept in the GPU tier, if it has room.
    fn pick(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        tick: u64,
        t: Duration,
        from_tier: bool,
    ) -> Result<(), PlayError> {
        if from_tier {
            self.screen = Some((tick, Picture::Tier(self.position(tick))));
            return Ok(());
        }
        let queue = Arc::clone(&self.shared.queue);
        if self.gpu_cache.is_some() {
            // Frames are kept as soon as they land, not when shown, so
            // the producer finds them on the device as early as it can.
            for p in queue.landed() {
                let pos = self.position(p.frame);
                if let Some(cache) = &mut self.gpu_cache {
                    cache.store(gpu, renderer, pos, queue.texture(p.slot))?;
                }
            }
        }
        let Some(p) = queue.present(t) else {
            return Ok(());
        };
        if self.screen.is_none_or(|(f, _)| p.frame > f) {
            self.screen = Some((p.frame, Picture::Slot(p.slot)));
            // It may have landed after the look above.
            let pos = self.position(p.frame);
            if let Some(cache) = &mut self.gpu_cache {
                cache.store(gpu, renderer, pos, queue.texture(p.slot))?;
            }
        }
        Ok(())
    }

    /// The bind group and texture of the picture on screen.
    fn picture<'a>(
        &'a self,
        renderer: &'a Renderer,
    ) -> Option<(&'a wgpu::BindGroup, &'a wgpu::Texture)> {
        match self.screen?.1 {
            Picture::Slot(slot) => Some((renderer.slot(slot)?, self.shared.queue.texture(slot))),
            Picture::Tier(pos) => self.gpu_cache.as_ref()?.get(pos).map(|(t, b)| (b, t)),
        }
    }

    /// Whether tick `tick` is the last of a pass over the sequence.
    fn ends_pass(&self, tick: u64) -> bool {
        match self.feed {
            Feed::Synthetic(_) => false,
            Feed::Sequence { sequence, .. } => (tick + 1).is_multiple_of(sequence.len() as u64),
        }
    }

    fn close_pass(&mut self, pass: &mut PassStats, shown: u64) {
        pass.shown = shown.min(pass.frames);
        pass.missed = pass.frames - pass.shown;
        self.passes.push(std::mem::take(pass));
    }

    /// Whether tick `tick` carries a frame (not a gap).
    fn is_frame(&self, tick: u64) -> bool {
        match self.feed {
            Feed::Synthetic(_) => true,
            Feed::Sequence { sequence, .. } => {
                let pos = (tick % sequence.len() as u64) as usize;
                sequence.entries[pos].path.is_some()
            }
        }
    }

    /// Fills the cache as asked, starts the producer, then waits for the
    /// frame queue's first frames, so start-up costs do not count as late or dropped frames.
    /// Returns the frames the cache held when it ended.
    fn preroll(&mut self, options: &PlayOptions) -> Result<u64, PlayError> {
        let mut held = 0;
        if let (Feed::Sequence { sequence, cache }, Some(p)) = (self.feed, options.preroll) {
            let frames = sequence.len() - sequence.gaps();
            let want = match p {
                Preroll::Frames(n) => n.min(frames),
                Preroll::All => frames,
            }
            .min(cache.capacity());
            // Ends when `want` frames are held, or nothing more will be
            // decoded (a failed decode is held as its error, and the
            // producer reports it when it reaches that frame).
            cache.wait_filled(want, Duration::MAX);
            held = cache.stats().frames;
        }
        // The producer starts once the cache is filled: what it fetches
        // from then on are hits.
        self.producer = Some(spawn_producer(&self.shared, self.feed)?);
        let wanted = options.depth.min(self.shared.total as usize);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.shared.queue.preroll(wanted, Duration::from_millis(20)) < wanted
            && !self.producer_done()
            && Instant::now() < deadline
        {
            self.check_failed()?;
        }
        Ok(held)
    }

    fn producer_done(&self) -> bool {
        self.producer.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops at once when the producer failed (a corrupt frame, a frame of
    /// another size): the error now, not after the clock has run out.
    fn check_failed(&mut self) -> Result<(), PlayError> {
        if self.producer_done()
            && let Some(handle) = self.producer.take()
        {
            handle
                .join()
                .map_err(|_| PlayError::InvalidOption("the producer thread panicked".into()))??;
        }
        Ok(())
    }

    /// Every-frame mode: waits until frame `tick` has landed (or failed),
    /// with the clock standing still meanwhile.
    fn wait_for(&mut self, tick: u64) -> Result<(), PlayError> {
        let started = Instant::now();
        while self
            .shared
            .queue
            .wait_ready(tick, Duration::from_millis(100))
            == WaitReady::TimedOut
        {
            // Wakes every 100 ms to stop at once if the producer failed.
            self.check_failed()?;
        }
        self.shared.clock.wait_added(started.elapsed());
        Ok(())
    }

    fn tick(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        tick: u64,
        t: Duration,
        from_tier: bool,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let t1 = Instant::now();
        self.pick(gpu, renderer, tick, t, from_tier)?;
        let t2 = Instant::now();
        renderer.draw(gpu, self.picture(renderer).map(|(bind, _)| bind))?;
        let t3 = Instant::now();
        self.blocked.push((t2 - t1).as_secs_f64() * 1e3);
        self.render.push((t3 - t2).as_secs_f64() * 1e3);
        if let Some(timeline) = &self.shared.timeline {
            timeline.span("render", "present", t1, t2);
            timeline.span("render", "render pass", t2, t3);
        }
        if options.save_ticks.contains(&tick) {
            let (w, h, rgba) = renderer.read_back(gpu)?;
            let texel = format::texel_bytes(self.shared.texture) as u32;
            let texels = match self.picture(renderer) {
                Some((_, texture)) => read_texture(gpu, texture, texel)?,
                None => Vec::new(),
            };
            self.saved.push(Saved {
                tick,
                frame: self.screen.map(|(f, _)| f),
                size: (w, h),
                rgba,
                texels,
            });
        }
        Ok(())
    }

    fn sample(&self, gpu: &Gpu, engine: &UploadEngine, shared: &Shared) {
        let Some(timeline) = &shared.timeline else {
            return;
        };
        let staging = engine.staging_pool().stats().held as f64;
        let textures = gpu
            .tracker()
            .stats(stagehand_gpu::ObjectKind::Texture)
            .bytes as f64;
        let mut counters = vec![("staging pool", staging), ("textures", textures)];
        if let Feed::Sequence { cache, .. } = self.feed {
            counters.push(("frame cache", cache.stats().bytes as f64));
        }
        timeline.counter("memory", Instant::now(), &counters);
    }

    /// Ends the run: the queue closes (a producer waiting for a slot
    /// stops), the cache closes (decoders stop, its memory goes back),
    /// every thread is joined. Returns the queue's final numbers, or the
    /// producer's error if it failed.
    fn stop(&mut self) -> Result<stagehand_gpu::upload::FrameStats, PlayError> {
        self.shared.queue.close();
        if let Feed::Sequence { cache, .. } = self.feed {
            cache.close();
        }
        if let Some(tier) = &self.shared.tier {
            // Ticks left to the tier that the loop never reached lie past
            // its last tick.
            self.tier_leftover = tier.handoff.close();
        }
        let produced = match self.producer.take() {
            Some(handle) => handle
                .join()
                .map_err(|_| PlayError::InvalidOption("the producer thread panicked".into()))
                .and_then(|r| r),
            None => Ok(()),
        };
        for d in self.decoders.drain(..) {
            let _ = d.join();
        }
        let mut frames = self.shared.queue.finish();
        if let Some(cache) = &self.gpu_cache {
            // Frames the tier showed count as shown; tier ticks the loop
            // passed over (or never reached), as dropped.
            let tier = cache.stats();
            frames.shown += tier.shown;
            frames.dropped += tier.passed_over;
        }
        produced.map(|()| frames)
    }
}
