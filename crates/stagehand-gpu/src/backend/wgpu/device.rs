//! [`Device`]: creates wgpu objects that the tracker counts.

use super::encoder::{CommandEncoder, RenderBundleEncoder};
use super::texture_size::texture_bytes;
use super::validate::{self, FormatSupport};
use crate::diag::{ObjectKind, Tracked, Tracker};
use crate::error::{Error, Label, Result};
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// A wgpu device whose every creation is counted and checked.
///
/// Each `create_*` checks the descriptor, then creates the object inside
/// wgpu error scopes, so bad input returns an [`Error`] and leaves the counts
/// unchanged instead of reaching wgpu's panicking default handler. Derefs to
/// `wgpu::Device` for everything else.
pub struct Device {
    device: Tracked<wgpu::Device>,
    /// Kept to ask which usages each texture format allows.
    adapter: wgpu::Adapter,
    /// How host memory becomes buffers, where the device was opened able
    /// to ([`Device::import_host_memory`]).
    #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
    host: Option<super::host_import::HostImport>,
}

/// What an error scope caught.
pub(crate) enum Caught {
    OutOfMemory,
    Validation(String),
}

/// The output of a future that native backends complete at once: polled once
/// with a no-op waker (no allocation, no thread parking), and only if that
/// finds it pending, waited for.
fn ready_now<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => pollster::block_on(future),
    }
}

/// Runs `f` inside out-of-memory and validation error scopes of `device`.
pub(crate) fn scoped<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> Result<T, Caught> {
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    let validation = ready_now(validation.pop());
    let oom = ready_now(oom.pop());
    match (oom, validation) {
        (Some(_), _) => Err(Caught::OutOfMemory),
        (None, Some(e)) => Err(Caught::Validation(e.to_string())),
        (None, None) => Ok(out),
    }
}

/// Runs `f` inside error scopes; what wgpu rejects comes back as its message.
pub(crate) fn scoped_call<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> Result<T, String> {
    scoped(device, f).map_err(|c| match c {
        Caught::OutOfMemory => "out of GPU memory".to_owned(),
        Caught::Validation(m) => m,
    })
}

impl Caught {
    pub(crate) fn into_error(self, kind: ObjectKind, label: Option<&str>, bytes: u64) -> Error {
        let label = Label::of(label);
        match self {
            Caught::OutOfMemory => Error::OutOfMemory { kind, label, bytes },
            Caught::Validation(message) => Error::Validation {
                kind,
                label,
                message,
            },
        }
    }
}

impl Device {
    /// Runs `f` inside validation and out-of-memory error scopes: what wgpu
    /// rejects comes back as its message instead of reaching the device's
    /// uncaptured-error handler (which panics). For wgpu calls that have no
    /// `create_*` wrapper here, such as a surface's `configure` and
    /// `get_current_texture` on a window that may already be gone.
    pub fn catch<T>(&self, f: impl FnOnce() -> T) -> std::result::Result<T, String> {
        scoped_call(&self.device, f)
    }

    pub(crate) fn new(
        device: Tracked<wgpu::Device>,
        adapter: wgpu::Adapter,
        #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))] host: Option<
            super::host_import::HostImport,
        >,
    ) -> Self {
        Self {
            device,
            adapter,
            #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
            host,
        }
    }

    /// The alignment host memory needs, start and length, to be imported
    /// ([`Device::import_host_memory`]); `None` where this device cannot
    /// import it (not Vulkan, or a driver without
    /// `VK_EXT_external_memory_host`).
    pub fn host_import_alignment(&self) -> Option<usize> {
        #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
        return self.host.as_ref().map(|h| h.alignment());
        #[cfg(not(any(windows, all(unix, not(target_vendor = "apple")))))]
        None
    }

