//! What a pool reports about itself.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Event counters, updated without the pool's lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub hits: AtomicU64,
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

/// A pool's numbers at one moment.
///
/// Invariants: `held == in_use + idle`, `peak_held >= held`,
/// `peak_in_use >= in_use`; with a budget, `held <= budget` unless the budget
/// was lowered below what is in use, in which case `idle == 0` until enough
/// handles come back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    /// The pool's name.
    pub name: String,
    /// Bytes allocated from the device and not yet freed.
    pub held: u64,
    /// Highest `held` since creation or the last reset.
    pub peak_held: u64,
    /// Bytes in handles that users hold.
    pub in_use: u64,
    /// Highest `in_use` since creation or the last reset.
    pub peak_in_use: u64,
    /// Bytes idle in free lists, ready for reuse or to be trimmed.
    pub idle: u64,
    /// The cap on `held`, if any.
    pub budget: Option<u64>,
    /// Requests served from a free list.
    pub hits: u64,
    /// Requests that had to allocate.
    pub misses: u64,
    /// Allocations from the device.
    pub allocations: u64,
    /// Blocks given back to the device.
    pub frees: u64,
    /// Calls to trim, including those made to retry after out-of-memory.
    pub trims: u64,
    /// Requests that failed for lack of memory.
    pub ooms: u64,
    /// Idle blocks freed to stay within the budget.
    pub evictions: u64,
    /// Returned blocks that could not be reused (freed instead).
    pub discarded: u64,
    /// Capacity classes (with their keys) that have a free list.
    pub classes: u64,
}

/// One capacity class of one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    /// The key, as its `Debug` form.
    pub key: String,
    /// Capacity of each block, in bytes.
    pub capacity: u64,
    /// Blocks idle in the free list.
    pub idle: u64,
    /// Blocks out in handles.
    pub in_use: u64,
    /// Requests for this class since it was last emptied.
    pub takes: u64,
}
