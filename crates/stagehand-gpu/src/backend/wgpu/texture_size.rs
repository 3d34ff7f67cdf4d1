//! The exact byte size of a texture: every format, mip level, layer and sample.
//!
//! Sizes are the texel data a texture holds when packed tightly, which is what
//! a copy moves and the least any driver allocates. Drivers add row and
//! level alignment on top; that padding is theirs to report.

use wgpu::{TextureAspect, TextureDimension, TextureFormat};

/// Bytes of one texel block for one aspect of a format.
///
/// wgpu gives this for every aspect a copy can address. The depth aspects it
/// leaves open are given the storage real hardware uses: 24-bit depth in a
/// 32-bit word (packed with stencil in `Depth24PlusStencil8`), and
/// `Depth32FloatStencil8` as 32-bit depth plus stencil padded to 64 bits.
fn aspect_block_bytes(format: TextureFormat, aspect: TextureAspect) -> u64 {
    match (format, aspect) {
        (TextureFormat::Depth24Plus, _) => 4,
        (TextureFormat::Depth24PlusStencil8, _) => 4,
        (TextureFormat::Depth32FloatStencil8, _) => 8,
        _ => u64::from(format.block_copy_size(Some(aspect)).unwrap_or(0)),
    }
}

/// The planes of a format: the aspect to size each by, and how much smaller
/// than the texture that plane's extent is.
fn planes(format: TextureFormat) -> Vec<(TextureAspect, (u32, u32))> {
    match format.planes() {
        Some(n) => (0..n)
            .map(|p| {
                let aspect = if p == 0 {
                    TextureAspect::Plane0
                } else {
                    TextureAspect::Plane1
                };
                (aspect, format.subsampling_factors(Some(p)))
            })
            .collect(),
        None => vec![(TextureAspect::All, (1, 1))],
    }
}

/// Bytes of a `width` x `height` image (one layer, one sample) of `format`,
/// rounded to whole blocks, summed over its planes.
pub fn image_bytes(format: TextureFormat, width: u32, height: u32) -> u64 {
    let (bw, bh) = format.block_dimensions();
    planes(format)
        .into_iter()
        .map(|(aspect, (sx, sy))| {
            let (w, h) = (width.div_ceil(sx), height.div_ceil(sy));
            let blocks = u64::from(w.div_ceil(bw)) * u64::from(h.div_ceil(bh));
            blocks.saturating_mul(aspect_block_bytes(format, aspect))
        })
        .fold(0u64, u64::saturating_add)
}

