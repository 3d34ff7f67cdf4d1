//! [`Watch`]: what a running player tells whoever drives it: the state
//! of playback now, the events as they happen (through a channel, so the
//! caller never polls a lock to hear of them), and the picture it drew.

use crate::cache::FrameCache;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::Duration;

/// Events a watch holds for a caller who has not read them: past these,
/// the oldest go.
pub const EVENT_QUEUE: usize = 1024;

/// What happened to playback.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A new frame is on screen: its position in the range.
    FrameChanged(usize),
    /// The clock started (play, or resume).
    PlayStarted,
    /// The clock stopped (pause, a step, the end of a range that does not
    /// loop).
    PlayStopped,
    /// What the frame cache holds changed (frames decoded, let go, put
    /// on the device): ask [`Watch::cache_info`] for it. Sent at most
    /// every [`CACHE_EVERY`].
    CacheChanged,
    /// Playback ended (closed, or every tick asked for has run).
    Ended,
    /// Playback failed: the error, as text (the player's `close` returns
    /// it typed).
    Error(String),
}

/// The state of playback at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// The position on screen in the range (0 is its first frame); `None`
    /// before the first frame.
    pub position: Option<usize>,
    /// Whether the clock runs.
    pub playing: bool,
    /// Positions in the range.
    pub len: usize,
    /// The in and out points: the first position played and one past the
    /// last (`0, len` unless [`Command::Range`](crate::Command) set them).
    pub range: (usize, usize),
    /// Whether playback loops.
    pub looped: bool,
    /// Whether playback has ended.
    pub ended: bool,
    /// The frame on screen's own number: a sequence's file frame number
    /// (`shot.1001.exr`: 1001), a movie's position.
    pub number: Option<i64>,
    /// Frames per second of the source's clock (its timecode's base).
    pub fps: f64,
    /// Play time per wall time: 1 plays at the frame rate.
    pub rate: f64,
    /// How scene-linear frames are shown (exposure, transfer function);
    /// `None` for display-referred sources, drawn as they are.
    pub display: Option<crate::render::Display>,
}

impl Default for Status {
    fn default() -> Self {
        Self {
            position: None,
            playing: false,
            len: 0,
            range: (0, 0),
            looped: false,
            ended: false,
            number: None,
            fps: 0.0,
            rate: 1.0,
            display: None,
        }
    }
}

impl Status {
    /// The frame on screen's timecode, hours:minutes:seconds:frames from
    /// the range's first frame at whole frames per second (no drop-frame
    /// counting), as the heads-up display shows it; `None` before the
    /// first frame.
    pub fn timecode(&self) -> Option<String> {
        let position = self.position?;
        Some(crate::player::output::timecode(position as u64, self.fps))
    }
}

/// What the frame cache holds, for a cache bar (the fields of OpenRV's
/// `cacheInfo()`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheInfo {
    /// Bytes the cache may hold.
    pub budget: u64,
    /// Bytes it holds.
    pub bytes: u64,
    /// Frames it holds in RAM.
    pub frames: u64,
    /// Frames held one after another from the one on screen on (past the
    /// end into the start when looping), the one on screen not counted.
    pub ahead: usize,
    /// Frames held one after another before the one on screen.
    pub behind: usize,
    /// The positions held in RAM, as first-last runs, in order.
    pub ram: Vec<(usize, usize)>,
    /// The positions held on the device (the GPU tier) instead, as runs.
    pub device: Vec<(usize, usize)>,
}

/// Sorted positions as first-last runs.
fn runs(mut positions: Vec<usize>) -> Vec<(usize, usize)> {
    positions.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for p in positions {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == p => *last = p,
            _ => out.push((p, p)),
        }
    }
    out
}

/// How many of the positions after `from` (before it, `forward` false)
/// are held, one after another, wrapping around `len` when `looped`.
fn held_run(
    held: &[(usize, usize)],
    from: usize,
    len: usize,
    looped: bool,
    forward: bool,
) -> usize {
    let has = |p: usize| held.iter().any(|&(a, b)| a <= p && p <= b);
    let mut n = 0;
    let mut at = from;
    while n + 1 < len {
        at = match (forward, looped) {
            (true, _) if at + 1 < len => at + 1,
            (true, true) => 0,
            (false, _) if at > 0 => at - 1,
            (false, true) => len - 1,
            _ => break,
        };
        if !has(at) {
            break;
        }
        n += 1;
    }
    n
}

/// The sending end of a watch's events, and a receiving end of its own to
/// let the oldest go when the caller has not read them.
#[derive(Debug)]
struct Queue {
    send: Sender<Event>,
    oldest: Receiver<Event>,
}

