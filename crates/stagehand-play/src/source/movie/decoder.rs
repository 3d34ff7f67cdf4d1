//! The decoder a movie's positions are read through: it runs forward
//! from where it stands, and seeks to the keyframe before a frame that
//! is behind it or far ahead, then decodes forward to that frame.

use super::frame_memory::{self, Lending};
use super::index::Index;
use super::planes;
use crate::cache::buffers::FrameBuffers;
use crate::source::{Frame, FrameInfo};
use ffmpeg_next as ffmpeg;
use std::sync::Arc;

/// Frames ahead of the decoder that it decodes its way to even when a
/// keyframe lies between (a seek restarts the decoder's frame threads,
/// which costs more than a frame or two); further ahead, it seeks to the
/// last keyframe before the frame (for an intra-only codec, the frame
/// itself).
const RUN_AHEAD: usize = 2;

/// Frames ahead that a decoder of an intra-only movie reads its way to,
/// handing the decoder only the frame wanted: reading packets costs far
/// less than a seek, which restarts the decoder's frame threads.
const INTRA_RUN_AHEAD: usize = 48;

/// An open demuxer and video decoder, and where they stand.
pub(super) struct Decoder {
    input: ffmpeg::format::context::Input,
    video: Lending,
    stream: usize,
    /// The size and format every frame must have (the first frame's).
    info: Option<FrameInfo>,
    /// The index of the last frame decoded since the last seek; that
    /// frame, as the decoder gave it, is in `scratch`.
    at: Option<usize>,
    /// The last frame given, by index: asked for again, it is given
    /// again as it is.
    given: Option<(usize, Frame)>,
    /// End of stream sent to the decoder.
    drained: bool,
    /// Nothing decoded or sought yet: the decoder stands before frame 0.
    at_start: bool,
    /// Frames decoded since the last seek.
    since_seek: usize,
    /// Packets of frames before this timestamp are not wanted: the
    /// decoder may leave out those no other frame refers to.
    skip_before: Option<i64>,
    /// Whether the decoder is leaving out unwanted non-reference frames.
    skipping: bool,
    /// Every frame is a keyframe: unwanted frames are not even sent.
    intra_only: bool,
    /// The last frame decoded (kept through the end of the stream).
    scratch: ffmpeg::frame::Video,
    /// Where the decoder puts a frame (it empties it first, even when it
    /// has none to give).
    incoming: ffmpeg::frame::Video,
}

/// How many threads a decoder decodes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Threads {
    /// The calling thread alone: for a look at the first frame, where
    /// FFmpeg's frame threads (each with its own context and frame pool)
    /// would cost more to start and stop than the one frame costs.
    One,
    /// Every core: for playback.
    EveryCore,
}

/// A codec context for `parameters`. With [`Threads::EveryCore`], threads
/// across every core: one stream decodes 4K faster than real time only
/// this way (the default is one thread). Frame threads decode several
/// frames at once, so a frame comes out a few packets after it goes in;
/// an intra-only movie's frames split into slices, decoded at once with
/// no such delay, which a player that skips frames to keep time needs.
fn threaded_context(
    parameters: ffmpeg::codec::Parameters,
    intra_only: bool,
    threads: Threads,
) -> Result<ffmpeg::codec::Context, String> {
    let slices = intra_only
        && ffmpeg::decoder::find(parameters.id()).is_some_and(|c| {
            c.capabilities()
                .contains(ffmpeg::codec::Capabilities::SLICE_THREADS)
        });
    let mut context =
        ffmpeg::codec::Context::from_parameters(parameters).map_err(|e| e.to_string())?;
    context.set_threading(match threads {
        Threads::One => ffmpeg::codec::threading::Config {
            count: 1,
            ..Default::default()
        },
        Threads::EveryCore => ffmpeg::codec::threading::Config {
            kind: if slices {
                ffmpeg::codec::threading::Type::Slice
            } else {
                ffmpeg::codec::threading::Type::Frame
            },
            count: 0,
            ..Default::default()
        },
    });
    Ok(context)
}

/// The video decoder of `input`'s stream `stream`, on `threads`; with
/// writing its frames into `buffers`, laid out as their upload lays them
/// out where that is safe.
fn open_video(
    input: &ffmpeg::format::context::Input,
    stream: usize,
    intra_only: bool,
    threads: Threads,
    buffers: &Arc<FrameBuffers>,
) -> Result<Lending, String> {
    let parameters = input
        .stream(stream)
        .ok_or("the video stream went away")?
        .parameters();
    let context = threaded_context(parameters, intra_only, threads)?;
    let open = |context: ffmpeg::codec::Context| {
        context
            .decoder()
            .video()
            .map_err(|e| format!("no decoder for it in this FFmpeg ({e})"))
    };
    let as_uploaded = frame_memory::MOVIE_CODECS_AS_UPLOADED;
    frame_memory::lend(context, buffers, as_uploaded, open)
}