/// Bytes of a whole texture: all mip levels, all array layers (or depth
/// slices of a 3-D texture, which halve with each level), all samples.
///
/// Saturates at `u64::MAX` rather than overflowing; descriptors that large are
/// rejected before any texture is made.
pub fn texture_bytes(desc: &wgpu::TextureDescriptor<'_>) -> u64 {
    let size = desc.size;
    let three_d = desc.dimension == TextureDimension::D3;
    (0..desc.mip_level_count.min(32))
        .map(|level| {
            let w = (size.width >> level).max(1);
            let h = if desc.dimension == TextureDimension::D1 {
                1
            } else {
                (size.height >> level).max(1)
            };
            let slices = if three_d {
                (size.depth_or_array_layers >> level).max(1)
            } else {
                size.depth_or_array_layers
            };
            image_bytes(desc.format, w, h)
                .saturating_mul(u64::from(slices))
                .saturating_mul(u64::from(desc.sample_count))
        })
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::{AstcBlock, AstcChannel, Extent3d, TextureUsages};

    fn desc(
        format: TextureFormat,
        size: (u32, u32, u32),
        mips: u32,
        dim: TextureDimension,
    ) -> wgpu::TextureDescriptor<'static> {
        wgpu::TextureDescriptor {
            label: None,
            size: Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: size.2,
            },
            mip_level_count: mips,
            sample_count: 1,
            dimension: dim,
            format,
            usage: TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        }
    }

    #[test]
    fn hand_computed_sizes() {
        use TextureDimension::*;
        use TextureFormat::*;
        let astc = Astc {
            block: AstcBlock::B10x8,
            channel: AstcChannel::Unorm,
        };
        let cases = [
            // A 4K RGBA8 frame.
            (desc(Rgba8Unorm, (3840, 2160, 1), 1, D2), 33_177_600),
            // 5x5 BC1: 2x2 blocks of 8 bytes.
            (desc(Bc1RgbaUnorm, (5, 5, 1), 1, D2), 32),
            // 4x4 RGBA8 with 3 mips: 64 + 16 + 4 texels.
            (desc(Rgba8Unorm, (4, 4, 1), 3, D2), 4 * (16 + 4 + 1)),
            // 3-D 4x4x4 R8 with 3 mips: 64 + 8 + 1 texels; depth halves too.
            (desc(R8Unorm, (4, 4, 4), 3, D3), 64 + 8 + 1),
            // 2-D array of 6 layers, 2 mips: layers do not halve.
            (desc(R8Unorm, (4, 4, 6), 2, D2), 6 * (16 + 4)),
            // 1-D: height stays 1.
            (desc(Rgba16Float, (100, 1, 1), 1, D1), 800),
            // ASTC 10x8 on 21x9: 3x2 blocks of 16 bytes.
            (desc(astc, (21, 9, 1), 1, D2), 96),
            // BC7 4x4 with 3 mips: level 2 is 1x1 texels but one whole 4x4 block.
            (desc(Bc7RgbaUnorm, (4, 4, 1), 3, D2), 3 * 16),
            // NV12 5x3: luma 5x3 at 1 byte, chroma 3x2 at 2 bytes.
            (desc(NV12, (5, 3, 1), 1, D2), 15 + 12),
            // P010 4x4: luma 16 x 2 bytes, chroma 2x2 x 4 bytes.
            (desc(P010, (4, 4, 1), 1, D2), 32 + 16),
            (desc(Depth24PlusStencil8, (10, 10, 1), 1, D2), 400),
            (desc(Depth32FloatStencil8, (10, 10, 1), 1, D2), 800),
            (desc(Depth24Plus, (10, 10, 1), 1, D2), 400),
            (desc(Stencil8, (10, 10, 1), 1, D2), 100),
        ];
        for (d, want) in cases {
            assert_eq!(
                texture_bytes(&d),
                want,
                "{:?} {:?} mips {}",
                d.format,
                d.size,
                d.mip_level_count
            );
        }
    }

    #[test]
    fn samples_multiply_and_absurd_sizes_saturate() {
        let mut d = desc(
            TextureFormat::Rgba8Unorm,
            (64, 64, 1),
            1,
            TextureDimension::D2,
        );
        d.sample_count = 4;
        assert_eq!(texture_bytes(&d), 64 * 64 * 4 * 4);
        let mut huge = desc(
            TextureFormat::Rgba32Float,
            (u32::MAX, u32::MAX, u32::MAX),
            32,
            TextureDimension::D3,
        );
        huge.sample_count = 64;
        assert_eq!(texture_bytes(&huge), u64::MAX);
    }

    /// Every format wgpu lists, against wgpu's own block size and dimensions
    /// (and, for the formats whose footprint it knows, its own estimate).
    #[test]
    fn every_format_matches_wgpu_block_size_and_dimensions() {
        use exhaust::Exhaust;
        let mut checked = 0;
        for format in wgpu_types::TextureFormat::exhaust() {
            let (bw, bh) = format.block_dimensions();
            let (w, h) = (7 * bw + 1, 5 * bh + 1);
            let got = image_bytes(format, w, h);
            assert!(got > 0, "{format:?}");
            let want = match (format.block_copy_size(None), format.planes()) {
                (Some(block), _) => Some(u64::from(block) * 8 * 6),
                (None, Some(_)) => None,
                (None, None) => Some(format.theoretical_memory_footprint(Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                })),
            };
            if let Some(want) = want {
                assert_eq!(got, want, "{format:?} {w}x{h}");
            }
            // Mips sum level by level, each level rounded to whole blocks.
            let d = desc(format, (w, h, 2), 3, TextureDimension::D2);
            let levels: u64 = (0..3)
                .map(|l| image_bytes(format, (w >> l).max(1), (h >> l).max(1)))
                .sum();
            assert_eq!(texture_bytes(&d), 2 * levels, "{format:?} with mips");
            checked += 1;
        }
        assert!(checked > 100, "wgpu lists {checked} formats");
    }
}
