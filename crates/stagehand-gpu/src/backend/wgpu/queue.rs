//! [`Queue`]: submits counted command buffers.

use super::device::{scoped, scoped_call};
use crate::diag::{ObjectKind, Tracked};
use crate::error::Result;
use parking_lot::Mutex;

/// A counted `wgpu::Queue`. Derefs to the wgpu queue for writes.
pub struct Queue {
    queue: Tracked<wgpu::Queue>,
    /// The device whose error scopes catch submission errors.
    device: wgpu::Device,
    /// Held by every submission and by a surface's configuration, so that
    /// the one never runs during the other (see
    /// [`configure_surface`](Self::configure_surface)).
    submitting: Mutex<()>,
}

impl Queue {
    pub(crate) fn new(queue: Tracked<wgpu::Queue>, device: wgpu::Device) -> Self {
        Self {
            queue,
            device,
            submitting: Mutex::new(()),
        }
    }

    /// Configures `surface` on this queue's device with no submission of
    /// this queue running meanwhile; what wgpu rejects comes back as its
    /// message.
    ///
    /// Configuring waits for the device to come idle, and fails when a
    /// submission from another thread arrives during that wait (an upload
    /// worker, another player on the same device). Worse, the completion
    /// callbacks that wait had collected (buffer mappings, work-done
    /// notices) are then dropped without running, so whoever waits on one
    /// waits forever: an upload engine's completion thread did, and with
    /// it every player on the device. Submissions made through this queue
    /// wait for the configuration instead.
    pub fn configure_surface(
        &self,
        surface: &wgpu::Surface<'_>,
        config: &wgpu::SurfaceConfiguration,
    ) -> std::result::Result<(), String> {
        let _alone = self.submitting.lock();
        scoped_call(&self.device, || surface.configure(&self.device, config))
    }

    /// Submits command buffers; each stops being counted as it is consumed.
    /// A submission wgpu rejects is an [`Error::Validation`](crate::Error::Validation).
    pub fn submit(
        &self,
        buffers: impl IntoIterator<Item = Tracked<wgpu::CommandBuffer>>,
    ) -> Result<wgpu::SubmissionIndex> {
        let raw: Vec<wgpu::CommandBuffer> = buffers.into_iter().map(Tracked::into_inner).collect();
        let _submitting = self.submitting.lock();
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
