//! Y'CbCr pictures as decoders give them, and their conversion to RGB.
//!
//! A movie frame stays in its decoder's planes: one luma plane and two
//! chroma planes, subsampled 4:2:0, 4:2:2 or not at all, 8 to 16 bits a
//! sample. The player packs the three planes into one single-channel
//! integer texture (no conversion, no padding beyond one column for odd
//! widths) and the render pass converts to RGB as it draws
//! (`render/yuv.wgsl`): the matrix (BT.601, BT.709, BT.2020) and range
//! (limited or full) come from the stream's tags, the chroma siting from
//! its chroma location. A 4K 4:2:0 8-bit frame is then 12.4 MB to upload,
//! against 33.2 MB as RGBA.
//!
//! The packing, per subsampling (Y luma, U and V chroma):
//!
//! ```text
//! 4:2:0          4:2:2          4:4:4
//! +--------+     +--------+     +--------+
//! |   Y    |     |   Y    |     |   Y    |
//! |        |     |        |     +--------+
//! +----+---+     +----+---+     |   U    |
//! | U  | V |     | U  | V |     +--------+
//! +----+---+     |    |   |     |   V    |
//!                +----+---+     +--------+
//! ```
//!
//! [`Yuv::to_rgb`] is the same arithmetic on the CPU, for tests.

use serde::Serialize;

/// How chroma is subsampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Chroma {
    /// Half width, half height.
    #[serde(rename = "4:2:0")]
    S420,
    /// Half width, full height.
    #[serde(rename = "4:2:2")]
    S422,
    /// Full resolution.
    #[serde(rename = "4:4:4")]
    S444,
}

impl Chroma {
    /// Luma samples per chroma sample, across and down.
    pub fn factors(self) -> (u32, u32) {
        match self {
            Self::S420 => (2, 2),
            Self::S422 => (2, 1),
            Self::S444 => (1, 1),
        }
    }
}

/// The Y'CbCr matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Matrix {
    /// ITU-R BT.601 (standard definition).
    Bt601,
    /// ITU-R BT.709 (high definition).
    Bt709,
    /// ITU-R BT.2020, non-constant luminance (UHD, HDR).
    Bt2020,
}

impl Matrix {
    /// The luma weights of red and blue, (Kr, Kb).
    pub fn weights(self) -> (f64, f64) {
        match self {
            Self::Bt601 => (0.299, 0.114),
            Self::Bt709 => (0.2126, 0.0722),
            Self::Bt2020 => (0.2627, 0.0593),
        }
    }

    /// The matrix for a stream whose tags say nothing: BT.709 from HD up,
    /// BT.601 below (what players and FFmpeg's own tools assume).
    pub fn untagged(width: u32, height: u32) -> Self {
        if width >= 1280 || height > 576 {
            Self::Bt709
        } else {
            Self::Bt601
        }
    }
}

/// The range of code values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Range {
    /// Video ("TV", "MPEG") range: luma 16–235, chroma 16–240 at 8 bits.
    Limited,
    /// Full ("PC", "JPEG") range: 0–255 at 8 bits.
    Full,
}

/// Where chroma samples sit against luma samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Siting {
    /// Co-sited with the left luma sample, centred vertically (MPEG-2,
    /// H.264 and HEVC's default for 4:2:0).
    Left,
    /// Centred between luma samples both ways (JPEG, MPEG-1).
    Center,
    /// Co-sited with the top-left luma sample (BT.2020 4:2:0).
    TopLeft,
}

/// One Y'CbCr picture format: what a decoder's planes hold and how they
/// become RGB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Yuv {
    /// Chroma subsampling.
    pub chroma: Chroma,
    /// Bits per sample, 8 to 16; above 8, samples are 16-bit words with
    /// the value in the low bits.
    pub bits: u8,
    /// The matrix.
    pub matrix: Matrix,
    /// The range.
    pub range: Range,
    /// Chroma siting.
    pub siting: Siting,
}

/// Where one plane sits in the packed texture, in texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneRect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl PlaneRect {
    /// A plane of `size` (width, height) with its top-left texel at `x`,
    /// `y`.
    fn at(x: u32, y: u32, (width, height): (u32, u32)) -> Self {
        Self {
            x,
            y,
            width,
            height,
        }
    }
}

