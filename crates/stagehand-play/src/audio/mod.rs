//! Sound beside the pictures, and the clock it keeps.
//!
//! A movie's own audio stream, or a sound file given with `AudioOptions::file`
//! (WAV, FLAC, anything FFmpeg decodes), is decoded on a thread of its
//! own (`decode.rs`), resampled to the output's rate, and played by a
//! sink: the sound device through `cpal` (feature `audio`), or a
//! null sink that consumes samples at the stream's rate on a real-time
//! clock where there is no device or `AudioOptions::mute` asks for silence. The time
//! the sink has actually played is the player's clock in realtime mode:
//! it decides which frame is due, so pictures follow the sound.

#[cfg(feature = "video")]
mod decode;
#[cfg(feature = "audio")]
mod device;
mod error;
#[cfg(all(test, feature = "video"))]
pub(crate) mod fault;
#[cfg(feature = "video")]
mod ring;
#[cfg(feature = "video")]
mod sink;

#[cfg(feature = "video")]
pub use decode::AudioSource;
pub use error::SoundError;

#[cfg(feature = "video")]
use parking_lot::Mutex;
#[cfg(feature = "video")]
use ring::Ring;
use serde::Serialize;
#[cfg(feature = "video")]
use sink::{NullSink, Sink};
use std::path::PathBuf;
#[cfg(feature = "video")]
use std::sync::{Arc, OnceLock};
#[cfg(feature = "video")]
use std::thread::JoinHandle;

/// Lowest sample rate a sound may have, in Hz: below it a header is taken
/// as damaged (a packet at 1 Hz would be resampled into hundreds of MB).
pub const MIN_RATE: u32 = 1_000;

/// Highest sample rate a sound may have, in Hz (the highest rate audio
/// interfaces record at).
pub const MAX_RATE: u32 = 768_000;

/// Most channels a sound may have.
pub const MAX_CHANNELS: u16 = 16;

/// How long a sink may go without taking samples, while it plays, before
/// its clock is not followed (a device that stopped calling back).
#[cfg(feature = "video")]
const STALLED: std::time::Duration = std::time::Duration::from_secs(1);

/// Largest `AudioOptions::offset_ms`, either way, in milliseconds.
pub const MAX_OFFSET_MS: f64 = 60_000.0;

/// Where sound goes (`AudioOptions::out`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AudioOut {
    /// The default sound device where there is one, else the null sink.
    #[default]
    Auto,
    /// The null sink: samples consumed on a real-time clock, nothing heard.
    Null,
}

impl std::str::FromStr for AudioOut {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "null" | "none" => Ok(Self::Null),
            _ => Err(format!("{s:?}: expected auto or null")),
        }
    }
}

/// Sound options.
#[derive(Clone, Debug, Default)]
pub struct AudioOptions {
    /// A sound file to play beside the pictures; `None`: a
    /// movie's own audio stream, if it has one.
    pub file: Option<PathBuf>,
    /// Milliseconds the sound is moved later against the pictures
    /// (negative: earlier), at most [`MAX_OFFSET_MS`] either way.
    pub offset_ms: f64,
    /// Play no sound; the audio clock still runs, on the null
    /// sink.
    pub mute: bool,
    /// Where sound goes.
    pub out: AudioOut,
}

impl AudioOptions {
    /// Checks the offset.
    pub fn validate(&self) -> Result<(), crate::PlayError> {
        if !(self.offset_ms.is_finite() && self.offset_ms.abs() <= MAX_OFFSET_MS) {
            return Err(crate::PlayError::BadOption {
                field: crate::error::Field::AudioOffset,
                message: format!(
                    "{}: must be from -{MAX_OFFSET_MS} to {MAX_OFFSET_MS} ms",
                    self.offset_ms
                ),
            });
        }
        Ok(())
    }
}

