//! The player's clock, from its sources of play time ([`TimeSource`]):
//! the wall clock ([`WallClock`]: time since the start, less the time it
//! stood still, moved by seeks) and, where there is sound, the sound's
//! ([`SoundClock`]: what the sound's sink has played), which the pictures
//! follow while it keeps time and hand back to the wall clock, from where
//! the sound stood, when it stops keeping it.

use parking_lot::Mutex;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A source of play time.
pub(super) trait TimeSource {
    /// Play time now; `None` while this source keeps none (before the
    /// start; a sound whose device failed or stalled).
    fn now(&self) -> Option<Duration>;
    /// Starts the source's time.
    fn start(&self);
    /// Stands still.
    fn pause(&self);
    /// Runs again.
    fn resume(&self);
    /// Play time becomes `t`, running or not.
    fn set(&self, t: Duration);
}

/// The player's clock: starts after pre-roll; stands still while paused,
/// and in every-frame mode while the render loop waits for a frame; a seek
/// sets it to the new place's time. With sound (realtime mode), play time
/// is what the audio sink has played: pictures follow the sound.
#[derive(Default)]
pub(super) struct Clock {
    wall: WallClock,
    /// The sound whose sink keeps play time, when there is sound.
    #[cfg(feature = "video")]
    sound: OnceLock<SoundClock>,
}

impl Clock {
    /// Makes `audio`'s sink keep play time (once; later calls do nothing).
    #[cfg(feature = "video")]
    pub(super) fn follow_sound(&self, audio: std::sync::Arc<crate::audio::Audio>) {
        let _ = self.sound.set(SoundClock::new(audio));
    }

    /// The sound that keeps play time, if any.
    #[cfg(feature = "video")]
    pub(super) fn sound(&self) -> Option<&std::sync::Arc<crate::audio::Audio>> {
        self.sound.get().map(|s| &s.audio)
    }

    /// When the clock started; `None` before.
    pub(super) fn started(&self) -> Option<Instant> {
        self.wall.started()
    }

    /// Starts the clock (and the sound) the first time; when it started.
    pub(super) fn start(&self) -> Instant {
        #[cfg(feature = "video")]
        if self.wall.started().is_none()
            && let Some(sound) = self.sound.get()
        {
            sound.start();
        }
        TimeSource::start(&self.wall);
        self.wall.start_at()
    }

    /// Play time by the sound's clock, when sound keeps it and it runs.
    /// The first time it does not any more (a device failed or stalled),
    /// the wall clock goes on from where the sound's stood, so the
    /// pictures neither jump ahead nor back.
    fn sound_now(&self) -> Option<Duration> {
        #[cfg(feature = "video")]
        if let Some(sound) = self.timekeeping_sound() {
            return sound.now_or_hand_over(&self.wall);
        }
        None
    }

    /// The sound, while it keeps play time: there is sound, and the rate
    /// is 1 (at any other the sound is silent and the wall clock keeps it).
    #[cfg(feature = "video")]
    fn timekeeping_sound(&self) -> Option<&SoundClock> {
        self.sound.get().filter(|_| self.wall.rate() == 1.0)
    }

    /// Whether the sound keeps play time (see `timekeeping_sound`).
    pub(super) fn sound_keeps_time(&self) -> bool {
        #[cfg(feature = "video")]
        return self.timekeeping_sound().is_some();
        #[cfg(not(feature = "video"))]
        false
    }

    /// Play time per wall time.
    pub(super) fn rate(&self) -> f64 {
        self.wall.rate()
    }

    /// Play time goes on at `rate` times the wall's from where it is now.
    /// The sound keeps time at 1 only: at any other rate it is silent, and
    /// back at 1 it plays again from the pictures' time.
    pub(super) fn set_rate(&self, rate: f64) {
        let now = self.now();
        if let Some(t) = now {
            self.wall.set(t);
        }
        self.wall.set_rate(rate);
        #[cfg(feature = "video")]
        if let Some(sound) = self.sound.get() {
            if rate != 1.0 {
                sound.pause();
            } else if let Some(t) = now {
                sound.set_with(t, &self.wall);
                if !self.paused() {
                    sound.resume();
                }
            }
        }
    }

