//! Transport: what the user asks of playback (pause, step, seek, loop),
//! and the route that maps the clock's ticks to sequence positions once
//! playback has been moved around.
//!
//! Ticks only ever increase, so the frame queue's frame numbers do too: a
//! seek starts a new leg of the route at a tick past everything the
//! producer has pushed, and the render loop discards what was pushed for
//! the old leg. The producer and the render loop agree on each tick's
//! position through one shared route.

use parking_lot::{Condvar, Mutex};

/// A tick of the player's clock: the n-th frame time since playback
/// started, at the target rate. Ticks only increase (a seek starts a new
/// leg of the route at a later tick), so a tick also numbers the
/// frame pushed for it into the frame queue. Positions in the range are
/// `usize`, frame numbers of a sequence's files `i64`: three kinds of
/// number, three types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tick(pub u64);

impl Tick {
    /// The first tick of a run.
    pub const ZERO: Self = Self(0);

    /// The tick's number (the frame queue's frame number).
    pub fn get(self) -> u64 {
        self.0
    }

    /// The tick after this one.
    pub fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }

    /// Ticks from `earlier` to this one; `None` when `earlier` comes after.
    pub fn since(self, earlier: Self) -> Option<u64> {
        self.0.checked_sub(earlier.0)
    }
}

impl std::ops::Add<u64> for Tick {
    type Output = Self;
    fn add(self, ticks: u64) -> Self {
        Self(self.0.saturating_add(ticks))
    }
}

impl std::fmt::Display for Tick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tick {}", self.0)
    }
}

/// What the user (a key, a click, a script) asks of playback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    /// Pause, or resume (from the first frame, when paused at the end of
    /// a sequence that does not loop).
    TogglePause,
    /// Resume (as [`TogglePause`](Self::TogglePause) does when paused);
    /// nothing when playing.
    Play,
    /// Pause; nothing when paused.
    Pause,
    /// Step this many frames forward (`1`) or back (`-1`), pausing.
    Step(i64),
    /// Go to the first frame of the range.
    First,
    /// Go to the last frame of the range.
    Last,
    /// Go to a position in the sequence (a click on the timeline).
    Seek(usize),
    /// Loop on or off.
    ToggleLoop,
    /// Loop on (`true`) or off.
    Loop(bool),
    /// Change the exposure of scene-linear sources by this many stops.
    Exposure(f32),
    /// Set the exposure of scene-linear sources to this many stops.
    SetExposure(f32),
    /// Fullscreen on or off.
    ToggleFullscreen,
    /// Heads-up display on or off.
    ToggleHud,
    /// Ask the window for this inner size, in pixels (a script's resize;
    /// the window system may give another); headless, draw the picture at
    /// this size from now on.
    Resize(u32, u32),
    /// Play only positions `first` to `last` (in and out points, both
    /// played; clamped to the sequence, `0, usize::MAX` is all of it):
    /// loops wrap from `last` to `first`, the first and last frames are
    /// theirs, seeks and steps stay inside. A frame on screen outside
    /// them moves to `first`.
    Range(usize, usize),
    /// Set the in point at the frame on screen (the out point stays,
    /// unless it is before it: then the range runs to the end).
    InPoint,
    /// Set the out point at the frame on screen (the in point stays,
    /// unless it is after it: then the range starts at the first frame).
    OutPoint,
    /// Play at this many times the frame rate from now on (clamped to
    /// [`MIN_RATE`] to [`MAX_RATE`]; a value that is not a number is
    /// ignored). The sound plays at 1 only: at any other rate it is
    /// silent, and the wall clock keeps time.
    Rate(f64),
    /// Play at this many times the rate now (a key's faster or slower),
    /// within the same bounds as [`Rate`](Self::Rate).
    RateTimes(f64),
    /// Show scene-linear sources through this transfer function
    /// (display-referred sources are drawn as they are).
    Transfer(crate::render::Transfer),
    /// The next transfer function: sRGB, then BT.709, then linear.
    NextTransfer,
    /// End playback.
    Quit,
}

/// The slowest rate [`Command::Rate`] plays at.
pub const MIN_RATE: f64 = 1.0 / 16.0;
/// The fastest rate [`Command::Rate`] plays at.
pub const MAX_RATE: f64 = 16.0;

