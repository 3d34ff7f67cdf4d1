//! A decoded picture's planes, as FFmpeg's decoders give them, packed for
//! the GPU without converting a sample: which pixel formats the player
//! takes, what their tags say, and each plane's rows held where the
//! decoder wrote them, to go into the packed layout of [`crate::yuv`].

use crate::source::pixels::PlaneRows;
use crate::source::{Frame, FrameInfo, Pixels, RowAt, SampleType};
use crate::yuv::{Chroma, Matrix, Packing, Range, Siting, Yuv};
use ffmpeg::format::Pixel;
use ffmpeg_next as ffmpeg;

/// The planar Y'CbCr formats the player reads, each with its subsampling,
/// bits and whether the format itself says full range.
const PLANAR: &[(Pixel, Chroma, u8, bool)] = {
    use Chroma::{S420, S422, S444};
    &[
        (Pixel::YUV420P, S420, 8, false),
        (Pixel::YUVJ420P, S420, 8, true),
        (Pixel::YUV422P, S422, 8, false),
        (Pixel::YUVJ422P, S422, 8, true),
        (Pixel::YUV444P, S444, 8, false),
        (Pixel::YUVJ444P, S444, 8, true),
        (Pixel::YUVA420P, S420, 8, false),
        (Pixel::YUVA444P, S444, 8, false),
        (Pixel::YUV420P10LE, S420, 10, false),
        (Pixel::YUV422P10LE, S422, 10, false),
        (Pixel::YUV444P10LE, S444, 10, false),
        (Pixel::YUVA422P10LE, S422, 10, false),
        (Pixel::YUVA444P10LE, S444, 10, false),
        (Pixel::YUV420P12LE, S420, 12, false),
        (Pixel::YUV422P12LE, S422, 12, false),
        (Pixel::YUV444P12LE, S444, 12, false),
        (Pixel::YUVA444P12LE, S444, 12, false),
        (Pixel::YUV420P16LE, S420, 16, false),
        (Pixel::YUV422P16LE, S422, 16, false),
        (Pixel::YUV444P16LE, S444, 16, false),
    ]
};

/// The subsampling, bits and whether the format itself says full range,
/// of the planar Y'CbCr formats the player reads. An alpha plane (ProRes
/// 4444) is left out.
pub(super) fn planar(format: Pixel) -> Option<(Chroma, u8, bool)> {
    PLANAR
        .iter()
        .find(|entry| entry.0 == format)
        .map(|&(_, chroma, bits, full)| (chroma, bits, full))
}

/// What a decoded frame is: its size and Y'CbCr format, from its pixel
/// format and tags (untagged: BT.709 from HD up, BT.601 below; limited
/// range; chroma sited as MPEG does, or centred for JPEG-range formats).
pub(crate) fn describe(frame: &ffmpeg::frame::Video) -> Result<FrameInfo, String> {
    let format = frame.format();
    let Some((chroma, bits, full)) = planar(format) else {
        return Err(format!(
            "pixel format {format:?}: the player reads planar Y'CbCr 4:2:0, 4:2:2 and 4:4:4 at 8 to 16 bits"
        ));
    };
    let (width, height) = (frame.width(), frame.height());
    if width == 0 || height == 0 {
        return Err(format!("a decoded picture of {width}x{height}"));
    }
    Ok(FrameInfo {
        width,
        height,
        channels: 1,
        sample: if bits > 8 {
            SampleType::U16
        } else {
            SampleType::U8
        },
        yuv: Some(yuv_of(frame, (chroma, bits, full))),
    })
}

/// The Y'CbCr format of a decoded frame whose pixel format has the given
/// subsampling, bits and full-range flag, with its tags applied.
fn yuv_of(frame: &ffmpeg::frame::Video, (chroma, bits, full): (Chroma, u8, bool)) -> Yuv {
    let tags = Tags::of(frame);
    Yuv {
        chroma,
        bits,
        matrix: matrix_of(tags.space, (frame.width(), frame.height())),
        range: range_of(tags.range, full),
        siting: siting_of(tags.siting, full && chroma == Chroma::S420),
    }
}

