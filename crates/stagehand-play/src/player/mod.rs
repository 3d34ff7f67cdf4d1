//! The player: a feed of frames (decoded through the frame cache, or
//! generated) pushed into the frame queue by a producer thread, and the
//! render loop that picks the frame due at each tick and draws it.
//!
//! Frames in the queue are numbered by render tick (`k` is due at
//! `k / fps`); the sequence position of tick `k` is `k % len` when
//! looping. Ticks on a gap push nothing, so the previous frame stays up.

mod clock;
mod decode;
mod handle;
mod lead;
mod output;
mod picture;
mod run;
pub mod watch;

use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use crate::cache::gpu::{GpuCache, Handoff, Place, TierTextures};
use crate::cache::{CacheConfig, Closed, FrameCache};
use crate::convert::format::{self, FormatPlan};
use crate::error::Field;
use crate::options::{Mode, PlayOptions};
use crate::render::overlay::Overlay;
use crate::render::{Display, Renderer};
use crate::source::pattern;
use crate::source::{
    self, Frame, FrameInfo, Frames, Gaps, SampleType, Sequence, SequenceFrames, check_size,
};
use crate::summary::{FrameBufferStats, Millis, PlaySummary, Progress, SavedTick};
use crate::transport::{Claim, Route, Tick};
use crate::window::Screen;
use clock::Clock;
pub use handle::Player;
use lead::{Decision, Have, Lead, Moment};
use output::{Output, Windowed};
use parking_lot::Mutex;
pub use picture::PictureReader;
pub(crate) use picture::draw_letterboxed;
use run::Run;
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{
    CopyLayout, EngineConfig, FrameQueue, FrameQueueConfig, InPlace, TextureRegion, Upload,
    UploadEngine, UploadError, UploadStatus,
};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A default engine for playback: transfer workers at the render thread's
/// priority, above the decoders.
///
/// Not below it: a worker submits to the device queue and holds the
/// driver's locks while it does (on GL, the one context every thread
/// shares), so a worker ranked with the decoders left the render thread
/// waiting on a lock held by a thread that was not running. Measured on
/// llvmpipe, a 4K H.264 movie in a 1920x1080 window: 1-17 of 96 frames
/// dropped with the workers low, none with them at normal priority; on
/// lavapipe, 8-bit PNG headless first passes of 39-48 of 48 became 48.
/// Frames already decoded go up before decoding runs further ahead.
///
/// One worker is what a player wants (the CLI's `play` asks for one):
/// the device takes one submit at a time, so a second worker adds no
/// copies, only a thread beside the render thread. Measured on lavapipe,
/// an EXR half ZIP `Preroll::All` pass: 25-41 of 48 shown in four of six
/// runs with two workers at normal priority, 48 in every run with one.
pub fn engine_config(workers: usize) -> EngineConfig {
    EngineConfig {
        workers: workers.max(1),
        priority: stagehand_gpu::upload::ThreadPriority::Normal,
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
    /// Decoded frames of an image sequence or a movie, through the cache.
    Frames {
        frames: Arc<dyn Frames>,
        cache: Arc<FrameCache>,
    },
}

/// Pushes remembered by tick: more than the producer can run ahead of the
/// render loop (the frame queue's slots and the GPU tier's hand-off bound it).
const RECENT_PUSHES: usize = 4 * crate::options::MAX_DEPTH + 8;

/// Upload latencies recorded for the heads-up display.
const RECENT_LATENCIES: usize = 48;

/// Milliseconds from each upload's start to its landing: all of them for
/// the summary (sampled past [`crate::samples::KEPT`]), the last
/// [`RECENT_LATENCIES`] for the heads-up display.
#[derive(Default)]
struct Latencies {
    all: crate::samples::Timings,
    recent: std::collections::VecDeque<f64>,
}

impl Latencies {
    fn push(&mut self, ms: f64) {
        self.all.push(ms);
        if self.recent.len() == RECENT_LATENCIES {
            self.recent.pop_front();
        }
        self.recent.push_back(ms);
    }
}

/// What the producer and decoders count.
#[derive(Default)]
struct Counters {
    latencies: Arc<Mutex<Latencies>>,
    decode_nanos: AtomicU64,
    decoded_bytes: AtomicU64,
    decoded_frames: AtomicU64,
    /// The last ticks pushed, newest last: pushes past the ticks the
    /// render loop ran (it stopped early) are not counted in the summary.
    recent_pushes: Mutex<std::collections::VecDeque<Tick>>,
    pushed: AtomicU64,
    /// Ticks the producer left to the GPU tier.
    left_to_tier: AtomicU64,
    /// Ticks whose frame was uploaded (to the frame queue or the GPU
    /// tier) that the render loop has not yet passed.
    uploaded: Mutex<std::collections::BTreeSet<Tick>>,
    /// The last ticks the producer skipped as late (realtime), newest last.
    skipped: Mutex<std::collections::VecDeque<Tick>>,
    /// How long before its time the producer must start on a frame.
    lead: Lead,
    /// Frames pushed for the GPU to copy from where they were decoded.
    in_place: AtomicU64,
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
    /// The GPU tier's shared half, when `gpu_cache_bytes` is on.
    tier: Option<Tier>,
    /// The host memory decoded frames are written into, recycled.
    buffers: Arc<FrameBuffers>,
}

/// What the producer and the render loop share of the GPU tier.
struct Tier {
    textures: Arc<TierTextures>,
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
    fn pts(&self, tick: Tick) -> Duration {
        self.period.mul_f64(tick.get() as f64)
    }

    /// Keeps the sound with position `pos`, on screen `late` seconds
    /// after its time (see `Audio::follow`).
    fn follow_sound(&self, pos: usize, late: f64) {
        #[cfg(feature = "video")]
        if let Some(audio) = self.clock.sound() {
            audio.follow(pos, late);
        }
        let _ = (pos, late);
    }

    /// Whether sound keeps play time.
    fn has_audio_clock(&self) -> bool {
        self.clock.sound_keeps_time()
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
    play_to(gpu, engine, options, None, None, progress)
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
    play_to(gpu, engine, options, Some(screen), None, progress)
}

/// Plays offscreen like [`play`], telling `watch` (a [`Player`]'s) the
/// state of playback, its events and the picture's texture as it goes.
fn play_watched(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    watch: &watch::Watch,
    progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    play_to(gpu, engine, options, None, Some(watch), progress)
}

/// Plays, and tells `watch` (if any) how it ended.
fn play_to(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    screen: Option<&mut Screen>,
    watch: Option<&watch::Watch>,
    progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    let result = play_to_end(gpu, engine, options, screen, watch, progress);
    if let (Err(e), Some(watch)) = (&result, watch) {
        watch.failed(e.to_string());
    }
    result
}

fn play_to_end(
    gpu: &Arc<Gpu>,
    engine: &UploadEngine,
    options: &PlayOptions,
    screen: Option<&mut Screen>,
    watch: Option<&watch::Watch>,
    mut progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<PlaySummary, PlayError> {
    let held = check_run(options, screen.is_some())?;
    let opened = open_feed(gpu, options, held)?;
    check_save_ticks(options, &opened)?;
    let period = Duration::from_secs_f64(1.0 / options.fps);
    let desc = texture_desc(opened.plan.source.texture_size(), opened.plan.texture);
    let queue = frame_queue(engine, &desc, options, period)?;
    // Float sources are scene-linear, whatever texture holds them; integer
    // sources are display-referred and drawn as stored.
    let display = (opened.plan.source.sample.is_float()).then_some(options.display);
    let mut output = open_output(gpu, screen, options, &opened)?;
    let (mut renderer, output_size) =
        make_renderer(gpu, &queue, &output, options, &opened, display)?;
    let (gpu_cache, tier) = gpu_tier(engine, &desc, options, &opened)?;
    let decoders = match &opened.feed {
        Feed::Frames { frames, .. } => frames.decoders(options.threads),
        Feed::Synthetic(_) => 0,
    };
    let shared = shared_state(gpu, queue, options, &opened, held, decoders, tier);
    let audio = open_audio(options, &opened)?;
    if let Some(a) = &audio {
        a.keep_time(&shared.clock);
    }
    let mut run = start_run(&shared, &opened, decoders, gpu_cache, display)?;
    if let Some(watch) = watch {
        show_to(watch, &renderer, &opened.feed);
        run.watch = Some(watch.clone());
    }
    let result = run.play(
        gpu,
        engine,
        &mut renderer,
        &mut output,
        options,
        &mut progress,
    );
    let frames_run = run.stop();
    if let (Ok(_), Some(watch)) = (&result, watch) {
        run.report(watch, true);
    }
    let ended = Ended {
        played: result?,
        frames: frames_run?,
        output,
        output_size,
        display,
    };
    let mut summary = summarize(gpu, engine, options, &opened, &mut run, ended);
    summary.audio = audio.map(|a| a.summary(&mut run, &summary));
    Ok(summary)
}

/// Tells `watch` where the picture is drawn and what the cache holds.
fn show_to(watch: &watch::Watch, renderer: &Renderer, feed: &Feed) {
    watch.set_picture(renderer.output_texture().clone());
    if let Feed::Frames { cache, .. } = feed {
        watch.set_cache(Arc::clone(cache));
    }
}

/// Checks what a run needs before anything opens; whether it holds the
/// last frame of a range that does not loop (a window, or a player
/// someone drives, runs until told to stop).
fn check_run(options: &PlayOptions, windowed: bool) -> Result<bool, PlayError> {
    options.validate()?;
    if options.start_paused && !windowed && options.remote.is_none() {
        return Err(PlayError::BadOption {
            field: Field::StartPaused,
            message: "needs a window: headless, nothing could resume it".into(),
        });
    }
    Ok(windowed || options.remote.is_some())
}

/// Refuses a tick to save that playback never reaches.
fn check_save_ticks(options: &PlayOptions, opened: &Opened) -> Result<(), PlayError> {
    match options.save_ticks.iter().find(|&&t| t >= opened.total) {
        Some(&tick) => Err(PlayError::BadOption {
            field: Field::SaveFrame,
            message: format!(
                "{tick}: playback has only {} ticks (0 to {})",
                opened.total,
                opened.total.saturating_sub(1)
            ),
        }),
        None => Ok(()),
    }
}

/// The frame queue the producer pushes into and the render loop shows.
fn frame_queue(
    engine: &UploadEngine,
    desc: &wgpu::TextureDescriptor<'_>,
    options: &PlayOptions,
    period: Duration,
) -> Result<Arc<FrameQueue>, PlayError> {
    let config = FrameQueueConfig {
        depth: options.depth,
        staging_buffers: options.staging_buffers,
        frame_duration: period,
        ..FrameQueueConfig::default()
    };
    Ok(Arc::new(FrameQueue::new(engine, desc, config)?))
}

/// The renderer for `output`, and the size it draws at.
fn make_renderer(
    gpu: &Arc<Gpu>,
    queue: &Arc<FrameQueue>,
    output: &Output<'_>,
    options: &PlayOptions,
    opened: &Opened,
    display: Option<Display>,
) -> Result<(Renderer, (u32, u32)), PlayError> {
    let (target_format, output_size) = match output {
        Output::Offscreen => (crate::render::OUTPUT_FORMAT, options.output_size),
        Output::Window(w) => (w.screen.format(), w.screen.size()),
    };
    let renderer = Renderer::new(
        gpu,
        queue,
        opened.size,
        (output_size.0.max(1), output_size.1.max(1)),
        target_format,
        display,
        opened.plan.source.yuv,
    )?;
    Ok((renderer, output_size))
}

/// The GPU tier (`gpu_cache_bytes`), where asked for and the source has frames
/// to keep: what the render loop reads, and what the producer fills.
fn gpu_tier(
    engine: &UploadEngine,
    desc: &wgpu::TextureDescriptor<'static>,
    options: &PlayOptions,
    opened: &Opened,
) -> Result<(Option<GpuCache>, Option<Tier>), PlayError> {
    let textures = match (&opened.feed, options.gpu_cache_bytes) {
        (Feed::Frames { frames, .. }, Some(budget)) if budget > 0 => {
            Some(TierTextures::new(engine, desc, budget, frames.len())?)
        }
        _ => None,
    };
    let cache = textures.as_ref().map(GpuCache::new);
    let tier = textures.map(|textures| Tier {
        textures,
        handoff: Handoff::new(options.depth),
    });
    Ok((cache, tier))
}

/// What the render loop, the producer and the decoders share.
fn shared_state(
    gpu: &Arc<Gpu>,
    queue: Arc<FrameQueue>,
    options: &PlayOptions,
    opened: &Opened,
    held: bool,
    decoders: usize,
    tier: Option<Tier>,
) -> Arc<Shared> {
    let period = Duration::from_secs_f64(1.0 / options.fps);
    Arc::new(Shared {
        queue,
        route: Route::new(opened.len, opened.start, options.looped),
        last_tick: (!held).then_some(opened.total),
        clock: Clock::default(),
        counters: Counters {
            // Each decoder's first frame starts it, and the first uploads
            // touch memory for the first time (each staging buffer, each
            // of the queue's textures; the same uploads do both): none of
            // them says what the frames after them take.
            lead: Lead::new(decoders, options.staging_buffers.max(options.depth)),
            ..Counters::default()
        },
        period,
        total: opened.total,
        mode: options.mode,
        texture: opened.plan.texture,
        timeline: options.timeline.clone(),
        tier,
        // Where the GPU imports host memory, a frame decoded into these in
        // its upload's layout goes up from where it lies.
        buffers: FrameBuffers::importing(Arc::clone(gpu)),
    })
}

/// Starts the decoders and makes the render loop's state.
fn start_run<'f>(
    shared: &Arc<Shared>,
    opened: &'f Opened,
    decoders: usize,
    gpu_cache: Option<GpuCache>,
    display: Option<Display>,
) -> Result<Run<'f>, PlayError> {
    let decoder_threads = match &opened.feed {
        Feed::Frames { frames, cache } => decode::spawn_decoders(frames, cache, decoders, shared)?,
        Feed::Synthetic(_) => Vec::new(),
    };
    Ok(Run::new(
        Arc::clone(shared),
        &opened.feed,
        decoder_threads,
        gpu_cache,
        display,
    ))
}

/// Sound for a run, prepared (not yet playing: the clock starts it).
struct RunAudio {
    #[cfg(feature = "video")]
    audio: Arc<crate::audio::Audio>,
    /// Whether it plays and keeps the clock (realtime mode).
    played: bool,
    /// Why it does not play, when it does not.
    not_played: Option<String>,
}

impl RunAudio {
    /// Makes the sound keep `clock`, where it plays.
    fn keep_time(&self, clock: &Clock) {
        #[cfg(feature = "video")]
        if self.played {
            clock.follow_sound(Arc::clone(&self.audio));
        }
        #[cfg(not(feature = "video"))]
        let _ = clock;
    }

    fn summary(self, run: &mut Run<'_>, summary: &PlaySummary) -> crate::AudioSummary {
        let measured = run.drift.seen();
        let drift_by_tick = std::mem::take(&mut run.drift).into_kept();
        let mut drift = Millis::of(drift_by_tick.iter().map(|(_, d)| d.abs()).collect());
        drift.max = drift.max.max(run.drift_max);
        #[cfg(feature = "video")]
        let (source, sink, underruns, error) = self.audio.describe();
        #[cfg(not(feature = "video"))]
        let (source, sink, underruns, error) = (String::new(), String::new(), 0, None);
        #[cfg(feature = "video")]
        let (seeks, source_end) = (self.audio.seeks(), self.audio.source_now());
        #[cfg(not(feature = "video"))]
        let (seeks, source_end) = (0, None);
        crate::AudioSummary {
            seeks,
            source_end,
            source,
            sink: self.not_played.unwrap_or(sink),
            played: self.played,
            measured,
            drift,
            drift_by_tick,
            skipped: summary.frames.dropped + summary.never_pushed,
            underruns,
            error,
        }
    }
}

/// The sound a run plays: `AudioOptions::file`, else a movie's own stream;
/// `None` for a source without sound. In every-frame mode it is prepared
/// (so a bad file is still an error) but not played.
#[cfg(feature = "video")]
fn open_audio(options: &PlayOptions, opened: &Opened) -> Result<Option<RunAudio>, PlayError> {
    use crate::audio::{Audio, AudioOut, AudioSource};
    let Some((path, base)) = sound_path(options, opened) else {
        return Ok(None);
    };
    let Some(source) = AudioSource::probe(&path)? else {
        return if options.audio.file.is_some() {
            Err(PlayError::Unsupported {
                path,
                reason: "it has no audio stream".into(),
            })
        } else {
            Ok(None)
        };
    };
    let base = base.unwrap_or(source.start);
    // Position 0 goes with the sound's `base`; the offset moves sound
    // later (its earlier seconds play with each picture).
    let zero = base - options.audio.offset_ms / 1e3;
    let out = if options.audio.mute {
        AudioOut::Null
    } else {
        options.audio.out
    };
    let not_played = why_not_played(options, opened);
    Ok(Some(RunAudio {
        audio: Arc::new(Audio::new(
            source,
            zero,
            1.0 / options.fps,
            opened.start,
            out,
        )),
        played: not_played.is_none(),
        not_played,
    }))
}

/// The file the sound comes from, and the second of its timeline that
/// goes with the first picture: a movie's own start, or (a sound file,
/// `None`) wherever its own timeline starts.
#[cfg(feature = "video")]
fn sound_path(options: &PlayOptions, opened: &Opened) -> Option<(std::path::PathBuf, Option<f64>)> {
    match (&options.audio.file, &opened.movie_start) {
        (Some(file), _) => Some((file.clone(), None)),
        (None, Some(start)) => Some((options.source.clone()?, Some(*start))),
        (None, None) => None,
    }
}

/// Why sound that is there is not played, if it is not: a movie's
/// pictures shown at another rate than its own cannot keep with its sound
/// (which plays at its own speed), and every-frame mode waits for frames.
#[cfg(feature = "video")]
fn why_not_played(options: &PlayOptions, opened: &Opened) -> Option<String> {
    let off_rate = match (options.audio.file.is_none(), opened.movie_rate) {
        (true, Some(rate)) if (rate - options.fps).abs() > rate * 1e-4 => Some(rate),
        _ => None,
    };
    match off_rate {
        Some(rate) => Some(format!(
            "not played: the rate, {} fps, is not the movie's {rate:.3} fps, so pictures and sound would part",
            options.fps
        )),
        None if options.mode != crate::Mode::Realtime => Some(
            "not played: every-frame mode waits for frames, so sound would drift (realtime mode plays it)".into(),
        ),
        None => None,
    }
}

/// Without the `video` feature there is no sound to decode: `AudioOptions::file` is
/// refused, saying why.
#[cfg(not(feature = "video"))]
fn open_audio(options: &PlayOptions, _: &Opened) -> Result<Option<RunAudio>, PlayError> {
    match &options.audio.file {
        Some(file) => Err(PlayError::Unsupported {
            path: file.clone(),
            reason: "sound needs stagehand built with the `video` feature (FFmpeg)".into(),
        }),
        None => Ok(None),
    }
}

/// The output playback draws into: offscreen, or the screen's window with
/// its overlay.
fn open_output<'s>(
    gpu: &Arc<Gpu>,
    screen: Option<&'s mut Screen>,
    options: &PlayOptions,
    opened: &Opened,
) -> Result<Output<'s>, PlayError> {
    let Some(screen) = screen else {
        return Ok(Output::Offscreen);
    };
    let info = screen.attach(gpu, options.present, options.fps)?;
    screen.set_timeline_len(opened.len);
    let overlay = Overlay::new(gpu, screen.format())?;
    Ok(Output::Window(Box::new(Windowed {
        screen,
        overlay,
        hud: true,
        info,
        cells: Vec::new(),
        cells_at: None,
        text_at: None,
        presents: std::collections::VecDeque::new(),
        playhead: None,
        lines: Vec::new(),
        drawn: None,
        dirty: true,
        overlay_pending: false,
        drawn_at: None,
    })))
}

