//! The player's clock.

use parking_lot::Mutex;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The player's clock: starts after pre-roll; stands still while paused,
/// and in every-frame mode while the render loop waits for a frame; a seek
/// sets it to the new place's time. With sound (realtime mode), play time
/// is what the audio sink has played: pictures follow the sound.
#[derive(Default)]
pub(super) struct Clock {
    pub(super) start: OnceLock<Instant>,
    pub(super) state: Mutex<ClockState>,
    /// The sound whose sink keeps play time, when there is sound.
    #[cfg(feature = "video")]
    pub(super) audio: OnceLock<std::sync::Arc<crate::audio::Audio>>,
}

#[derive(Default)]
pub(super) struct ClockState {
    /// Wall time since the start less play time, in nanoseconds (negative
    /// once a seek has moved play time ahead of the wall).
    pub(super) behind: i128,
    /// Since when it stands still.
    pub(super) paused_at: Option<Instant>,
    /// Time it stood still waiting for frames (every-frame mode).
    pub(super) waited: Duration,
    /// The sound's play time when last read, and when: where the wall
    /// clock takes over from, should the sound's clock be lost.
    #[cfg(feature = "video")]
    last_audio: Option<(Duration, Instant)>,
}

impl Clock {
    pub(super) fn start(&self) -> Instant {
        *self.start.get_or_init(|| {
            #[cfg(feature = "video")]
            if let Some(audio) = self.audio.get() {
                audio.start();
            }
            Instant::now()
        })
    }

    /// Play time by the sound's clock, when sound keeps it and it runs.
    /// The first time it does not any more (a device failed or stalled),
    /// the wall clock goes on from where the sound's stood, so the
    /// pictures neither jump ahead nor back.
    fn audio_now(&self) -> Option<Duration> {
        #[cfg(feature = "video")]
        if let Some(audio) = self.audio.get() {
            // Read under the lock that `set` holds while it moves the
            // sound, so a reading from before a seek is never kept after.
            let mut state = self.state.lock();
            let now = audio.now();
            match now {
                Some(t) => {
                    // A device's word on what it played jitters with its
                    // callbacks; the pictures never go back for it.
                    let t = Duration::from_secs_f64(t.max(0.0))
                        .max(state.last_audio.map_or(Duration::ZERO, |(last, _)| last));
                    state.last_audio = Some((t, Instant::now()));
                    return Some(t);
                }
                None => {
                    if let (Some((t, at)), Some(start)) =
                        (state.last_audio.take(), self.start.get())
                    {
                        let wall_now = state.paused_at.unwrap_or_else(Instant::now);
                        let t = t + wall_now.saturating_duration_since(at);
                        let wall = wall_now - *start;
                        state.behind = wall.as_nanos() as i128 - t.as_nanos() as i128;
                    }
                }
            }
        }
        None
    }

    pub(super) fn waited(&self) -> Duration {
        self.state.lock().waited
    }

    /// Play time now; `None` before the clock starts.
    pub(super) fn now(&self) -> Option<Duration> {
        let start = *self.start.get()?;
        if let Some(t) = self.audio_now() {
            return Some(t);
        }
        let state = self.state.lock();
        let wall = state.paused_at.unwrap_or_else(Instant::now) - start;
        let t = wall.as_nanos() as i128 - state.behind;
        Some(Duration::from_nanos(t.clamp(0, i128::from(u64::MAX)) as u64))
    }

    /// When play time reaches `t` (if the clock runs).
    pub(super) fn due(&self, t: Duration) -> Instant {
        let start = self.start();
        if let Some(now) = self.audio_now() {
            // The sound plays at its own rate: `t` comes when as much more
            // of it has played (or came that long ago).
            let wall = Instant::now();
            return match t.checked_sub(now) {
                Some(ahead) => wall + ahead,
                None => wall.checked_sub(now - t).unwrap_or(start),
            };
        }
        let behind = self.state.lock().behind;
        let at = t.as_nanos() as i128 + behind;
        if at >= 0 {
            start + Duration::from_nanos(at.min(i128::from(u64::MAX)) as u64)
        } else {
            start
        }
    }

    /// Every-frame mode: the clock stood still for `d`.
    pub(super) fn wait_added(&self, d: Duration) {
        let mut state = self.state.lock();
        state.behind += d.as_nanos() as i128;
        state.waited += d;
    }

    pub(super) fn pause(&self) {
        let mut state = self.state.lock();
        state.paused_at.get_or_insert_with(Instant::now);
        #[cfg(feature = "video")]
        if let Some(audio) = self.audio.get() {
            audio.pause();
        }
    }

    pub(super) fn resume(&self) {
        let mut state = self.state.lock();
        if let Some(at) = state.paused_at.take() {
            state.behind += at.elapsed().as_nanos() as i128;
        }
        #[cfg(feature = "video")]
        if let Some(audio) = self.audio.get() {
            audio.resume();
        }
    }

    pub(super) fn paused(&self) -> bool {
        self.state.lock().paused_at.is_some()
    }

    /// Sets play time to `t`, running or not.
    pub(super) fn set(&self, t: Duration) {
        let start = self.start();
        let mut state = self.state.lock();
        let wall = state.paused_at.unwrap_or_else(Instant::now) - start;
        state.behind = wall.as_nanos() as i128 - t.as_nanos() as i128;
        #[cfg(feature = "video")]
        {
            state.last_audio = None;
        }
        // The sound's play time follows; where in its source it plays is
        // the render loop's to put right (it knows the frame shown).
        #[cfg(feature = "video")]
        if let Some(audio) = self.audio.get() {
            audio.set_play_time(t.as_secs_f64());
        }
    }
}

#[cfg(all(test, feature = "video"))]
mod tests {
    use super::*;
    use crate::audio::fault::{Fault, on_fault_sink, sound};
    use std::sync::Arc;

    #[test]
    fn a_clock_whose_sound_device_stalls_goes_on_from_the_sound_without_a_jump() {
        let clock = Clock::default();
        let audio = Arc::new(on_fault_sink(sound("clock-stall"), Fault::StopsCallingBack));
        let _ = clock.audio.set(Arc::clone(&audio));
        clock.start();
        let mut last = clock.now().unwrap();
        let mut biggest = Duration::ZERO;
        let until = Instant::now() + Duration::from_millis(2500);
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            let now = clock.now().unwrap();
            assert!(now >= last, "the clock went back from {last:?} to {now:?}");
            biggest = biggest.max(now - last);
            last = now;
        }
        assert!(audio.now().is_none(), "the stalled sink still keeps time");
        assert!(
            biggest < Duration::from_millis(300),
            "the clock jumped {biggest:?} when the sound's clock was lost"
        );
        // The sound stood at a fifth of a second for the second it took to
        // see the stall; the wall clock then ran on from there.
        assert!(
            last > Duration::from_millis(600) && last < Duration::from_millis(2000),
            "the clock stands at {last:?} after 2.5 s"
        );
    }
}
