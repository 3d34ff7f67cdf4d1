//! Texture formats: which one a source gets (`--format`), what precision
//! that costs, and the copy of a decoded frame into staging memory that
//! expands grey and RGB to RGBA and converts samples on the way.

use crate::PlayError;
use crate::source::{Frame, FrameInfo, SampleType};
use half::f16;
use serde::Serialize;

/// The texture format asked for (`--format`).
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
    use wgpu::TextureFormat as T;
    if let Some(yuv) = source.yuv {
        // A movie's planes go up as the decoder made them, every code
        // value exact, and become RGB in the render pass.
        if choice != FormatChoice::Auto {
            return Err(PlayError::InvalidOption(
                "--format is for image sequences: a movie's Y'CbCr planes are uploaded as decoded and converted on the GPU".into(),
            ));
        }
        // Normalised, so the sampler filters them; 16-bit integers
        // (read texel by texel) where the device has no 16-bit
        // normalised textures.
        let texture = match (yuv.bits > 8, has_16bit_norm) {
            (false, _) => T::R8Unorm,
            (true, true) => T::R16Unorm,
            (true, false) => T::R16Uint,
        };
        return Ok(FormatPlan {
            texture,
            source,
            reduction: None,
        });
    }
    let sample = source.sample;
    let (texture, reduction): (T, Option<&str>) = match (choice, sample) {
        (FormatChoice::Auto, SampleType::U8) => (T::Rgba8Unorm, None),
        (FormatChoice::Auto, SampleType::U16) if has_16bit_norm => (T::Rgba16Unorm, None),
        (FormatChoice::Auto, SampleType::U16) => (
            T::Rgba16Float,
            Some(
                "16-bit integers stored as half floats (11 significant bits): the adapter has no 16-bit normalised textures",
            ),
        ),
        (FormatChoice::Auto, SampleType::F16) => (T::Rgba16Float, None),
        (FormatChoice::Auto, SampleType::F32) => (
            T::Rgba16Float,
            Some("32-bit floats stored as half floats (--format rgba32f keeps them whole)"),
        ),
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
            return Err(PlayError::InvalidOption(
                "--format rgba16: this adapter has no 16-bit normalised textures (TEXTURE_FORMAT_16BIT_NORM); use rgba16f".into(),
            ));
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
    };
    Ok(FormatPlan {
        texture,
        source,
        reduction: reduction.map(str::to_owned),
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

/// One sample, read from a frame as the texture format wants it.
trait Target: Copy {
    const ONE: Self;
    const SIZE: usize;
    fn from_u8(v: u8) -> Self;
    fn from_u16(v: u16) -> Self;
    fn from_f16(v: f16) -> Self;
    fn from_f32(v: f32) -> Self;
    fn put(self, out: &mut [u8]);
}

impl Target for u8 {
    const ONE: Self = u8::MAX;
    const SIZE: usize = 1;
    fn from_u8(v: u8) -> Self {
        v
    }
    fn from_u16(v: u16) -> Self {
        // Rounds to nearest: v * 255 / 65535 = v / 257.
        ((u32::from(v) + 128) / 257) as u8
    }
    fn from_f16(v: f16) -> Self {
        Self::from_f32(v.to_f32())
    }
    fn from_f32(v: f32) -> Self {
        (v.clamp(0.0, 1.0) * 255.0).round() as u8
    }
    fn put(self, out: &mut [u8]) {
        out[0] = self;
    }
}

impl Target for u16 {
    const ONE: Self = u16::MAX;
    const SIZE: usize = 2;
    fn from_u8(v: u8) -> Self {
        u16::from(v) * 257
    }
    fn from_u16(v: u16) -> Self {
        v
    }
    fn from_f16(v: f16) -> Self {
        Self::from_f32(v.to_f32())
    }
    fn from_f32(v: f32) -> Self {
        (v.clamp(0.0, 1.0) * 65535.0).round() as u16
    }
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}

impl Target for f16 {
    const ONE: Self = f16::ONE;
    const SIZE: usize = 2;
    fn from_u8(v: u8) -> Self {
        f16::from_f32(f32::from(v) / 255.0)
    }
    fn from_u16(v: u16) -> Self {
        f16::from_f32(f32::from(v) / 65535.0)
    }
    fn from_f16(v: f16) -> Self {
        v
    }
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_bits().to_ne_bytes());
    }
}

