//! Decoding through the `image` crate: PNG, TIFF and JPEG.
//!
//! A file keeps its own precision and channels: 8-bit images become
//! [`SampleType::U8`], 16-bit ones [`SampleType::U16`] (never reduced to 8
//! bits) and float TIFFs [`SampleType::F32`], with 1 (grey), 2 (grey and
//! alpha), 3 (RGB) or 4 (RGBA) channels. The decoder writes its pixels,
//! native-endian, straight into the buffer the frame keeps: no conversion and
//! no second copy.
//!
//! The format is told by the file's first bytes, falling back to its
//! extension, so a PNG named `.tif` still decodes.

use super::{Frame, FrameInfo, SampleType};
use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use ::image::{ColorType, ImageDecoder, ImageError, ImageReader};
use std::path::Path;

/// Decodes one file at its own precision.
pub fn decode(path: &Path, buffers: &std::sync::Arc<FrameBuffers>) -> Result<Frame, PlayError> {
    let decoder = open(path)?;
    let info = frame_info(path, &decoder)?;
    let total = decoder.total_bytes();
    let size = usize::try_from(total)
        .ok()
        .filter(|&n| n == info.bytes())
        .ok_or_else(|| PlayError::Unsupported {
            path: path.to_owned(),
            reason: format!(
                "{}x{} pixels of {} bytes do not fit in memory",
                info.width,
                info.height,
                info.channels as usize * info.sample.bytes()
            ),
        })?;
    let mut data = buffers.take(size)?;
    decoder
        .read_image(data.as_mut_slice())
        .map_err(|e| image_error(path, e))?;
    Ok(Frame {
        info,
        data: data.freeze().into(),
    })
}

/// Reads a file's header: its size and pixel layout, without decoding its
/// pixels.
pub fn probe(path: &Path) -> Result<FrameInfo, PlayError> {
    let decoder = open(path)?;
    frame_info(path, &decoder)
}

/// Opens a decoder on `path`, having read the file's header.
fn open(path: &Path) -> Result<impl ImageDecoder, PlayError> {
    let io = |e: std::io::Error| PlayError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    ImageReader::open(path)
        .map_err(io)?
        .with_guessed_format()
        .map_err(io)?
        .into_decoder()
        .map_err(|e| image_error(path, e))
}

/// The frame a decoder will produce.
fn frame_info(path: &Path, decoder: &impl ImageDecoder) -> Result<FrameInfo, PlayError> {
    let (width, height) = decoder.dimensions();
    let (channels, sample) =
        layout(decoder.color_type()).ok_or_else(|| PlayError::Unsupported {
            path: path.to_owned(),
            reason: format!("pixel layout {:?}", decoder.color_type()),
        })?;
    let info = FrameInfo {
        width,
        height,
        channels,
        sample,
        yuv: None,
    };
    super::check_side(path, (info.width, info.height), super::MAX_SIDE)?;
    Ok(info)
}

/// Channels and sample type of a colour type, or `None` for one the player
/// does not take.
fn layout(color: ColorType) -> Option<(u8, SampleType)> {
    Some(match color {
        ColorType::L8 => (1, SampleType::U8),
        ColorType::La8 => (2, SampleType::U8),
        ColorType::Rgb8 => (3, SampleType::U8),
        ColorType::Rgba8 => (4, SampleType::U8),
        ColorType::L16 => (1, SampleType::U16),
        ColorType::La16 => (2, SampleType::U16),
        ColorType::Rgb16 => (3, SampleType::U16),
        ColorType::Rgba16 => (4, SampleType::U16),
        ColorType::Rgb32F => (3, SampleType::F32),
        ColorType::Rgba32F => (4, SampleType::F32),
        _ => return None,
    })
}

/// Our error for what the `image` crate said.
fn image_error(path: &Path, error: ImageError) -> PlayError {
    match error {
        ImageError::IoError(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => PlayError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        },
        ImageError::Unsupported(e) => PlayError::Unsupported {
            path: path.to_owned(),
            reason: e.to_string(),
        },
        other => PlayError::Decode {
            path: path.to_owned(),
            reason: other.to_string(),
        },
    }
}
