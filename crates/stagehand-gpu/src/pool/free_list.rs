//! The pool's bookkeeping: free lists per key and class, bytes held and in
//! use, batches and the budget. Pure data: it never calls the device; what it
//! takes out to be freed it hands back to the caller, who frees it after
//! releasing the lock.

use foldhash::fast::RandomState;
use std::collections::HashMap;
use std::hash::Hash;

/// Idle blocks of one key and capacity.
pub(crate) struct FreeList<Block> {
    /// Blocks ready to hand out; the most recently returned is last.
    pub idle: Vec<Block>,
    /// Blocks of this list out in handles; the list is kept while above 0.
    pub in_use: u64,
    /// The batch in which a request last asked for this class.
    pub last_batch: u64,
    /// The pool's clock at the last take from or give to this list.
    pub last_tick: u64,
    /// Requests for this class since the list was made.
    pub takes: u64,
}

impl<Block> FreeList<Block> {
    fn new() -> Self {
        Self {
            idle: Vec::new(),
            in_use: 0,
            last_batch: 0,
            last_tick: 0,
            takes: 0,
        }
    }
}

/// Blocks removed from the books, to be freed by the caller after unlocking.
pub(crate) type Freed<K, Block> = Vec<(K, Block)>;

/// Everything the pool's lock protects.
pub(crate) struct Books<K, Block> {
    /// One free list per (key, capacity).
    pub lists: HashMap<(K, u64), FreeList<Block>, RandomState>,
    /// Bytes allocated and not yet freed; always `in_use + idle`.
    pub held: u64,
    /// Bytes in handles, including allocations in progress.
    pub in_use: u64,
    /// Highest `held` since creation or reset; never below `held`.
    pub peak_held: u64,
    /// Highest `in_use` since creation or reset; never below `in_use`.
    pub peak_in_use: u64,
    /// Cap on `held`, if any.
    pub budget: Option<u64>,
    /// Batches a class may go untouched before `end_batch` frees it; at least 1.
    pub keep_batches: u64,
    /// The batch now running, from 0.
    pub batch: u64,
    /// Counts takes and gives, to find the least recently used list.
    pub tick: u64,
    /// Requests served from a free list. Counted here, under the lock the
    /// hit holds anyway, rather than in a shared atomic that threads would
    /// pass between them on every hit.
    pub hits: u64,
}

/// What a take found.
pub(crate) enum Take<Block> {
    /// A block from the free list.
    Hit(Block),
    /// Nothing idle; bytes are reserved and the caller must allocate (and
    /// call `cancel` if that fails). Blocks evicted to make room come along.
    Allocate,
    /// Over budget even after evicting every idle block.
    OverBudget,
}

impl<K: Clone + Eq + Hash, Block> Books<K, Block> {
    pub fn new(budget: Option<u64>, keep_batches: u64) -> Self {
        Self {
            lists: HashMap::default(),
            held: 0,
            in_use: 0,
            peak_held: 0,
            peak_in_use: 0,
            budget,
            keep_batches,
            batch: 0,
            tick: 0,
            hits: 0,
        }
    }

    pub fn idle(&self) -> u64 {
        self.held - self.in_use
    }

    fn note_use(&mut self, cap: u64) {
        self.in_use += cap;
        self.peak_in_use = self.peak_in_use.max(self.in_use);
        self.peak_held = self.peak_held.max(self.held);
        debug_assert!(
            self.held >= self.in_use,
            "held {} < in use {}",
            self.held,
            self.in_use
        );
    }

    /// Serves a request for `cap` bytes of `key` from its free list, if the
    /// list has an idle block. Touches nothing when it has none.
    pub fn hit(&mut self, key: &K, cap: u64) -> Option<Block> {
        let list = self.lists.get_mut(&(key.clone(), cap))?;
        let block = list.idle.pop()?;
        self.tick += 1;
        list.last_batch = self.batch;
        list.last_tick = self.tick;
        list.takes += 1;
        list.in_use += 1;
        self.hits += 1;
        self.note_use(cap);
        Some(block)
    }

