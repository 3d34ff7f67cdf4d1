//! Checks of descriptors before wgpu sees them, so the common mistakes get a
//! typed error that says what the limit is. wgpu's own validation still runs
//! behind these, inside an error scope, for everything not checked here.

use crate::diag::ObjectKind;
use crate::error::{Error, Label, Result};
use wgpu::{BufferUsages, TextureDimension};

fn invalid(kind: ObjectKind, label: Option<&str>, reason: String) -> Error {
    Error::InvalidDescriptor {
        kind,
        label: Label::of(label),
        reason,
    }
}

/// Checks a buffer descriptor against the device's limits and features.
pub fn buffer(
    desc: &wgpu::BufferDescriptor<'_>,
    features: wgpu::Features,
    limits: &wgpu::Limits,
) -> Result<()> {
    let fail = |reason: String| Err(invalid(ObjectKind::Buffer, desc.label, reason));
    if desc.usage.is_empty() {
        return fail("usage is empty; a buffer needs at least one usage".into());
    }
    if desc.size > limits.max_buffer_size {
        return fail(format!(
            "size {} exceeds the device's max_buffer_size {}",
            desc.size, limits.max_buffer_size
        ));
    }
    if desc.mapped_at_creation && !desc.size.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
        return fail(format!(
            "mapped_at_creation needs a size that is a multiple of {}, not {}",
            wgpu::COPY_BUFFER_ALIGNMENT,
            desc.size
        ));
    }
    let mapping = desc.usage & (BufferUsages::MAP_READ | BufferUsages::MAP_WRITE);
    let rest = desc.usage - mapping;
    let allowed_with_read = BufferUsages::COPY_DST;
    let allowed_with_write = BufferUsages::COPY_SRC;
    if !features.contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS) {
        let bad = (mapping == BufferUsages::MAP_READ && !allowed_with_read.contains(rest))
            || (mapping == BufferUsages::MAP_WRITE && !allowed_with_write.contains(rest))
            || mapping == (BufferUsages::MAP_READ | BufferUsages::MAP_WRITE);
        if bad {
            return fail(format!(
                "usage {:?}: MAP_READ combines only with COPY_DST and MAP_WRITE only with COPY_SRC \
                 (without the MAPPABLE_PRIMARY_BUFFERS feature)",
                desc.usage
            ));
        }
    }
    Ok(())
}

/// The most mip levels a texture of this size and dimension can have.
pub fn max_mips(dimension: TextureDimension, size: wgpu::Extent3d) -> u32 {
    let largest = match dimension {
        TextureDimension::D1 => size.width,
        TextureDimension::D2 => size.width.max(size.height),
        TextureDimension::D3 => size.width.max(size.height).max(size.depth_or_array_layers),
    };
    32 - largest.max(1).leading_zeros()
}

/// What the device lets a texture format do.
pub struct FormatSupport {
    /// Features the format needs.
    pub required: wgpu::Features,
    /// Usages and flags allowed for it.
    pub features: wgpu::TextureFormatFeatures,
}

/// Checks a texture descriptor against the device's limits, features and the
/// format's support.
pub fn texture(
    desc: &wgpu::TextureDescriptor<'_>,
    device_features: wgpu::Features,
    limits: &wgpu::Limits,
    support: &FormatSupport,
) -> Result<()> {
    extent(desc, limits)?;
    mips_and_samples(desc, support)?;
    let missing = support.required - device_features;
    if !missing.is_empty() {
        return Err(Error::UnsupportedFormat {
            format: desc.format,
            missing,
        });
    }
    let fail = |reason: String| Err(invalid(ObjectKind::Texture, desc.label, reason));
    if desc.usage.is_empty() {
        return fail("usage is empty; a texture needs at least one usage".into());
    }
    let allowed = support.features.allowed_usages;
    if !allowed.contains(desc.usage) {
        return Err(Error::UnsupportedUsage {
            format: desc.format,
            usage: desc.usage,
            allowed,
        });
    }
    let (mw, mh) = desc.format.size_multiple_requirement();
    if !desc.size.width.is_multiple_of(mw) || !desc.size.height.is_multiple_of(mh) {
        return fail(format!(
            "{:?} needs a size that is a multiple of {mw}x{mh}, not {}x{}",
            desc.format, desc.size.width, desc.size.height
        ));
    }
    Ok(())
}

