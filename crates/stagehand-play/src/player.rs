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
use crate::render::overlay::{Cell, Overlay};
use crate::render::{Display, Renderer, read_texture};
use crate::source::{self, Frame, FrameInfo, SampleType, Sequence};
use crate::summary::{Millis, PassStats, PlaySummary, Progress, Saved, SavedTick};
use crate::transport::{Claim, Command, Route};
use crate::window::{Screen, SurfaceInfo};
use parking_lot::Mutex;
use stagehand_gpu::Gpu;
use stagehand_gpu::diag::human_bytes;
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

/// The player's clock: starts after pre-roll; stands still while paused,
/// and in every-frame mode while the render loop waits for a frame; a seek
/// sets it to the new place's time.
#[derive(Default)]
struct Clock {
    start: OnceLock<Instant>,
    state: Mutex<ClockState>,
}

#[derive(Default)]
struct ClockState {
    /// Wall time since the start less play time, in nanoseconds (negative
    /// once a seek has moved play time ahead of the wall).
    behind: i128,
    /// Since when it stands still.
    paused_at: Option<Instant>,
    /// Time it stood still waiting for frames (every-frame mode).
    waited: Duration,
}

impl Clock {
    fn start(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    fn waited(&self) -> Duration {
        self.state.lock().waited
    }

    /// Play time now; `None` before the clock starts.
    fn now(&self) -> Option<Duration> {
        let start = *self.start.get()?;
        let state = self.state.lock();
        let wall = state.paused_at.unwrap_or_else(Instant::now) - start;
        let t = wall.as_nanos() as i128 - state.behind;
        Some(Duration::from_nanos(t.clamp(0, i128::from(u64::MAX)) as u64))
    }

    /// When play time reaches `t` (if the clock runs).
    fn due(&self, t: Duration) -> Instant {
        let start = self.start();
        let behind = self.state.lock().behind;
        let at = t.as_nanos() as i128 + behind;
        if at >= 0 {
            start + Duration::from_nanos(at.min(i128::from(u64::MAX)) as u64)
        } else {
            start
        }
    }

    /// Every-frame mode: the clock stood still for `d`.
    fn wait_added(&self, d: Duration) {
        let mut state = self.state.lock();
        state.behind += d.as_nanos() as i128;
        state.waited += d;
    }

    fn pause(&self) {
        let mut state = self.state.lock();
        state.paused_at.get_or_insert_with(Instant::now);
    }

    fn resume(&self) {
        let mut state = self.state.lock();
        if let Some(at) = state.paused_at.take() {
            state.behind += at.elapsed().as_nanos() as i128;
        }
    }

    fn paused(&self) -> bool {
        self.state.lock().paused_at.is_some()
    }

    /// Sets play time to `t`, running or not.
    fn set(&self, t: Duration) {
        let start = self.start();
        let mut state = self.state.lock();
        let wall = state.paused_at.unwrap_or_else(Instant::now) - start;
        state.behind = wall.as_nanos() as i128 - t.as_nanos() as i128;
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
    /// Which position each tick shows.
    route: Route,
    /// Ticks the producer pushes at most (headless: the ticks the run
    /// has); `None`: until playback ends (a window, moved around).
    last_tick: Option<u64>,
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

/// Plays into an offscreen target and returns what happened; `progress`
/// is called once per render tick, and ends playback early by returning
/// `ControlFlow::Break` (the summary then covers the ticks run). The
/// engine is passed in so its stats can join a report; open the GPU with
/// [`wanted_features`] for 16-bit sources at full precision.
pub fn play(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    play_to(gpu, engine, options, None, progress)
}

/// Plays into a window, with transport (see [`crate::window::keys`]) and
/// the overlay; otherwise like [`play`]. Open the GPU with the screen's
/// [display handle](Screen::display_handle). Playback ends when the window
/// closes, on Q or Esc, or after `options.frames` ticks; a sequence that
/// does not loop holds its last frame, paused, at the end.
pub fn play_in(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    screen: &mut Screen,
    progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    play_to(gpu, engine, options, Some(screen), progress)
}

fn play_to(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    screen: Option<&mut Screen>,
    mut progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    options.validate()?;
    if options.start_paused && screen.is_none() {
        return Err(PlayError::InvalidOption(
            "--start-paused needs a window: headless, nothing could resume it".into(),
        ));
    }
    let windowed = screen.is_some();
    let opened = open_feed(gpu, options, windowed)?;
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
    let mut output = match screen {
        None => Output::Offscreen,
        Some(screen) => {
            let info = screen.attach(gpu, options.present, options.fps)?;
            screen.set_timeline_len(opened.len);
            let overlay = Overlay::new(gpu, screen.format())?;
            Output::Window(Box::new(Windowed {
                screen,
                overlay,
                hud: true,
                info,
                cells: Vec::new(),
                cells_at: None,
                text_at: None,
                presents: std::collections::VecDeque::new(),
            }))
        }
    };
    let target_format = match &output {
        Output::Offscreen => crate::render::OUTPUT_FORMAT,
        Output::Window(w) => w.screen.format(),
    };
    let output_size = match &output {
        Output::Offscreen => options.output_size,
        Output::Window(w) => w.screen.size(),
    };
    let mut renderer = Renderer::new(
        gpu,
        &queue,
        opened.size,
        (output_size.0.max(1), output_size.1.max(1)),
        target_format,
        display,
    )?;
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
        route: Route::new(opened.len, opened.start, options.looped),
        last_tick: (!windowed).then_some(opened.total),
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
        tier_discarded: 0,
        intervals: Vec::new(),
        last_present: None,
        display,
        ticks_run: 0,
    };
    let result = run.play(
        gpu,
        engine,
        &mut renderer,
        &mut output,
        options,
        &mut progress,
    );
    let frames_run = run.stop();
    let played = result?;
    let (ticks, next_tick) = (played.ticks, played.next_tick);
    let (preroll, prerolled, first_second_peak) =
        (played.preroll, played.prerolled, played.first_second_peak);
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
        .filter(|&&k| k >= next_tick)
        .count() as u64;
    // Frames pushed for places a seek left were never due.
    let pushed = c
        .pushed
        .load(Ordering::Relaxed)
        .saturating_sub(beyond + frames.discarded);
    let mut frames = frames;
    frames.pushed = frames.pushed.saturating_sub(beyond);
    frames.dropped = frames.dropped.saturating_sub(beyond);
    let left_to_tier = c
        .left_to_tier
        .load(Ordering::Relaxed)
        .saturating_sub(run.tier_leftover + run.tier_discarded);
    let source_numbers = |pos: usize| number_at(&opened.feed, pos);
    Ok(PlaySummary {
        adapter: format!("{} ({:?})", gpu.info().name, gpu.info().backend),
        source: options
            .source
            .as_ref()
            .map_or_else(|| "synthetic".into(), |p| p.display().to_string()),
        size: opened.size,
        output_size,
        output: match &output {
            Output::Offscreen => "offscreen".into(),
            Output::Window(w) => format!(
                "window {}x{} ({}, {}: {})",
                w.screen.size().0,
                w.screen.size().1,
                w.info.format,
                w.info.present_mode,
                w.info.reason
            ),
        },
        present_interval: Millis::of(std::mem::take(&mut run.intervals)),
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
                frame: s.position.map(source_numbers),
            })
            .collect(),
        saved: std::mem::take(&mut run.saved),
    })
}

