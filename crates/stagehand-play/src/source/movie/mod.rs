//! Movies through FFmpeg (feature `video`): H.264, HEVC, ProRes, DNxHR,
//! VP9, AV1 and whatever else the system's FFmpeg decodes, in any
//! container it reads.
//!
//! Opening a movie reads its packets once to index its frames
//! (timestamps and keyframes, no decoding) and decodes the first frame,
//! so a file that is not a movie, has no video, uses a codec this FFmpeg
//! lacks or a pixel format the player does not take is refused before
//! anything plays. Frames come out as their decoder made them: planar
//! Y'CbCr, packed for the GPU (`planes.rs`) and converted to RGB in the
//! render pass ([`crate::yuv`]).
//!
//! Positions are ticks of the movie's own rate: a movie with a variable
//! rate shows, at each tick, the frame whose time it is. A file cut short
//! (or whose reading fails) plays up to the damage, and [`Movie::damage`]
//! says where; a damaged packet with more after it is played past.

mod decoder;
pub(crate) mod demux;
pub(crate) mod frame_memory;
mod index;
pub(crate) mod planes;

use super::{Frame, FrameInfo, Frames};
use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use decoder::{Decoder, Threads};
use ffmpeg_next as ffmpeg;
use index::Index;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A movie, opened and indexed.
pub struct Movie {
    path: PathBuf,
    info: FrameInfo,
    rate: f64,
    codec: String,
    index: Index,
    stream: usize,
    /// The playing decoder, and the thread that opened it; `None` until
    /// the first decode (the movie was opened by a decoder on one thread,
    /// which looked at the first frame and was dropped).
    decoder: Mutex<Option<(Decoder, std::thread::ThreadId)>>,
    /// The first frame, as the opening decoder gave it: the first decode
    /// takes it (given for frame 0, let go for any other), so the frame
    /// that opening decoded is not decoded again for the picture.
    first: Mutex<Option<Frame>>,
}

/// Most frames (and positions) a movie may have: about 116 hours at 24
/// fps.
const MAX_FRAMES: usize = 10_000_000;

/// Registers FFmpeg's formats and quiets its log, once.
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Registration cannot fail on FFmpeg 4 and later; its log goes
        // quiet: errors come back as values, with the path.
        let _ = ffmpeg::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Quiet);
    });
}

/// The frame rate of `path`'s best video stream, from its header alone
/// (no index, no decoding); `None` where it cannot tell.
pub fn nominal_rate(path: &Path) -> Option<f64> {
    init();
    let input = ffmpeg::format::input(path).ok()?;
    let stream = input.streams().best(ffmpeg::media::Type::Video)?;
    rate_of(&stream)
}

/// A stream's frame rate: its average rate; for a variable rate (a base
/// rate above the average, not twice it: that is an interlaced stream's
/// field rate), the base rate where it is one the player runs at, so each
/// frame is on screen from its own time. Else whichever of the two is a
/// rate the player runs at.
fn rate_of(stream: &ffmpeg::format::stream::Stream<'_>) -> Option<f64> {
    pick_rate(f64::from(stream.avg_frame_rate()), f64::from(stream.rate()))
}

/// Whether each of `codec`'s frames stands alone: the intra-only codecs
/// of picture work. Others (unknown ones too) are taken as referring
/// between frames, which is always safe: they are decoded forward and
/// sought at keyframes. (FFmpeg's codec descriptors say it too, but only
/// through a raw pointer, and the workspace has no unsafe code.)
fn codec_is_intra_only(codec: ffmpeg::codec::Id) -> bool {
    use ffmpeg::codec::Id;
    matches!(
        codec,
        Id::PRORES
            | Id::DNXHD
            | Id::FFV1
            | Id::MJPEG
            | Id::JPEG2000
            | Id::CFHD
            | Id::HQX
            | Id::HAP
            | Id::UTVIDEO
            | Id::MAGICYUV
            | Id::HUFFYUV
            | Id::FFVHUFF
    )
}

/// The most ticks a second a variable-rate movie is shown at: base rates
/// above it (a millisecond clock, say) are timestamp units, not frames.
const MAX_BASE_RATE: f64 = 120.0;