/// Sound prepared for a run: checked, not yet playing until [`start`].
///
/// [`start`]: Audio::start
#[cfg(feature = "video")]
pub(crate) struct Audio {
    source: AudioSource,
    /// Seconds of the source's timeline where playback starts.
    origin: f64,
    /// The source's second that goes with position 0 of the pictures.
    zero: f64,
    /// Seconds from one position of the pictures to the next.
    period: f64,
    out: AudioOut,
    ring: Arc<Ring>,
    playing: OnceLock<Playing>,
    /// What went wrong in the decoder, if anything.
    error: Arc<Mutex<Option<SoundError>>>,
    seeks: std::sync::atomic::AtomicU64,
    /// Why the sink's clock is not followed any more, once it is not.
    lost: OnceLock<&'static str>,
}

#[cfg(feature = "video")]
#[derive(Clone, Copy)]
struct Segment {
    play: f64,
    frames: f64,
    source: f64,
}

#[cfg(feature = "video")]
struct Playing {
    sink: Box<dyn Sink>,
    rate: u32,
    channels: u16,
    /// Where the current stretch began (the start, or the last seek):
    /// play time, the sink's frames, and the source's seconds.
    segment: Mutex<Segment>,
    decoder: Mutex<Option<JoinHandle<()>>>,
    /// When the sink started: the stall check's reference before its first
    /// period.
    started: std::time::Instant,
    paused: std::sync::atomic::AtomicBool,
}

#[cfg(feature = "video")]
impl Audio {
    /// Sound from `source`, whose second `zero` goes with position 0 of
    /// the pictures (positions `period` seconds apart); playback starts at
    /// position `start`.
    pub fn new(source: AudioSource, zero: f64, period: f64, start: usize, out: AudioOut) -> Self {
        Self {
            source,
            origin: zero + start as f64 * period,
            zero,
            period,
            out,
            // Two seconds of stereo at 48 kHz.
            ring: Arc::new(Ring::new(2 * 2 * 48_000)),
            playing: OnceLock::new(),
            error: Arc::new(Mutex::new(None)),
            seeks: std::sync::atomic::AtomicU64::new(0),
            lost: OnceLock::new(),
        }
    }

    /// Starts decoding and the sink: play time 0 is now.
    pub fn start(&self) {
        self.start_with(|| self.open_sink());
    }

    /// Starts decoding into the sink `open` gives (with its rate and
    /// channels), once.
    fn start_with(&self, open: impl FnOnce() -> (Box<dyn Sink>, u32, u16)) {
        self.playing.get_or_init(|| {
            let (sink, rate, channels) = open();
            let playing = Playing {
                sink,
                rate,
                channels,
                segment: Mutex::new(Segment {
                    play: 0.0,
                    frames: 0.0,
                    source: self.origin,
                }),
                decoder: Mutex::new(None),
                started: std::time::Instant::now(),
                paused: std::sync::atomic::AtomicBool::new(false),
            };
            self.decode_from(&playing, self.origin, self.ring.generation());
            playing
        });
    }

    /// Whether the sink's clock is followed: it says it keeps time and it
    /// still takes samples. Once it is not, it never is again.
    fn keeps_time(&self, p: &Playing) -> bool {
        if self.lost.get().is_some() {
            return false;
        }
        let lost = if !p.sink.keeps_time() {
            "the sound device failed"
        } else if !p.paused.load(std::sync::atomic::Ordering::Relaxed)
            && p.sink.last_period().unwrap_or(p.started).elapsed() > STALLED
        {
            "the sound device stopped taking samples"
        } else {
            return true;
        };
        let _ = self.lost.set(lost);
        false
    }

    fn open_sink(&self) -> (Box<dyn Sink>, u32, u16) {
        #[cfg(feature = "audio")]
        if self.out == AudioOut::Auto
            && let Some((rate, channels)) = device::preferred().map(|(rate, channels)| {
                // A device count FFmpeg has no layout for gets stereo.
                let known = decode::layout_for(channels).is_some();
                (rate, if known { channels } else { 2 })
            })
            && let Ok(sink) = device::DeviceSink::start(Arc::clone(&self.ring), rate, channels)
        {
            return (Box::new(sink), rate, channels);
        }
        let _ = self.out;
        let (rate, channels) = (self.source.rate, 2);
        match NullSink::start(Arc::clone(&self.ring), rate, channels) {
            Ok(sink) => (Box::new(sink), rate, channels),
            Err(e) => {
                *self.error.lock() = Some(SoundError::NullSink(Arc::new(e)));
                (Box::new(Silent), rate, channels)
            }
        }
    }

