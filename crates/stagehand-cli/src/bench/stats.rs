//! Timing helpers shared by the benchmarks.

use crate::output::{self, OutputError};
use std::time::Instant;

/// Nanoseconds per operation of one round of `ops` calls of `f`.
pub fn time_round(ops: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..ops {
        f();
    }
    start.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

/// The median of `samples`; `NaN` when empty.
pub fn median(samples: &mut [f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Prints a table of `(variant, median ns/op)` with each row's ratio to the first.
pub fn print_table(title: &str, rows: &[(&str, f64)]) -> Result<(), OutputError> {
    let base = rows.first().map_or(f64::NAN, |r| r.1);
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut text = format!("{title}\n\n");
    text += &format!("{:>width$}  {:>12}  {:>8}\n", "variant", "ns/op", "ratio");
    for (name, ns) in rows {
        text += &format!("{name:>width$}  {ns:>12.1}  {:>8.3}\n", ns / base);
    }
    output::println(&text)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert!(median(&mut []).is_nan());
    }
}
