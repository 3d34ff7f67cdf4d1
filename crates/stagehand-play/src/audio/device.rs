//! The sound device through `cpal` (feature `audio`): the default output,
//! fed from the ring in its callback. The clock is what the device says
//! it plays: each callback reports when its first sample reaches the
//! speaker, and the frames before it are counted.

use super::ring::Ring;
use super::sink::Sink;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The default output device, playing.
pub(crate) struct DeviceSink {
    shared: Arc<DeviceShared>,
    thread: Option<JoinHandle<()>>,
    name: String,
}

struct DeviceShared {
    rate: f64,
    /// Frames written before the last callback's, when its first frame
    /// reaches the speaker, and how many it wrote.
    last: Mutex<Option<(u64, Instant, u64)>>,
    written: AtomicU64,
    paused: AtomicBool,
    /// The clock while paused.
    frozen: Mutex<f64>,
    stop: AtomicBool,
    underruns: AtomicU64,
    /// The device reported an error: its clock is not followed any more.
    failed: AtomicBool,
    /// The device took frames faster than real time (a device with no
    /// clock of its own, such as ALSA's null device): not followed either.
    ran_ahead: AtomicBool,
    /// When the first callback came, and the frames (sound and silence)
    /// handed to the device since.
    pace: Mutex<Option<(Instant, u64)>>,
    /// When the last callback came.
    last_callback: Mutex<Option<Instant>>,
}

/// Seconds a device may take ahead of real time beyond what it says it
/// holds (its latency) before its clock is not trusted.
const AHEAD_ALLOWED: f64 = 0.25;

impl DeviceShared {
    /// Counts `frames` handed over to a device that says its sound
    /// reaches the speaker `latency` after the callback; how far it has now
    /// taken more than real time and its buffer allow, if it has.
    fn pace(&self, frames: u64, latency: Duration) -> Option<Duration> {
        let mut pace = self.pace.lock();
        let (start, taken) = pace.get_or_insert((Instant::now(), 0));
        *taken += frames;
        let taken_s = *taken as f64 / self.rate;
        let allowed = start.elapsed().as_secs_f64() * 1.05 + latency.as_secs_f64() + AHEAD_ALLOWED;
        (taken_s > allowed).then(|| Duration::from_secs_f64(taken_s - allowed))
    }

    /// Frames played by now, by the last callback's word.
    fn played(&self) -> f64 {
        if self.paused.load(Relaxed) {
            return *self.frozen.lock();
        }
        let Some((before, at, wrote)) = *self.last.lock() else {
            return 0.0;
        };
        let now = Instant::now();
        let since = now.saturating_duration_since(at).as_secs_f64() * self.rate;
        let ahead = if now < at {
            -(at - now).as_secs_f64() * self.rate
        } else {
            since
        };
        (before as f64 + ahead).clamp(0.0, (before + wrote) as f64)
    }
}

/// The device's preferred rate and channels, if there is a device.
pub(crate) fn preferred() -> Option<(u32, u16)> {
    let device = cpal::default_host().default_output_device()?;
    let config = device.default_output_config().ok()?;
    Some((config.sample_rate(), config.channels()))
}