fn pick_rate(average: f64, base: f64) -> Option<f64> {
    let usable = |r: f64| r.is_finite() && (0.1..=1000.0).contains(&r);
    // A base rate twice the average is an interlaced stream's field rate:
    // its frames come at the average.
    let field_rate = (base / average - 2.0).abs() < 0.002;
    match (usable(average), usable(base)) {
        (true, true) if base > average * 1.001 && base <= MAX_BASE_RATE && !field_rate => {
            Some(base)
        }
        (true, _) => Some(average),
        (false, true) => Some(base),
        (false, false) => None,
    }
}

impl Movie {
    /// Opens `path`: finds its best video stream, indexes its frames and
    /// decodes the first.
    ///
    /// Errors: [`PlayError::Io`] (cannot read the file),
    /// [`PlayError::Decode`] (not a movie FFmpeg reads, or the first frame
    /// does not decode), [`PlayError::Unsupported`] (no video stream, no
    /// decoder for its codec, a pixel format the player does not take).
    pub fn open(path: &Path) -> Result<Self, PlayError> {
        Self::open_within(path, super::MAX_SIDE)
    }

    /// Opens `path` as [`open`](Self::open) does, refusing as
    /// [`PlayError::Unsupported`] a stream whose header declares pictures
    /// more than `max_side` pixels a side (a device's largest texture),
    /// before its packets are read or anything is decoded.
    pub fn open_within(path: &Path, max_side: u32) -> Result<Self, PlayError> {
        init();
        if let Err(e) = std::fs::File::open(path) {
            return Err(PlayError::Io {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
        let (index, found) = read_index(path, max_side)?;
        let codec_name = format!("{:?}", found.codec).to_ascii_lowercase();
        // One thread for this look at the first frame: starting and
        // stopping frame threads for it cost more than the frame does, and
        // playback opens its own decoder on its decode thread. Its frame
        // (kept for playback) lies in a pool of its own.
        let mut decoder = Decoder::open(
            path,
            found.stream,
            None,
            index.intra_only,
            Threads::One,
            &FrameBuffers::new(),
        )
        .map_err(|reason| unsupported(path, format!("codec {codec_name}: {reason}")))?;
        let info = first_frame_info(path, &mut decoder, &index)?;
        let first = decoder.frame(0, &index).ok();
        Ok(Self {
            path: path.to_owned(),
            info,
            rate: found.rate,
            codec: codec_name,
            index,
            stream: found.stream,
            decoder: Mutex::new(None),
            first: Mutex::new(first),
        })
    }

    /// The first frame's size and Y'CbCr format.
    pub fn info(&self) -> FrameInfo {
        self.info
    }

    /// Frames per second: the stream's average rate (for a variable
    /// rate, positions are ticks of it).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The codec, as FFmpeg names it.
    pub fn codec(&self) -> &str {
        &self.codec
    }

    /// Frames in the video stream, as indexed.
    pub fn frame_count(&self) -> usize {
        self.index.frames.len()
    }

    /// Where the file is cut short (or its reading failed), if it is:
    /// playback stops at the last frame before it.
    pub fn damage(&self) -> Option<&str> {
        self.index.damage.as_deref()
    }

    /// Seconds of the first frame on the file's timeline (its sound lines
    /// up against it).
    pub fn start_seconds(&self) -> f64 {
        self.index.frames[0].pts as f64 * self.index.time_base
    }

    /// Seconds from the first frame to position `pos`'s frame.
    pub fn seconds(&self, pos: usize) -> Option<f64> {
        let i = *self.index.positions.get(pos)?;
        Some(self.index.seconds(i as usize))
    }

    /// The playing decoder, opened on this thread where none is open or
    /// another thread opened it, noting this one as its thread.
    fn decoder_here<'a>(
        &self,
        decoder: &'a mut Option<(Decoder, std::thread::ThreadId)>,
        buffers: &Arc<FrameBuffers>,
    ) -> Result<&'a mut Decoder, String> {
        let here = std::thread::current().id();
        if decoder.as_ref().is_none_or(|(_, thread)| *thread != here) {
            // FFmpeg's frame threads take the priority of the thread that
            // opens the decoder: open it on the decode thread (which runs
            // below the render thread), not on the one that probed.
            let opened = Decoder::open(
                &self.path,
                self.stream,
                Some(self.info),
                self.index.intra_only,
                Threads::EveryCore,
                buffers,
            )?;
            *decoder = Some((opened, here));
        }
        decoder
            .as_mut()
            .map(|(opened, _)| opened)
            .ok_or_else(|| "no decoder".to_owned())
    }
}

impl Frames for Movie {
    fn len(&self) -> usize {
        self.index.positions.len()
    }

