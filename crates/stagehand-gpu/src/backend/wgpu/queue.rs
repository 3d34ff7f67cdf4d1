//! [`Queue`]: submits counted command buffers.

use super::device::scoped;
use crate::diag::{ObjectKind, Tracked};
use crate::error::Result;

/// A counted `wgpu::Queue`. Derefs to the wgpu queue for writes.
pub struct Queue {
    queue: Tracked<wgpu::Queue>,
    /// The device whose error scopes catch submission errors.
    device: wgpu::Device,
}

impl Queue {
    pub(crate) fn new(queue: Tracked<wgpu::Queue>, device: wgpu::Device) -> Self {
        Self { queue, device }
    }

    /// Submits command buffers; each stops being counted as it is consumed.
    /// A submission wgpu rejects is an [`Error::Validation`](crate::Error::Validation).
    pub fn submit(
        &self,
        buffers: impl IntoIterator<Item = Tracked<wgpu::CommandBuffer>>,
    ) -> Result<wgpu::SubmissionIndex> {
        let raw: Vec<wgpu::CommandBuffer> = buffers.into_iter().map(Tracked::into_inner).collect();
        scoped(&self.device, || self.queue.submit(raw))
            .map_err(|c| c.into_error(ObjectKind::CommandBuffer, None, 0))
    }
}

impl std::ops::Deref for Queue {
    type Target = wgpu::Queue;
    fn deref(&self) -> &wgpu::Queue {
        &self.queue
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}
