//! [`Pooled`]: a block on loan from a pool, returned when dropped.

use super::PoolShelf;
use super::backend::PoolBackend;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A block on loan from a [`Pool`](super::Pool). Derefs to the block; goes
/// back to its free list when dropped.
///
/// Its contents are whatever the previous user left: clear or overwrite
/// before reading.
pub struct Pooled<B: PoolBackend> {
    /// `Some` until drop hands it back.
    block: Option<B::Block>,
    key: B::Key,
    capacity: u64,
    requested: u64,
    /// The shelf it was taken from, and goes back to.
    shelf: Arc<PoolShelf<B>>,
}

impl<B: PoolBackend> Pooled<B> {
    pub(super) fn new(
        block: B::Block,
        key: B::Key,
        capacity: u64,
        requested: u64,
        shelf: Arc<PoolShelf<B>>,
    ) -> Self {
        Self {
            block: Some(block),
            key,
            capacity,
            requested,
            shelf,
        }
    }

    /// Bytes the block holds: the request rounded up to its class.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes asked for.
    pub fn requested(&self) -> u64 {
        self.requested
    }

    /// The key it was taken with.
    pub fn key(&self) -> &B::Key {
        &self.key
    }

    /// The block.
    pub fn block(&self) -> &B::Block {
        // Only `drop` takes the block out, and nothing runs after it.
        self.block
            .as_ref()
            .unwrap_or_else(|| unreachable!("block taken before drop"))
    }
}

impl<B: PoolBackend> Deref for Pooled<B> {
    type Target = B::Block;
    fn deref(&self) -> &B::Block {
        self.block()
    }
}

impl<B: PoolBackend> DerefMut for Pooled<B> {
    fn deref_mut(&mut self) -> &mut B::Block {
        // Only `drop` takes the block out, and nothing runs after it.
        self.block
            .as_mut()
            .unwrap_or_else(|| unreachable!("block taken before drop"))
    }
}

impl<B: PoolBackend> Drop for Pooled<B> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.shelf.give(&self.key, self.capacity, block);
        }
    }
}

impl<B: PoolBackend> fmt::Debug for Pooled<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pooled")
            .field("pool", &self.shelf.pool.name)
            .field("key", &self.key)
            .field("capacity", &self.capacity)
            .field("requested", &self.requested)
            .finish_non_exhaustive()
    }
}