/// The player's side of the watch: where the render loop reports.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    status: Mutex<Status>,
    /// Wakes those waiting for a change of status.
    changed: Condvar,
    events: Mutex<Option<Queue>>,
    /// Events let go unread because the queue was full.
    lost: std::sync::atomic::AtomicU64,
    /// The texture the player draws the picture into, once it has one.
    picture: Mutex<Option<wgpu::Texture>>,
    /// The frame cache, where the source has one.
    cache: Mutex<Option<Arc<FrameCache>>>,
    /// The render loop's latest progress: the summary so far.
    progress: Mutex<Option<crate::Progress>>,
    /// When the cache was last looked at, and what it held then.
    cache_seen: Mutex<Option<(std::time::Instant, CacheMark)>>,
}

/// What a look at the frame cache found, to tell whether it changed: its
/// frames and bytes, its counts of frames decoded and let go, and the
/// frames on the device.
type CacheMark = (u64, u64, u64, u64, usize);

/// Longest the cache-changed event lags behind the cache, and shortest
/// time between two of them.
pub const CACHE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl Watch {
    /// A watch and the receiving end of its events.
    pub fn new() -> (Self, Receiver<Event>) {
        let (send, receive) = crossbeam_channel::bounded(EVENT_QUEUE);
        let watch = Self::default();
        *watch.inner.events.lock() = Some(Queue {
            send,
            oldest: receive.clone(),
        });
        (watch, receive)
    }

    /// The state of playback now.
    pub fn status(&self) -> Status {
        *self.inner.status.lock()
    }

    /// Sends [`Event::CacheChanged`] when what the frame cache holds
    /// changed since the last look; looks at most every [`CACHE_EVERY`].
    pub(crate) fn look_at_cache(&self) {
        let Some(cache) = self.inner.cache.lock().clone() else {
            return;
        };
        let now = std::time::Instant::now();
        let mut seen = self.inner.cache_seen.lock();
        if seen.is_some_and(|(at, _)| now - at < CACHE_EVERY) {
            return;
        }
        let stats = cache.stats();
        let mut device = 0;
        cache.device_positions(|_| device += 1);
        let mark = (
            stats.frames,
            stats.bytes,
            stats.decoded,
            stats.evicted + stats.played_let_go,
            device,
        );
        let changed = seen.is_none_or(|(_, before)| before != mark);
        *seen = Some((now, mark));
        drop(seen);
        if changed {
            self.send(Event::CacheChanged);
        }
    }

    /// The texture the picture is drawn into, once there is one.
    pub fn picture(&self) -> Option<wgpu::Texture> {
        self.inner.picture.lock().clone()
    }

    /// What the frame cache holds now; `None` for a source without one
    /// (synthetic frames).
    pub fn cache_info(&self) -> Option<CacheInfo> {
        let cache = self.inner.cache.lock().clone()?;
        let stats = cache.stats();
        let (mut ram, mut device) = (Vec::new(), Vec::new());
        cache.held_positions(|p| ram.push(p));
        cache.device_positions(|p| device.push(p));
        let (ram, device) = (runs(ram), runs(device));
        let status = self.status();
        let (ahead, behind) = match status.position {
            Some(at) => {
                let all: Vec<(usize, usize)> = ram.iter().chain(&device).copied().collect();
                (
                    held_run(&all, at, status.len, status.looped, true),
                    held_run(&all, at, status.len, status.looped, false),
                )
            }
            None => (0, 0),
        };
        Some(CacheInfo {
            budget: stats.budget,
            bytes: stats.bytes,
            frames: stats.frames,
            ahead,
            behind,
            ram,
            device,
        })
    }

    /// The render loop's latest progress (ticks run, frames pushed, shown,
    /// dropped and late so far, the upload bandwidth); `None` before its
    /// first tick.
    pub fn progress(&self) -> Option<crate::Progress> {
        *self.inner.progress.lock()
    }

    /// Records the render loop's progress, for [`progress`](Self::progress).
    pub(crate) fn set_progress(&self, progress: crate::Progress) {
        *self.inner.progress.lock() = Some(progress);
    }

    /// Records the frame cache, for [`cache_info`](Self::cache_info).
    pub(crate) fn set_cache(&self, cache: Arc<FrameCache>) {
        *self.inner.cache.lock() = Some(cache);
    }

    /// Waits up to `timeout` for `until` to hold of the status; whether it
    /// does.
    pub fn wait(&self, timeout: Duration, until: impl Fn(&Status) -> bool) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut status = self.inner.status.lock();
        while !until(&status) {
            if self
                .inner
                .changed
                .wait_until(&mut status, deadline)
                .timed_out()
            {
                return until(&status);
            }
        }
        true
    }

    /// Events let go unread because the queue was full.
    pub fn events_lost(&self) -> u64 {
        self.inner.lost.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records `next` as the state of playback and sends the events its
    /// difference from the last makes.
    pub(crate) fn update(&self, next: Status) {
        let before = std::mem::replace(&mut *self.inner.status.lock(), next);
        if before.position != next.position
            && let Some(p) = next.position
        {
            self.send(Event::FrameChanged(p));
        }
        if before.playing != next.playing {
            self.send(if next.playing {
                Event::PlayStarted
            } else {
                Event::PlayStopped
            });
        }
        if next.ended && !before.ended {
            self.send(Event::Ended);
        }
        self.inner.changed.notify_all();
    }

    /// Records the texture the picture is drawn into.
    pub(crate) fn set_picture(&self, texture: wgpu::Texture) {
        *self.inner.picture.lock() = Some(texture);
        self.inner.changed.notify_all();
    }

    /// Reports a failure: an error event, and playback ended.
    pub(crate) fn failed(&self, error: String) {
        self.send(Event::Error(error));
        let mut next = self.status();
        next.playing = false;
        next.ended = true;
        self.update(next);
    }

    /// Queues `event`; when the caller has left [`EVENT_QUEUE`] events
    /// unread, the oldest goes to make room (counted in
    /// [`events_lost`](Self::events_lost)), so a caller who never reads
    /// costs no memory and one who reads late hears the newest.
    fn send(&self, event: Event) {
        let Some(queue) = &*self.inner.events.lock() else {
            return;
        };
        let mut event = event;
        loop {
            match queue.send.try_send(event) {
                // Nobody listening is no error.
                Ok(()) | Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(back)) => {
                    event = back;
                    if queue.oldest.try_recv().is_ok() {
                        self.inner
                            .lost
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_become_runs_and_runs_count_ahead_and_behind() {
        let held = runs(vec![7, 0, 1, 2, 5, 6, 9]);
        assert_eq!(held, vec![(0, 2), (5, 7), (9, 9)]);
        // From 1 in 10: 2 ahead, then 3 is missing; 0 behind, then 9
        // only when looping.
        assert_eq!(held_run(&held, 1, 10, false, true), 1);
        assert_eq!(held_run(&held, 1, 10, false, false), 1);
        assert_eq!(held_run(&held, 1, 10, true, false), 2);
        assert_eq!(held_run(&held, 9, 10, true, true), 3);
        assert_eq!(held_run(&held, 9, 10, false, true), 0);
        assert_eq!(
            held_run(&[(0, 3)], 0, 4, true, true),
            3,
            "never past itself"
        );
    }

    #[test]
    fn a_player_whose_events_are_never_read_keeps_only_the_newest() {
        // An application that polls the status and never reads the events
        // (a day at 24 fps is two million frame changes).
        let (watch, events) = Watch::new();
        let n = 10 * EVENT_QUEUE;
        for p in 0..n {
            watch.update(Status {
                position: Some(p),
                playing: true,
                len: n,
                ..Status::default()
            });
        }
        assert_eq!(events.len(), EVENT_QUEUE, "the queue is bounded");
        // n frame changes and one start.
        assert_eq!(watch.events_lost(), (n + 1 - EVENT_QUEUE) as u64);
        let got: Vec<Event> = events.try_iter().collect();
        assert_eq!(
            got.last(),
            Some(&Event::FrameChanged(n - 1)),
            "the newest kept"
        );
        assert_eq!(got[0], Event::FrameChanged(n - EVENT_QUEUE), "in order");
    }

    #[test]
    fn changes_of_status_become_events_in_order() {
        let (watch, events) = Watch::new();
        let at = |position, playing| Status {
            position,
            playing,
            len: 10,
            ..Status::default()
        };
        watch.update(at(Some(0), false));
        watch.update(at(Some(0), true));
        watch.update(at(Some(1), true));
        watch.update(at(Some(1), true));
        watch.update(at(Some(4), false));
        watch.failed("gone".into());
        let got: Vec<Event> = events.try_iter().collect();
        assert_eq!(
            got,
            vec![
                Event::FrameChanged(0),
                Event::PlayStarted,
                Event::FrameChanged(1),
                Event::FrameChanged(4),
                Event::PlayStopped,
                Event::Error("gone".into()),
                Event::Ended,
            ]
        );
        assert!(watch.wait(Duration::ZERO, |s| s.ended));
        assert!(!watch.wait(Duration::from_millis(10), |s| s.playing));
    }
}