    /// Time stood still waiting for frames (every-frame mode).
    pub(super) fn waited(&self) -> Duration {
        self.wall.state.lock().waited
    }

    /// Play time now; `None` before the clock starts.
    pub(super) fn now(&self) -> Option<Duration> {
        self.wall.started()?;
        self.sound_now().or_else(|| self.wall.now())
    }

    /// When play time reaches `t` (if the clock runs).
    pub(super) fn due(&self, t: Duration) -> Instant {
        let start = self.start();
        if let Some(now) = self.sound_now() {
            // The sound plays at its own rate: `t` comes when as much more
            // of it has played (or came that long ago).
            let wall = Instant::now();
            return match t.checked_sub(now) {
                Some(ahead) => wall + ahead,
                None => wall.checked_sub(now - t).unwrap_or(start),
            };
        }
        self.wall.due(t)
    }

    /// Every-frame mode: the clock stood still for `d`.
    pub(super) fn wait_added(&self, d: Duration) {
        self.wall.wait_added(d);
    }

    pub(super) fn pause(&self) {
        self.wall.pause();
        #[cfg(feature = "video")]
        if let Some(sound) = self.sound.get() {
            sound.pause();
        }
    }

    pub(super) fn resume(&self) {
        self.wall.resume();
        #[cfg(feature = "video")]
        if let Some(sound) = self.timekeeping_sound() {
            sound.resume();
        }
    }

    pub(super) fn paused(&self) -> bool {
        self.wall.state.lock().paused_at.is_some()
    }

    /// Sets play time to `t`, running or not. The sound's play time
    /// follows; where in its source it plays is the render loop's to put
    /// right (it knows the frame shown).
    pub(super) fn set(&self, t: Duration) {
        self.start();
        #[cfg(feature = "video")]
        if let Some(sound) = self.timekeeping_sound() {
            sound.set_with(t, &self.wall);
            return;
        }
        self.wall.set(t);
    }
}

/// Wall time since the start, less the time it stood still, times the
/// rate; a seek moves it.
#[derive(Default)]
pub(super) struct WallClock {
    start: OnceLock<Instant>,
    state: Mutex<WallState>,
}

/// Play time as a line through one point: `anchor_play` at wall time
/// `anchor_wall` (since the start), going on at `rate` while it runs.
struct WallState {
    /// Wall time since the start at the anchor, in nanoseconds.
    anchor_wall: i128,
    /// Play time at the anchor, in nanoseconds.
    anchor_play: i128,
    /// Play time per wall time.
    rate: f64,
    /// Since when it stands still.
    paused_at: Option<Instant>,
    /// Time it stood still waiting for frames (every-frame mode).
    waited: Duration,
}

impl Default for WallState {
    fn default() -> Self {
        Self {
            anchor_wall: 0,
            anchor_play: 0,
            rate: 1.0,
            paused_at: None,
            waited: Duration::ZERO,
        }
    }
}

impl WallState {
    /// Play time at `wall` nanoseconds since the start.
    fn play_at(&self, wall: i128) -> i128 {
        if self.paused_at.is_some() {
            return self.anchor_play;
        }
        self.anchor_play + ((wall - self.anchor_wall) as f64 * self.rate) as i128
    }

    /// Moves the anchor to `wall` (nanoseconds since the start), play time
    /// unchanged.
    fn rebase(&mut self, wall: i128) {
        self.anchor_play = self.play_at(wall);
        self.anchor_wall = wall;
    }
}

/// Nanoseconds of `d`, for the clock's arithmetic.
fn nanos(d: Duration) -> i128 {
    d.as_nanos() as i128
}

/// Nanoseconds clamped to a duration.
fn duration(ns: i128) -> Duration {
    Duration::from_nanos(ns.clamp(0, i128::from(u64::MAX)) as u64)
}

