//! What the engine reports about itself.

use serde::Serialize;
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

/// The engine's numbers at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UploadStats {
    /// Worker threads.
    pub workers: usize,
    /// The priority asked for, and whether the OS applied it.
    pub priority: String,
    /// Uploads accepted and not yet started.
    pub queued: u64,
    /// Uploads started and not yet landed.
    pub active: u64,
    /// Uploads landed.
    pub completed: u64,
    /// Uploads cancelled (by the caller, by release or by shutdown).
    pub cancelled: u64,
    /// Uploads replaced by a newer one to the same region before starting.
    pub superseded: u64,
    /// Uploads that failed.
    pub failed: u64,
    /// Bytes of texel or buffer data landed.
    pub bytes_uploaded: u64,
    /// Bytes landed per second, over the last second.
    pub bandwidth: f64,
    /// Bytes the engine's staging pool holds.
    pub staging_held: u64,
    /// Callbacks that panicked (caught; the upload still ended normally).
    pub callback_panics: u64,
}

pub(crate) fn load(c: &AtomicU64) -> u64 {
    c.load(Relaxed)
}
