//! Where frames come from: image sequences named as artists name them,
//! decoded at the precision they were written in.
//!
//! - [`sequence`]: a folder or a pattern (`shot.####.exr`, `shot.%04d.exr`)
//!   becomes a [`Sequence`]: frame numbers parsed from names, gaps found,
//!   a range applied.
//! - [`decode`] / [`probe`]: one file into a [`Frame`] (or just its
//!   [`FrameInfo`]), through `image` (PNG, JPEG, TIFF) or `exr` (OpenEXR).
//!
//! A frame keeps the channels and sample type of its file: grey stays one
//! channel and RGB three. The decode threads then turn it into the
//! texture's texels ([`crate::convert`]), so the cache holds what the
//! upload copies.

mod exr;
mod frames;
mod gaps;
mod guard;
mod image;
mod jpeg;
#[cfg(feature = "video")]
pub mod movie;
mod natural;
pub mod pattern;
pub mod pixels;
pub mod sequence;

pub use frames::{Frames, SequenceFrames, check_size};
pub use gaps::Gaps;
pub use natural::natural_cmp;
pub use pixels::{Pixels, RowAt};
pub use sequence::{Sequence, SequenceEntry};

use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use crate::yuv::Yuv;
use std::path::Path;

/// How one sample (one channel of one pixel) is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleType {
    /// 8-bit unsigned integer, display-referred.
    U8,
    /// 16-bit unsigned integer, display-referred.
    U16,
    /// IEEE half float (the bits of `half::f16`), scene-linear.
    F16,
    /// IEEE single float, scene-linear.
    F32,
}

impl SampleType {
    /// Bytes of one sample.
    pub fn bytes(self) -> usize {
        match self {
            Self::U8 => 1,
            Self::U16 | Self::F16 => 2,
            Self::F32 => 4,
        }
    }

    /// Whether samples are floating point (scene-linear in our sources).
    pub fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::F32)
    }
}

/// What a frame is, without its pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FrameInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Channels per pixel: 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA).
    pub channels: u8,
    /// How each sample is stored.
    pub sample: SampleType,
    /// `Some` for a Y'CbCr picture (a movie's): its planes packed into one
    /// single-channel texture (see [`crate::yuv`]), `channels` 1, `sample`
    /// U8 or U16; `width` and `height` are the picture's.
    pub yuv: Option<Yuv>,
}

impl FrameInfo {
    /// The size of the texture that holds the frame: the picture's, or
    /// its packed planes'.
    pub fn texture_size(&self) -> (u32, u32) {
        match &self.yuv {
            Some(yuv) => yuv.packing(self.width, self.height).size,
            None => (self.width, self.height),
        }
    }

    /// Bytes of one tightly packed row (of the packed planes, for Y'CbCr).
    pub fn row_bytes(&self) -> usize {
        (self.texture_size().0 as usize)
            .saturating_mul(self.channels as usize * self.sample.bytes())
    }

    /// Bytes of the whole frame, tightly packed (saturating: a frame
    /// [`probe`] passed is at most [`MAX_SIDE`] a side, and fits).
    pub fn bytes(&self) -> usize {
        self.row_bytes()
            .saturating_mul(self.texture_size().1 as usize)
    }
}

/// One decoded frame: tightly packed rows from the top, channels
/// interleaved, samples in native byte order (a movie's planes as its
/// decoder gave them, read as packed: [`Pixels`]).
#[derive(Clone, Debug)]
pub struct Frame {
    /// Its size, channels and sample type.
    pub info: FrameInfo,
    /// `info.bytes()` bytes of pixels.
    pub data: Pixels,
}

impl Frame {
    /// Calls `row` with each of the frame's rows and where it goes in the
    /// packed frame, copying nothing (see [`Pixels::for_each_row`]).
    pub fn for_each_row(&self, row: &mut dyn FnMut(RowAt, &[u8])) {
        let height = self.info.texture_size().1 as usize;
        self.data.for_each_row(self.info.row_bytes(), height, row);
    }

    /// Where the frame starts, if its rows lie in memory exactly as an
    /// upload lays them out in staging: every row of the packed frame
    /// `pitch` bytes after the one above it, each of its pieces at its
    /// place in the row. Only addresses are compared; nothing is read.
    pub fn laid_out_as_staging(&self, pitch: usize) -> Option<*const u8> {
        let mut base: Option<usize> = None;
        let mut holds = true;
        let mut rows = 0usize;
        self.for_each_row(&mut |at, src| {
            let Some(offset) = at.y.checked_mul(pitch).and_then(|o| o.checked_add(at.x)) else {
                holds = false;
                return;
            };
            let address = src.as_ptr() as usize;
            match base {
                None => match address.checked_sub(offset) {
                    Some(start) => base = Some(start),
                    None => holds = false,
                },
                Some(start) => holds &= start.checked_add(offset) == Some(address),
            }
            rows += 1;
        });
        let height = self.info.texture_size().1 as usize;
        (holds && rows >= height && self.info.row_bytes() <= pitch).then_some(base? as *const u8)
    }
}