impl WallClock {
    fn started(&self) -> Option<Instant> {
        self.start.get().copied()
    }

    fn start_at(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    /// Wall time since the start now, in nanoseconds (at the pause, while
    /// paused).
    fn wall_now(&self, state: &WallState) -> i128 {
        let start = self.start_at();
        nanos(state.paused_at.unwrap_or_else(Instant::now) - start)
    }

    /// When play time reaches `t` (if the clock runs).
    fn due(&self, t: Duration) -> Instant {
        let start = self.start_at();
        let state = self.state.lock();
        let ahead = (nanos(t) - state.anchor_play) as f64 / state.rate;
        start + duration(state.anchor_wall + ahead as i128)
    }

    /// Play time per wall time.
    fn rate(&self) -> f64 {
        self.state.lock().rate
    }

    /// Play time goes on at `rate` from now, from where it is.
    fn set_rate(&self, rate: f64) {
        let mut state = self.state.lock();
        let wall = self.wall_now(&state);
        state.rebase(wall);
        state.rate = rate;
    }

    /// Every-frame mode: play time stood still for `d` of wall time.
    fn wait_added(&self, d: Duration) {
        let mut state = self.state.lock();
        state.anchor_wall += nanos(d);
        state.waited += d;
    }

    /// Takes over from another source that stood at `t` when last read,
    /// at `at`: play time goes on from there.
    #[cfg(feature = "video")]
    fn go_on_from(&self, t: Duration, at: Instant) {
        let Some(start) = self.started() else {
            return;
        };
        let mut state = self.state.lock();
        let paused = state.paused_at.take();
        state.anchor_play = nanos(t);
        state.anchor_wall = nanos(at.saturating_duration_since(start));
        if let Some(paused) = paused {
            state.rebase(nanos(paused.saturating_duration_since(start)));
            state.paused_at = Some(paused);
        }
    }
}

impl TimeSource for WallClock {
    fn now(&self) -> Option<Duration> {
        self.started()?;
        let state = self.state.lock();
        Some(duration(state.play_at(self.wall_now(&state))))
    }

    fn start(&self) {
        self.start_at();
    }

    fn pause(&self) {
        let mut state = self.state.lock();
        if state.paused_at.is_none() {
            let wall = self.wall_now(&state);
            state.rebase(wall);
            state.paused_at = Some(Instant::now());
        }
    }

    fn resume(&self) {
        let mut state = self.state.lock();
        if state.paused_at.take().is_some() {
            state.anchor_wall = self.wall_now(&state);
        }
    }

    fn set(&self, t: Duration) {
        let mut state = self.state.lock();
        state.anchor_wall = self.wall_now(&state);
        state.anchor_play = nanos(t);
    }
}

/// What the sound's sink has played, never going back.
#[cfg(feature = "video")]
pub(super) struct SoundClock {
    audio: std::sync::Arc<crate::audio::Audio>,
    /// The play time last read, and when: where another source takes over
    /// from, should this one stop keeping time. Held while reading and
    /// while a seek moves the sound, so a reading from before a seek is
    /// never kept after it.
    last: Mutex<Option<(Duration, Instant)>>,
}

#[cfg(feature = "video")]
impl SoundClock {
    fn new(audio: std::sync::Arc<crate::audio::Audio>) -> Self {
        Self {
            audio,
            last: Mutex::new(None),
        }
    }

    /// Play time by the sound; the first time it keeps none, `wall` goes
    /// on from the last reading (under the lock a seek takes, so a reading
    /// from before a seek never moves the wall clock after it).
    fn now_or_hand_over(&self, wall: &WallClock) -> Option<Duration> {
        let mut last = self.last.lock();
        let now = self.read(&mut last);
        if now.is_none()
            && let Some((t, at)) = last.take()
        {
            wall.go_on_from(t, at);
        }
        now
    }

    /// Moves the sound and `wall` to `t` together.
    fn set_with(&self, t: Duration, wall: &WallClock) {
        let mut last = self.last.lock();
        *last = None;
        wall.set(t);
        self.audio.set_play_time(t.as_secs_f64());
    }

