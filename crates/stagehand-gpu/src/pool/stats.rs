//! The pool's event counters; the numbers it reports are
//! [`PoolStats`](crate::diag::sections::pool::PoolStats).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Event counters, updated without the pool's lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub misses: AtomicU64,
    pub allocations: AtomicU64,
    pub frees: AtomicU64,
    pub trims: AtomicU64,
    pub ooms: AtomicU64,
    pub evictions: AtomicU64,
    pub discarded: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Relaxed);
    }
}
