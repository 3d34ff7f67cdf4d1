//! Audio decoded by FFmpeg from a movie's best audio stream or a sound
//! file (WAV, FLAC, AAC, ...), resampled to interleaved `f32` at the
//! sink's rate and channel count, and pushed into the ring from a thread
//! of its own.

use super::ring::Ring;
use crate::PlayError;
use ffmpeg_next as ffmpeg;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An audio stream, checked: it opens and its decoder exists.
#[derive(Clone, Debug)]
pub struct AudioSource {
    /// The file.
    pub path: PathBuf,
    /// Its sample rate.
    pub rate: u32,
    /// Its channels.
    pub channels: u16,
    /// The codec, as FFmpeg names it.
    pub codec: String,
    /// Seconds of the stream's first sample on the file's timeline.
    pub start: f64,
}

fn decode_error(path: &Path, reason: String) -> PlayError {
    PlayError::Decode {
        path: path.to_owned(),
        reason,
    }
}

impl AudioSource {
    /// Opens `path`'s best audio stream. `Ok(None)` when it has none.
    pub fn probe(path: &Path) -> Result<Option<Self>, PlayError> {
        crate::source::movie::init();
        if let Err(e) = std::fs::File::open(path) {
            return Err(PlayError::Io {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
        let input = ffmpeg::format::input(path)
            .map_err(|e| decode_error(path, format!("no audio FFmpeg reads ({e})")))?;
        let Some(stream) = input.streams().best(ffmpeg::media::Type::Audio) else {
            return Ok(None);
        };
        let start = match stream.start_time() {
            t if t == ffmpeg::ffi::AV_NOPTS_VALUE => 0.0,
            t => t as f64 * f64::from(stream.time_base()),
        };
        let context = ffmpeg::codec::Context::from_parameters(stream.parameters())
            .map_err(|e| decode_error(path, e.to_string()))?;
        let codec = format!("{:?}", context.id()).to_ascii_lowercase();
        let decoder = context
            .decoder()
            .audio()
            .map_err(|e| PlayError::Unsupported {
                path: path.to_owned(),
                reason: format!("no decoder for its audio codec {codec} ({e})"),
            })?;
        if decoder.rate() == 0 || decoder.channels() == 0 {
            return Err(decode_error(
                path,
                "its audio stream has no rate or channels".into(),
            ));
        }
        Ok(Some(Self {
            path: path.to_owned(),
            rate: decoder.rate(),
            channels: decoder.channels(),
            codec,
            start,
        }))
    }
}

/// Pushes `samples` of silence in pieces (a long gap is paced by the sink,
/// never held in memory at once); `false` once the ring is closed or the
/// generation has changed.
fn push_silence(ring: &Ring, mut samples: usize, generation: u64) -> bool {
    let piece = [0.0f32; 4096];
    while samples > 0 {
        let n = samples.min(piece.len());
        if !ring.push(&piece[..n], generation) {
            return false;
        }
        samples -= n;
    }
    true
}

/// Decodes `source` from `from` seconds of its timeline (earlier samples
/// are dropped; a time before its start is padded with silence) into
/// `ring` at `rate` and `channels`, for `generation`, until the ring
/// closes, the generation changes or the stream ends.
pub(super) fn run(
    source: &AudioSource,
    from: f64,
    rate: u32,
    channels: u16,
    ring: &Arc<Ring>,
    generation: u64,
) -> Result<(), String> {
    let mut input = ffmpeg::format::input(&source.path).map_err(|e| e.to_string())?;
    let stream = input
        .streams()
        .best(ffmpeg::media::Type::Audio)
        .ok_or("the audio stream went away")?;
    let index = stream.index();
    let time_base = f64::from(stream.time_base());
    let context =
        ffmpeg::codec::Context::from_parameters(stream.parameters()).map_err(|e| e.to_string())?;
    let mut decoder = context.decoder().audio().map_err(|e| e.to_string())?;
    if from > source.start {
        let ts = (from * f64::from(ffmpeg::ffi::AV_TIME_BASE)) as i64;
        // To the packet at or before `from`; samples before it are cut below.
        let _ = input.seek(ts, ..ts);
    }
    let layout = |l: ffmpeg::ChannelLayout, n: u16| {
        if l.is_empty() {
            ffmpeg::ChannelLayout::default(i32::from(n))
        } else {
            l
        }
    };
    let out_layout = ffmpeg::ChannelLayout::default(i32::from(channels));
    let mut resampler: Option<ffmpeg::software::resampling::Context> = None;
    let step = 1.0 / f64::from(rate);
    // Whether the stream has been placed on the timeline.
    let mut placed = false;
    let mut frame = ffmpeg::frame::Audio::empty();
    let mut packet = ffmpeg::Packet::empty();
    let mut ended = false;
    let mut invalid = 0;
    loop {
        match decoder.receive_frame(&mut frame) {
            Ok(()) => {
                let pts = frame.pts().map(|p| p as f64 * time_base);
                // Some decoders (PCM in WAV) leave the layout unset: give the
                // frame the one the resampler is told, or it refuses the
                // frame as changed.
                if frame.channel_layout().is_empty() {
                    let l = layout(frame.channel_layout(), frame.channels());
                    frame.set_channel_layout(l);
                }
                let r = match &mut resampler {
                    Some(r) => r,
                    None => resampler.insert(
                        ffmpeg::software::resampling::Context::get(
                            frame.format(),
                            layout(frame.channel_layout(), frame.channels()),
                            frame.rate(),
                            ffmpeg::format::Sample::F32(ffmpeg::format::sample::Type::Packed),
                            out_layout,
                            rate,
                        )
                        .map_err(|e| format!("cannot resample its audio: {e}"))?,
                    ),
                };
                // Room for all of it at the new rate, and what the
                // resampler holds back from the last frame.
                let room = (frame.samples() as u64 * u64::from(rate))
                    .div_ceil(u64::from(frame.rate().max(1))) as usize
                    + 1024;
                let mut out = ffmpeg::frame::Audio::new(
                    ffmpeg::format::Sample::F32(ffmpeg::format::sample::Type::Packed),
                    room,
                    out_layout,
                );
                out.set_rate(rate);
                r.run(&frame, &mut out).map_err(|e| e.to_string())?;
                let n = out.samples() * usize::from(channels);
                let bytes = &out.data(0)[..n * 4];
                let samples: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                // The first frame out places the stream on the timeline
                // (the seek landed at or before `from`): cut what lies
                // before `from`, or pad with silence up to the frame. From
                // then on every sample goes out, one after another.
                let mut kept = &samples[..];
                if !placed {
                    let first = pts.unwrap_or(from);
                    // `as` saturates: a wild timestamp gives a long count,
                    // never an overflow.
                    let frames = (((from - first).abs() / step).round() as usize)
                        .saturating_mul(usize::from(channels));
                    if first < from {
                        if frames >= samples.len() {
                            continue;
                        }
                        kept = &samples[frames..];
                    } else if !push_silence(ring, frames, generation) {
                        return Ok(());
                    }
                    placed = true;
                }
                if !ring.push(kept, generation) {
                    return Ok(());
                }
                continue;
            }
            Err(ffmpeg::Error::Eof) => {
                ring.end(generation);
                return Ok(());
            }
            Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::error::EAGAIN => {}
            Err(e) => return Err(format!("decoding its audio failed: {e}")),
        }
        if ended {
            ring.end(generation);
            return Ok(());
        }
        if ring.is_closed() || ring.generation() != generation {
            return Ok(());
        }
        match packet.read(&mut input) {
            Ok(()) if packet.stream() == index => {
                // A damaged packet is left out: a moment of silence.
                let _ = decoder.send_packet(&packet);
            }
            Ok(()) => invalid = 0,
            // Bad packets: the demuxer resyncs past a few; a stream of
            // nothing else is the end.
            Err(ffmpeg::Error::InvalidData) if invalid < super::MAX_INVALID_PACKETS => invalid += 1,
            Err(_) => {
                ended = true;
                let _ = decoder.send_eof();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Where the clicks are in `samples` (mono): the first loud sample of
    /// each loud run, in seconds at `rate`.
    fn clicks(samples: &[f32], rate: u32) -> Vec<f64> {
        let mut out = Vec::new();
        let mut quiet = true;
        for (i, s) in samples.iter().enumerate() {
            if quiet && s.abs() > 0.3 {
                out.push(i as f64 / f64::from(rate));
                quiet = false;
            } else if s.abs() < 0.05 {
                quiet = true;
            }
        }
        out
    }

    #[test]
    fn decoded_audio_keeps_its_timeline_from_the_start_and_after_a_seek() {
        let dir = std::env::temp_dir().join(format!("stagehand-audio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clicks.wav");
        // A 10 ms click at the start of every second, at 44.1 kHz: the
        // output below is resampled to 48 kHz.
        let made = Command::new("ffmpeg")
            .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
            .arg("aevalsrc='if(lt(mod(t\\,1)\\,0.01)\\,0.9\\,0)':s=44100:d=5")
            .arg(&path)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED: no ffmpeg command to write a test sound with");
            return;
        }
        let source = AudioSource::probe(&path).unwrap().unwrap();
        assert_eq!((source.rate, source.channels), (44100, 1));
        for from in [0.0, 2.5, -0.5] {
            let ring = Arc::new(Ring::new(48_000 * 10));
            run(&source, from, 48_000, 1, &ring, ring.generation()).unwrap();
            let mut samples = vec![0.0; 48_000 * 6];
            ring.pop_into(&mut samples);
            let got = clicks(&samples, 48_000);
            // Click k (at k seconds) plays `k - from` seconds in.
            let want: Vec<f64> = (0..5)
                .map(|k| f64::from(k) - from)
                .filter(|&t| t >= 0.0)
                .collect();
            assert_eq!(got.len(), want.len(), "from {from}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 0.002, "from {from}: click at {g}, want {w}");
            }
        }
    }
}
