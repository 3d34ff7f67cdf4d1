//! Sequences written by the format crates themselves, for benchmarks and
//! tests: 8- and 16-bit PNG, and OpenEXR half (ZIP, PIZ) and float, each a
//! smooth picture that moves from frame to frame (so compression behaves as
//! on real plates, neither flat nor noise). Also the crates' own decode of
//! a file into a `Vec`, the baseline our decode path is measured against.

use crate::PlayError;
use exr::prelude::{
    Encoding, Image, Layer, LayerAttributes, ReadChannels, ReadLayers, SpecificChannels, Vec2,
    WritableImage,
};
use half::f16;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A kind of sequence to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// 8-bit RGBA PNG.
    Png8,
    /// 16-bit RGBA PNG.
    Png16,
    /// OpenEXR, half RGBA, ZIP compression.
    ExrHalfZip,
    /// OpenEXR, half RGBA, PIZ compression.
    ExrHalfPiz,
    /// OpenEXR, float RGB, ZIP compression.
    ExrFloat,
}

impl Kind {
    /// Every kind, in table order.
    pub const ALL: [Kind; 5] = [
        Kind::Png8,
        Kind::Png16,
        Kind::ExrHalfZip,
        Kind::ExrHalfPiz,
        Kind::ExrFloat,
    ];

    /// A short name for tables and folder names.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Png8 => "png-8bit",
            Kind::Png16 => "png-16bit",
            Kind::ExrHalfZip => "exr-half-zip",
            Kind::ExrHalfPiz => "exr-half-piz",
            Kind::ExrFloat => "exr-float-zip",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Kind::Png8 | Kind::Png16 => "png",
            _ => "exr",
        }
    }
}

/// Light at pixel (x, y) of frame `f`, channel `c`: a soft diagonal ramp
/// with a bright band sweeping across, scene-linear 0 to about 1.5.
fn light(x: u32, y: u32, c: u32, f: u32, width: u32, height: u32) -> f32 {
    let u = x as f32 / width.max(1) as f32;
    let v = y as f32 / height.max(1) as f32;
    let sweep = ((u + f as f32 * 0.02).fract() - 0.5).abs();
    let band = (1.0 - sweep * 8.0).max(0.0);
    (0.2 + 0.5 * u * (1.0 - v) + band) * [1.0, 0.8, 0.6][c as usize % 3]
}

/// Frame `frame` (from 0) of a sequence written by [`write_sequence`].
pub fn file(dir: &Path, kind: Kind, frame: u32) -> PathBuf {
    dir.join(format!("shot.{:04}.{}", 1001 + frame, kind.extension()))
}

