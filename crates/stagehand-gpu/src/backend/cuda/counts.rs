//! [`CudaCounts`]: the CUDA rows of a [`Tracker`], as one value.

use crate::diag::{ObjectKind, Snapshot, Tracker};
use serde::Serialize;

/// Live CUDA objects and their bytes at one moment, as counted by the
/// tracker a [`Cuda`](super::Cuda) was opened with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CudaCounts {
    /// Device allocations (`cuMemAlloc`) alive.
    pub device_allocations: u64,
    /// Their bytes.
    pub device_bytes: u64,
    /// Page-locked host buffers (`cuMemHostAlloc`) alive.
    pub pinned_buffers: u64,
    /// Their bytes.
    pub pinned_bytes: u64,
    /// Streams alive.
    pub streams: u64,
    /// Events alive.
    pub events: u64,
}

impl CudaCounts {
    /// The CUDA rows of `snapshot`.
    pub fn from_snapshot(snapshot: &Snapshot) -> Self {
        let device = snapshot.get(ObjectKind::CudaDeviceMemory);
        let pinned = snapshot.get(ObjectKind::CudaPinnedMemory);
        Self {
            device_allocations: device.count,
            device_bytes: device.bytes,
            pinned_buffers: pinned.count,
            pinned_bytes: pinned.bytes,
            streams: snapshot.get(ObjectKind::CudaStream).count,
            events: snapshot.get(ObjectKind::CudaEvent).count,
        }
    }

    /// The CUDA rows of `tracker` now.
    pub fn of(tracker: &Tracker) -> Self {
        Self::from_snapshot(&tracker.snapshot())
    }
}
