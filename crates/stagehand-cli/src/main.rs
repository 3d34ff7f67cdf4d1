//! The `stagehand` command: a thin front over the library.

mod bench;
mod play;

use clap::{Args, Parser, Subcommand};
use stagehand_gpu::{Gpu, GpuOptions};
use std::process::ExitCode;

/// GPU memory, uploads and diagnostics over wgpu.
#[derive(Parser, Debug)]
#[command(name = "stagehand", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Play an image sequence (or synthetic 4K frames) through the upload
    /// engine and a real render pass at the target rate, then print a summary
    /// and the diagnostics report.
    Play(play::PlayArgs),
    /// Print the diagnostics report of the default adapter: system, adapter,
    /// versions, stagehand's object counts and wgpu's own report.
    Report(ReportArgs),
    /// Run benchmarks and print a table; each compares alternatives measured
    /// side by side, interleaved, in one run.
    Bench(bench::BenchArgs),
}

/// Which GPU to open.
#[derive(Args, Debug, Clone)]
struct GpuArgs {
    /// Backends to search, comma-separated: vulkan, gl, metal, dx12.
    /// Default: $WGPU_BACKEND, else all.
    #[arg(long)]
    backend: Option<String>,
    /// Part of the adapter's name, case-insensitive (e.g. llvmpipe, lavapipe).
    /// Default: $WGPU_ADAPTER_NAME, else the best adapter (real GPUs before software).
    #[arg(long)]
    adapter: Option<String>,
}

impl GpuArgs {
    fn open(&self) -> stagehand_gpu::Result<Gpu> {
        let options = GpuOptions {
            backend: self.backend.clone(),
            adapter: self.adapter.clone(),
            ..GpuOptions::default()
        };
        Gpu::open(&options)
    }
}

#[derive(Args, Debug)]
struct ReportArgs {
    #[command(flatten)]
    gpu: GpuArgs,
    /// Print JSON instead of text tables.
    #[arg(long)]
    json: bool,
}

fn report(args: &ReportArgs) -> stagehand_gpu::Result<()> {
    let gpu = args.gpu.open()?;
    #[allow(unused_mut)] // only the CUDA section is added afterwards
    let mut report = gpu.report();
    #[cfg(feature = "cuda")]
    report.add(&cuda_section());
    if args.json {
        println!("{}", report.to_json_string());
    } else {
        report.print();
    }
    Ok(())
}

/// Device 0's `cuda` section, or the one line saying why there is none.
#[cfg(feature = "cuda")]
fn cuda_section() -> stagehand_gpu::diag::sections::CudaSection {
    use stagehand_gpu::backend::cuda::Cuda;
    match Cuda::open(0) {
        Ok(cuda) => cuda.section(Vec::new(), None),
        Err(e) => stagehand_gpu::diag::sections::CudaSection::unavailable(&e),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Play(args) => play::run(args).map_err(|e| e.to_string()),
        Command::Report(args) => report(args).map_err(|e| e.to_string()),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stagehand: {e}");
            ExitCode::FAILURE
        }
    }
}
