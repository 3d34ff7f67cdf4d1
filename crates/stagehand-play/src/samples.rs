//! [`Samples`] and [`Timings`]: a run's per-frame figures, kept in memory
//! that does not grow with the run.
//!
//! A player measures every frame it shows: the render pass, the present,
//! the wait for uploads, the drift from the sound. A player left running
//! (a review station looping a shot all day, an application's viewer)
//! would grow those lists for as long as it plays. These keep every value
//! up to [`KEPT`], in order, then a uniform sample of all the values seen
//! (reservoir sampling): percentiles stay those of the whole run within
//! sampling error, the count and the largest value stay exact, and the
//! memory is fixed. Runs of up to [`KEPT`] frames (a test, a bench, twenty
//! minutes at 24 fps) keep every value.
//!
//! Written here rather than taken from a crate: the algorithm is the ten
//! lines of `push`, and the crates that offer it bring a random number
//! generator this crate has no other use for.

use crate::summary::Millis;

/// Values kept before sampling starts: 32,768 (256 KiB of `f64`).
pub const KEPT: usize = 1 << 15;

/// Every value up to [`KEPT`], then a uniform sample of all values seen.
#[derive(Clone, Debug)]
pub struct Samples<T> {
    kept: Vec<T>,
    seen: u64,
    /// The sampler's generator state (xorshift64*), never zero.
    state: u64,
}

impl<T> Default for Samples<T> {
    fn default() -> Self {
        Self {
            kept: Vec::new(),
            seen: 0,
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

impl<T> Samples<T> {
    /// Records `value`. Past [`KEPT`] values, the `n`-th value replaces a
    /// kept one with probability `KEPT / n`, so every value seen is equally
    /// likely to be kept.
    pub fn push(&mut self, value: T) {
        self.seen += 1;
        if self.kept.len() < KEPT {
            self.kept.push(value);
            return;
        }
        let at = self.random() % self.seen;
        if let Some(slot) = usize::try_from(at)
            .ok()
            .and_then(|at| self.kept.get_mut(at))
        {
            *slot = value;
        }
    }

    /// Values recorded, kept or not.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The values kept: all of them, in order, up to [`KEPT`]; past that a
    /// uniform sample, in no order.
    pub fn kept(&self) -> &[T] {
        &self.kept
    }

    /// The values kept, as [`kept`](Self::kept) says.
    pub fn into_kept(self) -> Vec<T> {
        self.kept
    }

    /// The next number of the sampler's generator (xorshift64*).
    fn random(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Milliseconds, sampled as [`Samples`] keeps them, with the largest kept
/// exactly.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    samples: Samples<f64>,
    max: f64,
}

impl Timings {
    /// Records one duration, in milliseconds.
    pub fn push(&mut self, ms: f64) {
        self.max = self.max.max(ms);
        self.samples.push(ms);
    }

    /// Durations recorded.
    pub fn seen(&self) -> u64 {
        self.samples.seen()
    }

    /// Median and 99th percentile of the values kept, and the largest of
    /// all; zeros when none was recorded.
    pub fn millis(&self) -> Millis {
        let mut millis = Millis::of(self.samples.kept().to_vec());
        millis.max = millis.max.max(self.max);
        millis
    }
}

#[cfg(test)]
mod tests {
    use super::{KEPT, Samples, Timings};

    #[test]
    fn a_short_run_keeps_every_value_in_order() {
        let mut s = Samples::default();
        for v in 0..1000u32 {
            s.push(v);
        }
        assert_eq!(s.seen(), 1000);
        assert_eq!(s.kept(), (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_day_of_frames_keeps_fixed_memory_and_the_runs_percentiles() {
        // Two million frames: a day at 24 fps. The values rise steadily, so
        // a sample of the start or of the end alone would show in the
        // percentiles.
        let n = 2_000_000u64;
        let mut t = Timings::default();
        for v in 0..n {
            t.push(v as f64);
        }
        assert_eq!(t.seen(), n);
        assert_eq!(t.samples.kept().len(), KEPT);
        assert!(t.samples.kept.capacity() <= KEPT, "no growth past KEPT");
        let m = t.millis();
        assert_eq!(m.max, (n - 1) as f64, "the largest is exact");
        let near = |got: f64, want: f64| (got - want).abs() < 0.01 * n as f64;
        assert!(near(m.p50, 0.5 * n as f64), "p50 {}", m.p50);
        assert!(near(m.p99, 0.99 * n as f64), "p99 {}", m.p99);
    }

    #[test]
    fn the_largest_value_is_exact_even_when_the_sample_misses_it() {
        let mut t = Timings::default();
        for _ in 0..(4 * KEPT) {
            t.push(1.0);
        }
        t.push(500.0);
        for _ in 0..(4 * KEPT) {
            t.push(1.0);
        }
        assert_eq!(t.millis().max, 500.0);
        assert_eq!(t.millis().p99, 1.0);
        assert_eq!(Timings::default().millis().max, 0.0);
    }
}
