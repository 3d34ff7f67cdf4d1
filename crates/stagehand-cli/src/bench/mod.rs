//! `stagehand bench`: alternatives measured side by side in one run.
//!
//! Each benchmark interleaves its variants round by round, so drift in the
//! machine's load hits them all alike, and reports the median of the rounds.

#[cfg(feature = "cuda")]
mod cuda;
mod pool;
mod stats;
mod tracking;
mod upload;

use clap::{Args, ValueEnum};

/// Options of `stagehand bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    gpu: super::GpuArgs,
    /// Which benchmark to run.
    #[arg(value_enum, default_value_t = Which::Tracking)]
    which: Which,
    /// Rounds per variant; the table shows the median round.
    #[arg(long, default_value_t = 31)]
    rounds: usize,
    /// Operations per round.
    #[arg(long, default_value_t = 2000)]
    ops: usize,
    /// Frames per run of the upload benchmark.
    #[arg(long, default_value_t = 200)]
    frames: usize,
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
    /// CUDA: pooled take + drop against cuMemAlloc + cuMemFree, and
    /// host-to-device bandwidth (pageable, pinned, upload engine).
    #[cfg(feature = "cuda")]
    Cuda,
}

/// Runs the chosen benchmark and prints its table.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    #[cfg(feature = "cuda")]
    if let Which::Cuda = args.which {
        return cuda::run(args.rounds, args.ops);
    }
    run_wgpu(args).map_err(|e| e.to_string())
}

fn run_wgpu(args: &BenchArgs) -> stagehand_gpu::Result<()> {
    let gpu = std::sync::Arc::new(args.gpu.open()?);
    let info = gpu.info();
    println!(
        "adapter: {} ({:?}), {} rounds x {} ops, median round\n",
        info.name, info.backend, args.rounds, args.ops
    );
    match args.which {
        Which::Tracking => tracking::run(&gpu, args.rounds, args.ops),
        Which::Pool => pool::run(gpu, args.rounds, args.ops),
        Which::Upload => upload::run(gpu, args.frames),
        #[cfg(feature = "cuda")]
        Which::Cuda => unreachable!("handled before opening wgpu"),
    }
}
