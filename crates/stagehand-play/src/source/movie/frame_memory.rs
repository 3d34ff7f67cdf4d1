//! FFmpeg decoders that write their frames into the player's frame
//! buffers ([`FrameBuffers`]) instead of memory of their own.
//!
//! A decoder takes each frame's memory from a pool of its own, which
//! recycles what its frames give back, but only while that decoder lives.
//! A JPEG sequence opens a decoder for every file (FFmpeg's keeps what one
//! file sets for the next), so every frame would be memory never touched
//! before: at 4K, 12 MB that the kernel faults in and clears page by page
//! and the decoder clears again, on the decode threads, for every frame.
//! Through the decoder's `get_buffer2` callback, frames come from the
//! player's pool instead, shared by every decoder and thread, and go back
//! to it when the frame's last reference goes.
//!
//! Where the picture's size lets the decoder write only inside its rows,
//! a frame is laid out exactly as its upload lays it out in staging: the
//! planes packed into one texture's rows ([`crate::yuv`]), every row
//! 256-byte aligned. A device that imports host memory then copies the
//! frame into its texture from where the decoder wrote it
//! ([`FrameBuffers::in_place_at`]), with no copy into staging between.
//!
//! Otherwise the layout follows what FFmpeg asks of a frame's memory:
//! each plane starts on a 64-byte boundary, line sizes are multiples of
//! the alignment the decoder names (the picture widened until they are),
//! rows cover the decoder's padded size, and every plane has room after
//! it for vector code that reads past its end. A pixel format it cannot
//! lay out goes to FFmpeg's own allocator.
//!
//! Movies (the playing decoder) and JPEG sequences decode this way.

use crate::cache::buffers::{FrameBuffer, FrameBuffers};
use ffmpeg::ffi;
use ffmpeg_next as ffmpeg;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Each plane starts on a multiple of this many bytes.
const ALIGN: usize = 64;

/// Bytes left free after each plane (FFmpeg's own allocator leaves 16
/// plus its alignment less one).
const TAIL: usize = 16 + ALIGN;

/// The row alignment of the upload's staging (wgpu's copy alignment).
const UPLOAD_ROW_ALIGN: usize = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as usize;

/// Rows left below a frame laid out as uploaded: decoders read a line or
/// two past a plane's end (FFmpeg pads the height it asks for by 2 for
/// H.264's chroma motion compensation).
const SPARE_ROWS: usize = 4;

/// FFmpeg's error for memory it could not have.
const OUT_OF_MEMORY: c_int = ffi::AVERROR(ffi::ENOMEM);

/// Planes a frame may have (FFmpeg's images have at most four).
const PLANES: usize = 4;

/// What a decoder's callback reads: the pool, and the codecs whose frames
/// may be laid out as uploaded ([`lay_out_as_uploaded`]).
struct Lender {
    buffers: Arc<FrameBuffers>,
    as_uploaded: &'static [ffi::AVCodecID],
}

/// A movie's codecs whose decoders write only inside the picture they ask
/// a buffer for (see [`lay_out_as_uploaded`]).
pub(crate) const MOVIE_CODECS_AS_UPLOADED: &[ffi::AVCodecID] = &[
    ffi::AVCodecID::AV_CODEC_ID_H264,
    ffi::AVCodecID::AV_CODEC_ID_HEVC,
    ffi::AVCodecID::AV_CODEC_ID_VP9,
    ffi::AVCodecID::AV_CODEC_ID_AV1,
    ffi::AVCodecID::AV_CODEC_ID_PRORES,
];

/// A still JPEG's decoder (a movie's Motion JPEG may be coded in fields,
/// and is not in [`MOVIE_CODECS_AS_UPLOADED`]).
pub(crate) const STILL_JPEG_AS_UPLOADED: &[ffi::AVCodecID] = &[ffi::AVCodecID::AV_CODEC_ID_MJPEG];

