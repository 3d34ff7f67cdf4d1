//! Sequences as artists name them: a folder of frames, or a pattern such as
//! `shot.####.exr`, `shot.%04d.exr` or `shot.@@@@.exr`; frame numbers read
//! from the names (`shot_v003.1001.exr` is frame 1001: the last run of
//! digits), gaps found, and a range applied.
//!
//! # What [`Sequence::open`] accepts
//!
//! - **A folder.** Its image files (by extension, see
//!   [`super::is_supported`]) are the frames; hidden files (`.name`),
//!   sub-folders and names that are not UTF-8 are skipped. Where every name
//!   has a frame number (the last run of digits before the extension) and
//!   all share the text around it, they are one numbered sequence. Where no
//!   name has a number, the files play in natural order
//!   ([`super::natural_cmp`]), numbered by position. Anything else (two
//!   sequences, such as `a.####.exr` and `b.####.exr`, or numbered files next
//!   to unnumbered ones) is [`PlayError::InvalidOption`], naming what was
//!   found and asking for a pattern: the player does not guess which one was
//!   meant.
//! - **A pattern.** The file name holds exactly one placeholder: a run of `#`
//!   or `@` (`####`: four digits, zero-padded; a single `#` or `@`: any
//!   width), or `%0Nd` (N digits) or `%d` (any width). Files of the pattern's
//!   folder (`.` if it names none) match when the text around the digits is
//!   the same; where a width is given, a number has exactly that many digits,
//!   or more without a leading zero (`####` takes `0042` and `10000`, not
//!   `042` or `00042`).
//! - **One image file.** A sequence of one frame, numbered if its name has a
//!   number.
//!
//! # Numbers, gaps and range
//!
//! Numbered entries run from the smallest number to the largest, one per
//! number: a missing number is a gap (an entry without a path). A range
//! (first and last, inclusive) keeps the files numbered within it and then
//! trims to the first and last file kept: the sequence never starts or ends
//! with a gap. For unnumbered files the range counts positions from 1.
//!
//! # Errors
//!
//! - A missing folder, file or pattern folder: [`PlayError::Io`] with the
//!   OS's reason.
//! - A folder or pattern that finds no image file: [`PlayError::NoFrames`].
//! - A range whose first frame is after its last, or that holds no file:
//!   [`PlayError::BadOption`] naming the range.
//! - Two files with one frame number (`f.1.exr` and `f.001.exr`), several
//!   sequences in one folder, several placeholders in one pattern, or
//!   numbers so far apart that the sequence would have more than
//!   [`MAX_ENTRIES`] entries: [`PlayError::InvalidOption`].
//! - A pattern or file whose extension the player does not read:
//!   [`PlayError::Unsupported`].

use super::{is_supported, natural_cmp};
use crate::PlayError;
use std::path::{Path, PathBuf};

/// The most entries (files and gaps) a sequence may have; numbers further
/// apart than this are refused instead of allocated.
pub const MAX_ENTRIES: usize = 10_000_000;

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
///
/// Only the files are stored: a position's number is the first number
/// plus the position, and its file is found by a binary search, so two
/// files numbered 0 and 9999999 cost two entries and one run of gaps.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// What was opened (a folder or a pattern).
    pub spec: PathBuf,
    /// The files in play order: by number, or in natural order where
    /// names carry no numbers. Every entry has a path.
    files: Vec<SequenceEntry>,
    /// Positions, gaps included: the span of the numbers (or the files).
    len: usize,
    /// The positions without a file.
    gaps: super::Gaps,
}

impl Sequence {
    /// Opens a folder, a pattern or one file, keeping frame numbers within
    /// `range` (first and last, inclusive); see the [module](self) for the
    /// rules and errors.
    pub fn open(spec: &Path, range: Option<(i64, i64)>) -> Result<Self, PlayError> {
        check_range_order(range)?;
        let files = match list_files(spec)? {
            Files::Numbered(files) => numbered_entries(spec, files, range)?,
            Files::Unnumbered(files) => unnumbered_entries(spec, files, range)?,
        };
        Ok(Self::of_files(spec, files))
    }

