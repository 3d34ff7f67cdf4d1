//! wgpu as a pool backend: buffers pooled per usage flags and class,
//! textures per descriptor.

use super::context::Gpu;
use super::device::scoped;
use super::texture_size::texture_bytes;
use super::validate;
use crate::diag::Tracked;
use crate::error::Error;
use crate::pool::{AllocError, Pool, PoolBackend, PoolConfig, PoolError, Pooled};
use std::sync::Arc;

/// Label of every pooled object, so leak checks and wgpu's own tools name them.
pub const POOL_LABEL: &str = "stagehand pool";

fn alloc_error(e: Error) -> AllocError {
    match e {
        Error::OutOfMemory { .. } => AllocError::OutOfMemory,
        Error::InvalidDescriptor { reason, .. } => AllocError::Invalid(reason),
        Error::UnsupportedFormat { .. }
        | Error::UnsupportedUsage { .. }
        | Error::Validation { .. } => AllocError::Invalid(e.to_string()),
        other => AllocError::Device(other.to_string()),
    }
}

/// Pools wgpu buffers. The key is the usage flags.
pub struct BufferBackend {
    gpu: Arc<Gpu>,
    /// Mappable buffers come back as they are, mapped or not.
    keep_mappings: bool,
}

impl BufferBackend {
    /// Buffers of `gpu`; mappable ones come back unmapped.
    pub fn new(gpu: Arc<Gpu>) -> Self {
        Self {
            gpu,
            keep_mappings: false,
        }
    }

    /// Buffers of `gpu` whose one user knows their mapping state (the
    /// upload engine's staging): mappable ones come back as they are, so a
    /// staging buffer mapped for its next upload is not unmapped and mapped
    /// again each time a ring is dropped and another made. That churn costs
    /// a map each, and on GL a frame-sized host allocation each.
    pub fn keeping_mappings(gpu: Arc<Gpu>) -> Self {
        Self {
            gpu,
            keep_mappings: true,
        }
    }

    fn desc(usage: wgpu::BufferUsages, capacity: u64) -> wgpu::BufferDescriptor<'static> {
        wgpu::BufferDescriptor {
            label: Some(POOL_LABEL),
            size: capacity,
            usage,
            mapped_at_creation: false,
        }
    }
}

impl PoolBackend for BufferBackend {
    type Key = wgpu::BufferUsages;
    type Block = Tracked<wgpu::Buffer>;
    const CLASSES: bool = true;

    fn check(&self, usage: &wgpu::BufferUsages, capacity: u64) -> Result<(), AllocError> {
        let device = self.gpu.device();
        validate::buffer(
            &Self::desc(*usage, capacity),
            device.features(),
            &device.limits(),
        )
        .map_err(alloc_error)
    }

    fn allocate(
        &self,
        usage: &wgpu::BufferUsages,
        capacity: u64,
    ) -> Result<Self::Block, AllocError> {
        self.gpu
            .device()
            .create_buffer(&Self::desc(*usage, capacity))
            .map_err(alloc_error)
    }

    fn free(&self, _usage: &wgpu::BufferUsages, block: Self::Block) {
        drop(block);
    }

    /// A mappable buffer comes back unmapped: a live mapping is unmapped and
    /// a pending one aborted (its callback sees the abort), so the next user
    /// never finds it mapped. wgpu offers no way to ask whether a buffer is
    /// mapped, and unmapping an unmapped buffer is a validation error, so the
    /// unmap runs inside an error scope whose error is expected and dropped.
    fn recycle(&self, usage: &wgpu::BufferUsages, block: &Self::Block) -> bool {
        if !self.keep_mappings
            && usage.intersects(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE)
        {
            let _not_mapped = scoped(self.gpu.device(), || block.unmap());
        }
        true
    }
}

/// A pool of wgpu buffers.
pub type BufferPool = Pool<BufferBackend>;

/// Creates a pool of `gpu`'s buffers.
pub fn buffer_pool(gpu: Arc<Gpu>, config: PoolConfig) -> Result<BufferPool, PoolError> {
    Pool::new(BufferBackend::new(gpu), config)
}

/// Everything that decides whether one texture can stand in for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureKey {
    /// Texel format.
    pub format: wgpu::TextureFormat,
    /// Width, height and depth or layers.
    pub size: wgpu::Extent3d,
    /// Mip levels.
    pub mip_level_count: u32,
    /// Samples per texel.
    pub sample_count: u32,
    /// 1-D, 2-D or 3-D.
    pub dimension: wgpu::TextureDimension,
    /// Usage flags.
    pub usage: wgpu::TextureUsages,
}

impl TextureKey {
    /// The key of a descriptor; its label and view formats do not matter.
    pub fn of(desc: &wgpu::TextureDescriptor<'_>) -> Self {
        Self {
            format: desc.format,
            size: desc.size,
            mip_level_count: desc.mip_level_count,
            sample_count: desc.sample_count,
            dimension: desc.dimension,
            usage: desc.usage,
        }
    }

    /// A descriptor for this key.
    pub fn desc(&self) -> wgpu::TextureDescriptor<'static> {
        wgpu::TextureDescriptor {
            label: Some(POOL_LABEL),
            size: self.size,
            mip_level_count: self.mip_level_count,
            sample_count: self.sample_count,
            dimension: self.dimension,
            format: self.format,
            usage: self.usage,
            view_formats: &[],
        }
    }
}

/// Pools wgpu textures. The key is the whole descriptor, so there are no
/// classes: a texture is only reused for the same descriptor.
pub struct TextureBackend {
    gpu: Arc<Gpu>,
}

impl TextureBackend {
    /// Textures of `gpu`.
    pub fn new(gpu: Arc<Gpu>) -> Self {
        Self { gpu }
    }
}

impl PoolBackend for TextureBackend {
    type Key = TextureKey;
    type Block = Tracked<wgpu::Texture>;
    const CLASSES: bool = false;

    fn check(&self, key: &TextureKey, _capacity: u64) -> Result<(), AllocError> {
        let device = self.gpu.device();
        let desc = key.desc();
        let support = device.format_support(desc.format);
        validate::texture(&desc, device.features(), &device.limits(), &support).map_err(alloc_error)
    }

    fn allocate(&self, key: &TextureKey, _capacity: u64) -> Result<Self::Block, AllocError> {
        self.gpu
            .device()
            .create_texture(&key.desc())
            .map_err(alloc_error)
    }

    fn free(&self, _key: &TextureKey, block: Self::Block) {
        drop(block);
    }
}

/// A pool of wgpu textures.
pub type TexturePool = Pool<TextureBackend>;

/// Creates a pool of `gpu`'s textures.
pub fn texture_pool(gpu: Arc<Gpu>, config: PoolConfig) -> Result<TexturePool, PoolError> {
    Pool::new(TextureBackend::new(gpu), config)
}

impl Pool<TextureBackend> {
    /// Takes a texture matching `desc` (label and view formats aside).
    pub fn take_texture(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
    ) -> Result<Pooled<TextureBackend>, PoolError> {
        if !desc.view_formats.is_empty() {
            let reason = "pooled textures cannot have view formats".to_owned();
            return Err(PoolError::InvalidRequest {
                len: texture_bytes(desc),
                reason,
            });
        }
        self.take(TextureKey::of(desc), texture_bytes(desc).max(1))
    }
}
