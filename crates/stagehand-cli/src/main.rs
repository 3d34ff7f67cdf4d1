//! The `stagehand` command: a thin front over the library.

mod bench;
mod output;
mod play;

use clap::{Args, Parser, Subcommand};
use output::OutputError;
use stagehand_gpu::{Gpu, GpuOptions};
use std::fmt;
use std::io::Write;
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
    /// and the diagnostics report. Or a movie, with its sound.
    Play(Box<play::PlayArgs>),
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

    /// Opens the GPU with `wanted` features turned on where the adapter
    /// has them, able to present on `display` (a window's) when given.
    fn open_for(
        &self,
        wanted: wgpu::Features,
        display: Option<std::sync::Arc<dyn wgpu::wgt::WgpuHasDisplayHandle>>,
    ) -> stagehand_gpu::Result<Gpu> {
        let options = GpuOptions {
            backend: self.backend.clone(),
            adapter: self.adapter.clone(),
            wanted_features: wanted,
            display,
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

fn report(args: &ReportArgs) -> Result<(), Failure> {
    let gpu = args.gpu.open()?;
    #[allow(unused_mut)] // only the CUDA section is added afterwards
    let mut report = gpu.report();
    #[cfg(feature = "cuda")]
    report.add(&cuda_section());
    if args.json {
        output::println(&report.to_json_string())?;
    } else {
        output::print(&report.to_text())?;
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

/// Why a subcommand stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Standard output could not be written.
    Output(OutputError),
    /// Anything else, as the text printed after `stagehand: `.
    Other(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Output(e) => e.fmt(f),
            Self::Other(e) => f.write_str(e),
        }
    }
}

impl From<OutputError> for Failure {
    fn from(e: OutputError) -> Self {
        Self::Output(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Self::Other(e)
    }
}

impl From<&str> for Failure {
    fn from(e: &str) -> Self {
        Self::Other(e.to_owned())
    }
}

impl From<stagehand_gpu::Error> for Failure {
    fn from(e: stagehand_gpu::Error) -> Self {
        Self::Other(e.to_string())
    }
}

impl From<stagehand_play::PlayError> for Failure {
    /// The library's words, with an option named by its flag.
    fn from(e: stagehand_play::PlayError) -> Self {
        match e {
            stagehand_play::PlayError::BadOption { field, message } => {
                Self::Other(format!("invalid option: {} {message}", flag(field)))
            }
            e => Self::Other(e.to_string()),
        }
    }
}

/// The command line's flag for a player option: `--staging-buffers`.
pub(crate) fn flag(field: stagehand_play::Field) -> String {
    format!("--{}", field.name().replace('_', "-"))
}

/// Parses WIDTHxHEIGHT, each side from 1 to `max`.
pub(crate) fn parse_size(s: &str, max: u32) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT"))?;
    let parse = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
    let size = (parse(w)?, parse(h)?);
    if !(1..=max).contains(&size.0) || !(1..=max).contains(&size.1) {
        return Err(format!("{s}: each side must be from 1 to {max}"));
    }
    Ok(size)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Play(args) => play::run(args),
        Command::Report(args) => report(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Standard error may be gone too; there is nobody left to tell.
            let _ = writeln!(std::io::stderr(), "stagehand: {e}");
            ExitCode::FAILURE
        }
    }
}
