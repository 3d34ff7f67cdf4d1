//! Audio decoded by FFmpeg from a movie's best audio stream or a sound
//! file (WAV, FLAC, AAC, ...), resampled to interleaved `f32` at the
//! sink's rate and channel count, and pushed into the ring from a thread
//! of its own.

use super::SoundError;
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
        let (rate, channels) = (decoder.rate(), decoder.channels());
        check_bounds(path, rate, channels)?;
        Ok(Some(Self {
            path: path.to_owned(),
            rate,
            channels,
            codec,
            start,
        }))
    }
}

/// Refuses a rate or a channel count outside what the player takes,
/// before anything is sized by them.
fn check_bounds(path: &Path, rate: u32, channels: u16) -> Result<(), PlayError> {
    let refuse = |reason| {
        Err(PlayError::Unsupported {
            path: path.to_owned(),
            reason,
        })
    };
    if !(super::MIN_RATE..=super::MAX_RATE).contains(&rate) {
        return refuse(format!(
            "its audio is at {rate} Hz; the player takes {} to {} Hz",
            super::MIN_RATE,
            super::MAX_RATE
        ));
    }
    if !(1..=super::MAX_CHANNELS).contains(&channels) {
        return refuse(format!(
            "its audio has {channels} channels; the player takes 1 to {}",
            super::MAX_CHANNELS
        ));
    }
    Ok(())
}

/// A channel layout for `n` channels: FFmpeg's default for that count,
/// else the first `n` channels of its order (FFmpeg has no default for 9,
/// 11, 13 to 15, ...), so every count up to [`super::MAX_CHANNELS`], and a
/// device's, can be resampled.
pub(super) fn layout_for(n: u16) -> Option<ffmpeg::ChannelLayout> {
    let default = ffmpeg::ChannelLayout::default(i32::from(n));
    if !default.is_empty() && default.channels() == i32::from(n) {
        return Some(default);
    }
    // FFmpeg names 18 channels in order, bits 0 to 17.
    let first = ffmpeg::ChannelLayout::from_bits_truncate((1u64 << n.min(18)) - 1);
    ((1..=18).contains(&n) && first.channels() == i32::from(n)).then_some(first)
}

/// What a resampler was built for: an input frame's format, layout and
/// rate. A stream that changes them midway (a broadcast, concatenated
/// pieces) gets a new resampler.
type ResamplerInput = (ffmpeg::format::Sample, ffmpeg::ChannelLayout, u32);

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

/// An audio stream opened for decoding: the demuxer, the stream's index
/// and time base, and its decoder.
struct Opened {
    input: ffmpeg::format::context::Input,
    index: usize,
    time_base: f64,
    decoder: ffmpeg::decoder::Audio,
}

/// Opens `source`'s audio stream and seeks it to the packet at or before
/// `from` seconds.
fn open_at(source: &AudioSource, from: f64) -> Result<Opened, SoundError> {
    let open = |e: ffmpeg::Error| SoundError::Open(e.to_string());
    let mut input = ffmpeg::format::input(&source.path).map_err(open)?;
    let stream = input
        .streams()
        .best(ffmpeg::media::Type::Audio)
        .ok_or_else(|| SoundError::Open("the audio stream went away".into()))?;
    let index = stream.index();
    let time_base = f64::from(stream.time_base());
    let context = ffmpeg::codec::Context::from_parameters(stream.parameters()).map_err(open)?;
    let decoder = context.decoder().audio().map_err(open)?;
    if from > source.start {
        let ts = (from * f64::from(ffmpeg::ffi::AV_TIME_BASE)) as i64;
        // To the packet at or before `from`; samples before it are cut later.
        let _ = input.seek(ts, ..ts);
    }
    Ok(Opened {
        input,
        index,
        time_base,
        decoder,
    })
}

/// Decoded frames into packed `f32` samples at the output's rate and
/// channels; the resampler is built anew when the input's format, layout
/// or rate changes midway.
struct Resample {
    built: Option<(ResamplerInput, ffmpeg::software::resampling::Context)>,
    layout: ffmpeg::ChannelLayout,
    rate: u32,
    channels: u16,
}

impl Resample {
    fn new(rate: u32, channels: u16) -> Result<Self, SoundError> {
        let layout = layout_for(channels).ok_or(SoundError::Layout(channels))?;
        Ok(Self {
            built: None,
            layout,
            rate,
            channels,
        })
    }

