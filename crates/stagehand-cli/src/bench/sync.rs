//! `stagehand bench sync`: a movie whose sound clicks once a second,
//! written by the `ffmpeg` command, played in realtime with its sound on
//! the null sink (the device is left out, so the run measures the player
//! and not a sound card's buffer), at the movie's rate into the player's
//! default output size. Each presented frame's drift from the sound's
//! clock is grouped into tenths of the run: drift that grows shows as
//! tenths that get worse from the first to the last.

use super::stats::median;
use crate::{Failure, output};
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::audio::{AudioOptions, AudioOut};
use stagehand_play::{Mode, PlayOptions, engine_config, play};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Frames per second of the movie.
const FPS: u32 = 24;
/// Groups the run is split into.
const TENTHS: usize = 10;

/// Writes (or finds from an earlier run) the clicking movie of `seconds`
/// in `dir`.
pub(super) fn clicking_movie(dir: &Path, seconds: u32) -> Result<PathBuf, Failure> {
    let path = dir.join(format!("clicks-{seconds}s.mp4"));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let partial = dir.join(format!("clicks-{seconds}s.partial.mp4"));
    let video = format!("testsrc2=size=320x240:rate={FPS}");
    let audio = "aevalsrc='if(lt(mod(t,1),0.005),0.9,0)':s=48000";
    let done = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i", &video])
        .args(["-f", "lavfi", "-i", audio, "-t", &seconds.to_string()])
        .args(["-c:v", "libx264", "-preset", "veryfast", "-g", "24"])
        .args(["-c:a", "aac"])
        .arg(&partial)
        .output()
        .map_err(|e| {
            format!("bench sync writes its movie with the ffmpeg command, which did not run: {e}")
        })?;
    if !done.status.success() {
        return Err(format!(
            "ffmpeg could not write the movie: {}",
            String::from_utf8_lossy(&done.stderr).trim()
        )
        .into());
    }
    std::fs::rename(&partial, &path)
        .map_err(|e| format!("cannot rename {}: {e}", partial.display()))?;
    Ok(path)
}

/// |drift| percentiles of one tenth of the run.
pub(super) struct Tenth {
    from: f64,
    to: f64,
    frames: usize,
    pub(super) p50: f64,
    p99: f64,
    max: f64,
}

/// The drifts (render tick, milliseconds) grouped into tenths of `ticks`.
pub(super) fn tenths(drift: &[(u64, f64)], ticks: u64) -> Vec<Tenth> {
    let per = ticks.div_ceil(TENTHS as u64).max(1);
    (0..TENTHS as u64)
        .map(|i| {
            let mut d: Vec<f64> = drift
                .iter()
                .filter(|(t, _)| t / per == i)
                .map(|(_, ms)| ms.abs())
                .collect();
            d.sort_by(f64::total_cmp);
            let at = |q: usize| {
                d.get((d.len() * q / 100).min(d.len().saturating_sub(1)))
                    .copied()
                    .unwrap_or(0.0)
            };
            Tenth {
                from: (i * per) as f64 / f64::from(FPS),
                to: (((i + 1) * per).min(ticks)) as f64 / f64::from(FPS),
                frames: d.len(),
                p50: median(&mut d.clone()),
                p99: at(99),
                max: d.last().copied().unwrap_or(0.0),
            }
        })
        .filter(|t| t.to > t.from)
        .collect()
}

/// Plays the movie of `seconds` (written in `dir`) and prints the table.
pub fn run(gpu: Arc<Gpu>, dir: &Path, seconds: u32) -> Result<(), Failure> {
    let movie = clicking_movie(dir, seconds)?;
    output::println(&format!(
        "{} ({seconds} s, 320x240 H.264 at {FPS} fps, a click each second), realtime, null sink, 1920x1080 out\n",
        movie.display()
    ))?;
    let options = PlayOptions {
        source: Some(movie),
        fps: f64::from(FPS),
        mode: Mode::Realtime,
        audio: AudioOptions {
            out: AudioOut::Null,
            ..Default::default()
        },
        ..PlayOptions::default()
    };
    let engine = UploadEngine::new(Arc::clone(&gpu), engine_config(2))
        .map_err(stagehand_play::PlayError::from)?;
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(()))?;
    let Some(audio) = summary.audio.as_ref().filter(|a| a.played) else {
        return Err("the movie's sound did not play: no clock to measure against".into());
    };
    let rows = tenths(&audio.drift_by_tick, summary.ticks);
    let mut text = String::from("seconds        frames   |drift| ms: p50     p99     max\n");
    for r in &rows {
        text += &format!(
            "{:>5.0}-{:<5.0}  {:>8}   {:>14.2} {:>7.2} {:>7.2}\n",
            r.from, r.to, r.frames, r.p50, r.p99, r.max
        );
    }
    let (first, last) = (rows.first(), rows.last());
    if let (Some(first), Some(last)) = (first, last) {
        text += &format!(
            "\nwhole run: {} of {} ticks measured, |drift| p50 {:.2} p99 {:.2} max {:.2} ms; {} skipped to hold sync; {} sound underruns\n\
             last tenth against the first: p50 {:+.2} ms, p99 {:+.2} ms (growth shows as a rise)\n\
             bounds the tests hold: p99 under half a frame ({:.1} ms), max under a frame ({:.1} ms)",
            audio.measured,
            summary.ticks,
            audio.drift.p50,
            audio.drift.p99,
            audio.drift.max,
            audio.skipped,
            audio.underruns,
            last.p50 - first.p50,
            last.p99 - first.p99,
            500.0 / f64::from(FPS),
            1000.0 / f64::from(FPS),
        );
    }
    output::println(&text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_split_the_ticks_and_take_absolute_drift() {
        // 100 ticks: tenths of 10; tick 95's drift is -30 ms.
        let mut drift: Vec<(u64, f64)> = (0..100).map(|t| (t, 1.0)).collect();
        drift[95].1 = -30.0;
        let rows = tenths(&drift, 100);
        assert_eq!(rows.len(), 10);
        assert!(rows.iter().all(|r| r.frames == 10));
        assert_eq!(rows[0].max, 1.0);
        assert_eq!(rows[9].max, 30.0, "absolute values");
        assert_eq!(rows[9].p50, 1.0);
        assert!((rows[9].to - 100.0 / 24.0).abs() < 1e-9);
        // Fewer ticks than tenths: empty tenths are left out.
        assert_eq!(tenths(&[(0, 2.0)], 3).len(), 3);
    }
}
