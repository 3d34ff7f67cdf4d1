//! Where an upload lands, and how its rows are laid out in the source and in
//! staging memory. Everything here is checked before anything is queued.

use super::error::UploadError;
use wgpu::{COPY_BUFFER_ALIGNMENT, COPY_BYTES_PER_ROW_ALIGNMENT};

/// A region of one mip level of a texture, in texels; `origin.z` and
/// `size.depth_or_array_layers` select array layers (or depth slices).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureRegion {
    /// The mip level.
    pub mip_level: u32,
    /// The first texel (and layer).
    pub origin: wgpu::Origin3d,
    /// The extent in texels (and layers).
    pub size: wgpu::Extent3d,
}

impl TextureRegion {
    /// All of mip 0, layer 0 of a texture of `size`.
    pub fn frame(size: wgpu::Extent3d) -> Self {
        let size = wgpu::Extent3d {
            depth_or_array_layers: 1,
            ..size
        };
        Self {
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            size,
        }
    }
}

/// How the source bytes are laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceLayout {
    /// The data's format; `None` means the texture's. Must match the texture.
    pub format: Option<wgpu::TextureFormat>,
    /// Bytes from one row of blocks to the next; `None` means tightly packed.
    pub bytes_per_row: Option<u64>,
}

/// A checked texture copy: the region and its row layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyLayout {
    /// Where the copy lands (block-rounded).
    pub region: TextureRegion,
    /// Bytes of one row of blocks, tightly packed.
    pub row_bytes: u64,
    /// Rows of blocks per layer.
    pub rows: u64,
    /// Layers (or slices).
    pub layers: u64,
    /// Source bytes from row to row.
    pub src_pitch: u64,
    /// Staging bytes from row to row: `row_bytes` aligned to 256.
    pub staging_pitch: u64,
}

impl CopyLayout {
    /// Bytes the copy takes in staging memory.
    pub fn staging_bytes(&self) -> u64 {
        self.staging_pitch * self.rows * self.layers
    }

    /// Bytes of texel data the copy moves.
    pub fn data_bytes(&self) -> u64 {
        self.row_bytes * self.rows * self.layers
    }

    /// Fewest and most source bytes the region takes.
    pub fn source_len_range(&self) -> (u64, u64) {
        let all = self.rows * self.layers;
        (
            self.src_pitch * (all - 1) + self.row_bytes,
            self.src_pitch * all,
        )
    }

    /// The source offset of row `row` of layer `layer`.
    pub fn src_offset(&self, layer: u64, row: u64) -> u64 {
        (layer * self.rows + row) * self.src_pitch
    }

    /// The staging offset of row `row` of layer `layer`.
    pub fn staging_offset(&self, layer: u64, row: u64) -> u64 {
        (layer * self.rows + row) * self.staging_pitch
    }
}

/// The smallest staging pitch for rows of `row_bytes`.
pub fn staging_pitch(row_bytes: u64) -> u64 {
    row_bytes.next_multiple_of(u64::from(COPY_BYTES_PER_ROW_ALIGNMENT))
}

fn mip_extent(desc: &TextureInfo, level: u32) -> (u32, u32, u32) {
    let s = desc.size;
    let w = (s.width >> level).max(1);
    let h = if desc.dimension == wgpu::TextureDimension::D1 {
        1
    } else {
        (s.height >> level).max(1)
    };
    let d = if desc.dimension == wgpu::TextureDimension::D3 {
        (s.depth_or_array_layers >> level).max(1)
    } else {
        s.depth_or_array_layers
    };
    (w, h, d)
}

/// What a region is checked against.
#[derive(Clone, Copy, Debug)]
pub struct TextureInfo {
    /// The texture's format.
    pub format: wgpu::TextureFormat,
    /// Its size at mip 0.
    pub size: wgpu::Extent3d,
    /// Its mip levels.
    pub mip_level_count: u32,
    /// 1-D, 2-D or 3-D.
    pub dimension: wgpu::TextureDimension,
}

impl TextureInfo {
    /// The info of a texture.
    pub fn of(t: &wgpu::Texture) -> Self {
        Self {
            format: t.format(),
            size: t.size(),
            mip_level_count: t.mip_level_count(),
            dimension: t.dimension(),
        }
    }
}

/// Checks an upload of `len` bytes laid out as `layout` into `region` of a
/// texture, and works out its rows.
pub fn check_texture(
    info: &TextureInfo,
    region: TextureRegion,
    layout: SourceLayout,
    len: u64,
) -> Result<CopyLayout, UploadError> {
    let copy = plan_texture(info, region, layout)?;
    let (min, max) = copy.source_len_range();
    if len < min || len > max {
        return Err(UploadError::DataLength { got: len, min, max });
    }
    Ok(copy)
}

