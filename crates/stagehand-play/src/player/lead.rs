//! How far ahead of its time a realtime player must start on a frame for
//! it to be on the GPU in time: what the last frames took to decode (when
//! they were not in the cache) and to upload. The producer skips a frame
//! that cannot make it, and gives the decoders the one after instead of a
//! frame that would be shown late.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Estimates in microseconds, each a moving average of the last frames.
#[derive(Default)]
pub(super) struct Lead {
    /// Waiting for a frame the cache did not have.
    decode: AtomicU64,
    /// From queueing an upload to the GPU having it.
    upload: Arc<AtomicU64>,
}

/// Weight of the newest measurement, out of 4.
const NEWEST: u64 = 1;

fn blend(slot: &AtomicU64, micros: u64) {
    let old = slot.load(Ordering::Relaxed);
    let new = if old == 0 {
        micros
    } else {
        (old * (4 - NEWEST) + micros * NEWEST) / 4
    };
    slot.store(new, Ordering::Relaxed);
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Lead {
    /// A wait for a frame the cache did not have.
    pub fn decoded(&self, waited: Duration) {
        blend(&self.decode, micros(waited));
    }

    /// Where upload times go (from the upload's completion callback).
    pub fn uploads(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.upload)
    }

    /// Records an upload's time into `slot` (from [`uploads`](Self::uploads)).
    pub fn uploaded(slot: &AtomicU64, took: Duration) {
        blend(slot, micros(took));
    }

    /// How long before its time a frame must be started: its upload, and
    /// its decode when `decoded` is false.
    pub fn before(&self, decoded: bool) -> Duration {
        let upload = self.upload.load(Ordering::Relaxed);
        let decode = if decoded {
            0
        } else {
            self.decode.load(Ordering::Relaxed)
        };
        Duration::from_micros(upload.saturating_add(decode))
    }
}

/// Whether a frame due at `pts` for `period`, started now (play time
/// `now`) and needing `needs`, would be on the GPU only after its time has
/// passed. Never while the clock stands still: a paused step or seek waits
/// for its frame, however long it takes.
pub(super) fn too_late(
    now: Option<Duration>,
    paused: bool,
    needs: Duration,
    pts: Duration,
    period: Duration,
) -> bool {
    !paused && now.is_some_and(|now| now + needs > pts + period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_too_late_only_while_the_clock_runs() {
        let ms = Duration::from_millis;
        // Due at 100 ms for 40: started at 90 ms, it needs at most 50.
        assert!(!too_late(Some(ms(90)), false, ms(50), ms(100), ms(40)));
        assert!(too_late(Some(ms(90)), false, ms(51), ms(100), ms(40)));
        // Paused on it (a step, a seek): never too late.
        assert!(!too_late(Some(ms(100)), true, ms(500), ms(100), ms(40)));
        // Before the clock starts: never too late.
        assert!(!too_late(None, false, ms(500), ms(100), ms(40)));
    }

    #[test]
    fn the_lead_follows_recent_decodes_and_uploads() {
        let lead = Lead::default();
        assert_eq!(lead.before(false), Duration::ZERO, "nothing measured yet");
        lead.decoded(Duration::from_millis(40));
        Lead::uploaded(&lead.uploads(), Duration::from_millis(20));
        assert_eq!(lead.before(false), Duration::from_millis(60));
        assert_eq!(lead.before(true), Duration::from_millis(20));
        // A quarter of each new measurement.
        lead.decoded(Duration::from_millis(80));
        assert_eq!(
            lead.before(true) + Duration::from_millis(50),
            lead.before(false)
        );
        for _ in 0..40 {
            lead.decoded(Duration::ZERO);
        }
        assert!(
            lead.before(false) < Duration::from_millis(21),
            "old waits fade"
        );
    }
}
