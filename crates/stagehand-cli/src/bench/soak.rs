//! `stagehand bench soak`: playback left running, moved around and fed
//! beside, to show that nothing grows.
//!
//! For `--minutes`, in one process on one device: a movie with sound
//! (written by the `ffmpeg` command, its sound on the null sink) loops in a
//! window (headless where there is no display), a numbered PNG sequence
//! loops headless through a RAM cache half its size (so frames are evicted
//! and their buffers recycled all along), and a third thread churns
//! textures through the same upload engine (create, upload, drop). A
//! controller sends both players seeks, steps, pauses and (to the window)
//! resizes from a seeded generator, and samples the process's resident
//! memory, the device tracker's bytes and the staging pool's.
//!
//! It reports each figure's slope after warm-up (the first fifth of the
//! run, at least the movie's first pass and ten seconds) and the sound's drift by tenths of the run,
//! and fails (exit status non-zero) where a figure grows past its bound,
//! an upload is left unresolved or a player ends with an error.

use super::play::display::Screen as XScreen;
use crate::{Failure, output};
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{StagingPolicy, UploadEngine};
use stagehand_play::audio::{AudioOptions, AudioOut};
use stagehand_play::{Command, Mode, PlayOptions, PlaySummary, Remote, engine_config};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Frames per second of both players.
const FPS: f64 = 24.0;
/// Frames of the sequence, and its size.
const SEQUENCE: (u32, u32, u32) = (24, 960, 540);
/// Seconds of the movie.
const MOVIE_SECONDS: u32 = 30;
/// Between two commands to each player.
const COMMAND_EVERY: Duration = Duration::from_millis(1500);
/// Samples over the whole run (at least one a second).
const SAMPLES: u32 = 200;
/// A figure is flat when its slope, over the measured span, moves it by
/// less than this many bytes or this share of its mean, whichever is more.
const FLAT_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
const FLAT_SHARE: f64 = 0.03;

/// What `bench soak` needs from the command line.
pub struct Setup {
    /// How long to run.
    pub minutes: f64,
    /// Where the footage is written (kept for the next run).
    pub dir: PathBuf,
    /// Seeds the commands.
    pub seed: u64,
}

/// One sample of the figures that must stay flat.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    /// Seconds since the players started.
    at: f64,
    resident: f64,
    tracked: f64,
    staging: f64,
    /// Uploads queued or in flight in the engine.
    in_flight: f64,
}

