//! `stagehand bench`: alternatives measured side by side in one run.
//!
//! Each benchmark interleaves its variants round by round, so drift in the
//! machine's load hits them all alike, and reports the median of the rounds.

#[cfg(feature = "cuda")]
mod cuda;
mod play;
mod pool;
mod soak;
mod stats;
mod sync;
mod tracking;
mod upload;

use super::{Failure, output};
use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};

/// Most rounds per variant: the median hardly moves past a few dozen, and
/// each round of the CUDA bandwidth table copies 768 MiB.
const MAX_ROUNDS: u64 = 1000;
/// Most operations per round (the pool's thread table runs ten times as
/// many per thread).
const MAX_OPS: u64 = 1_000_000;
/// Most frames per upload run: almost three minutes per variant at 60 fps,
/// 33 MB a frame.
const MAX_FRAMES: u64 = 10_000;

/// Options of `stagehand bench`. Clap checks every bound while parsing, so a
/// value out of range is refused before any GPU is opened.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    gpu: super::GpuArgs,
    /// Which benchmark to run.
    #[arg(value_enum, default_value_t = Which::Tracking)]
    which: Which,
    /// Rounds per variant, 1 to 1000; the table shows the median round
    /// (default 31). play: rounds of every scenario, the table shows each
    /// number's range over them (default 3).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_ROUNDS))]
    rounds: Option<usize>,
    /// Operations per round, 1 to 1000000 (tracking, pool, cuda).
    #[arg(long, default_value_t = 2000,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_OPS))]
    ops: usize,
    /// Frames per run of the upload benchmark, 1 to 10000.
    #[arg(long, default_value_t = 200,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_FRAMES))]
    frames: usize,
    /// play: frames per sequence, 2 to 1000 (movies get twice as many).
    #[arg(long, default_value_t = 48,
          value_parser = RangedU64ValueParser::<u32>::new().range(2..=1000))]
    length: u32,
    /// soak: minutes to run, 0.2 to 1440 (60 for the hour).
    #[arg(long, default_value_t = 60.0, value_parser = parse_minutes)]
    minutes: f64,
    /// soak: seeds the seeks, steps, pauses and resizes it sends.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// sync: seconds of the movie (600 for ten minutes), 1 to 600.
    #[arg(long, default_value_t = 10,
          value_parser = RangedU64ValueParser::<u32>::new().range(1..=600))]
    seconds: u32,
    /// play: frame size of the footage, WIDTHxHEIGHT (up to 8192x8192).
    #[arg(long, default_value = "3840x2160", value_parser = |s: &str| crate::parse_size(s, 8192))]
    size: (u32, u32),
    /// play, sync: where to write the footage or the movie (kept for the
    /// next run).
    /// Default: a folder in the system's temporary directory.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// play: decode threads, 1 to 64.
    #[arg(long, default_value_t = 2,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=64))]
    threads: usize,
    /// play: another stagehand binary to compare with (e.g. built from the
    /// commit a change started from); it plays every scenario too.
    #[arg(long, value_name = "PATH")]
    baseline: Option<std::path::PathBuf>,
    /// play: scenarios to run, comma-separated: first (one realtime pass),
    /// loop (three passes from the cache), preroll (--preroll all), tier
    /// (the loop with --gpu-cache), window (one pass into a 1920x1080
    /// window under Xvfb, beside mpv). Default: all.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    scenarios: Vec<play::Scenario>,
    /// play: footage to play, comma-separated: rgb8, rgba8, jpeg (8-bit
    /// PNG and JPEG, by ffmpeg), png16, exr-half-zip, exr-half-piz,
    /// exr-float (by the format crates), h264, prores (movies, by ffmpeg).
    /// Default: all.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    kinds: Vec<play::Footage>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Which {
    /// Create and drop a 256-byte buffer: plain wgpu against stagehand's
    /// counted creation.
    Tracking,
    /// Pooled take + drop against create + drop, per size; then 1, 2, 4 threads.
    Pool,
    /// 4K frames streamed by write_texture, StagingBelt, a naive thread and
    /// stagehand, at an unlimited rate and at 60 fps.
    Upload,
    /// This build, a --baseline build and mpv, each a child process, on
    /// the same 4K sequences (PNG 8-bit RGB and RGBA, JPEG, PNG 16-bit, EXR
    /// half ZIP/PIZ, EXR float) and movies (H.264, ProRes 422 HQ): one
    /// realtime pass, a 3-pass loop, --preroll all, --gpu-cache, headless,
    /// and a 1920x1080 window under Xvfb; frames shown, dropped and never
    /// pushed, CPU seconds and upload p50, per round.
    Play,
    /// A movie clicking once a second, played in realtime with its sound
    /// on the null sink: each frame's drift from the sound's clock, by
    /// tenths of the run (written with the ffmpeg command).
    Sync,
    /// A movie with sound looped in a window, a sequence looped headless
    /// and textures churned through the same engine, moved around by
    /// seeded commands for --minutes: resident memory, tracked device
    /// bytes and staging must stay flat, every upload end, the drift not
    /// grow (exit status 1 where one does not).
    Soak,
    /// CUDA: pooled take + drop against cuMemAlloc + cuMemFree, and
    /// host-to-device bandwidth (pageable, pinned, upload engine).
    #[cfg(feature = "cuda")]
    Cuda,
}

