//! Y'CbCr frames drawn larger than they are: converted to R'G'B' once, at
//! their own size, into a texture that the picture then samples with one
//! bilinear fetch a pixel.
//!
//! Converting on screen costs three filtered fetches (luma, Cb, Cr) and
//! the matrix for every pixel of the picture; converting first costs that
//! for every pixel of the frame, plus one fetch a picture pixel. A 320x240
//! movie in a 1920x1080 window has 20 times fewer frame pixels than
//! picture pixels, and a software rasteriser spends its time per pixel.
//! The luma is the same either way: bilinear filtering commutes with the
//! matrix, and the half-float texture keeps values outside 0..1 for the
//! clamp at the end. Chroma is filtered twice, to the frame's size and
//! then to the picture's, which softens its sharpest edges a little more
//! than one filter does.
//!
//! The protocol:
//! 1. [`Upscale::new`] with the pipeline that converts into
//!    [`Upscale::format`];
//! 2. per draw, [`Upscale::pays`] says whether to use it for a picture of
//!    that size;
//! 3. [`Upscale::convert`] on the draw's encoder, before its pass (it does
//!    nothing when the texture holds that picture already);
//! 4. [`Upscale::draw`] inside the pass, with the picture's viewport set.

use std::cell::Cell;

use super::{filtered_texture_bind, filtered_texture_layout, linear_sampler, texture_2d};
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::{CommandEncoder, Gpu, Result};

/// Converting first pays when the frame has at most this fraction of the
/// picture's pixels. Converting a pixel costs about 2.4 times what scaling
/// one does (measured on llvmpipe, 320x240 into 1440x1080: 19 ms a frame
/// on screen against 8 ms for the half-float fetch), so the break-even is
/// near 0.58 of the picture's pixels; a half leaves a margin.
const WORTH: (u64, u64) = (1, 2);

/// The converted frame and what draws it.
pub(super) struct Upscale {
    /// The frame converted, at its own size (held for `view`, which
    /// draws into it and is bound by `bind`).
    _texture: Tracked<wgpu::Texture>,
    view: Tracked<wgpu::TextureView>,
    /// Draws a frame's planes into `texture`.
    convert: Tracked<wgpu::RenderPipeline>,
    /// Draws `texture` into the renderer's targets.
    scale: Tracked<wgpu::RenderPipeline>,
    bind: Tracked<wgpu::BindGroup>,
    /// The picture `texture` holds: the id [`Upscale::convert`] was given
    /// last; `None` before the first.
    holds: Cell<Option<u64>>,
}

impl Upscale {
    /// The format to convert into: half floats where the device renders
    /// and filters them, so values outside 0..1 (below black, beyond a
    /// primary) and deep sources' precision reach the filter as they are,
    /// and are clamped after it, as converting on screen does; else the
    /// target's own format, `target`.
    pub(super) fn format(gpu: &Gpu, target: wgpu::TextureFormat) -> wgpu::TextureFormat {
        let half = wgpu::TextureFormat::Rgba16Float;
        let features = gpu.adapter().get_texture_format_features(half);
        let usable = features.allowed_usages.contains(
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
        ) && features
            .flags
            .contains(wgpu::TextureFormatFeatureFlags::FILTERABLE);
        if usable { half } else { target }
    }

    /// An upscaler for frames of `frame_size`, whose conversion `convert`
    /// draws (into [`Upscale::format`]'s format, `format`), into targets
    /// of `target`.
    pub(super) fn new(
        gpu: &Gpu,
        frame_size: (u32, u32),
        format: wgpu::TextureFormat,
        convert: Tracked<wgpu::RenderPipeline>,
        target: wgpu::TextureFormat,
    ) -> Result<Self> {
        let device = gpu.device();
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
        let texture =
            device.create_texture(&texture_2d("play converted", frame_size, format, usage))?;
        let view = device.create_texture_view(&texture, &Default::default())?;
        let layout = filtered_texture_layout(gpu, "play converted")?;
        let sampler = linear_sampler(gpu, "play converted")?;
        let bind = filtered_texture_bind(gpu, "play converted", &layout, &view, &sampler)?;
        let scale = Self::scale_pipeline(gpu, &layout, target)?;
        Ok(Self {
            _texture: texture,
            view,
            convert,
            scale,
            bind,
            holds: Cell::new(None),
        })
    }

    /// The pipeline that draws the converted frame into targets of
    /// `target`.
    fn scale_pipeline(
        gpu: &Gpu,
        layout: &wgpu::BindGroupLayout,
        target: wgpu::TextureFormat,
    ) -> Result<Tracked<wgpu::RenderPipeline>> {
        super::full_screen_program(
            gpu,
            "play scale",
            include_str!("scale.wgsl"),
            Some(layout),
            target,
        )
    }

    /// Whether converting first costs less than converting on screen, for
    /// a frame of `frame` pixels drawn as a picture of `picture` pixels.
    pub(super) fn pays(frame: (u32, u32), picture: (u32, u32)) -> bool {
        let area = |(w, h): (u32, u32)| u64::from(w) * u64::from(h);
        area(frame) * WORTH.1 <= area(picture) * WORTH.0
    }

    /// Records the conversion of the frame `bind` shows (picture `id`, a
    /// number naming its contents) into the texture, unless it holds that
    /// picture already.
    pub(super) fn convert(&self, encoder: &mut CommandEncoder, bind: &wgpu::BindGroup, id: u64) {
        if self.holds.get() == Some(id) {
            return;
        }
        self.holds.set(Some(id));
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("play convert"),
            // Every texel is drawn over.
            color_attachments: &[Some(super::drawn_over(&self.view))],
            ..Default::default()
        });
        pass.set_pipeline(&self.convert);
        pass.set_bind_group(0, Some(bind), &[]);
        pass.draw(0..3, 0..1);
    }

    /// Records the converted frame's draw into `pass`, inside the viewport
    /// the caller set for the picture.
    pub(super) fn draw(&self, pass: &mut wgpu::RenderPass<'_>) {
        pass.set_pipeline(&self.scale);
        pass.set_bind_group(0, Some(&*self.bind), &[]);
        pass.draw(0..3, 0..1);
    }
}

#[cfg(test)]
mod tests {
    use super::Upscale;

    #[test]
    fn converting_first_pays_only_for_pictures_well_larger_than_the_frame() {
        assert!(Upscale::pays((320, 240), (1440, 1080)));
        assert!(!Upscale::pays((320, 240), (320, 240)), "drawn at its size");
        assert!(!Upscale::pays((3840, 2160), (1920, 1080)), "made smaller");
        // Up to half the picture's pixels.
        assert!(Upscale::pays((150, 100), (300, 100)));
        assert!(!Upscale::pays((151, 100), (300, 100)));
    }
}