/// How a run ended, for its summary.
struct Ended<'s> {
    played: run::Played,
    frames: stagehand_gpu::upload::FrameStats,
    output: Output<'s>,
    output_size: (u32, u32),
    display: Option<Display>,
}

/// What a finished run did, from its counters.
fn summarize(
    gpu: &Gpu,
    engine: &UploadEngine,
    options: &PlayOptions,
    opened: &Opened,
    run: &mut Run<'_>,
    ended: Ended<'_>,
) -> PlaySummary {
    let shared = Arc::clone(&run.shared);
    let counted = count_frames(run, &ended.played, ended.frames);
    let (played, frames) = (ended.played, counted.frames);
    let rates = Rates::of(&shared, opened, &frames);
    let peak_now = engine.staging_pool().stats().peak_held;
    PlaySummary {
        warnings: opened.warnings.clone(),
        adapter: format!("{} ({:?})", gpu.info().name, gpu.info().backend),
        source: source_name(options),
        size: opened.size,
        output_size: ended.output_size,
        output: output_line(&ended.output),
        present_interval: run.intervals.millis(),
        present_calls: run.present_calls.millis(),
        fps: options.fps,
        mode: options.mode,
        format: opened.plan.clone(),
        display: ended.display,
        preroll: played.preroll,
        prerolled_frames: played.prerolled,
        frames_in_range: counted.in_range,
        frames,
        never_pushed: counted.never_pushed,
        gaps: run.gaps,
        passes: std::mem::take(&mut run.passes),
        ticks: played.ticks,
        seconds: rates.seconds,
        achieved_fps: rates.achieved_fps,
        waited: shared.clock.waited().as_secs_f64(),
        upload_latency: shared.counters.latencies.lock().all.millis(),
        blocked: run.blocked.millis(),
        render: run.render.millis(),
        decode_bandwidth: rates.decode_bandwidth,
        decode_fps_per_thread: rates.decode_fps_per_thread,
        upload_bandwidth: rates.upload_bandwidth,
        gpu_cache: run.gpu_cache.as_ref().map(GpuCache::stats),
        frame_buffers: frame_buffers(&shared, &opened.feed),
        cache: cache_stats(&opened.feed),
        peak_staging: peak_now.max(played.first_second_peak.unwrap_or(0)),
        peak_textures: peak_textures(gpu),
        peak_staging_after_warmup: played.first_second_peak.map_or(0, |_| peak_now),
        saved_frames: saved_ticks(run, &opened.feed),
        saved: std::mem::take(&mut run.saved),
        audio: None,
    }
}

