//! GPU backends. Every call into a graphics API lives under this module.
//!
//! - [`wgpu`]: Vulkan, Metal, DX12 and OpenGL, including the software
//!   adapters lavapipe and llvmpipe.
//! - [`fault`]: a pool backend with faults on demand, for tests.

pub mod fault;
pub mod wgpu;
