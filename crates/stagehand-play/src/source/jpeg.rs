//! JPEG files as the Y'CbCr planes they hold.
//!
//! A JPEG stores luma and two chroma planes, the chroma usually at half
//! resolution. Decoded to RGB, a 3840x2160 4:2:0 frame becomes 24.9 MB
//! (33.2 MB as RGBA texels) after the decoder has upsampled chroma and
//! converted every pixel on the CPU; left as planes it is 12.4 MB, and the
//! render pass converts it as it draws, as it does a movie's frames
//! ([`crate::yuv`]). Profiled in a 1920x1080 window on lavapipe, the RGB
//! path spent more of the player's CPU on the colour conversion, the
//! expansion to RGBA, and the page faults and copies of frames three
//! times the size, than on decoding. The render pass pays for the
//! conversion instead: on a software rasteriser its three filtered samples
//! a pixel cost about what the CPU saves in one pass, and more in a loop,
//! which draws each frame again; what stays is a frame 2.7 times smaller
//! in the cache and in every upload.
//!
//! [`layout`] reads a file's segments up to its first scan (no pixel
//! decoded) and says whether it is planes this path takes: three
//! components, Y'CbCr, 8 bits, sampling factors of 1 and 2 with luma
//! sampled 1x1, 2x1 or 2x2 against chroma (4:4:4, 4:2:2, 4:2:0), and no
//! segment that makes FFmpeg's decoder give anything else (Adobe's RGB
//! transform, a video-range or bottom-up comment, 9-bit lossless).
//! Anything else (grey, CMYK, 4:1:1, 12-bit, those segments) goes through
//! the `image` crate as before. The planes are decoded by FFmpeg's JPEG
//! decoder (feature `video`), a decoder for each file, writing into the
//! player's recycled frame buffers (`movie/frame_memory.rs`: a decoder's
//! own memory would be new for every file), the frame holding those
//! planes with no copy ([`Pixels::Planes`](super::Pixels)).

use crate::PlayError;
use crate::yuv::{Chroma, Matrix, Range, Siting, Yuv};
use std::io::{BufReader, Read};
use std::path::Path;

/// How far into a file its first scan is looked for: metadata segments
/// (EXIF, ICC profiles, thumbnails) come first and may be large; a file
/// whose frame header lies further goes through the `image` crate.
const HEADER_WITHIN: u64 = 16 << 20;