fn extent(desc: &wgpu::TextureDescriptor<'_>, limits: &wgpu::Limits) -> Result<()> {
    let s = desc.size;
    let fail = |reason: String| Err(invalid(ObjectKind::Texture, desc.label, reason));
    if s.width == 0 || s.height == 0 || s.depth_or_array_layers == 0 {
        return fail(format!(
            "size {}x{}x{} has a zero extent",
            s.width, s.height, s.depth_or_array_layers
        ));
    }
    let (max_w, max_h, max_d, what) = match desc.dimension {
        TextureDimension::D1 => (limits.max_texture_dimension_1d, 1, 1, "1-D"),
        TextureDimension::D2 => (
            limits.max_texture_dimension_2d,
            limits.max_texture_dimension_2d,
            limits.max_texture_array_layers,
            "2-D",
        ),
        TextureDimension::D3 => (
            limits.max_texture_dimension_3d,
            limits.max_texture_dimension_3d,
            limits.max_texture_dimension_3d,
            "3-D",
        ),
    };
    if s.width > max_w || s.height > max_h || s.depth_or_array_layers > max_d {
        return fail(format!(
            "size {}x{}x{} exceeds the device's {what} limit of {max_w}x{max_h}x{max_d}",
            s.width, s.height, s.depth_or_array_layers
        ));
    }
    Ok(())
}

fn mips_and_samples(desc: &wgpu::TextureDescriptor<'_>, support: &FormatSupport) -> Result<()> {
    let fail = |reason: String| Err(invalid(ObjectKind::Texture, desc.label, reason));
    let most = max_mips(desc.dimension, desc.size);
    if desc.mip_level_count == 0 || desc.mip_level_count > most {
        return fail(format!(
            "mip_level_count {} is outside 1..={most}, the levels a {}x{}x{} texture has",
            desc.mip_level_count,
            desc.size.width,
            desc.size.height,
            desc.size.depth_or_array_layers
        ));
    }
    if desc.sample_count == 1 {
        return Ok(());
    }
    let flags = support.features.flags;
    if !flags.sample_count_supported(desc.sample_count) {
        return fail(format!(
            "sample_count {} is not supported for {:?} on this adapter",
            desc.sample_count, desc.format
        ));
    }
    if desc.dimension != TextureDimension::D2
        || desc.mip_level_count != 1
        || desc.size.depth_or_array_layers != 1
    {
        return fail("a multisampled texture must be 2-D with one mip level and one layer".into());
    }
    Ok(())
}

/// Checks a query set descriptor.
pub fn query_set(desc: &wgpu::QuerySetDescriptor<'_>) -> Result<()> {
    if desc.count == 0 || desc.count > wgpu::QUERY_SET_MAX_QUERIES {
        let reason = format!(
            "count {} is outside 1..={}",
            desc.count,
            wgpu::QUERY_SET_MAX_QUERIES
        );
        return Err(invalid(ObjectKind::QuerySet, desc.label, reason));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_mips_counts_levels_down_to_one_texel() {
        let e = |w, h, d| wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: d,
        };
        assert_eq!(max_mips(TextureDimension::D2, e(1, 1, 1)), 1);
        assert_eq!(max_mips(TextureDimension::D2, e(64, 64, 1)), 7);
        assert_eq!(max_mips(TextureDimension::D2, e(3840, 2160, 6)), 12);
        assert_eq!(max_mips(TextureDimension::D3, e(4, 4, 64)), 7);
        assert_eq!(max_mips(TextureDimension::D1, e(256, 1, 1)), 9);
    }

    #[test]
    fn map_read_with_vertex_is_rejected_without_the_feature() {
        let desc = wgpu::BufferDescriptor {
            label: Some("readback"),
            size: 16,
            usage: BufferUsages::MAP_READ | BufferUsages::VERTEX,
            mapped_at_creation: false,
        };
        let limits = wgpu::Limits::default();
        let err = buffer(&desc, wgpu::Features::empty(), &limits).unwrap_err();
        assert!(
            err.to_string()
                .contains("MAP_READ combines only with COPY_DST"),
            "{err}"
        );
        assert!(buffer(&desc, wgpu::Features::MAPPABLE_PRIMARY_BUFFERS, &limits).is_ok());
    }
}