    /// Serves a request for `cap` bytes of `key`: from the free list if a
    /// block is idle, else by reserving the bytes for a new allocation,
    /// evicting idle blocks of other classes into `freed` when the budget
    /// requires.
    pub fn take(&mut self, key: &K, cap: u64, freed: &mut Freed<K, Block>) -> Take<Block> {
        if let Some(block) = self.hit(key, cap) {
            return Take::Hit(block);
        }
        if let Some(budget) = self.budget {
            self.evict_until(budget.saturating_sub(cap), freed);
            if self.held + cap > budget {
                return Take::OverBudget;
            }
        }
        self.tick += 1;
        let (tick, batch) = (self.tick, self.batch);
        let list = self
            .lists
            .entry((key.clone(), cap))
            .or_insert_with(FreeList::new);
        list.last_batch = batch;
        list.last_tick = tick;
        list.takes += 1;
        list.in_use += 1;
        self.held += cap;
        self.note_use(cap);
        Take::Allocate
    }

    /// Removes a block that will not come back: a reservation whose
    /// allocation failed, or a block the backend discarded or the closed
    /// pool frees.
    pub fn forget(&mut self, key: &K, cap: u64) {
        self.release(key, cap);
        self.held -= cap;
    }

    fn release(&mut self, key: &K, cap: u64) -> Option<&mut FreeList<Block>> {
        debug_assert!(self.in_use >= cap);
        self.in_use -= cap;
        let list = self.lists.get_mut(&(key.clone(), cap));
        debug_assert!(
            list.as_ref().is_some_and(|l| l.in_use > 0),
            "a block in use keeps its list"
        );
        let list = list?;
        list.in_use -= 1;
        Some(list)
    }

    /// Takes back a block from a handle. Returns it if it must be freed
    /// instead (over budget), having removed its bytes from `held`.
    pub fn give(&mut self, key: &K, cap: u64, block: Block) -> Option<Block> {
        self.tick += 1;
        let tick = self.tick;
        let over = self.budget.is_some_and(|b| self.held > b);
        match self.release(key, cap) {
            Some(list) if !over => {
                list.idle.push(block);
                list.last_tick = tick;
                None
            }
            _ => {
                self.held -= cap;
                Some(block)
            }
        }
    }

    /// Moves every idle block to `freed`.
    pub fn trim(&mut self, freed: &mut Freed<K, Block>) {
        self.remove_idle(|_| true, freed);
    }

    /// Frees the classes no request touched in the last `keep_batches`
    /// batches, and starts the next batch.
    pub fn end_batch(&mut self, freed: &mut Freed<K, Block>) {
        let oldest_kept = (self.batch + 1).saturating_sub(self.keep_batches);
        self.remove_idle(|l| l.last_batch < oldest_kept, freed);
        self.batch += 1;
    }

    /// Moves the idle blocks of every list matching `stale` to `freed`, and
    /// drops lists left with nothing in use.
    fn remove_idle(
        &mut self,
        stale: impl Fn(&FreeList<Block>) -> bool,
        freed: &mut Freed<K, Block>,
    ) {
        let mut bytes = 0;
        self.lists.retain(|(key, cap), list| {
            if !stale(list) {
                return true;
            }
            bytes += cap * list.idle.len() as u64;
            freed.extend(list.idle.drain(..).map(|b| (key.clone(), b)));
            list.in_use > 0
        });
        self.held -= bytes;
    }

    /// Frees idle blocks, least recently used list first, until `held` is at
    /// most `target` or nothing idle is left.
    pub fn evict_until(&mut self, target: u64, freed: &mut Freed<K, Block>) {
        while self.held > target {
            let victim = self
                .lists
                .iter()
                .filter(|(_, l)| !l.idle.is_empty())
                .min_by_key(|(_, l)| l.last_tick)
                .map(|(k, _)| k.clone());
            let Some((key, cap)) = victim else { return };
            let list = self.lists.get_mut(&(key.clone(), cap));
            if let Some(block) = list.and_then(|l| l.idle.pop()) {
                self.held -= cap;
                freed.push((key, block));
            }
        }
    }

    /// Sets the budget and evicts idle blocks to meet it.
    pub fn set_budget(&mut self, budget: Option<u64>, freed: &mut Freed<K, Block>) {
        self.budget = budget;
        if let Some(b) = budget {
            self.evict_until(b, freed);
        }
    }

    pub fn reset_peaks(&mut self) {
        self.peak_held = self.held;
        self.peak_in_use = self.in_use;
    }
}
