//! Where frames come from: a folder of images decoded on a pool of threads,
//! or synthetic frames generated in place.

use super::natural::natural_cmp;
use crate::PlayError;
use bytes::Bytes;
use std::path::{Path, PathBuf};

/// Image files in `dir`, in natural order.
pub fn list_frames(dir: &Path) -> Result<Vec<PathBuf>, PlayError> {
    let entries = std::fs::read_dir(dir).map_err(|e| PlayError::Io {
        path: dir.to_owned(),
        reason: e.to_string(),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let ext = p
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            matches!(ext.as_deref(), Some("png" | "jpg" | "jpeg"))
        })
        .collect();
    files.sort_by(|a, b| {
        natural_cmp(
            &a.file_name().unwrap_or_default().to_string_lossy(),
            &b.file_name().unwrap_or_default().to_string_lossy(),
        )
    });
    if files.is_empty() {
        return Err(PlayError::NoFrames(dir.to_owned()));
    }
    Ok(files)
}

/// Decodes one image to tightly packed RGBA8 (16-bit images are reduced to
/// 8 bits), checking its size.
pub fn decode(path: &Path, expected: Option<(u32, u32)>) -> Result<(u32, u32, Bytes), PlayError> {
    let image = image::open(path).map_err(|e| PlayError::Decode {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let rgba = image.into_rgba8();
    let size = rgba.dimensions();
    if let Some(want) = expected.filter(|&w| w != size) {
        return Err(PlayError::SizeMismatch {
            path: path.to_owned(),
            expected: want,
            got: size,
        });
    }
    Ok((size.0, size.1, Bytes::from(rgba.into_raw())))
}

/// A decoded frame, or why it could not be.
pub type Decoded = (u64, Result<Bytes, PlayError>);

/// Starts `threads` decoders over `files` (repeated `rounds` times); frame
/// `k` goes to thread `k % threads`. Each sends what it decodes to `tx`,
/// bounded so decoding runs at most a few frames ahead.
pub fn spawn_decoders(
    files: Vec<PathBuf>,
    rounds: u64,
    threads: usize,
    size: (u32, u32),
    tx: crossbeam_channel::Sender<Decoded>,
    decode_nanos: std::sync::Arc<std::sync::atomic::AtomicU64>,
    timeline: Option<std::sync::Arc<stagehand_gpu::diag::Timeline>>,
) -> Vec<std::thread::JoinHandle<()>> {
    let files = std::sync::Arc::new(files);
    let total = files.len() as u64 * rounds;
    (0..threads.max(1))
        .map(|id| {
            let timeline = timeline.clone();
            let (files, tx, nanos) = (
                std::sync::Arc::clone(&files),
                tx.clone(),
                std::sync::Arc::clone(&decode_nanos),
            );
            std::thread::spawn(move || {
                for k in (id as u64..total).step_by(threads.max(1)) {
                    let start = std::time::Instant::now();
                    let frame = decode(&files[(k % files.len() as u64) as usize], Some(size))
                        .map(|(_, _, b)| b);
                    nanos.fetch_add(
                        start.elapsed().as_nanos() as u64,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                    if let Some(timeline) = &timeline {
                        timeline.span(
                            format!("decode {id}"),
                            "decode",
                            start,
                            std::time::Instant::now(),
                        );
                    }
                    if tx.send((k, frame)).is_err() {
                        return;
                    }
                }
            })
        })
        .collect()
}
