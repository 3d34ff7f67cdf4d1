//! The wgpu backend: opening a GPU, creating counted objects, pools and
//! uploads over wgpu, and wgpu's side of the diagnostics report.

mod context;
mod device;
mod encoder;
mod host_import;
pub mod names;
pub mod pool;
mod queue;
pub mod report;
pub mod texture_size;
pub mod transfer;
pub(crate) mod upload;
pub mod validate;

pub use context::{Gpu, GpuOptions, parse_backends};
pub use device::Device;
pub(crate) use device::scoped_call;
pub use encoder::{CommandEncoder, RenderBundleEncoder};
pub use host_import::HostRegion;
pub use pool::{
    BufferBackend, BufferPool, TextureBackend, TextureKey, TexturePool, buffer_pool, texture_pool,
};
pub use queue::Queue;
pub use transfer::{WgpuInFlight, WgpuTarget, WgpuTransfer};

impl Gpu {
    /// The full diagnostics report of this GPU.
    pub fn report(&self) -> crate::diag::Report {
        report::report(self)
    }
}
