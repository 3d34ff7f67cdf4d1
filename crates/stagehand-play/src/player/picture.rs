//! [`PictureReader`]: the player's picture drawn at any size into a target
//! of the reader's own and read back to the CPU, into the same buffer
//! frame after frame: for toolkits that take pixels (an image widget, a
//! window another program made) rather than a wgpu texture.

use super::handle::Player;
use crate::PlayError;
use crate::options::MAX_OUTPUT_SIDE;
use crate::render::readback::Readback;
use crate::render::{cleared, texture_2d};
use stagehand_gpu::Gpu;
use stagehand_gpu::diag::Tracked;
use std::sync::Arc;

/// Draws a [`Player`]'s picture at a size the caller picks (letterboxed:
/// the picture keeps its shape, the rest is black) and hands the caller
/// the pixels. The target and the read-back buffer are made once per
/// size and reused, so a steady size costs no fresh memory a frame.
pub struct PictureReader {
    gpu: Arc<Gpu>,
    format: wgpu::TextureFormat,
    target: Option<(Tracked<wgpu::Texture>, (u32, u32))>,
    readback: Readback,
}

impl std::fmt::Debug for PictureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PictureReader")
            .field("format", &self.format)
            .field("size", &self.target.as_ref().map(|(_, s)| *s))
            .finish_non_exhaustive()
    }
}

impl PictureReader {
    /// A reader whose pixels are `format`: `Rgba8Unorm` (an image
    /// toolkit's RGBA) or `Bgra8Unorm` (an X server's 32-bit pixels).
    pub fn new(gpu: &Arc<Gpu>, format: wgpu::TextureFormat) -> Result<Self, PlayError> {
        if !matches!(
            format,
            wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Bgra8Unorm
        ) {
            return Err(PlayError::InvalidOption(format!(
                "a picture reads back as Rgba8Unorm or Bgra8Unorm, not {format:?}"
            )));
        }
        Ok(Self {
            gpu: Arc::clone(gpu),
            format,
            target: None,
            readback: Readback::default(),
        })
    }

    /// Draws the frame `player` shows at `size` (width, height in pixels)
    /// and hands `with` the rows, 4 bytes a pixel, and the bytes from one
    /// row to the next (at least `4 * width`). `None` where the device
    /// could not map the pixels (a lost device).
    pub fn read<R>(
        &mut self,
        player: &Player,
        size: (u32, u32),
        with: impl FnOnce(&[u8], u32) -> R,
    ) -> Result<Option<R>, PlayError> {
        let target = self.draw(player, size)?;
        self.read_back(&target, with)
    }

    /// Reads back `target` (what [`PictureReader::draw`] returned) and
    /// hands `with` its rows, as [`PictureReader::read`] does.
    pub(crate) fn read_back<R>(
        &mut self,
        target: &wgpu::Texture,
        with: impl FnOnce(&[u8], u32) -> R,
    ) -> Result<Option<R>, PlayError> {
        Ok(self.readback.read(&self.gpu, target, with)?)
    }

    /// Draws the frame `player` shows at `size` into the target, and
    /// returns the target.
    pub(crate) fn draw(
        &mut self,
        player: &Player,
        size: (u32, u32),
    ) -> Result<wgpu::Texture, PlayError> {
        let sides = 1..=MAX_OUTPUT_SIDE;
        if !(sides.contains(&size.0) && sides.contains(&size.1)) {
            return Err(PlayError::InvalidOption(format!(
                "a picture of {}x{}: each side must be 1 to {MAX_OUTPUT_SIDE}",
                size.0, size.1
            )));
        }
        let target = self.target_of(size)?.clone();
        let view = target.create_view(&Default::default());
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default())?;
        draw_letterboxed(player, &mut encoder, &view, self.format, size)?;
        self.gpu.queue().submit([encoder.finish()?])?;
        Ok(target)
    }

    /// The GPU the reader draws on.
    pub(crate) fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The target at `size`, made anew when the size changed.
    fn target_of(&mut self, size: (u32, u32)) -> Result<&wgpu::Texture, PlayError> {
        if self.target.as_ref().is_none_or(|(_, s)| *s != size) {
            self.target = None;
            let texture = self.gpu.device().create_texture(&texture_2d(
                "player picture read back",
                size,
                self.format,
                wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            ))?;
            self.target = Some((texture, size));
        }
        match &self.target {
            Some((texture, _)) => Ok(texture),
            None => unreachable!("made above"),
        }
    }
}

/// Records the frame `player` shows into `view` (of `format`, `size`
/// pixels), letterboxed on black.
pub(crate) fn draw_letterboxed(
    player: &Player,
    encoder: &mut wgpu::CommandEncoder,
    view: &wgpu::TextureView,
    format: wgpu::TextureFormat,
    size: (u32, u32),
) -> Result<(), PlayError> {
    clear(encoder, view);
    if let Some(picture) = player.texture() {
        let viewport = letterbox((picture.width(), picture.height()), size);
        player.draw(encoder, view, format, viewport)?;
    }
    Ok(())
}

/// Records a pass that clears `view` to opaque black.
fn clear(encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView) {
    let _pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("player picture clear"),
        color_attachments: &[Some(cleared(view))],
        ..Default::default()
    });
}

/// The largest viewport (x, y, width, height) of `picture`'s shape that
/// fits `target`, centred.
pub(crate) fn letterbox(picture: (u32, u32), target: (u32, u32)) -> (f32, f32, f32, f32) {
    let (pw, ph) = (picture.0.max(1) as f32, picture.1.max(1) as f32);
    let (tw, th) = (target.0 as f32, target.1 as f32);
    let scale = (tw / pw).min(th / ph);
    let (w, h) = ((pw * scale).round(), (ph * scale).round());
    (((tw - w) / 2.0).floor(), ((th - h) / 2.0).floor(), w, h)
}

#[cfg(test)]
mod tests {
    use super::letterbox;

    #[test]
    fn a_picture_keeps_its_shape_centred_in_any_target() {
        assert_eq!(letterbox((96, 64), (96, 64)), (0.0, 0.0, 96.0, 64.0));
        assert_eq!(letterbox((96, 64), (192, 128)), (0.0, 0.0, 192.0, 128.0));
        // A wider target: bars left and right.
        assert_eq!(letterbox((100, 50), (300, 50)), (100.0, 0.0, 100.0, 50.0));
        // A taller target: bars above and below.
        assert_eq!(letterbox((100, 50), (100, 150)), (0.0, 50.0, 100.0, 50.0));
    }
}
