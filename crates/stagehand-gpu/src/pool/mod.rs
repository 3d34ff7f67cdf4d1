//! A caching device-memory pool, written once against [`PoolBackend`].
//!
//! Requests round up to [capacity classes](size_class) (eight per power of
//! two), idle blocks wait in a free list per key and class, and handles go
//! back to their list when dropped. Free lists sit on shelves, one
//! per thread of a group (a few per core), so threads that take and drop at
//! once share no lock on the hot path; bytes held, the budget and the batch
//! sit in one ledger changed only on the slow path. The pool can [`trim`](Pool::trim) all idle
//! memory, release classes a batch did not use ([`end_batch`](Pool::end_batch)),
//! hold a budget, and turns a device's out-of-memory into a
//! [`PoolError::OutOfMemory`] that carries the numbers a caller needs to
//! shrink its batch.
//!
//! The protocol:
//! 1. [`Pool::new`] with a backend and a [`PoolConfig`];
//! 2. [`Pool::take`] a block, use it, drop the handle;
//! 3. at the end of each batch or frame, [`Pool::end_batch`];
//! 4. under memory pressure, [`Pool::trim`] or [`Pool::set_budget`].
//!
//! # Reusing GPU memory safely
//!
//! A block handed back may be handed out again at once. On wgpu that is safe
//! for everything the queue orders: a later user's copies, passes and
//! `queue.write_buffer` run after every command buffer *already submitted*
//! that used the block. It is not safe to drop a handle while a command
//! buffer that uses it is recorded but not yet submitted: the next user's
//! `write_buffer` would land before it. Submit first, then drop. Mapping is
//! enforced: a mappable buffer comes back unmapped (a pending map is
//! aborted), so no user is handed a mapped buffer. CPU reads of a readback
//! buffer must finish before its handle is dropped.

mod backend;
mod error;
mod free_list;
mod handle;
mod ledger;
mod retry;
mod shelf;
pub mod size_class;
mod stats;

pub use crate::diag::sections::pool::{ClassStats, PoolStats};
pub use backend::{AllocError, PoolBackend};
pub use error::PoolError;
pub use handle::Pooled;
pub use retry::halve_on_oom;

use crossbeam_utils::CachePadded;
use ledger::{Ledger, Mirror};
use parking_lot::Mutex;
use shelf::{Freed, Shelf};
use stats::Counters;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// How a pool behaves. Defaults: no budget, classes unused for one batch are
/// released at `end_batch`. These are starting points, not tuned values.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Name in reports.
    pub name: String,
    /// Cap on bytes held (in use plus idle); `None` for no cap.
    pub budget: Option<u64>,
    /// `end_batch` releases classes no request touched in this many batches
    /// (the one ending included); at least 1.
    pub keep_batches: u32,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            name: "pool".into(),
            budget: None,
            keep_batches: 1,
        }
    }
}

impl PoolConfig {
    /// The default config with a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Checks every field is in range.
    pub fn validate(&self) -> Result<(), PoolError> {
        if self.keep_batches == 0 {
            return Err(PoolError::InvalidConfig(
                "keep_batches must be at least 1".into(),
            ));
        }
        if self.budget == Some(0) {
            return Err(PoolError::InvalidConfig(
                "a budget of 0 bytes can hold nothing; use None for no cap".into(),
            ));
        }
        Ok(())
    }
}

/// What every shelf of a pool shares.
pub(crate) struct Shared<B: PoolBackend> {
    backend: B,
    name: String,
    /// Bytes held, the budget and the batch. Lock order: the ledger, then
    /// any shelf.
    ledger: Mutex<Ledger>,
    /// The ledger's values the fast path reads without its lock.
    mirror: Mirror,
    counters: Counters,
    /// Set when the `Pool` is dropped: blocks coming back are freed, not kept.
    closed: AtomicBool,
}