/// Checks `region` and `layout` against a texture and works out the rows of
/// the copy, before any data is seen (fill in place has none).
pub fn plan_texture(
    info: &TextureInfo,
    region: TextureRegion,
    layout: SourceLayout,
) -> Result<CopyLayout, UploadError> {
    let format = info.format;
    if let Some(data) = layout.format.filter(|&f| f != format) {
        return Err(UploadError::FormatMismatch {
            data,
            texture: format,
        });
    }
    let block_bytes = format
        .block_copy_size(None)
        .ok_or(UploadError::UnsupportedFormat(format))?;
    let (r, o) = (region.size, region.origin);
    if r.width == 0 || r.height == 0 || r.depth_or_array_layers == 0 {
        return Err(UploadError::ZeroSized);
    }
    if region.mip_level >= info.mip_level_count {
        return Err(UploadError::NoSuchMip {
            level: region.mip_level,
            count: info.mip_level_count,
        });
    }
    let (w, h, d) = mip_extent(info, region.mip_level);
    let end_z = u64::from(o.z) + u64::from(r.depth_or_array_layers);
    if end_z > u64::from(d) {
        return Err(UploadError::NoSuchLayer {
            first: o.z,
            end: end_z.min(u64::from(u32::MAX)) as u32,
            count: d,
        });
    }
    let (bw, bh) = format.block_dimensions();
    let end_x = u64::from(o.x) + u64::from(r.width);
    let end_y = u64::from(o.y) + u64::from(r.height);
    // Compressed regions cover whole blocks, except where they reach the
    // level's edge (a 2x2 level of a 4x4-block format is one block).
    let whole = |origin: u32, end: u64, extent: u32, block: u32| {
        origin.is_multiple_of(block)
            && (end.is_multiple_of(u64::from(block)) || end == u64::from(extent))
    };
    if end_x > u64::from(w)
        || end_y > u64::from(h)
        || !whole(o.x, end_x, w, bw)
        || !whole(o.y, end_y, h, bh)
    {
        return Err(UploadError::OutOfBounds {
            region: format!(
                "{}x{} at ({}, {}) of mip {}",
                r.width, r.height, o.x, o.y, region.mip_level
            ),
            bounds: format!("{w}x{h} at mip {}, in {bw}x{bh} blocks", region.mip_level),
        });
    }
    let row_bytes = u64::from(r.width.div_ceil(bw)) * u64::from(block_bytes);
    let rows = u64::from(r.height.div_ceil(bh));
    let src_pitch = layout.bytes_per_row.unwrap_or(row_bytes);
    if src_pitch < row_bytes {
        return Err(UploadError::PitchTooSmall {
            given: src_pitch,
            row: row_bytes,
        });
    }
    // Every row's offset, and the source's length, must be an address:
    // a pitch past that is no layout any source can have.
    let all_rows = rows * u64::from(r.depth_or_array_layers);
    if src_pitch
        .checked_mul(all_rows)
        .is_none_or(|end| end > isize::MAX as u64)
    {
        return Err(UploadError::PitchTooLarge {
            given: src_pitch,
            rows: all_rows,
        });
    }
    let copy = CopyLayout {
        region,
        row_bytes,
        rows,
        layers: u64::from(r.depth_or_array_layers),
        src_pitch,
        staging_pitch: staging_pitch(row_bytes),
    };
    Ok(copy)
}