/// The matrix a colour-space tag names (untagged or unknown: by size).
fn matrix_of(space: i32, (width, height): (u32, u32)) -> Matrix {
    use ffmpeg::ffi::AVColorSpace as S;
    let is = |s: S| space == s as i32;
    if is(S::AVCOL_SPC_BT709) {
        Matrix::Bt709
    } else if is(S::AVCOL_SPC_BT470BG) || is(S::AVCOL_SPC_SMPTE170M) || is(S::AVCOL_SPC_FCC) {
        Matrix::Bt601
    } else if is(S::AVCOL_SPC_BT2020_NCL) || is(S::AVCOL_SPC_BT2020_CL) {
        Matrix::Bt2020
    } else {
        Matrix::untagged(width, height)
    }
}

/// The range a tag names (untagged: full for JPEG-range formats, else
/// limited).
fn range_of(range: i32, full_format: bool) -> Range {
    use ffmpeg::ffi::AVColorRange as R;
    match range {
        v if v == R::AVCOL_RANGE_JPEG as i32 => Range::Full,
        v if v == R::AVCOL_RANGE_MPEG as i32 => Range::Limited,
        _ if full_format => Range::Full,
        _ => Range::Limited,
    }
}

/// The chroma siting a tag names (untagged: centred for JPEG-range 4:2:0,
/// else left, as MPEG sites it).
fn siting_of(siting: i32, centred_if_untagged: bool) -> Siting {
    use ffmpeg::ffi::AVChromaLocation as L;
    let is = |l: L| siting == l as i32;
    if is(L::AVCHROMA_LOC_LEFT) || is(L::AVCHROMA_LOC_BOTTOMLEFT) {
        Siting::Left
    } else if is(L::AVCHROMA_LOC_CENTER) || is(L::AVCHROMA_LOC_BOTTOM) {
        Siting::Center
    } else if is(L::AVCHROMA_LOC_TOPLEFT) || is(L::AVCHROMA_LOC_TOP) {
        Siting::TopLeft
    } else if centred_if_untagged {
        Siting::Center
    } else {
        Siting::Left
    }
}

/// A plane's line size as FFmpeg gives it (its C `int` widened to
/// `usize`): a bottom-up frame's is negative, and comes here as more than
/// `isize::MAX`; such a frame is refused, as a line size of 0 is.
fn row_stride(stride: usize, plane: usize) -> Result<usize, String> {
    if stride == 0 || stride > isize::MAX as usize {
        return Err(format!(
            "plane {plane} has a line size of {}: bottom-up frames are not supported",
            stride as isize
        ));
    }
    Ok(stride)
}

/// Frame `frame` (described by `info`) as the decoder gave it: its planes
/// are referenced, not copied, and go row by row into staging where the
/// packed layout of [`crate::yuv`] puts them. Every plane's line size and
/// length are checked here, before a row is read.
pub(crate) fn hold(frame: &ffmpeg::frame::Video, info: FrameInfo) -> Result<Frame, String> {
    let Some(yuv) = info.yuv else {
        return Err("not a Y'CbCr frame".into());
    };
    let packing = yuv.packing(info.width, info.height);
    if frame.planes() < packing.planes.len() {
        return Err(format!(
            "the decoder gave {} planes of a {}-plane format",
            frame.planes(),
            packing.planes.len()
        ));
    }
    let sample = yuv.sample_bytes();
    let mut strides = [0; 3];
    for (plane, rect) in packing.planes.iter().enumerate() {
        // The stride is checked before the data is touched: the data's
        // slice is built from it.
        strides[plane] = row_stride(frame.stride(plane), plane)?;
        let rows = rect.height as usize;
        let needed = rows
            .saturating_sub(1)
            .saturating_mul(strides[plane])
            .saturating_add(rect.width as usize * sample);
        let held = frame.data(plane).len();
        if rows > 0 && held < needed {
            return Err(format!(
                "plane {plane} holds {held} bytes, short of its {rows} rows"
            ));
        }
    }
    let rows = Held {
        frame: reference(frame)?,
        packing,
        strides,
        sample,
    };
    let height = packing.size.1 as usize;
    Ok(Frame {
        info,
        data: Pixels::planes(rows, info.row_bytes(), height),
    })
}

