//! GPU backends. Every call into a graphics API lives under this module.
//!
//! Today: [`wgpu`], over Vulkan, Metal, DX12 and OpenGL, including
//! the software adapters lavapipe and llvmpipe.

pub mod wgpu;