/// Runs the soak and prints its report; `open` opens the device, given
/// the window's display when there is one.
pub fn run(
    setup: &Setup,
    open: impl FnOnce(Option<Arc<dyn wgpu::wgt::WgpuHasDisplayHandle>>) -> stagehand_gpu::Result<Gpu>,
) -> Result<(), Failure> {
    let sequence = numbered_sequence(&setup.dir)?;
    let movie = super::sync::clicking_movie(&setup.dir, MOVIE_SECONDS)?;
    let place = place()?;
    let mut screen = match &place {
        Place::Child => return Ok(()),
        Place::Window(_) => Some(stagehand_play::Screen::open(
            &stagehand_play::WindowOptions {
                size: (960, 540),
                fullscreen: false,
                title: "stagehand soak".into(),
                present: Default::default(),
            },
        )?),
        Place::Headless(_) => None,
    };
    let gpu = Arc::new(open(screen.as_ref().map(|s| s.display_handle()))?);
    let engine = Arc::new(
        UploadEngine::new(Arc::clone(&gpu), engine_config(2))
            .map_err(stagehand_play::PlayError::from)?,
    );
    output::println(&format!(
        "stagehand bench soak: {:.1} min on {} ({:?}), seed {}\nmovie: {} ({MOVIE_SECONDS} s with sound, null sink), looped {}\nsequence: {} ({} frames {}x{}), looped headless, RAM cache half its size\nbeside them: textures created, uploaded and dropped through the same engine\n",
        setup.minutes,
        gpu.info().name,
        gpu.info().backend,
        setup.seed,
        movie.display(),
        match &place {
            Place::Window(d) => format!("in a window (DISPLAY={d})"),
            Place::Headless(why) => format!("headless ({why})"),
            Place::Child => unreachable!("returned above"),
        },
        sequence.display(),
        SEQUENCE.0,
        SEQUENCE.1,
        SEQUENCE.2,
    ))?;
    let span = Duration::from_secs_f64(setup.minutes * 60.0);
    let (movie_remote, sequence_remote) = (Remote::new(), Remote::new());
    let stop = Arc::new(AtomicBool::new(false));
    let churned = Arc::new(Churned::default());
    let started = Instant::now();
    let (samples, seq_summary, churn_result, movie_summary) = std::thread::scope(|s| {
        let seq = {
            let (gpu, engine, remote) = (&gpu, &engine, sequence_remote.clone());
            let options = sequence_options(&sequence, remote);
            s.spawn(move || {
                stagehand_play::play(gpu, engine, &options, |_| ControlFlow::Continue(()))
            })
        };
        let churn = {
            let (engine, stop, churned) = (&engine, &stop, &churned);
            s.spawn(move || churn(engine, stop, churned))
        };
        let controller = {
            let (gpu, engine) = (&gpu, &engine);
            let remotes = (movie_remote.clone(), sequence_remote.clone());
            let (stop, seed) = (&stop, setup.seed);
            s.spawn(move || control(gpu, engine, remotes, span, seed, stop))
        };
        let options = movie_options(&movie, movie_remote.clone(), screen.is_none());
        let movie_summary = match &mut screen {
            Some(screen) => stagehand_play::play_in(&gpu, &engine, &options, screen, |_| {
                ControlFlow::Continue(())
            }),
            None => stagehand_play::play(&gpu, &engine, &options, |_| ControlFlow::Continue(())),
        };
        // However the movie ended, the others end too.
        stop.store(true, Ordering::SeqCst);
        sequence_remote.send(Command::Quit);
        let samples = controller.join().unwrap_or_default();
        let seq_summary = seq.join();
        let churn_result = churn.join();
        (samples, seq_summary, churn_result, movie_summary)
    });
    let ran = started.elapsed();
    let movie_summary = movie_summary?;
    let seq_summary = seq_summary.map_err(|_| "the sequence's player panicked")??;
    churn_result.map_err(|_| "the texture churn panicked")??;
    // Every player has ended and every churned upload was waited for:
    // nothing may still be in the engine.
    let stats = engine.stats();
    let left = stats.queued + stats.active;
    report(&Report {
        ran,
        samples: &samples,
        movie: &movie_summary,
        sequence: &seq_summary,
        churned: &churned,
        left_in_engine: left,
    })
}

/// Where the movie plays.
enum Place {
    /// In a window on this display.
    Window(String),
    /// Headless: why there is no window.
    Headless(String),
    /// Nowhere here: the soak ran again as a child on an Xvfb of the
    /// bench's own, which printed its report.
    Child,
}