impl Target for f32 {
    const ONE: Self = 1.0;
    const SIZE: usize = 4;
    fn from_u8(v: u8) -> Self {
        f32::from(v) / 255.0
    }
    fn from_u16(v: u16) -> Self {
        f32::from(v) / 65535.0
    }
    fn from_f16(v: f16) -> Self {
        v.to_f32()
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_ne_bytes());
    }
}

fn read<T: Target>(sample: SampleType, b: &[u8]) -> T {
    match sample {
        SampleType::U8 => T::from_u8(b[0]),
        SampleType::U16 => T::from_u16(u16::from_ne_bytes([b[0], b[1]])),
        SampleType::F16 => T::from_f16(f16::from_bits(u16::from_ne_bytes([b[0], b[1]]))),
        SampleType::F32 => T::from_f32(f32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
    }
}

/// Converts one source row into one RGBA row of `T` samples.
fn convert_row<T: Target>(info: &FrameInfo, src: &[u8], dst: &mut [u8]) {
    let s = info.sample.bytes();
    let channels = info.channels as usize;
    let px_in = s * channels;
    for (px, out) in src
        .chunks_exact(px_in)
        .zip(dst.chunks_exact_mut(4 * T::SIZE))
    {
        let c = |i: usize| read::<T>(info.sample, &px[i * s..]);
        let rgba = match channels {
            1 => {
                let g = c(0);
                [g, g, g, T::ONE]
            }
            2 => {
                let g = c(0);
                [g, g, g, c(1)]
            }
            3 => [c(0), c(1), c(2), T::ONE],
            _ => [c(0), c(1), c(2), c(3)],
        };
        for (v, o) in rgba.into_iter().zip(out.chunks_exact_mut(T::SIZE)) {
            v.put(o);
        }
    }
}

/// Whether `frame`'s rows are already texels of `texture`: RGBA at the
/// texture's precision, or packed Y'CbCr planes.
fn is_identity(info: &FrameInfo, texture: wgpu::TextureFormat) -> bool {
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

/// Writes `frame` into staging memory as RGBA texels of `texture`, one
/// row every `pitch` bytes: a plain copy of each row where the frame is
/// already RGBA at the texture's precision, else one conversion pass.
pub fn fill_staging(
    frame: &Frame,
    texture: wgpu::TextureFormat,
    out: &mut wgpu::WriteOnly<'_, [u8]>,
    pitch: usize,
) {
    let info = &frame.info;
    let (width, height) = info.texture_size();
    let src_row = info.row_bytes();
    let dst_row = width as usize * texel_bytes(texture);
    let rows = frame.data.chunks_exact(src_row).take(height as usize);
    if is_identity(info, texture) {
        for (y, row) in rows.enumerate() {
            out.slice(y * pitch..y * pitch + dst_row)
                .copy_from_slice(row);
        }
        return;
    }
    let mut converted = vec![0u8; dst_row];
    let mut scratch = Scratch::default();
    for (y, row) in rows.enumerate() {
        if !scratch.floats_to_halves(info, texture, row, &mut converted) {
            convert_into(info, texture, row, &mut converted);
        }
        out.slice(y * pitch..y * pitch + dst_row)
            .copy_from_slice(&converted);
    }
}

/// Row buffers for the float-to-half path, reused from row to row.
#[derive(Default)]
struct Scratch {
    rgba: Vec<f32>,
    halves: Vec<f16>,
}

impl Scratch {
    /// The common float EXR case, float samples into a half-float
    /// texture, done a row at a time: expand to RGBA floats, then convert
    /// the whole row with the `half` crate's slice conversion (vectorised
    /// where the CPU has F16C) instead of sample by sample. Returns
    /// `false` for any other pair, which the general path converts.
    fn floats_to_halves(
        &mut self,
        info: &FrameInfo,
        texture: wgpu::TextureFormat,
        src: &[u8],
        dst: &mut [u8],
    ) -> bool {
        use half::slice::HalfFloatSliceExt;
        if info.sample != SampleType::F32 || texture != wgpu::TextureFormat::Rgba16Float {
            return false;
        }
        let width = info.width as usize;
        let channels = info.channels as usize;
        self.rgba.clear();
        self.rgba.reserve(width * 4);
        for px in src.chunks_exact(4 * channels).take(width) {
            let c = |i: usize| {
                f32::from_ne_bytes([px[4 * i], px[4 * i + 1], px[4 * i + 2], px[4 * i + 3]])
            };
            let rgba = match channels {
                1 => [c(0), c(0), c(0), 1.0],
                2 => [c(0), c(0), c(0), c(1)],
                3 => [c(0), c(1), c(2), 1.0],
                _ => [c(0), c(1), c(2), c(3)],
            };
            self.rgba.extend_from_slice(&rgba);
        }
        self.halves.resize(self.rgba.len(), f16::ZERO);
        self.halves.convert_from_f32_slice(&self.rgba);
        for (h, out) in self.halves.iter().zip(dst.chunks_exact_mut(2)) {
            out.copy_from_slice(&h.to_bits().to_ne_bytes());
        }
        true
    }
}

/// Converts one source row into RGBA texels of `texture`.
pub fn convert_into(info: &FrameInfo, texture: wgpu::TextureFormat, src: &[u8], dst: &mut [u8]) {
    match texture {
        wgpu::TextureFormat::Rgba8Unorm => convert_row::<u8>(info, src, dst),
        wgpu::TextureFormat::Rgba16Unorm => convert_row::<u16>(info, src, dst),
        wgpu::TextureFormat::Rgba16Float => convert_row::<f16>(info, src, dst),
        _ => convert_row::<f32>(info, src, dst),
    }
}

/// A whole frame as tightly packed RGBA texels of `texture`: what the
/// texture holds once the frame lands (tests compare read-backs with it).
pub fn to_texels(frame: &Frame, texture: wgpu::TextureFormat) -> Vec<u8> {
    let info = &frame.info;
    let dst_row = info.width as usize * texel_bytes(texture);
    let mut out = vec![0u8; dst_row * info.height as usize];
    for (src, dst) in frame
        .data
        .chunks_exact(info.row_bytes())
        .zip(out.chunks_exact_mut(dst_row))
    {
        convert_into(info, texture, src, dst);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

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
    fn grey_and_rgb_expand_with_opaque_alpha() {
        let grey = Frame {
            info: info(1, SampleType::U8),
            data: Bytes::from_static(&[10, 200]),
        };
        assert_eq!(
            to_texels(&grey, wgpu::TextureFormat::Rgba8Unorm),
            [10, 10, 10, 255, 200, 200, 200, 255]
        );
        let rgb16: Vec<u8> = [1u16, 2, 3, 65535, 0, 7]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let frame = Frame {
            info: info(3, SampleType::U16),
            data: Bytes::from(rgb16),
        };
        let texels = to_texels(&frame, wgpu::TextureFormat::Rgba16Unorm);
        let values: Vec<u16> = texels
            .chunks_exact(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(values, [1, 2, 3, 65535, 65535, 0, 7, 65535]);
    }

    #[test]
    fn half_floats_keep_their_bits() {
        let bits = [0x3C00u16, 0x7BFF, 0x0001, 0xC000];
        let data: Vec<u8> = bits.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let frame = Frame {
            info: FrameInfo {
                width: 1,
                height: 1,
                channels: 4,
                sample: SampleType::F16,
                yuv: None,
            },
            data: Bytes::from(data.clone()),
        };
        assert_eq!(to_texels(&frame, wgpu::TextureFormat::Rgba16Float), data);
    }

    #[test]
    fn the_float_to_half_row_path_matches_the_sample_path() {
        let values = [0.0f32, 1.0, -2.5, 65504.0, 1e-8, 0.18, 7.0e5, f32::NAN];
        for channels in 1..=4u8 {
            let info = FrameInfo {
                width: 2,
                height: 1,
                channels,
                sample: SampleType::F32,
                yuv: None,
            };
            let src: Vec<u8> = values
                .iter()
                .cycle()
                .take(2 * channels as usize)
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            let mut fast = vec![0u8; 16];
            let mut slow = vec![0u8; 16];
            let texture = wgpu::TextureFormat::Rgba16Float;
            assert!(Scratch::default().floats_to_halves(&info, texture, &src, &mut fast));
            convert_into(&info, texture, &src, &mut slow);
            assert_eq!(fast, slow, "{channels} channel(s)");
        }
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
            Err(PlayError::InvalidOption(_))
        ));
    }
}