fn io(path: &Path, e: impl std::fmt::Display) -> PlayError {
    PlayError::Write {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

/// Writes `frames` frames of `kind` at `size` into `dir` as
/// `shot.1001.ext`, ..., unless they are there already. Returns the
/// pattern that names them.
pub fn write_sequence(
    dir: &Path,
    kind: Kind,
    frames: u32,
    size: (u32, u32),
) -> Result<PathBuf, PlayError> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let (w, h) = size;
    for f in 0..frames {
        let path = file(dir, kind, f);
        if path.exists() {
            continue;
        }
        // Written under a temporary name and renamed, so an interrupted
        // run never leaves a truncated frame that looks finished.
        let part = path.with_extension(format!("part.{}", kind.extension()));
        match kind {
            Kind::Png8 | Kind::Png16 => write_png(&part, kind, f, size)?,
            Kind::ExrHalfZip | Kind::ExrHalfPiz => {
                let compression = if kind == Kind::ExrHalfZip {
                    exr::compression::Compression::ZIP16
                } else {
                    exr::compression::Compression::PIZ
                };
                let sample = |x, y, c| if c == 3 { 1.0 } else { light(x, y, c, f, w, h) };
                write_exr_half(&part, size, compression, sample)?;
            }
            Kind::ExrFloat => write_exr_float(&part, size, |x, y, c| light(x, y, c, f, w, h))?,
        }
        std::fs::rename(&part, &path).map_err(|e| io(&path, e))?;
    }
    Ok(dir.join(format!("shot.####.{}", kind.extension())))
}

/// Writes an RGBA half-float EXR of `size` with `compression`; channel `c`
/// (0 to 3) of pixel (x, y) is `sample(x, y, c)`, rounded to half.
pub fn write_exr_half(
    path: &Path,
    (w, h): (u32, u32),
    compression: exr::compression::Compression,
    sample: impl Fn(u32, u32, u32) -> f32 + Sync,
) -> Result<(), PlayError> {
    let pixels = |p: Vec2<usize>| {
        let s = |c| f16::from_f32(sample(p.x() as u32, p.y() as u32, c));
        (s(0), s(1), s(2), s(3))
    };
    let encoding = Encoding {
        compression,
        ..Encoding::FAST_LOSSLESS
    };
    let layer = Layer::new(
        (w as usize, h as usize),
        LayerAttributes::default(),
        encoding,
        SpecificChannels::rgba(pixels),
    );
    Image::from_layer(layer)
        .write()
        .to_file(path)
        .map_err(|e| io(path, e))
}

/// Writes an RGB float EXR of `size` (ZIP); channel `c` (0 to 2) of pixel
/// (x, y) is `sample(x, y, c)`.
pub fn write_exr_float(
    path: &Path,
    (w, h): (u32, u32),
    sample: impl Fn(u32, u32, u32) -> f32 + Sync,
) -> Result<(), PlayError> {
    let pixels = |p: Vec2<usize>| {
        let s = |c| sample(p.x() as u32, p.y() as u32, c);
        (s(0), s(1), s(2))
    };
    let layer = Layer::new(
        (w as usize, h as usize),
        LayerAttributes::default(),
        Encoding::FAST_LOSSLESS,
        SpecificChannels::rgb(pixels),
    );
    Image::from_layer(layer)
        .write()
        .to_file(path)
        .map_err(|e| io(path, e))
}

fn write_png(path: &Path, kind: Kind, f: u32, (w, h): (u32, u32)) -> Result<(), PlayError> {
    // Display-referred: the light through a plain 1/2.2 curve.
    let code = |x, y, c| light(x, y, c, f, w, h).clamp(0.0, 1.0).powf(1.0 / 2.2);
    let result = if kind == Kind::Png8 {
        image::RgbaImage::from_fn(w, h, |x, y| {
            let s = |c| (code(x, y, c) * 255.0).round() as u8;
            image::Rgba([s(0), s(1), s(2), 255])
        })
        .save(path)
    } else {
        image::ImageBuffer::<image::Rgba<u16>, Vec<u16>>::from_fn(w, h, |x, y| {
            let s = |c| (code(x, y, c) * 65535.0).round() as u16;
            image::Rgba([s(0), s(1), s(2), 65535])
        })
        .save(path)
    };
    result.map_err(|e| io(path, e))
}

/// The format crate's own decode of one file into a `Vec`, as a user of
/// that crate would write it: `image::open` for PNG, the `exr` crate's
/// first RGBA layer into a `Vec<f16>` or `Vec<f32>`. Returns the bytes
/// decoded.
pub fn crate_decode(path: &Path) -> Result<usize, PlayError> {
    let decode_err = |e: &dyn std::fmt::Display| PlayError::Decode {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("exr"))
    {
        let meta = exr::meta::MetaData::read_from_file(path, false).map_err(|e| decode_err(&e))?;
        let is_half = meta.headers.first().is_some_and(|h| {
            h.channels
                .list
                .iter()
                .all(|c| c.sample_type == exr::meta::attribute::SampleType::F16)
        });
        let bytes = if is_half {
            read_rgba(path, f16::ZERO)
        } else {
            read_rgba(path, 0f32)
        };
        bytes.map_err(|e| decode_err(&e))
    } else {
        let image = image::open(path).map_err(|e| decode_err(&e))?;
        Ok(image.as_bytes().len())
    }
}

/// The first RGBA layer of an EXR file into a `Vec` of `T` samples, the
/// way the crate's documentation reads one. Returns the bytes decoded.
fn read_rgba<T>(path: &Path, zero: T) -> exr::error::Result<usize>
where
    T: exr::block::samples::FromNativeSample + Send + Sync,
{
    let image = exr::prelude::read()
        .no_deep_data()
        .largest_resolution_level()
        .rgba_channels(
            |size, _| (size.width(), vec![zero; size.area() * 4]),
            |(w, out): &mut (usize, Vec<T>), p: Vec2<usize>, (r, g, b, a): (T, T, T, T)| {
                let at = (p.y() * *w + p.x()) * 4;
                out[at..at + 4].copy_from_slice(&[r, g, b, a]);
            },
        )
        .first_valid_layer()
        .all_attributes()
        .from_file(path)?;
    Ok(image.layer_data.channel_data.pixels.1.len() * std::mem::size_of::<T>())
}

/// A 16-bit PCM WAV file of `frames` frames of a quiet ramp whose header
/// says `rate` and `channels`, whatever they are (the hostile headers the
/// sound probe must refuse are made with this too).
pub fn wav_bytes(rate: u32, channels: u16, frames: u32) -> Vec<u8> {
    let data_len = frames.saturating_mul(u32::from(channels)).saturating_mul(2);
    let mut bytes = Vec::with_capacity(44 + data_len as usize);
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&data_len.saturating_add(36).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&channels.to_le_bytes());
    bytes.extend_from_slice(&rate.to_le_bytes());
    let block = u32::from(channels) * 2;
    bytes.extend_from_slice(&rate.wrapping_mul(block).to_le_bytes());
    bytes.extend_from_slice(&(block as u16).to_le_bytes());
    bytes.extend_from_slice(&16u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..data_len / 2 {
        let s = ((i % 64) as i16 - 32) * 64;
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    bytes
}
