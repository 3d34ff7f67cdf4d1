//! [`Gaps`]: the positions of a sequence that have no file, kept as runs
//! (`first..end`), so a sequence whose numbers are far apart (frames 0 and
//! 9999999) costs a run, not ten million entries, and every question about
//! them is a binary search.

use std::ops::Range;

/// Runs of positions without a frame, sorted, apart and never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gaps {
    runs: Vec<Range<usize>>,
    count: usize,
}

impl Gaps {
    /// No gaps.
    pub const NONE: Gaps = Gaps {
        runs: Vec::new(),
        count: 0,
    };

    /// No gaps.
    pub fn none() -> Self {
        Self::NONE
    }

    /// The gaps between `frames`, positions (sorted, distinct) that hold a
    /// frame, of a sequence of `len` positions.
    pub fn between(frames: impl IntoIterator<Item = usize>, len: usize) -> Self {
        let mut runs = Vec::new();
        let mut next = 0;
        for pos in frames {
            if pos > next {
                runs.push(next..pos);
            }
            next = pos + 1;
        }
        if len > next {
            runs.push(next..len);
        }
        let count = runs.iter().map(ExactSizeIterator::len).sum();
        Self { runs, count }
    }

    /// Positions that are gaps.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The run `pos` is in, if it is a gap.
    pub fn run_at(&self, pos: usize) -> Option<Range<usize>> {
        let i = self.runs.partition_point(|r| r.end <= pos);
        self.runs.get(i).filter(|r| r.contains(&pos)).cloned()
    }

    /// Whether `pos` is a gap.
    pub fn contains(&self, pos: usize) -> bool {
        self.run_at(pos).is_some()
    }

    /// Positions of `range` that are gaps.
    pub fn count_in(&self, range: Range<usize>) -> usize {
        let i = self.runs.partition_point(|r| r.end <= range.start);
        self.runs[i..]
            .iter()
            .take_while(|r| r.start < range.end)
            .map(|r| r.end.min(range.end) - r.start.max(range.start))
            .sum()
    }

    /// The runs, in order.
    pub fn runs(&self) -> &[Range<usize>] {
        &self.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_frames_ten_million_apart_are_one_run() {
        let gaps = Gaps::between([0, 9_999_999], 10_000_000);
        assert_eq!(gaps.runs(), std::slice::from_ref(&(1..9_999_999)));
        assert_eq!(gaps.count(), 9_999_998);
        assert!(!gaps.contains(0) && !gaps.contains(9_999_999));
        assert!(gaps.contains(1) && gaps.contains(5_000_000) && gaps.contains(9_999_998));
        assert_eq!(gaps.run_at(42), Some(1..9_999_999));
        assert_eq!(gaps.count_in(9_999_990..10_000_000), 9);
    }

    #[test]
    fn runs_at_both_ends_and_between() {
        let gaps = Gaps::between([2, 3, 6], 9);
        assert_eq!(gaps.runs(), [0..2, 4..6, 7..9]);
        assert_eq!(gaps.count(), 6);
        let by_hand: Vec<bool> = (0..9).map(|p| ![2, 3, 6].contains(&p)).collect();
        let asked: Vec<bool> = (0..9).map(|p| gaps.contains(p)).collect();
        assert_eq!(asked, by_hand);
        assert_eq!(gaps.count_in(1..8), 4);
        assert_eq!(gaps.count_in(2..4), 0);
        assert_eq!(Gaps::between(0..5, 5), Gaps::none());
    }
}