    fn is_gap(&self, _pos: usize) -> bool {
        false
    }

    fn gaps(&self) -> usize {
        0
    }

    fn number(&self, pos: usize) -> i64 {
        pos as i64
    }

    fn decode(&self, pos: usize, buffers: &Arc<FrameBuffers>) -> Result<Frame, PlayError> {
        // The playing decoder writes its frames into `buffers`, laid out
        // as their upload lays them out where that is safe (where the GPU
        // imports them, it copies them from there); they are referenced,
        // not copied, until the frame is let go (`planes::hold`).
        let Some(&i) = self.index.positions.get(pos) else {
            return Err(PlayError::InvalidOption(format!(
                "frame {pos}: the movie has frames 0 to {}",
                self.len().saturating_sub(1)
            )));
        };
        let error = |reason: String| PlayError::Decode {
            path: self.path.clone(),
            reason: format!("frame {pos}: {reason}"),
        };
        let mut decoder = self.decoder.lock();
        // The playing decoder is opened first, even for the frame kept
        // from opening: opening it costs as much as a frame or two, and
        // the first frame's decode is where the player pays it, before its
        // clock starts, not on the frame after, with the clock running.
        let decoder = self.decoder_here(&mut decoder, buffers).map_err(error)?;
        if let Some(first) = self.first.lock().take()
            && i == 0
        {
            return Ok(first);
        }
        decoder.frame(i as usize, &self.index).map_err(error)
    }

