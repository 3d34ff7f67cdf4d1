//! The pool's errors.

use super::backend::AllocError;

/// Why the pool could not hand out a block.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// Out of memory even after giving every idle block back to the device,
    /// or over the pool's budget. Recover by retrying with a smaller batch
    /// (see [`halve_on_oom`](super::halve_on_oom)) or releasing handles.
    #[error(
        "out of GPU memory: needed {requested} bytes with {held} held ({in_use} in use, {idle} idle){}; \
         retry with a smaller batch",
        budget.map(|b| format!(", budget {b}")).unwrap_or_default()
    )]
    OutOfMemory {
        /// Bytes asked for, rounded to the capacity class.
        requested: u64,
        /// Bytes the pool held when it gave up.
        held: u64,
        /// Of those, bytes in handles users hold.
        in_use: u64,
        /// Of those, bytes idle in free lists.
        idle: u64,
        /// The pool's budget, if it has one.
        budget: Option<u64>,
    },
    /// A request that can never succeed: zero length, over a device limit,
    /// a bad usage. Nothing in the pool changed. Recover by fixing the request.
    #[error("invalid pool request for {len} bytes: {reason}")]
    InvalidRequest {
        /// The length asked for.
        len: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The device failed in a way that is not about memory.
    #[error("device error in pool: {0}")]
    Device(String),
    /// A configuration value is out of range.
    #[error("invalid pool config: {0}")]
    InvalidConfig(String),
}

impl PoolError {
    /// Whether a smaller request may succeed.
    pub fn is_oom(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }

    pub(crate) fn from_alloc(e: AllocError, len: u64) -> Self {
        match e {
            AllocError::Invalid(reason) => Self::InvalidRequest { len, reason },
            AllocError::Device(m) => Self::Device(m),
            // The caller turns OOM into `OutOfMemory` with the numbers.
            AllocError::OutOfMemory => Self::Device("out of memory".into()),
        }
    }
}
