//! Stream frames into a texture from worker threads, and reuse buffers from
//! a pool.
//!
//! `cargo run -p stagehand --example stream`

use stagehand_gpu::backend::wgpu::buffer_pool;
use stagehand_gpu::pool::PoolConfig;
use stagehand_gpu::upload::{EngineConfig, StagingPolicy, UploadEngine};
use std::sync::Arc;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = Arc::new(stagehand_gpu::Gpu::open_default()?);
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default())?;
    let desc = wgpu::TextureDescriptor {
        label: Some("video"),
        size: wgpu::Extent3d {
            width: 1280,
            height: 720,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    };
    let video = engine.create_texture(&desc, StagingPolicy::Ring(2))?;
    for frame in 0..30u8 {
        // The engine keeps its own reference to the bytes: reuse yours at once.
        let upload = video.upload_frame(vec![frame; 1280 * 720 * 4])?;
        upload.on_complete(move |outcome| {
            if let Some(latency) = outcome.times.latency() {
                println!("frame {frame}: {:?} after {latency:?}", outcome.status);
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500));

    let pool = buffer_pool(gpu.clone(), PoolConfig::named("layers"))?;
    for batch in 0..3 {
        let activations: Vec<_> = (0..8)
            .map(|i| pool.take(wgpu::BufferUsages::STORAGE, 1000 + i * 3000))
            .collect::<Result<_, _>>()?;
        println!(
            "batch {batch}: {} buffers, pool {:?}",
            activations.len(),
            pool.stats().held
        );
        pool.end_batch();
    }
    let mut report = gpu.report();
    report.add(&pool.section(true)).add(&engine.section());
    report.print()?;
    Ok(())
}
