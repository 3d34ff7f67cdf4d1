//! [`Watch`]: what a running player tells whoever drives it: the state
//! of playback now, the events as they happen (through a channel, so the
//! caller never polls a lock to hear of them), and the picture it drew.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

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
    /// Playback ended (closed, or every tick asked for has run).
    Ended,
    /// Playback failed: the error, as text (the player's `close` returns
    /// it typed).
    Error(String),
}

/// The state of playback at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// The position on screen in the range (0 is its first frame); `None`
    /// before the first frame.
    pub position: Option<usize>,
    /// Whether the clock runs.
    pub playing: bool,
    /// Positions in the range.
    pub len: usize,
    /// Whether playback loops.
    pub looped: bool,
    /// Whether playback has ended.
    pub ended: bool,
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
    events: Mutex<Option<Sender<Event>>>,
    /// The texture the player draws the picture into, once it has one.
    picture: Mutex<Option<wgpu::Texture>>,
}

impl Watch {
    /// A watch and the receiving end of its events.
    pub fn new() -> (Self, Receiver<Event>) {
        let (send, receive) = std::sync::mpsc::channel();
        let watch = Self::default();
        *watch.inner.events.lock() = Some(send);
        (watch, receive)
    }

    /// The state of playback now.
    pub fn status(&self) -> Status {
        *self.inner.status.lock()
    }

    /// The texture the picture is drawn into, once there is one.
    pub fn picture(&self) -> Option<wgpu::Texture> {
        self.inner.picture.lock().clone()
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

    fn send(&self, event: Event) {
        if let Some(events) = &*self.inner.events.lock() {
            // Nobody listening is no error.
            let _ = events.send(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