    /// The sequence of `files`, in play order, all numbered (sorted, apart,
    /// spanning at most [`MAX_ENTRIES`]) or none.
    fn of_files(spec: &Path, files: Vec<SequenceEntry>) -> Self {
        let len = match (files.first(), files.last()) {
            (Some(first), Some(last)) => match (first.number, last.number) {
                (Some(first), Some(last)) => (last - first) as usize + 1,
                _ => files.len(),
            },
            _ => 0,
        };
        let mut sequence = Self {
            spec: spec.to_owned(),
            files,
            len,
            gaps: super::Gaps::none(),
        };
        sequence.gaps = super::Gaps::between(sequence.paths().map(|(pos, _)| pos), len);
        sequence
    }

    /// Positions, gaps included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no positions (never true of an opened sequence).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions that are gaps.
    pub fn gaps(&self) -> usize {
        self.gaps.count()
    }

    /// The positions that are gaps, as runs.
    pub fn gap_runs(&self) -> &super::Gaps {
        &self.gaps
    }

    /// Positions that are files.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Each file with its position, in play order.
    pub fn paths(&self) -> impl Iterator<Item = (usize, &Path)> + '_ {
        self.files.iter().enumerate().map(|(i, e)| {
            let pos = match (e.number, self.first_number()) {
                (Some(n), Some(first)) => (n - first) as usize,
                _ => i,
            };
            (pos, e.path.as_deref().unwrap_or(Path::new("")))
        })
    }

    /// Position `pos`: its number (where names carry them) and its file
    /// (`None` for a gap); `None` past the end.
    pub fn entry(&self, pos: usize) -> Option<SequenceEntry> {
        (pos < self.len).then(|| SequenceEntry {
            number: self.number(pos),
            path: self.path(pos).map(Path::to_owned),
        })
    }

    /// The file at position `pos`; `None` for a gap or past the end.
    pub fn path(&self, pos: usize) -> Option<&Path> {
        let entry = match self.first_number() {
            Some(first) => {
                let number = first.checked_add(i64::try_from(pos).ok()?)?;
                let i = self
                    .files
                    .binary_search_by_key(&Some(number), |e| e.number)
                    .ok()?;
                &self.files[i]
            }
            None => self.files.get(pos)?,
        };
        entry.path.as_deref()
    }

    /// The frame number of position `pos`, where names carry numbers.
    pub fn number(&self, pos: usize) -> Option<i64> {
        if pos >= self.len {
            return None;
        }
        self.first_number()?.checked_add(i64::try_from(pos).ok()?)
    }

    /// The position of frame number `n`, where names carry numbers (a gap
    /// has a position too).
    pub fn position_of(&self, n: i64) -> Option<usize> {
        let (first, last) = self.number_range()?;
        (first..=last).contains(&n).then(|| (n - first) as usize)
    }

    /// The first file (an opened sequence always has one).
    pub fn first_file(&self) -> Option<&Path> {
        self.files.first()?.path.as_deref()
    }

    /// The frame numbers of the first and last entries, where names carry
    /// numbers.
    pub fn number_range(&self) -> Option<(i64, i64)> {
        Some((self.files.first()?.number?, self.files.last()?.number?))
    }

    fn first_number(&self) -> Option<i64> {
        self.files.first()?.number
    }
}

/// Refuses a range whose first frame is after its last.
fn check_range_order(range: Option<(i64, i64)>) -> Result<(), PlayError> {
    match range.filter(|(first, last)| first > last) {
        Some((first, last)) => Err(PlayError::BadOption {
            field: crate::error::Field::Range,
            message: format!("{first}-{last}: the first frame is after the last"),
        }),
        None => Ok(()),
    }
}

