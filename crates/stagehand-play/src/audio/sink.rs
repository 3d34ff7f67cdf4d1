//! Where decoded audio goes, and the clock it keeps: [`Sink`] says how
//! many frames have reached the speaker. [`NullSink`] consumes them at
//! the stream's rate on a real-time clock, where there is no sound
//! device (CI, servers) or the user asked for none (`AudioOptions::mute`), so sync is
//! still exercised and measured. The device sink is in `device.rs`.

use super::ring::Ring;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// An output that plays samples from a ring and keeps the audio clock.
pub(crate) trait Sink: Send + Sync {
    /// Frames (samples per channel) that have reached the speaker since
    /// the sink started, fractional between device periods.
    fn played(&self) -> f64;
    /// Stops playing (the clock stands still) until `resume`.
    fn pause(&self);
    fn resume(&self);
    /// Frames the ring could not supply in time (played as silence, and
    /// not counted as played: the clock waits for the sound).
    fn underruns(&self) -> u64;
    /// Whether `played` is a clock to follow: `false` once a device has
    /// failed (the player falls back to its own clock).
    fn keeps_time(&self) -> bool {
        true
    }
    /// When the sink last took samples (its last period or callback);
    /// `None` before the first. A sink that stops taking them while it
    /// plays keeps no time, whatever it says.
    fn last_period(&self) -> Option<Instant>;
    /// What it is, for the summary.
    fn describe(&self) -> String;
}

/// A sink without a device: a thread takes samples from the ring as a
/// device would, every few milliseconds, at the stream's rate.
pub(crate) struct NullSink {
    shared: Arc<NullShared>,
    thread: Option<JoinHandle<()>>,
}

struct NullShared {
    rate: f64,
    /// Real time played: since when, and what ran before the last pause.
    clock: Mutex<(Option<Instant>, Duration)>,
    stop: AtomicBool,
    underruns: AtomicU64,
    last_period: Mutex<Option<Instant>>,
    /// The most `played` has said: underruns are counted a period at a
    /// time while real time runs on between periods, so the difference
    /// alone would step back by up to a period at each dry one.
    said: Mutex<f64>,
}

impl NullShared {
    /// Frames of real time the sink has run.
    fn ran(&self) -> f64 {
        let (since, before) = *self.clock.lock();
        let run = before + since.map_or(Duration::ZERO, |s| s.elapsed());
        run.as_secs_f64() * self.rate
    }

    /// Frames of sound played: real time less the silence of underruns,
    /// never less than it said before.
    fn played(&self) -> f64 {
        let now = self.ran() - self.underruns.load(Relaxed) as f64;
        let mut said = self.said.lock();
        *said = said.max(now);
        *said
    }
}

/// How often the null sink takes samples: a device's period.
const PERIOD: Duration = Duration::from_millis(5);

/// Most frames the null sink takes at once: a period that came late (a
/// loaded machine) is taken in pieces of this, so its buffer stays small
/// whatever the rate and the delay.
const MOST_AT_ONCE: usize = 4096;

impl NullSink {
    /// Starts consuming `ring` (interleaved, `channels` a frame) at `rate`.
    pub fn start(ring: Arc<Ring>, rate: u32, channels: u16) -> std::io::Result<Self> {
        let shared = Arc::new(NullShared {
            rate: f64::from(rate),
            clock: Mutex::new((Some(Instant::now()), Duration::ZERO)),
            stop: AtomicBool::new(false),
            underruns: AtomicU64::new(0),
            last_period: Mutex::new(None),
            said: Mutex::new(0.0),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("audio null sink".into())
            .spawn(move || {
                let mut taken = 0u64;
                let mut buffer = vec![0.0; MOST_AT_ONCE * usize::from(channels)];
                while !s.stop.load(Relaxed) {
                    let due = s.ran() as u64;
                    while due > taken {
                        let frames = (due - taken).min(MOST_AT_ONCE as u64) as usize;
                        let piece = &mut buffer[..frames * usize::from(channels)];
                        let missing = ring.pop_into(piece);
                        s.underruns
                            .fetch_add((missing / usize::from(channels)) as u64, Relaxed);
                        taken += frames as u64;
                    }
                    *s.last_period.lock() = Some(Instant::now());
                    std::thread::sleep(PERIOD);
                }
            })?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }
}

impl Sink for NullSink {
    fn played(&self) -> f64 {
        self.shared.played()
    }

    fn pause(&self) {
        let mut clock = self.shared.clock.lock();
        if let Some(since) = clock.0.take() {
            clock.1 += since.elapsed();
        }
    }

    fn resume(&self) {
        let mut clock = self.shared.clock.lock();
        clock.0.get_or_insert_with(Instant::now);
    }

    fn underruns(&self) -> u64 {
        self.shared.underruns.load(Relaxed)
    }

    fn last_period(&self) -> Option<Instant> {
        *self.shared.last_period.lock()
    }

    fn describe(&self) -> String {
        format!("null sink at {} Hz (no sound device)", self.shared.rate)
    }
}

impl Drop for NullSink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_sink_whose_ring_runs_dry_never_plays_backwards() {
        // Nothing is ever pushed: every period is an underrun, counted in
        // one step while real time runs on smoothly between them.
        let sink = NullSink::start(Arc::new(Ring::new(4096)), 48_000, 2).expect("starts");
        let mut last = sink.played();
        let until = Instant::now() + Duration::from_millis(300);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_micros(300));
            let now = sink.played();
            assert!(now >= last, "played went back from {last} to {now} frames");
            last = now;
        }
        assert!(sink.underruns() > 0, "the dry ring was never read");
        // Silence is not play: at most a period of it shows as played.
        assert!(
            last <= 48_000.0 * PERIOD.as_secs_f64() * 2.0,
            "{last} frames played from an empty ring"
        );
    }
}
