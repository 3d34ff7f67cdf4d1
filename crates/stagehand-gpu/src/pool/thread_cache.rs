//! Per-thread caches in front of the pool's books: a handle dropped on a
//! thread parks its block in that thread's cache, and the thread's next take
//! of the same key and class finds it there without the pool's lock, so
//! threads sharing a pool do not queue on one lock for every take and drop.
//!
//! A cache holds at most [`BLOCKS`] blocks of at most [`MAX_BLOCK`] bytes
//! each; larger blocks, and every block of a pool with a budget, go straight
//! back to the books. Cached blocks are idle: `trim`, `end_batch`,
//! `set_budget` and the pool's drop drain every cache back into the books
//! first, so they see all idle memory.
//!
//! Each cache has its own lock. Its thread is the only one that takes it on
//! the hot path; a drain from another thread takes it briefly.

use parking_lot::Mutex;
use std::hash::Hash;
use thread_local::ThreadLocal;

/// Blocks one thread's cache holds at most.
pub(crate) const BLOCKS: usize = 8;
/// The largest block a thread's cache takes, bytes: big blocks are few and
/// must stay visible to every thread.
pub(crate) const MAX_BLOCK: u64 = 1 << 20;

/// One thread's parked blocks.
pub(crate) struct Cache<K, Block> {
    /// `(key, capacity, block)`, the most recently parked last.
    blocks: Vec<(K, u64, Block)>,
    /// Classes this cache served since it was last drained, with how many
    /// times, so that `end_batch` counts them as used in the batch.
    served: Vec<(K, u64, u64)>,
    /// Hits served, ever.
    hits: u64,
}

impl<K, Block> Default for Cache<K, Block> {
    fn default() -> Self {
        Self {
            blocks: Vec::new(),
            served: Vec::new(),
            hits: 0,
        }
    }
}

/// What a drain took out of the caches.
pub(crate) struct Drained<K, Block> {
    pub blocks: Vec<(K, u64, Block)>,
    pub served: Vec<(K, u64, u64)>,
}

/// Every thread's cache of one pool.
pub(crate) struct ThreadCaches<K: Send, Block: Send> {
    caches: ThreadLocal<Mutex<Cache<K, Block>>>,
}

impl<K: Clone + Eq + Hash + Send, Block: Send> ThreadCaches<K, Block> {
    pub fn new() -> Self {
        Self {
            caches: ThreadLocal::new(),
        }
    }

    /// A parked block of `key` and `capacity` from this thread's cache.
    pub fn take(&self, key: &K, capacity: u64) -> Option<Block> {
        let mut cache = self.caches.get()?.lock();
        let at = cache
            .blocks
            .iter()
            .rposition(|(k, c, _)| *c == capacity && k == key)?;
        let (key, capacity, block) = cache.blocks.swap_remove(at);
        cache.hits += 1;
        match cache
            .served
            .iter_mut()
            .find(|(k, c, _)| *c == capacity && *k == key)
        {
            Some((_, _, takes)) => *takes += 1,
            None => cache.served.push((key, capacity, 1)),
        }
        Some(block)
    }

    /// Parks a block in this thread's cache if `accept` (asked under the
    /// cache's lock, so a drain that follows a change it looks for sees
    /// every block parked before) says so and there is room; gives it back
    /// otherwise.
    pub fn park(
        &self,
        key: &K,
        capacity: u64,
        block: Block,
        accept: impl FnOnce() -> bool,
    ) -> Result<(), Block> {
        if capacity > MAX_BLOCK {
            return Err(block);
        }
        let mut cache = self.caches.get_or(Mutex::default).lock();
        if cache.blocks.len() >= BLOCKS || !accept() {
            return Err(block);
        }
        cache.blocks.push((key.clone(), capacity, block));
        Ok(())
    }

    /// Empties every thread's cache.
    pub fn drain(&self) -> Drained<K, Block> {
        let mut drained = Drained {
            blocks: Vec::new(),
            served: Vec::new(),
        };
        for cache in self.caches.iter() {
            let mut cache = cache.lock();
            drained.blocks.append(&mut cache.blocks);
            drained.served.append(&mut cache.served);
        }
        drained
    }

    /// Hits the caches have served, ever.
    pub fn hits(&self) -> u64 {
        self.caches.iter().map(|c| c.lock().hits).sum()
    }

    /// Parked blocks per `(key, capacity)` class, and their bytes in all.
    pub fn parked(&self) -> (Vec<(K, u64)>, u64) {
        let mut classes = Vec::new();
        let mut bytes = 0;
        for cache in self.caches.iter() {
            for (key, capacity, _) in &cache.lock().blocks {
                classes.push((key.clone(), *capacity));
                bytes += capacity;
            }
        }
        (classes, bytes)
    }
}