/// What played, for the summary: its path, or synthetic frames.
fn source_name(options: &PlayOptions) -> String {
    options
        .source
        .as_ref()
        .map_or_else(|| "synthetic".into(), |p| p.display().to_string())
}

/// The frame cache's numbers, for a source that has one.
fn cache_stats(feed: &Feed) -> Option<crate::CacheStats> {
    match feed {
        Feed::Frames { cache, .. } => Some(cache.stats()),
        Feed::Synthetic(_) => None,
    }
}

/// The most bytes textures held on the device at once.
fn peak_textures(gpu: &Gpu) -> u64 {
    gpu.tracker()
        .stats(stagehand_gpu::ObjectKind::Texture)
        .peak_bytes
}

/// The ticks saved (`PlayOptions::save_ticks`) and the frame each showed.
fn saved_ticks(run: &Run<'_>, feed: &Feed) -> Vec<SavedTick> {
    run.saved
        .iter()
        .map(|s| SavedTick {
            tick: s.tick,
            frame: s.position.map(|pos| number_at(feed, pos)),
        })
        .collect()
}

/// The frames a run's counters say it pushed, showed and dropped, those
/// in its range, and those never pushed.
struct Counted {
    frames: stagehand_gpu::upload::FrameStats,
    in_range: u64,
    never_pushed: u64,
}

