//! A pool backend whose faults are chosen: fail the n-th allocation, or
//! behave like a device with N bytes. It counts every allocation and free, so
//! tests can prove that no block is handed out twice or freed twice, and that
//! none is lost.

use crate::pool::{AllocError, PoolBackend};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// A block of the fault-injecting backend: an id and a size, no memory.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FaultBlock {
    /// Unique among all blocks this backend ever allocated.
    pub id: u64,
    /// Its capacity in bytes.
    pub size: u64,
}

/// What the backend has seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Successful allocations.
    pub allocations: u64,
    /// Frees of live blocks.
    pub frees: u64,
    /// Frees of blocks that were not live: must stay 0.
    pub bad_frees: u64,
    /// Allocations refused as out of memory.
    pub ooms: u64,
    /// Bytes of live blocks.
    pub live_bytes: u64,
}

#[derive(Default)]
struct State {
    /// Live blocks by id, with their size.
    live: HashMap<u64, u64>,
    next_id: u64,
    /// Allocation attempts so far.
    attempts: u64,
    counts: FaultCounts,
    /// Attempt numbers (1-based) that fail with out-of-memory.
    fail_at: Vec<u64>,
    /// The device's size; allocations past it fail with out-of-memory.
    capacity: Option<u64>,
}

/// The fault-injecting backend. Clones share one device, so a test can keep
/// a clone to watch the device after handing the backend to a pool.
#[derive(Clone, Default)]
pub struct FaultBackend {
    state: Arc<Mutex<State>>,
    /// Largest allocation it accepts; over it is an invalid request.
    max_block: Option<u64>,
}

impl FaultBackend {
    /// A device of `capacity` bytes (`None`: unlimited).
    pub fn new(capacity: Option<u64>) -> Self {
        let backend = Self::default();
        backend.state.lock().capacity = capacity;
        backend
    }

    /// The same device, refusing blocks over `max` bytes as invalid requests.
    pub fn with_max_block(mut self, max: u64) -> Self {
        self.max_block = Some(max);
        self
    }

    /// Makes the `n`-th allocation attempt from now (1 = the next) fail with
    /// out-of-memory.
    pub fn fail_in(&self, n: u64) {
        let mut s = self.state.lock();
        let at = s.attempts + n.max(1);
        s.fail_at.push(at);
    }

    /// Changes the device's size.
    pub fn set_capacity(&self, capacity: Option<u64>) {
        self.state.lock().capacity = capacity;
    }

    /// What it has seen so far.
    pub fn counts(&self) -> FaultCounts {
        self.state.lock().counts.clone()
    }

    /// Ids of live blocks.
    pub fn live_ids(&self) -> Vec<u64> {
        self.state.lock().live.keys().copied().collect()
    }
}

impl PoolBackend for FaultBackend {
    type Key = u8;
    type Block = FaultBlock;
    const CLASSES: bool = true;

    fn check(&self, _key: &u8, capacity: u64) -> Result<(), AllocError> {
        match self.max_block {
            Some(max) if capacity > max => Err(AllocError::Invalid(format!(
                "{capacity} bytes exceeds the largest block, {max}"
            ))),
            _ => Ok(()),
        }
    }

    fn allocate(&self, _key: &u8, capacity: u64) -> Result<FaultBlock, AllocError> {
        let mut s = self.state.lock();
        s.attempts += 1;
        let attempt = s.attempts;
        let injected = s.fail_at.contains(&attempt);
        let full = s
            .capacity
            .is_some_and(|c| s.counts.live_bytes + capacity > c);
        if injected || full {
            s.counts.ooms += 1;
            return Err(AllocError::OutOfMemory);
        }
        s.next_id += 1;
        let id = s.next_id;
        s.live.insert(id, capacity);
        s.counts.allocations += 1;
        s.counts.live_bytes += capacity;
        Ok(FaultBlock { id, size: capacity })
    }

    fn free(&self, _key: &u8, block: FaultBlock) {
        let mut s = self.state.lock();
        match s.live.remove(&block.id) {
            Some(size) => {
                s.counts.frees += 1;
                s.counts.live_bytes -= size;
            }
            None => s.counts.bad_frees += 1,
        }
    }
}
