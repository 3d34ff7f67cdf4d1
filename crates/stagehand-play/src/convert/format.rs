//! Texture formats: which one a source gets (`PlayOptions::format`), what precision
//! that costs, and the copy of a frame's texels into staging memory.

use crate::PlayError;
use crate::error::Field;
use crate::source::{Frame, FrameInfo, SampleType};
use serde::Serialize;

/// The texture format asked for (`PlayOptions::format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FormatChoice {
    /// Follow the source: 8-bit → `Rgba8Unorm`, 16-bit → `Rgba16Unorm`
    /// (`Rgba16Float` without the adapter feature), half and float →
    /// `Rgba16Float`.
    #[default]
    Auto,
    /// `Rgba8Unorm`.
    Rgba8,
    /// `Rgba16Unorm` (needs `TEXTURE_FORMAT_16BIT_NORM`).
    Rgba16,
    /// `Rgba16Float`.
    Rgba16f,
    /// `Rgba32Float`.
    Rgba32f,
}

impl std::str::FromStr for FormatChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "auto" => Self::Auto,
            "rgba8" => Self::Rgba8,
            "rgba16" => Self::Rgba16,
            "rgba16f" => Self::Rgba16f,
            "rgba32f" => Self::Rgba32f,
            _ => {
                return Err(format!(
                    "{s:?}: expected auto, rgba8, rgba16, rgba16f or rgba32f"
                ));
            }
        })
    }
}

/// The format chosen for a source, and what it costs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FormatPlan {
    /// The texture format frames are uploaded into.
    #[serde(serialize_with = "format_name")]
    pub texture: wgpu::TextureFormat,
    /// How the source is stored.
    pub source: FrameInfo,
    /// Precision lost on the way, in words; `None` when every sample lands
    /// exactly.
    pub reduction: Option<String>,
}

fn format_name<S: serde::Serializer>(f: &wgpu::TextureFormat, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{f:?}"))
}

/// Chooses the texture format for `source`. `has_16bit_norm` says whether
/// the device can create `Rgba16Unorm` textures.
pub fn choose(
    source: FrameInfo,
    choice: FormatChoice,
    has_16bit_norm: bool,
) -> Result<FormatPlan, PlayError> {
    let (texture, reduction) = match source.yuv {
        Some(yuv) => (plane_texture(yuv.bits, choice, has_16bit_norm)?, None),
        None if choice == FormatChoice::Auto => auto_texture(source.sample, has_16bit_norm),
        None => chosen_texture(choice, source.sample, has_16bit_norm)?,
    };
    Ok(FormatPlan {
        texture,
        source,
        reduction: reduction.map(str::to_owned),
    })
}

/// What a texture keeps less of than the source has, if anything.
type Reduction = Option<&'static str>;

/// A movie's planes go up as the decoder made them, every code value
/// exact, and become RGB in the render pass: normalised, so the sampler
/// filters them; 16-bit integers (read texel by texel) where the device
/// has no 16-bit normalised textures.
fn plane_texture(
    bits: u8,
    choice: FormatChoice,
    has_16bit_norm: bool,
) -> Result<wgpu::TextureFormat, PlayError> {
    use wgpu::TextureFormat as T;
    if choice != FormatChoice::Auto {
        return Err(PlayError::BadOption {
            field: Field::Format,
            message: "is for image sequences: a movie's Y'CbCr planes are uploaded as decoded and converted on the GPU".into(),
        });
    }
    Ok(match (bits > 8, has_16bit_norm) {
        (false, _) => T::R8Unorm,
        (true, true) => T::R16Unorm,
        (true, false) => T::R16Uint,
    })
}

/// The texture for `sample` where none was asked for: the source's
/// precision where the device has a format for it.
fn auto_texture(sample: SampleType, has_16bit_norm: bool) -> (wgpu::TextureFormat, Reduction) {
    use wgpu::TextureFormat as T;
    match sample {
        SampleType::U8 => (T::Rgba8Unorm, None),
        SampleType::U16 if has_16bit_norm => (T::Rgba16Unorm, None),
        SampleType::U16 => (
            T::Rgba16Float,
            Some(
                "16-bit integers stored as half floats (11 significant bits): the adapter has no 16-bit normalised textures",
            ),
        ),
        SampleType::F16 => (T::Rgba16Float, None),
        SampleType::F32 => (
            T::Rgba16Float,
            Some("32-bit floats stored as half floats (the rgba32f format keeps them whole)"),
        ),
    }
}

/// The texture asked for (`PlayOptions::format`), and what it keeps less of.
fn chosen_texture(
    choice: FormatChoice,
    sample: SampleType,
    has_16bit_norm: bool,
) -> Result<(wgpu::TextureFormat, Reduction), PlayError> {
    use wgpu::TextureFormat as T;
    Ok(match (choice, sample) {
        (FormatChoice::Auto, _) => auto_texture(sample, has_16bit_norm),
        (FormatChoice::Rgba8, SampleType::U8) => (T::Rgba8Unorm, None),
        (FormatChoice::Rgba8, SampleType::U16) => {
            (T::Rgba8Unorm, Some("16-bit integers reduced to 8 bits"))
        }
        (FormatChoice::Rgba8, _) => (
            T::Rgba8Unorm,
            Some(
                "scene-linear floats clamped to 0..1 and reduced to 8 bits before the display transform",
            ),
        ),
        (FormatChoice::Rgba16, _) if !has_16bit_norm => {
            return Err(PlayError::BadOption {
                field: Field::Format,
                message: "rgba16: this adapter has no 16-bit normalised textures (TEXTURE_FORMAT_16BIT_NORM); use rgba16f".into(),
            });
        }
        (FormatChoice::Rgba16, SampleType::U8 | SampleType::U16) => (T::Rgba16Unorm, None),
        (FormatChoice::Rgba16, _) => (
            T::Rgba16Unorm,
            Some("scene-linear floats clamped to 0..1 and stored as 16-bit integers"),
        ),
        (FormatChoice::Rgba16f, SampleType::U8 | SampleType::F16) => (T::Rgba16Float, None),
        (FormatChoice::Rgba16f, SampleType::U16) => (
            T::Rgba16Float,
            Some("16-bit integers stored as half floats (11 significant bits)"),
        ),
        (FormatChoice::Rgba16f, SampleType::F32) => {
            (T::Rgba16Float, Some("32-bit floats stored as half floats"))
        }
        (FormatChoice::Rgba32f, _) => (T::Rgba32Float, None),
    })
}

