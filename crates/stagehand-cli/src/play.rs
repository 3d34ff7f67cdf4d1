//! `stagehand play`: parse options, run the player, print its summary and
//! the diagnostics report.

use crate::Failure;
use crate::output;
use clap::Args;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::{
    Display, FormatChoice, Mode, PlayError, PlayOptions, PlaySummary, Preroll, PresentChoice,
    Progress, Screen, Transfer, WindowOptions, parse_bytes, play, play_in,
};
use std::fs::File;
use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of `stagehand play`.
#[derive(Args, Debug)]
pub struct PlayArgs {
    #[command(flatten)]
    gpu: super::GpuArgs,
    /// What to play: a folder of frames, a pattern (shot.####.exr,
    /// shot.%04d.exr) or one image; EXR, PNG, TIFF or JPEG. Frame numbers
    /// come from the names; gaps hold the previous frame. Or a movie
    /// (.mov, .mp4, .mkv, ...; any codec the system's FFmpeg decodes).
    /// Without it, synthetic 4K frames are generated in place.
    source: Option<PathBuf>,
    /// Frames per second, 0.1 to 1000 (default: a movie's own rate, else
    /// 24).
    // Negative numbers are taken as values, so `--fps -5` is refused as
    // out of range rather than as an unknown argument.
    #[arg(long, allow_negative_numbers = true)]
    fps: Option<f64>,
    /// A sound file to play beside the pictures (WAV, FLAC, or anything
    /// FFmpeg decodes); a movie plays its own sound without it. In
    /// realtime mode the sound's clock decides which frame is shown.
    #[arg(long)]
    audio: Option<PathBuf>,
    /// Milliseconds to move the sound later against the pictures
    /// (negative: earlier), -60000 to 60000.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    audio_offset: f64,
    /// Play no sound; the sound's clock still keeps the pictures in time.
    #[arg(long)]
    mute: bool,
    /// Where sound goes: auto (the default device, else a null sink that
    /// consumes it in real time) or null.
    #[arg(long, default_value = "auto")]
    audio_out: stagehand_play::audio::AudioOut,
    /// Frame numbers to play, FIRST-LAST (inclusive).
    #[arg(long, value_parser = parse_range)]
    range: Option<(i64, i64)>,
    /// Size of synthetic frames, WIDTHxHEIGHT (a sequence keeps its own).
    #[arg(long, default_value = "3840x2160", value_parser = |s: &str| crate::parse_size(s, 16_384))]
    size: (u32, u32),
    /// Size of the render target, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = |s: &str| crate::parse_size(s, 16_384))]
    output_size: (u32, u32),
    /// Seconds to play (default: 5 for synthetic frames; a sequence plays once).
    #[arg(long, conflicts_with = "frames", allow_negative_numbers = true)]
    seconds: Option<f64>,
    /// Frames to play, 1 to 10000000.
    #[arg(long)]
    frames: Option<u64>,
    /// Decode threads, and transfer workers (1 to 64).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Staging buffers per frame-queue slot (1 to 4).
    #[arg(long, default_value_t = 1)]
    staging_buffers: usize,
    /// Frame-queue slots: textures holding frames on screen, ready or
    /// filling (2 to 16).
    #[arg(long, default_value_t = 3)]
    depth: usize,
    /// Texture format: auto follows the source (8-bit → rgba8, 16-bit →
    /// rgba16, half and float EXR → rgba16f); rgba8, rgba16, rgba16f or
    /// rgba32f force one. Any precision lost is said in the summary.
    #[arg(long, default_value = "auto")]
    format: FormatChoice,
    /// Display transform for scene-linear (float) sources: srgb, rec709 or linear.
    #[arg(long, default_value = "srgb")]
    display: Transfer,
    /// Exposure in stops for scene-linear sources (-32 to 32).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    exposure: f32,
    /// Bytes of decoded frames to keep in RAM (512M, 4G; 0 turns the cache
    /// off). Default: the smaller of 4 GiB and a quarter of RAM.
    #[arg(long, value_parser = parse_bytes)]
    cache: Option<u64>,
    /// Bytes of landed frames to keep on the device as well (512M, 8G):
    /// a loop that fits plays with no upload at all. Default 0 (off).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    gpu_cache: Option<u64>,
    /// Seconds of frames behind the playhead the cache keeps (0 to 60);
    /// without --loop, frames further behind are let go.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    read_behind: f64,
    /// realtime: keep the clock, drop frames that are not ready;
    /// every-frame: never drop, wait for each frame.
    #[arg(long, default_value = "realtime")]
    mode: Mode,
    /// Decode N frames (or all of the range, as far as the cache holds
    /// them) into the cache before the clock starts.
    #[arg(long, value_name = "N|all")]
    preroll: Option<Preroll>,
    /// Play the sequence again from the start until --frames or --seconds are done.
    #[arg(long = "loop")]
    looped: bool,
    /// Read back what the render pass drew at render tick N and write it to a PNG.
    #[arg(long, num_args = 2, value_names = ["N", "OUT.png"])]
    save_frame: Option<Vec<String>>,
    /// Print the summary and the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write a timeline of decode, uploads, render and memory to FILE as a
    /// Chrome trace (opens in Perfetto or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Show playback in a window: auto (the default) opens one where a
    /// display is there; --window (on) insists, failing without a display;
    /// off is --headless. Keys: Space pause, Left/Right step, Home/End,
    /// L loop, Up/Down exposure, F fullscreen, H heads-up display, Q quit;
    /// click or drag on the timeline to seek.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_value = "auto", default_missing_value = "on")]
    window: WindowWhen,
    /// Draw offscreen, with no window (as --window=off).
    #[arg(long, conflicts_with = "window")]
    headless: bool,
    /// Open the window fullscreen.
    #[arg(long)]
    fullscreen: bool,
    /// How the window presents: auto (fifo where the display paces it,
    /// else mailbox or immediate with the player's clock; on a software
    /// adapter and X11, copied to the X server), fifo, mailbox or
    /// immediate (a surface presenting so).
    #[arg(long, default_value = "auto")]
    present_mode: PresentArg,
    /// Start at this frame number (a position from 0 for synthetic frames).
    #[arg(long, value_name = "FRAME", allow_negative_numbers = true)]
    seek: Option<i64>,
    /// Start paused on the first frame (with a window).
    #[arg(long)]
    start_paused: bool,
}