/// The three planes of a picture packed into one texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    /// The texture's size.
    pub size: (u32, u32),
    /// Luma, then the two chroma planes (Cb, Cr).
    pub planes: [PlaneRect; 3],
}

impl Yuv {
    /// Bytes of one sample: 1 at 8 bits, else 2.
    pub fn sample_bytes(&self) -> usize {
        if self.bits > 8 { 2 } else { 1 }
    }

    /// The size of the chroma planes of a `width` x `height` picture.
    pub fn chroma_size(&self, width: u32, height: u32) -> (u32, u32) {
        let (fx, fy) = self.chroma.factors();
        (width.div_ceil(fx), height.div_ceil(fy))
    }

    /// How the planes of a `width` x `height` picture pack into one
    /// texture: chroma planes side by side below luma when subsampled
    /// across, else stacked.
    pub fn packing(&self, width: u32, height: u32) -> Packing {
        let (cw, ch) = self.chroma_size(width, height);
        let luma = PlaneRect::at(0, 0, (width, height));
        let plane = |x, y| PlaneRect::at(x, y, (cw, ch));
        if cw < width {
            Packing {
                size: (width.max(2 * cw), height + ch),
                planes: [luma, plane(0, height), plane(cw, height)],
            }
        } else {
            Packing {
                size: (width, height + 2 * ch),
                planes: [luma, plane(0, height), plane(0, height + ch)],
            }
        }
    }

    /// Bytes of a packed `width` x `height` picture.
    pub fn packed_bytes(&self, width: u32, height: u32) -> usize {
        let (w, h) = self.packing(width, height).size;
        w as usize * h as usize * self.sample_bytes()
    }

    /// The largest code value, `2^bits - 1`.
    fn max_code(&self) -> f64 {
        f64::from((1u32 << self.bits) - 1)
    }

    /// Code value to normalised luma and chroma: `(code - offset) * scale`
    /// for luma, then for chroma. Limited range maps 16–235 (luma) and
    /// 16–240 (chroma) at 8 bits, scaled by `2^(bits-8)` above; full range
    /// maps 0 to `2^bits - 1`, chroma centred on `2^(bits-1)`.
    pub fn normalisation(&self) -> [f64; 4] {
        let step = f64::from(1u32 << (self.bits - 8));
        let half = f64::from(1u32 << (self.bits - 1));
        match self.range {
            Range::Limited => [
                16.0 * step,
                1.0 / (219.0 * step),
                half,
                1.0 / (224.0 * step),
            ],
            Range::Full => [0.0, 1.0 / self.max_code(), half, 1.0 / self.max_code()],
        }
    }

    /// The rows of the matrix from normalised (Y', Cb, Cr) to R'G'B'.
    pub fn rows(&self) -> [[f64; 3]; 3] {
        let (kr, kb) = self.matrix.weights();
        let kg = 1.0 - kr - kb;
        let cr_r = 2.0 * (1.0 - kr);
        let cb_b = 2.0 * (1.0 - kb);
        [
            [1.0, 0.0, cr_r],
            [1.0, -cb_b * kb / kg, -cr_r * kr / kg],
            [1.0, cb_b, 0.0],
        ]
    }

    /// Chroma texel coordinates of a luma texel coordinate: `luma * scale
    /// - shift`, across and down, from the subsampling and siting.
    pub fn chroma_position(&self) -> [f64; 4] {
        let (fx, fy) = self.chroma.factors();
        // A subsampled axis: chroma sample j sits at luma 2j (co-sited) or
        // 2j + 0.5 (centred).
        let axis = |factor: u32, centred: bool| {
            if factor == 1 {
                (1.0, 0.0)
            } else if centred {
                (0.5, 0.25)
            } else {
                (0.5, 0.0)
            }
        };
        let (sx, hx) = axis(fx, self.siting == Siting::Center);
        let (sy, hy) = axis(fy, self.siting != Siting::TopLeft);
        [sx, sy, hx, hy]
    }

