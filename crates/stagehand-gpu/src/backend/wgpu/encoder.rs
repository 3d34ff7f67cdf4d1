//! Command and render bundle encoders whose passes and outputs are counted.

use super::device::scoped;
use crate::diag::{ObjectKind, Tracked};
use crate::error::Result;

/// A counted `wgpu::CommandEncoder`; its passes and its command buffer are
/// counted too. Derefs to the wgpu encoder for copies and clears.
///
/// The protocol:
/// 1. record passes with [`begin_render_pass`](Self::begin_render_pass) /
///    [`begin_compute_pass`](Self::begin_compute_pass) and copies through deref;
/// 2. [`finish`](Self::finish) into a counted command buffer;
/// 3. submit it with [`Queue::submit`](super::Queue::submit).
pub struct CommandEncoder {
    encoder: Tracked<wgpu::CommandEncoder>,
    /// The device whose error scopes catch errors raised at `finish`.
    device: wgpu::Device,
}

impl CommandEncoder {
    pub(crate) fn new(encoder: Tracked<wgpu::CommandEncoder>, device: wgpu::Device) -> Self {
        Self { encoder, device }
    }

    /// Begins a counted render pass; it is un-counted when dropped (ended).
    pub fn begin_render_pass<'e>(
        &'e mut self,
        desc: &wgpu::RenderPassDescriptor<'_>,
    ) -> Tracked<wgpu::RenderPass<'e>> {
        let label = desc.label;
        let tracker = self.encoder.tracker().clone();
        let pass = self.encoder.begin_render_pass(desc);
        Tracked::new(&tracker, ObjectKind::RenderPassEncoder, 0, label, pass)
    }

    /// Begins a counted compute pass; it is un-counted when dropped (ended).
    pub fn begin_compute_pass<'e>(
        &'e mut self,
        desc: &wgpu::ComputePassDescriptor<'_>,
    ) -> Tracked<wgpu::ComputePass<'e>> {
        let label = desc.label;
        let tracker = self.encoder.tracker().clone();
        let pass = self.encoder.begin_compute_pass(desc);
        Tracked::new(&tracker, ObjectKind::ComputePassEncoder, 0, label, pass)
    }

    /// Finishes recording. Errors recorded in the encoder or its passes come
    /// back here as [`Error::Validation`](crate::Error::Validation).
    pub fn finish(self) -> Result<Tracked<wgpu::CommandBuffer>> {
        let tracker = self.encoder.tracker().clone();
        let encoder = self.encoder.into_inner();
        let buffer = scoped(&self.device, || encoder.finish())
            .map_err(|c| c.into_error(ObjectKind::CommandBuffer, None, 0))?;
        Ok(Tracked::new(
            &tracker,
            ObjectKind::CommandBuffer,
            0,
            None,
            buffer,
        ))
    }
}

impl std::ops::Deref for CommandEncoder {
    type Target = wgpu::CommandEncoder;
    fn deref(&self) -> &wgpu::CommandEncoder {
        &self.encoder
    }
}

impl std::ops::DerefMut for CommandEncoder {
    fn deref_mut(&mut self) -> &mut wgpu::CommandEncoder {
        &mut self.encoder
    }
}

impl std::fmt::Debug for CommandEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandEncoder").finish_non_exhaustive()
    }
}

/// A counted `wgpu::RenderBundleEncoder`; the bundle it finishes is counted too.
pub struct RenderBundleEncoder<'a> {
    encoder: Tracked<wgpu::RenderBundleEncoder<'a>>,
    device: &'a wgpu::Device,
}

impl<'a> RenderBundleEncoder<'a> {
    pub(crate) fn new(
        encoder: Tracked<wgpu::RenderBundleEncoder<'a>>,
        device: &'a wgpu::Device,
    ) -> Self {
        Self { encoder, device }
    }

    /// Finishes the bundle.
    pub fn finish(
        self,
        desc: &wgpu::RenderBundleDescriptor<'_>,
    ) -> Result<Tracked<wgpu::RenderBundle>> {
        let tracker = self.encoder.tracker().clone();
        let encoder = self.encoder.into_inner();
        let bundle = scoped(self.device, || encoder.finish(desc))
            .map_err(|c| c.into_error(ObjectKind::RenderBundle, desc.label, 0))?;
        Ok(Tracked::new(
            &tracker,
            ObjectKind::RenderBundle,
            0,
            desc.label,
            bundle,
        ))
    }
}

impl<'a> std::ops::Deref for RenderBundleEncoder<'a> {
    type Target = wgpu::RenderBundleEncoder<'a>;
    fn deref(&self) -> &wgpu::RenderBundleEncoder<'a> {
        &self.encoder
    }
}

impl<'a> std::ops::DerefMut for RenderBundleEncoder<'a> {
    fn deref_mut(&mut self) -> &mut wgpu::RenderBundleEncoder<'a> {
        &mut self.encoder
    }
}

impl std::fmt::Debug for RenderBundleEncoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderBundleEncoder")
            .finish_non_exhaustive()
    }
}