/// When to open a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum WindowWhen {
    Auto,
    On,
    Off,
}

/// `--present-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PresentArg {
    Auto,
    Fifo,
    Mailbox,
    Immediate,
}

impl From<PresentArg> for PresentChoice {
    fn from(p: PresentArg) -> Self {
        match p {
            PresentArg::Auto => Self::Auto,
            PresentArg::Fifo => Self::Fifo,
            PresentArg::Mailbox => Self::Mailbox,
            PresentArg::Immediate => Self::Immediate,
        }
    }
}

/// Parses `FIRST-LAST`, first not after last.
fn parse_range(s: &str) -> Result<(i64, i64), String> {
    // The separator is the first '-' after the first character, so a
    // negative first frame (-5-10) still parses.
    let cut = s
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '-')
        .map(|(i, _)| i)
        .ok_or_else(|| format!("{s:?} is not FIRST-LAST"))?;
    let parse = |v: &str| v.trim().parse::<i64>().map_err(|e| format!("{v:?}: {e}"));
    let range = (parse(&s[..cut])?, parse(&s[cut + 1..])?);
    if range.0 > range.1 {
        return Err(format!("{s:?}: the first frame is after the last"));
    }
    Ok(range)
}

/// A file we will write at the end, opened now so a bad path fails
/// before playback rather than after it.
struct OutFile {
    path: PathBuf,
    file: File,
}