    /// `frame`'s samples at the output's rate and channels.
    fn convert(&mut self, frame: &mut ffmpeg::frame::Audio) -> Result<Vec<f32>, SoundError> {
        // Some decoders (PCM in WAV) leave the layout unset: give the
        // frame the one the resampler is told, or it refuses the frame as
        // changed.
        if frame.channel_layout().is_empty()
            && let Some(l) = layout_for(frame.channels())
        {
            frame.set_channel_layout(l);
        }
        let input: ResamplerInput = (frame.format(), frame.channel_layout(), frame.rate());
        if !(super::MIN_RATE..=super::MAX_RATE).contains(&input.2) {
            return Err(SoundError::RateChanged(input.2));
        }
        let packed = ffmpeg::format::Sample::F32(ffmpeg::format::sample::Type::Packed);
        let resampler = match &mut self.built {
            Some((built, r)) if *built == input => r,
            _ => {
                let r = ffmpeg::software::resampling::Context::get(
                    input.0,
                    input.1,
                    input.2,
                    packed,
                    self.layout,
                    self.rate,
                )
                .map_err(|e| SoundError::Resample(e.to_string()))?;
                &mut self.built.insert((input, r)).1
            }
        };
        // Room for all of it at the new rate, and what the resampler holds
        // back from the last frame.
        let room = (frame.samples() as u64 * u64::from(self.rate))
            .div_ceil(u64::from(frame.rate().max(1))) as usize
            + 1024;
        let mut out = ffmpeg::frame::Audio::new(packed, room, self.layout);
        out.set_rate(self.rate);
        resampler
            .run(frame, &mut out)
            .map_err(|e| SoundError::Resample(e.to_string()))?;
        let n = out.samples() * usize::from(self.channels);
        Ok(out.data(0)[..n * 4]
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// Where the stream's first samples go on the timeline: the first frame
/// out places it (the seek landed at or before `from`), cutting what lies
/// before `from` or padding with silence up to the frame; from then on
/// every sample goes out, one after another.
struct Placement {
    placed: bool,
    from: f64,
    /// Seconds a sample lasts.
    step: f64,
    channels: usize,
}

/// What to do with a frame's samples.
enum Place {
    /// Push the samples from this index on.
    From(usize),
    /// All of them lie before `from`: push nothing.
    Skip,
    /// The ring closed (or its generation changed) while padding.
    Closed,
}

impl Placement {
    fn place(&mut self, pts: Option<f64>, len: usize, ring: &Ring, generation: u64) -> Place {
        if self.placed {
            return Place::From(0);
        }
        let first = pts.unwrap_or(self.from);
        // `as` saturates: a wild timestamp gives a long count, never an
        // overflow.
        let samples = (((self.from - first).abs() / self.step).round() as usize)
            .saturating_mul(self.channels);
        if first < self.from {
            if samples >= len {
                return Place::Skip;
            }
            self.placed = true;
            return Place::From(samples);
        }
        if !push_silence(ring, samples, generation) {
            return Place::Closed;
        }
        self.placed = true;
        Place::From(0)
    }
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
) -> Result<(), SoundError> {
    let Opened {
        mut input,
        index,
        time_base,
        mut decoder,
    } = open_at(source, from)?;
    let mut resample = Resample::new(rate, channels)?;
    let mut placement = Placement {
        placed: false,
        from,
        step: 1.0 / f64::from(rate),
        channels: usize::from(channels),
    };
    let mut frame = ffmpeg::frame::Audio::empty();
    let mut ended = false;
    loop {
        match decoder.receive_frame(&mut frame) {
            Ok(()) => {
                let pts = frame.pts().map(|p| p as f64 * time_base);
                let samples = resample.convert(&mut frame)?;
                match placement.place(pts, samples.len(), ring, generation) {
                    Place::From(at) if !ring.push(&samples[at..], generation) => return Ok(()),
                    Place::From(_) | Place::Skip => {}
                    Place::Closed => return Ok(()),
                }
                continue;
            }
            Err(ffmpeg::Error::Eof) => {
                ring.end(generation);
                return Ok(());
            }
            Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::error::EAGAIN => {}
            Err(e) => return Err(SoundError::Decode(e.to_string())),
        }
        if ended {
            ring.end(generation);
            return Ok(());
        }
        if ring.is_closed() || ring.generation() != generation {
            return Ok(());
        }
        ended = !feed(&mut input, index, &mut decoder);
    }
}

/// Sends the decoder the stream's next packet; `false` (and the end of
/// stream sent) at its end, or at damage the demuxer could not get past.
/// A damaged packet is left out: a moment of silence.
fn feed(
    input: &mut ffmpeg::format::context::Input,
    index: usize,
    decoder: &mut ffmpeg::decoder::Audio,
) -> bool {
    match crate::source::movie::demux::next_packet(input, index) {
        Ok(packet) => {
            let _ = decoder.send_packet(&packet);
            true
        }
        Err(_) => {
            let _ = decoder.send_eof();
            false
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

    /// Probes a one-second WAV whose header says `rate` and `channels`.
    fn probe_wav(name: &str, rate: u32, channels: u16) -> Result<Option<AudioSource>, PlayError> {
        let path = super::super::fault::temp_dir(name).join("claims.wav");
        super::super::fault::write_wav(&path, rate, channels, 4096);
        AudioSource::probe(&path)
    }

    /// Asserts the probe refused the file as unsupported, saying `says`.
    fn assert_refused(probed: Result<Option<AudioSource>, PlayError>, says: &[&str]) {
        match probed {
            Err(e @ PlayError::Unsupported { .. }) => {
                let line = e.to_string();
                for s in says {
                    assert!(line.contains(s), "{line:?} does not say {s:?}");
                }
            }
            other => panic!("want Unsupported saying {says:?}, got {other:?}"),
        }
    }

    #[test]
    fn a_wav_claiming_2147483647_hz_is_refused_at_the_probe_naming_the_bound() {
        assert_refused(
            probe_wav("rate-max", 2_147_483_647, 2),
            &["2147483647 Hz", "768000 Hz"],
        );
    }

    #[test]
    fn a_wav_claiming_1_hz_is_refused_at_the_probe_naming_the_bound() {
        assert_refused(probe_wav("rate-1", 1, 2), &["at 1 Hz", "1000 to"]);
    }

    #[test]
    fn a_wav_claiming_40_channels_is_refused_at_the_probe() {
        assert_refused(probe_wav("channels-40", 48_000, 40), &["40 channels"]);
    }

    #[test]
    fn nine_channels_ffmpeg_has_no_default_layout_for_are_resampled() {
        let source = probe_wav("channels-9", 48_000, 9).unwrap().unwrap();
        assert_eq!(source.channels, 9);
        for out in [2, 9, 11] {
            let ring = Arc::new(Ring::new(48_000 * 11));
            run(&source, 0.0, 48_000, out, &ring, ring.generation()).unwrap();
            let mut samples = vec![0.0; 8192 * usize::from(out)];
            let missing = ring.pop_into(&mut samples);
            assert_eq!(missing, 0, "to {out} channels");
            assert!(samples.iter().any(|s| s.abs() > 1e-4), "to {out}: silence");
        }
    }

    #[test]
    fn a_stream_whose_rate_changes_midway_plays_on_through_the_change() {
        let dir = super::super::fault::temp_dir("rate-change");
        let piece = |rate: u32, name: &str| {
            let path = dir.join(name);
            let made = Command::new("ffmpeg")
                .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
                .arg(format!("sine=frequency=440:sample_rate={rate}:duration=2"))
                .args(["-c:a", "mp2", "-f", "mpegts"])
                .arg(&path)
                .status();
            made.is_ok_and(|s| s.success()).then_some(path)
        };
        let (Some(a), Some(b)) = (piece(44_100, "a.ts"), piece(48_000, "b.ts")) else {
            eprintln!("SKIPPED: no ffmpeg command to write the two pieces with");
            return;
        };
        // The two pieces one after the other, as a cut-together stream.
        let joined = dir.join("joined.ts");
        let mut bytes = std::fs::read(a).unwrap();
        bytes.extend(std::fs::read(b).unwrap());
        std::fs::write(&joined, bytes).unwrap();
        let source = AudioSource::probe(&joined).unwrap().unwrap();
        let ring = Arc::new(Ring::new(48_000 * 10));
        run(&source, source.start, 48_000, 1, &ring, ring.generation())
            .expect("the sound decodes through the change of rate");
        let mut samples = vec![0.0; 48_000 * 6];
        let missing = ring.pop_into(&mut samples);
        let got = samples.len() - missing;
        // Both pieces' four seconds, give or take a packet either side.
        let loud = samples[..got]
            .iter()
            .rposition(|s| s.abs() > 0.05)
            .unwrap_or(0);
        assert!(
            (loud as f64 / 48_000.0 - 4.0).abs() < 0.2,
            "the sound stops at {:.2} s of 4",
            loud as f64 / 48_000.0
        );
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
