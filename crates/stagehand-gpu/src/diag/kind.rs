//! The kinds of GPU object stagehand counts.

use serde::Serialize;
use std::fmt;

/// A kind of GPU object, as counted by the [`Tracker`](super::Tracker).
///
/// These are every object type wgpu's own global report lists, plus the
/// encoders and passes that it does not, then the CUDA backend's objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum ObjectKind {
    /// `wgpu::Adapter`.
    Adapter,
    /// `wgpu::Device`.
    Device,
    /// `wgpu::Queue`.
    Queue,
    /// `wgpu::Buffer`; bytes are its size.
    Buffer,
    /// `wgpu::Texture`; bytes are its exact size over all mips, layers and samples.
    Texture,
    /// `wgpu::TextureView`.
    TextureView,
    /// `wgpu::Sampler`.
    Sampler,
    /// `wgpu::BindGroupLayout`.
    BindGroupLayout,
    /// `wgpu::BindGroup`.
    BindGroup,
    /// `wgpu::PipelineLayout`.
    PipelineLayout,
    /// `wgpu::ShaderModule`.
    ShaderModule,
    /// `wgpu::RenderPipeline`.
    RenderPipeline,
    /// `wgpu::ComputePipeline`.
    ComputePipeline,
    /// `wgpu::CommandEncoder`.
    CommandEncoder,
    /// `wgpu::CommandBuffer`, until it is submitted or dropped.
    CommandBuffer,
    /// `wgpu::RenderPass`.
    RenderPassEncoder,
    /// `wgpu::ComputePass`.
    ComputePassEncoder,
    /// `wgpu::RenderBundleEncoder`.
    RenderBundleEncoder,
    /// `wgpu::RenderBundle`.
    RenderBundle,
    /// `wgpu::QuerySet`; bytes are 8 per query (one 64-bit result each).
    QuerySet,
    /// A CUDA device's primary context, held by an open `Cuda`.
    CudaContext,
    /// A CUDA stream.
    CudaStream,
    /// A CUDA event.
    CudaEvent,
    /// A `cuMemAlloc` allocation; bytes are its length.
    CudaDeviceMemory,
    /// A `cuMemHostAlloc` (page-locked host) allocation; bytes are its length.
    CudaPinnedMemory,
}

impl ObjectKind {
    /// Every kind, in report order.
    pub const ALL: [ObjectKind; 25] = [
        Self::Adapter,
        Self::Device,
        Self::Queue,
        Self::Buffer,
        Self::Texture,
        Self::TextureView,
        Self::Sampler,
        Self::BindGroupLayout,
        Self::BindGroup,
        Self::PipelineLayout,
        Self::ShaderModule,
        Self::RenderPipeline,
        Self::ComputePipeline,
        Self::CommandEncoder,
        Self::CommandBuffer,
        Self::RenderPassEncoder,
        Self::ComputePassEncoder,
        Self::RenderBundleEncoder,
        Self::RenderBundle,
        Self::QuerySet,
        Self::CudaContext,
        Self::CudaStream,
        Self::CudaEvent,
        Self::CudaDeviceMemory,
        Self::CudaPinnedMemory,
    ];

    /// How many kinds there are.
    pub const COUNT: usize = Self::ALL.len();

    /// Position of this kind in [`ObjectKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kind's name, as the report prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Adapter => "Adapter",
            Self::Device => "Device",
            Self::Queue => "Queue",
            Self::Buffer => "Buffer",
            Self::Texture => "Texture",
            Self::TextureView => "TextureView",
            Self::Sampler => "Sampler",
            Self::BindGroupLayout => "BindGroupLayout",
            Self::BindGroup => "BindGroup",
            Self::PipelineLayout => "PipelineLayout",
            Self::ShaderModule => "ShaderModule",
            Self::RenderPipeline => "RenderPipeline",
            Self::ComputePipeline => "ComputePipeline",
            Self::CommandEncoder => "CommandEncoder",
            Self::CommandBuffer => "CommandBuffer",
            Self::RenderPassEncoder => "RenderPassEncoder",
            Self::ComputePassEncoder => "ComputePassEncoder",
            Self::RenderBundleEncoder => "RenderBundleEncoder",
            Self::RenderBundle => "RenderBundle",
            Self::QuerySet => "QuerySet",
            Self::CudaContext => "CudaContext",
            Self::CudaStream => "CudaStream",
            Self::CudaEvent => "CudaEvent",
            Self::CudaDeviceMemory => "CudaDeviceMemory",
            Self::CudaPinnedMemory => "CudaPinnedMemory",
        }
    }

    /// Whether objects of this kind own resource memory that the tracker sizes.
    pub const fn has_bytes(self) -> bool {
        matches!(
            self,
            Self::Buffer
                | Self::Texture
                | Self::QuerySet
                | Self::CudaDeviceMemory
                | Self::CudaPinnedMemory
        )
    }

    /// Whether this is one of the CUDA backend's kinds.
    pub const fn is_cuda(self) -> bool {
        matches!(
            self,
            Self::CudaContext
                | Self::CudaStream
                | Self::CudaEvent
                | Self::CudaDeviceMemory
                | Self::CudaPinnedMemory
        )
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::ObjectKind;

    #[test]
    fn all_lists_each_kind_at_its_index() {
        for (i, kind) in ObjectKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind}");
        }
    }
}
