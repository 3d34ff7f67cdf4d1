//! Reading a texture back to the CPU: for `PlayOptions::save_ticks`, for tests that
//! compare what landed with what was decoded, and for windows presented
//! by copying their pixels to the display server ([`Readback`]).

use stagehand_gpu::diag::Tracked;
use stagehand_gpu::{Gpu, Result};

/// The texels of mip 0 of `texture`, tightly packed, `texel_bytes` each.
pub fn read_texture(gpu: &Gpu, texture: &wgpu::Texture, texel_bytes: u32) -> Result<Vec<u8>> {
    let (w, h) = (texture.width(), texture.height());
    let row = w * texel_bytes;
    let pitch = pitch(w, texel_bytes);
    let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("play readback"),
        size: u64::from(pitch) * u64::from(h),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })?;
    copy(gpu, texture, &buffer, pitch)?;
    let mut out = Vec::with_capacity(row as usize * h as usize);
    if let Some(view) = map(gpu, &buffer) {
        for y in 0..h as usize {
            let start = y * pitch as usize;
            out.extend_from_slice(&view[start..start + row as usize]);
        }
    }
    Ok(out)
}

/// A buffer that a target of 4-byte texels is read back into frame after
/// frame (a window presented by copying its pixels to the display
/// server): made once per size, never reallocated, so no frame pays for
/// fresh pages.
#[derive(Default)]
pub(crate) struct Readback {
    /// The buffer, and the texture size it was made for; `None` before
    /// the first read.
    buffer: Option<(Tracked<wgpu::Buffer>, (u32, u32))>,
}

impl Readback {
    /// Copies `texture` (4 bytes a texel) into the buffer, waits for the
    /// copy, and hands `with` the mapped rows and their pitch in bytes.
    pub(crate) fn read<R>(
        &mut self,
        gpu: &Gpu,
        texture: &wgpu::Texture,
        with: impl FnOnce(&[u8], u32) -> R,
    ) -> Result<Option<R>> {
        let size = (texture.width(), texture.height());
        let pitch = pitch(size.0, 4);
        if self.buffer.as_ref().is_none_or(|(_, s)| *s != size) {
            let buffer = gpu.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("play present"),
                size: u64::from(pitch) * u64::from(size.1),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })?;
            self.buffer = Some((buffer, size));
        }
        let Some((buffer, _)) = &self.buffer else {
            unreachable!("made above");
        };
        copy(gpu, texture, buffer, pitch)?;
        let Some(view) = map(gpu, buffer) else {
            return Ok(None);
        };
        let out = with(&view, pitch);
        drop(view);
        buffer.unmap();
        Ok(Some(out))
    }
}

/// Bytes a row of `width` texels of `texel_bytes` takes in a buffer copy.
fn pitch(width: u32, texel_bytes: u32) -> u32 {
    (width * texel_bytes).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
}

/// Records and submits the copy of mip 0 of `texture` into `buffer`,
/// rows `pitch` bytes apart; the submission, to wait for.
pub(crate) fn copy(
    gpu: &Gpu,
    texture: &wgpu::Texture,
    buffer: &wgpu::Buffer,
    pitch: u32,
) -> Result<wgpu::SubmissionIndex> {
    let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(texture.height()),
            },
        },
        texture.size(),
    );
    gpu.queue().submit([encoder.finish()?])
}

/// Maps all of `buffer` for reading, waiting for the device; `None` if
/// the mapping failed (a lost device).
fn map(gpu: &Gpu, buffer: &wgpu::Buffer) -> Option<wgpu::BufferView> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
    rx.recv().ok()?.ok()?;
    buffer.slice(..).get_mapped_range().ok()
}
