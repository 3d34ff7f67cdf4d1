//! What the movie and sound tests share: movies written by the `ffmpeg`
//! command, the options they play with, and one playback at a time.

use stagehand_gpu::upload::UploadEngine;
use stagehand_play::{Mode, PlayError, PlayOptions, PlaySummary, engine_config, play};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

pub const FPS: f64 = 24.0;

pub fn has_ffmpeg(test: &str) -> bool {
    let ok = Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED {test}: no ffmpeg command to write test movies with");
    }
    ok
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-movie-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `ffmpeg` with the arguments in `line` (split at spaces; none of
/// ours holds one) writing `out`.
pub fn ffmpeg(line: &str, out: &Path) {
    let done = Command::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(line.split_whitespace())
        .arg(out)
        .output()
        .expect("ffmpeg runs");
    assert!(
        done.status.success(),
        "ffmpeg {line} {}: {}",
        out.display(),
        String::from_utf8_lossy(&done.stderr)
    );
}

/// The picture, in code values at 8 bits times `scale`: a strip on top
/// (an eighth of the height) of luma 16 + 4n for frame n, neutral chroma;
/// below it 4 x 2 blocks of flat, different Y'CbCr.
pub fn pattern(scale: u32) -> String {
    let s = scale;
    format!(
        "geq=lum='if(lt(Y,H/8),{s}*(16+4*N),{s}*(40+40*floor(X*4/W)+60*floor(Y*2/H)))'\
         :cb='if(lt(Y,H/8),{s}*128,{s}*(60+40*floor(X*4/W)))'\
         :cr='if(lt(Y,H/8),{s}*128,{s}*(200-50*floor(Y*2/H)-10*floor(X*4/W)))'"
    )
}

/// FFmpeg's own decode of `path`, raw in `pix_fmt`, with `options` given
/// to the output (a frame's `select`, the converter's flags).
#[allow(dead_code)] // the sound tests decode no pictures
pub fn ffmpeg_raw(path: &Path, pix_fmt: &str, options: &[&str]) -> Vec<u8> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(options)
        .args(["-pix_fmt", pix_fmt, "-f", "rawvideo", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Whether pixel (x, y) of a `w` x `h` picture is more than 4 pixels from
/// every edge between blocks of the [`pattern`] (at an odd size an edge
/// falls a pixel after `w / 4` or `h / 8`: 4 on either side covers it).
fn inside_a_block(x: u32, y: u32, w: u32, h: u32) -> bool {
    let near = |v: u32, edge: u32| v.abs_diff(edge) <= 4;
    let columns = (1..4).map(|k| k * w / 4);
    !columns.into_iter().any(|e| near(x, e)) && !near(y, h / 8) && !near(y, h / 2)
}

/// How far a drawn picture (`rgba`, `size`) is from a reference (`rgb`,
/// tightly packed) inside the [`pattern`]'s blocks: the largest difference
/// of a channel, where it is, and how many pixels were compared.
#[allow(dead_code)] // the sound tests compare no pictures
pub fn worst_inside_blocks(rgba: &[u8], rgb: &[u8], (w, h): (u32, u32)) -> ((u8, u32, u32), usize) {
    assert_eq!(rgb.len(), (w * h * 3) as usize);
    let mut worst = (0, 0, 0);
    let mut compared = 0;
    for y in 0..h {
        for x in 0..w {
            if !inside_a_block(x, y, w, h) {
                continue;
            }
            let i = (y * w + x) as usize;
            for c in 0..3 {
                let d = rgba[i * 4 + c].abs_diff(rgb[i * 3 + c]);
                if d > worst.0 {
                    worst = (d, x, y);
                }
            }
            compared += 1;
        }
    }
    (worst, compared)
}

/// A 2-second movie of `size` drawn in `pix_fmt`, encoded with the
/// arguments in `encode` (codec, tags, an output pixel format).
pub fn movie(
    dir: &Path,
    name: &str,
    size: &str,
    pix_fmt: &str,
    scale: u32,
    encode: &str,
) -> PathBuf {
    let path = dir.join(name);
    let source = format!(
        "color=black:size={size}:rate={FPS},format={pix_fmt},{}",
        pattern(scale)
    );
    ffmpeg(
        &format!("-f lavfi -i {source} -frames:v 48 {encode}"),
        &path,
    );
    path
}

pub fn gpu_and_engine(features: wgpu::Features) -> (Arc<stagehand_gpu::Gpu>, UploadEngine) {
    let gpu = Arc::new(
        stagehand_gpu::Gpu::open(&stagehand_gpu::GpuOptions {
            wanted_features: features,
            ..Default::default()
        })
        .expect("tests need a GPU adapter"),
    );
    let engine = UploadEngine::new(gpu.clone(), engine_config(2)).unwrap();
    (gpu, engine)
}

pub fn options(path: &Path, size: (u32, u32), saves: Vec<u64>) -> PlayOptions {
    PlayOptions {
        source: Some(path.to_owned()),
        fps: FPS,
        output_size: size,
        mode: Mode::EveryFrame,
        save_ticks: saves,
        ..PlayOptions::default()
    }
}

pub fn run(options: &PlayOptions) -> Result<PlaySummary, PlayError> {
    run_with(options, stagehand_play::wanted_features())
}

/// One playback at a time: the sync tests measure milliseconds, and the
/// test harness would otherwise run this file's playbacks side by side on
/// a machine with two cores.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn run_with(options: &PlayOptions, features: wgpu::Features) -> Result<PlaySummary, PlayError> {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (gpu, engine) = gpu_and_engine(features);
    play(&gpu, &engine, options, |_| ControlFlow::Continue(()))
}
