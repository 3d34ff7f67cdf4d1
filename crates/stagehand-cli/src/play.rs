//! `stagehand play`: parse options, run the library's player, print its
//! summary and the diagnostics report.

use clap::Args;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::{PlayError, PlayOptions, PlaySummary, Progress, play};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

/// Options of `stagehand play`.
#[derive(Args, Debug)]
pub struct PlayArgs {
    #[command(flatten)]
    gpu: super::GpuArgs,
    /// Folder of PNG or JPEG frames, played in natural order (frame_9 before
    /// frame_10). Without it, synthetic frames are generated in place.
    dir: Option<PathBuf>,
    /// Frames per second.
    #[arg(long, default_value_t = 24.0)]
    fps: f64,
    /// Size of synthetic frames, WIDTHxHEIGHT (a folder's frames keep theirs).
    #[arg(long, default_value = "3840x2160", value_parser = parse_size)]
    size: (u32, u32),
    /// Size of the render target, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = parse_size)]
    output_size: (u32, u32),
    /// Seconds to play (default 5 for synthetic frames; a folder plays once).
    #[arg(long, conflicts_with = "frames")]
    seconds: Option<f64>,
    /// Frames to play.
    #[arg(long)]
    frames: Option<u64>,
    /// Decode threads, and transfer workers.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Staging buffers per frame-queue slot.
    #[arg(long, default_value_t = 1)]
    staging_buffers: usize,
    /// Frame-queue slots: textures holding frames on screen, ready or filling.
    #[arg(long, default_value_t = 3)]
    depth: usize,
    /// Texture format of the frames. Only rgba8 for now; 16-bit images are
    /// reduced to 8 bits when decoded.
    #[arg(long, default_value = "rgba8", value_parser = ["rgba8"])]
    format: String,
    /// Play the folder again from the start until --frames or --seconds are done.
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
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT"))?;
    let parse = |v: &str| v.trim().parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
    let size = (parse(w)?, parse(h)?);
    if size.0 == 0 || size.1 == 0 {
        return Err("sizes must not be zero".into());
    }
    Ok(size)
}

impl PlayArgs {
    fn options(&self) -> Result<(PlayOptions, Option<(u64, PathBuf)>), PlayError> {
        let save = match &self.save_frame {
            Some(v) => {
                let tick = v[0]
                    .parse::<u64>()
                    .map_err(|e| PlayError::InvalidOption(format!("--save-frame {}: {e}", v[0])))?;
                Some((tick, PathBuf::from(&v[1])))
            }
            None => None,
        };
        let frames = self
            .frames
            .or_else(|| self.seconds.map(|s| (s * self.fps).ceil().max(1.0) as u64));
        let options = PlayOptions {
            dir: self.dir.clone(),
            fps: self.fps,
            size: self.size,
            output_size: self.output_size,
            frames,
            threads: self.threads,
            staging_buffers: self.staging_buffers,
            depth: self.depth,
            looped: self.looped,
            save_ticks: save.iter().map(|(t, _)| *t).collect(),
            ..PlayOptions::default()
        };
        Ok((options, save))
    }
}

/// Runs `stagehand play`.
pub fn run(args: &PlayArgs) -> Result<(), PlayError> {
    let gpu = Arc::new(args.gpu.open()?);
    let (mut options, save) = args.options()?;
    let timeline = args
        .trace
        .as_ref()
        .map(|_| Arc::new(stagehand_gpu::diag::Timeline::new()));
    options.timeline = timeline.clone();
    let config = stagehand_gpu::upload::EngineConfig {
        timeline: timeline.clone(),
        ..stagehand_play::engine_config(args.threads)
    };
    let engine = UploadEngine::new(Arc::clone(&gpu), config)?;
    let mut bar = Bar::new(!args.json);
    let summary = play(&gpu, &engine, &options, |p| bar.update(&p))?;
    bar.finish();
    if let Some((tick, path)) = save {
        save_png(&summary, tick, &path)?;
    }
    if let (Some(path), Some(timeline)) = (&args.trace, &timeline) {
        timeline.write(path).map_err(|e| PlayError::Io {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    }
    // The summary first, then the diagnostics report.
    let mut report = stagehand_gpu::Report::new();
    report.add(&summary).merge(gpu.report());
    report
        .add(&engine.staging_pool().section(false))
        .add(&engine.section());
    if args.json {
        println!("{}", report.to_json_string());
    } else {
        report.print();
    }
    Ok(())
}

fn save_png(summary: &PlaySummary, tick: u64, path: &PathBuf) -> Result<(), PlayError> {
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
    image.save(path).map_err(|e| PlayError::Io {
        path: path.clone(),
        reason: e.to_string(),
    })
}

/// A progress bar on a terminal; a plain line a second elsewhere.
struct Bar {
    bar: Option<indicatif::ProgressBar>,
    enabled: bool,
    last_line: std::time::Instant,
}

impl Bar {
    fn new(enabled: bool) -> Self {
        Self {
            bar: None,
            enabled,
            last_line: std::time::Instant::now(),
        }
    }

    fn update(&mut self, p: &Progress) {
        if !self.enabled {
            return;
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
        } else if self.last_line.elapsed().as_secs_f64() >= 1.0 || p.tick == p.ticks {
            self.last_line = std::time::Instant::now();
            println!("tick {}/{}: {message}", p.tick, p.ticks);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