/// What the render loop ran: pushes (and ticks left to the GPU tier) past
/// its last tick do not count, and neither do frames they made; frames
/// pushed for places a seek left were never due.
fn count_frames(
    run: &Run<'_>,
    played: &run::Played,
    mut frames: stagehand_gpu::upload::FrameStats,
) -> Counted {
    let c = &run.shared.counters;
    let in_range = played.ticks.saturating_sub(run.gaps);
    let beyond = c
        .recent_pushes
        .lock()
        .iter()
        .filter(|&&k| k >= played.next_tick)
        .count() as u64;
    let pushed = c
        .pushed
        .load(Ordering::Relaxed)
        .saturating_sub(beyond + frames.discarded);
    frames.pushed = frames.pushed.saturating_sub(beyond);
    frames.dropped = frames.dropped.saturating_sub(beyond);
    let left_to_tier = c
        .left_to_tier
        .load(Ordering::Relaxed)
        .saturating_sub(run.tier_leftover + run.tier_discarded);
    Counted {
        frames,
        in_range,
        never_pushed: in_range.saturating_sub(pushed + left_to_tier),
    }
}

/// How long a run took, and what it achieved a second.
struct Rates {
    seconds: f64,
    achieved_fps: f64,
    decode_bandwidth: f64,
    decode_fps_per_thread: f64,
    upload_bandwidth: f64,
}

