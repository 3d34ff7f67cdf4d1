//! GPU backends. Every call into a graphics API lives under this module.
//!
//! - [`wgpu`]: Vulkan, Metal, DX12 and OpenGL, including the software
//!   adapters lavapipe and llvmpipe.
//! - `cuda` (feature `cuda`): NVIDIA GPUs through the CUDA driver,
//!   loaded at run time.
//! - [`fault`]: a pool backend with faults on demand, for tests.
//! - [`host`]: host memory, for CPU buffers pooled like device memory.

#[cfg(feature = "cuda")]
#[allow(unsafe_code)] // the driver API is C; every call is wrapped here
pub mod cuda;
pub mod fault;
pub mod host;
pub mod wgpu;