/// Refuses a frame (`got`, of pixel format `format`) whose size or
/// Y'CbCr format differs from the movie's first (`info`).
fn check_same_format(
    got: &FrameInfo,
    info: &FrameInfo,
    format: ffmpeg::format::Pixel,
) -> Result<(), String> {
    if (got.width, got.height, got.yuv.map(|y| (y.chroma, y.bits)))
        != (
            info.width,
            info.height,
            info.yuv.map(|y| (y.chroma, y.bits)),
        )
    {
        return Err(format!(
            "a frame is {}x{} {:?} where the movie starts {}x{} {:?}: the player needs one size and format",
            got.width,
            got.height,
            format,
            info.width,
            info.height,
            got.yuv.map(|y| y.chroma)
        ));
    }
    Ok(())
}

impl Decoder {
    /// Opens `path`'s stream `stream`, decoding on `threads`; every
    /// frame must be `info`'s size and format, when known (the movie's
    /// first frame), else the first this decoder gives. `intra_only`:
    /// every frame is a keyframe. Frames are written into `buffers` (see
    /// [`frame_memory::lend`]).
    pub fn open(
        path: &std::path::Path,
        stream: usize,
        info: Option<FrameInfo>,
        intra_only: bool,
        threads: Threads,
        buffers: &Arc<FrameBuffers>,
    ) -> Result<Self, String> {
        let input = ffmpeg::format::input(path).map_err(|e| e.to_string())?;
        let video = open_video(&input, stream, intra_only, threads, buffers)?;
        Ok(Self {
            input,
            video,
            stream,
            info,
            at: None,
            given: None,
            drained: false,
            at_start: true,
            since_seek: 0,
            skip_before: None,
            skipping: false,
            intra_only,
            scratch: ffmpeg::frame::Video::empty(),
            incoming: ffmpeg::frame::Video::empty(),
        })
    }

    /// The first frame's size and format (decoding it if none has been).
    pub fn info(&mut self, index: &Index) -> Result<FrameInfo, String> {
        if self.info.is_none() {
            self.frame(0, index)?;
        }
        self.info.ok_or_else(|| "no frame".into())
    }

    /// Frame `want` (an index into `index.frames`).
    ///
    /// Frames on the way to it are decoded (later frames refer to them)
    /// but not given, and those no other frame refers to are left out:
    /// a decoder that has fallen behind the playhead catches up faster
    /// than it plays.
    pub fn frame(&mut self, want: usize, index: &Index) -> Result<Frame, String> {
        if let Some((i, f)) = &self.given
            && *i == want
        {
            return Ok(f.clone());
        }
        let key = index.key_before(want);
        let mut sought = None;
        if !self.goes_forward(want, key) {
            self.seek(key, index)?;
            sought = Some(key);
        }
        self.skip_before = index.frames.get(want).map(|f| f.pts);
        let result = self.run_to(want, sought, index);
        self.skip_before = None;
        result
    }

    /// Whether frame `want`, whose last keyframe before it is `key`, is
    /// reached by decoding forward from where the decoder stands, not by
    /// a seek.
    fn goes_forward(&self, want: usize, key: usize) -> bool {
        let near = if self.intra_only {
            INTRA_RUN_AHEAD
        } else {
            RUN_AHEAD
        };
        match self.at {
            None => self.at_start && (key == 0 || want <= near),
            // Forward when no keyframe lies between, or the frame is near.
            Some(i) => i < want && (key <= i || want - i <= near),
        }
    }

    /// Decodes forward to frame `want` and gives it.
    fn run_to(
        &mut self,
        want: usize,
        mut sought: Option<usize>,
        index: &Index,
    ) -> Result<Frame, String> {
        loop {
            let restart = match self.next(index)? {
                None if self.left_unread_before(want) => {
                    // The frames before it were left unread: decode the
                    // one just before it, to stand in as it would have.
                    self.skip_before = None;
                    want - 1
                }
                None => return self.stand_in_at_end(want),
                Some(i) if i < want => continue,
                // A seek that lands past the frame (a keyframe the index
                // marked but the decoder cannot start at) decodes from the
                // start instead.
                Some(i) if i > want && self.since_seek == 1 && sought.is_some_and(|k| k > 0) => 0,
                Some(i) => return self.give(i),
            };
            self.seek(restart, index)?;
            sought = Some(restart);
        }
    }

    /// Whether the stream ended short of frame `want` of an intra-only
    /// movie whose frames before it were left unread.
    fn left_unread_before(&self, want: usize) -> bool {
        let short = self.at.is_none_or(|i| i + 1 < want);
        self.intra_only && self.skip_before.is_some() && short && want > 0
    }