/// A decoder that writes into frame buffers, and what its callback reads:
/// the pool is owned here, and must outlive the decoder, which holds its
/// address. The decoder is never handed out (moved out, it could outlive
/// the pool): it is used through the methods below.
pub(crate) struct Lending {
    /// The decoder (dropped before the lender: fields drop in order).
    decoder: ffmpeg::decoder::Video,
    _lender: Box<Lender>,
}

impl Lending {
    /// Sends the decoder a packet.
    pub(crate) fn send_packet(&mut self, packet: &ffmpeg::Packet) -> Result<(), ffmpeg::Error> {
        self.decoder.send_packet(packet)
    }

    /// Sends the decoder the end of the stream.
    pub(crate) fn send_eof(&mut self) -> Result<(), ffmpeg::Error> {
        self.decoder.send_eof()
    }

    /// Takes a decoded frame, if one is ready.
    pub(crate) fn receive_frame(
        &mut self,
        frame: &mut ffmpeg::frame::Video,
    ) -> Result<(), ffmpeg::Error> {
        self.decoder.receive_frame(frame)
    }

    /// Drops what the decoder holds (after a seek).
    pub(crate) fn flush(&mut self) {
        self.decoder.flush();
    }

    /// Which frames the decoder may leave out.
    pub(crate) fn skip_frame(&mut self, discard: ffmpeg::Discard) {
        self.decoder.skip_frame(discard);
    }
}

/// Makes `context`'s decoder (not opened yet) take its frames' memory from
/// `buffers`, and `open` it (its error, if any, is this call's). Each
/// frame of a codec in `as_uploaded` is laid out as its upload lays it out
/// in staging where that is safe ([`lay_out_as_uploaded`]: the GPU then
/// copies it from where it was decoded, [`FrameBuffers::in_place_at`]),
/// else its planes one after another. A codec that cannot decode into memory it is given (no `DR1`)
/// keeps its own allocator.
#[allow(unsafe_code)] // sets two fields of the context; see below
pub(crate) fn lend<E>(
    mut context: ffmpeg::codec::Context,
    buffers: &Arc<FrameBuffers>,
    as_uploaded: &'static [ffi::AVCodecID],
    open: impl FnOnce(ffmpeg::codec::Context) -> Result<ffmpeg::decoder::Video, E>,
) -> Result<Lending, E> {
    let lender = Box::new(Lender {
        buffers: Arc::clone(buffers),
        as_uploaded,
    });
    // SAFETY: `as_mut_ptr` is the context's live AVCodecContext, not yet
    // opened, so no decoder thread reads it. Its `codec` is null or a
    // static AVCodec, as is what `avcodec_find_decoder` returns. `opaque` is the user's field; it is set to the
    // lender's address, which the box that `Lending` keeps holds in place
    // until after the decoder is dropped; the callback is a plain
    // function of this module.
    unsafe {
        let raw = context.as_mut_ptr();
        // A context made from a stream's parameters names no codec yet:
        // opening it takes the decoder FFmpeg finds for its id.
        let codec = match (*raw).codec {
            codec if codec.is_null() => ffi::avcodec_find_decoder((*raw).codec_id),
            codec => codec,
        };
        let direct = !codec.is_null() && (*codec).capabilities as u32 & ffi::AV_CODEC_CAP_DR1 != 0;
        if direct {
            (*raw).opaque = std::ptr::from_ref::<Lender>(&lender).cast_mut().cast();
            (*raw).get_buffer2 = Some(get_buffer);
        }
    }
    Ok(Lending {
        decoder: open(context)?,
        _lender: lender,
    })
}

/// Where each plane goes in one frame buffer.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    linesizes: [c_int; PLANES],
    offsets: [usize; PLANES],
    /// Planes the format has.
    planes: usize,
    /// Bytes of the whole buffer.
    len: usize,
}