/// Checks an upload of `len` bytes at `offset` of a buffer of `size` bytes.
pub fn check_buffer(size: u64, offset: u64, len: u64) -> Result<(), UploadError> {
    if len == 0 {
        return Err(UploadError::ZeroSized);
    }
    if !offset.is_multiple_of(COPY_BUFFER_ALIGNMENT) || !len.is_multiple_of(COPY_BUFFER_ALIGNMENT) {
        return Err(UploadError::Unaligned { offset, len });
    }
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(UploadError::OutOfBounds {
            region: format!("{len} bytes at {offset}"),
            bounds: format!("{size} bytes"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::TextureFormat as F;

    fn info(format: F, w: u32, h: u32, layers: u32, mips: u32) -> TextureInfo {
        TextureInfo {
            format,
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: layers,
            },
            mip_level_count: mips,
            dimension: wgpu::TextureDimension::D2,
        }
    }

    fn region(mip: u32, x: u32, y: u32, z: u32, w: u32, h: u32, d: u32) -> TextureRegion {
        TextureRegion {
            mip_level: mip,
            origin: wgpu::Origin3d { x, y, z },
            size: wgpu::Extent3d {
                width: w,
                height: h,
                depth_or_array_layers: d,
            },
        }
    }

    #[test]
    fn a_4k_frame_repitches_nothing() {
        let i = info(F::Rgba8Unorm, 3840, 2160, 1, 1);
        let c = check_texture(
            &i,
            TextureRegion::frame(i.size),
            SourceLayout::default(),
            3840 * 2160 * 4,
        )
        .unwrap();
        assert_eq!(
            (c.row_bytes, c.rows, c.staging_pitch),
            (15_360, 2160, 15_360)
        );
    }

    #[test]
    fn odd_rows_are_padded_to_256_in_staging() {
        let i = info(F::Rgba8Unorm, 100, 10, 1, 1);
        let c = check_texture(
            &i,
            TextureRegion::frame(i.size),
            SourceLayout::default(),
            4000,
        )
        .unwrap();
        assert_eq!(
            (c.row_bytes, c.staging_pitch, c.staging_bytes()),
            (400, 512, 5120)
        );
        let pitched = SourceLayout {
            format: None,
            bytes_per_row: Some(448),
        };
        let c = check_texture(&i, TextureRegion::frame(i.size), pitched, 448 * 9 + 400).unwrap();
        assert_eq!(c.src_offset(0, 9), 448 * 9);
    }

    #[test]
    fn compressed_regions_are_in_blocks() {
        let i = info(F::Bc1RgbaUnorm, 16, 16, 1, 3);
        // Mip 2 is 4x4: one block of 8 bytes.
        let c = check_texture(&i, region(2, 0, 0, 0, 4, 4, 1), SourceLayout::default(), 8).unwrap();
        assert_eq!((c.row_bytes, c.rows), (8, 1));
        let err =
            check_texture(&i, region(0, 2, 0, 0, 4, 4, 1), SourceLayout::default(), 8).unwrap_err();
        assert!(matches!(err, UploadError::OutOfBounds { .. }), "{err}");
    }

    #[test]
    fn bad_regions_get_their_own_errors() {
        let i = info(F::Rgba8Unorm, 64, 64, 2, 2);
        let l = SourceLayout::default();
        let e = |r, len| check_texture(&i, r, l, len).unwrap_err();
        assert_eq!(e(region(0, 0, 0, 0, 0, 4, 1), 0), UploadError::ZeroSized);
        assert_eq!(
            e(region(2, 0, 0, 0, 1, 1, 1), 4),
            UploadError::NoSuchMip { level: 2, count: 2 }
        );
        assert_eq!(
            e(region(0, 0, 0, 1, 4, 4, 2), 128),
            UploadError::NoSuchLayer {
                first: 1,
                end: 3,
                count: 2
            }
        );
        assert!(matches!(
            e(region(1, 30, 0, 0, 4, 4, 1), 64),
            UploadError::OutOfBounds { .. }
        ));
        assert_eq!(
            e(region(0, 0, 0, 0, 4, 4, 1), 63),
            UploadError::DataLength {
                got: 63,
                min: 64,
                max: 64
            }
        );
        assert_eq!(
            e(region(0, 0, 0, 0, 4, 4, 1), 65),
            UploadError::DataLength {
                got: 65,
                min: 64,
                max: 64
            }
        );
        let srgb = SourceLayout {
            format: Some(F::Rgba8UnormSrgb),
            bytes_per_row: None,
        };
        assert!(matches!(
            check_texture(&i, region(0, 0, 0, 0, 4, 4, 1), srgb, 64),
            Err(UploadError::FormatMismatch { .. })
        ));
        let narrow = SourceLayout {
            format: None,
            bytes_per_row: Some(8),
        };
        assert!(matches!(
            check_texture(&i, region(0, 0, 0, 0, 4, 4, 1), narrow, 64),
            Err(UploadError::PitchTooSmall { .. })
        ));
        let depth = info(F::Depth24PlusStencil8, 4, 4, 1, 1);
        assert!(matches!(
            check_texture(&depth, region(0, 0, 0, 0, 4, 4, 1), l, 64),
            Err(UploadError::UnsupportedFormat(_))
        ));
    }

    #[test]
    fn buffer_ranges_must_be_aligned_and_inside() {
        assert!(check_buffer(64, 0, 64).is_ok());
        assert_eq!(check_buffer(64, 0, 0), Err(UploadError::ZeroSized));
        assert_eq!(
            check_buffer(64, 2, 4),
            Err(UploadError::Unaligned { offset: 2, len: 4 })
        );
        assert!(matches!(
            check_buffer(64, 60, 8),
            Err(UploadError::OutOfBounds { .. })
        ));
        assert!(matches!(
            check_buffer(64, u64::MAX - 3, 4),
            Err(UploadError::OutOfBounds { .. })
        ));
    }
}
