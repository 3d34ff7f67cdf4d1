//! stagehand: GPU memory that doesn't leak, uploads that don't stall the
//! frame, and a clear view of everything that lives on the device.
//!
//! Open a GPU, create objects through its [`Device`], and every object is
//! counted by kind and bytes until it is dropped:
//!
//! ```no_run
//! # fn main() -> stagehand_gpu::Result<()> {
//! let gpu = stagehand_gpu::Gpu::open_default()?;
//! let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
//!     label: Some("vertices"),
//!     size: 4096,
//!     usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
//!     mapped_at_creation: false,
//! })?;
//! print!("{}", gpu.report());
//! drop(buffer);
//! # Ok(())
//! # }
//! ```
//!
//! The parts: [`backend`] opens GPUs and creates counted objects; [`pool`]
//! caches device memory; [`upload`] streams textures and buffers from worker
//! threads; [`diag`] counts, reports and checks for leaks.

pub mod backend;
pub mod diag;
mod error;
pub mod pool;
mod sync;
pub mod upload;

pub use backend::wgpu::{
    CommandEncoder, Device, Gpu, GpuOptions, HostRegion, Queue, RenderBundleEncoder,
};
pub use diag::{ObjectKind, Report, Tracked};
pub use error::{Error, Label, Result};
pub use wgpu;