impl DeviceSink {
    /// Opens the default output at `rate` and `channels` and starts it;
    /// `Err` with the reason where there is none or it will not open.
    pub fn start(ring: Arc<Ring>, rate: u32, channels: u16) -> Result<Self, String> {
        let shared = Arc::new(DeviceShared {
            rate: f64::from(rate),
            last: Mutex::new(None),
            written: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            frozen: Mutex::new(0.0),
            stop: AtomicBool::new(false),
            underruns: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            ran_ahead: AtomicBool::new(false),
            pace: Mutex::new(None),
            last_callback: Mutex::new(None),
        });
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let s = Arc::clone(&shared);
        // cpal's streams may not move between threads: one thread opens,
        // holds and closes it.
        let thread = std::thread::Builder::new()
            .name("audio device".into())
            .spawn(move || {
                let opened = open(&s, ring, rate, channels);
                match opened {
                    Ok((stream, name)) => {
                        let _ = ready_tx.send(Ok(name));
                        while !s.stop.load(Relaxed) {
                            std::thread::park();
                        }
                        drop(stream);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        match ready_rx.recv() {
            Ok(Ok(name)) => Ok(Self {
                shared,
                thread: Some(thread),
                name,
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err("the audio thread ended".into()),
        }
    }
}

impl DeviceShared {
    /// The device's callback: fills `data` (`channels` interleaved) from
    /// `ring`, or with silence while paused, and keeps the clock's books;
    /// `latency` is how long until the device plays what it is given.
    fn fill(&self, data: &mut [f32], ring: &Ring, channels: u16, latency: Duration) {
        let frames = (data.len() / usize::from(channels)) as u64;
        *self.last_callback.lock() = Some(Instant::now());
        let over = self.pace(frames, latency);
        if over.is_some() {
            // Its clock is not followed from now on.
            self.ran_ahead.store(true, Relaxed);
        }
        if self.paused.load(Relaxed) {
            data.fill(0.0);
        } else {
            let missing = (ring.pop_into(data) / usize::from(channels)) as u64;
            self.underruns.fetch_add(missing, Relaxed);
            // Silence for missing frames is not sound played: the clock
            // waits for the sound.
            let sound = frames.saturating_sub(missing);
            let before = self.written.fetch_add(sound, Relaxed);
            *self.last.lock() = Some((before, Instant::now() + latency, sound));
        }
        if let Some(over) = over {
            // A device that takes sound as fast as it is given is held to
            // real time's pace (at most a buffer's time per call), so the
            // sound is not used up at once.
            let buffer = Duration::from_secs_f64(frames as f64 / self.rate);
            std::thread::sleep(over.min(buffer));
        }
    }
}

fn open(
    shared: &Arc<DeviceShared>,
    ring: Arc<Ring>,
    rate: u32,
    channels: u16,
) -> Result<(cpal::Stream, String), String> {
    let device = cpal::default_host()
        .default_output_device()
        .ok_or("no sound output device")?;
    let name = device
        .description()
        .map(|d| d.to_string())
        .unwrap_or_else(|_| "default output".into());
    let config = cpal::StreamConfig {
        channels,
        sample_rate: rate,
        buffer_size: cpal::BufferSize::Default,
    };
    let s = Arc::clone(shared);
    let stream = device
        .build_output_stream(
            config,
            move |data: &mut [f32], info: &cpal::OutputCallbackInfo| {
                let ts = info.timestamp();
                s.fill(
                    data,
                    &ring,
                    channels,
                    ts.playback.saturating_duration_since(ts.callback),
                );
            },
            {
                let s = Arc::clone(shared);
                move |_| s.failed.store(true, Relaxed)
            },
            None,
        )
        .map_err(|e| format!("the sound device will not open: {e}"))?;
    stream
        .play()
        .map_err(|e| format!("the sound device will not play: {e}"))?;
    Ok((stream, name))
}

impl Sink for DeviceSink {
    fn played(&self) -> f64 {
        self.shared.played()
    }

    fn pause(&self) {
        *self.shared.frozen.lock() = self.shared.played();
        self.shared.paused.store(true, Relaxed);
    }

    fn resume(&self) {
        // Frames written while paused were silence, not counted; the
        // next callback sets the clock afresh from where it stood.
        let frozen = *self.shared.frozen.lock() as u64;
        self.shared.written.store(frozen, Relaxed);
        *self.shared.last.lock() = Some((frozen, Instant::now(), 0));
        self.shared.paused.store(false, Relaxed);
    }

    fn underruns(&self) -> u64 {
        self.shared.underruns.load(Relaxed)
    }

    fn last_period(&self) -> Option<Instant> {
        *self.shared.last_callback.lock()
    }

    fn keeps_time(&self) -> bool {
        !self.shared.failed.load(Relaxed) && !self.shared.ran_ahead.load(Relaxed)
    }

    fn describe(&self) -> String {
        let failed = if self.shared.ran_ahead.load(Relaxed) {
            " (it took sound faster than real time, so its clock is not followed; the player's own clock took over)"
        } else if self.keeps_time() {
            ""
        } else {
            " (failed; the player's own clock took over)"
        };
        format!("{} at {} Hz{failed}", self.name, self.shared.rate)
    }
}

impl Drop for DeviceSink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
