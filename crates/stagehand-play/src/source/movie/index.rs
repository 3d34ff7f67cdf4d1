//! A movie's frames, found by reading its packets (no decoding): each
//! frame's timestamp and whether it starts a group a decoder can begin
//! at, in presentation order; then the player's positions, one per tick
//! of the movie's rate, each showing the frame on screen at its time.
//!
//! Variable frame rates map onto positions that way: a frame held longer
//! than a tick covers several positions, a frame shorter than a tick may
//! cover none.

use ffmpeg_next as ffmpeg;

/// One frame of the video stream, in presentation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IndexedFrame {
    /// Presentation timestamp, in the stream's time base.
    pub pts: i64,
    /// Whether decoding can start here (a keyframe).
    pub key: bool,
}

/// The frames of a video stream and the positions that show them.
#[derive(Debug)]
pub(super) struct Index {
    /// In presentation order.
    pub frames: Vec<IndexedFrame>,
    /// Position -> index into `frames`.
    pub positions: Vec<u32>,
    /// Seconds per timestamp unit.
    pub time_base: f64,
    /// Where reading stopped early: the file is damaged or cut short
    /// after the last frame indexed.
    pub damage: Option<String>,
    /// Every frame is a keyframe (ProRes, DNxHR, FFV1...): no frame
    /// refers to another, so one can be left out unread. From the packets'
    /// marks; [`Movie::open`](super::Movie::open) also asks the codec.
    pub intra_only: bool,
}

/// Most positions per indexed frame: timestamps that claim a frame lasts
/// for hours would otherwise turn into millions of positions.
const MAX_POSITIONS_PER_FRAME: usize = 64;

impl Index {
    /// Reads every packet of `stream` in `input` (from where it stands),
    /// stopping past `most` frames: `None` when there are more.
    pub fn read(
        input: &mut ffmpeg::format::context::Input,
        stream: usize,
        time_base: f64,
        rate: f64,
        most: usize,
    ) -> Option<Index> {
        let (mut frames, damage) = read_frames(input, stream, most)?;
        frames.sort_by_key(|f| f.pts);
        frames.dedup_by_key(|f| f.pts);
        let positions = positions(&frames, time_base, rate);
        Some(Index {
            intra_only: frames.iter().all(|f| f.key),
            frames,
            positions,
            time_base,
            damage,
        })
    }

    /// Notes damage when the frames stop more than a frame and a half
    /// before the end the container's header declares (`declared`, in
    /// FFmpeg's microseconds; 0 or less when it declares none): a file cut
    /// short reads to its end without an error.
    pub fn check_length(&mut self, declared: i64, rate: f64) {
        if self.damage.is_some() || self.frames.is_empty() || declared <= 0 {
            return;
        }
        let declared = declared as f64 / 1e6;
        let end = self.seconds(self.frames.len() - 1) + 1.0 / rate;
        if declared - end > 1.5 / rate {
            self.damage = Some(format!(
                "its header says {declared:.2} s, but its frames stop at {end:.2} s (frame {}): the file is cut short",
                self.frames.len() - 1
            ));
        }
    }

    /// The frame whose timestamp is `pts`, or the last before it.
    pub fn frame_at(&self, pts: i64) -> Option<usize> {
        self.frames.partition_point(|f| f.pts <= pts).checked_sub(1)
    }

    /// The last keyframe at or before frame `i` (frame 0 if none is
    /// marked: decoding from the start always works).
    pub fn key_before(&self, i: usize) -> usize {
        self.frames[..=i.min(self.frames.len().saturating_sub(1))]
            .iter()
            .rposition(|f| f.key)
            .unwrap_or(0)
    }

    /// Seconds from the first frame to frame `i`.
    pub fn seconds(&self, i: usize) -> f64 {
        (self.frames[i].pts as f64 - self.frames[0].pts as f64) * self.time_base
    }
}

/// The frames of the packets of `stream` in `input`, in the order read, and
/// the damage that stopped reading early, if any; `None` past `most`
/// frames. A damaged packet with more after it (the seam of a stream cut
/// together, a transmission error) is read on past: its frame stays, for
/// the decoder to make what it can of. Only one the stream ends on is
/// where the file was cut short.
fn read_frames(
    input: &mut ffmpeg::format::context::Input,
    stream: usize,
    most: usize,
) -> Option<(Vec<IndexedFrame>, Option<String>)> {
    let mut frames = Vec::new();
    // The damaged packet last read, while no whole one has come after it.
    let mut cut: Option<(ffmpeg::Packet, String)> = None;
    loop {
        let (packet, damage) = match next_packet(input, stream, frames.len()) {
            Ok(Some(read)) => read,
            Ok(None) => return Some((frames, cut.map(|(_, damage)| damage))),
            Err(damage) => return Some((frames, Some(damage))),
        };
        // Another packet after a damaged one: that one was no cut.
        if let Some((damaged, _)) = cut.take() {
            push_frame(&mut frames, &damaged, most)?;
        }
        match damage {
            Some(damage) => cut = Some((packet, damage)),
            None => push_frame(&mut frames, &packet, most)?,
        }
    }
}