/// The Y'CbCr format of `path`'s planes where this path takes them (see
/// the module's notes), `None` where the file is a JPEG of another kind.
/// An unreadable file is an I/O error; a damaged header, `None` (the
/// `image` crate then says what is wrong with it).
pub fn layout(path: &Path) -> Result<Option<Yuv>, PlayError> {
    let file = std::fs::File::open(path).map_err(|e| PlayError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(read_layout(&mut BufReader::new(file)).map(yuv))
}

/// The Y'CbCr format of a JPEG's planes of `chroma`: JFIF's matrix
/// (BT.601) and full range, chroma centred between luma samples.
pub fn yuv(chroma: Chroma) -> Yuv {
    Yuv {
        chroma,
        bits: 8,
        matrix: Matrix::Bt601,
        range: Range::Full,
        siting: Siting::Center,
    }
}

/// Walks the marker segments of a JPEG up to its first scan; the
/// subsampling of a three-component 8-bit Y'CbCr frame whose segments ask
/// FFmpeg's decoder for nothing else, else `None`. Every segment before
/// the scan is read, not only those before the frame header: a comment or
/// an application segment after it still changes how FFmpeg decodes.
fn read_layout(r: &mut impl Read) -> Option<Chroma> {
    let mut marker = [0u8; 2];
    r.read_exact(&mut marker).ok()?;
    if marker != [0xff, 0xd8] {
        return None;
    }
    let (mut read, mut chroma, mut other) = (2u64, None, false);
    loop {
        if read > HEADER_WITHIN {
            return None;
        }
        let kind = next_marker(r, &mut read)?;
        match kind {
            // Markers without a length.
            0x01 | 0xd0..=0xd7 => continue,
            // The first scan: everything that decides the decode is known.
            0xda => return chroma.filter(|_| !other),
            // The image ended before a scan.
            0xd9 => return None,
            _ => {}
        }
        let mut len = [0u8; 2];
        r.read_exact(&mut len).ok()?;
        let body = u64::from(u16::from_be_bytes(len)).checked_sub(2)?;
        read += 2 + body;
        match kind {
            // Baseline, extended and progressive Huffman-coded frames:
            // what FFmpeg's decoder reads.
            0xc0..=0xc2 => {
                let sof = segment(r, body)?;
                chroma = chroma.or(Some(frame_chroma(&sof)?));
            }
            // Any other frame kind (lossless, arithmetic-coded).
            0xc3 | 0xc5..=0xc7 | 0xc9..=0xcb | 0xcd..=0xcf => return None,
            // Application segments and comments FFmpeg's decoder acts on.
            0xe0..=0xef | 0xfe => other |= asks_otherwise(kind, &segment(r, body)?),
            _ => {
                std::io::copy(&mut r.by_ref().take(body), &mut std::io::sink()).ok()?;
            }
        }
    }
}

/// The kind of the next marker, past any fill bytes; `read` counts the
/// bytes taken.
fn next_marker(r: &mut impl Read, read: &mut u64) -> Option<u8> {
    let mut byte = [0u8; 1];
    r.read_exact(&mut byte).ok()?;
    *read += 1;
    if byte[0] != 0xff {
        return None;
    }
    loop {
        r.read_exact(&mut byte).ok()?;
        *read += 1;
        if byte[0] != 0xff {
            return Some(byte[0]);
        }
        if *read > HEADER_WITHIN {
            return None;
        }
    }
}

/// A segment's `len` bytes (at most 65533: a length is 16 bits).
fn segment(r: &mut impl Read, len: u64) -> Option<Vec<u8>> {
    let mut body = vec![0u8; usize::try_from(len).ok()?];
    r.read_exact(&mut body).ok()?;
    Some(body)
}

/// Whether segment `kind` with `body` makes FFmpeg's decoder give other
/// than full-range Y'CbCr as the file's frame header describes it: Adobe's
/// segment with transform 0 (RGB components; FFmpeg reads it from any
/// application segment), a `CS=ITU601` comment (video range), a Metasoft
/// comment (rows bottom up), Pegasus' lossless segment (9-bit samples).
fn asks_otherwise(kind: u8, body: &[u8]) -> bool {
    match kind {
        0xfe => body.starts_with(b"CS=ITU601") || body.starts_with(b"Metasoft MJPEG Codec"),
        _ => (body.starts_with(b"Adobe") && body.get(11) == Some(&0)) || body.starts_with(b"LJIF"),
    }
}

/// The subsampling a frame header's body (after its length) describes,
/// where it is 8 bits and three components, the two chroma components
/// sampled alike and luma 1x1, 2x1 or 2x2 times as often (factors are
/// relative: FFmpeg writes 4:4:4 as 1x2 for every component); component
/// ids `R`, `G`, `B` mean an RGB JPEG.
fn frame_chroma(sof: &[u8]) -> Option<Chroma> {
    let (&precision, rest) = sof.split_first()?;
    let components = *rest.get(4)?;
    if precision != 8 || components != 3 {
        return None;
    }
    let spec = rest.get(5..5 + 9)?;
    let ids = [spec[0], spec[3], spec[6]];
    if ids == *b"RGB" {
        return None;
    }
    let factors = |c: usize| (spec[c * 3 + 1] >> 4, spec[c * 3 + 1] & 0x0f);
    let ((hy, vy), (hc, vc)) = (factors(0), factors(1));
    // Factors of 1 and 2 only: FFmpeg's decoder takes no others.
    let usable = [hy, vy, hc, vc].iter().all(|f| (1..=2).contains(f));
    if !usable || factors(2) != (hc, vc) || hy % hc != 0 || vy % vc != 0 {
        return None;
    }
    match (hy / hc, vy / vc) {
        (1, 1) => Some(Chroma::S444),
        (2, 1) => Some(Chroma::S422),
        (2, 2) => Some(Chroma::S420),
        _ => None,
    }
}

/// Decoding a JPEG's planes with FFmpeg.
#[cfg(feature = "video")]
pub(super) mod planes {
    use super::super::movie::frame_memory::{self, Lending};
    use super::super::movie::planes as held;
    use super::super::{Frame, FrameInfo};
    use crate::PlayError;
    use crate::cache::buffers::FrameBuffers;
    use ffmpeg_next as ffmpeg;
    use std::path::Path;
    use std::sync::Arc;

    /// Largest JPEG file read whole: 256 MiB, more than a 16-bit 65536
    /// pixel square compresses to at any quality a camera or tool writes.
    const MAX_FILE: u64 = 256 << 20;

    /// Decodes `path` into planes of the Y'CbCr format `expected` says
    /// (a file whose layout differs is refused: a sequence's frames all
    /// share the format of its texture).
    pub fn decode(
        path: &Path,
        expected: &FrameInfo,
        buffers: &Arc<FrameBuffers>,
    ) -> Result<Frame, PlayError> {
        let bytes = read(path)?;
        // A file whose header grew since the sequence was opened is
        // refused by the decoder before it allocates the picture. The
        // decoder checks sizes padded to its blocks and its row alignment
        // (a 321-pixel row is checked as 384): a block of 64 more a side
        // covers both.
        let padded = |side: u32| (u64::from(side.div_ceil(64)) + 1) * 64;
        let pixels = padded(expected.width) * padded(expected.height);
        let decoded =
            decode_bytes(&bytes, pixels, buffers).map_err(|reason| PlayError::Decode {
                path: path.to_owned(),
                reason,
            })?;
        let mut info = held::describe(&decoded).map_err(|reason| PlayError::Decode {
            path: path.to_owned(),
            reason,
        })?;
        if let Some(yuv) = info.yuv.as_mut() {
            // JFIF's matrix, whatever the decoder tags (it tags none).
            yuv.matrix = crate::yuv::Matrix::Bt601;
            yuv.siting = crate::yuv::Siting::Center;
        }
        super::super::check_size(path, expected, &info)?;
        if info.yuv != expected.yuv {
            return Err(PlayError::Unsupported {
                path: path.to_owned(),
                reason: format!(
                    "its planes are {:?}, the sequence's {:?}: the file changed since it was opened",
                    info.yuv, expected.yuv
                ),
            });
        }
        held::hold(&decoded, info).map_err(|reason| PlayError::Decode {
            path: path.to_owned(),
            reason,
        })
    }

    /// The whole file, its size bounded before anything is allocated.
    fn read(path: &Path) -> Result<Vec<u8>, PlayError> {
        let io = |e: std::io::Error| PlayError::Io {
            path: path.to_owned(),
            reason: e.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > MAX_FILE {
            return Err(PlayError::Unsupported {
                path: path.to_owned(),
                reason: format!("a JPEG of {len} bytes; the player reads at most {MAX_FILE}"),
            });
        }
        let mut bytes = Vec::with_capacity(len as usize);
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_FILE), &mut bytes)
            .map_err(io)?;
        Ok(bytes)
    }

    /// One picture of at most `pixels` from the JPEG in `bytes`, through a
    /// decoder of its own (FFmpeg's keeps what one file's segments set:
    /// Huffman tables, video range, rows bottom up, for the next), written
    /// into a buffer from `buffers` (a decoder's own memory would be new
    /// for every file).
    fn decode_bytes(
        bytes: &[u8],
        pixels: u64,
        buffers: &Arc<FrameBuffers>,
    ) -> Result<ffmpeg::frame::Video, String> {
        let mut decoder = open(pixels, buffers)?;
        let mut frame = ffmpeg::frame::Video::empty();
        decoder
            .send_packet(&ffmpeg::Packet::copy(bytes))
            .and_then(|()| decoder.receive_frame(&mut frame))
            .map_err(|e| format!("the JPEG decoder: {e}"))?;
        Ok(frame)
    }

    /// FFmpeg's JPEG decoder on one thread (the player decodes files on
    /// several at once), refusing pictures of more than `pixels`, writing
    /// into `buffers`.
    fn open(pixels: u64, buffers: &Arc<FrameBuffers>) -> Result<Lending, String> {
        super::super::movie::init();
        let codec = ffmpeg::decoder::find(ffmpeg::codec::Id::MJPEG)
            .ok_or("this FFmpeg has no JPEG decoder")?;
        let mut context = ffmpeg::codec::Context::new_with_codec(codec);
        context.set_threading(ffmpeg::codec::threading::Config {
            kind: ffmpeg::codec::threading::Type::Frame,
            count: 1,
            ..Default::default()
        });
        let mut options = ffmpeg::Dictionary::new();
        options.set("max_pixels", &pixels.to_string());
        // A file whose scan ends early is an error, not a picture whose
        // missing rows hold whatever the buffer held (a missing end
        // marker alone, the picture whole, still decodes).
        options.set("err_detect", "explode");
        let as_uploaded = frame_memory::STILL_JPEG_AS_UPLOADED;
        frame_memory::lend(context, buffers, as_uploaded, |context| {
            context
                .decoder()
                .open_as_with(codec, options)
                .and_then(|opened| opened.video())
                .map_err(|e| format!("cannot open the JPEG decoder: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A JPEG's start, an optional Adobe segment, and a frame header of
    /// `components` (id, sampling factors) at `precision` bits.
    fn header(precision: u8, components: &[(u8, u8)], adobe: Option<u8>) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8];
        // A JFIF segment, skipped by its length.
        b.extend([0xff, 0xe0, 0, 16]);
        b.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        if let Some(transform) = adobe {
            b.extend([0xff, 0xee, 0, 14]);
            b.extend(b"Adobe\0\x64\0\0\0\0");
            b.push(transform);
        }
        let len = 8 + 3 * components.len() as u16;
        b.extend([0xff, 0xc0]);
        b.extend(len.to_be_bytes());
        b.extend([precision, 0, 16, 0, 16, components.len() as u8]);
        for &(id, factors) in components {
            b.extend([id, factors, 0]);
        }
        b.extend([0xff, 0xda]);
        b
    }

    /// A 4:2:0 JPEG's header with a segment `kind` holding `body` after
    /// its start.
    fn with_segment(kind: u8, body: &[u8]) -> Vec<u8> {
        let plain = header(8, &[(1, 0x22), (2, 0x11), (3, 0x11)], None);
        let mut b = plain[..2].to_vec();
        b.extend([0xff, kind]);
        b.extend((body.len() as u16 + 2).to_be_bytes());
        b.extend(body);
        b.extend(&plain[2..]);
        b
    }

    /// A 4:2:0 JPEG's header with a segment `kind` holding `body` between
    /// its frame header and its scan.
    fn after_frame_header(kind: u8, body: &[u8]) -> Vec<u8> {
        let plain = header(8, &[(1, 0x22), (2, 0x11), (3, 0x11)], None);
        let scan = plain.len() - 2;
        let mut b = plain[..scan].to_vec();
        b.extend([0xff, kind]);
        b.extend((body.len() as u16 + 2).to_be_bytes());
        b.extend(body);
        b.extend(&plain[scan..]);
        b
    }

    /// A 4:2:0 JPEG's header with fill bytes before its first segment.
    fn fill_before_first_segment() -> Vec<u8> {
        let plain = header(8, &[(1, 0x22), (2, 0x11), (3, 0x11)], None);
        let mut b = plain[..2].to_vec();
        b.extend([0xff, 0xff, 0xff]);
        b.extend(&plain[2..]);
        b
    }

    fn chroma_of(bytes: Vec<u8>) -> Option<Chroma> {
        read_layout(&mut Cursor::new(bytes))
    }

    #[test]
    fn the_subsampling_is_read_from_the_frame_header() {
        let ycc = |y| header(8, &[(1, y), (2, 0x11), (3, 0x11)], None);
        assert_eq!(chroma_of(ycc(0x22)), Some(Chroma::S420));
        assert_eq!(chroma_of(ycc(0x21)), Some(Chroma::S422));
        assert_eq!(chroma_of(ycc(0x11)), Some(Chroma::S444));
        // Factors are relative: every component 1x2 is 4:4:4, luma 2x2
        // against chroma 1x2 is 4:2:2.
        let relative = |y, c| header(8, &[(1, y), (2, c), (3, c)], None);
        assert_eq!(chroma_of(relative(0x12, 0x12)), Some(Chroma::S444));
        assert_eq!(chroma_of(relative(0x22, 0x12)), Some(Chroma::S422));
        // An Adobe segment that says Y'CbCr (transform 1) changes nothing.
        let adobe_ycc = header(8, &[(1, 0x22), (2, 0x11), (3, 0x11)], Some(1));
        assert_eq!(chroma_of(adobe_ycc), Some(Chroma::S420));
        // Other comments and application segments (a Motion-JPEG AVI1
        // segment, Adobe's with transform 1), and fill bytes before a
        // marker, change nothing.
        for bytes in [
            with_segment(0xfe, b"Lavc59.37.100"),
            with_segment(0xe0, b"AVI1\0\0\0\0\0\0\0\0\0\0"),
            after_frame_header(0xed, b"Adobe\0\x64\0\0\0\0\x01"),
            fill_before_first_segment(),
        ] {
            assert_eq!(chroma_of(bytes), Some(Chroma::S420));
        }
    }

    #[test]
    fn jpegs_of_other_kinds_are_not_taken_as_planes() {
        // 4:1:1, 4:4:0, Cb and Cr sampled differently, luma not a whole
        // multiple of chroma, a zero factor, 12 bits, grey, CMYK.
        for bytes in [
            header(8, &[(1, 0x41), (2, 0x11), (3, 0x11)], None),
            header(8, &[(1, 0x12), (2, 0x11), (3, 0x11)], None),
            header(8, &[(1, 0x22), (2, 0x21), (3, 0x11)], None),
            header(8, &[(1, 0x32), (2, 0x21), (3, 0x21)], None),
            header(8, &[(1, 0x22), (2, 0x01), (3, 0x01)], None),
            header(12, &[(1, 0x22), (2, 0x11), (3, 0x11)], None),
            header(8, &[(1, 0x11)], None),
            header(8, &[(1, 0x11), (2, 0x11), (3, 0x11), (4, 0x11)], None),
            // Factors of 4 (FFmpeg's decoder takes 1 and 2 only).
            header(8, &[(1, 0x44), (2, 0x22), (3, 0x22)], None),
            header(8, &[(1, 0x41), (2, 0x21), (3, 0x21)], None),
            // Video range, rows bottom up, 9-bit lossless, RGB by Adobe's
            // segment in any application segment: before the frame header
            // or after it.
            with_segment(0xfe, b"CS=ITU601"),
            after_frame_header(0xfe, b"CS=ITU601"),
            with_segment(0xfe, b"Metasoft MJPEG Codec"),
            with_segment(0xe8, b"LJIF\0\0"),
            with_segment(0xed, b"Adobe\0\x64\0\0\0\0\0"),
            after_frame_header(0xee, b"Adobe\0\x64\0\0\0\0\0"),
            // RGB: by Adobe's transform 0, or by component ids.
            header(8, &[(1, 0x11), (2, 0x11), (3, 0x11)], Some(0)),
            header(8, &[(b'R', 0x11), (b'G', 0x11), (b'B', 0x11)], None),
        ] {
            assert_eq!(chroma_of(bytes), None);
        }
    }

    #[test]
    fn a_damaged_or_foreign_header_is_not_planes_and_never_reads_past_the_end() {
        let good = header(8, &[(1, 0x22), (2, 0x11), (3, 0x11)], None);
        // Cut anywhere before the frame header ends.
        for cut in 0..good.len() - 2 {
            assert_eq!(chroma_of(good[..cut].to_vec()), None, "cut at {cut}");
        }
        // Not a JPEG; a segment length below its own two bytes; a scan
        // before any frame header.
        assert_eq!(chroma_of(b"\x89PNG\r\n\x1a\n".to_vec()), None);
        assert_eq!(chroma_of(vec![0xff, 0xd8, 0xff, 0xe0, 0, 1]), None);
        assert_eq!(chroma_of(vec![0xff, 0xd8, 0xff, 0xda, 0, 2]), None);
    }
}