/// Decodes one image file, choosing the decoder by its extension (`exr`
/// for OpenEXR, the `image` crate for the rest).
pub fn decode(path: &Path) -> Result<Frame, PlayError> {
    decode_into(path, &FrameBuffers::new())
}

/// Decodes one image file into a buffer from `buffers` (the decode threads'
/// way: the buffer is reused once the frame is dropped).
pub fn decode_into(
    path: &Path,
    buffers: &std::sync::Arc<FrameBuffers>,
) -> Result<Frame, PlayError> {
    guard::guarded(path, || {
        if is_exr(path) {
            exr::decode(path, buffers)
        } else {
            image::decode(path, buffers)
        }
    })
}

/// The Y'CbCr format a JPEG file's planes would go up in, where it is one
/// whose planes the player uploads as they are (feature `video`: decoded
/// by FFmpeg, converted to RGB in the render pass); `None` for any other
/// file, or without the feature.
pub fn jpeg_planes(path: &Path) -> Result<Option<Yuv>, PlayError> {
    let is_jpeg = matches!(extension(path).as_deref(), Some("jpg" | "jpeg"));
    if !cfg!(feature = "video") || !is_jpeg {
        return Ok(None);
    }
    jpeg::layout(path)
}

/// Decodes a JPEG file into planes of the Y'CbCr format `expected` says
/// (see [`jpeg_planes`]).
#[cfg(feature = "video")]
pub fn decode_jpeg_planes(
    path: &Path,
    expected: &FrameInfo,
    buffers: &std::sync::Arc<crate::cache::buffers::FrameBuffers>,
) -> Result<Frame, PlayError> {
    guard::guarded(path, || jpeg::planes::decode(path, expected, buffers))
}

/// Reads what a file holds (size, channels, sample type) from its header,
/// without decoding its pixels.
/// A frame larger than [`MAX_SIDE`] a side is refused, before its size
/// is used for anything (decoding refuses it too).
pub fn probe(path: &Path) -> Result<FrameInfo, PlayError> {
    let probe = if is_exr(path) {
        exr::probe
    } else {
        image::probe
    };
    guard::guarded(path, || probe(path))
}

/// Longest side of a frame, in pixels: twice what any GPU's textures
/// take (the device's own limit is checked when its texture is made).
pub const MAX_SIDE: u32 = 65_536;

/// Refuses a frame whose header says it is more than `max_side` pixels
/// a side ([`MAX_SIDE`] for files, so that their sizes never overflow; a
/// device's largest texture for a movie's stream).
fn check_side(path: &Path, (width, height): (u32, u32), max_side: u32) -> Result<(), PlayError> {
    if width > max_side || height > max_side {
        return Err(PlayError::Unsupported {
            path: path.to_owned(),
            reason: format!(
                "its header says {width}x{height} pixels; the player takes at most {max_side} a side"
            ),
        });
    }
    Ok(())
}

/// File extensions the player reads, lower case.
pub const EXTENSIONS: &[&str] = &["exr", "png", "jpg", "jpeg", "tif", "tiff"];

/// Whether `path` names a file the player reads, by its extension.
pub fn is_supported(path: &Path) -> bool {
    extension(path).is_some_and(|e| EXTENSIONS.contains(&e.as_str()))
}

fn is_exr(path: &Path) -> bool {
    extension(path).as_deref() == Some("exr")
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Whether `path` names a movie (by its extension), whether or not this
/// build plays movies (feature `video`).
pub fn is_movie(path: &Path) -> bool {
    const MOVIES: &[&str] = &[
        "mov", "mp4", "m4v", "mkv", "webm", "avi", "mxf", "mpg", "mpeg", "ts", "m2ts", "mts", "y4m",
    ];
    extension(path).is_some_and(|e| MOVIES.contains(&e.as_str()))
}

/// The frame rate a movie was made at, from its header (feature `video`);
/// `None` for anything else, or where the header does not say.
pub fn nominal_rate(path: &Path) -> Option<f64> {
    #[cfg(feature = "video")]
    if is_movie(path) {
        return movie::nominal_rate(path);
    }
    let _ = path;
    None
}
