//! `stagehand bench play`: real sequences through the player, one kind at a
//! time (8- and 16-bit PNG, EXR half ZIP and PIZ, EXR float), each written
//! by the format crate itself. For each: a looped realtime run (frames
//! missed on the first pass, while decoding, and on later passes, from the
//! cache), the same with `--preroll all`, an every-frame pass (the rate
//! decoding allows), and our decode against the crate's own decode of the
//! same files into a `Vec`, interleaved file by file.

use super::stats::median;
use crate::{Failure, output};
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::testdata::{self, Kind};
use stagehand_play::{Mode, PlayOptions, PlaySummary, Preroll, engine_config, play};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// What one bench run plays.
pub struct Setup<'a> {
    /// Where the sequences are written (and found again next time).
    pub dir: &'a Path,
    /// Frames per sequence.
    pub length: u32,
    /// Frame size.
    pub size: (u32, u32),
    /// Seconds of each looped run.
    pub seconds: u32,
    /// Frames per second.
    pub fps: f64,
    /// Decode threads.
    pub threads: usize,
    /// Files decoded by each side of the decode comparison.
    pub decode_files: u32,
}

/// One row of the table.
struct Row {
    kind: Kind,
    texture: String,
    first_pass: u64,
    later_passes: u64,
    later_frames: u64,
    prerolled_missed: u64,
    prerolled_frames: u64,
    tier_later: u64,
    tier_later_frames: u64,
    tier_uploads: u64,
    every_frame_fps: f64,
    ours_ms: f64,
    crate_ms: f64,
}

/// Runs every kind and prints the table.
pub fn run(gpu: Arc<Gpu>, setup: &Setup<'_>) -> Result<(), Failure> {
    output::println(&format!(
        "{} frames of {}x{} per sequence at {} fps, {} decode threads, looped {} s; sequences in {}\n",
        setup.length,
        setup.size.0,
        setup.size.1,
        setup.fps,
        setup.threads,
        setup.seconds,
        setup.dir.display()
    ))?;
    let mut rows = Vec::new();
    for kind in Kind::ALL {
        // One folder per kind, size and length: a longer sequence left by
        // an earlier run is never played in place of this one.
        let dir = setup.dir.join(format!(
            "{}-{}x{}-{}",
            kind.name(),
            setup.size.0,
            setup.size.1,
            setup.length
        ));
        let started = Instant::now();
        let pattern = testdata::write_sequence(&dir, kind, setup.length, setup.size)?;
        output::println(&format!(
            "{}: sequence ready ({:.1} s)",
            kind.name(),
            started.elapsed().as_secs_f64()
        ))?;
        rows.push(measure(&gpu, setup, kind, &dir, &pattern)?);
    }
    print_table(&rows)
}

fn measure(
    gpu: &Arc<Gpu>,
    setup: &Setup<'_>,
    kind: Kind,
    dir: &Path,
    pattern: &Path,
) -> Result<Row, Failure> {
    let looped_frames = (f64::from(setup.seconds) * setup.fps).ceil() as u64;
    let base = PlayOptions {
        source: Some(pattern.to_owned()),
        fps: setup.fps,
        threads: setup.threads,
        looped: true,
        frames: Some(looped_frames),
        // Room for the whole sequence (up to half the RAM): what later
        // passes measure is the cache, not its size.
        cache_bytes: Some(cache_for(kind, setup)),
        ..PlayOptions::default()
    };
    let realtime = run_once(gpu, setup, &base)?;
    let prerolled = run_once(
        gpu,
        setup,
        &PlayOptions {
            preroll: Some(Preroll::All),
            ..base.clone()
        },
    )?;
    // The same looped run with the GPU tier holding the whole sequence.
    let tier = run_once(
        gpu,
        setup,
        &PlayOptions {
            gpu_cache_bytes: Some(texture_bytes(kind, setup)),
            ..base.clone()
        },
    )?;
    let every = run_once(
        gpu,
        setup,
        &PlayOptions {
            mode: Mode::EveryFrame,
            looped: false,
            frames: Some(u64::from(setup.length)),
            ..base.clone()
        },
    )?;
    let (ours_ms, crate_ms) = decode_side_by_side(dir, kind, setup)?;
    let later = realtime.passes.iter().skip(1);
    Ok(Row {
        kind,
        texture: format!("{:?}", realtime.format.texture),
        first_pass: realtime.passes.first().map_or(0, |p| p.missed),
        later_passes: later.clone().map(|p| p.missed).sum(),
        later_frames: later.map(|p| p.frames).sum(),
        prerolled_missed: prerolled.passes.iter().map(|p| p.missed).sum(),
        prerolled_frames: prerolled.passes.iter().map(|p| p.frames).sum(),
        tier_later: tier.passes.iter().skip(1).map(|p| p.missed).sum(),
        tier_later_frames: tier.passes.iter().skip(1).map(|p| p.frames).sum(),
        tier_uploads: tier.frames.pushed,
        every_frame_fps: every.achieved_fps,
        ours_ms,
        crate_ms,
    })
}