    fn decode_from(&self, playing: &Playing, from: f64, generation: u64) {
        let (source, ring, error) = (
            self.source.clone(),
            Arc::clone(&self.ring),
            Arc::clone(&self.error),
        );
        let (rate, channels) = (playing.rate, playing.channels);
        // The old generation's decoder stops at its next push; the new one
        // waits for it, so the caller (the render thread) never does.
        let mut decoder = playing.decoder.lock();
        let old = decoder.take();
        let spawned = std::thread::Builder::new()
            .name("audio decode".into())
            .spawn(move || {
                if let Some(old) = old {
                    let _ = old.join();
                }
                // However the decoder ends, its stream has ended: missing
                // samples are not waited for (the clock runs on).
                let _ended = EndOnExit(&ring, generation);
                if let Err(e) = decode::run(&source, from, rate, channels, &ring, generation) {
                    *error.lock() = Some(e);
                }
            });
        match spawned {
            Ok(handle) => *decoder = Some(handle),
            Err(e) => {
                self.ring.end(generation);
                *self.error.lock() = Some(SoundError::DecoderThread(Arc::new(e)));
            }
        }
    }

    /// Play time now, in seconds, as the sink has played it; `None`
    /// before [`start`](Self::start), or where no sink keeps time.
    pub fn now(&self) -> Option<f64> {
        let p = self.playing.get()?;
        if !self.keeps_time(p) {
            return None;
        }
        let seg = *p.segment.lock();
        Some(seg.play + (p.sink.played() - seg.frames).max(0.0) / f64::from(p.rate))
    }

    /// The source's second playing now.
    pub fn source_now(&self) -> Option<f64> {
        let p = self.playing.get()?;
        let seg = *p.segment.lock();
        Some(seg.source + (p.sink.played() - seg.frames).max(0.0) / f64::from(p.rate))
    }

    pub fn pause(&self) {
        if let Some(p) = self.playing.get() {
            p.paused.store(true, std::sync::atomic::Ordering::Relaxed);
            p.sink.pause();
        }
    }

    /// Resumes, and decodes again from where the clock stands: what a
    /// device had buffered played out while paused.
    pub fn resume(&self) {
        let Some(p) = self.playing.get() else {
            return;
        };
        let source = self.source_now();
        p.sink.resume();
        p.paused.store(false, std::sync::atomic::Ordering::Relaxed);
        if let Some(source) = source {
            self.seek_source(source);
        }
    }

    /// Play time is `t` from now on; the sound plays on from where it is.
    pub fn set_play_time(&self, t: f64) {
        let Some(p) = self.playing.get() else { return };
        let mut seg = p.segment.lock();
        let played = p.sink.played();
        seg.source += (played - seg.frames).max(0.0) / f64::from(p.rate);
        (seg.frames, seg.play) = (played, t);
    }

    /// Plays the source from its second `source` on, at the play time now
    /// (a seek, a step, a loop back).
    pub fn seek_source(&self, source: f64) {
        let Some(p) = self.playing.get() else {
            return;
        };
        let generation = self.ring.clear();
        {
            let mut seg = p.segment.lock();
            let played = p.sink.played();
            seg.play += (played - seg.frames).max(0.0) / f64::from(p.rate);
            seg.frames = played;
            seg.source = source;
        }
        self.seeks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.decode_from(p, source, generation);
    }

    /// Keeps the sound with the pictures: position `pos` is on screen,
    /// `late` seconds after its time. Where the sound is more than a frame
    /// and a half from that frame's sound (after a seek, a step, a loop
    /// back to the start), it moves there.
    /// A sink whose clock is not followed is not followed here either:
    /// moving its sound would not move the clock.
    pub fn follow(&self, pos: usize, late: f64) {
        if self.now().is_none() {
            return;
        }
        let Some(now) = self.source_now() else {
            return;
        };
        let want = self.zero + pos as f64 * self.period + late;
        if (now - want).abs() > 1.5 * self.period {
            self.seek_source(want);
        }
    }

