//! The engine's event counters and bandwidth window; the numbers it
//! reports are [`UploadStats`].

use crate::diag::sections::upload::UploadStats;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Event counters, updated without locks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub queued: AtomicU64,
    pub active: AtomicU64,
    pub completed: AtomicU64,
    pub cancelled: AtomicU64,
    pub superseded: AtomicU64,
    pub failed: AtomicU64,
    pub bytes: AtomicU64,
}

/// Bytes landed in the last second, for the current bandwidth.
#[derive(Debug, Default)]
pub(crate) struct Window {
    landed: VecDeque<(Instant, u64)>,
}

impl Window {
    const SPAN: Duration = Duration::from_secs(1);

    pub fn push(&mut self, bytes: u64) {
        let now = Instant::now();
        self.landed.push_back((now, bytes));
        self.expire(now);
    }

    fn expire(&mut self, now: Instant) {
        while self
            .landed
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > Self::SPAN)
        {
            self.landed.pop_front();
        }
    }

    /// Bytes per second over the last second.
    pub fn rate(&mut self) -> f64 {
        self.expire(Instant::now());
        self.landed.iter().map(|(_, b)| *b).sum::<u64>() as f64 / Self::SPAN.as_secs_f64()
    }
}

impl Counters {
    /// The engine's numbers, from these counters and what only the engine
    /// knows.
    pub fn stats(
        &self,
        workers: usize,
        priority: String,
        bandwidth: f64,
        staging_held: u64,
        callback_panics: u64,
    ) -> UploadStats {
        UploadStats {
            workers,
            priority,
            queued: load(&self.queued),
            active: load(&self.active),
            completed: load(&self.completed),
            cancelled: load(&self.cancelled),
            superseded: load(&self.superseded),
            failed: load(&self.failed),
            bytes_uploaded: load(&self.bytes),
            bandwidth,
            staging_held,
            callback_panics,
        }
    }

    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }

    pub fn drop_one(c: &AtomicU64) {
        c.fetch_sub(1, Relaxed);
    }
}

pub(crate) fn load(c: &AtomicU64) -> u64 {
    c.load(Relaxed)
}