impl<B: PoolBackend> Shared<B> {
    /// Frees blocks taken off the books, outside every lock.
    fn free_all(&self, freed: Freed<B::Key, B::Block>) {
        Counters::bump(&self.counters.frees, freed.len() as u64);
        for (key, block) in freed {
            self.backend.free(&key, block);
        }
    }
}

/// One shelf of a pool. Handles hold the shelf they were taken from, so a
/// block goes back to it and the reference count a take and a drop change
/// is the shelf's own, not one all threads share.
pub(crate) struct PoolShelf<B: PoolBackend> {
    pool: Arc<Shared<B>>,
    /// On a cache line of its own, apart from this shelf's reference count.
    books: CachePadded<Mutex<Shelf<B::Key, B::Block>>>,
}

impl<B: PoolBackend> PoolShelf<B> {
    /// Takes back a block from a handle: keeps it idle here, or frees it
    /// when the backend cannot reuse it, the pool is closed or over budget.
    fn give(&self, key: &B::Key, cap: u64, block: B::Block) {
        let pool = &self.pool;
        let reusable = pool.backend.recycle(key, &block);
        let closed = pool.closed.load(Relaxed);
        if reusable && !closed {
            // The budget is read under the shelf's lock: `set_budget`
            // publishes a new one before it looks at the shelves, so a block
            // kept here either is seen by its eviction or sees its budget.
            let mut books = self.books.lock();
            if !pool.mirror.over_budget() {
                books.give(key, cap, block, pool.mirror.batch());
                return;
            }
        }
        if !reusable {
            Counters::bump(&pool.counters.discarded, 1);
        } else if !closed {
            Counters::bump(&pool.counters.evictions, 1);
        }
        {
            let mut ledger = pool.ledger.lock();
            self.books.lock().forget(key, cap);
            ledger.release(cap);
            ledger.publish(&pool.mirror);
        }
        pool.free_all(vec![(key.clone(), block)]);
    }
}

impl<B: PoolBackend> Drop for PoolShelf<B> {
    /// Frees what is still idle here once the pool and every handle taken
    /// from this shelf are gone.
    fn drop(&mut self) {
        let mut freed = Vec::new();
        self.books.get_mut().remove_idle(|_, _| true, &mut freed);
        self.pool.free_all(freed);
    }
}

/// The pool's numbers summed over its shelves.
struct Totals {
    in_use: u64,
    peak_in_use: u64,
    hits: u64,
}

/// A caching pool of device blocks. `Send + Sync`; share it by reference or
/// `Arc`. Handles keep the pool's state alive, so they may outlive it.
///
/// Threads take from shelves of their own, so a block of a
/// class a thread keeps using is found without a lock other threads take.
pub struct Pool<B: PoolBackend> {
    shared: Arc<Shared<B>>,
    /// A power of two of them; never empty.
    shelves: Box<[Arc<PoolShelf<B>>]>,
}

impl<B: PoolBackend> Pool<B> {
    /// A pool over `backend`.
    pub fn new(backend: B, config: PoolConfig) -> Result<Self, PoolError> {
        config.validate()?;
        let ledger = Ledger::new(config.budget, u64::from(config.keep_batches));
        let mirror = Mirror::default();
        ledger.publish(&mirror);
        let shared = Arc::new(Shared {
            backend,
            name: config.name,
            ledger: Mutex::new(ledger),
            mirror,
            counters: Counters::default(),
            closed: AtomicBool::new(false),
        });
        let shelves = (0..shelf::shelf_count())
            .map(|_| {
                Arc::new(PoolShelf {
                    pool: Arc::clone(&shared),
                    books: CachePadded::new(Mutex::new(Shelf::new())),
                })
            })
            .collect();
        Ok(Self { shared, shelves })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.shared.backend
    }

    /// The capacity a request of `len` bytes gets.
    pub fn capacity_for(len: u64) -> u64 {
        if B::CLASSES {
            size_class::class_of(len)
        } else {
            len
        }
    }

