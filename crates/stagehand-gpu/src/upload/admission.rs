//! Admission: the bytes of staging in flight across the engine, and the
//! line of uploads waiting for room. Data only; the engine keeps it under
//! one lock and wakes waiters with a condition variable.

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
