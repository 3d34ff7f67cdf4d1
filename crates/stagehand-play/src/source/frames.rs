//! [`Frames`]: what the player's decoders and cache need of a source, so
//! the decode threads, the frame cache and the producer are written once
//! for image sequences and movies.

use super::Frame;
use crate::PlayError;
use crate::cache::buffers::FrameBuffers;
use std::sync::Arc;

/// A source of frames by position: an image sequence (a file per
/// position, gaps where files are missing) or a movie (a decoder that
/// runs forward and seeks).
pub trait Frames: Send + Sync {
    /// Positions, gaps included.
    fn len(&self) -> usize;

    /// Whether there are no positions (never, for an opened source).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether position `pos` has no frame (the previous one stays up).
    fn is_gap(&self, pos: usize) -> bool;

    /// Positions that are gaps.
    fn gaps(&self) -> usize {
        self.gap_runs().count()
    }

    /// The gaps, as runs of positions (none for a movie).
    fn gap_runs(&self) -> &super::Gaps {
        const NONE: &super::Gaps = &super::Gaps::NONE;
        NONE
    }

    /// The number a user knows position `pos` by: the frame number in its
    /// file name, or the position.
    fn number(&self, pos: usize) -> i64;

    /// Decodes position `pos` into a buffer from `buffers`. Called from
    /// several decode threads at once.
    fn decode(&self, pos: usize, buffers: &Arc<FrameBuffers>) -> Result<Frame, PlayError>;

    /// Decode threads worth running: as many as asked for files decoded
    /// one per thread; one for a movie, whose decoder runs forward and
    /// threads inside.
    fn decoders(&self, asked: usize) -> usize {
        asked
    }
}

/// An image sequence as [`Frames`]: a file per position, each checked
/// against the size the sequence was opened with.
pub struct SequenceFrames {
    sequence: std::sync::Arc<super::Sequence>,
    expected: super::FrameInfo,
}

impl SequenceFrames {
    /// `sequence`, whose frames must all be `expected`'s size.
    pub fn new(sequence: std::sync::Arc<super::Sequence>, expected: super::FrameInfo) -> Self {
        Self { sequence, expected }
    }
}

impl Frames for SequenceFrames {
    fn len(&self) -> usize {
        self.sequence.len()
    }

    fn is_gap(&self, pos: usize) -> bool {
        self.sequence.path(pos).is_none()
    }

    fn gaps(&self) -> usize {
        self.sequence.gaps()
    }

    fn gap_runs(&self) -> &super::Gaps {
        self.sequence.gap_runs()
    }

    fn number(&self, pos: usize) -> i64 {
        self.sequence.number(pos).unwrap_or(pos as i64)
    }

    fn decode(&self, pos: usize, buffers: &Arc<FrameBuffers>) -> Result<Frame, PlayError> {
        let Some(path) = self.sequence.path(pos) else {
            return Err(PlayError::InvalidOption(format!(
                "position {pos} of the sequence is a gap"
            )));
        };
        #[cfg(feature = "video")]
        if self.expected.yuv.is_some() {
            // JPEGs whose planes go up as they are (the sequence was
            // opened so: see `source::jpeg_planes`).
            return super::decode_jpeg_planes(path, &self.expected, buffers);
        }
        let frame = super::decode_into(path, buffers)?;
        check_size(path, &self.expected, &frame.info)?;
        Ok(frame)
    }
}

/// A frame must match the sequence's first in size.
pub fn check_size(
    path: &std::path::Path,
    expected: &super::FrameInfo,
    got: &super::FrameInfo,
) -> Result<(), PlayError> {
    if (got.width, got.height) != (expected.width, expected.height) {
        return Err(PlayError::SizeMismatch {
            path: path.to_owned(),
            expected: (expected.width, expected.height),
            got: (got.width, got.height),
        });
    }
    Ok(())
}