impl Rates {
    fn of(shared: &Shared, opened: &Opened, frames: &stagehand_gpu::upload::FrameStats) -> Self {
        let c = &shared.counters;
        let seconds = shared
            .clock
            .started()
            .map_or(0.0, |s| s.elapsed().as_secs_f64());
        let (w, h) = opened.plan.source.texture_size();
        let frame_bytes =
            u64::from(w) * u64::from(h) * format::texel_bytes(opened.plan.texture) as u64;
        let decoded = c.decode_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let per_second = |amount: f64, seconds: f64| {
            if seconds > 0.0 { amount / seconds } else { 0.0 }
        };
        Self {
            seconds,
            achieved_fps: per_second(frames.shown as f64, seconds),
            decode_bandwidth: per_second(c.decoded_bytes.load(Ordering::Relaxed) as f64, decoded),
            decode_fps_per_thread: per_second(
                c.decoded_frames.load(Ordering::Relaxed) as f64,
                decoded,
            ),
            upload_bandwidth: per_second((frames.pushed * frame_bytes) as f64, seconds),
        }
    }
}

/// Where the run drew, for the summary.
fn output_line(output: &Output<'_>) -> String {
    match output {
        Output::Offscreen => "offscreen".into(),
        Output::Window(w) => format!(
            "window {}x{} ({}, {}: {})",
            w.screen.size().0,
            w.screen.size().1,
            w.info.format,
            w.info.present_mode,
            w.info.reason
        ),
    }
}

/// The frame buffers the decoders wrote into, for a source that decodes
/// into them.
fn frame_buffers(shared: &Shared, feed: &Feed) -> Option<FrameBufferStats> {
    match feed {
        Feed::Frames { .. } => {
            let b = shared.buffers.stats();
            (b.misses + b.hits > 0).then_some(FrameBufferStats {
                allocated: b.misses,
                reused: b.hits,
                peak_bytes: b.peak_held,
                copied_in_place: shared.counters.in_place.load(Ordering::Relaxed),
            })
        }
        Feed::Synthetic(_) => None,
    }
}

/// The frame number of position `pos`: the sequence's own where names
/// carry one, else the position.
fn number_at(feed: &Feed, pos: usize) -> i64 {
    match feed {
        Feed::Frames { frames, .. } => frames.number(pos),
        Feed::Synthetic(_) => pos as i64,
    }
}

/// A feed, opened: its frames' size and format, and how many ticks to run.
struct Opened {
    feed: Feed,
    /// Positions in it.
    len: usize,
    /// The position playback starts at (`PlayOptions::seek`).
    start: usize,
    size: (u32, u32),
    plan: FormatPlan,
    total: u64,
    /// What the summary should say before anything else (a damaged
    /// movie).
    warnings: Vec<String>,
    /// For a movie, the seconds of its first frame on its timeline (where
    /// its sound lines up).
    #[cfg_attr(not(feature = "video"), allow(dead_code))]
    movie_start: Option<f64>,
    /// For a movie, its frame rate (its positions are ticks of it).
    #[cfg_attr(not(feature = "video"), allow(dead_code))]
    movie_rate: Option<f64>,
}

/// Opens the sequence (reading every frame's header, so a frame of
/// another size or type is an error before anything plays) or the
/// synthetic painter, and chooses the texture format.
fn open_feed(gpu: &Gpu, options: &PlayOptions, windowed: bool) -> Result<Opened, PlayError> {
    let has_16bit_norm = gpu
        .device()
        .features()
        .contains(wgpu::Features::TEXTURE_FORMAT_16BIT_NORM);
    let max_side = gpu.device().limits().max_texture_dimension_2d;
    match &options.source {
        None => open_synthetic(options, has_16bit_norm, windowed),
        Some(spec) if source::is_movie(spec) => {
            open_movie(spec, options, has_16bit_norm, max_side, windowed)
        }
        Some(spec) => open_sequence(spec, options, has_16bit_norm, max_side, windowed),
    }
}

/// A movie through FFmpeg, indexed and its first frame decoded, with its
/// frame cache.
#[cfg(feature = "video")]
fn open_movie(
    spec: &Path,
    options: &PlayOptions,
    has_16bit_norm: bool,
    max_side: u32,
    windowed: bool,
) -> Result<Opened, PlayError> {
    if options.range.is_some() {
        return Err(PlayError::BadOption {
            field: Field::Range,
            message:
                "is for image sequences; play part of a movie from a seek, for a number of frames"
                    .into(),
        });
    }
    let movie = source::movie::Movie::open_within(spec, max_side)?;
    let info = movie.info();
    let plan = format::choose(info, options.format, has_16bit_norm)?;
    let len = movie.len();
    let start = start_position(options.seek, len, "the movie")?;
    let total = ticks_to_run(options, len as u64, start as u64, windowed);
    let cache = frame_cache(options, len, Gaps::none(), info.bytes());
    let movie_start = Some(movie.start_seconds());
    let movie_rate = Some(movie.rate());
    let warnings = damage_warning(spec, &movie).into_iter().collect();
    Ok(Opened {
        feed: Feed::Frames {
            frames: Arc::new(movie),
            cache,
        },
        len,
        start,
        size: (info.width, info.height),
        plan,
        total,
        warnings,
        movie_start,
        movie_rate,
    })
}