/// Adds `packet`'s frame to `frames` (a packet without a time adds none);
/// `None` when that would make more than `most`.
fn push_frame(frames: &mut Vec<IndexedFrame>, packet: &ffmpeg::Packet, most: usize) -> Option<()> {
    let Some(pts) = packet.pts().or(packet.dts()) else {
        return Some(());
    };
    if frames.len() == most {
        return None;
    }
    frames.push(IndexedFrame {
        pts,
        key: packet.is_key(),
    });
    Some(())
}

/// The next packet of `stream` (that of frame `read`, with `read` frames
/// read before it), with what to say of it if the demuxer flagged it as
/// damaged and the stream ends there; `Ok(None)` at the end; `Err` saying
/// the damage where a read error ends the stream early.
fn next_packet(
    input: &mut ffmpeg::format::context::Input,
    stream: usize,
    read: usize,
) -> Result<Option<(ffmpeg::Packet, Option<String>)>, String> {
    let packet = match super::demux::next_packet(input, stream) {
        Ok(packet) => packet,
        Err(ffmpeg::Error::Eof) => return Ok(None),
        Err(e) => return Err(format!("reading stopped after {read} frames: {e}")),
    };
    let damage = packet
        .is_corrupt()
        .then(|| format!("the packet of frame {read} is damaged (the file ends or is cut there)"));
    Ok(Some((packet, damage)))
}

/// One position per tick of `rate` from the first frame's time to the
/// last's: each shows the last frame at or before its time (half a tick
/// of slack for timestamps rounded in the file).
fn positions(frames: &[IndexedFrame], time_base: f64, rate: f64) -> Vec<u32> {
    let Some(first) = frames.first() else {
        return Vec::new();
    };
    // In floating point: timestamps far apart must not overflow.
    let seconds = |f: &IndexedFrame| (f.pts as f64 - first.pts as f64) * time_base;
    let last = seconds(&frames[frames.len() - 1]);
    let count = position_count(frames.len(), last, rate);
    let mut out = Vec::with_capacity(count);
    let mut i = 0;
    for p in 0..count {
        let due = (p as f64 + 0.5) / rate;
        while i + 1 < frames.len() && seconds(&frames[i + 1]) <= due {
            i += 1;
        }
        out.push(i as u32);
    }
    out
}

/// How many positions `frames` frames spanning `last` seconds make at
/// `rate`: one per tick, at least one, and bounded.
fn position_count(frames: usize, last: f64, rate: f64) -> usize {
    // Bounded before anything is allocated: a few positions per frame,
    // and one past the most a movie may have (so a longer one is refused).
    let cap = frames
        .saturating_mul(MAX_POSITIONS_PER_FRAME)
        .min(super::MAX_FRAMES + 1);
    // Clamped in floating point too: a span of timestamps whose ticks do
    // not fit a `usize` (or are not a number) must not wrap to none.
    let ticks = (last * rate).round();
    if ticks >= 0.0 {
        ticks.min((cap - 1) as f64) as usize + 1
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(pts: &[i64]) -> Vec<IndexedFrame> {
        pts.iter()
            .map(|&pts| IndexedFrame { pts, key: pts == 0 })
            .collect()
    }

    #[test]
    fn a_constant_rate_maps_each_position_to_its_frame() {
        // 24 fps in a 1/12288 time base (what FFmpeg writes in MOV).
        let f = frames(&(0..48).map(|i| i * 512).collect::<Vec<_>>());
        let p = positions(&f, 1.0 / 12288.0, 24.0);
        assert_eq!(p, (0..48).collect::<Vec<u32>>());
    }

    #[test]
    fn a_variable_rate_holds_long_frames_and_skips_short_ones() {
        // Milliseconds: a frame held 125 ms covers three 24 fps ticks.
        let f = frames(&[0, 42, 167, 170, 208]);
        let p = positions(&f, 1e-3, 24.0);
        assert_eq!(p, vec![0, 1, 1, 1, 3, 4]);
    }

    #[test]
    fn timestamps_whose_ticks_overflow_a_usize_still_make_positions() {
        // 2^62 units of a second apart: more ticks than a usize holds.
        let f = frames(&[0, i64::MAX / 2]);
        let p = positions(&f, 1.0, 1e9);
        assert_eq!(p.len(), 2 * MAX_POSITIONS_PER_FRAME);
        assert_eq!((p[0], p[p.len() - 1]), (0, 0));
        // Not a number of seconds at all: one position, the first frame.
        assert_eq!(positions(&f, f64::NAN, 24.0), vec![0]);
    }

    #[test]
    fn bogus_timestamps_cannot_make_millions_of_positions() {
        let f = frames(&[0, 1_000_000_000]);
        assert_eq!(positions(&f, 1e-3, 24.0).len(), 2 * MAX_POSITIONS_PER_FRAME);
    }
}