    /// Times the sound was moved to another place in its source.
    pub fn seeks(&self) -> u64 {
        self.seeks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What played, for the summary.
    pub fn describe(&self) -> (String, String, u64, Option<SoundError>) {
        let source = format!(
            "{} ({}, {} Hz, {} channels)",
            self.source.path.display(),
            self.source.codec,
            self.source.rate,
            self.source.channels
        );
        let (mut sink, underruns) = self.playing.get().map_or(("not started".into(), 0), |p| {
            (p.sink.describe(), p.sink.underruns())
        });
        if let Some(lost) = self.lost.get()
            && !sink.contains("clock took over")
        {
            sink = format!("{sink} ({lost}; the player's own clock took over)");
        }
        (source, sink, underruns, self.error.lock().clone())
    }
}

#[cfg(feature = "video")]
impl Drop for Audio {
    fn drop(&mut self) {
        self.ring.close();
        if let Some(p) = self.playing.get()
            && let Some(handle) = p.decoder.lock().take()
        {
            let _ = handle.join();
        }
    }
}

/// Ends the ring's stream of a generation when dropped.
#[cfg(feature = "video")]
struct EndOnExit<'a>(&'a Ring, u64);

#[cfg(feature = "video")]
impl Drop for EndOnExit<'_> {
    fn drop(&mut self) {
        self.0.end(self.1);
    }
}

/// A sink that could not start: the clock stands at 0.
#[cfg(feature = "video")]
struct Silent;

#[cfg(feature = "video")]
impl Sink for Silent {
    fn played(&self) -> f64 {
        0.0
    }
    fn keeps_time(&self) -> bool {
        false
    }
    fn pause(&self) {}
    fn resume(&self) {}
    fn underruns(&self) -> u64 {
        0
    }
    fn last_period(&self) -> Option<std::time::Instant> {
        None
    }
    fn describe(&self) -> String {
        "none".into()
    }
}

#[cfg(all(test, feature = "video"))]
mod tests {
    use super::fault::{Fault, on_fault_sink, sound};
    use super::*;
    use std::time::{Duration, Instant};

    /// Waits up to `within` for `done`.
    fn eventually(within: Duration, done: impl Fn() -> bool) -> bool {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        done()
    }

    #[test]
    fn a_sound_whose_file_vanished_after_the_probe_keeps_the_clock_running() {
        let source = sound("vanished");
        std::fs::remove_file(&source.path).unwrap();
        let audio = Audio::new(source, 0.0, 1.0 / 24.0, 0, AudioOut::Null);
        audio.start();
        assert!(
            eventually(Duration::from_secs(5), || audio.now().unwrap_or(0.0) > 0.3),
            "the clock stands at {:?}",
            audio.now()
        );
        let (_, _, _, error) = audio.describe();
        assert!(
            error.is_some(),
            "the summary says nothing of the failed decoder: {error:?}"
        );
    }

    #[test]
    fn a_failed_sound_device_is_not_followed_or_seeked_again() {
        let audio = on_fault_sink(sound("failed"), Fault::Fails);
        assert!(
            eventually(Duration::from_secs(5), || audio.now().is_none()),
            "a failed sink's clock is still followed"
        );
        // Frames far from the sound's place, as a picture clock running on
        // its own shows them: a followed sink would be moved each time.
        for pos in 100..120 {
            audio.follow(pos, 0.0);
        }
        assert_eq!(audio.seeks(), 0, "the failed sink's sound was moved");
        let (_, sink, _, _) = audio.describe();
        assert!(sink.contains("clock took over"), "{sink}");
    }

    #[test]
    fn a_sound_device_that_stops_calling_back_gives_the_clock_to_the_player() {
        let audio = on_fault_sink(sound("stalled"), Fault::StopsCallingBack);
        assert!(
            eventually(Duration::from_secs(5), || audio.now().is_none()),
            "a sink that takes no samples still keeps the clock at {:?}",
            audio.now()
        );
        let (_, sink, _, _) = audio.describe();
        assert!(sink.contains("stopped taking samples"), "{sink}");
    }
}
