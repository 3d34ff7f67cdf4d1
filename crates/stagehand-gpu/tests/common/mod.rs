//! Shared by the integration tests: opening the GPU they run on.
//!
//! Tests open the adapter `WGPU_BACKEND` names (CI runs the suite once with
//! `vulkan`, once with `gl`). A machine with no adapter at all fails the test
//! with stagehand's own error, which says what to install.

#![allow(dead_code)] // each test binary uses a different part of this module

use stagehand_gpu::{Gpu, GpuOptions};

/// Opens the GPU the tests run on, or fails the test with the reason.
pub fn gpu() -> Gpu {
    match Gpu::open(&GpuOptions::default()) {
        Ok(gpu) => gpu,
        Err(e) => panic!("tests need a GPU adapter: {e}"),
    }
}

/// A WGSL shader with a full-screen triangle, a solid-colour fragment stage
/// and an empty compute entry point.
pub const SHADER: &str = r#"
@vertex
fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let x = f32(i32(i & 1u) * 4 - 1);
    let y = f32(i32(i >> 1u) * 4 - 1);
    return vec4<f32>(x, y, 0.0, 1.0);
}

@fragment
fn fs() -> @location(0) vec4<f32> {
    return vec4<f32>(1.0, 0.5, 0.25, 1.0);
}

@compute @workgroup_size(1)
fn cs() {}
"#;

/// A 2-D RGBA8 texture descriptor.
pub fn texture_desc(
    label: &'static str,
    width: u32,
    height: u32,
    mips: u32,
) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: mips,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::RENDER_ATTACHMENT,
        view_formats: &[],
    }
}

/// A buffer descriptor of `size` bytes.
pub fn buffer_desc(label: &'static str, size: u64) -> wgpu::BufferDescriptor<'static> {
    wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    }
}

/// The process's resident memory, bytes (Linux), or `None` elsewhere.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Makes the C allocator map every block of 4 MiB or more on its own and
/// unmap it when freed. A software adapter mallocs each texture's storage
/// (33 MB for a 4K frame); with glibc's default, the first such free raises
/// its threshold for mapping, later frames come from per-thread heaps, and
/// resident memory steps up by a frame or two whenever another heap keeps
/// one: noise on top of what stagehand and the driver hold, which is what
/// leak tests measure.
pub fn pin_the_c_allocators_mapping_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets a malloc parameter; it is safe to call at
    // any time, from any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}
