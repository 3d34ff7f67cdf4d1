//! `stagehand bench`: alternatives measured side by side in one run.
//!
//! Each benchmark interleaves its variants round by round, so drift in the
//! machine's load hits them all alike, and reports the median of the rounds.

#[cfg(feature = "cuda")]
mod cuda;
mod play;
mod pool;
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
    /// Rounds per variant, 1 to 1000; the table shows the median round.
    #[arg(long, default_value_t = 31,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_ROUNDS))]
    rounds: usize,
    /// Operations per round, 1 to 1000000 (tracking, pool, cuda).
    #[arg(long, default_value_t = 2000,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_OPS))]
    ops: usize,
    /// Frames per run of the upload benchmark, 1 to 10000.
    #[arg(long, default_value_t = 200,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_FRAMES))]
    frames: usize,
    /// play: frames per generated sequence, 2 to 1000.
    #[arg(long, default_value_t = 48,
          value_parser = RangedU64ValueParser::<u32>::new().range(2..=1000))]
    length: u32,
    /// play: seconds of each looped run; sync: seconds of the movie (600
    /// for ten minutes); 1 to 600.
    #[arg(long, default_value_t = 10,
          value_parser = RangedU64ValueParser::<u32>::new().range(1..=600))]
    seconds: u32,
    /// play: frame size of the generated sequences, WIDTHxHEIGHT (up to 8192x8192).
    #[arg(long, default_value = "3840x2160", value_parser = |s: &str| crate::parse_size(s, 8192))]
    size: (u32, u32),
    /// play, sync: where to write the sequences or the movie (kept for the
    /// next run).
    /// Default: a folder in the system's temporary directory.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// play: decode threads, 1 to 64.
    #[arg(long, default_value_t = 2,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=64))]
    threads: usize,
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
    /// Image sequences (PNG 8/16-bit, EXR half ZIP/PIZ, EXR float) through
    /// the player: frames missed on the first and later looped passes,
    /// with pre-roll, every-frame rate, and decode against the crates' own.
    Play,
    /// A movie clicking once a second, played in realtime with its sound
    /// on the null sink: each frame's drift from the sound's clock, by
    /// tenths of the run (written with the ffmpeg command).
    Sync,
    /// CUDA: pooled take + drop against cuMemAlloc + cuMemFree, and
    /// host-to-device bandwidth (pageable, pinned, upload engine).
    #[cfg(feature = "cuda")]
    Cuda,
}

/// Runs the chosen benchmark and prints its table.
pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    #[cfg(feature = "cuda")]
    if let Which::Cuda = args.which {
        return cuda::run(args.rounds, args.ops);
    }
    run_wgpu(args)
}

fn run_wgpu(args: &BenchArgs) -> Result<(), Failure> {
    let gpu = std::sync::Arc::new(args.gpu.open_for(stagehand_play::wanted_features(), None)?);
    let info = gpu.info();
    let rounds = match args.which {
        Which::Tracking | Which::Pool => {
            format!(", {} rounds x {} ops, median round", args.rounds, args.ops)
        }
        _ => String::new(),
    };
    output::println(&format!(
        "adapter: {} ({:?}){rounds}\n",
        info.name, info.backend
    ))?;
    match args.which {
        Which::Tracking => tracking::run(&gpu, args.rounds, args.ops),
        Which::Pool => pool::run(gpu, args.rounds, args.ops),
        Which::Upload => upload::run(gpu, args.frames),
        Which::Play => {
            let dir = args
                .dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("stagehand-bench-play"));
            play::run(
                gpu,
                &play::Setup {
                    dir: &dir,
                    length: args.length,
                    size: args.size,
                    seconds: args.seconds,
                    fps: 24.0,
                    threads: args.threads,
                    decode_files: 8,
                },
            )
        }
        Which::Sync => {
            let dir = args
                .dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("stagehand-bench-sync"));
            sync::run(gpu, &dir, args.seconds)
        }
        #[cfg(feature = "cuda")]
        Which::Cuda => unreachable!("handled before opening wgpu"),
    }
}
