//! The render pass's Y'CbCr path: the parameter block `yuv.wgsl` reads,
//! from a picture's [`Yuv`] format.

use crate::yuv::Yuv;

/// Bytes of the parameter block: seven `vec4<f32>`.
pub(super) const PARAMS_BYTES: u64 = 7 * 16;

/// The parameter block for a `width` x `height` picture of `yuv`.
pub(super) fn params(yuv: &Yuv, width: u32, height: u32) -> [u8; PARAMS_BYTES as usize] {
    let packing = yuv.packing(width, height);
    let [_, cb, cr] = packing.planes;
    let rows = yuv.rows();
    let vectors: [[f64; 4]; 7] = [
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
    ];
    let mut out = [0u8; PARAMS_BYTES as usize];
    for (chunk, v) in out.chunks_exact_mut(4).zip(vectors.iter().flatten()) {
        chunk.copy_from_slice(&(*v as f32).to_le_bytes());
    }
    out
}
