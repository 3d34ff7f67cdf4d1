//! A shelf: the free lists one group of threads takes from and gives back
//! to, under a lock of its own.
//!
//! A pool keeps a shelf per core (rounded up to a power of two) and each
//! thread has a home shelf. A take looks on the home shelf first, and only on
//! a miss on the other shelves and then the [ledger](super::ledger), so
//! threads taking and dropping blocks of a class they use over and over never
//! share a lock or a cache line. A block goes back to the shelf it was taken
//! from, whichever thread drops it.
//!
//! Pure data: a shelf never calls the device; what it takes out to be freed
//! it hands back to the caller, who frees it after unlocking.

use super::free_list::FreeList;
use foldhash::fast::RandomState;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Blocks removed from the books, to be freed by the caller after unlocking.
pub(crate) type Freed<K, Block> = Vec<(K, Block)>;

/// The free lists of one shelf and what is in use from it.
pub(crate) struct Shelf<K, Block> {
    /// One free list per (key, capacity).
    pub lists: HashMap<(K, u64), FreeList<Block>, RandomState>,
    /// Bytes in handles taken from this shelf, allocations in progress
    /// included.
    pub in_use: u64,
    /// Highest `in_use` since creation or reset.
    pub peak_in_use: u64,
    /// Requests served by an idle block (this shelf's or another's).
    pub hits: u64,
    /// Counts takes and gives here, to order this shelf's lists by use.
    tick: u64,
}

impl<K: Clone + Eq + Hash, Block> Shelf<K, Block> {
    pub fn new() -> Self {
        Self {
            lists: HashMap::default(),
            in_use: 0,
            peak_in_use: 0,
            hits: 0,
            tick: 0,
        }
    }

    /// Counts a block of `key` and `cap` as lent from this shelf: one of its
    /// own idle blocks, another shelf's, or a new allocation.
    pub fn lend(&mut self, key: &K, cap: u64, batch: u64) {
        self.tick += 1;
        let tick = self.tick;
        let list = self
            .lists
            .entry((key.clone(), cap))
            .or_insert_with(FreeList::new);
        list.last_batch = batch;
        list.last_touch = batch;
        list.last_tick = tick;
        list.takes += 1;
        list.in_use += 1;
        self.in_use += cap;
        self.peak_in_use = self.peak_in_use.max(self.in_use);
    }

    /// Lends one of this shelf's idle blocks of `key` and `cap`, if it has
    /// one. Touches nothing when it has none. (The hot path: one lookup.)
    pub fn hit(&mut self, key: &K, cap: u64, batch: u64) -> Option<Block> {
        let list = self.lists.get_mut(&(key.clone(), cap))?;
        let block = list.idle.pop()?;
        self.tick += 1;
        list.last_batch = batch;
        list.last_touch = batch;
        list.last_tick = self.tick;
        list.takes += 1;
        list.in_use += 1;
        self.hits += 1;
        self.in_use += cap;
        self.peak_in_use = self.peak_in_use.max(self.in_use);
        Some(block)
    }

    /// Hands an idle block of `key` and `cap` to another shelf (or to be
    /// freed). The list stays, with its counts, until a trim or a batch end
    /// finds it empty.
    pub fn steal(&mut self, key: &K, cap: u64) -> Option<Block> {
        self.lists.get_mut(&(key.clone(), cap))?.idle.pop()
    }

    /// Ends the loan of a block that will not come back to this shelf.
    pub fn forget(&mut self, key: &K, cap: u64) {
        debug_assert!(self.in_use >= cap);
        self.in_use -= cap;
        let list = self.lists.get_mut(&(key.clone(), cap));
        debug_assert!(list.is_some(), "a block in use keeps its list");
        if let Some(list) = list {
            list.in_use -= 1;
        }
    }

    /// Takes back a lent block and keeps it idle.
    pub fn give(&mut self, key: &K, cap: u64, block: Block, batch: u64) {
        debug_assert!(self.in_use >= cap);
        self.in_use -= cap;
        self.tick += 1;
        // A block in use keeps its list, so the list is there.
        let list = self
            .lists
            .entry((key.clone(), cap))
            .or_insert_with(FreeList::new);
        debug_assert!(list.in_use > 0, "a block in use keeps its list");
        list.in_use = list.in_use.saturating_sub(1);
        list.idle.push(block);
        list.last_touch = batch;
        list.last_tick = self.tick;
    }

    /// Moves the idle blocks of every list matching `stale` to `freed`, drops
    /// lists left with nothing in use, and returns the bytes moved.
    pub fn remove_idle(
        &mut self,
        stale: impl Fn(&(K, u64), &FreeList<Block>) -> bool,
        freed: &mut Freed<K, Block>,
    ) -> u64 {
        let mut bytes = 0;
        self.lists.retain(|k, list| {
            let (key, cap) = k;
            if !stale(k, list) {
                return true;
            }
            bytes += cap * list.idle.len() as u64;
            freed.extend(list.idle.drain(..).map(|b| (key.clone(), b)));
            list.in_use > 0
        });
        bytes
    }

    /// The least recently used list that has an idle block, and its age.
    pub fn oldest_idle(&self) -> Option<((K, u64), (u64, u64))> {
        self.lists
            .iter()
            .filter(|(_, l)| !l.idle.is_empty())
            .min_by_key(|(_, l)| l.age())
            .map(|(k, l)| (k.clone(), l.age()))
    }

    pub fn reset_peak(&mut self) {
        self.peak_in_use = self.in_use;
    }
}

/// How many shelves a pool keeps: four per core the process may use (more
/// threads than cores take from a pool in a worker group, and two threads
/// on one shelf wait for each other whenever one is preempted holding its
/// lock), rounded up to a power of two, at most 64.
pub(crate) fn shelf_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores * 4).next_power_of_two().min(64)
}

/// This thread's home shelf among `count` (a power of two). Threads are
/// numbered as they first take from any pool, so the threads of a worker
/// group land on different shelves.
pub(crate) fn home_index(count: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static THREAD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    let n = THREAD.with(|t| {
        if t.get() == usize::MAX {
            t.set(NEXT.fetch_add(1, Relaxed));
        }
        t.get()
    });
    n & (count - 1)
}