/// The decoder's `get_buffer2`: the frame's planes in one buffer from the
/// pool, given back when FFmpeg lets the buffer go.
#[allow(unsafe_code)] // FFmpeg's callback: fills the frame it is given
unsafe extern "C" fn get_buffer(
    context: *mut ffi::AVCodecContext,
    frame: *mut ffi::AVFrame,
    flags: c_int,
) -> c_int {
    // SAFETY: FFmpeg calls this with the live context this module set the
    // callback on, whose `opaque` is the lender that `Lending`'s box keeps
    // in place, and a frame whose width, height and format it has set;
    // the frame's data, line sizes and buffers are this callback's to
    // fill.
    unsafe {
        let lender = &*(*context).opaque.cast_const().cast::<Lender>();
        let packed = lay_out_as_uploaded(context, frame, lender.as_uploaded);
        let Some(layout) = packed.or_else(|| lay_out(context, frame)) else {
            return ffi::avcodec_default_get_buffer2(context, frame, flags);
        };
        let Ok(mut buffer) = lender.buffers.take(layout.len) else {
            return OUT_OF_MEMORY;
        };
        let base = buffer.as_mut_slice().as_mut_ptr();
        // The buffer moves into a box that FFmpeg's buffer owns; its bytes
        // stay where they are (they are the pool's mapping, not the box).
        let owner = Box::into_raw(Box::new(buffer));
        let reference = ffi::av_buffer_create(base, layout.len, Some(give_back), owner.cast(), 0);
        if reference.is_null() {
            drop(Box::from_raw(owner));
            return OUT_OF_MEMORY;
        }
        (*frame).buf[0] = reference;
        for plane in 0..PLANES {
            let used = plane < layout.planes;
            (*frame).data[plane] = if used {
                base.add(layout.offsets[plane])
            } else {
                std::ptr::null_mut()
            };
            (*frame).linesize[plane] = if used { layout.linesizes[plane] } else { 0 };
        }
        (*frame).extended_data = (*frame).data.as_mut_ptr();
        0
    }
}

/// Gives a frame's buffer back to its pool: FFmpeg's free callback for
/// the buffers [`get_buffer`] makes, `opaque` the boxed [`FrameBuffer`].
#[allow(unsafe_code)] // FFmpeg's free callback: drops the box it was given
unsafe extern "C" fn give_back(opaque: *mut c_void, _data: *mut u8) {
    // SAFETY: `opaque` is the box `get_buffer` made for this buffer, and
    // FFmpeg calls this once, when the buffer's last reference goes.
    drop(unsafe { Box::from_raw(opaque.cast::<FrameBuffer>()) });
}

/// The frame laid out as its upload lays it out in staging (the planes
/// packed into one texture's rows, [`crate::yuv`], each row 256-byte
/// aligned), or `None` where that is not safe.
///
/// FFmpeg lets a decoder write into the rows and columns it pads a
/// picture to (`avcodec_align_dimensions2`: heights to multiples of 32),
/// which here would be the next plane's. So only decoders known to write
/// inside the picture they ask a buffer for are laid out this way (the
/// lender's `as_uploaded`, by codec): H.264 (its buffer's height is the
/// coded height, whole macroblocks, or pairs of them when interlaced),
/// HEVC (blocks split at the picture's edge), VP9, AV1 (libaom copies
/// the picture it decoded), ProRes and a still JPEG, both of whose blocks
/// tile a picture whose sides are multiples of 16, the one condition
/// checked here for all. An interlaced frame (ProRes decodes each field
/// in blocks of its own height) is refused, as are a format the player
/// does not pack (or one with an alpha plane), alignments the 256-byte
/// rows do not meet, and a plane that would not start on a 64-byte
/// boundary. Each plane's rows are the packed texture's, every line size
/// the upload's row pitch, with rows to spare below for the reads past a
/// plane's end that decoders make.
///
/// # Safety
/// `context` and `frame` are live, as FFmpeg passes them to `get_buffer2`.
#[allow(unsafe_code)] // reads the context and frame; two FFmpeg calls
unsafe fn lay_out_as_uploaded(
    context: *mut ffi::AVCodecContext,
    frame: *mut ffi::AVFrame,
    as_uploaded_codecs: &[ffi::AVCodecID],
) -> Option<Layout> {
    // SAFETY: both are live (the caller's word); the calls only read the
    // context and write the array given them (eight alignments).
    unsafe {
        if !as_uploaded_codecs.contains(&(*context).codec_id) {
            return None;
        }
        let format = (*context).pix_fmt;
        if (*frame).format != format as c_int || ffi::av_pix_fmt_count_planes(format) != 3 {
            return None;
        }
        let (chroma, bits, _) = super::planes::planar(ffmpeg::format::Pixel::from(format))?;
        let (w, h) = ((*frame).width, (*frame).height);
        if w <= 0 || h <= 0 || w % 16 != 0 || h % 16 != 0 || (*frame).interlaced_frame != 0 {
            return None;
        }
        let (mut aw, mut ah) = (w, h);
        let mut align = [0 as c_int; 8];
        ffi::avcodec_align_dimensions2(context, &mut aw, &mut ah, align.as_mut_ptr());
        as_uploaded(chroma, bits, (w as u32, h as u32), &align[..PLANES])
    }
}