/// `rate` made one [`Command::Rate`] plays at: clamped to [`MIN_RATE`] to
/// [`MAX_RATE`]; `None` for a value that is not a number.
pub fn bounded_rate(rate: f64) -> Option<f64> {
    (!rate.is_nan()).then(|| rate.clamp(MIN_RATE, MAX_RATE))
}

impl Command {
    /// Whether it moves playback to a place that does not depend on where
    /// it is (a later one of these makes an earlier one moot).
    fn is_absolute(self) -> bool {
        matches!(self, Self::First | Self::Last | Self::Seek(_))
    }
}

/// Commands for a player from outside it (a script, a test, another
/// thread): clone it into [`PlayOptions::remote`](crate::PlayOptions) and
/// [`send`](Self::send) while playback runs. The render loop takes them
/// with the window's own, between ticks (headless, at each tick's time).
#[derive(Clone, Debug, Default)]
pub struct Remote {
    waiting: std::sync::Arc<Mutex<Vec<Command>>>,
}

impl Remote {
    /// A remote with nothing sent yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `command`; it runs between the player's next ticks.
    pub fn send(&self, command: Command) {
        self.waiting.lock().push(command);
    }

    /// The commands sent since the last call, oldest first.
    pub(crate) fn take(&self) -> Vec<Command> {
        std::mem::take(&mut *self.waiting.lock())
    }
}

/// The commands that arrived together, as they are to run: a quit alone
/// (nothing queued before it delays the end), a run of steps as one step
/// of their sum (a held arrow key waits for one frame, not one each), a
/// run of seeks as the last of them. Steps that cancel out remain a step
/// of 0: they still pause, as each would have.
pub fn coalesce(commands: Vec<Command>) -> Vec<Command> {
    if commands.contains(&Command::Quit) {
        return vec![Command::Quit];
    }
    let mut out: Vec<Command> = Vec::with_capacity(commands.len());
    for command in commands {
        match (out.last_mut(), command) {
            (Some(Command::Step(sum)), Command::Step(n)) => *sum = sum.saturating_add(n),
            (Some(last), next) if last.is_absolute() && next.is_absolute() => *last = next,
            _ => out.push(command),
        }
    }
    out
}

/// One leg of the route: ticks from `start_tick` on show positions from
/// `start_pos` on, one per tick, within the in and out points `span`
/// (first position, one past the last). A tick becomes a position only
/// here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Leg {
    start_tick: Tick,
    start_pos: usize,
    looped: bool,
    span: (usize, usize),
}

/// Ticks since a leg's start as a count of positions (saturating: no
/// range is that long).
fn steps(ticks: u64) -> usize {
    usize::try_from(ticks).unwrap_or(usize::MAX)
}

/// The position a tick shows on a leg; `None` before the leg starts, or
/// past the end of a range that does not loop.
fn position_on(leg: Leg, tick: Tick) -> Option<usize> {
    let step = steps(tick.since(leg.start_tick)?);
    let pos = leg.start_pos.checked_add(step)?;
    let (first, end) = leg.span;
    let pos = if leg.looped && pos >= end {
        first + (pos - first) % (end - first).max(1)
    } else {
        pos
    };
    (pos < end).then_some(pos)
}

/// Legs kept: the render loop runs a few ticks behind the producer, so
/// only the last few legs map ticks it has still to run.
const LEGS_KEPT: usize = 64;

struct State {
    /// The legs, oldest first; the last is the one the producer is on.
    /// A tick maps through the last leg starting at or before it.
    legs: std::collections::VecDeque<Leg>,
    /// The next tick the producer will claim.
    next: Tick,
    closed: bool,
}

impl State {
    /// The leg the producer is on.
    fn leg(&self) -> Leg {
        *self.legs.back().expect("a route always has a leg")
    }

    /// Starts a leg; ticks before it keep mapping through the old ones.
    fn push(&mut self, leg: Leg) {
        // A leg starting where the last starts replaces it.
        while self
            .legs
            .back()
            .is_some_and(|l| l.start_tick >= leg.start_tick)
        {
            self.legs.pop_back();
        }
        self.legs.push_back(leg);
        if self.legs.len() > LEGS_KEPT {
            self.legs.pop_front();
        }
    }
}

