//! Sequences as artists name them: a folder of frames, or a pattern such as
//! `shot.####.exr`, `shot.%04d.exr` or `shot.@@@@.exr`; frame numbers read
//! from the names (`shot_v003.1001.exr` is frame 1001: the last run of
//! digits), gaps found, and a range applied.

use crate::PlayError;
use std::path::{Path, PathBuf};

/// One frame number of a sequence: the file that holds it, or a gap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceEntry {
    /// The frame number read from the name; `None` for files that carry
    /// none (played in natural order).
    pub number: Option<i64>,
    /// The file, or `None` where the number is missing (a gap: the player
    /// holds the previous frame).
    pub path: Option<PathBuf>,
}

/// Frames in play order, gaps included.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// What was opened (a folder or a pattern).
    pub spec: PathBuf,
    /// One entry per frame number from the first to the last (or per file,
    /// where names carry no numbers).
    pub entries: Vec<SequenceEntry>,
}

impl Sequence {
    /// Opens a folder or a pattern, keeping frame numbers within `range`
    /// (first and last, inclusive).
    pub fn open(spec: &Path, range: Option<(i64, i64)>) -> Result<Self, PlayError> {
        todo!("{spec:?} {range:?}")
    }

    /// Entries, gaps included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has no entries (never true of an opened sequence).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries that are gaps.
    pub fn gaps(&self) -> usize {
        self.entries.iter().filter(|e| e.path.is_none()).count()
    }

    /// The first file (an opened sequence always has one).
    pub fn first_file(&self) -> Option<&Path> {
        self.entries.iter().find_map(|e| e.path.as_deref())
    }
}