    /// `region` as a buffer that copies read from and write to in place
    /// (`COPY_SRC | COPY_DST`, `region.len()` bytes, counted): no copy
    /// into memory of the device's own on the way. The region stays alive
    /// until the device has destroyed the buffer, after the last
    /// submission that used it. `None` where this device cannot import
    /// host memory ([`Device::host_import_alignment`]); a region not
    /// aligned as it asks is an error.
    ///
    /// # Safety
    ///
    /// While a submission that uses the buffer may be running, nothing on
    /// the CPU writes the region, and nothing reads it while a copy into
    /// it may be running.
    #[allow(unsafe_code)] // the caller's promise above, passed on
    pub unsafe fn import_host_memory(
        &self,
        region: Box<dyn super::HostRegion>,
        label: Option<&str>,
    ) -> Option<Result<Tracked<wgpu::Buffer>>> {
        #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
        {
            let host = self.host.as_ref()?;
            let bytes = region.len() as u64;
            // SAFETY: the caller's promise is the import's.
            let made = unsafe { host.import(&self.device, region, label) };
            Some(made.map(|b| Tracked::new(self.tracker(), ObjectKind::Buffer, bytes, label, b)))
        }
        #[cfg(not(any(windows, all(unix, not(target_vendor = "apple")))))]
        {
            drop((region, label));
            None
        }
    }

    /// The tracker that counts this device's objects.
    pub fn tracker(&self) -> &Arc<Tracker> {
        self.device.tracker()
    }

    /// Creates `kind` with `f` inside error scopes and counts it.
    fn make<T>(
        &self,
        kind: ObjectKind,
        label: Option<&str>,
        bytes: u64,
        f: impl FnOnce(&wgpu::Device) -> T,
    ) -> Result<Tracked<T>> {
        let raw = scoped(&self.device, || f(&self.device))
            .map_err(|c| c.into_error(kind, label, bytes))?;
        Ok(Tracked::new(self.tracker(), kind, bytes, label, raw))
    }

    /// Creates a buffer, counted with its size.
    pub fn create_buffer(
        &self,
        desc: &wgpu::BufferDescriptor<'_>,
    ) -> Result<Tracked<wgpu::Buffer>> {
        validate::buffer(desc, self.device.features(), &self.device.limits())?;
        self.make(ObjectKind::Buffer, desc.label, desc.size, |d| {
            d.create_buffer(desc)
        })
    }