/// The route from ticks to positions, shared by the producer (which claims
/// ticks in order) and the render loop (which moves it).
pub(crate) struct Route {
    len: usize,
    state: Mutex<State>,
    moved: Condvar,
}

/// What the producer gets for its next tick.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Push tick `tick`, showing position `pos`.
    Tick { tick: Tick, pos: usize },
    /// The route is closed: stop.
    Closed,
}

impl Route {
    /// A route over `len` positions starting at `start` on tick 0.
    pub(crate) fn new(len: usize, start: usize, looped: bool) -> Self {
        Self {
            len,
            state: Mutex::new(State {
                legs: [Leg {
                    start_tick: Tick::ZERO,
                    start_pos: start,
                    looped,
                    span: (0, len),
                }]
                .into(),
                next: Tick::ZERO,
                closed: false,
            }),
            moved: Condvar::new(),
        }
    }

    /// Positions on the route.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The in and out points now: the first position played and one past
    /// the last.
    pub(crate) fn span(&self) -> (usize, usize) {
        self.state.lock().leg().span
    }

    /// The position tick `tick` shows, as the route stands now: through
    /// the leg it belongs to.
    pub(crate) fn position(&self, tick: Tick) -> Option<usize> {
        let state = self.state.lock();
        let leg = state.legs.iter().rev().find(|l| l.start_tick <= tick)?;
        position_on(*leg, tick)
    }

    /// Whether the route loops.
    pub(crate) fn looped(&self) -> bool {
        self.state.lock().leg().looped
    }