    /// The sound's play time, never less than `last` reading, which it
    /// becomes.
    fn read(&self, last: &mut Option<(Duration, Instant)>) -> Option<Duration> {
        let t = self.audio.now()?;
        // A device's word on what it played jitters with its callbacks;
        // the pictures never go back for it.
        let t = Duration::from_secs_f64(t.max(0.0))
            .max(last.map_or(Duration::ZERO, |(before, _)| before));
        *last = Some((t, Instant::now()));
        Some(t)
    }
}

/// The sound's time alone. [`Clock`] reads it through `now_or_hand_over`
/// and moves it through `set_with`, which keep the wall clock with it.
#[cfg(feature = "video")]
impl TimeSource for SoundClock {
    fn now(&self) -> Option<Duration> {
        self.read(&mut self.last.lock())
    }

    fn start(&self) {
        self.audio.start();
    }

    fn pause(&self) {
        self.audio.pause();
    }

    fn resume(&self) {
        self.audio.resume();
    }

    fn set(&self, t: Duration) {
        let mut last = self.last.lock();
        *last = None;
        self.audio.set_play_time(t.as_secs_f64());
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
        clock.follow_sound(Arc::clone(&audio));
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

#[cfg(test)]
mod wall_tests {
    use super::{Clock, TimeSource, WallClock};
    use std::time::Duration;

    #[test]
    fn the_wall_clock_stands_still_while_paused_and_a_seek_moves_it() {
        let wall = WallClock::default();
        assert_eq!(wall.now(), None, "no time before the start");
        wall.start();
        wall.pause();
        let paused = wall.now().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(wall.now().unwrap(), paused, "stands still while paused");
        wall.set(Duration::from_secs(5));
        assert_eq!(
            wall.now().unwrap(),
            Duration::from_secs(5),
            "a seek while paused"
        );
        wall.resume();
        std::thread::sleep(Duration::from_millis(30));
        let t = wall.now().unwrap();
        assert!(
            t >= Duration::from_millis(5030) && t < Duration::from_secs(6),
            "{t:?}"
        );
    }

    #[test]
    fn at_twice_the_rate_play_time_runs_twice_as_fast_from_where_it_was() {
        let clock = Clock::default();
        clock.start();
        clock.pause();
        clock.set(Duration::from_secs(10));
        clock.set_rate(2.0);
        assert_eq!(clock.now(), Some(Duration::from_secs(10)), "no jump");
        assert_eq!(clock.rate(), 2.0);
        // Frame times come twice as fast on the wall.
        let at = |t| clock.due(Duration::from_millis(t));
        assert_eq!(at(12_000) - at(10_000), Duration::from_secs(1));
        clock.resume();
        std::thread::sleep(Duration::from_millis(100));
        let t = clock.now().unwrap();
        assert!(
            t >= Duration::from_millis(10_200) && t < Duration::from_millis(10_600),
            "{t:?} after 100 ms at twice the rate"
        );
        // Half the rate, from where it stands.
        clock.pause();
        let paused = clock.now().unwrap();
        clock.set_rate(0.5);
        assert_eq!(clock.now().unwrap(), paused, "a rate change while paused");
        assert_eq!(at(12_000) - at(11_500), Duration::from_secs(1));
        assert!(!clock.sound_keeps_time(), "no sound here");
    }

    #[test]
    fn a_clock_without_sound_runs_on_the_wall_and_counts_its_waits() {
        let clock = Clock::default();
        assert_eq!(clock.now(), None);
        clock.start();
        clock.pause();
        clock.set(Duration::from_secs(2));
        assert_eq!(clock.now(), Some(Duration::from_secs(2)));
        let second = |t| clock.due(Duration::from_secs(t));
        assert_eq!(second(3) - second(2), Duration::from_secs(1));
        clock.wait_added(Duration::from_millis(40));
        assert_eq!(clock.waited(), Duration::from_millis(40));
        assert!(clock.paused());
    }
}
