//! Admission: the bytes of staging in flight across the engine, and the
//! line of uploads waiting for room. [`Admission`] is the data;
//! [`Gate`] keeps it under one lock and wakes waiters with a condition
//! variable.

use super::error::UploadError;
use crate::sync::{Condvar, Mutex};
use std::collections::VecDeque;

/// What an upload does when the engine or its resource is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IfFull {
    /// Wait for room (in line with other waiters).
    #[default]
    Wait,
    /// Fail at once with [`UploadError::WouldBlock`](super::UploadError::WouldBlock).
    Refuse,
}

/// Bytes in flight, of those the background uploads' (which never take
/// room from the others), and the waiters in line.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    bytes: u64,
    uploads: u64,
    background_bytes: u64,
    background_uploads: u64,
    /// Waiting uploads' tickets, in arrival order: foreground, background.
    line: [VecDeque<u64>; 2],
    next_ticket: u64,
}

impl Admission {
    /// Whether `bytes` more of this kind must wait. One upload larger than
    /// the bound is let in when nothing of its kind is in flight.
    /// Background uploads get room only while the whole engine is under the
    /// bound; the others count only themselves, so waiting background
    /// uploads cannot starve them (the engine may then hold up to twice the
    /// bound).
    fn full(&self, bytes: u64, background: bool, bound: u64) -> bool {
        let (held, uploads) = if background {
            (self.bytes, self.uploads)
        } else {
            (
                self.bytes - self.background_bytes,
                self.uploads - self.background_uploads,
            )
        };
        uploads > 0 && held.saturating_add(bytes) > bound
    }

    /// Whether an upload may take its bytes now: there is room, and no one
    /// of its kind waits ahead of it (`ticket`: its place in line, if it
    /// waits). A large upload is not passed over by a stream of small ones.
    pub fn may_enter(&self, bytes: u64, background: bool, bound: u64, ticket: Option<u64>) -> bool {
        let line = &self.line[usize::from(background)];
        let first = match ticket {
            Some(t) => line.front() == Some(&t),
            None => line.is_empty(),
        };
        first && !self.full(bytes, background, bound)
    }

    /// Joins the line; returns the ticket.
    pub fn line_up(&mut self, background: bool) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.line[usize::from(background)].push_back(ticket);
        ticket
    }

    /// Leaves the line (admitted, or giving up).
    pub fn leave(&mut self, background: bool, ticket: u64) {
        self.line[usize::from(background)].retain(|&t| t != ticket);
    }

    pub fn add(&mut self, bytes: u64, background: bool) {
        self.bytes += bytes;
        self.uploads += 1;
        if background {
            self.background_bytes += bytes;
            self.background_uploads += 1;
        }
    }

    pub fn remove(&mut self, bytes: u64, background: bool) {
        self.bytes -= bytes;
        self.uploads -= 1;
        if background {
            self.background_bytes -= bytes;
            self.background_uploads -= 1;
        }
    }
}

/// The engine's in-flight bound, and the uploads waiting at it.
#[derive(Debug)]
pub(crate) struct Gate {
    admission: Mutex<Admission>,
    /// Rung whenever bytes leave, a waiter leaves the line, or the engine
    /// or a resource closes.
    admitted: Condvar,
    bound: u64,
}

impl Gate {
    /// A gate letting in up to `bound` bytes of each kind.
    pub fn new(bound: u64) -> Self {
        Self {
            admission: Mutex::new(Admission::default()),
            admitted: Condvar::new(),
            bound,
        }
    }

    /// Takes `bytes` of the bound: first come, first served among waiters
    /// of the same kind (background or not), or
    /// [`UploadError::WouldBlock`] at once if `if_full` says so. `open` says
    /// whether waiting still makes sense; it is asked again after every
    /// wake-up, so whoever closes must [`wake`](Self::wake) the gate.
    pub fn enter(
        &self,
        bytes: u64,
        background: bool,
        if_full: IfFull,
        open: impl Fn() -> Result<(), UploadError>,
    ) -> Result<(), UploadError> {
        let mut a = self.admission.lock();
        if if_full == IfFull::Refuse {
            if !a.may_enter(bytes, background, self.bound, None) {
                return Err(UploadError::WouldBlock(
                    "the engine is at its in-flight byte bound",
                ));
            }
        } else {
            let ticket = a.line_up(background);
            loop {
                if let Err(e) = open() {
                    a.leave(background, ticket);
                    drop(a);
                    self.admitted.notify_all();
                    return Err(e);
                }
                if a.may_enter(bytes, background, self.bound, Some(ticket)) {
                    a.leave(background, ticket);
                    break;
                }
                self.admitted.wait(&mut a);
            }
        }
        a.add(bytes, background);
        drop(a);
        // The next in line may fit too.
        self.admitted.notify_all();
        Ok(())
    }

    /// Gives back bytes taken by [`enter`](Self::enter), and wakes the line.
    pub fn leave(&self, bytes: u64, background: bool) {
        self.admission.lock().remove(bytes, background);
        self.admitted.notify_all();
    }

    /// Wakes every waiter, to look at `open` again. Call it after the
    /// change `open` looks for.
    pub fn wake(&self) {
        // Taking the lock first: a waiter that asked `open` before the
        // change is then either asleep (and woken) or has yet to ask again.
        // Without it, the wake-up could fall between its question and its
        // sleep and be lost (found by the model
        // `a_release_wakes_an_upload_waiting_at_the_bound`).
        drop(self.admission.lock());
        self.admitted.notify_all();
    }

    /// Bytes in flight now.
    #[cfg(feature = "model-check")]
    pub fn bytes(&self) -> u64 {
        self.admission.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let mut a = Admission::default();
        a.add(90, false);
        let big = a.line_up(false);
        let small = a.line_up(false);
        // The small one would fit, but the large one is first in line.
        assert!(!a.may_enter(5, false, 100, Some(small)));
        assert!(!a.may_enter(50, false, 100, Some(big)));
        // A try that does not wait cannot jump the line either.
        assert!(!a.may_enter(5, false, 100, None));
        a.remove(90, false);
        assert!(a.may_enter(50, false, 100, Some(big)));
        a.leave(false, big);
        a.add(50, false);
        assert!(a.may_enter(5, false, 100, Some(small)));
    }

    #[test]
    fn background_waiters_never_hold_up_the_others() {
        let mut a = Admission::default();
        a.add(100, true);
        let _bg = a.line_up(true);
        assert!(a.may_enter(100, false, 100, None));
        // One upload larger than the bound goes in when none of its kind is.
        assert!(a.may_enter(1000, false, 100, None));
    }
}
