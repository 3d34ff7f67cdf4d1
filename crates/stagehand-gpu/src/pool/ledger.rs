//! The pool's ledger: bytes held, the budget and the batch, shared by all
//! its shelves.
//!
//! The ledger changes only on the slow path (a miss, a block freed, a batch
//! ending, a budget set), under its lock. The fast path reads the mirrored
//! values without the lock: they live on a line of their own that is
//! written rarely, so reading it costs no traffic between cores.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What the ledger's lock protects.
pub(crate) struct Ledger {
    /// Bytes allocated and not yet freed: the pool's in-use plus idle bytes.
    pub held: u64,
    /// Highest `held` since creation or reset; never below `held`.
    pub peak_held: u64,
    /// Cap on `held`, if any.
    pub budget: Option<u64>,
    /// Batches a class may go untouched before `end_batch` frees it; at least 1.
    pub keep_batches: u64,
    /// The batch now running, from 0.
    pub batch: u64,
}

/// The ledger's values the fast path reads without its lock. Written only
/// under the ledger's lock, by [`Ledger::publish`].
#[derive(Default)]
pub(crate) struct Mirror(CachePadded<MirrorValues>);

#[derive(Default)]
struct MirrorValues {
    held: AtomicU64,
    /// `u64::MAX` for no budget.
    budget: AtomicU64,
    batch: AtomicU64,
}

impl Mirror {
    /// The batch now running.
    pub fn batch(&self) -> u64 {
        self.0.batch.load(Relaxed)
    }

    /// Whether the pool holds more than its budget (a lowered budget waits
    /// for blocks to come back): those are freed instead of kept.
    pub fn over_budget(&self) -> bool {
        self.0.held.load(Relaxed) > self.0.budget.load(Relaxed)
    }
}

impl Ledger {
    pub fn new(budget: Option<u64>, keep_batches: u64) -> Self {
        Self {
            held: 0,
            peak_held: 0,
            budget,
            keep_batches,
            batch: 0,
        }
    }

    /// Adds `cap` bytes about to be allocated.
    pub fn reserve(&mut self, cap: u64) {
        self.held += cap;
        self.peak_held = self.peak_held.max(self.held);
    }

    /// Removes `bytes` freed (or whose allocation failed).
    pub fn release(&mut self, bytes: u64) {
        debug_assert!(self.held >= bytes);
        self.held -= bytes;
    }

    /// Copies the values the fast path reads into `mirror`.
    pub fn publish(&self, mirror: &Mirror) {
        let m = &mirror.0;
        m.held.store(self.held, Relaxed);
        m.budget.store(self.budget.unwrap_or(u64::MAX), Relaxed);
        m.batch.store(self.batch, Relaxed);
    }
}