/// The layout of [`lay_out_as_uploaded`] for a `size` picture of
/// `chroma` and `bits`, whose decoder asks line sizes be multiples of
/// `align` (0: nothing asked).
fn as_uploaded(
    chroma: crate::yuv::Chroma,
    bits: u8,
    (w, h): (u32, u32),
    align: &[c_int],
) -> Option<Layout> {
    use crate::yuv::{Matrix, Range, Siting, Yuv};
    let yuv = Yuv {
        chroma,
        bits,
        matrix: Matrix::Bt709,
        range: Range::Limited,
        siting: Siting::Left,
    };
    let packing = yuv.packing(w, h);
    let sample = yuv.sample_bytes();
    let pitch = (packing.size.0 as usize * sample).next_multiple_of(UPLOAD_ROW_ALIGN);
    if align
        .iter()
        .any(|&a| a > 0 && !pitch.is_multiple_of(a as usize))
    {
        return None;
    }
    let mut offsets = [0usize; PLANES];
    for (plane, rect) in packing.planes.iter().enumerate() {
        let at = rect.y as usize * pitch + rect.x as usize * sample;
        if !at.is_multiple_of(ALIGN) {
            return None;
        }
        offsets[plane] = at;
    }
    let line = c_int::try_from(pitch).ok()?;
    let rows = packing.size.1 as usize + SPARE_ROWS;
    Some(Layout {
        linesizes: [line, line, line, 0],
        offsets,
        planes: 3,
        len: rows.checked_mul(pitch)?.checked_add(TAIL)?,
    })
}

/// The frame's layout at the decoder's padded size and alignment, or
/// `None` where this module leaves the frame to FFmpeg's allocator (not
/// the context's own pixel format, or a size or format it cannot lay
/// out).
///
/// # Safety
/// `context` and `frame` are live, as FFmpeg passes them to `get_buffer2`.
#[allow(unsafe_code)] // reads the context and frame; three FFmpeg calls
unsafe fn lay_out(context: *mut ffi::AVCodecContext, frame: *mut ffi::AVFrame) -> Option<Layout> {
    // SAFETY: both are live (the caller's word); the calls below only
    // read the context and write the arrays given them, whose lengths are
    // what FFmpeg's documentation asks (eight alignments, four planes).
    unsafe {
        let format = (*context).pix_fmt;
        if (*frame).format != format as c_int {
            return None;
        }
        let (mut width, mut height) = ((*frame).width, (*frame).height);
        let mut align = [0 as c_int; 8];
        ffi::avcodec_align_dimensions2(context, &mut width, &mut height, align.as_mut_ptr());
        if align[..PLANES].iter().any(|&a| a as usize > ALIGN) {
            // Planes here start on multiples of ALIGN only.
            return None;
        }
        let linesizes = widen_to_alignment(width, &align[..PLANES], |w| {
            let mut linesizes = [0 as c_int; PLANES];
            (ffi::av_image_fill_linesizes(linesizes.as_mut_ptr(), format, w) >= 0)
                .then_some(linesizes)
        })?;
        let wide = linesizes.map(|l| l as isize);
        let mut sizes = [0usize; PLANES];
        if ffi::av_image_fill_plane_sizes(sizes.as_mut_ptr(), format, height, wide.as_ptr()) < 0 {
            return None;
        }
        place(linesizes, sizes)
    }
}

