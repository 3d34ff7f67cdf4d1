//! The render pass's Y'CbCr path: the parameter block `yuv.wgsl` reads,
//! from a picture's [`Yuv`] format.

use crate::yuv::Yuv;

/// Bytes of the parameter block: eight `vec4<f32>`.
pub(super) const PARAMS_BYTES: u64 = 8 * 16;

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

/// The parameter block for a `width` x `height` picture of `yuv` in a
/// texture of `format`.
pub(super) fn params(
    yuv: &Yuv,
    width: u32,
    height: u32,
    format: wgpu::TextureFormat,
) -> [u8; PARAMS_BYTES as usize] {
    let packing = yuv.packing(width, height);
    let unit = match format {
        wgpu::TextureFormat::R8Unorm => 255.0,
        wgpu::TextureFormat::R16Unorm => 65535.0,
        _ => 1.0,
    };
    let [_, cb, cr] = packing.planes;
    let rows = yuv.rows();
    let vectors: [[f64; 4]; 8] = [
        [
            f64::from(width),
            f64::from(height),
            f64::from(cb.width),
            f64::from(cb.height),
        ],
        [
            f64::from(cb.x),
            f64::from(cb.y),
            f64::from(cr.x),
            f64::from(cr.y),
        ],
        yuv.chroma_position(),
        yuv.normalisation(),
        [rows[0][0], rows[0][1], rows[0][2], 0.0],
        [rows[1][0], rows[1][1], rows[1][2], 0.0],
        [rows[2][0], rows[2][1], rows[2][2], 0.0],
        [
            f64::from(packing.size.0),
            f64::from(packing.size.1),
            unit,
            0.0,
        ],
    ];
    let mut out = [0u8; PARAMS_BYTES as usize];
    for (chunk, v) in out.chunks_exact_mut(4).zip(vectors.iter().flatten()) {
        chunk.copy_from_slice(&(*v as f32).to_le_bytes());
    }
    out
}