fn cache_for(kind: Kind, setup: &Setup<'_>) -> u64 {
    let bytes_per_pixel = match kind {
        Kind::Png8 => 4,
        Kind::Png16 | Kind::ExrHalfZip | Kind::ExrHalfPiz => 8,
        Kind::ExrFloat => 12,
    };
    let sequence = u64::from(setup.size.0)
        * u64::from(setup.size.1)
        * bytes_per_pixel
        * u64::from(setup.length);
    let half_ram = stagehand_play::cache::total_memory().map_or(u64::MAX, |r| r / 2);
    (sequence + (64 << 20)).min(half_ram)
}

/// Bytes of the whole sequence as textures (the GPU tier's budget).
fn texture_bytes(kind: Kind, setup: &Setup<'_>) -> u64 {
    let texel = match kind {
        Kind::Png8 => 4,
        _ => 8,
    };
    u64::from(setup.size.0) * u64::from(setup.size.1) * texel * u64::from(setup.length) + (64 << 20)
}

fn run_once(
    gpu: &Arc<Gpu>,
    setup: &Setup<'_>,
    options: &PlayOptions,
) -> Result<PlaySummary, Failure> {
    let engine = UploadEngine::new(Arc::clone(gpu), engine_config(setup.threads))
        .map_err(stagehand_play::PlayError::from)?;
    Ok(play(gpu, &engine, options, |_| ControlFlow::Continue(()))?)
}

/// Median milliseconds per file of our decode and the crate's own, one
/// thread each, the two interleaved file by file.
fn decode_side_by_side(dir: &Path, kind: Kind, setup: &Setup<'_>) -> Result<(f64, f64), Failure> {
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let files = setup.decode_files.min(setup.length);
    for i in 0..files {
        let path = testdata::file(dir, kind, i);
        let t = Instant::now();
        let frame = stagehand_play::source::decode(&path)?;
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        drop(frame);
        let t = Instant::now();
        testdata::crate_decode(&path)?;
        theirs.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok((median(&mut ours), median(&mut theirs)))
}

fn print_table(rows: &[Row]) -> Result<(), Failure> {
    let mut text = String::from(
        "\nsequence        texture        first pass  later passes  preroll all  gpu tier: later  every-frame   decode ms/frame (1 thread)\n\
         \x20                              missed      missed        missed       missed, uploads  fps           ours    crate's  crate/ours\n",
    );
    for r in rows {
        text += &format!(
            "{:<15} {:<14} {:>10}  {:>7} / {:<4} {:>6} / {:<4} {:>5} / {:<4} {:>4} {:>8.2}    {:>7.1}  {:>8.1}  {:>9.2}\n",
            r.kind.name(),
            r.texture,
            r.first_pass,
            r.later_passes,
            r.later_frames,
            r.prerolled_missed,
            r.prerolled_frames,
            r.tier_later,
            r.tier_later_frames,
            r.tier_uploads,
            r.every_frame_fps,
            r.ours_ms,
            r.crate_ms,
            r.crate_ms / r.ours_ms,
        );
    }
    text += "\nmissed: frames not shown (dropped or never pushed), realtime mode, looped; later passes and preroll all: missed / frames.\n\
             gpu tier: the looped run with --gpu-cache holding the sequence; uploads: frames pushed in the whole run.\n\
             every-frame: frames shown per second of a pass that never drops (decode-bound).\n\
             crate/ours: the crate's own decode time over ours (>= 1: ours is as fast or faster).";
    output::println(&text)?;
    Ok(())
}