/// The files `spec` names: a folder's, one file's, or, where no such path
/// exists, those of the pattern its name holds.
fn list_files(spec: &Path) -> Result<Files, PlayError> {
    match std::fs::metadata(spec) {
        Ok(meta) if meta.is_dir() => list_folder(spec),
        Ok(_) => single_file(spec),
        Err(error) => match spec_pattern(spec)? {
            Some(pattern) => list_pattern(spec, &pattern),
            None => Err(PlayError::Io {
                path: spec.to_owned(),
                reason: error.to_string(),
            }),
        },
    }
}

/// The pattern of `spec`'s file name: `None` where it has no placeholder,
/// an error where it has more than one.
fn spec_pattern(spec: &Path) -> Result<Option<Pattern>, PlayError> {
    let pattern = spec
        .file_name()
        .and_then(|n| n.to_str())
        .map(Pattern::parse)
        .transpose()
        .map_err(|reason| PlayError::InvalidOption(format!("{}: {reason}", spec.display())))?;
    Ok(pattern.flatten())
}

/// The files found, before a range and gaps are applied.
#[derive(Debug)]
enum Files {
    /// Files with frame numbers, in no particular order.
    Numbered(Vec<(i64, PathBuf)>),
    /// Files without numbers, in natural order.
    Unnumbered(Vec<PathBuf>),
}

/// A file name split around its frame number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NumberedName<'a> {
    /// The text before the number.
    prefix: &'a str,
    /// The number's digits as written (`0042`).
    digits: &'a str,
    /// The text after the number, extension included.
    suffix: &'a str,
    /// The number.
    number: i64,
}

/// Splits a file name around its frame number: the last run of ASCII digits
/// before the extension (the text after the last `.`, where there is one).
/// `None` where there is no such run, or its value does not fit in an `i64`.
fn split_number(name: &str) -> Option<NumberedName<'_>> {
    let stem_end = match name.rfind('.') {
        Some(0) | None => name.len(),
        Some(dot) => dot,
    };
    let stem = &name[..stem_end];
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    // Just past the last character that is not a digit (which may take
    // more than one byte: `カット0001.png`).
    let start = stem[..end]
        .char_indices()
        .rfind(|&(_, c)| !c.is_ascii_digit())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let digits = &name[start..end];
    Some(NumberedName {
        prefix: &name[..start],
        digits,
        suffix: &name[end..],
        number: digits.parse().ok()?,
    })
}

/// Whether `digits` is a number written `width` digits wide: exactly that
/// many, or more without a leading zero. `None` takes any digits.
fn fits_width(digits: &str, width: Option<usize>) -> bool {
    match width {
        None => true,
        Some(w) => digits.len() == w || (digits.len() > w && !digits.starts_with('0')),
    }
}

/// A file-name pattern: the text before and after one frame-number
/// placeholder, and the placeholder's width.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    /// The text before the placeholder.
    prefix: String,
    /// The text after it, extension included.
    suffix: String,
    /// Digits the number is padded to; `None` for any width.
    width: Option<usize>,
}

impl Pattern {
    /// Reads the placeholder of a file name: `Ok(None)` where it has none,
    /// an error where it has more than one.
    fn parse(name: &str) -> Result<Option<Self>, String> {
        let found = placeholders(name);
        match found.as_slice() {
            [] => Ok(None),
            &[(start, end, width)] => Ok(Some(Self {
                prefix: name[..start].to_owned(),
                suffix: name[end..].to_owned(),
                width: width.filter(|&w| w > 1),
            })),
            _ => Err(format!(
                "the name has {} frame-number placeholders; a pattern has one",
                found.len()
            )),
        }
    }

    /// The frame number of a file name that matches, with its digits.
    fn matches<'a>(&self, name: &'a str) -> Option<(&'a str, i64)> {
        let digits = name
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || !fits_width(digits, self.width)
        {
            return None;
        }
        Some((digits, digits.parse().ok()?))
    }
}