/// A new reference to `frame`'s buffers (no pixel is copied): the decoder
/// writes its later frames elsewhere, and the buffers go back to its pool
/// when the last reference is dropped.
#[allow(unsafe_code)] // one call of FFmpeg's av_frame_clone; see below
fn reference(frame: &ffmpeg::frame::Video) -> Result<ffmpeg::frame::Video, String> {
    // SAFETY: `as_ptr` is the decoder's live, reference-counted AVFrame,
    // borrowed for this call; av_frame_clone only reads it, and returns a
    // new AVFrame (or null) that owns one more reference to its buffers.
    // `wrap` takes that new frame over: it is freed, its references given
    // back, when the returned value is dropped.
    unsafe {
        let cloned = ffmpeg::ffi::av_frame_clone(frame.as_ptr());
        if cloned.is_null() {
            return Err("out of memory referencing a decoded frame".into());
        }
        Ok(ffmpeg::frame::Video::wrap(cloned))
    }
}

/// A decoded frame's planes, referenced where the decoder wrote them.
struct Held {
    frame: ffmpeg::frame::Video,
    packing: Packing,
    /// Each plane's line size, checked.
    strides: [usize; 3],
    /// Bytes a sample.
    sample: usize,
}

impl PlaneRows for Held {
    fn rows(&self, row: &mut dyn FnMut(RowAt, &[u8])) {
        for (plane, rect) in self.packing.planes.iter().enumerate() {
            let data = self.frame.data(plane);
            let stride = self.strides[plane];
            let width = rect.width as usize * self.sample;
            let x = rect.x as usize * self.sample;
            for r in 0..rect.height as usize {
                // In bounds: `hold` checked the plane's length.
                let src = &data[r * stride..r * stride + width];
                row(
                    RowAt {
                        y: rect.y as usize + r,
                        x,
                    },
                    src,
                );
            }
        }
    }
}

/// A decoded frame's colour tags, as the integers FFmpeg keeps them in.
///
/// A decoder may copy any byte of a file into these fields (ProRes copies
/// its frame header's matrix byte as it is), while ffmpeg-next reads them
/// as Rust enums, and a value outside the enum is undefined behaviour
/// there: a mutated ProRes file crashed the player inside
/// `Video::color_space` (found by `tests/fuzz.rs`, seed 11). Read as
/// integers, a value the player does not know is simply untagged.
struct Tags {
    space: i32,
    range: i32,
    siting: i32,
}

impl Tags {
    #[allow(unsafe_code)] // three integer reads of FFmpeg's frame; see above
    fn of(frame: &ffmpeg::frame::Video) -> Self {
        // SAFETY: `as_ptr` is the decoder's live AVFrame, borrowed for this
        // call. Each field is a C enum, stored as an int: it is read through
        // a pointer to i32, never as the Rust enum type.
        unsafe {
            let f = frame.as_ptr();
            Self {
                space: std::ptr::addr_of!((*f).colorspace).cast::<i32>().read(),
                range: std::ptr::addr_of!((*f).color_range).cast::<i32>().read(),
                siting: std::ptr::addr_of!((*f).chroma_location)
                    .cast::<i32>()
                    .read(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::row_stride;

    #[test]
    fn a_negative_line_size_is_refused_before_the_data_is_touched() {
        // What `stride()` gives for a bottom-up frame's line size of -1920.
        let widened = -1920i32 as usize;
        let e = row_stride(widened, 0).unwrap_err();
        assert!(e.contains("-1920") && e.contains("bottom-up"), "{e}");
        assert!(row_stride(0, 1).is_err());
        assert_eq!(row_stride(1920, 0), Ok(1920));
    }
}
