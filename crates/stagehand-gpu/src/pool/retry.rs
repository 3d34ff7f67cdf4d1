//! Shrinking a batch until it fits.

use super::error::PoolError;

/// Runs `run(batch)`, halving the batch after each out-of-memory error until
/// it succeeds or would go below `min`. Returns the batch size that fit and
/// its result. Errors other than out-of-memory return at once; if even `min`
/// does not fit, the last out-of-memory error is returned.
///
/// ```
/// use stagehand_gpu::pool::{PoolError, halve_on_oom};
/// let fits = |n: usize| if n <= 100 { Ok(n * 2) } else {
///     Err(PoolError::OutOfMemory { requested: n as u64, held: 0, in_use: 0, idle: 0, budget: Some(100) })
/// };
/// assert_eq!(halve_on_oom(1000, 1, fits).unwrap(), (62, 124));
/// ```
pub fn halve_on_oom<R>(
    batch: usize,
    min: usize,
    mut run: impl FnMut(usize) -> Result<R, PoolError>,
) -> Result<(usize, R), PoolError> {
    let min = min.max(1);
    let mut batch = batch.max(min);
    loop {
        match run(batch) {
            Ok(out) => return Ok((batch, out)),
            Err(e) if e.is_oom() && batch / 2 >= min => batch /= 2,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oom() -> PoolError {
        PoolError::OutOfMemory {
            requested: 1,
            held: 0,
            in_use: 0,
            idle: 0,
            budget: None,
        }
    }

    #[test]
    fn gives_up_below_the_minimum_with_the_oom() {
        let mut tried = Vec::new();
        let err = halve_on_oom(64, 8, |n| -> Result<(), _> {
            tried.push(n);
            Err(oom())
        })
        .unwrap_err();
        assert!(err.is_oom());
        assert_eq!(tried, [64, 32, 16, 8]);
    }

    #[test]
    fn other_errors_stop_at_once() {
        let mut calls = 0;
        let err = halve_on_oom(64, 1, |_| -> Result<(), _> {
            calls += 1;
            Err(PoolError::Device("lost".into()))
        })
        .unwrap_err();
        assert_eq!((calls, err.is_oom()), (1, false));
    }
}