    /// Takes a block of at least `len` bytes for `key`: from a free list if
    /// one is idle (this thread's shelf first, then the others), else from
    /// the device. On out-of-memory the pool frees every idle block and
    /// tries once more.
    ///
    /// Errors: [`PoolError::InvalidRequest`] (zero length, over a device
    /// limit, bad key; the pool is unchanged), [`PoolError::OutOfMemory`],
    /// [`PoolError::Device`].
    pub fn take(&self, key: B::Key, len: u64) -> Result<Pooled<B>, PoolError> {
        if len == 0 {
            return Err(PoolError::InvalidRequest {
                len,
                reason: "zero-length request".into(),
            });
        }
        let cap = Self::capacity_for(len);
        let home = &self.shelves[shelf::home_index(self.shelves.len())];
        // The hot path: an idle block of this class on this thread's shelf.
        // A request that hits was valid when its block was allocated, so
        // only misses are checked.
        let hit = home.books.lock().hit(&key, cap, self.shared.mirror.batch());
        if let Some(block) = hit {
            return Ok(Pooled::new(block, key, cap, len, Arc::clone(home)));
        }
        let shared = &self.shared;
        shared
            .backend
            .check(&key, cap)
            .map_err(|e| PoolError::from_alloc(e, len))?;
        if let Some(block) = self.find_idle(home, &key, cap) {
            return Ok(Pooled::new(block, key, cap, len, Arc::clone(home)));
        }
        Counters::bump(&shared.counters.misses, 1);
        let mut freed = Vec::new();
        let reserved = {
            let mut ledger = shared.ledger.lock();
            if let Some(budget) = ledger.budget {
                self.evict_until(&mut ledger, budget.saturating_sub(cap), &mut freed);
            }
            let fits = ledger.budget.is_none_or(|b| ledger.held + cap <= b);
            if fits {
                ledger.reserve(cap);
                home.books.lock().lend(&key, cap, ledger.batch);
            }
            ledger.publish(&shared.mirror);
            fits
        };
        Counters::bump(&shared.counters.evictions, freed.len() as u64);
        shared.free_all(freed);
        if !reserved {
            return Err(self.oom(cap));
        }
        let block = self.allocate(home, &key, cap, len)?;
        Ok(Pooled::new(block, key, cap, len, Arc::clone(home)))
    }

    /// An idle block of `key` and `cap` on any shelf (the home shelf again
    /// first: one may have come back since), lent from `home`.
    fn find_idle(&self, home: &PoolShelf<B>, key: &B::Key, cap: u64) -> Option<B::Block> {
        let batch = self.shared.mirror.batch();
        if let Some(block) = home.books.lock().hit(key, cap, batch) {
            return Some(block);
        }
        // Under the ledger's lock, so a block never moves between shelves
        // while `stats` adds them up.
        let _ledger = self.shared.ledger.lock();
        let block = self
            .shelves
            .iter()
            .filter(|s| !std::ptr::eq(s.as_ref(), home))
            .find_map(|s| s.books.lock().steal(key, cap))?;
        let mut books = home.books.lock();
        books.hits += 1;
        books.lend(key, cap, batch);
        Some(block)
    }

    /// Frees idle blocks, least recently used list first, until `held` is
    /// at most `target` or nothing idle is left. Uses on one shelf are
    /// ordered exactly; across shelves, by batch.
    fn evict_until(&self, ledger: &mut Ledger, target: u64, freed: &mut Freed<B::Key, B::Block>) {
        while ledger.held > target {
            let victim = self
                .shelves
                .iter()
                .filter_map(|s| s.books.lock().oldest_idle().map(|(k, age)| (age, s, k)))
                .min_by_key(|(age, ..)| *age);
            let Some((_, shelf, (key, cap))) = victim else {
                return;
            };
            if let Some(block) = shelf.books.lock().steal(&key, cap) {
                ledger.release(cap);
                freed.push((key, block));
            }
        }
    }