/// The display in `DISPLAY`; without one, the soak starts an Xvfb of the
/// bench's own and runs again as a child on it (the window system takes
/// its display from the environment alone).
fn place() -> Result<Place, Failure> {
    if let Ok(d) = std::env::var("DISPLAY")
        && !d.is_empty()
    {
        return Ok(Place::Window(d));
    }
    let x = XScreen::open();
    let Ok(d) = x.display() else {
        return Ok(Place::Headless(x.describe()));
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let status = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("DISPLAY", d)
        .status()
        .map_err(|e| format!("cannot run the soak on {d}: {e}"))?;
    if !status.success() {
        return Err(format!("the soak on the bench's own display ({d}) failed: {status}").into());
    }
    Ok(Place::Child)
}

/// Writes (or finds) the numbered PNG sequence in `dir`.
fn numbered_sequence(dir: &Path) -> Result<PathBuf, Failure> {
    let (frames, w, h) = SEQUENCE;
    let folder = dir.join(format!("soak-seq-{w}x{h}-{frames}"));
    if folder.join(format!("f_{frames:04}.png")).is_file() {
        return Ok(folder);
    }
    std::fs::create_dir_all(&folder)
        .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    let done = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg(format!("testsrc2=size={w}x{h}:rate={FPS}"))
        .args(["-frames:v", &frames.to_string(), "-start_number", "1"])
        .arg(folder.join("f_%04d.png"))
        .output()
        .map_err(|e| {
            format!("bench soak writes its frames with the ffmpeg command, which did not run: {e}")
        })?;
    if !done.status.success() {
        return Err(format!(
            "ffmpeg could not write the frames: {}",
            String::from_utf8_lossy(&done.stderr).trim()
        )
        .into());
    }
    Ok(folder)
}

/// The sequence's player: looped headless until told to quit, through a
/// RAM cache that holds half the frames.
fn sequence_options(sequence: &Path, remote: Remote) -> PlayOptions {
    let (frames, w, h) = SEQUENCE;
    PlayOptions {
        source: Some(sequence.to_owned()),
        fps: FPS,
        mode: Mode::Realtime,
        looped: true,
        frames: Some(stagehand_play::options::MAX_FRAMES),
        output_size: (480, 270),
        cache_bytes: Some(u64::from(w * h * 4) * u64::from(frames / 2)),
        remote: Some(remote),
        ..PlayOptions::default()
    }
}

/// The movie's player: looped with its sound on the null sink, in the
/// window until told to quit (headless, for the run's ticks).
fn movie_options(movie: &Path, remote: Remote, headless: bool) -> PlayOptions {
    PlayOptions {
        source: Some(movie.to_owned()),
        fps: FPS,
        mode: Mode::Realtime,
        looped: true,
        frames: headless.then_some(stagehand_play::options::MAX_FRAMES),
        output_size: (960, 540),
        audio: AudioOptions {
            out: AudioOut::Null,
            ..Default::default()
        },
        remote: Some(remote),
        ..PlayOptions::default()
    }
}

/// Uploads the churn made and saw end.
#[derive(Default)]
struct Churned {
    textures: AtomicU64,
    issued: AtomicU64,
    resolved: AtomicU64,
}

/// Creates a texture through `engine`, uploads four frames into it, waits
/// for them and drops it, until `stop`.
fn churn(engine: &UploadEngine, stop: &AtomicBool, churned: &Churned) -> Result<(), Failure> {
    let desc = wgpu::TextureDescriptor {
        label: Some("soak churn"),
        size: wgpu::Extent3d {
            width: 512,
            height: 512,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    };
    let mut n = 0u8;
    while !stop.load(Ordering::SeqCst) {
        let texture = engine
            .create_texture(&desc, StagingPolicy::Ring(2))
            .map_err(|e| e.to_string())?;
        churned.textures.fetch_add(1, Ordering::Relaxed);
        let mut uploads = Vec::new();
        for _ in 0..4 {
            n = n.wrapping_add(1);
            uploads.push(
                texture
                    .upload_frame(vec![n; 512 * 512 * 4])
                    .map_err(|e| e.to_string())?,
            );
            churned.issued.fetch_add(1, Ordering::Relaxed);
        }
        for upload in uploads {
            if upload.wait_timeout(Duration::from_secs(60)).is_some() {
                churned.resolved.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(texture);
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// A small seeded generator (xorshift64*): the commands only need to be
/// the same for the same seed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// One command for a player of `len` frames, by the dice; `resize` when
/// it plays in a window.
fn roll(dice: &mut Dice, len: u64, resize: bool) -> Vec<Command> {
    match dice.below(if resize { 5 } else { 4 }) {
        0 => vec![Command::Seek(dice.below(len) as usize)],
        1 => vec![Command::Step(dice.below(7) as i64 - 3)],
        // A pause, resumed at once: the clock stops and starts again.
        2 => vec![Command::TogglePause, Command::Step(1), Command::TogglePause],
        3 => vec![Command::ToggleLoop, Command::ToggleLoop],
        _ => vec![Command::Resize(
            640 + dice.below(960) as u32,
            360 + dice.below(540) as u32,
        )],
    }
}

/// Sends the players their commands and samples the figures until `span`
/// has passed (or `stop`), then tells the movie to quit.
fn control(
    gpu: &Gpu,
    engine: &UploadEngine,
    (movie, sequence): (Remote, Remote),
    span: Duration,
    seed: u64,
    stop: &AtomicBool,
) -> Vec<Sample> {
    let mut dice = Dice(seed.max(1));
    let start = Instant::now();
    let every = (span / SAMPLES).max(Duration::from_secs(1));
    let mut samples = Vec::new();
    let (mut next_sample, mut next_command) = (start, start + COMMAND_EVERY);
    let movie_len = u64::from(MOVIE_SECONDS) * FPS as u64;
    while start.elapsed() < span && !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= next_command {
            for c in roll(&mut dice, movie_len, true) {
                movie.send(c);
            }
            for c in roll(&mut dice, u64::from(SEQUENCE.0), false) {
                sequence.send(c);
            }
            next_command += COMMAND_EVERY;
        }
        if now >= next_sample {
            let stats = engine.stats();
            samples.push(Sample {
                at: start.elapsed().as_secs_f64(),
                resident: resident().unwrap_or(0) as f64,
                tracked: gpu.tracker().snapshot().total_bytes as f64,
                staging: stats.staging_held as f64,
                in_flight: (stats.queued + stats.active) as f64,
            });
            next_sample += every;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    movie.send(Command::Quit);
    sequence.send(Command::Quit);
    samples
}

/// Resident memory of this process, bytes (Linux).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The least-squares slope of `(x, y)` points, y per x; 0 for fewer than
/// two distinct x.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 { 0.0 } else { sxy / sxx }
}

/// One figure after warm-up: its slope per hour, the growth that slope
/// makes over the measured span, its mean, and whether it is flat.
struct Trend {
    per_hour: f64,
    growth: f64,
    mean: f64,
    flat: bool,
}

fn trend(samples: &[Sample], figure: impl Fn(&Sample) -> f64) -> Trend {
    let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.at, figure(s))).collect();
    let per_second = slope(&points);
    let span = match (points.first(), points.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    };
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
    let growth = per_second * span;
    Trend {
        per_hour: per_second * 3600.0,
        growth,
        mean,
        flat: growth <= FLAT_BYTES.max(mean * FLAT_SHARE),
    }
}

/// The samples after warm-up: past the first fifth of the run, and past
/// the movie's first pass (its frames fill the cache until then) with ten
/// seconds to spare.
fn after_warm_up(samples: &[Sample]) -> &[Sample] {
    let end = samples.last().map_or(0.0, |s| s.at);
    let from = (end / 5.0).max(f64::from(MOVIE_SECONDS) + 10.0);
    let first = samples
        .iter()
        .position(|s| s.at >= from)
        .unwrap_or(samples.len());
    &samples[first..]
}

/// Reads one figure of a sample.
type Figure = fn(&Sample) -> f64;

/// What one soak saw.
struct Report<'a> {
    ran: Duration,
    samples: &'a [Sample],
    movie: &'a PlaySummary,
    sequence: &'a PlaySummary,
    churned: &'a Churned,
    left_in_engine: u64,
}

fn mib(bytes: f64) -> String {
    format!("{:.1}", bytes / (1024.0 * 1024.0))
}

/// Prints the report; `Err` names every bound broken.
fn report(r: &Report<'_>) -> Result<(), Failure> {
    let mut text =
        String::from("seconds  resident MiB  tracked MiB  staging MiB  uploads in flight\n");
    let step = (r.samples.len() / 10).max(1);
    for s in r.samples.iter().step_by(step).chain(r.samples.last()) {
        text += &format!(
            "{:>7.0}  {:>12}  {:>11}  {:>11}  {:>17.0}\n",
            s.at,
            mib(s.resident),
            mib(s.tracked),
            mib(s.staging),
            s.in_flight
        );
    }
    let measured = after_warm_up(r.samples);
    let mut broken = Vec::new();
    text += &format!(
        "\nafter warm-up ({} samples from {:.0} s): slope per hour, growth over the span, mean\n",
        measured.len(),
        measured.first().map_or(0.0, |s| s.at)
    );
    let figures: [(&str, Figure); 3] = [
        ("resident memory", |s| s.resident),
        ("tracked device bytes", |s| s.tracked),
        ("staging pool", |s| s.staging),
    ];
    for (name, figure) in figures {
        let t = trend(measured, figure);
        text += &format!(
            "{name:>20}: {:>+9} MiB/h, {:>+7} MiB over the span, mean {} MiB: {}\n",
            mib(t.per_hour),
            mib(t.growth),
            mib(t.mean),
            if t.flat { "flat" } else { "GROWS" }
        );
        if !t.flat {
            broken.push(format!("{name} grows {} MiB/h", mib(t.per_hour)));
        }
    }
    if measured.len() < 3 {
        broken.push("too few samples after warm-up to judge (run longer)".into());
    }
    let issued = r.churned.issued.load(Ordering::Relaxed);
    let resolved = r.churned.resolved.load(Ordering::Relaxed);
    text += &format!(
        "\nchurn: {} textures, {issued} uploads, {resolved} resolved; left in the engine at the end: {}\n",
        r.churned.textures.load(Ordering::Relaxed),
        r.left_in_engine
    );
    if issued != resolved || r.left_in_engine > 0 {
        broken.push(format!(
            "uploads left unresolved: {} of the churn's, {} in the engine",
            issued - resolved.min(issued),
            r.left_in_engine
        ));
    }
    for (name, s) in [("movie", r.movie), ("sequence", r.sequence)] {
        text += &format!(
            "{name:>8}: {} ticks, {} shown, {} dropped, {} failed, {} never pushed\n",
            s.ticks, s.frames.shown, s.frames.dropped, s.frames.failed, s.never_pushed
        );
        if s.frames.failed > 0 {
            broken.push(format!("{name}: {} frames failed", s.frames.failed));
        }
    }
    text += &drift(r.movie, &mut broken);
    text += &format!("\nran {:.1} min", r.ran.as_secs_f64() / 60.0);
    output::println(&text)?;
    if broken.is_empty() {
        Ok(())
    } else {
        Err(format!("the soak broke its bounds: {}", broken.join("; ")).into())
    }
}

/// The movie's drift from its sound by tenths of the run, and whether it
/// grew: the last tenth's median more than half a frame past the first's.
fn drift(movie: &PlaySummary, broken: &mut Vec<String>) -> String {
    let Some(audio) = movie.audio.as_ref().filter(|a| a.played) else {
        broken.push("the movie's sound did not play: no drift to measure".into());
        return "\nsound: did not play\n".into();
    };
    let mut text = String::from("\n|drift| from the sound, ms, median by tenths of the run:");
    let medians: Vec<f64> = super::sync::tenths(&audio.drift_by_tick, movie.ticks)
        .iter()
        .map(|t| t.p50)
        .collect();
    for m in &medians {
        text += &format!(" {m:.1}");
    }
    let half_frame = 500.0 / FPS;
    let grew = match (medians.first(), medians.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    text += &format!(
        "\nlast tenth against the first: {grew:+.2} ms (bound: half a frame, {half_frame:.1} ms); {} sound underruns\n",
        audio.underruns
    );
    if grew > half_frame {
        broken.push(format!("the sound's drift grew {grew:.1} ms"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_a_line_is_its_rise_and_of_noise_about_nothing() {
        let line: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), 3.0 * f64::from(i) + 1.0))
            .collect();
        assert!((slope(&line) - 3.0).abs() < 1e-9);
        let flat: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), if i % 2 == 0 { 5.0 } else { 7.0 }))
            .collect();
        assert!(slope(&flat).abs() < 0.1);
        assert_eq!(slope(&[(1.0, 2.0)]), 0.0);
    }

    #[test]
    fn a_figure_that_grows_past_its_bound_is_not_flat() {
        let at = |s: f64, bytes: f64| Sample {
            at: s,
            resident: bytes,
            ..Sample::default()
        };
        let mib = 1024.0 * 1024.0;
        // 200 MiB held, 1 MiB more a minute for an hour: 60 MiB, past both
        // 16 MiB and 3% of the mean.
        let growing: Vec<Sample> = (0..=60)
            .map(|m| at(f64::from(m) * 60.0, 200.0 * mib + f64::from(m) * mib))
            .collect();
        assert!(!trend(&growing, |s| s.resident).flat);
        let steady: Vec<Sample> = (0..=60)
            .map(|m| at(f64::from(m) * 60.0, 200.0 * mib + f64::from(m % 3) * mib))
            .collect();
        assert!(trend(&steady, |s| s.resident).flat);
    }

    #[test]
    fn warm_up_is_the_first_fifth_and_at_least_the_movies_first_pass() {
        let samples: Vec<Sample> = (0..=500)
            .map(|s| Sample {
                at: f64::from(s),
                ..Sample::default()
            })
            .collect();
        assert_eq!(after_warm_up(&samples)[0].at, 100.0);
        assert_eq!(after_warm_up(&samples[..61])[0].at, 40.0);
    }
}
