//! The narrow trait a device implements to be pooled.

use std::fmt::Debug;
use std::hash::Hash;

/// Why a backend could not allocate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// The device is out of memory; freeing memory may cure it.
    #[error("the device is out of memory")]
    OutOfMemory,
    /// The request can never succeed on this device (over a limit, bad
    /// usage); retrying or trimming will not help.
    #[error("{0}")]
    Invalid(String),
    /// Any other failure of the device (lost, internal error).
    #[error("device error: {0}")]
    Device(String),
}

/// A device the pool can allocate from.
///
/// The pool is written once against this trait; it calls `allocate` only on
/// a miss and `free` only for idle blocks it gives back, never while holding
/// its own lock.
pub trait PoolBackend: Send + Sync + 'static {
    /// What makes two blocks of equal capacity unable to stand in for each
    /// other: buffer usage flags, a texture's descriptor.
    type Key: Clone + Eq + Hash + Debug + Send + Sync;
    /// One allocation: a buffer, a texture, a device pointer.
    type Block: Send + Sync;

    /// Whether requests round up to capacity classes (buffers, device
    /// memory) or must match exactly (textures, whose key fixes their size).
    const CLASSES: bool;

    /// Checks that a block of `capacity` bytes with `key` could ever be
    /// allocated, before the pool changes any state.
    fn check(&self, key: &Self::Key, capacity: u64) -> Result<(), AllocError>;

    /// Allocates a block of `capacity` bytes.
    fn allocate(&self, key: &Self::Key, capacity: u64) -> Result<Self::Block, AllocError>;

    /// Gives a block back to the device. Called exactly once per block.
    fn free(&self, key: &Self::Key, block: Self::Block);

    /// Prepares a block that comes back from its user for the next one, or
    /// says it cannot be reused (it is then freed). The default reuses it.
    fn recycle(&self, _key: &Self::Key, _block: &Self::Block) -> bool {
        true
    }
}
