//! A caching device-memory pool, written once against [`PoolBackend`].
//!
//! Requests round up to [capacity classes](size_class) (eight per power of
//! two), idle blocks wait in a free list per key and class, and handles go
//! back to their list when dropped. The pool can [`trim`](Pool::trim) all idle
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
mod retry;
pub mod size_class;
mod stats;

pub use crate::diag::sections::pool::{ClassStats, PoolStats};
pub use backend::{AllocError, PoolBackend};
pub use error::PoolError;
pub use handle::Pooled;
pub use retry::halve_on_oom;

use crossbeam_utils::CachePadded;
use free_list::{Books, Freed, Take};
use parking_lot::Mutex;
use stats::Counters;
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

/// What the pool's handles share.
pub(crate) struct Shared<B: PoolBackend> {
    backend: B,
    name: String,
    /// On a cache line of its own: handles clone and drop the `Arc` this
    /// lives in on every take, and that count must not share a line with
    /// the lock every take takes.
    books: CachePadded<Mutex<Books<B::Key, B::Block>>>,
    counters: Counters,
    /// Set when the `Pool` is dropped: blocks coming back are freed, not kept.
    closed: AtomicBool,
}

impl<B: PoolBackend> Drop for Shared<B> {
    fn drop(&mut self) {
        let mut freed = Vec::new();
        self.books.get_mut().trim(&mut freed);
        self.free_all(freed);
    }
}

impl<B: PoolBackend> Shared<B> {
    /// Frees blocks taken off the books, outside the lock.
    fn free_all(&self, freed: Freed<B::Key, B::Block>) {
        Counters::bump(&self.counters.frees, freed.len() as u64);
        for (key, block) in freed {
            self.backend.free(&key, block);
        }
    }

    fn give(&self, key: &B::Key, cap: u64, block: B::Block) {
        if !self.backend.recycle(key, &block) {
            self.books.lock().forget(key, cap);
            Counters::bump(&self.counters.discarded, 1);
            self.free_all(vec![(key.clone(), block)]);
            return;
        }
        if self.closed.load(Relaxed) {
            self.books.lock().forget(key, cap);
            self.free_all(vec![(key.clone(), block)]);
            return;
        }
        let over = self.books.lock().give(key, cap, block);
        if let Some(block) = over {
            Counters::bump(&self.counters.evictions, 1);
            self.free_all(vec![(key.clone(), block)]);
        }
    }

    fn oom(&self, requested: u64) -> PoolError {
        Counters::bump(&self.counters.ooms, 1);
        let books = self.books.lock();
        PoolError::OutOfMemory {
            requested,
            held: books.held,
            in_use: books.in_use,
            idle: books.idle(),
            budget: books.budget,
        }
    }
}

/// A caching pool of device blocks. `Send + Sync`; share it by reference or
/// `Arc`. Handles keep the pool's state alive, so they may outlive it.
pub struct Pool<B: PoolBackend> {
    shared: Arc<Shared<B>>,
}