/// Rounds of the benchmarks that show the median round.
const MEDIAN_ROUNDS: usize = 31;
/// Rounds of `bench play`: each is a full run of every player in every
/// scenario, and the table shows their range.
const PLAY_ROUNDS: usize = 3;

impl BenchArgs {
    fn median_rounds(&self) -> usize {
        self.rounds.unwrap_or(MEDIAN_ROUNDS)
    }

    /// What `bench play` compares; it opens no GPU itself (its players do).
    fn play_setup(&self) -> play::Setup {
        play::Setup {
            dir: self
                .dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("stagehand-bench-play")),
            length: self.length,
            size: self.size,
            rounds: self.rounds.unwrap_or(PLAY_ROUNDS),
            kinds: or_all(&self.kinds, &play::Footage::ALL),
            scenarios: or_all(&self.scenarios, &play::Scenario::ALL),
            baseline: self.baseline.clone(),
            common: play::Common {
                backend: self.gpu.backend.clone(),
                adapter: self.gpu.adapter.clone(),
                threads: self.threads,
            },
        }
    }
}

/// The values chosen, each once, or all of them where none was.
fn or_all<T: Clone + PartialEq>(chosen: &[T], all: &[T]) -> Vec<T> {
    let mut once = Vec::new();
    for v in if chosen.is_empty() { all } else { chosen } {
        if !once.contains(v) {
            once.push(v.clone());
        }
    }
    once
}

/// Parses soak minutes, 0.2 to 1440.
fn parse_minutes(s: &str) -> Result<f64, String> {
    let m: f64 = s.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !(0.2..=1440.0).contains(&m) {
        return Err(format!("{s}: minutes must be from 0.2 to 1440"));
    }
    Ok(m)
}

/// Runs the chosen benchmark and prints its table.
pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    match args.which {
        #[cfg(feature = "cuda")]
        Which::Cuda => cuda::run(args.median_rounds(), args.ops),
        Which::Play => play::run(&args.play_setup()),
        Which::Soak => soak::run(
            &soak::Setup {
                minutes: args.minutes,
                dir: args
                    .dir
                    .clone()
                    .unwrap_or_else(|| std::env::temp_dir().join("stagehand-bench-soak")),
                seed: args.seed,
            },
            |display| {
                args.gpu
                    .open_for(stagehand_play::wanted_features(), display)
            },
        ),
        _ => run_wgpu(args),
    }
}

fn run_wgpu(args: &BenchArgs) -> Result<(), Failure> {
    let gpu = std::sync::Arc::new(args.gpu.open_for(stagehand_play::wanted_features(), None)?);
    let info = gpu.info();
    let rounds = args.median_rounds();
    let rounds = match args.which {
        Which::Tracking | Which::Pool => {
            format!(", {rounds} rounds x {} ops, median round", args.ops)
        }
        _ => String::new(),
    };
    output::println(&format!(
        "adapter: {} ({:?}){rounds}\n",
        info.name, info.backend
    ))?;
    match args.which {
        Which::Tracking => tracking::run(&gpu, args.median_rounds(), args.ops),
        Which::Pool => pool::run(gpu, args.median_rounds(), args.ops),
        Which::Upload => upload::run(gpu, args.frames),
        Which::Sync => {
            let dir = args
                .dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("stagehand-bench-sync"));
            sync::run(gpu, &dir, args.seconds)
        }
        #[cfg(feature = "cuda")]
        Which::Cuda => unreachable!("handled before opening wgpu"),
        Which::Play => unreachable!("bench play opens no GPU of its own"),
        Which::Soak => unreachable!("bench soak opens its GPU with its window"),
    }
}
