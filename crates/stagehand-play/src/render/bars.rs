//! The letterbox's bars, drawn instead of clearing the target.
//!
//! The picture draws over its own viewport, the overlay over the strip and
//! the text box; only the bars around the picture are left. Drawing black
//! there, and starting the pass with the target's contents undefined,
//! writes every pixel once. A clear writes each one twice: on a software
//! rasteriser, a fill of the whole target a frame (about 11% of the
//! player's CPU time in a 1920x1080 window on llvmpipe, measured), for
//! pixels the picture then draws over.

use stagehand_gpu::diag::Tracked;
use stagehand_gpu::{Gpu, Result};

/// Draws the bars into targets of one format.
pub(crate) struct Bars {
    pipeline: Tracked<wgpu::RenderPipeline>,
}

impl Bars {
    /// Bars for targets of `format`.
    pub(crate) fn new(gpu: &Gpu, format: wgpu::TextureFormat) -> Result<Self> {
        let pipeline =
            super::full_screen_program(gpu, "play bars", include_str!("bars.wgsl"), None, format)?;
        Ok(Self { pipeline })
    }

    /// Draws black over a target of `size` outside `picture` (x, y,
    /// width, height in whole pixels); over all of it where there is no
    /// picture.
    pub(crate) fn draw(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        size: (u32, u32),
        picture: Option<(f32, f32, f32, f32)>,
    ) {
        let rects = match picture {
            Some(p) => around(size, p),
            None => [Some((0, 0, size.0, size.1)), None, None, None],
        };
        pass.set_pipeline(&self.pipeline);
        for (x, y, w, h) in rects.into_iter().flatten() {
            pass.set_viewport(x as f32, y as f32, w as f32, h as f32, 0.0, 1.0);
            pass.draw(0..3, 0..1);
        }
    }
}

/// The parts of a target of `size` outside `picture` (x, y, width,
/// height, whole pixels): above it and below it across the whole width,
/// left and right of it beside it; `None` for each that is empty.
fn around(size: (u32, u32), picture: (f32, f32, f32, f32)) -> [Option<(u32, u32, u32, u32)>; 4] {
    let (w, h) = size;
    let left = (picture.0.max(0.0) as u32).min(w);
    let top = (picture.1.max(0.0) as u32).min(h);
    let right = ((picture.0 + picture.2).max(0.0) as u32).clamp(left, w);
    let bottom = ((picture.1 + picture.3).max(0.0) as u32).clamp(top, h);
    let rect = |x: u32, y: u32, rw: u32, rh: u32| (rw > 0 && rh > 0).then_some((x, y, rw, rh));
    [
        rect(0, 0, w, top),
        rect(0, bottom, w, h - bottom),
        rect(0, top, left, bottom - top),
        rect(right, top, w - right, bottom - top),
    ]
}

#[cfg(test)]
mod tests {
    use super::around;

    /// Every pixel of a target of `size` is in exactly one of `picture`
    /// and the rectangles around it.
    fn covers_once(size: (u32, u32), picture: (f32, f32, f32, f32)) {
        let rects = around(size, picture);
        let p = (
            picture.0 as u32,
            picture.1 as u32,
            picture.2 as u32,
            picture.3 as u32,
        );
        let inside = |(x, y, w, h): (u32, u32, u32, u32), px: u32, py: u32| {
            px >= x && px < x + w && py >= y && py < y + h
        };
        for py in 0..size.1 {
            for px in 0..size.0 {
                let n = rects
                    .iter()
                    .flatten()
                    .filter(|r| inside(**r, px, py))
                    .count()
                    + usize::from(inside(p, px, py));
                assert_eq!(n, 1, "pixel ({px}, {py}) of {size:?} around {picture:?}");
            }
        }
    }

    #[test]
    fn the_bars_and_the_picture_cover_every_pixel_once() {
        // Bars above and below, beside, none, and a picture flush with a
        // corner.
        covers_once((64, 48), (0.0, 6.0, 64.0, 36.0));
        covers_once((64, 48), (8.0, 0.0, 48.0, 48.0));
        covers_once((64, 48), (0.0, 0.0, 64.0, 48.0));
        covers_once((64, 48), (0.0, 0.0, 40.0, 30.0));
        covers_once((64, 48), (5.0, 7.0, 11.0, 13.0));
    }

    #[test]
    fn no_bar_where_the_picture_fills_the_target() {
        assert_eq!(around((64, 48), (0.0, 0.0, 64.0, 48.0)), [None; 4]);
    }
}
