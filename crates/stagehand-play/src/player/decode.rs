//! The decode threads: each claims the most useful position the frame
//! cache wants, decodes it into a recycled buffer, turns it into texels of
//! the texture (so the upload only copies), and hands it in.

use super::Shared;
use crate::PlayError;
use crate::cache::FrameCache;
use crate::cache::buffers::FrameBuffers;
use crate::convert;
use crate::source::{Frame, Frames};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

/// Starts `threads` decoders, until the cache closes.
pub(super) fn spawn_decoders(
    frames: &Arc<dyn Frames>,
    cache: &Arc<FrameCache>,
    threads: usize,
    shared: &Arc<Shared>,
) -> Result<Vec<JoinHandle<()>>, PlayError> {
    let mut handles = Vec::with_capacity(threads);
    for id in 0..threads {
        let (frames, cache2, shared) = (Arc::clone(frames), Arc::clone(cache), Arc::clone(shared));
        let spawned = std::thread::Builder::new()
            .name(format!("decode {id}"))
            .spawn(move || decode_loop(id, frames.as_ref(), &cache2, &shared));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                // The decoders already started stop, and let their frames go.
                cache.close();
                for h in handles {
                    let _ = h.join();
                }
                return Err(PlayError::Spawn {
                    thread: "decode",
                    cause: e,
                });
            }
        }
    }
    Ok(handles)
}

/// Position `pos` of `frames` as texels of `texture`, in buffers from
/// `buffers`: what the cache keeps and the upload copies.
pub(crate) fn decode_texels(
    frames: &dyn Frames,
    pos: usize,
    texture: wgpu::TextureFormat,
    buffers: &Arc<FrameBuffers>,
) -> Result<Frame, PlayError> {
    let decoded = frames.decode(pos, buffers)?;
    convert::to_texture(decoded, texture, buffers)
}

/// One decoder, until the cache closes. A decoder that panics on a frame
/// hands in an error for it, so nobody waits for that frame.
fn decode_loop(id: usize, frames: &dyn Frames, cache: &FrameCache, shared: &Shared) {
    // Decoding ahead must not starve the uploads of frames already
    // decoded: decoders run at the transfer workers' priority, below the
    // render thread (a refusal by the OS leaves them where they are).
    let _ = stagehand_gpu::upload::set_priority(stagehand_gpu::upload::ThreadPriority::Low);
    while let Some(pos) = cache.claim() {
        let start = Instant::now();
        let frame = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decode_texels(frames, pos, shared.texture, &shared.buffers)
        }))
        .unwrap_or_else(|panic| {
            Err(PlayError::panicked(
                format!("decoder on frame {}", frames.number(pos)),
                panic.as_ref(),
            ))
        });
        let end = Instant::now();
        let c = &shared.counters;
        c.decode_nanos
            .fetch_add((end - start).as_nanos() as u64, Ordering::Relaxed);
        if let Ok(f) = &frame {
            c.decoded_bytes
                .fetch_add(f.info.bytes() as u64, Ordering::Relaxed);
            c.decoded_frames.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(t) = &shared.timeline {
            t.span(format!("decode {id}"), "decode", start, end);
        }
        cache.complete(pos, frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{FrameInfo, SampleType, Sequence, SequenceFrames};

    #[test]
    fn an_rgb_sequence_is_cached_as_rgba_texels_the_upload_copies() {
        let dir = std::env::temp_dir().join(format!("stagehand-texels-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (w, h) = (5u32, 3u32);
        let rgb: Vec<u8> = (0..w * h * 3).map(|v| v as u8).collect();
        ::image::RgbImage::from_raw(w, h, rgb.clone())
            .unwrap()
            .save(dir.join("f.0001.png"))
            .unwrap();
        let sequence = Arc::new(Sequence::open(&dir, None).unwrap());
        let info = FrameInfo {
            width: w,
            height: h,
            channels: 3,
            sample: SampleType::U8,
            yuv: None,
        };
        let frames = SequenceFrames::new(sequence, info);
        let buffers = FrameBuffers::new();
        let texture = wgpu::TextureFormat::Rgba8Unorm;
        let frame = decode_texels(&frames, 0, texture, &buffers).unwrap();
        assert!(crate::convert::format::is_texels(&frame.info, texture));
        let want: Vec<u8> = rgb
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect();
        assert_eq!(&frame.data[..], &want[..]);
        // The decoded RGB buffer went back, and serves the next decode.
        drop(frame);
        let again = decode_texels(&frames, 0, texture, &buffers).unwrap();
        assert_eq!(&again.data[..], &want[..]);
        let stats = buffers.stats();
        assert_eq!(stats.misses, 2, "one RGB and one RGBA buffer: {stats:?}");
        assert_eq!(stats.hits, 2, "both reused by the second decode: {stats:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