    /// Allocates a reserved block, trimming and retrying once on
    /// out-of-memory; cancels the reservation if that fails too.
    fn allocate(
        &self,
        home: &PoolShelf<B>,
        key: &B::Key,
        cap: u64,
        len: u64,
    ) -> Result<B::Block, PoolError> {
        let shared = &self.shared;
        let mut result = shared.backend.allocate(key, cap);
        if matches!(result, Err(AllocError::OutOfMemory)) {
            self.trim();
            result = shared.backend.allocate(key, cap);
        }
        match result {
            Ok(block) => {
                Counters::bump(&shared.counters.allocations, 1);
                Ok(block)
            }
            Err(e) => {
                {
                    let mut ledger = shared.ledger.lock();
                    home.books.lock().forget(key, cap);
                    ledger.release(cap);
                    ledger.publish(&shared.mirror);
                }
                match e {
                    AllocError::OutOfMemory => Err(self.oom(cap)),
                    other => Err(PoolError::from_alloc(other, len)),
                }
            }
        }
    }

    fn oom(&self, requested: u64) -> PoolError {
        Counters::bump(&self.shared.counters.ooms, 1);
        let ledger = self.shared.ledger.lock();
        let in_use = self.totals().in_use;
        PoolError::OutOfMemory {
            requested,
            held: ledger.held,
            in_use,
            idle: ledger.held.saturating_sub(in_use),
            budget: ledger.budget,
        }
    }

    /// Moves every idle block on every shelf off the books, and frees them
    /// once the locks are released.
    fn remove_all_idle(&self) {
        let mut freed = Vec::new();
        {
            let mut ledger = self.shared.ledger.lock();
            let bytes: u64 = self
                .shelves
                .iter()
                .map(|s| s.books.lock().remove_idle(|_, _| true, &mut freed))
                .sum();
            ledger.release(bytes);
            ledger.publish(&self.shared.mirror);
        }
        self.shared.free_all(freed);
    }

    /// Gives every idle block back to the device.
    pub fn trim(&self) {
        Counters::bump(&self.shared.counters.trims, 1);
        self.remove_all_idle();
    }

    /// Ends a batch: frees the idle blocks of every class no request touched
    /// in the last `keep_batches` batches, and starts the next. A class is
    /// judged over every shelf: one used on any shelf keeps its idle blocks
    /// on all of them.
    pub fn end_batch(&self) {
        let mut freed = Vec::new();
        {
            let mut ledger = self.shared.ledger.lock();
            let mut last_asked: HashMap<(B::Key, u64), u64> = HashMap::new();
            for s in self.shelves.iter() {
                for (k, list) in &s.books.lock().lists {
                    let batch = last_asked.entry(k.clone()).or_default();
                    *batch = (*batch).max(list.last_batch);
                }
            }
            let oldest_kept = (ledger.batch + 1).saturating_sub(ledger.keep_batches);
            let stale = |k: &(B::Key, u64), _: &free_list::FreeList<B::Block>| {
                last_asked.get(k).copied().unwrap_or(0) < oldest_kept
            };
            let bytes: u64 = self
                .shelves
                .iter()
                .map(|s| s.books.lock().remove_idle(stale, &mut freed))
                .sum();
            ledger.release(bytes);
            ledger.batch += 1;
            ledger.publish(&self.shared.mirror);
        }
        self.shared.free_all(freed);
    }

    /// Sets the cap on bytes held, freeing idle blocks (least recently used
    /// first) to meet it. A budget below what is in use takes effect as
    /// handles come back. `Some(0)` is an [`PoolError::InvalidConfig`].
    pub fn set_budget(&self, budget: Option<u64>) -> Result<(), PoolError> {
        if budget == Some(0) {
            return Err(PoolError::InvalidConfig(
                "a budget of 0 bytes can hold nothing; use None for no cap".into(),
            ));
        }
        let mut freed = Vec::new();
        {
            let mut ledger = self.shared.ledger.lock();
            ledger.budget = budget;
            // Published before the shelves are looked at: see `give`.
            ledger.publish(&self.shared.mirror);
            if let Some(b) = budget {
                self.evict_until(&mut ledger, b, &mut freed);
            }
            ledger.publish(&self.shared.mirror);
        }
        Counters::bump(&self.shared.counters.evictions, freed.len() as u64);
        self.shared.free_all(freed);
        Ok(())
    }