impl OutFile {
    fn create(path: &Path) -> Result<Self, PlayError> {
        let file = File::create(path).map_err(|e| PlayError::Write {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    fn error(&self, e: impl std::fmt::Display) -> PlayError {
        PlayError::Write {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }
}

impl PlayArgs {
    /// The rate asked for, else a movie's own, else 24.
    fn rate(&self) -> f64 {
        self.fps.unwrap_or_else(|| {
            self.source
                .as_deref()
                .and_then(stagehand_play::source::nominal_rate)
                .unwrap_or(24.0)
        })
    }

    /// Frames to play: `--frames`, or `--seconds` at `--fps` rounded up;
    /// a duration that is not positive and finite is refused.
    fn frames(&self, windowed: bool, fps: f64) -> Result<Option<u64>, PlayError> {
        if self.looped && !windowed && self.seconds.is_none() && self.frames.is_none() {
            return Err(PlayError::InvalidOption(
                "--loop needs --seconds or --frames: playback without a window has to end".into(),
            ));
        }
        let Some(s) = self.seconds else {
            return Ok(self.frames);
        };
        let max = stagehand_play::options::MAX_FRAMES as f64 / fps.max(0.1);
        if !(s.is_finite() && s > 0.0 && s <= max) {
            return Err(PlayError::InvalidOption(format!(
                "--seconds {s}: must be above 0 and at most {max:.0} at {} fps",
                fps
            )));
        }
        Ok(Some((s * fps).ceil().max(1.0) as u64))
    }

    /// Synthetic frames play 5 seconds unless told otherwise; the count
    /// is known now, so `--save-frame` past it is refused before playback.
    /// `None` for a sequence, or a rate `validate` refuses.
    fn synthetic_frames(&self, fps: f64) -> Option<u64> {
        let valid = fps.is_finite() && fps > 0.0;
        (self.source.is_none() && valid).then(|| (fps * 5.0).ceil() as u64)
    }

    /// The player's options, checked, and the `--save-frame` tick.
    fn options(&self, windowed: bool) -> Result<(PlayOptions, Option<u64>), PlayError> {
        let save_tick = match &self.save_frame {
            Some(v) => Some(
                v[0].parse::<u64>()
                    .map_err(|e| PlayError::InvalidOption(format!("--save-frame {}: {e}", v[0])))?,
            ),
            None => None,
        };
        // A movie's header is read once for its rate.
        let fps = self.rate();
        let options = PlayOptions {
            remote: None,
            source: self.source.clone(),
            range: self.range,
            fps,
            size: self.size,
            output_size: self.output_size,
            frames: self
                .frames(windowed, fps)?
                .or_else(|| self.synthetic_frames(fps)),
            threads: self.threads,
            staging_buffers: self.staging_buffers,
            depth: self.depth,
            looped: self.looped,
            format: self.format,
            display: Display {
                transfer: self.display,
                exposure: self.exposure,
            },
            cache_bytes: self.cache,
            gpu_cache_bytes: self.gpu_cache,
            read_behind: self.read_behind,
            mode: self.mode,
            preroll: self.preroll,
            save_ticks: save_tick.into_iter().collect(),
            timeline: None,
            seek: self.seek,
            start_paused: self.start_paused,
            present: self.present_mode.into(),
            audio: stagehand_play::audio::AudioOptions {
                file: self.audio.clone(),
                offset_ms: self.audio_offset,
                mute: self.mute,
                out: self.audio_out,
            },
        };
        if self.start_paused && !windowed {
            return Err(PlayError::InvalidOption(
                "--start-paused needs a window: headless, nothing could resume it".into(),
            ));
        }
        options.validate()?;
        if let (Some(tick), Some(frames)) = (save_tick, options.frames)
            && tick >= frames
        {
            return Err(PlayError::InvalidOption(format!(
                "--save-frame {tick}: playback has only {frames} ticks (0 to {})",
                frames - 1
            )));
        }
        Ok((options, save_tick))
    }
}

impl PlayArgs {
    /// Opens the window asked for: `None` headless, or with `auto` where
    /// no display is there (said on standard error when one was named
    /// but would not open).
    fn screen(&self) -> Result<Option<Screen>, PlayError> {
        let when = if self.headless {
            WindowWhen::Off
        } else {
            self.window
        };
        if when == WindowWhen::Off {
            return Ok(None);
        }
        let title = match &self.source {
            Some(p) => format!("stagehand play: {}", p.display()),
            None => "stagehand play: synthetic".into(),
        };
        let options = WindowOptions {
            size: self.output_size,
            fullscreen: self.fullscreen,
            title,
            present: self.present_mode.into(),
        };
        match Screen::open(&options) {
            Ok(screen) => Ok(Some(screen)),
            Err(e) if when == WindowWhen::On => Err(e),
            Err(e) => {
                let named = ["DISPLAY", "WAYLAND_DISPLAY"]
                    .iter()
                    .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()));
                if named {
                    eprintln!("stagehand: playing headless: {e}");
                }
                Ok(None)
            }
        }
    }
}

/// Runs `stagehand play`.
pub fn run(args: &PlayArgs) -> Result<(), Failure> {
    // Everything that can be checked without the GPU is checked first
    // (with a window assumed where one may open, then again once known).
    let may_window = !args.headless && args.window != WindowWhen::Off;
    args.options(may_window)?;
    let mut screen = args.screen()?;
    let (mut options, save_tick) = args.options(screen.is_some())?;
    let save = match (&args.save_frame, save_tick) {
        (Some(v), Some(tick)) => Some((tick, OutFile::create(Path::new(&v[1]))?)),
        _ => None,
    };
    let trace = args.trace.as_deref().map(OutFile::create).transpose()?;
    let display = screen.as_ref().map(Screen::display_handle);
    let gpu = Arc::new(
        args.gpu
            .open_for(stagehand_play::wanted_features(), display)?,
    );
    let timeline = trace
        .as_ref()
        .map(|_| Arc::new(stagehand_gpu::diag::Timeline::new()));
    options.timeline = timeline.clone();
    let config = stagehand_gpu::upload::EngineConfig {
        timeline: timeline.clone(),
        // One transfer worker, whatever the decode threads: see
        // `engine_config`.
        ..stagehand_play::engine_config(1)
    };
    let engine = UploadEngine::new(Arc::clone(&gpu), config).map_err(PlayError::from)?;
    // A window with no end but the user's has no progress to show but its
    // own heads-up display.
    let unbounded = screen.is_some() && options.frames.is_none();
    let mut bar = Bar::new(!args.json && !unbounded);
    let summary = match &mut screen {
        Some(screen) => play_in(&gpu, &engine, &options, screen, |p| bar.update(&p))?,
        None => play(&gpu, &engine, &options, |p| bar.update(&p))?,
    };
    bar.finish();
    if let Some(e) = bar.failed.take() {
        // Standard output went away mid-run: playback stopped at once.
        return Err(e.into());
    }
    if let Some((tick, out)) = save {
        save_png(&summary, tick, out)?;
    }
    if let (Some(out), Some(timeline)) = (trace, &timeline) {
        timeline.write(&out.path).map_err(|e| out.error(e))?;
    }
    // The summary first, then the diagnostics report.
    let mut report = stagehand_gpu::Report::new();
    report.add(&summary).merge(gpu.report());
    report
        .add(&engine.staging_pool().section(false))
        .add(&engine.section());
    if let Some(cache) = &summary.cache {
        report.add(cache);
    }
    if args.json {
        output::println(&report.to_json_string())?;
    } else {
        output::print(&report.to_text())?;
    }
    Ok(())
}

fn save_png(summary: &PlaySummary, tick: u64, out: OutFile) -> Result<(), PlayError> {
    let saved = summary
        .saved
        .iter()
        .find(|s| s.tick == tick)
        .ok_or_else(|| {
            PlayError::InvalidOption(format!(
                "--save-frame {tick}: playback ended after {} ticks",
                summary.ticks
            ))
        })?;
    let image = image::RgbaImage::from_raw(saved.size.0, saved.size.1, saved.rgba.clone())
        .ok_or_else(|| {
            PlayError::InvalidOption("the read-back picture has the wrong size".into())
        })?;
    let mut writer = std::io::BufWriter::new(&out.file);
    image
        .write_to(&mut writer, image::ImageFormat::Png)
        .map_err(|e| out.error(e))
}

/// A progress bar on a terminal; elsewhere a plain line at the first
/// tick, then one a second.
struct Bar {
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    /// When the last plain line was written; `None` before the first.
    /// The first goes out at once, so an output that cannot be written
    /// (a full disk, a closed pipe) stops playback at its first tick.
    last_line: Option<std::time::Instant>,
    /// Standard output could not be written: playback stops.
    failed: Option<output::OutputError>,
}

impl Bar {
    fn new(enabled: bool) -> Self {
        Self {
            bar: None,
            enabled,
            last_line: None,
            failed: None,
        }
    }

    fn update(&mut self, p: &Progress) -> ControlFlow<()> {
        if !self.enabled {
            return ControlFlow::Continue(());
        }
        let message = format!(
            "shown {} dropped {} late {} upload {:.0} MB/s",
            p.frames.shown,
            p.frames.dropped,
            p.frames.late,
            p.bandwidth / 1e6
        );
        if std::io::stdout().is_terminal() {
            let bar = self.bar.get_or_insert_with(|| {
                let bar = indicatif::ProgressBar::new(p.ticks);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} ticks {per_sec} {msg}",
                ) {
                    bar.set_style(style);
                }
                bar
            });
            bar.set_position(p.tick);
            bar.set_message(message);
        } else if self
            .last_line
            .is_none_or(|last| last.elapsed() >= std::time::Duration::from_secs(1))
            || p.tick == p.ticks
        {
            self.last_line = Some(std::time::Instant::now());
            // Nobody is reading (a closed pipe) or nothing can be written
            // (a full disk): stop now rather than play on for nobody.
            if let Err(e) = output::println(&format!("tick {}/{}: {message}", p.tick, p.ticks)) {
                self.failed = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
