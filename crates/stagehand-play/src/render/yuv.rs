//! The render pass's Y'CbCr path: the pipeline constants `yuv.wgsl` reads,
//! from a picture's [`Yuv`] format.

use crate::yuv::{Packing, Yuv};

/// The shader for planes in a texture of `format`: the sampler filters a
/// normalised one; an integer one is read texel by texel.
pub(super) fn shader(format: wgpu::TextureFormat) -> &'static str {
    if is_integer(format) {
        concat!(
            include_str!("fullscreen.wgsl"),
            include_str!("yuv.wgsl"),
            include_str!("yuv_integer.wgsl")
        )
    } else {
        concat!(
            include_str!("fullscreen.wgsl"),
            include_str!("yuv.wgsl"),
            include_str!("yuv_filtered.wgsl")
        )
    }
}

/// Whether the planes are in an integer texture (no filtering, no sampler).
pub(super) fn is_integer(format: wgpu::TextureFormat) -> bool {
    matches!(
        format,
        wgpu::TextureFormat::R8Uint | wgpu::TextureFormat::R16Uint
    )
}

/// The shader's pipeline constants for a `width` x `height` picture of
/// `yuv` in a texture of `format` (`yuv.wgsl` says what each one is).
pub(super) fn constants(
    yuv: &Yuv,
    width: u32,
    height: u32,
    format: wgpu::TextureFormat,
) -> Vec<(&'static str, f64)> {
    let packing = yuv.packing(width, height);
    let unit = match format {
        wgpu::TextureFormat::R8Unorm => 255.0,
        wgpu::TextureFormat::R16Unorm => 65535.0,
        _ => 1.0,
    };
    let mut constants = plane_constants(&packing, width, height).to_vec();
    constants.extend(siting_constants(yuv));
    constants.extend(matrix_constants(yuv));
    constants.extend([
        ("TEXTURE_WIDTH", f64::from(packing.size.0)),
        ("TEXTURE_HEIGHT", f64::from(packing.size.1)),
        ("UNIT", unit),
    ]);
    constants
}

/// The constants that place the planes: the luma's size (`width` x
/// `height`), the chroma planes' size, and where each chroma plane lies
/// in the texture.
fn plane_constants(packing: &Packing, width: u32, height: u32) -> [(&'static str, f64); 8] {
    let [_, cb, cr] = packing.planes;
    [
        ("LUMA_WIDTH", f64::from(width)),
        ("LUMA_HEIGHT", f64::from(height)),
        ("CHROMA_WIDTH", f64::from(cb.width)),
        ("CHROMA_HEIGHT", f64::from(cb.height)),
        ("CB_X", f64::from(cb.x)),
        ("CB_Y", f64::from(cb.y)),
        ("CR_X", f64::from(cr.x)),
        ("CR_Y", f64::from(cr.y)),
    ]
}

/// The constants that map a luma position to its chroma sample.
fn siting_constants(yuv: &Yuv) -> [(&'static str, f64); 4] {
    let [scale_x, scale_y, shift_x, shift_y] = yuv.chroma_position();
    [
        ("CHROMA_SCALE_X", scale_x),
        ("CHROMA_SCALE_Y", scale_y),
        ("CHROMA_SHIFT_X", shift_x),
        ("CHROMA_SHIFT_Y", shift_y),
    ]
}

/// The constants that turn code values into R'G'B': the range's offsets
/// and scales, then the matrix's rows.
fn matrix_constants(yuv: &Yuv) -> [(&'static str, f64); 13] {
    let [luma_offset, luma_scale, chroma_offset, chroma_scale] = yuv.normalisation();
    let [r, g, b] = yuv.rows();
    [
        ("LUMA_OFFSET", luma_offset),
        ("LUMA_SCALE", luma_scale),
        ("CHROMA_OFFSET", chroma_offset),
        ("CHROMA_SCALE", chroma_scale),
        ("R_Y", r[0]),
        ("R_CB", r[1]),
        ("R_CR", r[2]),
        ("G_Y", g[0]),
        ("G_CB", g[1]),
        ("G_CR", g[2]),
        ("B_Y", b[0]),
        ("B_CB", b[1]),
        ("B_CR", b[2]),
    ]
}