    fn decoders(&self, _asked: usize) -> usize {
        1
    }
}

/// A movie's video stream, as its header gives it.
struct Found {
    stream: usize,
    codec: ffmpeg::codec::Id,
    rate: f64,
    /// The pictures' width and height as the stream's header declares
    /// them (0 where it does not say).
    size: (u32, u32),
}

/// `path` could not be decoded.
fn decode_error(path: &Path, reason: String) -> PlayError {
    PlayError::Decode {
        path: path.to_owned(),
        reason,
    }
}

/// `path` uses something the player does not take.
fn unsupported(path: &Path, reason: String) -> PlayError {
    PlayError::Unsupported {
        path: path.to_owned(),
        reason,
    }
}

/// The first frame's size and format, decoding it: an unsupported pixel
/// format, or a frame that does not decode, refused.
fn first_frame_info(
    path: &Path,
    decoder: &mut Decoder,
    index: &Index,
) -> Result<FrameInfo, PlayError> {
    decoder.info(index).map_err(|reason| {
        if reason.starts_with("pixel format") {
            unsupported(path, reason)
        } else {
            decode_error(path, format!("the first frame does not decode: {reason}"))
        }
    })
}

/// The best video stream of `input`, and its time base in seconds;
/// refused where there is none, or its time base is not a positive number.
fn video_stream(
    path: &Path,
    input: &ffmpeg::format::context::Input,
) -> Result<(Found, f64), PlayError> {
    let stream = input
        .streams()
        .best(ffmpeg::media::Type::Video)
        .ok_or_else(|| unsupported(path, "it has no video stream".into()))?;
    let found = Found {
        stream: stream.index(),
        codec: stream.parameters().id(),
        rate: rate_of(&stream).unwrap_or(24.0),
        size: declared_size(&stream.parameters()),
    };
    let time_base = f64::from(stream.time_base());
    if !(time_base.is_finite() && time_base > 0.0) {
        return Err(decode_error(
            path,
            format!("its video stream has a time base of {time_base}"),
        ));
    }
    Ok((found, time_base))
}

/// The pictures' width and height as `params` declare them (0 for a side
/// not declared, or declared negative). ffmpeg-next reads them only by
/// opening a decoder; these are two integer reads of the parameters.
#[allow(unsafe_code)] // two integer reads of FFmpeg's codec parameters
fn declared_size(params: &ffmpeg::codec::Parameters) -> (u32, u32) {
    // SAFETY: `params` wraps the stream's live codec parameters, whose
    // width and height are plain integers.
    let (width, height) = unsafe {
        let p = params.as_ptr();
        ((*p).width, (*p).height)
    };
    let side = |v: i32| u32::try_from(v).unwrap_or(0);
    (side(width), side(height))
}

/// Reads the packets of `path`'s video stream into an index (stopped
/// before it holds more frames than a movie may have), and checks it;
/// pictures declared more than `max_side` a side are refused first.
fn read_index(path: &Path, max_side: u32) -> Result<(Index, Found), PlayError> {
    let mut input = ffmpeg::format::input(path)
        .map_err(|e| decode_error(path, format!("not a movie FFmpeg reads ({e})")))?;
    let (found, time_base) = video_stream(path, &input)?;
    super::check_side(path, found.size, max_side)?;
    let declared = input.duration();
    let Some(mut index) = Index::read(&mut input, found.stream, time_base, found.rate, MAX_FRAMES)
    else {
        return Err(unsupported(
            path,
            format!("it has more than {MAX_FRAMES} video frames"),
        ));
    };
    // A container may mark every frame a keyframe (a MOV without a
    // sync-sample table) for a codec whose frames refer to others.
    index.intra_only &= codec_is_intra_only(found.codec);
    index.check_length(declared, found.rate);
    check_index(path, &index)?;
    Ok((index, found))
}

/// Refuses an index with no frame, no position to show one at, or more
/// positions than a movie may have.
fn check_index(path: &Path, index: &Index) -> Result<(), PlayError> {
    if index.frames.is_empty() {
        return Err(decode_error(
            path,
            match &index.damage {
                Some(d) => format!("no video frame could be read: {d}"),
                None => "its video stream has no frames".into(),
            },
        ));
    }
    if index.positions.is_empty() {
        return Err(decode_error(
            path,
            "its frames' timestamps give no position to show them at".into(),
        ));
    }
    if index.positions.len() > MAX_FRAMES {
        return Err(unsupported(
            path,
            format!("{} frames: at most {MAX_FRAMES}", index.positions.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{codec_is_intra_only, pick_rate};
    use ffmpeg_next::codec::Id;

    #[test]
    fn intra_only_is_the_codecs_word_not_the_containers() {
        for id in [Id::PRORES, Id::DNXHD, Id::FFV1, Id::MJPEG] {
            assert!(codec_is_intra_only(id), "{id:?}");
        }
        for id in [Id::H264, Id::HEVC, Id::VP9, Id::AV1] {
            assert!(!codec_is_intra_only(id), "{id:?}");
        }
    }

    #[test]
    fn an_interlaced_movies_field_rate_is_not_taken_for_its_frame_rate() {
        // 1080i25 H.264: a base rate of 50 fields, 25 frames on average.
        assert_eq!(pick_rate(25.0, 50.0), Some(25.0));
        assert_eq!(
            pick_rate(30000.0 / 1001.0, 60000.0 / 1001.0),
            Some(30000.0 / 1001.0)
        );
        // Three times over is no field rate: variable.
        assert_eq!(pick_rate(8.0, 24.0), Some(24.0));
    }

    #[test]
    fn a_variable_rate_ticks_at_its_base_rate_within_bounds() {
        // Constant rate: the two agree.
        assert_eq!(pick_rate(24.0, 24.0), Some(24.0));
        assert_eq!(
            pick_rate(30000.0 / 1001.0, 30000.0 / 1001.0),
            Some(30000.0 / 1001.0)
        );
        // Variable: the base rate shows every frame at its time.
        assert_eq!(pick_rate(16.0, 24.0), Some(24.0));
        // A base rate that is a timestamp clock, not a frame rate.
        assert_eq!(pick_rate(29.5, 1000.0), Some(29.5));
        // One of the two unknown (0/0 reads as NaN).
        assert_eq!(pick_rate(f64::NAN, 25.0), Some(25.0));
        assert_eq!(pick_rate(25.0, f64::NAN), Some(25.0));
        assert_eq!(pick_rate(f64::NAN, 0.0), None);
    }
}