/// Bytes of one texel of `format` (the formats [`choose`] picks).
pub fn texel_bytes(format: wgpu::TextureFormat) -> usize {
    match format {
        wgpu::TextureFormat::R8Uint | wgpu::TextureFormat::R8Unorm => 1,
        wgpu::TextureFormat::R16Uint | wgpu::TextureFormat::R16Unorm => 2,
        wgpu::TextureFormat::Rgba8Unorm => 4,
        wgpu::TextureFormat::Rgba16Unorm | wgpu::TextureFormat::Rgba16Float => 8,
        _ => 16,
    }
}

/// Whether rows of frames like `info` already are texels of `texture`:
/// RGBA at the texture's precision, or packed Y'CbCr planes.
pub fn is_texels(info: &FrameInfo, texture: wgpu::TextureFormat) -> bool {
    if info.yuv.is_some() {
        return matches!(
            (info.sample, texture),
            (SampleType::U8, wgpu::TextureFormat::R8Unorm)
                | (
                    SampleType::U16,
                    wgpu::TextureFormat::R16Unorm | wgpu::TextureFormat::R16Uint
                )
        );
    }
    info.channels == 4
        && matches!(
            (info.sample, texture),
            (SampleType::U8, wgpu::TextureFormat::Rgba8Unorm)
                | (SampleType::U16, wgpu::TextureFormat::Rgba16Unorm)
                | (SampleType::F16, wgpu::TextureFormat::Rgba16Float)
                | (SampleType::F32, wgpu::TextureFormat::Rgba32Float)
        )
}

/// Copies `frame`, texels of `texture` already ([`crate::convert`] made
/// them on a decode thread), into staging memory, one row every `pitch`
/// bytes: a plain copy of each row, nothing converted. A frame that is not
/// texels of `texture` is refused, leaving staging as it was.
pub fn fill_staging(
    frame: &Frame,
    texture: wgpu::TextureFormat,
    out: &mut wgpu::WriteOnly<'_, [u8]>,
    pitch: usize,
) -> Result<(), NotTexels> {
    let info = &frame.info;
    if !is_texels(info, texture) {
        return Err(NotTexels {
            info: *info,
            texture,
        });
    }
    frame.for_each_row(&mut |at, src| {
        let start = at.y * pitch + at.x;
        out.slice(start..start + src.len()).copy_from_slice(src);
    });
    Ok(())
}

/// A frame handed to the upload that is not yet texels of its texture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {}-channel {:?} frame is not texels of {texture:?}: it must be converted before its upload", info.channels, info.sample)]
pub struct NotTexels {
    /// The frame.
    pub info: FrameInfo,
    /// The texture it was to fill.
    pub texture: wgpu::TextureFormat,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(channels: u8, sample: SampleType) -> FrameInfo {
        FrameInfo {
            width: 2,
            height: 1,
            channels,
            sample,
            yuv: None,
        }
    }

    #[test]
    fn the_uploads_fill_is_a_plain_copy_and_refuses_frames_not_yet_texels() {
        use bytes::Bytes;
        let rgba = Frame {
            info: info(4, SampleType::U8),
            data: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8]).into(),
        };
        let texture = wgpu::TextureFormat::Rgba8Unorm;
        let mut staging = vec![0xEEu8; 12];
        fill_staging(&rgba, texture, &mut (&mut staging[..]).into(), 12).unwrap();
        assert_eq!(staging, [1, 2, 3, 4, 5, 6, 7, 8, 0xEE, 0xEE, 0xEE, 0xEE]);
        // RGB must have been expanded on a decode thread: the upload
        // worker does not convert it, and leaves staging as it was.
        let rgb = Frame {
            info: info(3, SampleType::U8),
            data: Bytes::from_static(&[1, 2, 3, 4, 5, 6]).into(),
        };
        let mut staging = vec![0xEEu8; 8];
        let refused = fill_staging(&rgb, texture, &mut (&mut staging[..]).into(), 8);
        assert!(refused.is_err());
        assert_eq!(staging, [0xEE; 8]);
    }

    #[test]
    fn choices_say_what_they_lose() {
        let u16 = info(4, SampleType::U16);
        let f32 = info(4, SampleType::F32);
        assert_eq!(
            choose(u16, FormatChoice::Auto, true).unwrap().texture,
            wgpu::TextureFormat::Rgba16Unorm
        );
        let fallback = choose(u16, FormatChoice::Auto, false).unwrap();
        assert_eq!(fallback.texture, wgpu::TextureFormat::Rgba16Float);
        assert!(fallback.reduction.is_some());
        assert!(
            choose(f32, FormatChoice::Auto, true)
                .unwrap()
                .reduction
                .is_some()
        );
        assert!(
            choose(f32, FormatChoice::Rgba32f, true)
                .unwrap()
                .reduction
                .is_none()
        );
        assert!(matches!(
            choose(u16, FormatChoice::Rgba16, false),
            Err(PlayError::BadOption {
                field: Field::Format,
                ..
            })
        ));
    }
}
