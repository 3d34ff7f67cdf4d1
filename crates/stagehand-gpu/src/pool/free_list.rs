//! One free list: the idle blocks of one key and capacity on one shelf, and
//! what the pool needs to know to release or evict them.

/// Idle blocks of one key and capacity.
pub(crate) struct FreeList<Block> {
    /// Blocks ready to hand out; the most recently returned is last.
    pub idle: Vec<Block>,
    /// Blocks of this list out in handles; the list is kept while above 0.
    pub in_use: u64,
    /// The batch in which a request last asked for this class.
    pub last_batch: u64,
    /// The batch of the last take from or give to this list.
    pub last_touch: u64,
    /// The shelf's clock at the last take from or give to this list.
    pub last_tick: u64,
    /// Requests for this class since the list was made.
    pub takes: u64,
}

impl<Block> FreeList<Block> {
    pub fn new() -> Self {
        Self {
            idle: Vec::new(),
            in_use: 0,
            last_batch: 0,
            last_touch: 0,
            last_tick: 0,
            takes: 0,
        }
    }

    /// How long ago a block last left or came back to the list, oldest
    /// first: by batch, then by the shelf's clock (which orders uses on one
    /// shelf only, exactly).
    pub fn age(&self) -> (u64, u64) {
        (self.last_touch, self.last_tick)
    }
}