    /// Creates a buffer holding `desc.contents`, counted with its size
    /// (the contents rounded up to [`wgpu::COPY_BUFFER_ALIGNMENT`]).
    pub fn create_buffer_init(
        &self,
        desc: &wgpu::util::BufferInitDescriptor<'_>,
    ) -> Result<Tracked<wgpu::Buffer>> {
        let size = (desc.contents.len() as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        let check = wgpu::BufferDescriptor {
            label: desc.label,
            size,
            usage: desc.usage,
            mapped_at_creation: false,
        };
        validate::buffer(&check, self.device.features(), &self.device.limits())?;
        self.make(ObjectKind::Buffer, desc.label, size, |d| {
            d.create_buffer_init(desc)
        })
    }

    /// What this device lets `format` do.
    pub fn format_support(&self, format: wgpu::TextureFormat) -> FormatSupport {
        let features = self.device.features();
        let format_features =
            if features.contains(wgpu::Features::TEXTURE_ADAPTER_SPECIFIC_FORMAT_FEATURES) {
                self.adapter.get_texture_format_features(format)
            } else {
                format.guaranteed_format_features(features)
            };
        FormatSupport {
            required: format.required_features(),
            features: format_features,
        }
    }

    /// Creates a texture, counted with its exact size over all mips, layers
    /// and samples.
    pub fn create_texture(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
    ) -> Result<Tracked<wgpu::Texture>> {
        let support = self.format_support(desc.format);
        validate::texture(
            desc,
            self.device.features(),
            &self.device.limits(),
            &support,
        )?;
        self.make(ObjectKind::Texture, desc.label, texture_bytes(desc), |d| {
            d.create_texture(desc)
        })
    }

    /// Creates a view of `texture`.
    pub fn create_texture_view(
        &self,
        texture: &wgpu::Texture,
        desc: &wgpu::TextureViewDescriptor<'_>,
    ) -> Result<Tracked<wgpu::TextureView>> {
        self.make(ObjectKind::TextureView, desc.label, 0, |_| {
            texture.create_view(desc)
        })
    }

    /// Creates a sampler.
    pub fn create_sampler(
        &self,
        desc: &wgpu::SamplerDescriptor<'_>,
    ) -> Result<Tracked<wgpu::Sampler>> {
        self.make(ObjectKind::Sampler, desc.label, 0, |d| {
            d.create_sampler(desc)
        })
    }

    /// Creates a bind group layout.
    pub fn create_bind_group_layout(
        &self,
        desc: &wgpu::BindGroupLayoutDescriptor<'_>,
    ) -> Result<Tracked<wgpu::BindGroupLayout>> {
        self.make(ObjectKind::BindGroupLayout, desc.label, 0, |d| {
            d.create_bind_group_layout(desc)
        })
    }

    /// Creates a bind group.
    pub fn create_bind_group(
        &self,
        desc: &wgpu::BindGroupDescriptor<'_>,
    ) -> Result<Tracked<wgpu::BindGroup>> {
        self.make(ObjectKind::BindGroup, desc.label, 0, |d| {
            d.create_bind_group(desc)
        })
    }

    /// Creates a pipeline layout.
    pub fn create_pipeline_layout(
        &self,
        desc: &wgpu::PipelineLayoutDescriptor<'_>,
    ) -> Result<Tracked<wgpu::PipelineLayout>> {
        self.make(ObjectKind::PipelineLayout, desc.label, 0, |d| {
            d.create_pipeline_layout(desc)
        })
    }

    /// Creates a shader module; a shader that does not compile is an
    /// [`Error::Validation`] carrying the compiler's message.
    pub fn create_shader_module(
        &self,
        desc: wgpu::ShaderModuleDescriptor<'_>,
    ) -> Result<Tracked<wgpu::ShaderModule>> {
        let label = desc.label.map(str::to_owned);
        self.make(ObjectKind::ShaderModule, label.as_deref(), 0, |d| {
            d.create_shader_module(desc)
        })
    }

    /// Creates a render pipeline.
    pub fn create_render_pipeline(
        &self,
        desc: &wgpu::RenderPipelineDescriptor<'_>,
    ) -> Result<Tracked<wgpu::RenderPipeline>> {
        self.make(ObjectKind::RenderPipeline, desc.label, 0, |d| {
            d.create_render_pipeline(desc)
        })
    }

    /// Creates a compute pipeline.
    pub fn create_compute_pipeline(
        &self,
        desc: &wgpu::ComputePipelineDescriptor<'_>,
    ) -> Result<Tracked<wgpu::ComputePipeline>> {
        self.make(ObjectKind::ComputePipeline, desc.label, 0, |d| {
            d.create_compute_pipeline(desc)
        })
    }

    /// Creates a query set, counted at 8 bytes per query.
    pub fn create_query_set(
        &self,
        desc: &wgpu::QuerySetDescriptor<'_>,
    ) -> Result<Tracked<wgpu::QuerySet>> {
        validate::query_set(desc)?;
        let bytes = u64::from(desc.count) * 8;
        self.make(ObjectKind::QuerySet, desc.label, bytes, |d| {
            d.create_query_set(desc)
        })
    }

    /// Creates a command encoder whose passes and command buffer are counted too.
    pub fn create_command_encoder(
        &self,
        desc: &wgpu::CommandEncoderDescriptor<'_>,
    ) -> Result<CommandEncoder> {
        let encoder = self.make(ObjectKind::CommandEncoder, desc.label, 0, |d| {
            d.create_command_encoder(desc)
        })?;
        Ok(CommandEncoder::new(encoder, (*self.device).clone()))
    }

    /// Creates a render bundle encoder whose bundle is counted too.
    pub fn create_render_bundle_encoder<'a>(
        &'a self,
        desc: &wgpu::RenderBundleEncoderDescriptor<'_>,
    ) -> Result<RenderBundleEncoder<'a>> {
        let encoder = self.make(ObjectKind::RenderBundleEncoder, desc.label, 0, |d| {
            d.create_render_bundle_encoder(desc)
        })?;
        Ok(RenderBundleEncoder::new(encoder, &self.device))
    }
}

impl std::ops::Deref for Device {
    type Target = wgpu::Device;
    fn deref(&self) -> &wgpu::Device {
        &self.device
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("tracker", self.tracker())
            .finish_non_exhaustive()
    }
}
