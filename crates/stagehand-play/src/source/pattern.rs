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

/// The gradient repeats every this many pixels, so a row is a slice of one
/// precomputed template.
const PERIOD: u32 = 256;

/// The RGBA8 of gradient pixel `x` of row `y` of frame `frame`.
fn gradient(x: u32, y: u32, frame: u64) -> [u8; 4] {
    [
        ((u64::from(x) + u64::from(y) + frame * 8) % u64::from(PERIOD)) as u8,
        0x60,
        0xA0,
        255,
    ]
}

/// Writes one row of frame `frame` (RGBA8) into `row`.
pub fn row(frame: u64, y: u32, width: u32, height: u32, row: &mut [u8]) {
    let band = y < height / 8;
    for (x, px) in row.chunks_exact_mut(4).take(width as usize).enumerate() {
        let x = x as u32;
        let value = if band {
            let v = if code_pixel(frame, x, width) == Some(true) {
                255
            } else {
                0
            };
            [v, v, v, 255]
        } else {
            gradient(x, y, frame)
        };
        px.copy_from_slice(&value);
    }
}

/// Paints frames of one size quickly: every gradient row is a slice of a
/// template, and the code band one row repeated, so a frame costs about one
/// memcpy of its size.
#[derive(Clone, Debug)]
pub struct Painter {
    width: u32,
    height: u32,
    /// Gradient pixels 0 .. width + PERIOD of row 0, frame 0.
    template: Vec<u8>,
}

impl Painter {
    /// A painter of `width` x `height` frames.
    pub fn new(width: u32, height: u32) -> Self {
        let template = (0..width + PERIOD)
            .flat_map(|x| gradient(x, 0, 0))
            .collect();
        Self {
            width,
            height,
            template,
        }
    }

    /// Writes frame `frame` into `out`, one row every `pitch` bytes; the same
    /// pixels as [`row`].
    pub fn paint(&self, frame: u64, out: &mut wgpu::WriteOnly<'_, [u8]>, pitch: usize) {
        let row_bytes = self.width as usize * 4;
        let mut band = vec![0u8; row_bytes];
        row(frame, 0, self.width, self.height, &mut band);
        for y in 0..self.height {
            let at = y as usize * pitch;
            let src = if y < self.height / 8 {
                &band[..]
            } else {
                let shift = ((u64::from(y) + frame * 8) % u64::from(PERIOD)) as usize * 4;
                &self.template[shift..shift + row_bytes]
            };
            out.slice(at..at + row_bytes).copy_from_slice(src);
        }
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
    fn the_painter_paints_what_row_describes() {
        let (w, h) = (300, 40);
        let painter = Painter::new(w, h);
        for n in [0u64, 5, 31, 1000] {
            let mut painted = vec![0u8; (w * h * 4) as usize];
            painter.paint(
                n,
                &mut wgpu::WriteOnly::from(&mut painted[..]),
                (w * 4) as usize,
            );
            assert_eq!(painted, frame(n, w, h), "frame {n}");
        }
    }

    #[test]
    fn frame_numbers_read_back_at_any_size() {
        for n in [0u64, 1, 7, 12_345, 65_535] {
            assert_eq!(read_frame_number(&frame(n, 64, 48), 64, 48), n);
            assert_eq!(read_frame_number(&frame(n, 333, 100), 333, 100), n);
        }
    }
}
