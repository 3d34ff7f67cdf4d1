//! Decoding through the `exr` crate.
//!
//! # What is read
//!
//! - **Which part and channels.** The first flat (not deep) part whose
//!   channels hold R, G and B, or Y (luminance), is read. Channels are matched
//!   case-insensitively by the last dot-separated component of their name
//!   (`diffuse.R` is an R channel of the layer `diffuse`); within a part the
//!   channels without a layer prefix come first, then the layers in the order
//!   of the channel list. R, G, B (with A if the same layer has one) becomes
//!   3 (4) channels; Y (with A) becomes 1 (2). Other channels (Z, AOVs) are
//!   skipped without being copied.
//! - **Sample type.** Half channels stay half ([`SampleType::F16`], the bits
//!   of `half::f16`) and float channels float ([`SampleType::F32`]); where the
//!   chosen channels mix the two, all become float. 32-bit unsigned integer
//!   channels are [`PlayError::Unsupported`].
//! - **Size.** The frame is the part's *data window*: its size is the data
//!   window's, and its first pixel is the data window's top-left one. The
//!   display window and the data window's offset are not applied (a plate
//!   whose data window differs from its display window plays at the data
//!   window's size).
//! - **Resolution levels.** Only the full-resolution level of a mip- or
//!   rip-mapped file is read; the other levels' blocks are not decompressed.
//! - **Compressions.** Everything the crate decodes: none, RLE, ZIP (1 and 16
//!   lines), PIZ, PXR24, B44, B44A, DWAA and DWAB (the crate decodes DWA since
//!   1.74). HTJ2K is refused from the header, before any pixel is read, with
//!   [`PlayError::Unsupported`] naming it.
//! - **Refused.** Deep data, subsampled channels (luminance-chroma files:
//!   the crate lays their blocks out as if they were full-size) and files with
//!   no RGB or Y channels, all with [`PlayError::Unsupported`], decided from
//!   the header alone; [`probe`] and [`decode`] make the same decision.
//!
//! # How
//!
//! Blocks are decompressed on the crate's thread pool (rayon, which the
//! crate builds for each file it reads in parallel; files stored uncompressed
//! are read on the calling thread), and each decompressed block is written
//! straight into the frame's buffer as it arrives: one pass, channels
//! interleaved on the way, no intermediate image.

use super::{Frame, FrameInfo, SampleType};
use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use exr::block::UncompressedBlock;
use exr::block::reader::{ChunksReader, Reader};
use exr::compression::Compression;
use exr::math::Vec2;
use exr::meta::attribute::{ChannelList, SampleType as ExrSample};
use exr::meta::header::Header;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// Decodes one file at its own precision.
pub fn decode(path: &Path, buffers: &std::sync::Arc<FrameBuffers>) -> Result<Frame, PlayError> {
    let reader = open(path)?;
    let plan = plan(path, reader.headers())?;
    let mut data = buffers.take(plan.info.bytes())?;
    // A reused buffer holds its last frame: a block the file lacks must
    // not show it.
    data.as_mut_slice().fill(0);
    let layer = plan.layer;
    reader
        .filter_chunks(false, |_, _, block| {
            block.layer == layer && block.level == Vec2(0, 0)
        })
        .and_then(|chunks| {
            chunks.decompress_parallel(false, |_, block| {
                interleave(&plan, &block, data.as_mut_slice())
            })
        })
        .map_err(|e| exr_error(path, e))?;
    Ok(Frame {
        info: plan.info,
        data: data.freeze().into(),
    })
}

/// Reads a file's header: the frame [`decode`] would produce, without reading
/// any pixel block.
pub fn probe(path: &Path) -> Result<FrameInfo, PlayError> {
    let reader = open(path)?;
    plan(path, reader.headers()).map(|plan| plan.info)
}

