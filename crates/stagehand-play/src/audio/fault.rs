//! A sink that fails on purpose, for the tests of what the player does
//! when a sound device goes wrong: it plays as the null sink does until
//! its `after` frames have played, then fails as it was told to.

use super::ring::Ring;
use super::sink::{NullSink, Sink};
use super::{Audio, AudioOut, AudioSource};
use std::sync::Arc;
use std::time::Instant;

/// How the sink goes wrong.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// It reports an error (a device unplugged): it says it keeps no time.
    Fails,
    /// It stops calling back without a word: its clock stands still and
    /// it takes no more samples.
    StopsCallingBack,
}

pub(crate) struct FaultSink {
    inner: NullSink,
    after: f64,
    fault: Fault,
    /// When it stopped, once it has.
    stopped: parking_lot::Mutex<Option<Instant>>,
}

impl FaultSink {
    /// A null sink on `ring` at `rate` that goes wrong by `fault` once
    /// `after` frames have played.
    pub fn start(ring: Arc<Ring>, rate: u32, channels: u16, after: u64, fault: Fault) -> Self {
        Self {
            inner: NullSink::start(ring, rate, channels).expect("the null sink starts"),
            after: after as f64,
            fault,
            stopped: parking_lot::Mutex::new(None),
        }
    }

    /// Whether the fault has struck.
    fn struck(&self) -> bool {
        let mut stopped = self.stopped.lock();
        if stopped.is_none() && self.inner.played() >= self.after {
            *stopped = Some(Instant::now());
        }
        stopped.is_some()
    }
}

impl Sink for FaultSink {
    fn played(&self) -> f64 {
        match (self.struck(), self.fault) {
            (true, Fault::StopsCallingBack) => self.after,
            _ => self.inner.played(),
        }
    }

    fn pause(&self) {
        self.inner.pause();
    }

    fn resume(&self) {
        self.inner.resume();
    }

    fn underruns(&self) -> u64 {
        self.inner.underruns()
    }

    fn keeps_time(&self) -> bool {
        !(self.struck() && matches!(self.fault, Fault::Fails))
    }

    fn last_period(&self) -> Option<Instant> {
        match (self.struck(), self.fault) {
            (true, Fault::StopsCallingBack) => *self.stopped.lock(),
            _ => self.inner.last_period(),
        }
    }

    fn describe(&self) -> String {
        format!("fault sink ({:?} after {} frames)", self.fault, self.after)
    }
}

/// Writes a PCM WAV file of `frames` frames whose header says `rate` and
/// `channels`, whatever they are ([`crate::testdata::wav_bytes`]).
pub(super) fn write_wav(path: &std::path::Path, rate: u32, channels: u16, frames: u32) {
    let bytes = crate::testdata::wav_bytes(rate, channels, frames);
    std::fs::write(path, bytes).expect("the WAV file is written");
}

/// A fresh folder for one test's files.
pub(super) fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-audio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary folder is created");
    dir
}

/// A probed one-second WAV at 48 kHz, stereo, in a fresh folder.
pub(crate) fn sound(name: &str) -> AudioSource {
    let path = temp_dir(name).join("tone.wav");
    write_wav(&path, 48_000, 2, 48_000);
    AudioSource::probe(&path).unwrap().unwrap()
}

/// Sound for pictures at 24 fps from position 0, started on a sink that
/// goes wrong by `fault` after a fifth of a second.
pub(crate) fn on_fault_sink(source: AudioSource, fault: Fault) -> Audio {
    let audio = Audio::new(source, 0.0, 1.0 / 24.0, 0, AudioOut::Null);
    audio.start_with(|| {
        let sink = FaultSink::start(Arc::clone(&audio.ring), 48_000, 2, 9_600, fault);
        (Box::new(sink), 48_000, 2)
    });
    audio
}
