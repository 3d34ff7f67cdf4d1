//! Sound beside the pictures, and the clock it keeps.
//!
//! A movie's own audio stream, or a sound file given with `--audio`
//! (WAV, FLAC, anything FFmpeg decodes), is decoded on a thread of its
//! own (`decode.rs`), resampled to the output's rate, and played by a
//! sink: the sound device through `cpal` (feature `audio`), or a
//! null sink that consumes samples at the stream's rate on a real-time
//! clock where there is no device or `--mute` asks for silence. The time
//! the sink has actually played is the player's clock in realtime mode:
//! it decides which frame is due, so pictures follow the sound.

#[cfg(feature = "video")]
mod decode;
#[cfg(feature = "audio")]
mod device;
#[cfg(feature = "video")]
mod ring;
#[cfg(feature = "video")]
mod sink;

#[cfg(feature = "video")]
pub use decode::AudioSource;

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

/// Bad packets in a row after which a demuxer is taken as stuck and its
/// stream as ended (FFmpeg resyncs past a few).
pub const MAX_INVALID_PACKETS: u32 = 1000;

/// Largest `--audio-offset`, either way, in milliseconds.
pub const MAX_OFFSET_MS: f64 = 60_000.0;

/// Where sound goes (`--audio-out`).
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
    /// A sound file to play beside the pictures (`--audio`); `None`: a
    /// movie's own audio stream, if it has one.
    pub file: Option<PathBuf>,
    /// Milliseconds the sound is moved later against the pictures
    /// (negative: earlier), at most [`MAX_OFFSET_MS`] either way.
    pub offset_ms: f64,
    /// Play no sound (`--mute`); the audio clock still runs, on the null
    /// sink.
    pub mute: bool,
    /// Where sound goes.
    pub out: AudioOut,
}

impl AudioOptions {
    /// Checks the offset.
    pub fn validate(&self) -> Result<(), crate::PlayError> {
        if !(self.offset_ms.is_finite() && self.offset_ms.abs() <= MAX_OFFSET_MS) {
            return Err(crate::PlayError::InvalidOption(format!(
                "--audio-offset {}: must be from -{MAX_OFFSET_MS} to {MAX_OFFSET_MS} ms",
                self.offset_ms
            )));
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
    error: Arc<Mutex<Option<String>>>,
    seeks: std::sync::atomic::AtomicU64,
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
        }
    }

    /// Starts decoding and the sink: play time 0 is now.
    pub fn start(&self) {
        self.playing.get_or_init(|| {
            let (sink, rate, channels) = self.open_sink();
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
            };
            self.decode_from(&playing, self.origin, self.ring.generation());
            playing
        });
    }

    fn open_sink(&self) -> (Box<dyn Sink>, u32, u16) {
        #[cfg(feature = "audio")]
        if self.out == AudioOut::Auto
            && let Some((rate, channels)) = device::preferred()
            && let Ok(sink) = device::DeviceSink::start(Arc::clone(&self.ring), rate, channels)
        {
            return (Box::new(sink), rate, channels);
        }
        let _ = self.out;
        let (rate, channels) = (self.source.rate, 2);
        match NullSink::start(Arc::clone(&self.ring), rate, channels) {
            Ok(sink) => (Box::new(sink), rate, channels),
            Err(e) => {
                *self.error.lock() = Some(format!("cannot start the null sink: {e}"));
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
        let spawned = std::thread::Builder::new()
            .name("audio decode".into())
            .spawn(move || {
                if let Err(e) = decode::run(&source, from, rate, channels, &ring, generation) {
                    *error.lock() = Some(e);
                }
            });
        match spawned {
            Ok(handle) => {
                if let Some(old) = playing.decoder.lock().replace(handle) {
                    // The old generation's decoder stops at its next push.
                    let _ = old.join();
                }
            }
            Err(e) => *self.error.lock() = Some(format!("cannot start the audio decoder: {e}")),
        }
    }

    /// Play time now, in seconds, as the sink has played it; `None`
    /// before [`start`](Self::start), or where no sink keeps time.
    pub fn now(&self) -> Option<f64> {
        let p = self.playing.get()?;
        if !p.sink.keeps_time() {
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
        if let Some(source) = source {
            self.seek_source(source);
        }
    }

    /// Play time is `t` from now on; the sound plays on from where it is.
    pub fn set_play_time(&self, t: f64) {
        if let Some(p) = self.playing.get() {
            let mut seg = p.segment.lock();
            let played = p.sink.played();
            seg.source += (played - seg.frames).max(0.0) / f64::from(p.rate);
            seg.frames = played;
            seg.play = t;
        }
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
    pub fn follow(&self, pos: usize, late: f64) {
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
    pub fn describe(&self) -> (String, String, u64, Option<String>) {
        let source = format!(
            "{} ({}, {} Hz, {} channels)",
            self.source.path.display(),
            self.source.codec,
            self.source.rate,
            self.source.channels
        );
        let (sink, underruns) = self.playing.get().map_or(("not started".into(), 0), |p| {
            (p.sink.describe(), p.sink.underruns())
        });
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
    fn describe(&self) -> String {
        "none".into()
    }
}