/// Opens `path` and reads its header (its meta data, validated), leaving
/// the pixel blocks unread.
fn open(path: &Path) -> Result<Reader<BufReader<File>>, PlayError> {
    let file = File::open(path).map_err(|e| PlayError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    exr::block::read(BufReader::new(file), false).map_err(|e| exr_error(path, e))
}

/// What to read from a file, decided from its header.
#[derive(Debug)]
struct Plan {
    /// The part (header) read.
    layer: usize,
    /// The frame produced.
    info: FrameInfo,
    /// The channels read, in output order: where each one's line starts in
    /// a row of a block, in bytes per pixel of the block's width (the bytes
    /// of the channels before it in the file's order), and how it is stored.
    sources: Vec<(usize, ExrSample)>,
    /// Bytes of one pixel of all the part's channels: a block row is this
    /// many bytes per pixel of the block's width.
    file_pixel: usize,
}

/// Chooses the part, channels and sample type to read, or says why the file
/// cannot be played.
fn plan(path: &Path, headers: &[Header]) -> Result<Plan, PlayError> {
    let unsupported = |reason: String| PlayError::Unsupported {
        path: path.to_owned(),
        reason,
    };
    let mut names = Vec::new();
    let mut flat = false;
    for (layer, header) in headers.iter().enumerate() {
        if header.deep {
            continue;
        }
        flat = true;
        let Some(chosen) = choose_channels(&header.channels) else {
            names.extend(header.channels.list.iter().map(|c| c.name.to_string()));
            continue;
        };
        let plan = plan_layer(layer, header, &chosen).map_err(unsupported)?;
        super::check_side(path, (plan.info.width, plan.info.height), super::MAX_SIDE)?;
        return Ok(plan);
    }
    Err(unsupported(unreadable_reason(flat, &names)))
}

/// Why no part of a file can be read: all its parts are deep, or none has
/// RGB or Y channels (`names`: the channels the flat parts have).
fn unreadable_reason(flat: bool, names: &[String]) -> String {
    if !flat {
        return "deep data (the player reads flat images only)".into();
    }
    format!("no RGB or Y channels (it has: {})", names.join(", "))
}

/// Refuses what the player does not read in a part: HTJ2K compression,
/// subsampled channels, 32-bit unsigned integers among those `chosen`.
fn check_layer(header: &Header, chosen: &[usize]) -> Result<(), String> {
    check_compression(&header.compression)?;
    let list = &header.channels.list;
    if let Some(c) = list.iter().find(|c| c.sampling != Vec2(1, 1)) {
        return Err(format!(
            "subsampled channels (channel {} is sampled every {}x{} pixels)",
            c.name, c.sampling.0, c.sampling.1
        ));
    }
    if let Some(c) = chosen
        .iter()
        .map(|&i| &list[i])
        .find(|c| c.sample_type == ExrSample::U32)
    {
        return Err(format!("channel {} holds 32-bit unsigned integers", c.name));
    }
    Ok(())
}

/// Refuses a compression the player does not read (HTJ2K).
fn check_compression(compression: &Compression) -> Result<(), String> {
    // Every compression named, so a new one is a decision, not a default.
    match compression {
        Compression::Uncompressed
        | Compression::RLE
        | Compression::ZIP1
        | Compression::ZIP16
        | Compression::PIZ
        | Compression::PXR24
        | Compression::B44
        | Compression::B44A
        | Compression::DWAA(_)
        | Compression::DWAB(_) => Ok(()),
        Compression::HTJ2K32 | Compression::HTJ2K256 => {
            Err("HTJ2K compression is not supported".into())
        }
    }
}

/// The plan for reading `chosen` (channel indices, in output order) from one
/// part, or why it cannot be read.
fn plan_layer(layer: usize, header: &Header, chosen: &[usize]) -> Result<Plan, String> {
    check_layer(header, chosen)?;
    let list = &header.channels.list;
    let info = layer_info(header, chosen)?;
    let before = |i: usize| -> usize {
        list[..i]
            .iter()
            .map(|c| c.sample_type.bytes_per_sample())
            .sum()
    };
    let sources = chosen
        .iter()
        .map(|&i| (before(i), list[i].sample_type))
        .collect();
    Ok(Plan {
        layer,
        info,
        sources,
        file_pixel: before(list.len()),
    })
}

/// The frame read from `chosen` channels of one part: its data window's
/// size, half samples where every chosen channel is half, else float.
fn layer_info(header: &Header, chosen: &[usize]) -> Result<FrameInfo, String> {
    let list = &header.channels.list;
    let sample = if chosen
        .iter()
        .all(|&i| list[i].sample_type == ExrSample::F16)
    {
        SampleType::F16
    } else {
        SampleType::F32
    };
    let size = |n: usize| u32::try_from(n).map_err(|_| format!("data window {n} pixels wide"));
    Ok(FrameInfo {
        width: size(header.layer_size.0)?,
        height: size(header.layer_size.1)?,
        channels: chosen.len() as u8,
        sample,
        yuv: None,
    })
}

/// The channels to read from a part, in output order (R, G, B[, A] or
/// Y[, A]), as indices into its channel list; `None` if it has neither RGB
/// nor Y. Channels without a layer prefix are preferred, then layers in the
/// order their first channel appears.
fn choose_channels(channels: &ChannelList) -> Option<Vec<usize>> {
    let names: Vec<String> = channels.list.iter().map(|c| c.name.to_string()).collect();
    let split = |name: &str| -> (String, String) {
        match name.rsplit_once('.') {
            Some((layer, channel)) => (layer.to_owned(), channel.to_owned()),
            None => (String::new(), name.to_owned()),
        }
    };
    let parts: Vec<(String, String)> = names.iter().map(|n| split(n)).collect();
    layers_in(&parts)
        .into_iter()
        .find_map(|layer| layer_channels(&parts, layer))
}

/// The layers of a part's channels (each split into layer and channel
/// name): the channels without a prefix first, then each layer in the
/// order its first channel appears.
fn layers_in(parts: &[(String, String)]) -> Vec<&str> {
    let mut layers: Vec<&str> = Vec::new();
    if parts.iter().any(|(layer, _)| layer.is_empty()) {
        layers.push("");
    }
    for (layer, _) in parts {
        if !layers.contains(&layer.as_str()) {
            layers.push(layer);
        }
    }
    layers
}

/// The channels of one layer to read, in output order (R, G, B[, A] or
/// Y[, A]); `None` if it has neither RGB nor Y.
fn layer_channels(parts: &[(String, String)], layer: &str) -> Option<Vec<usize>> {
    let find = |want: &str| {
        parts
            .iter()
            .position(|(l, c)| l == layer && c.eq_ignore_ascii_case(want))
    };
    let alpha = find("A");
    let mut chosen = match (find("R"), find("G"), find("B"), find("Y")) {
        (Some(r), Some(g), Some(b), _) => vec![r, g, b],
        (_, _, _, Some(y)) => vec![y],
        _ => return None,
    };
    chosen.extend(alpha);
    Some(chosen)
}

/// Writes the chosen channels of one decompressed block into the frame.
///
/// A block holds rows of pixels; each row holds one line per channel, in
/// the file's channel order (subsampled channels are refused, so every line
/// is the block's width). Each frame row is written once, all its channels
/// interleaved in one pass.
fn interleave(plan: &Plan, block: &UncompressedBlock, out: &mut [u8]) -> exr::error::UnitResult {
    let src_row = block_row_bytes(plan, block)?;
    let width = plan.info.width as usize;
    let pixel = plan.info.channels as usize * plan.info.sample.bytes();
    let Vec2(x, y) = block.index.pixel_position;
    let Vec2(w, h) = block.index.pixel_size;
    let same = plan
        .sources
        .iter()
        .all(|&(_, stored)| stored.bytes_per_sample() == plan.info.sample.bytes());
    for (r, src) in block.data.chunks_exact(src_row.max(1)).take(h).enumerate() {
        let start = ((y + r) * width + x) * pixel;
        let dst = &mut out[start..start + w * pixel];
        let mut lines: [&[u8]; 4] = [&[]; 4];
        for (line, &(before, stored)) in lines.iter_mut().zip(&plan.sources) {
            let at = w * before;
            *line = &src[at..at + w * stored.bytes_per_sample()];
        }
        interleave_lines(dst, lines, plan, same);
    }
    Ok(())
}

/// Checks that a block lies inside the data window and holds the bytes its
/// channels need; the bytes of one of its rows.
fn block_row_bytes(plan: &Plan, block: &UncompressedBlock) -> Result<usize, exr::error::Error> {
    let invalid = |what: &'static str| exr::error::Error::Invalid(what.into());
    let width = plan.info.width as usize;
    let height = plan.info.height as usize;
    let Vec2(x, y) = block.index.pixel_position;
    let Vec2(w, h) = block.index.pixel_size;
    if x > width || w > width - x || y > height || h > height - y {
        return Err(invalid("a block lies outside the data window"));
    }
    let src_row = w * plan.file_pixel;
    if block.data.len() != src_row * h {
        return Err(invalid("a block's size does not match its channels"));
    }
    Ok(src_row)
}

/// Writes one row's channel lines into `dst` as pixels: copied where every
/// channel is stored at the frame's sample size (`same`), widened where not.
fn interleave_lines(dst: &mut [u8], lines: [&[u8]; 4], plan: &Plan, same: bool) {
    match (same, plan.info.sample.bytes(), plan.sources.len()) {
        (true, 2, 1) => interleave_row::<1, 2>(dst, [lines[0]]),
        (true, 2, 2) => interleave_row::<2, 2>(dst, [lines[0], lines[1]]),
        (true, 2, 3) => interleave_row::<3, 2>(dst, [lines[0], lines[1], lines[2]]),
        (true, 2, 4) => interleave_row::<4, 2>(dst, lines),
        (true, 4, 1) => interleave_row::<1, 4>(dst, [lines[0]]),
        (true, 4, 2) => interleave_row::<2, 4>(dst, [lines[0], lines[1]]),
        (true, 4, 3) => interleave_row::<3, 4>(dst, [lines[0], lines[1], lines[2]]),
        (true, 4, 4) => interleave_row::<4, 4>(dst, lines),
        _ => widen_row(dst, &lines[..plan.sources.len()], &plan.sources),
    }
}

/// Interleaves `N` lines of `S`-byte samples into a row of pixels.
fn interleave_row<const N: usize, const S: usize>(dst: &mut [u8], lines: [&[u8]; N]) {
    let n = dst.len() / (N * S);
    let lines = lines.map(|line| &line[..n * S]);
    for (i, pixel) in dst.chunks_exact_mut(N * S).enumerate() {
        for (k, line) in lines.iter().enumerate() {
            pixel[k * S..(k + 1) * S].copy_from_slice(&line[i * S..(i + 1) * S]);
        }
    }
}

/// Interleaves half and float lines into a row of float pixels, widening
/// the halves.
fn widen_row(dst: &mut [u8], lines: &[&[u8]], sources: &[(usize, ExrSample)]) {
    let pixel = lines.len() * 4;
    for (k, (line, &(_, stored))) in lines.iter().zip(sources).enumerate() {
        let pixels = dst.chunks_exact_mut(pixel);
        match stored {
            ExrSample::F16 => {
                for (px, src) in pixels.zip(line.chunks_exact(2)) {
                    let bits = u16::from_ne_bytes([src[0], src[1]]);
                    let value = half::f16::from_bits(bits).to_f32();
                    px[k * 4..k * 4 + 4].copy_from_slice(&value.to_ne_bytes());
                }
            }
            _ => {
                for (px, src) in pixels.zip(line.chunks_exact(4)) {
                    px[k * 4..k * 4 + 4].copy_from_slice(src);
                }
            }
        }
    }
}

/// Our error for what the `exr` crate said.
fn exr_error(path: &Path, error: exr::error::Error) -> PlayError {
    use exr::error::Error;
    match error {
        Error::Io(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => PlayError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        },
        Error::NotSupported(reason) => PlayError::Unsupported {
            path: path.to_owned(),
            reason: reason.into_owned(),
        },
        other => PlayError::Decode {
            path: path.to_owned(),
            reason: other.to_string(),
        },
    }
}