/// What the user should know of a damaged movie: where it is damaged, and
/// how many frames play.
#[cfg(feature = "video")]
fn damage_warning(spec: &Path, movie: &source::movie::Movie) -> Option<String> {
    let frames = movie.frame_count();
    let spec = spec.display();
    movie
        .damage()
        .map(|d| format!("{spec}: damaged: {d}; playing the {frames} frames before it"))
}

/// Without the `video` feature, a movie is refused, saying why.
#[cfg(not(feature = "video"))]
fn open_movie(spec: &Path, _: &PlayOptions, _: bool, _: u32, _: bool) -> Result<Opened, PlayError> {
    Err(PlayError::Unsupported {
        path: spec.to_owned(),
        reason: "movies need stagehand built with the `video` feature (FFmpeg); this build has no movie support".into(),
    })
}

/// The position a seek to frame `n` of `len` frames numbered from 0 starts
/// at (0 without one); a frame past them is refused, naming `what` has.
fn start_position(seek: Option<i64>, len: usize, what: &str) -> Result<usize, PlayError> {
    match seek {
        None => Ok(0),
        Some(n) if (0..len as i64).contains(&n) => Ok(n as usize),
        Some(n) => Err(PlayError::BadOption {
            field: Field::Seek,
            message: format!("{n}: {what} has frames 0 to {}", len.saturating_sub(1)),
        }),
    }
}

/// The frame cache for `len` positions of at most `largest` bytes.
fn frame_cache(options: &PlayOptions, len: usize, gaps: Gaps, largest: usize) -> Arc<FrameCache> {
    let read_behind = (options.read_behind * options.fps).ceil() as usize;
    let config = CacheConfig {
        budget: options
            .cache_bytes
            .unwrap_or_else(crate::cache::default_budget),
        read_behind,
        looped: options.looped,
        hand_over: options.threads + 1,
    };
    Arc::new(FrameCache::new(config, len, gaps, largest as u64))
}

/// The synthetic feed: painted frames of `options.size`.
fn open_synthetic(
    options: &PlayOptions,
    has_16bit_norm: bool,
    windowed: bool,
) -> Result<Opened, PlayError> {
    let info = FrameInfo {
        width: options.size.0,
        height: options.size.1,
        channels: 4,
        sample: SampleType::U8,
        yuv: None,
    };
    let plan = format::choose(info, crate::FormatChoice::Rgba8, has_16bit_norm)?;
    let len = options
        .frames
        .unwrap_or_else(|| (options.fps * 5.0).ceil() as u64);
    let start = start_position(options.seek, len as usize, "synthetic playback")?;
    Ok(Opened {
        feed: Feed::Synthetic(Arc::new(pattern::Painter::new(
            options.size.0,
            options.size.1,
        ))),
        len: len as usize,
        start,
        size: options.size,
        plan,
        total: ticks_to_run(options, len, start as u64, windowed),
        warnings: Vec::new(),
        movie_start: None,
        movie_rate: None,
    })
}

/// An image sequence, every header read, with its frame cache.
fn open_sequence(
    spec: &Path,
    options: &PlayOptions,
    has_16bit_norm: bool,
    max_side: u32,
    windowed: bool,
) -> Result<Opened, PlayError> {
    let sequence = Sequence::open(spec, options.range)?;
    let (mut info, mut largest) = probe_all(spec, &sequence)?;
    // Planes packed taller than the device's textures go up as RGB, which
    // then says the picture is too large for the device, if it is.
    if options.format == crate::FormatChoice::Auto
        && let Some(planes) = jpeg_planes(&sequence, info)?
        && planes.texture_size().0.max(planes.texture_size().1) <= max_side
    {
        (info, largest) = (planes, planes.bytes());
    }
    let plan = format::choose(info, options.format, has_16bit_norm)?;
    let len = sequence.len() as u64;
    let start = match options.seek {
        None => 0,
        Some(n) => seek_position(&sequence, n)?,
    };
    let total = ticks_to_run(options, len, start as u64, windowed);
    let sequence = Arc::new(sequence);
    let frames: Arc<dyn Frames> = Arc::new(SequenceFrames::new(Arc::clone(&sequence), info));
    let cache = frame_cache(
        options,
        sequence.len(),
        sequence.gap_runs().clone(),
        largest,
    );
    Ok(Opened {
        feed: Feed::Frames { frames, cache },
        len: sequence.len(),
        start,
        size: (info.width, info.height),
        plan,
        total,
        warnings: Vec::new(),
        movie_start: None,
        movie_rate: None,
    })
}

