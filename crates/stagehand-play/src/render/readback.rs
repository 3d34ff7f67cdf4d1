//! Reading a texture back to the CPU: for `--save-frame` and for tests
//! that compare what landed with what was decoded.

use stagehand_gpu::{Gpu, Result};

/// The texels of mip 0 of `texture`, tightly packed, `texel_bytes` each.
pub fn read_texture(gpu: &Gpu, texture: &wgpu::Texture, texel_bytes: u32) -> Result<Vec<u8>> {
    let (w, h) = (texture.width(), texture.height());
    let row = w * texel_bytes;
    let pitch = row.next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("play readback"),
        size: u64::from(pitch) * u64::from(h),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })?;
    let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    gpu.queue().submit([encoder.finish()?])?;
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
    let mapped = rx.recv().ok().and_then(|r| r.ok()).is_some();
    let view = buffer.slice(..).get_mapped_range();
    let mut out = Vec::with_capacity(row as usize * h as usize);
    if let (true, Ok(view)) = (mapped, view) {
        for y in 0..h as usize {
            let start = y * pitch as usize;
            out.extend_from_slice(&view[start..start + row as usize]);
        }
    }
    Ok(out)
}