impl<B: PoolBackend> Pool<B> {
    /// A pool over `backend`.
    pub fn new(backend: B, config: PoolConfig) -> Result<Self, PoolError> {
        config.validate()?;
        let books = Books::new(config.budget, u64::from(config.keep_batches));
        let shared = Shared {
            backend,
            name: config.name,
            books: CachePadded::new(Mutex::new(books)),
            counters: Counters::default(),
            closed: AtomicBool::new(false),
        };
        Ok(Self {
            shared: Arc::new(shared),
        })
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

    /// Takes a block of at least `len` bytes for `key`: from the free list if
    /// one is idle, else from the device. On out-of-memory the pool frees
    /// every idle block and tries once more.
    ///
    /// Errors: [`PoolError::InvalidRequest`] (zero length, over a device
    /// limit, bad key; the pool is unchanged), [`PoolError::OutOfMemory`],
    /// [`PoolError::Device`].
    pub fn take(&self, key: B::Key, len: u64) -> Result<Pooled<B>, PoolError> {
        let shared = &self.shared;
        if len == 0 {
            return Err(PoolError::InvalidRequest {
                len,
                reason: "zero-length request".into(),
            });
        }
        let cap = Self::capacity_for(len);
        // The hot path: an idle block of this class. A request that hits was
        // valid when its block was allocated, so only misses are checked.
        let hit = shared.books.lock().hit(&key, cap);
        if let Some(block) = hit {
            return Ok(Pooled::new(block, key, cap, len, Arc::clone(shared)));
        }
        shared
            .backend
            .check(&key, cap)
            .map_err(|e| PoolError::from_alloc(e, len))?;
        let mut freed = Vec::new();
        let found = shared.books.lock().take(&key, cap, &mut freed);
        Counters::bump(&shared.counters.evictions, freed.len() as u64);
        shared.free_all(freed);
        match found {
            Take::Hit(block) => Ok(Pooled::new(block, key, cap, len, Arc::clone(shared))),
            Take::OverBudget => {
                Counters::bump(&shared.counters.misses, 1);
                Err(shared.oom(cap))
            }
            Take::Allocate => {
                Counters::bump(&shared.counters.misses, 1);
                let block = self.allocate(&key, cap, len)?;
                Ok(Pooled::new(block, key, cap, len, Arc::clone(shared)))
            }
        }
    }

    /// Allocates a reserved block, trimming and retrying once on
    /// out-of-memory; cancels the reservation if that fails too.
    fn allocate(&self, key: &B::Key, cap: u64, len: u64) -> Result<B::Block, PoolError> {
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
                shared.books.lock().forget(key, cap);
                match e {
                    AllocError::OutOfMemory => Err(shared.oom(cap)),
                    other => Err(PoolError::from_alloc(other, len)),
                }
            }
        }
    }

    /// Gives every idle block back to the device.
    pub fn trim(&self) {
        let mut freed = Vec::new();
        self.shared.books.lock().trim(&mut freed);
        Counters::bump(&self.shared.counters.trims, 1);
        self.shared.free_all(freed);
    }

    /// Ends a batch: frees the idle blocks of every class no request touched
    /// in the last `keep_batches` batches, and starts the next.
    pub fn end_batch(&self) {
        let mut freed = Vec::new();
        self.shared.books.lock().end_batch(&mut freed);
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
        self.shared.books.lock().set_budget(budget, &mut freed);
        Counters::bump(&self.shared.counters.evictions, freed.len() as u64);
        self.shared.free_all(freed);
        Ok(())
    }

    /// Lowers the peaks to the current values.
    pub fn reset_peaks(&self) {
        self.shared.books.lock().reset_peaks();
    }

    /// The pool's numbers now.
    pub fn stats(&self) -> PoolStats {
        let c = &self.shared.counters;
        let books = self.shared.books.lock();
        PoolStats {
            name: self.shared.name.clone(),
            held: books.held,
            peak_held: books.peak_held,
            in_use: books.in_use,
            peak_in_use: books.peak_in_use,
            idle: books.idle(),
            budget: books.budget,
            hits: books.hits,
            misses: c.misses.load(Relaxed),
            allocations: c.allocations.load(Relaxed),
            frees: c.frees.load(Relaxed),
            trims: c.trims.load(Relaxed),
            ooms: c.ooms.load(Relaxed),
            evictions: c.evictions.load(Relaxed),
            discarded: c.discarded.load(Relaxed),
            classes: books.lists.len() as u64,
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

    /// The numbers of each class, largest capacity first.
    pub fn class_stats(&self) -> Vec<ClassStats> {
        let books = self.shared.books.lock();
        let mut classes: Vec<ClassStats> = books
            .lists
            .iter()
            .map(|((key, cap), list)| ClassStats {
                key: format!("{key:?}"),
                capacity: *cap,
                idle: list.idle.len() as u64,
                in_use: list.in_use,
                takes: list.takes,
            })
            .collect();
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