/// Reads every frame's header, so a frame of another size is an error
/// before anything plays. Frames may differ in channels and sample type
/// (a folder of 8- and 16-bit PNGs): the answer is the most precise of
/// them, so that the texture chosen loses none of any frame's precision,
/// with the largest frame's bytes.
fn probe_all(spec: &Path, sequence: &Sequence) -> Result<(FrameInfo, usize), PlayError> {
    let first = sequence
        .first_file()
        .ok_or_else(|| PlayError::NoFrames(spec.to_owned()))?
        .to_owned();
    let first_info = source::probe(&first)?;
    let mut info = first_info;
    let mut largest = first_info.bytes();
    for (_, path) in sequence.paths() {
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
    Ok((info, largest))
}

/// The frames of a sequence of JPEGs that all hold Y'CbCr planes of one
/// format (see [`source::jpeg_planes`]): those planes, uploaded as they are
/// and converted in the render pass, in place of RGB the decoder converts
/// and the decode threads expand to RGBA. `None` where any file is another
/// kind, or the planes differ from file to file.
fn jpeg_planes(sequence: &Sequence, rgb: FrameInfo) -> Result<Option<FrameInfo>, PlayError> {
    let mut format = None;
    for (_, path) in sequence.paths() {
        let Some(yuv) = source::jpeg_planes(path)? else {
            return Ok(None);
        };
        if format.is_some_and(|f| f != yuv) {
            return Ok(None);
        }
        format = Some(yuv);
    }
    Ok(format.map(|yuv| FrameInfo {
        width: rgb.width,
        height: rgb.height,
        channels: 1,
        sample: SampleType::U8,
        yuv: Some(yuv),
    }))
}

/// The position of frame number `n` (`PlayOptions::seek`): by the numbers in the
/// names, or, where names carry none, `n` itself.
fn seek_position(sequence: &Sequence, n: i64) -> Result<usize, PlayError> {
    let len = sequence.len();
    let position = match sequence.number_range() {
        Some(_) => sequence.position_of(n),
        None => (0..len as i64).contains(&n).then_some(n as usize),
    };
    position.ok_or_else(|| PlayError::BadOption {
        field: Field::Seek,
        message: format!(
            "{n}: the sequence has frames {} to {}",
            number_of(sequence, 0),
            number_of(sequence, len.saturating_sub(1))
        ),
    })
}

fn number_of(sequence: &Sequence, pos: usize) -> i64 {
    sequence.number(pos).unwrap_or(pos as i64)
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

/// Starts the thread that pushes frames into the queue in tick order.
fn spawn_producer(
    shared: &Arc<Shared>,
    feed: &Feed,
) -> Result<JoinHandle<Result<(), PlayError>>, PlayError> {
    let shared = Arc::clone(shared);
    let feed = match feed {
        Feed::Synthetic(p) => Feed::Synthetic(Arc::clone(p)),
        Feed::Frames { frames, cache } => Feed::Frames {
            frames: Arc::clone(frames),
            cache: Arc::clone(cache),
        },
    };
    std::thread::Builder::new()
        .name("play producer".into())
        .spawn(move || produce(&shared, &feed))
        .map_err(|cause| PlayError::Spawn {
            thread: "producer",
            cause,
        })
}

fn produce(shared: &Shared, feed: &Feed) -> Result<(), PlayError> {
    // However the producer ends short (an error, a panic), the render loop
    // must not wait for ticks that will never come.
    let mut closer = CloseOnFailure(shared.tier.as_ref().map(|t| &t.handoff));
    let result = (|| {
        loop {
            let (k, pos) = match shared.route.claim() {
                Claim::Tick { tick, pos } => (tick, pos),
                Claim::Closed => return Ok(()),
            };
            if shared.last_tick.is_some_and(|last| k.get() >= last) {
                return Ok(());
            }
            produce_one(shared, feed, k, pos)?;
            if let Some(tier) = &shared.tier {
                tier.handoff.decided(k.next());
            }
        }
    })();
    if result.is_ok() {
        closer.0 = None;
    }
    drop(closer);
    match result {
        // Closed because playback ended: what was not pushed is counted
        // as never pushed.
        Err(PlayError::Upload(UploadError::Released)) => Ok(()),
        other => other,
    }
}

/// Pushes tick `k`, which shows position `pos`.
/// Closes the GPU tier's hand-off when dropped, unless disarmed (its
/// field taken) after a producer that ended well.
struct CloseOnFailure<'a>(Option<&'a Handoff>);

impl Drop for CloseOnFailure<'_> {
    fn drop(&mut self) {
        if let Some(handoff) = self.0 {
            handoff.close();
        }
    }
}

fn produce_one(shared: &Shared, feed: &Feed, k: Tick, pos: usize) -> Result<(), PlayError> {
    let pts = shared.pts(k);
    let upload = match feed {
        Feed::Synthetic(painter) => {
            let painter = Arc::clone(painter);
            shared
                .queue
                .push_with(k.get(), pts, move |mut out, layout: &CopyLayout| {
                    painter.paint(pos as u64, &mut out, layout.staging_pitch as usize);
                })?
        }
        Feed::Frames { frames, cache } => {
            let Some(upload) = produce_frame(shared, frames.as_ref(), cache, k, pos)? else {
                return Ok(());
            };
            upload
        }
    };
    shared.counters.pushed.fetch_add(1, Ordering::Relaxed);
    shared.counters.uploaded.lock().insert(k);
    let mut recent = shared.counters.recent_pushes.lock();
    recent.push_back(k);
    if recent.len() > RECENT_PUSHES {
        recent.pop_front();
    }
    drop(recent);
    record_latency(upload, shared);
    Ok(())
}

/// Tick `k` of a decoded source: skipped (realtime, too late), left to
/// the GPU tier (on the device, or uploaded into it now), or pushed into
/// the frame queue; the queue's upload, if pushed.
fn produce_frame(
    shared: &Shared,
    frames: &dyn Frames,
    cache: &Arc<FrameCache>,
    k: Tick,
    pos: usize,
) -> Result<Option<Upload>, PlayError> {
    if frames.is_gap(pos) {
        return Ok(None);
    }
    let place = shared.tier.as_ref().map(|t| t.textures.place(pos));
    let hit = cache.contains(pos);
    // A frame the tier holds (or is uploading) needs neither decode nor
    // upload.
    let have = match (place, hit) {
        (Some(Place::Held), _) => Have::OnDevice,
        (_, true) => Have::Decoded,
        (_, false) if cache.decoded_or_decoding(pos) => Have::Decoding,
        (_, false) => Have::Nothing,
    };
    if too_late(shared, k, have) {
        skip(shared, cache, k, pos);
        return Ok(None);
    }
    cache.set_playhead(pos);
    if have == Have::OnDevice {
        leave_to_tier(shared, k)?;
        return Ok(None);
    }
    let Some(frame) = fetch(shared, cache, k, pos, hit)? else {
        skip(shared, cache, k, pos);
        return Ok(None);
    };
    let texture = shared.texture;
    if !format::is_texels(&frame.info, texture) {
        return Err(PlayError::InvalidOption(format!(
            "frame {} reached the upload as {} {:?} channel(s), not texels of {texture:?}",
            frames.number(pos),
            frame.info.channels,
            frame.info.sample
        )));
    }
    let to_tier = place == Some(Place::Room);
    if !to_tier && let Some(source) = in_place(shared, &frame) {
        shared.counters.in_place.fetch_add(1, Ordering::Relaxed);
        return Ok(Some(shared.queue.push_in_place(
            k.get(),
            shared.pts(k),
            source,
        )?));
    }
    let fill = move |mut out: wgpu::WriteOnly<'_, [u8]>, layout: &CopyLayout| {
        // Texels already (checked above): a copy of each row.
        let copied = format::fill_staging(&frame, texture, &mut out, layout.staging_pitch as usize);
        debug_assert!(copied.is_ok(), "{copied:?}");
    };
    if to_tier && upload_to_tier(shared, cache, k, pos, fill.clone())? {
        return Ok(None);
    }
    Ok(Some(shared.queue.push_with(
        k.get(),
        shared.pts(k),
        fill,
    )?))
}