/// The placeholders of a file name: where each starts and ends, and its
/// width (`None` for any width).
fn placeholders(name: &str) -> Vec<(usize, usize, Option<usize>)> {
    let bytes = name.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            c @ (b'#' | b'@') => {
                let run = bytes[i..].iter().take_while(|&&b| b == c).count();
                found.push((i, i + run, Some(run)));
                i += run;
            }
            b'%' => match printf_width(&name[i + 1..]) {
                Some((len, width)) => {
                    found.push((i, i + 1 + len, width));
                    i += 1 + len;
                }
                None => i += 1,
            },
            _ => i += 1,
        }
    }
    found
}

/// Reads `0Nd` or `d` after a `%`: the characters it spans and the width
/// (`None` for `%d`).
fn printf_width(after: &str) -> Option<(usize, Option<usize>)> {
    if after.starts_with('d') {
        return Some((1, None));
    }
    let rest = after.strip_prefix('0')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.as_bytes().get(digits) != Some(&b'd') {
        return None;
    }
    let width = rest[..digits].parse().ok()?;
    Some((digits + 2, Some(width)))
}

/// The names of the files in `folder` the player might read (not hidden,
/// not folders, UTF-8), each with its path.
fn folder_names(folder: &Path, shown: &Path) -> Result<Vec<(String, PathBuf)>, PlayError> {
    let io = |e: std::io::Error| PlayError::Io {
        path: shown.to_owned(),
        reason: e.to_string(),
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(io)? {
        let entry = entry.map_err(io)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') || entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        names.push((name, entry.path()));
    }
    Ok(names)
}

/// The image files of a folder, as one sequence.
fn list_folder(folder: &Path) -> Result<Files, PlayError> {
    let files = supported_files(folder)?;
    let split: Vec<Option<NumberedName<'_>>> =
        files.iter().map(|(name, _)| split_number(name)).collect();
    if split.iter().all(Option::is_none) {
        return Ok(in_natural_order(files));
    }
    if is_one_sequence(&split) {
        let numbered = split
            .iter()
            .zip(&files)
            .filter_map(|(n, (_, path))| n.map(|n| (n.number, path.clone())))
            .collect();
        return Ok(Files::Numbered(numbered));
    }
    Err(PlayError::InvalidOption(several_sequences(
        folder, &files, &split,
    )))
}

/// The image files of a folder, each name with its path; refused where
/// there is none.
fn supported_files(folder: &Path) -> Result<Vec<(String, PathBuf)>, PlayError> {
    let files: Vec<(String, PathBuf)> = folder_names(folder, folder)?
        .into_iter()
        .filter(|(_, path)| is_supported(path))
        .collect();
    if files.is_empty() {
        return Err(PlayError::NoFrames(folder.to_owned()));
    }
    Ok(files)
}

/// Unnumbered files, sorted by name in natural order.
fn in_natural_order(mut files: Vec<(String, PathBuf)>) -> Files {
    files.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    Files::Unnumbered(files.into_iter().map(|(_, p)| p).collect())
}

/// Whether numbered names are one sequence: all the same around the
/// number, or one sequence whose frames were saved in more than one format
/// (`frame_1.png` ... `frame_9.jpg`): the same name before the number,
/// only an extension after it, and no number twice.
fn is_one_sequence(split: &[Option<NumberedName<'_>>]) -> bool {
    let same = |a: &Option<NumberedName<'_>>, b: &Option<NumberedName<'_>>| match (a, b) {
        (Some(a), Some(b)) => a.prefix == b.prefix && a.suffix == b.suffix,
        _ => false,
    };
    let only_extension = |n: &Option<NumberedName<'_>>| {
        n.is_some_and(|n| n.suffix.starts_with('.') && !n.suffix[1..].contains('.'))
    };
    let one_name = split.iter().all(|n| match (n, &split[0]) {
        (Some(a), Some(b)) => a.prefix == b.prefix,
        _ => false,
    });
    let mut numbers: Vec<i64> = split.iter().flatten().map(|n| n.number).collect();
    numbers.sort_unstable();
    let unique = numbers.windows(2).all(|w| w[0] != w[1]);
    split.iter().all(|n| same(n, &split[0]))
        || (one_name && unique && split.iter().all(only_extension))
}

/// The message for a folder that holds more than one sequence: what it
/// holds, and how to choose.
fn several_sequences(
    folder: &Path,
    files: &[(String, PathBuf)],
    split: &[Option<NumberedName<'_>>],
) -> String {
    let (mut found, mut loose) = sequences_in(files, split);
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| natural_cmp(&a.0, &b.0)));
    loose.sort_by(|a, b| natural_cmp(a, b));
    let example = found
        .first()
        .map_or("name.####.exr", |f| f.0.as_str())
        .to_owned();
    let parts = found_parts(found, loose);
    format!(
        "{} holds more than one sequence: {}; pass a pattern to choose one, such as {}",
        folder.display(),
        parts.join(", "),
        folder.join(example).display()
    )
}