    /// The producer's next tick and its position. Past the end of a
    /// sequence that does not loop it waits for the route to move (a
    /// seek), or to close.
    pub(crate) fn claim(&self) -> Claim {
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return Claim::Closed;
            }
            let tick = state.next.max(state.leg().start_tick);
            if let Some(pos) = position_on(state.leg(), tick) {
                state.next = tick.next();
                return Claim::Tick { tick, pos };
            }
            self.moved.wait(&mut state);
        }
    }

    /// Starts a new leg at position `pos` (kept within the in and out
    /// points), from a tick no earlier than `earliest` and past every tick
    /// the producer has claimed; returns that tick. Frames pushed for
    /// earlier ticks belong to the old leg.
    pub(crate) fn seek(&self, earliest: Tick, pos: usize) -> Tick {
        let mut state = self.state.lock();
        let start = earliest.max(state.next);
        let Leg { looped, span, .. } = state.leg();
        state.push(Leg {
            start_tick: start,
            start_pos: pos.clamp(span.0, span.1.saturating_sub(1).max(span.0)),
            looped,
            span,
        });
        self.moved.notify_all();
        start
    }

    /// Turns looping on or off for the ticks the producer has not claimed
    /// yet (those it has keep the positions they were pushed with).
    pub(crate) fn set_looped(&self, looped: bool) {
        let mut state = self.state.lock();
        let leg = state.leg();
        if leg.looped == looped {
            return;
        }
        let next = state.next.max(leg.start_tick);
        // Where the old leg would have gone next, unwrapped; turning the
        // loop off at the wrap point ends the route there.
        let step = steps(next.since(leg.start_tick).unwrap_or(0));
        let (first, end) = leg.span;
        let mut pos = leg.start_pos.saturating_add(step);
        if leg.looped && pos >= end {
            pos = first + (pos - first) % (end - first).max(1);
            if pos == first && step > 0 {
                pos = end;
            }
        }
        state.push(Leg {
            start_tick: next,
            start_pos: pos,
            looped,
            span: leg.span,
        });
        self.moved.notify_all();
    }

    /// Plays only positions `first` to `last` (both played; clamped to
    /// the route) from the ticks the producer has not claimed yet: they go
    /// on where the old leg would have, where that is inside, else from
    /// `first`; a route that had ended stays ended. Returns the in and out
    /// points set (first, one past the last).
    pub(crate) fn set_range(&self, first: usize, last: usize) -> (usize, usize) {
        let last = last.min(self.len.saturating_sub(1));
        let first = first.min(last);
        let span = (first, last + 1);
        let mut state = self.state.lock();
        let leg = state.leg();
        let next = state.next.max(leg.start_tick);
        let start_pos = match position_on(leg, next) {
            Some(p) if (first..last + 1).contains(&p) => p,
            Some(_) => first,
            None => span.1,
        };
        state.push(Leg {
            start_tick: next,
            start_pos,
            looped: leg.looped,
            span,
        });
        self.moved.notify_all();
        span
    }

    /// Ends the route: the producer's claim answers [`Claim::Closed`].
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.moved.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quit_behind_queued_steps_and_seeks_runs_alone() {
        let queued = vec![
            Command::Step(1),
            Command::Seek(40),
            Command::Quit,
            Command::Step(1),
        ];
        assert_eq!(coalesce(queued), vec![Command::Quit]);
    }

    #[test]
    fn a_held_arrow_keys_repeated_steps_are_one_step_of_their_sum() {
        let repeated = vec![Command::Step(1); 12];
        assert_eq!(coalesce(repeated), vec![Command::Step(12)]);
        let back_and_forth = vec![Command::Step(1), Command::Step(-1), Command::Step(-1)];
        assert_eq!(coalesce(back_and_forth), vec![Command::Step(-1)]);
        // Other commands between steps keep their order.
        let mixed = vec![
            Command::Step(1),
            Command::ToggleLoop,
            Command::Step(1),
            Command::Step(1),
        ];
        assert_eq!(
            coalesce(mixed),
            vec![Command::Step(1), Command::ToggleLoop, Command::Step(2)]
        );
    }

    #[test]
    fn clicks_along_the_timeline_seek_only_to_the_last() {
        let drag = vec![
            Command::Seek(3),
            Command::Seek(9),
            Command::Last,
            Command::Seek(20),
        ];
        assert_eq!(coalesce(drag), vec![Command::Seek(20)]);
    }

    fn claims(route: &Route, n: usize) -> Vec<(u64, usize)> {
        (0..n)
            .map(|_| match route.claim() {
                Claim::Tick { tick, pos } => (tick.get(), pos),
                Claim::Closed => panic!("closed"),
            })
            .collect()
    }

    #[test]
    fn a_looped_route_wraps_and_a_straight_one_ends() {
        let route = Route::new(3, 0, true);
        assert_eq!(claims(&route, 5), [(0, 0), (1, 1), (2, 2), (3, 0), (4, 1)]);
        let straight = Route::new(3, 1, false);
        assert_eq!(claims(&straight, 2), [(0, 1), (1, 2)]);
        assert_eq!(straight.position(Tick(2)), None, "past the end");
    }

    #[test]
    fn a_seek_starts_past_every_claimed_tick() {
        let route = Route::new(10, 0, false);
        assert_eq!(claims(&route, 4).last(), Some(&(3, 3)));
        // The render loop is at tick 1; the producer has claimed up to 3.
        let start = route.seek(Tick(2), 7);
        assert_eq!(start, Tick(4), "after the producer's last claim");
        assert_eq!(claims(&route, 2), [(4, 7), (5, 8)]);
        assert_eq!(
            route.position(Tick(3)),
            Some(3),
            "tick 3 keeps the old leg's position (its frame is discarded)"
        );
        // A seek to a later tick than the producer's starts there.
        assert_eq!(route.seek(Tick(20), 0), Tick(20));
        assert_eq!(claims(&route, 1), [(20, 0)]);
    }

    #[test]
    fn a_looped_range_wraps_from_its_out_point_to_its_in_point() {
        let route = Route::new(10, 0, true);
        assert_eq!(claims(&route, 2), [(0, 0), (1, 1)]);
        assert_eq!(route.set_range(2, 4), (2, 5));
        // Position 2 is next and inside: play goes on from there, then
        // wraps from 4 to 2.
        assert_eq!(claims(&route, 5), [(2, 2), (3, 3), (4, 4), (5, 2), (6, 3)]);
        assert_eq!(
            route.position(Tick(1)),
            Some(1),
            "claimed ticks keep theirs"
        );
    }

    #[test]
    fn a_range_that_leaves_the_next_position_out_starts_at_its_in_point() {
        let route = Route::new(10, 6, false);
        assert_eq!(claims(&route, 1), [(0, 6)]);
        route.set_range(1, 3);
        assert_eq!(claims(&route, 3), [(1, 1), (2, 2), (3, 3)]);
        assert_eq!(
            route.position(Tick(4)),
            None,
            "a range that does not loop ends at its out point"
        );
    }

    #[test]
    fn seeks_stay_inside_the_range_and_clearing_it_plays_everything_again() {
        let route = Route::new(10, 0, true);
        route.set_range(3, 5);
        assert_eq!(
            route.position(route.seek(Tick(0), 9)),
            Some(5),
            "past the out point"
        );
        assert_eq!(
            route.position(route.seek(Tick(0), 0)),
            Some(3),
            "before the in point"
        );
        assert_eq!(route.set_range(0, usize::MAX), (0, 10));
        assert_eq!(route.span(), (0, 10));
        let start = route.seek(Tick(0), 9);
        assert_eq!(
            route.position(start + 1),
            Some(0),
            "the whole sequence wraps"
        );
    }

    #[test]
    fn an_inverted_or_outlying_range_is_clamped_to_the_sequence() {
        let route = Route::new(10, 0, false);
        assert_eq!(route.set_range(7, 2), (2, 3), "in past out: out wins");
        assert_eq!(route.set_range(20, 30), (9, 10));
    }

    #[test]
    fn turning_the_loop_off_at_a_ranges_out_point_ends_there() {
        let route = Route::new(10, 0, true);
        // Set before any claim: position 0 is outside, so play starts at
        // the in point.
        route.set_range(2, 4);
        assert_eq!(claims(&route, 3), [(0, 2), (1, 3), (2, 4)]);
        route.set_looped(false);
        assert_eq!(route.position(Tick(3)), None);
    }

    #[test]
    fn a_seek_past_the_end_is_clamped_to_the_last_position() {
        let route = Route::new(5, 0, false);
        let start = route.seek(Tick(0), 99);
        assert_eq!(route.position(start), Some(4));
    }

    #[test]
    fn a_producer_waiting_at_the_end_goes_on_after_a_seek_and_stops_on_close() {
        let route = std::sync::Arc::new(Route::new(2, 0, false));
        assert_eq!(claims(&route, 2), [(0, 0), (1, 1)]);
        let waiting = {
            let route = std::sync::Arc::clone(&route);
            std::thread::spawn(move || (route.claim(), route.claim()))
        };
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(!waiting.is_finished(), "nothing to claim past the end");
        let start = route.seek(Tick(2), 0);
        std::thread::sleep(std::time::Duration::from_millis(30));
        route.close();
        let (first, second) = waiting.join().unwrap();
        assert_eq!(
            first,
            Claim::Tick {
                tick: start,
                pos: 0
            }
        );
        // The seek's leg also has a second position before the end.
        assert!(
            second
                == Claim::Tick {
                    tick: start + 1,
                    pos: 1
                }
                || second == Claim::Closed,
            "{second:?}"
        );
    }

    #[test]
    fn turning_the_loop_off_while_playing_keeps_the_ticks_already_claimed() {
        // The producer runs ahead of the render loop: ticks 0 to 3 are
        // claimed when the loop is at tick 1 and the user presses L.
        let route = Route::new(10, 0, true);
        assert_eq!(claims(&route, 4).last(), Some(&(3, 3)));
        route.set_looped(false);
        for tick in 1..4 {
            assert_eq!(
                route.position(Tick(tick)),
                Some(tick as usize),
                "tick {tick}"
            );
        }
        assert_eq!(claims(&route, 1), [(4, 4)]);
    }

    #[test]
    fn turning_the_loop_off_keeps_the_place_and_ends_at_the_last_position() {
        let route = Route::new(3, 0, true);
        assert_eq!(claims(&route, 2), [(0, 0), (1, 1)]);
        route.set_looped(false);
        assert_eq!(claims(&route, 1), [(2, 2)]);
        assert_eq!(route.position(Tick(3)), None);
        // Off exactly at the wrap point: the route ends rather than restart.
        let wrap = Route::new(2, 0, true);
        assert_eq!(claims(&wrap, 2), [(0, 0), (1, 1)]);
        wrap.set_looped(false);
        assert_eq!(wrap.position(Tick(2)), None);
        // And on again: the next tick wraps.
        wrap.set_looped(true);
        assert_eq!(wrap.position(Tick(2)), Some(0));
    }
}