/// `frame` as the GPU copies it from where it lies, if it can: decoded
/// into a frame buffer the GPU imported, laid out as its upload's staging
/// (rows at the staging pitch: `frame_memory`'s as-uploaded layout). The
/// frame is held until its copy has landed.
fn in_place(shared: &Shared, frame: &Arc<Frame>) -> Option<InPlace> {
    // The layout the queue's uploads lay frames out in: the same for
    // every slot (one texture size).
    let slot = shared.queue.slot(0);
    let layout = slot
        .layout_of(TextureRegion::frame(slot.texture().size()))
        .ok()?;
    let (_, rows) = frame.info.texture_size();
    if layout.rows != u64::from(rows) || layout.row_bytes != frame.info.row_bytes() as u64 {
        return None;
    }
    let start = frame.laid_out_as_staging(usize::try_from(layout.staging_pitch).ok()?)?;
    let (buffer, offset) = shared.buffers.in_place_at(start)?;
    Some(InPlace::new(buffer, offset, Arc::clone(frame)))
}

/// Realtime: whether a frame that is `have` at tick `k` can no longer be
/// on the GPU before its time on screen has passed (so it is not worth
/// decoding, waiting for or uploading: skip to one that can).
fn too_late(shared: &Shared, k: Tick, have: Have) -> bool {
    let moment = Moment {
        now: shared.clock.now(),
        paused: shared.clock.paused(),
        pts: shared.pts(k),
        period: shared.period,
    };
    shared.mode == Mode::Realtime
        && lead::decide(moment, have, shared.counters.lead.estimate()) == Decision::Skip
}

/// Skips tick `k` (position `pos`): the cache's playhead moves on to the
/// next position, and the render loop hears the tick was skipped.
fn skip(shared: &Shared, cache: &FrameCache, k: Tick, pos: usize) {
    let next = shared.route.position(k.next()).unwrap_or(pos + 1);
    cache.set_playhead(next);
    let mut skipped = shared.counters.skipped.lock();
    skipped.push_back(k);
    if skipped.len() > RECENT_PUSHES {
        skipped.pop_front();
    }
}

/// The decoded frame at `pos` for tick `k`, waiting for it while it can
/// still be shown; `None` where the wait gave up. Waiting ends once its
/// upload could no longer land in time and either its time on screen has
/// passed or a later frame is decoded to show instead: within its own
/// period, with nothing newer to show, a frame a little late is better
/// than none.
fn fetch(
    shared: &Shared,
    cache: &FrameCache,
    k: Tick,
    pos: usize,
    hit: bool,
) -> Result<Option<Arc<Frame>>, PlayError> {
    let pts = shared.pts(k);
    let next = shared.route.position(k.next());
    let period_over = || {
        !shared.clock.paused()
            && shared
                .clock
                .now()
                .is_some_and(|now| now > pts + shared.period)
    };
    let asked = Instant::now();
    let fetched = cache.fetch_while(pos, || {
        !(too_late(shared, k, Have::Decoded)
            && (period_over() || next.is_some_and(|n| cache.contains(n))))
    });
    if !hit {
        shared.counters.lead.decoded(asked.elapsed());
    }
    match fetched {
        Ok(Ok(frame)) => Ok(Some(frame)),
        Ok(Err(e)) => Err(PlayError::Frame(e)),
        Err(Closed::GaveUp) => Ok(None),
        Err(Closed::Closed) => Err(PlayError::Upload(UploadError::Released)),
    }
}

/// Uploads the frame at `pos` (written by `fill`) into a texture of the
/// GPU tier's own, where the tier has room, which the render loop shows
/// at tick `k` and keeps for the run; once on the device, the frame needs
/// no copy in RAM. Whether the tier took it.
fn upload_to_tier(
    shared: &Shared,
    cache: &Arc<FrameCache>,
    k: Tick,
    pos: usize,
    fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send + 'static,
) -> Result<bool, PlayError> {
    let Some(tier) = &shared.tier else {
        return Ok(false);
    };
    let Some(claimed) = tier.textures.claim(pos) else {
        return Ok(false);
    };
    let upload = tier.textures.upload(claimed, fill)?;
    let ram = Arc::clone(cache);
    upload.on_complete(move |o| {
        if o.status == UploadStatus::Done {
            ram.moved_to_device(pos);
        }
    });
    shared.counters.uploaded.lock().insert(k);
    record_latency(upload, shared);
    leave_to_tier(shared, k)?;
    Ok(true)
}

/// Tells the render loop that the GPU tier shows tick `k`.
fn leave_to_tier(shared: &Shared, k: Tick) -> Result<(), PlayError> {
    let Some(tier) = &shared.tier else {
        return Ok(());
    };
    if !tier.handoff.leave_to_tier(k) {
        return Err(PlayError::Upload(UploadError::Released));
    }
    shared.counters.left_to_tier.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn record_latency(upload: Upload, shared: &Shared) {
    let latencies = Arc::clone(&shared.counters.latencies);
    let lead = shared.counters.lead.uploads();
    upload.on_complete(move |o| {
        if let Some(l) = o.times.latency() {
            latencies.lock().push(l.as_secs_f64() * 1e3);
            Lead::uploaded(&lead, l);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_producer_that_panics_closes_the_gpu_tiers_hand_off() {
        let handoff = Arc::new(Handoff::new(2));
        let theirs = Arc::clone(&handoff);
        let producer = std::thread::spawn(move || {
            let _closer = CloseOnFailure(Some(&theirs));
            panic!("a bug in the producer");
        });
        assert!(producer.join().is_err());
        // Tick 5 was never decided: the render loop's wait returns at once
        // because the hand-off is closed, not because a deadline passed.
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(handoff.wait_decided(Tick(5), Some(deadline)));
        assert!(Instant::now() < deadline);
    }
}
