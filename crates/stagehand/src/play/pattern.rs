//! Synthetic frames: a moving gradient with the frame number drawn as a row
//! of black and white squares across the top eighth of the picture, big
//! enough to read back after scaling to any output size.

/// Bits of the frame number drawn across the top band.
pub const CODE_BITS: u32 = 16;

/// Whether the code band shows bit `bit` of `frame` at column `x` of `width`.
fn code_pixel(frame: u64, x: u32, width: u32) -> Option<bool> {
    let bit = (u64::from(x) * u64::from(CODE_BITS) / u64::from(width.max(1))) as u32;
    Some(frame >> bit & 1 == 1)
}

/// Writes one row of frame `frame` (RGBA8) into `row`.
pub fn row(frame: u64, y: u32, width: u32, height: u32, row: &mut [u8]) {
    let band = y < height / 8;
    for (x, px) in row.chunks_exact_mut(4).take(width as usize).enumerate() {
        let x = x as u32;
        let value = if band {
            if code_pixel(frame, x, width) == Some(true) {
                255
            } else {
                0
            }
        } else {
            ((x + y + frame as u32 * 8) & 0xFF) as u8
        };
        px.copy_from_slice(&[
            value,
            if band { value } else { (y & 0xFF) as u8 },
            if band { value } else { 128 },
            255,
        ]);
    }
}

/// A whole frame, tightly packed RGBA8.
pub fn frame(frame: u64, width: u32, height: u32) -> Vec<u8> {
    let mut out = vec![0u8; (width * height * 4) as usize];
    for (y, r) in out.chunks_exact_mut((width * 4) as usize).enumerate() {
        row(frame, y as u32, width, height, r);
    }
    out
}

/// Reads the frame number back from an RGBA8 picture of the frame at any
/// scale: the centre of each code square in the middle of the band.
pub fn read_frame_number(rgba: &[u8], width: u32, height: u32) -> u64 {
    let y = height / 16;
    (0..CODE_BITS).fold(0, |n, bit| {
        let x = ((2 * bit + 1) * width) / (2 * CODE_BITS);
        let at = ((y * width + x) * 4) as usize;
        let white = rgba.get(at).is_some_and(|&v| v > 127);
        n | (u64::from(white) << bit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_numbers_read_back_at_any_size() {
        for n in [0u64, 1, 7, 12_345, 65_535] {
            assert_eq!(read_frame_number(&frame(n, 64, 48), 64, 48), n);
            assert_eq!(read_frame_number(&frame(n, 333, 100), 333, 100), n);
        }
    }
}
