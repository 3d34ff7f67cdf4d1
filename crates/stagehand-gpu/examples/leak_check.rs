//! Create a few objects, print the report, and show what a leak check says
//! about a texture that was kept alive.
//!
//! `cargo run -p stagehand --example leak_check`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = stagehand_gpu::Gpu::open_default()?;
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("vertices"),
        size: 64 << 10,
        usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })?;
    let mut kept = Vec::new();
    let leaks = stagehand_gpu::diag::check_leaks(gpu.tracker(), || {
        let texture = gpu.device().create_texture(&wgpu::TextureDescriptor {
            label: Some("forgotten"),
            size: wgpu::Extent3d {
                width: 256,
                height: 256,
                depth_or_array_layers: 1,
            },
            mip_level_count: 9,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Bgra8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        kept.push(texture);
    });
    if let Err(leaks) = leaks {
        println!("{leaks}\n");
    }
    gpu.report().print()?;
    drop((buffer, kept));
    Ok(())
}