    /// Lowers the peaks to the current values.
    pub fn reset_peaks(&self) {
        let mut ledger = self.shared.ledger.lock();
        ledger.peak_held = ledger.held;
        for s in self.shelves.iter() {
            s.books.lock().reset_peak();
        }
    }

    /// In use, its peak and hits over every shelf, each shelf read in turn.
    fn totals(&self) -> Totals {
        let mut t = Totals {
            in_use: 0,
            peak_in_use: 0,
            hits: 0,
        };
        for s in self.shelves.iter() {
            let books = s.books.lock();
            t.in_use += books.in_use;
            t.peak_in_use += books.peak_in_use;
            t.hits += books.hits;
        }
        t
    }

    /// The pool's numbers now.
    ///
    /// `peak_in_use` is exact while one thread takes from the pool; with
    /// several, it is the sum of each shelf's peak (capped by `peak_held`):
    /// never below the true peak, above it when shelves peaked at different
    /// times.
    pub fn stats(&self) -> PoolStats {
        let c = &self.shared.counters;
        let ledger = self.shared.ledger.lock();
        let t = self.totals();
        PoolStats {
            name: self.shared.name.clone(),
            held: ledger.held,
            peak_held: ledger.peak_held,
            in_use: t.in_use,
            peak_in_use: t.peak_in_use.min(ledger.peak_held).max(t.in_use),
            idle: ledger.held.saturating_sub(t.in_use),
            budget: ledger.budget,
            hits: t.hits,
            misses: c.misses.load(Relaxed),
            allocations: c.allocations.load(Relaxed),
            frees: c.frees.load(Relaxed),
            trims: c.trims.load(Relaxed),
            ooms: c.ooms.load(Relaxed),
            evictions: c.evictions.load(Relaxed),
            discarded: c.discarded.load(Relaxed),
            classes: self.class_stats().len() as u64,
        }
    }

    /// The report section of this pool, with its classes if `per_class`.
    pub fn section(&self, per_class: bool) -> crate::diag::sections::PoolSection {
        let section = crate::diag::sections::PoolSection::new(vec![self.stats()]);
        if per_class {
            section.with_classes(self.shared.name.clone(), self.class_stats())
        } else {
            section
        }
    }

    /// The numbers of each class over every shelf, largest capacity first.
    pub fn class_stats(&self) -> Vec<ClassStats> {
        let mut merged: HashMap<(B::Key, u64), ClassStats> = HashMap::new();
        for s in self.shelves.iter() {
            let books = s.books.lock();
            for ((key, cap), list) in &books.lists {
                let c = merged
                    .entry((key.clone(), *cap))
                    .or_insert_with(|| ClassStats {
                        key: format!("{key:?}"),
                        capacity: *cap,
                        idle: 0,
                        in_use: 0,
                        takes: 0,
                    });
                c.idle += list.idle.len() as u64;
                c.in_use += list.in_use;
                c.takes += list.takes;
            }
        }
        let mut classes: Vec<ClassStats> = merged.into_values().collect();
        classes.sort_by(|a, b| b.capacity.cmp(&a.capacity).then_with(|| a.key.cmp(&b.key)));
        classes
    }
}

impl<B: PoolBackend> Drop for Pool<B> {
    /// Frees the idle blocks; blocks still on loan are freed as they come
    /// back (the shared state lives until the last handle is gone).
    fn drop(&mut self) {
        self.shared.closed.store(true, Relaxed);
        self.trim();
    }
}

impl<B: PoolBackend> fmt::Debug for Pool<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        f.debug_struct("Pool")
            .field("name", &s.name)
            .field("held", &s.held)
            .field("in_use", &s.in_use)
            .field("classes", &s.classes)
            .finish_non_exhaustive()
    }
}