    /// One sample's code values to 8-bit RGB, rounded: the shader's
    /// arithmetic for chroma taken as given.
    pub fn to_rgb(&self, y: u16, cb: u16, cr: u16) -> [u8; 3] {
        let [yo, ys, co, cs] = self.normalisation();
        let v = [
            (f64::from(y) - yo) * ys,
            (f64::from(cb) - co) * cs,
            (f64::from(cr) - co) * cs,
        ];
        self.rows().map(|row| {
            let x = row[0] * v[0] + row[1] * v[1] + row[2] * v[2];
            (x.clamp(0.0, 1.0) * 255.0).round() as u8
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yuv(chroma: Chroma, bits: u8, matrix: Matrix, range: Range) -> Yuv {
        Yuv {
            chroma,
            bits,
            matrix,
            range,
            siting: Siting::Left,
        }
    }

    #[test]
    fn a_4k_420_8_bit_frame_packs_into_12_4_mb() {
        let y = yuv(Chroma::S420, 8, Matrix::Bt709, Range::Limited);
        let p = y.packing(3840, 2160);
        assert_eq!(p.size, (3840, 3240));
        assert_eq!(y.packed_bytes(3840, 2160), 12_441_600);
        assert_eq!(
            p.planes[1],
            PlaneRect {
                x: 0,
                y: 2160,
                width: 1920,
                height: 1080
            }
        );
        assert_eq!(p.planes[2].x, 1920);
    }

    #[test]
    fn odd_sizes_keep_every_chroma_sample() {
        let y = yuv(Chroma::S420, 8, Matrix::Bt709, Range::Limited);
        let p = y.packing(5, 3);
        assert_eq!(y.chroma_size(5, 3), (3, 2));
        assert_eq!(
            p.size,
            (6, 5),
            "two 3-wide chroma planes need one more column"
        );
        let y = yuv(Chroma::S444, 10, Matrix::Bt709, Range::Full);
        assert_eq!(y.packing(5, 3).size, (5, 9));
        assert_eq!(y.packed_bytes(5, 3), 90);
        let y = yuv(Chroma::S422, 10, Matrix::Bt709, Range::Limited);
        assert_eq!(y.packing(4, 3).size, (4, 6));
    }

    #[test]
    fn reference_colours_convert_to_their_rgb() {
        // Limited-range BT.709: black, white and pure red.
        let y = yuv(Chroma::S420, 8, Matrix::Bt709, Range::Limited);
        assert_eq!(y.to_rgb(16, 128, 128), [0, 0, 0]);
        assert_eq!(y.to_rgb(235, 128, 128), [255, 255, 255]);
        let [r, g, b] = y.to_rgb(63, 102, 240);
        assert!(r == 255 && g <= 1 && b <= 1, "{r} {g} {b}");
        // Full-range BT.601 (JPEG): pure red is Y 76, Cb 85, Cr 255.
        let y = yuv(Chroma::S420, 8, Matrix::Bt601, Range::Full);
        let [r, g, b] = y.to_rgb(76, 85, 255);
        assert!(r >= 254 && g <= 1 && b <= 1, "{r} {g} {b}");
        // 10-bit limited: white is 940, black 64, grey chroma 512.
        let y = yuv(Chroma::S422, 10, Matrix::Bt709, Range::Limited);
        assert_eq!(y.to_rgb(940, 512, 512), [255, 255, 255]);
        assert_eq!(y.to_rgb(64, 512, 512), [0, 0, 0]);
        // BT.2020's green weight differs from BT.709's: same code values,
        // different green.
        let a = yuv(Chroma::S420, 8, Matrix::Bt709, Range::Limited).to_rgb(120, 90, 170);
        let b = yuv(Chroma::S420, 8, Matrix::Bt2020, Range::Limited).to_rgb(120, 90, 170);
        assert_ne!(a, b);
    }

    #[test]
    fn chroma_siting_places_chroma_samples() {
        let mut y = yuv(Chroma::S420, 8, Matrix::Bt709, Range::Limited);
        assert_eq!(
            y.chroma_position(),
            [0.5, 0.5, 0.0, 0.25],
            "left: co-sited across, centred down"
        );
        y.siting = Siting::Center;
        assert_eq!(y.chroma_position(), [0.5, 0.5, 0.25, 0.25]);
        y.siting = Siting::TopLeft;
        assert_eq!(y.chroma_position(), [0.5, 0.5, 0.0, 0.0]);
        y.chroma = Chroma::S444;
        assert_eq!(y.chroma_position(), [1.0, 1.0, 0.0, 0.0]);
    }
}