    /// The frame that stands in for frame `want` when the stream ended
    /// before it: the last frame decoded, where there is one before it.
    fn stand_in_at_end(&mut self, want: usize) -> Result<Frame, String> {
        match self.at {
            // The stream ended before the frame (one the index
            // had but the decoder did not give): the last frame
            // decoded stands in.
            Some(i) if i < want => self.give(i),
            _ => Err(format!("the stream ended before frame {want}")),
        }
    }

    /// The frame last decoded, frame `i`, held as the decoder gave it.
    fn give(&mut self, i: usize) -> Result<Frame, String> {
        let info = self.info.ok_or("no frame")?;
        let frame = planes::hold(&self.scratch, info)?;
        self.given = Some((i, frame.clone()));
        Ok(frame)
    }

    /// Seeks to the keyframe `key` (by index) and resets the decoder.
    fn seek(&mut self, key: usize, index: &Index) -> Result<(), String> {
        let seconds = index.seconds(key) + index.frames[0].pts as f64 * index.time_base;
        let ts = (seconds * f64::from(ffmpeg::ffi::AV_TIME_BASE)).floor() as i64;
        self.input
            // `..ts` passes `ts` as the latest time allowed: the keyframe
            // at or before it.
            .seek(ts, ..ts)
            .map_err(|e| format!("cannot seek to frame {key}: {e}"))?;
        self.video.flush();
        self.at = None;
        self.given = None;
        self.drained = false;
        self.at_start = false;
        self.since_seek = 0;
        Ok(())
    }

    /// Decodes the next frame: `Some(its index)`, `None` at the end.
    fn next(&mut self, index: &Index) -> Result<Option<usize>, String> {
        loop {
            match self.video.receive_frame(&mut self.incoming) {
                Ok(()) => return self.take(index).map(Some),
                Err(ffmpeg::Error::Eof) => return Ok(None),
                Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::error::EAGAIN => {}
                Err(e) => return Err(format!("decoding failed: {e}")),
            }
            if self.drained {
                return Ok(None);
            }
            self.feed()?;
        }
    }

    /// Sends the decoder the next packet of the stream, or the end.
    fn feed(&mut self) -> Result<(), String> {
        let Some(packet) = self.read_packet()? else {
            return Ok(());
        };
        // A packet of an unwanted frame: the decoder may leave it out if
        // no other frame refers to it.
        let skip = self
            .skip_before
            .is_some_and(|before| packet.pts().is_some_and(|pts| pts < before));
        if skip && self.intra_only {
            return Ok(());
        }
        self.set_skipping(skip);
        match self.video.send_packet(&packet) {
            Ok(()) => Ok(()),
            // A damaged packet: skip it; the frames it held are missing
            // and the index's neighbours stand in.
            Err(ffmpeg::Error::InvalidData) => Ok(()),
            Err(e) => Err(format!("decoding failed: {e}")),
        }
    }

    /// The stream's next packet; `None` at its end, once the decoder has
    /// been sent the end.
    fn read_packet(&mut self) -> Result<Option<ffmpeg::Packet>, String> {
        match super::demux::next_packet(&mut self.input, self.stream) {
            Ok(packet) => Ok(Some(packet)),
            Err(_) => {
                // The end, or damage: what the decoder holds still comes
                // out.
                self.drained = true;
                self.video
                    .send_eof()
                    .map(|()| None)
                    .map_err(|e| format!("decoding failed: {e}"))
            }
        }
    }

    /// Has the decoder leave out frames no other frame refers to, or
    /// stop leaving them out, where that changes.
    fn set_skipping(&mut self, skip: bool) {
        if skip != self.skipping {
            self.video.skip_frame(if skip {
                ffmpeg::Discard::NonReference
            } else {
                ffmpeg::Discard::Default
            });
            self.skipping = skip;
        }
    }

    /// Checks the frame just received and works out its index; it becomes
    /// the last frame decoded.
    fn take(&mut self, index: &Index) -> Result<usize, String> {
        let got = planes::describe(&self.incoming)?;
        let info = *self.info.get_or_insert(got);
        check_same_format(&got, &info, self.incoming.format())?;
        // Taken: it becomes the last frame decoded (a frame refused above
        // is not, and the one before it still stands in at the end).
        std::mem::swap(&mut self.scratch, &mut self.incoming);
        let pts = self.scratch.timestamp().or(self.scratch.pts());
        let i = match pts.and_then(|p| index.frame_at(p)) {
            Some(i) => i,
            None => self.at.map_or(0, |j| j + 1),
        };
        self.at = Some(i);
        self.at_start = false;
        self.since_seek += 1;
        Ok(i)
    }
}