/// The sequences found (each with its count of files) and then the loose
/// files, as a message lists them: the first few, and how many more.
fn found_parts(found: Vec<(String, usize)>, loose: Vec<&str>) -> Vec<String> {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = found
        .into_iter()
        .map(|(pattern, n)| format!("{pattern} ({n} file{})", if n == 1 { "" } else { "s" }))
        .chain(loose.into_iter().map(str::to_owned))
        .collect();
    if parts.len() > SHOWN {
        let more = parts.len() - SHOWN;
        parts.truncate(SHOWN);
        parts.push(format!("and {more} more"));
    }
    parts
}

/// Each sequence among `files` as a pattern that matches its files, with
/// its count; and the files with no number.
fn sequences_in<'a>(
    files: &'a [(String, PathBuf)],
    split: &[Option<NumberedName<'a>>],
) -> (Vec<(String, usize)>, Vec<&'a str>) {
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    let mut loose: Vec<&str> = Vec::new();
    for ((name, _), numbered) in files.iter().zip(split) {
        match numbered {
            Some(n) => match groups
                .iter_mut()
                .find(|(p, s, _)| *p == n.prefix && *s == n.suffix)
            {
                Some(group) => group.2.push(n.digits),
                None => groups.push((n.prefix, n.suffix, vec![n.digits])),
            },
            None => loose.push(name),
        }
    }
    let found = groups
        .iter()
        .map(|(prefix, suffix, digits)| (group_pattern(prefix, suffix, digits), digits.len()))
        .collect();
    (found, loose)
}

/// The pattern that matches a group of numbered names: as wide as its
/// shortest number where every number fits that width, else any width.
fn group_pattern(prefix: &str, suffix: &str, digits: &[&str]) -> String {
    let min = digits.iter().map(|d| d.len()).min().unwrap_or(1);
    let width = if digits.iter().all(|d| fits_width(d, Some(min))) {
        min
    } else {
        1
    };
    format!("{prefix}{}{suffix}", "#".repeat(width))
}

/// The files a pattern matches.
fn list_pattern(spec: &Path, pattern: &Pattern) -> Result<Files, PlayError> {
    if !is_supported(Path::new(&format!("frame{}", pattern.suffix))) {
        return Err(PlayError::Unsupported {
            path: spec.to_owned(),
            reason: "the player reads EXR, PNG, JPEG and TIFF files".into(),
        });
    }
    let parent = spec.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = parent.unwrap_or(Path::new("."));
    let mut numbered = Vec::new();
    for (name, path) in folder_names(folder, folder)? {
        if let Some((_, number)) = pattern.matches(&name) {
            let path = match parent {
                Some(_) => path,
                None => PathBuf::from(name),
            };
            numbered.push((number, path));
        }
    }
    if numbered.is_empty() {
        return Err(PlayError::NoFrames(spec.to_owned()));
    }
    Ok(Files::Numbered(numbered))
}