/// The frame number of position `pos`: the sequence's own where names
/// carry one, else the position.
fn number_at(feed: &Feed, pos: usize) -> i64 {
    match feed {
        Feed::Sequence { sequence, .. } => number_of(sequence, pos),
        Feed::Synthetic(_) => pos as i64,
    }
}

/// A feed, opened: its frames' size and format, and how many ticks to run.
struct Opened {
    feed: Feed,
    /// Positions in it.
    len: usize,
    /// The position playback starts at (`--seek`).
    start: usize,
    size: (u32, u32),
    plan: FormatPlan,
    total: u64,
}

/// Opens the sequence (reading every frame's header, so a frame of
/// another size or type is an error before anything plays) or the
/// synthetic painter, and chooses the texture format.
fn open_feed(gpu: &Gpu, options: &PlayOptions, windowed: bool) -> Result<Opened, PlayError> {
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
        let len = options
            .frames
            .unwrap_or_else(|| (options.fps * 5.0).ceil() as u64);
        let start = match options.seek {
            None => 0,
            Some(n) if (0..len as i64).contains(&n) => n as usize,
            Some(n) => {
                return Err(PlayError::InvalidOption(format!(
                    "--seek {n}: synthetic playback has frames 0 to {}",
                    len.saturating_sub(1)
                )));
            }
        };
        return Ok(Opened {
            feed: Feed::Synthetic(Arc::new(pattern::Painter::new(
                options.size.0,
                options.size.1,
            ))),
            len: len as usize,
            start,
            size: options.size,
            plan,
            total: ticks_to_run(options, len, start as u64, windowed),
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
    let start = match options.seek {
        None => 0,
        Some(n) => sequence
            .entries
            .iter()
            .position(|e| e.number.unwrap_or(-1) == n)
            .or_else(|| {
                // Names without numbers: the seek is a position.
                (sequence.entries.iter().all(|e| e.number.is_none())
                    && (0..len as i64).contains(&n))
                .then_some(n as usize)
            })
            .ok_or_else(|| {
                PlayError::InvalidOption(format!(
                    "--seek {n}: the sequence has frames {} to {}",
                    number_of(&sequence, 0),
                    number_of(&sequence, sequence.len().saturating_sub(1))
                ))
            })?,
    };
    let total = ticks_to_run(options, len, start as u64, windowed);
    let sequence = Arc::new(sequence);
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
            sequence: Arc::clone(&sequence),
            cache,
        },
        len: sequence.len(),
        start,
        size: (info.width, info.height),
        plan,
        total,
    })
}