/// Widens `width` (by its lowest set bit, as many times as it takes, at
/// most 16) until every line size `linesizes_at` gives for it is a
/// multiple of its plane's alignment (0: none asked). `None` where a
/// width has no line sizes, or none within 16 steps aligns.
fn widen_to_alignment(
    mut width: c_int,
    align: &[c_int],
    mut linesizes_at: impl FnMut(c_int) -> Option<[c_int; PLANES]>,
) -> Option<[c_int; PLANES]> {
    for _ in 0..16 {
        let linesizes = linesizes_at(width)?;
        let aligned = linesizes
            .iter()
            .zip(align)
            .all(|(&l, &a)| a <= 0 || l % a == 0);
        if aligned {
            return Some(linesizes);
        }
        width = width.checked_add(width & width.wrapping_neg())?;
    }
    None
}

/// The planes of `sizes` (a zero size ends them) one after another in one
/// buffer, each on an [`ALIGN`] boundary with [`TAIL`] bytes after it.
fn place(linesizes: [c_int; PLANES], sizes: [usize; PLANES]) -> Option<Layout> {
    let planes = sizes.iter().take_while(|&&s| s > 0).count();
    if planes == 0 || linesizes[..planes].iter().any(|&l| l <= 0) {
        return None;
    }
    let mut offsets = [0usize; PLANES];
    let mut end = 0usize;
    for plane in 0..planes {
        let start = end.checked_next_multiple_of(ALIGN)?;
        offsets[plane] = start;
        end = start.checked_add(sizes[plane])?.checked_add(TAIL)?;
    }
    Some(Layout {
        linesizes,
        offsets,
        planes,
        len: end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planes_follow_one_another_aligned_with_room_after_each() {
        let layout = place(
            [3840, 1920, 1920, 0],
            [3840 * 2160, 1920 * 1080, 1920 * 1080, 0],
        )
        .expect("a 4:2:0 frame lays out");
        assert_eq!(layout.planes, 3);
        assert_eq!(layout.offsets[0], 0);
        for plane in 1..3 {
            let previous_end = layout.offsets[plane - 1] + [3840 * 2160, 1920 * 1080][plane - 1];
            assert!(layout.offsets[plane] >= previous_end + TAIL);
            assert_eq!(layout.offsets[plane] % ALIGN, 0);
        }
        assert!(layout.len >= layout.offsets[2] + 1920 * 1080 + TAIL);
    }

    #[test]
    fn a_frame_laid_out_as_uploaded_has_its_planes_where_the_packed_texture_has_them() {
        use crate::yuv::Chroma;
        // 4K 4:2:0 8-bit: rows of 3840 bytes (a multiple of 256), Cb
        // below luma, Cr beside it, rows to spare below.
        let l = as_uploaded(Chroma::S420, 8, (3840, 2160), &[64; 4]).unwrap();
        assert_eq!(l.linesizes, [3840, 3840, 3840, 0]);
        assert_eq!(l.offsets[..3], [0, 2160 * 3840, 2160 * 3840 + 1920]);
        assert_eq!(l.len, (2160 + 1080 + SPARE_ROWS) * 3840 + TAIL);
        // 4:2:2 at 10 bits: two bytes a sample, chroma full height.
        let l = as_uploaded(Chroma::S422, 10, (3840, 2160), &[64; 4]).unwrap();
        assert_eq!(l.linesizes[0], 7680);
        assert_eq!(l.offsets[..3], [0, 2160 * 7680, 2160 * 7680 + 3840]);
        // 4:4:4 stacks the planes.
        let l = as_uploaded(Chroma::S444, 8, (1024, 16), &[0; 4]).unwrap();
        assert_eq!(l.offsets[..3], [0, 16 * 1024, 32 * 1024]);
        // A Cr plane that would not start on 64 bytes (320 wide: at 160),
        // and a decoder asking more alignment than the rows have.
        assert_eq!(as_uploaded(Chroma::S420, 8, (320, 240), &[64; 4]), None);
        assert_eq!(as_uploaded(Chroma::S420, 8, (3840, 2160), &[1024; 4]), None);
    }

    #[test]
    fn a_layout_with_no_plane_or_a_bad_line_size_is_left_to_ffmpeg() {
        assert_eq!(place([0; PLANES], [0; PLANES]), None);
        assert_eq!(place([-64, 0, 0, 0], [64, 0, 0, 0]), None);
        assert_eq!(place([64, 0, 0, 0], [usize::MAX, 0, 0, 0]), None);
    }

    #[test]
    fn a_width_is_widened_until_every_line_size_is_aligned() {
        // Chroma half the width: 8-bit 4:2:0 at 1000 pixels gives 500,
        // not a multiple of 64, until the width is 1024.
        let half = |w: c_int| Some([w, w / 2, w / 2, 0]);
        let got = widen_to_alignment(1000, &[64, 64, 64, 64], half);
        assert_eq!(got, Some([1024, 512, 512, 0]));
        // Aligned already: as it is.
        assert_eq!(
            widen_to_alignment(3840, &[64; 4], half),
            Some([3840, 1920, 1920, 0])
        );
        // One pixel a byte from a width of 1: doubled six times.
        let bytes = |w: c_int| Some([w, 0, 0, 0]);
        assert_eq!(widen_to_alignment(1, &[64; 4], bytes), Some([64, 0, 0, 0]));
        // A width with no line sizes, one whose line sizes never align,
        // and one that would pass the largest integer.
        assert_eq!(widen_to_alignment(64, &[64; 4], |_| None), None);
        assert_eq!(
            widen_to_alignment(1, &[64; 4], |w| Some([w | 1, 0, 0, 0])),
            None
        );
        assert_eq!(
            widen_to_alignment(c_int::MAX / 2 + 1, &[64; 4], |_| Some([1, 0, 0, 0])),
            None
        );
    }

    #[test]
    fn a_decoded_frame_lies_in_a_pool_buffer_aligned_as_ffmpeg_asks_and_outlives_its_decoder() {
        crate::source::movie::init();
        // 100x60: the chroma rows (50 bytes) need widening to align.
        let (width, height) = (100u32, 60u32);
        let rgb: Vec<u8> = (0..width * height * 3).map(|i| (i % 251) as u8).collect();
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
            .encode(&rgb, width, height, image::ExtendedColorType::Rgb8)
            .expect("a JPEG is written");
        let buffers = FrameBuffers::new();
        let codec = ffmpeg::decoder::find(ffmpeg::codec::Id::MJPEG).expect("FFmpeg has MJPEG");
        let context = ffmpeg::codec::Context::new_with_codec(codec);
        let mut decoder = lend(context, &buffers, &[], |c| {
            c.decoder().open_as(codec).and_then(|o| o.video())
        })
        .expect("the decoder opens");
        let mut frame = ffmpeg::frame::Video::empty();
        decoder
            .send_packet(&ffmpeg::Packet::copy(&jpeg))
            .and_then(|()| decoder.receive_frame(&mut frame))
            .expect("the JPEG decodes");
        drop(decoder);
        let stats = buffers.stats();
        assert_eq!((stats.misses, stats.in_use > 0), (1, true), "{stats:?}");
        assert_eq!((frame.width(), frame.height()), (width, height));
        assert!(frame.planes() >= 3);
        for plane in 0..frame.planes() {
            assert_eq!(frame.stride(plane) % ALIGN, 0, "plane {plane}");
            assert_eq!(
                frame.data(plane).as_ptr() as usize % ALIGN,
                0,
                "plane {plane}"
            );
        }
        // The picture is there after its decoder has gone: the pattern's
        // first row of luma is not one value throughout.
        let luma = &frame.data(0)[..width as usize];
        assert!(luma.iter().any(|&v| v != luma[0]), "{luma:?}");
        drop(frame);
        assert_eq!(buffers.stats().in_use, 0, "the buffer went back");
    }
}
