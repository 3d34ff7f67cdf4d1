//! Live counts of the CUDA objects stagehand made, updated without locks.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live CUDA objects and their bytes at one moment.
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

#[derive(Debug, Default)]
pub(crate) struct Counts {
    device_allocations: AtomicU64,
    device_bytes: AtomicU64,
    pinned_buffers: AtomicU64,
    pinned_bytes: AtomicU64,
    streams: AtomicU64,
    events: AtomicU64,
}

/// Which kind of object a count is for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Device,
    Pinned,
    Stream,
    Event,
}

impl Counts {
    fn pair(&self, kind: Kind) -> (&AtomicU64, Option<&AtomicU64>) {
        match kind {
            Kind::Device => (&self.device_allocations, Some(&self.device_bytes)),
            Kind::Pinned => (&self.pinned_buffers, Some(&self.pinned_bytes)),
            Kind::Stream => (&self.streams, None),
            Kind::Event => (&self.events, None),
        }
    }

    pub fn created(&self, kind: Kind, bytes: u64) {
        let (count, total) = self.pair(kind);
        count.fetch_add(1, Relaxed);
        if let Some(total) = total {
            total.fetch_add(bytes, Relaxed);
        }
    }

    pub fn destroyed(&self, kind: Kind, bytes: u64) {
        let (count, total) = self.pair(kind);
        count.fetch_sub(1, Relaxed);
        if let Some(total) = total {
            total.fetch_sub(bytes, Relaxed);
        }
    }

    pub fn snapshot(&self) -> CudaCounts {
        CudaCounts {
            device_allocations: self.device_allocations.load(Relaxed),
            device_bytes: self.device_bytes.load(Relaxed),
            pinned_buffers: self.pinned_buffers.load(Relaxed),
            pinned_bytes: self.pinned_bytes.load(Relaxed),
            streams: self.streams.load(Relaxed),
            events: self.events.load(Relaxed),
        }
    }
}