fn number_of(sequence: &Sequence, pos: usize) -> i64 {
    sequence
        .entries
        .get(pos)
        .and_then(|e| e.number)
        .unwrap_or(pos as i64)
}

/// How many ticks a run has: headless, the range from `start` once (or
/// `frames`, looping); in a window, `frames` if given, else until the
/// window closes.
fn ticks_to_run(options: &PlayOptions, len: u64, start: u64, windowed: bool) -> u64 {
    match (options.frames, windowed) {
        (Some(n), true) => n,
        (None, true) => crate::options::MAX_FRAMES,
        (Some(n), false) if options.looped => n,
        (Some(n), false) => n.min(len - start),
        (None, false) => len - start,
    }
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
    let result = (|| {
        loop {
            let (k, pos) = match shared.route.claim() {
                Claim::Tick { tick, pos } => (tick, pos),
                Claim::Closed => return Ok(()),
            };
            if shared.last_tick.is_some_and(|last| k >= last) {
                return Ok(());
            }
            produce_one(shared, feed, k, pos)?;
            if let Some(tier) = &shared.tier {
                tier.handoff.decided(k + 1);
            }
        }
    })();
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

/// Pushes tick `k`, which shows position `pos`.
fn produce_one(shared: &Shared, feed: &Feed, k: u64, pos: usize) -> Result<(), PlayError> {
    let pts = shared.pts(k);
    let upload = match feed {
        Feed::Synthetic(painter) => {
            let painter = Arc::clone(painter);
            shared
                .queue
                .push_with(k, pts, move |mut out, layout: &CopyLayout| {
                    painter.paint(pos as u64, &mut out, layout.staging_pitch as usize);
                })?
        }
        Feed::Sequence { sequence, cache } => {
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
                let next = shared.route.position(k + 1).unwrap_or(pos + 1);
                cache.set_playhead(next);
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

/// Where the render loop draws.
enum Output<'s> {
    /// The renderer's own target, headless.
    Offscreen,
    /// A window, with its overlay.
    Window(Box<Windowed<'s>>),
}

/// A window being played into.
struct Windowed<'s> {
    screen: &'s mut Screen,
    overlay: Overlay,
    /// Whether the heads-up display shows.
    hud: bool,
    info: SurfaceInfo,
    /// The timeline's cells, as last looked up.
    cells: Vec<Cell>,
    cells_at: Option<Instant>,
    text_at: Option<Instant>,
    /// When the last second's new frames were presented, for the achieved
    /// rate on the heads-up display.
    presents: std::collections::VecDeque<Instant>,
}

/// How often the overlay looks at the caches and re-renders its text.
const CELLS_EVERY: Duration = Duration::from_millis(100);
const TEXT_EVERY: Duration = Duration::from_millis(250);
/// How often a paused window redraws (its overlay moves on: the cache
/// fills).
const PAUSED_REDRAW: Duration = Duration::from_millis(100);
/// Longest a seek or a step waits for its frame before showing what it has.
const SEEK_WAIT: Duration = Duration::from_secs(10);

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
    /// Ticks left to the GPU tier for places a seek left.
    tier_discarded: u64,
    /// Milliseconds between successive presents while playing.
    intervals: Vec<f64>,
    /// The last present while playing; `None` after a pause, step or seek.
    last_present: Option<Instant>,
    /// The display transform now (exposure keys change it).
    display: Option<Display>,
    /// Ticks run so far.
    ticks_run: u64,
}

/// What the render loop did.
struct Played {
    /// Ticks run.
    ticks: u64,
    /// The tick after the last one run: pushes from it on were never due.
    next_tick: u64,
    /// Pre-roll seconds.
    preroll: f64,
    /// Frames the cache held when pre-roll ended.
    prerolled: u64,
    /// The staging peak of the first second.
    first_second_peak: Option<u64>,
}

impl Drop for Run<'_> {
    /// A run left early (an error, or a panic in the progress callback)
    /// still stops its threads and lets its frames go.
    fn drop(&mut self) {
        if self.producer.is_some() || !self.decoders.is_empty() {
            let _ = self.stop();
        }
    }
}

/// What the loop does after handling the user's commands.
#[derive(PartialEq, Eq)]
enum Next {
    Go,
    Quit,
}

impl Run<'_> {
    fn play(
        &mut self,
        gpu: &Gpu,
        engine: &UploadEngine,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        options: &PlayOptions,
        progress: &mut impl FnMut(Progress) -> ControlFlow<()>,
    ) -> Result<Played, PlayError> {
        let preroll_started = Instant::now();
        let prerolled = self.preroll(options)?;
        let preroll = preroll_started.elapsed().as_secs_f64();
        let shared = Arc::clone(&self.shared);
        let start = shared.clock.start();
        if options.start_paused {
            shared.clock.pause();
        }
        gpu.tracker().reset_peaks();
        let mut first_second_peak = None;
        let mut last_frame_tick = None;
        let mut tick = 0;
        let mut pass = PassStats::default();
        let mut shown_before = 0;
        if options.start_paused {
            // Show the first frame, then wait for the user.
            self.show_now(gpu, renderer, output, tick, options)?;
            tick += 1;
        }
        while self.ticks_run < shared.total {
            self.check_failed()?;
            let paused = shared.clock.paused();
            let due = shared.clock.due(shared.pts(tick));
            // Wait for the tick's time (or, paused, for the user), handling
            // the window's events meanwhile.
            let commands = match output {
                Output::Offscreen => {
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    Vec::new()
                }
                Output::Window(w) => {
                    let wait = if paused {
                        PAUSED_REDRAW
                    } else {
                        due.saturating_duration_since(Instant::now())
                    };
                    w.screen.pump(wait);
                    if w.screen.closed() {
                        break;
                    }
                    w.screen.take_commands()
                }
            };
            let mut quit = false;
            for command in commands {
                quit |=
                    self.command(gpu, renderer, output, &mut tick, command, options)? == Next::Quit;
            }
            if quit {
                break;
            }
            if shared.clock.paused() {
                self.redraw(gpu, renderer, output)?;
                continue;
            }
            if Instant::now() < shared.clock.due(shared.pts(tick)) {
                // Woken early by the window: not this tick's time yet.
                continue;
            }
            let Some(pos) = shared.route.position(tick) else {
                // The end of a sequence that does not loop: headless, the
                // run is over; a window holds the last frame, paused.
                if matches!(output, Output::Offscreen) {
                    break;
                }
                shared.clock.pause();
                self.last_present = None;
                continue;
            };
            let is_frame = self.is_frame(pos);
            if is_frame {
                last_frame_tick = Some(tick);
            }
            let from_tier = self.tier_tick(tick);
            if shared.mode == Mode::EveryFrame
                && !from_tier
                && let Some(want) = last_frame_tick
            {
                self.wait_for(want, output)?;
            }
            let t = match shared.mode {
                Mode::Realtime => shared.clock.now().unwrap_or_default(),
                Mode::EveryFrame => shared.pts(tick),
            };
            self.tick(gpu, renderer, output, tick, t, from_tier, options, true)?;
            tick += 1;
            self.sample(gpu, engine, &shared);
            pass.frames += u64::from(is_frame);
            self.gaps += u64::from(!is_frame);
            if pos + 1 == shared.route.len() {
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
                tick: self.ticks_run,
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
        Ok(Played {
            ticks: self.ticks_run,
            next_tick: tick,
            preroll,
            prerolled,
            first_second_peak,
        })
    }

    /// Carries out one command; returns whether to go on. A step or a seek
    /// shows its frame at once.
    fn command(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut u64,
        command: Command,
        options: &PlayOptions,
    ) -> Result<Next, PlayError> {
        let shared = Arc::clone(&self.shared);
        let clock = &shared.clock;
        let len = shared.route.len();
        let on_screen = self.screen_position();
        match command {
            Command::Quit => return Ok(Next::Quit),
            Command::TogglePause if clock.paused() => {
                if shared.route.position(*tick).is_none() {
                    // Play again from the start of the range.
                    self.seek(gpu, renderer, output, tick, 0, options)?;
                }
                self.last_present = None;
                clock.resume();
            }
            Command::TogglePause => clock.pause(),
            Command::Step(n) => {
                clock.pause();
                if n > 0 {
                    if shared.route.position(*tick).is_some() {
                        self.show_now(gpu, renderer, output, *tick, options)?;
                        *tick += 1;
                    }
                } else if let Some(pos) = on_screen {
                    let back = (n.unsigned_abs() as usize).min(len);
                    let to = if pos >= back {
                        pos - back
                    } else if shared.route.looped() {
                        len - (back - pos)
                    } else {
                        0
                    };
                    self.seek(gpu, renderer, output, tick, to, options)?;
                }
            }
            Command::First => self.seek(gpu, renderer, output, tick, 0, options)?,
            Command::Last => {
                self.seek(gpu, renderer, output, tick, len.saturating_sub(1), options)?;
            }
            Command::Seek(pos) => {
                self.seek(gpu, renderer, output, tick, pos.min(len - 1), options)?;
            }
            Command::ToggleLoop => shared.route.set_looped(!shared.route.looped()),
            Command::Exposure(stops) => {
                if let Some(display) = &mut self.display {
                    let max = crate::options::MAX_EXPOSURE as f32;
                    display.exposure = (display.exposure + stops).clamp(-max, max);
                    renderer.set_display(gpu, self.display)?;
                }
            }
            Command::ToggleFullscreen => {
                if let Output::Window(w) = output {
                    w.screen.toggle_fullscreen();
                }
            }
            Command::ToggleHud => {
                if let Output::Window(w) = output {
                    w.hud = !w.hud;
                    w.text_at = None;
                }
            }
        }
        Ok(Next::Go)
    }

    /// Moves playback to position `pos`: a new leg of the route from a
    /// tick past everything pushed, the frames pushed for the old place
    /// let go, the clock set to the new tick's time. Shows the frame at
    /// once (waiting for it, with the clock still).
    fn seek(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut u64,
        pos: usize,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        let start = shared.route.seek(*tick, pos);
        shared.queue.discard_before(start);
        if let Some(tier) = &shared.tier {
            self.tier_discarded += tier.handoff.discard_before(start);
        }
        if let Feed::Sequence { cache, .. } = self.feed {
            cache.set_playhead(pos);
        }
        *tick = start + 1;
        self.show_now(gpu, renderer, output, start, options)
    }

    /// Runs tick `tick` now, out of the clock's order (a step or a seek):
    /// the clock is set to its time, and stands still while its frame
    /// comes. Nothing past the end of the route.
    fn show_now(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: u64,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        let Some(pos) = shared.route.position(tick) else {
            return Ok(());
        };
        let was_paused = shared.clock.paused();
        shared.clock.pause();
        shared.clock.set(shared.pts(tick));
        let from_tier = self.tier_tick(tick);
        if !from_tier && self.is_frame(pos) {
            let deadline = Instant::now() + SEEK_WAIT;
            while shared.queue.wait_ready(tick, Duration::from_millis(20)) == WaitReady::TimedOut
                && Instant::now() < deadline
            {
                self.check_failed()?;
                if let Output::Window(w) = output {
                    w.screen.pump(Duration::ZERO);
                    if w.screen.closed() {
                        break;
                    }
                }
            }
        }
        self.last_present = None;
        self.tick(
            gpu,
            renderer,
            output,
            tick,
            shared.pts(tick),
            from_tier,
            options,
            false,
        )?;
        self.gaps += u64::from(!self.is_frame(pos));
        if !was_paused {
            shared.clock.resume();
        }
        Ok(())
    }

    /// The sequence position of the frame on screen.
    fn screen_position(&self) -> Option<usize> {
        let (tick, _) = self.screen?;
        self.shared.route.position(tick)
    }

    /// Draws the frame on screen again (paused: the overlay moves on, the
    /// window may have been resized or the exposure changed).
    fn redraw(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
    ) -> Result<(), PlayError> {
        if let Output::Window(_) = output {
            self.present(gpu, renderer, output, false)?;
        }
        Ok(())
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

    /// The position in the sequence of tick `tick` (0 for a tick the
    /// route no longer knows: it was pushed for a place a seek left).
    fn position(&self, tick: u64) -> usize {
        self.shared.route.position(tick).unwrap_or(0)
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

    fn close_pass(&mut self, pass: &mut PassStats, shown: u64) {
        pass.shown = shown.min(pass.frames);
        pass.missed = pass.frames - pass.shown;
        self.passes.push(std::mem::take(pass));
    }

    /// Whether position `pos` carries a frame (not a gap).
    fn is_frame(&self, pos: usize) -> bool {
        match self.feed {
            Feed::Synthetic(_) => true,
            Feed::Sequence { sequence, .. } => sequence.entries[pos].path.is_some(),
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
    /// with the clock standing still meanwhile (a window's events are
    /// still handled: its commands run at the next tick).
    fn wait_for(&mut self, tick: u64, output: &mut Output<'_>) -> Result<(), PlayError> {
        let started = Instant::now();
        let slice = match output {
            Output::Offscreen => Duration::from_millis(100),
            Output::Window(_) => Duration::from_millis(20),
        };
        while self.shared.queue.wait_ready(tick, slice) == WaitReady::TimedOut {
            // Wakes now and then to stop at once if the producer failed.
            self.check_failed()?;
            if let Output::Window(w) = output {
                w.screen.pump(Duration::ZERO);
                if w.screen.closed() {
                    break;
                }
            }
        }
        self.shared.clock.wait_added(started.elapsed());
        Ok(())
    }

    /// Runs tick `tick`: picks the picture for time `t`, draws it, and
    /// reads it back if this is a tick to save. `playing`: the tick follows
    /// the one before at the clock's pace (its present interval counts).
    #[allow(clippy::too_many_arguments)]
    fn tick(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: u64,
        t: Duration,
        from_tier: bool,
        options: &PlayOptions,
        playing: bool,
    ) -> Result<(), PlayError> {
        let index = self.ticks_run;
        self.ticks_run += 1;
        let t1 = Instant::now();
        self.pick(gpu, renderer, tick, t, from_tier)?;
        let t2 = Instant::now();
        self.present(gpu, renderer, output, playing)?;
        let t3 = Instant::now();
        self.blocked.push((t2 - t1).as_secs_f64() * 1e3);
        self.render.push((t3 - t2).as_secs_f64() * 1e3);
        if let Some(timeline) = &self.shared.timeline {
            timeline.span("render", "present", t1, t2);
            timeline.span("render", "render pass", t2, t3);
        }
        if options.save_ticks.contains(&index) {
            self.save(gpu, renderer, output, index)?;
        }
        Ok(())
    }

    /// Draws the picture on screen into the output and presents it.
    /// `playing`: counts the interval since the last present.
    fn present(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        playing: bool,
    ) -> Result<(), PlayError> {
        let bind = self.picture(renderer).map(|(bind, _)| bind);
        let presented = match output {
            Output::Offscreen => {
                renderer.draw(gpu, bind)?;
                Some(Instant::now())
            }
            Output::Window(w) => {
                self.update_overlay(gpu, w)?;
                let bind = self.picture(renderer).map(|(bind, _)| bind);
                match w.screen.acquire(gpu) {
                    // Minimised or occluded: nothing drawn, the clock goes on.
                    None => None,
                    Some(frame) => {
                        let view = frame.texture.create_view(&wgpu::TextureViewDescriptor {
                            format: Some(renderer.format()),
                            ..Default::default()
                        });
                        let size = (frame.texture.width(), frame.texture.height());
                        renderer.draw_to(
                            gpu,
                            Some((&view, size)),
                            bind,
                            Some((&w.overlay, w.hud)),
                        )?;
                        gpu.queue().present(frame);
                        let now = Instant::now();
                        if playing {
                            w.presents.push_back(now);
                            while w
                                .presents
                                .front()
                                .is_some_and(|&p| now - p > Duration::from_secs(1))
                            {
                                w.presents.pop_front();
                            }
                        }
                        Some(now)
                    }
                }
            }
        };
        match (playing, presented) {
            (true, Some(now)) => {
                if let Some(last) = self.last_present {
                    self.intervals.push((now - last).as_secs_f64() * 1e3);
                }
                self.last_present = Some(now);
            }
            (true, None) => {}
            (false, _) => self.last_present = None,
        }
        Ok(())
    }

    /// Reads back what tick `index` drew: headless, the target; in a
    /// window, the same draw (overlay and all) into a target of the
    /// window's size.
    fn save(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        index: u64,
    ) -> Result<(), PlayError> {
        if let Output::Window(w) = output {
            let size = w.screen.size();
            renderer.set_output_size(gpu, (size.0.max(1), size.1.max(1)))?;
            let bind = self.picture(renderer).map(|(bind, _)| bind);
            renderer.draw_to(gpu, None, bind, Some((&w.overlay, w.hud)))?;
        }
        let (w, h, rgba) = renderer.read_back(gpu)?;
        let texel = format::texel_bytes(self.shared.texture) as u32;
        let texels = match self.picture(renderer) {
            Some((_, texture)) => read_texture(gpu, texture, texel)?,
            None => Vec::new(),
        };
        self.saved.push(Saved {
            tick: index,
            frame: self.screen.map(|(f, _)| f),
            position: self.screen_position(),
            size: (w, h),
            rgba,
            texels,
        });
        Ok(())
    }

    /// Brings the overlay up to date: the timeline's cells (now and then),
    /// the playhead, and the heads-up display's text.
    fn update_overlay(&self, gpu: &Gpu, w: &mut Windowed<'_>) -> Result<(), PlayError> {
        let now = Instant::now();
        let len = self.shared.route.len();
        if w.cells_at.is_none_or(|at| now - at >= CELLS_EVERY) {
            w.cells_at = Some(now);
            w.cells.clear();
            w.cells.resize(len, Cell::Empty);
            if let Feed::Sequence { sequence, cache } = self.feed {
                cache.held_positions(|pos| w.cells[pos] = Cell::Ram);
                for (pos, entry) in sequence.entries.iter().enumerate() {
                    if entry.path.is_none() {
                        w.cells[pos] = Cell::Gap;
                    }
                }
            }
            if let Some(tier) = &self.shared.tier {
                for (pos, cell) in w.cells.iter_mut().enumerate() {
                    if tier.residency.contains(pos) {
                        *cell = Cell::Device;
                    }
                }
            }
        }
        w.overlay
            .set_timeline(gpu, &w.cells, self.screen_position())?;
        if w.hud && w.text_at.is_none_or(|at| now - at >= TEXT_EVERY) {
            w.text_at = Some(now);
            let lines = self.hud_lines(w);
            let scale = if w.screen.size().0 >= 1280 { 2 } else { 1 };
            w.overlay.set_text(gpu, &lines, scale)?;
        }
        Ok(())
    }

    /// The heads-up display's lines.
    fn hud_lines(&self, w: &Windowed<'_>) -> Vec<String> {
        let shared = &self.shared;
        let len = shared.route.len();
        let pos = self.screen_position();
        let fps = self.shared.period.as_secs_f64().recip();
        let stats = shared.queue.stats();
        let state = if shared.clock.paused() {
            "paused"
        } else {
            "playing"
        };
        let looped = if shared.route.looped() {
            "loop on"
        } else {
            "loop off"
        };
        let mut lines = vec![
            match pos {
                Some(p) => format!(
                    "frame {} ({}/{})  {}",
                    number_at(self.feed, p),
                    p + 1,
                    len,
                    timecode(p as u64, fps)
                ),
                None => format!("frame -  (-/{len})"),
            },
            format!(
                "{state}, {looped}  fps {:.2} of {:.2}",
                w.presents.len(),
                fps
            ),
            format!(
                "dropped {}  late {}  failed {}",
                stats.dropped, stats.late, stats.failed
            ),
        ];
        if let Feed::Sequence { cache, .. } = self.feed {
            let c = cache.stats();
            lines.push(format!(
                "cache {} frames, {} of {}",
                c.frames,
                human_bytes(c.bytes),
                human_bytes(c.budget)
            ));
        }
        if let Some(g) = &self.gpu_cache {
            let g = g.stats();
            lines.push(format!(
                "gpu cache {} frames, {}",
                g.frames,
                human_bytes(g.bytes)
            ));
        }
        let latency = {
            let l = shared.counters.latencies.lock();
            let recent = &l[l.len().saturating_sub(48)..];
            Millis::of(recent.to_vec())
        };
        lines.push(format!(
            "upload latency p50 {:.1} ms  p99 {:.1} ms",
            latency.p50, latency.p99
        ));
        if let Some(d) = &self.display {
            lines.push(format!("{:?}, exposure {:+.1}", d.transfer, d.exposure));
        }
        lines
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
        self.shared.route.close();
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

/// `frames` frames at `fps` as hours:minutes:seconds:frames (whole frames
/// per second, rounded: no drop-frame counting).
fn timecode(frames: u64, fps: f64) -> String {
    let per_second = (fps.round() as u64).max(1);
    let (seconds, f) = (frames / per_second, frames % per_second);
    format!(
        "{:02}:{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        f
    )
}

#[cfg(test)]
mod tests {
    use super::timecode;

    #[test]
    fn timecode_counts_whole_frames_per_second() {
        assert_eq!(timecode(0, 24.0), "00:00:00:00");
        assert_eq!(timecode(23, 24.0), "00:00:00:23");
        assert_eq!(timecode(24 * 3661 + 5, 24.0), "01:01:01:05");
        assert_eq!(timecode(30, 29.97), "00:00:01:00");
    }
}
