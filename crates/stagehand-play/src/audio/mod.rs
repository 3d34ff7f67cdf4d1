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
    /// Seconds of the source's timeline at play time 0.
    origin: f64,
    out: AudioOut,
    ring: Arc<Ring>,
    playing: OnceLock<Playing>,
    /// What went wrong in the decoder, if anything.
    error: Arc<Mutex<Option<String>>>,
}

#[cfg(feature = "video")]
struct Playing {
    sink: Box<dyn Sink>,
    rate: u32,
    channels: u16,
    /// Play time and the sink's frames where the current stretch began
    /// (the start, or the last seek).
    segment: Mutex<(f64, f64)>,
    decoder: Mutex<Option<JoinHandle<()>>>,
}

#[cfg(feature = "video")]
impl Audio {
    /// Sound from `source`, whose timeline second `origin` plays at play
    /// time 0.
    pub fn new(source: AudioSource, origin: f64, out: AudioOut) -> Self {
        Self {
            source,
            origin,
            out,
            // Two seconds of stereo at 48 kHz.
            ring: Arc::new(Ring::new(2 * 2 * 48_000)),
            playing: OnceLock::new(),
            error: Arc::new(Mutex::new(None)),
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
                segment: Mutex::new((0.0, 0.0)),
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
    /// before [`start`](Self::start).
    pub fn now(&self) -> Option<f64> {
        let p = self.playing.get()?;
        let (play, frames) = *p.segment.lock();
        Some(play + (p.sink.played() - frames).max(0.0) / f64::from(p.rate))
    }

    pub fn pause(&self) {
        if let Some(p) = self.playing.get() {
            p.sink.pause();
        }
    }

    pub fn resume(&self) {
        if let Some(p) = self.playing.get() {
            p.sink.resume();
        }
    }

    /// Moves the sound to play time `t` (a seek).
    pub fn seek(&self, t: f64) {
        let Some(p) = self.playing.get() else {
            return;
        };
        let generation = self.ring.clear();
        *p.segment.lock() = (t, p.sink.played());
        self.decode_from(p, self.origin + t, generation);
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
    fn pause(&self) {}
    fn resume(&self) {}
    fn underruns(&self) -> u64 {
        0
    }
    fn describe(&self) -> String {
        "none".into()
    }
}