/// One existing file as a sequence.
fn single_file(path: &Path) -> Result<Files, PlayError> {
    if !is_supported(path) {
        return Err(PlayError::Unsupported {
            path: path.to_owned(),
            reason: "the player reads EXR, PNG, JPEG and TIFF files".into(),
        });
    }
    let number = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(split_number)
        .map(|n| n.number);
    Ok(match number {
        Some(n) => Files::Numbered(vec![(n, path.to_owned())]),
        None => Files::Unnumbered(vec![path.to_owned()]),
    })
}

/// The files numbered within `range`, by number; refused where numbers
/// repeat or span more than [`MAX_ENTRIES`] positions.
fn numbered_entries(
    spec: &Path,
    mut files: Vec<(i64, PathBuf)>,
    range: Option<(i64, i64)>,
) -> Result<Vec<SequenceEntry>, PlayError> {
    files.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| natural_cmp(&a.1.to_string_lossy(), &b.1.to_string_lossy()))
    });
    keep_in_range(spec, &mut files, range)?;
    check_one_file_per_number(&files)?;
    check_span(spec, &files)?;
    Ok(files
        .into_iter()
        .map(|(number, path)| SequenceEntry {
            number: Some(number),
            path: Some(path),
        })
        .collect())
}

/// Keeps the sorted files numbered within `range`; refused where there is
/// no file, or none within the range.
fn keep_in_range(
    spec: &Path,
    files: &mut Vec<(i64, PathBuf)>,
    range: Option<(i64, i64)>,
) -> Result<(), PlayError> {
    let (Some(&(min, _)), Some(&(max, _))) = (files.first(), files.last()) else {
        return Err(PlayError::NoFrames(spec.to_owned()));
    };
    if let Some((first, last)) = range {
        files.retain(|(n, _)| (first..=last).contains(n));
        if files.is_empty() {
            return Err(PlayError::BadOption {
                field: crate::error::Field::Range,
                message: format!(
                    "{first}-{last} holds no frame of {}: its files run from {min} to {max}",
                    spec.display()
                ),
            });
        }
    }
    Ok(())
}

/// Refuses sorted files where two carry one frame number.
fn check_one_file_per_number(files: &[(i64, PathBuf)]) -> Result<(), PlayError> {
    match files.windows(2).find(|w| w[0].0 == w[1].0) {
        Some(pair) => Err(PlayError::InvalidOption(format!(
            "frame {} is in two files: {} and {}; pass a pattern that names one",
            pair[0].0,
            pair[0].1.display(),
            pair[1].1.display()
        ))),
        None => Ok(()),
    }
}

/// Refuses sorted, non-empty files whose numbers span more than
/// [`MAX_ENTRIES`] positions.
fn check_span(spec: &Path, files: &[(i64, PathBuf)]) -> Result<(), PlayError> {
    let (first, last) = (files[0].0, files[files.len() - 1].0);
    let span = i128::from(last) - i128::from(first) + 1;
    if span > MAX_ENTRIES as i128 {
        return Err(PlayError::InvalidOption(format!(
            "{}: frames {first} to {last} would make {span} entries, files and gaps, \
             more than the {MAX_ENTRIES} allowed; pass a range",
            spec.display()
        )));
    }
    Ok(())
}

/// Entries for unnumbered files, a range counting positions from 1.
fn unnumbered_entries(
    spec: &Path,
    files: Vec<PathBuf>,
    range: Option<(i64, i64)>,
) -> Result<Vec<SequenceEntry>, PlayError> {
    let (skip, take) = positions_in_range(spec, files.len(), range)?;
    Ok(files
        .into_iter()
        .skip(skip)
        .take(take)
        .map(|path| SequenceEntry {
            number: None,
            path: Some(path),
        })
        .collect())
}

/// The files to skip and to take of `count` unnumbered ones for `range`,
/// counting positions from 1; refused where it holds none.
fn positions_in_range(
    spec: &Path,
    count: usize,
    range: Option<(i64, i64)>,
) -> Result<(usize, usize), PlayError> {
    let Some((first, last)) = range else {
        return Ok((0, count));
    };
    let start = first.max(1);
    let end = last.min(count as i64);
    if start > end {
        return Err(PlayError::BadOption {
            field: crate::error::Field::Range,
            message: format!(
                "{first}-{last} holds no frame of {}: its {count} files carry no \
                 frame numbers, so the range counts them from 1",
                spec.display()
            ),
        });
    }
    Ok(((start - 1) as usize, (end - start + 1) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(name: &str) -> Option<(&str, &str, &str, i64)> {
        split_number(name).map(|n| (n.prefix, n.digits, n.suffix, n.number))
    }

    #[test]
    fn names_with_characters_of_several_bytes_split_at_their_digits() {
        assert_eq!(split("カット0001.png"), Some(("カット", "0001", ".png", 1)));
        assert_eq!(split("plate_é12.exr"), Some(("plate_é", "12", ".exr", 12)));
        assert_eq!(split("été.exr"), None);
    }

    #[test]
    fn the_last_run_of_digits_before_the_extension_is_the_frame_number() {
        assert_eq!(
            split("shot_v003.1001.exr"),
            Some(("shot_v003.", "1001", ".exr", 1001)),
            "the version number is text; the frame number is the last run"
        );
        assert_eq!(
            split("frame_0042.png"),
            Some(("frame_", "0042", ".png", 42))
        );
        assert_eq!(split("1001.exr"), Some(("", "1001", ".exr", 1001)));
        assert_eq!(
            split("plate12_final.tif"),
            Some(("plate", "12", "_final.tif", 12)),
            "text may follow the number before the extension"
        );
        assert_eq!(
            split("shot.1001.jp2k2.exr").map(|s| s.3),
            Some(2),
            "digits inside the stem count, not in the extension"
        );
        assert_eq!(
            split("image.mp4"),
            None,
            "digits of the extension do not count"
        );
        assert_eq!(split("beauty.exr"), None);
        assert_eq!(split("noextension12"), Some(("noextension", "12", "", 12)));
        assert_eq!(
            split("f.99999999999999999999.exr"),
            None,
            "a number too large for i64 is no frame number"
        );
    }

    #[test]
    fn placeholders_parse_with_their_width() {
        let p = |s: &str| Pattern::parse(s).unwrap();
        let pattern = |prefix: &str, suffix: &str, width| {
            Some(Pattern {
                prefix: prefix.into(),
                suffix: suffix.into(),
                width,
            })
        };
        assert_eq!(p("shot.####.exr"), pattern("shot.", ".exr", Some(4)));
        assert_eq!(p("shot.@@@.exr"), pattern("shot.", ".exr", Some(3)));
        assert_eq!(
            p("shot.#.exr"),
            pattern("shot.", ".exr", None),
            "# is any width"
        );
        assert_eq!(p("shot.%04d.exr"), pattern("shot.", ".exr", Some(4)));
        assert_eq!(p("shot.%d.exr"), pattern("shot.", ".exr", None));
        assert_eq!(p("shot_%010d_x.png"), pattern("shot_", "_x.png", Some(10)));
        assert_eq!(p("shot.1001.exr"), None, "a plain name is no pattern");
        assert_eq!(p("100%.png"), None, "a lone % is text");
        assert_eq!(p("a%5d.png"), None, "space padding is not a placeholder");
        assert!(
            Pattern::parse("v##.####.exr").is_err(),
            "two placeholders are refused"
        );
    }

    #[test]
    fn a_width_takes_padded_and_wider_numbers() {
        let four = Pattern::parse("s.####.exr").unwrap().unwrap();
        assert_eq!(four.matches("s.0042.exr"), Some(("0042", 42)));
        assert_eq!(four.matches("s.10000.exr"), Some(("10000", 10000)));
        assert_eq!(four.matches("s.042.exr"), None, "too narrow");
        assert_eq!(four.matches("s.00042.exr"), None, "padded wider than 4");
        assert_eq!(four.matches("s.00a2.exr"), None, "not digits");
        assert_eq!(four.matches("t.0042.exr"), None, "another prefix");
        assert_eq!(four.matches("s.0042.png"), None, "another extension");
        let any = Pattern::parse("s.#.exr").unwrap().unwrap();
        assert_eq!(any.matches("s.7.exr"), Some(("7", 7)));
        assert_eq!(any.matches("s.0007.exr"), Some(("0007", 7)));
        assert_eq!(any.matches("s..exr"), None, "no digits");
    }

    #[test]
    fn printf_widths() {
        assert_eq!(printf_width("d.exr"), Some((1, None)));
        assert_eq!(printf_width("04d.exr"), Some((3, Some(4))));
        assert_eq!(printf_width("012d"), Some((4, Some(12))));
        assert_eq!(printf_width("0d"), None);
        assert_eq!(printf_width("4d"), None);
        assert_eq!(printf_width("04x"), None);
        assert_eq!(printf_width(""), None);
    }

    #[test]
    fn gaps_and_ranges() {
        let spec = Path::new("s.####.exr");
        let files = |ns: &[i64]| -> Vec<(i64, PathBuf)> {
            ns.iter()
                .map(|&n| (n, PathBuf::from(format!("s.{n:04}.exr"))))
                .collect()
        };
        let numbers = |e: Vec<SequenceEntry>| -> Vec<(i64, bool)> {
            let sequence = Sequence::of_files(spec, e);
            (0..sequence.len())
                .map(|p| sequence.entry(p).unwrap())
                .map(|e| (e.number.unwrap(), e.path.is_some()))
                .collect()
        };
        let all = numbered_entries(spec, files(&[5, 1, 3]), None).unwrap();
        assert_eq!(
            numbers(all),
            [(1, true), (2, false), (3, true), (4, false), (5, true)],
            "every number from the first to the last, gaps where files are missing"
        );
        let trimmed = numbered_entries(spec, files(&[1, 3, 5, 9]), Some((2, 7))).unwrap();
        assert_eq!(
            numbers(trimmed),
            [(3, true), (4, false), (5, true)],
            "a range trims to the files it holds"
        );
        assert!(matches!(
            numbered_entries(spec, files(&[1, 3]), Some((10, 20))),
            Err(PlayError::BadOption { .. })
        ));
        assert!(matches!(
            numbered_entries(spec, files(&[1, 2_000_000_000]), None),
            Err(PlayError::InvalidOption(_))
        ));
        assert_eq!(
            numbered_entries(spec, files(&[1, 2_000_000_000]), Some((0, 100)))
                .unwrap()
                .len(),
            1,
            "a range brings a huge span back under the limit"
        );
        let mut twice = files(&[1]);
        twice.push((1, PathBuf::from("s.1.exr")));
        assert!(matches!(
            numbered_entries(spec, twice, None),
            Err(PlayError::InvalidOption(_))
        ));
    }

    #[test]
    fn unnumbered_ranges_count_positions() {
        let spec = Path::new("dir");
        let files: Vec<PathBuf> = ["a.png", "b.png", "c.png"].map(PathBuf::from).into();
        let kept = unnumbered_entries(spec, files.clone(), Some((2, 9))).unwrap();
        let names: Vec<_> = kept.iter().map(|e| e.path.clone().unwrap()).collect();
        assert_eq!(names, [PathBuf::from("b.png"), PathBuf::from("c.png")]);
        assert!(matches!(
            unnumbered_entries(spec, files, Some((4, 9))),
            Err(PlayError::BadOption { .. })
        ));
    }
}
