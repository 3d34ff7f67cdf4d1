//! Whether a realtime player starts a frame or skips it: how far ahead of
//! its time a frame must be started for it to be on the GPU in time, from
//! what recent frames took to decode (when they were not in the cache) and
//! to upload, and the decision itself as a function ([`decide`]).
//!
//! The estimates are robust figures, not averages: the first measurements
//! of a run are left out (the first uploads fill staging memory and
//! textures touched for the first time, the first decodes start the
//! decoders), and the upload figure is the median of a window of recent
//! measurements, so slow frames now and then (a seek decoding from its
//! keyframe, a page-fault storm, a first touch the warm-up did not cover)
//! move it little as long as they are fewer than half the window, while a
//! run that is steadily slow moves it all.
//!
//! Why the median and not a higher percentile: a percentile above it is
//! owned by the slow minority whenever the window holds few measurements
//! (the 90th of the first five is their largest), which is exactly when
//! the first frames' costs are in it; a cached frame skipped on that
//! figure is a frame lost for certain, where one started on the median and
//! landing a little late is still shown.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// Measurements an estimate looks at: the newest this many.
const WINDOW: usize = 24;
/// The percentile of the window the upload estimate takes: its median.
const UPLOAD_PERCENTILE: f64 = 0.5;
/// The percentile the decode estimate takes: decode waits vary with the
/// frame, and a frame started on a typical wait that then waits longer
/// holds up the frames behind it (measured: 16-bit and EXR first passes
/// showed fewer frames on the median than on this).
const DECODE_PERCENTILE: f64 = 0.9;

/// Recent durations of one kind, in microseconds.
#[derive(Debug, Default)]
pub(super) struct History {
    recent: VecDeque<u64>,
    /// Measurements still to be left out as warm-up.
    warm_up: usize,
    /// The percentile of the window the estimate takes.
    percentile: f64,
}

impl History {
    /// A history that leaves out its first `warm_up` measurements.
    pub fn new(warm_up: usize, percentile: f64) -> Self {
        Self {
            recent: VecDeque::with_capacity(WINDOW),
            warm_up,
            percentile,
        }
    }

    /// Takes one measurement.
    pub fn record(&mut self, took: Duration) {
        if self.warm_up > 0 {
            self.warm_up -= 1;
            return;
        }
        if self.recent.len() == WINDOW {
            self.recent.pop_front();
        }
        self.recent
            .push_back(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }

    /// The estimate: the window's median (the lower middle of an even
    /// count); zero before anything past the warm-up was measured.
    pub fn estimate(&self) -> Duration {
        let mut sorted: Vec<u64> = self.recent.iter().copied().collect();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        sorted.sort_unstable();
        let rank = (self.percentile * sorted.len() as f64).ceil() as usize;
        Duration::from_micros(sorted[rank.clamp(1, sorted.len()) - 1])
    }
}

/// The estimates a realtime producer decides with.
pub(super) struct Lead {
    /// Waiting for a frame the cache did not have.
    decode: Mutex<History>,
    /// From queueing an upload to the GPU having it (recorded from the
    /// upload's completion callback).
    upload: Arc<Mutex<History>>,
}

impl Default for Lead {
    fn default() -> Self {
        Self::new(1, 1)
    }
}

impl Lead {
    /// Estimates that leave out the first `decodes` decode waits (one per
    /// decode thread starting) and the first `uploads` uploads (one per
    /// staging buffer filled for the first time).
    pub fn new(decodes: usize, uploads: usize) -> Self {
        Self {
            decode: Mutex::new(History::new(decodes, DECODE_PERCENTILE)),
            upload: Arc::new(Mutex::new(History::new(uploads, UPLOAD_PERCENTILE))),
        }
    }

    /// A wait for a frame the cache did not have.
    pub fn decoded(&self, waited: Duration) {
        self.decode.lock().record(waited);
    }

    /// Where upload times go (from the upload's completion callback).
    pub fn uploads(&self) -> Arc<Mutex<History>> {
        Arc::clone(&self.upload)
    }

    /// Records an upload's time into `history` (from [`uploads`](Self::uploads)).
    pub fn uploaded(history: &Mutex<History>, took: Duration) {
        history.lock().record(took);
    }

    /// The estimates now.
    pub fn estimate(&self) -> Estimate {
        Estimate {
            decode: self.decode.lock().estimate(),
            upload: self.upload.lock().estimate(),
        }
    }
}

/// How long a frame takes, by stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Estimate {
    /// Waiting for its decode, when the cache does not have it.
    pub decode: Duration,
    /// Its upload.
    pub upload: Duration,
}

/// Where a frame stands when the producer comes to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Have {
    /// On the device already (the GPU tier): nothing to do.
    OnDevice,
    /// Decoded, in the frame cache: its upload is left.
    Decoded,
    /// A decoder is on it now: skipping it would not start another frame
    /// any sooner, so only its upload is counted against its time.
    Decoding,
    /// Neither: its decode and its upload are left.
    Nothing,
}

/// The producer's choice for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decision {
    /// Start on it: it can be on the GPU before its time has passed.
    Start,
    /// Skip it: it would land after its time.
    Skip,
}

/// What the producer knows when it comes to a frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct Moment {
    /// Play time now; `None` before the clock starts.
    pub now: Option<Duration>,
    /// Whether the clock stands still (paused on a step or a seek).
    pub paused: bool,
    /// When the frame is due.
    pub pts: Duration,
    /// How long it stays on screen.
    pub period: Duration,
}

/// Whether to start a frame that stands at `have`: skipped only while the
/// clock runs and only if what is left of it, by `estimate`, would end
/// after its time on screen has passed. A frame on the device is never
/// skipped; a paused step or seek waits for its frame however long it
/// takes.
pub(super) fn decide(moment: Moment, have: Have, estimate: Estimate) -> Decision {
    let needs = match have {
        Have::OnDevice => Duration::ZERO,
        Have::Decoded | Have::Decoding => estimate.upload,
        Have::Nothing => estimate.upload + estimate.decode,
    };
    let late = !moment.paused
        && moment
            .now
            .is_some_and(|now| now + needs > moment.pts + moment.period);
    if late {
        Decision::Skip
    } else {
        Decision::Start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Frame `k` at 24 fps, the clock at `now_ms`.
    fn at(k: u64, now_ms: u64) -> Moment {
        let period = Duration::from_secs_f64(1.0 / 24.0);
        Moment {
            now: Some(ms(now_ms)),
            paused: false,
            pts: period.mul_f64(k as f64),
            period,
        }
    }

    fn lead_after(decodes: &[u64], uploads: &[u64]) -> Lead {
        let lead = Lead::new(1, 2);
        for &d in decodes {
            lead.decoded(ms(d));
        }
        for &u in uploads {
            Lead::uploaded(&lead.uploads(), ms(u));
        }
        lead
    }

    #[test]
    fn a_frame_is_late_only_while_the_clock_runs() {
        let estimate = Estimate {
            decode: ms(30),
            upload: ms(20),
        };
        let moment = Moment {
            now: Some(ms(90)),
            paused: false,
            pts: ms(100),
            period: ms(40),
        };
        // Due at 100 ms for 40: started at 90 ms it may take 50.
        assert_eq!(decide(moment, Have::Nothing, estimate), Decision::Start);
        let later = Moment {
            now: Some(ms(91)),
            ..moment
        };
        assert_eq!(decide(later, Have::Nothing, estimate), Decision::Skip);
        assert_eq!(decide(later, Have::Decoded, estimate), Decision::Start);
        // A frame a decoder is on is judged by its upload alone: skipping
        // it would start no other frame sooner.
        assert_eq!(decide(later, Have::Decoding, estimate), Decision::Start);
        let paused = Moment {
            paused: true,
            now: Some(ms(500)),
            ..moment
        };
        assert_eq!(decide(paused, Have::Nothing, estimate), Decision::Start);
        let before_start = Moment {
            now: None,
            ..moment
        };
        assert_eq!(
            decide(before_start, Have::Nothing, estimate),
            Decision::Start
        );
    }

    #[test]
    fn a_warm_up_outlier_does_not_make_cached_frames_skip() {
        // The first uploads into fresh staging took half a second; the
        // rest 20 ms. Every frame is in the cache.
        let lead = lead_after(&[], &[568, 233, 21, 19, 20, 22, 20]);
        let estimate = lead.estimate();
        assert!(estimate.upload <= ms(22), "{estimate:?}");
        // Frame 10 looked at 5 ms before its time: shown.
        let pts_ms = 10_000 / 24;
        assert_eq!(
            decide(at(10, pts_ms - 5), Have::Decoded, estimate),
            Decision::Start
        );
        // A mean that the outlier owns would have skipped it: the
        // running average of the old estimate (a quarter of each new
        // measurement) was still over 60 ms after these.
        let mut mean = 0.0;
        for v in [568.0, 233.0, 21.0, 19.0, 20.0, 22.0, 20.0] {
            mean = if mean == 0.0 {
                v
            } else {
                mean * 0.75 + v * 0.25
            };
        }
        assert!(mean > 60.0, "{mean}");
    }

    #[test]
    fn the_first_uploads_into_fresh_textures_do_not_make_cached_frames_skip() {
        // Recorded: a first pass of a 4K RGB PNG sequence on lavapipe, every
        // frame decoded long before its time, a queue of three textures
        // and one staging buffer. The first three uploads touched a fresh
        // texture each; the percentile of a short window was still one of
        // them at frame 20, and frames 4, 8, 12, 16 and 20 were skipped.
        let recorded = [104u64, 182, 190, 47, 27, 75, 13, 23, 22, 26, 21, 74, 41];
        let lead = Lead::new(2, 3);
        let mut skipped = Vec::new();
        for (i, &u) in recorded.iter().enumerate() {
            Lead::uploaded(&lead.uploads(), ms(u));
            // The producer, three frames ahead of the clock, comes to
            // frame i + 4 as upload i lands.
            let k = i as u64 + 4;
            let now_ms = (i as u64 + 1) * 1000 / 24;
            if decide(at(k, now_ms), Have::Decoded, lead.estimate()) == Decision::Skip {
                skipped.push(k);
            }
        }
        assert_eq!(skipped, Vec::<u64>::new(), "{:?}", lead.estimate());
        assert!(lead.estimate().upload <= ms(47), "{:?}", lead.estimate());
        // Had the warm-up covered only the one staging buffer, the median
        // still ignores the two slow uploads it let in (the 90th
        // percentile of these twelve was 182 ms: four periods and more).
        let short = Lead::new(2, 1);
        for &u in &recorded {
            Lead::uploaded(&short.uploads(), ms(u));
        }
        assert!(short.estimate().upload <= ms(47), "{:?}", short.estimate());
    }

    #[test]
    fn a_steadily_decode_bound_run_skips_what_cannot_be_decoded_in_time() {
        // Every decode waits 80 ms at 24 fps (41.7 ms a frame): a frame
        // not decoded yet, looked at 40 ms before its time, cannot land.
        let decodes = [80u64; 30];
        let lead = lead_after(&decodes, &[25; 30]);
        let estimate = lead.estimate();
        assert_eq!(estimate.decode, ms(80));
        let pts_ms = 20_000 / 24;
        assert_eq!(
            decide(at(20, pts_ms - 40), Have::Nothing, estimate),
            Decision::Skip
        );
        // The same frame decoded already is shown, and so is one on the
        // device, however late the clock.
        assert_eq!(
            decide(at(20, pts_ms - 40), Have::Decoded, estimate),
            Decision::Start
        );
        assert_eq!(
            decide(at(20, pts_ms + 41), Have::OnDevice, estimate),
            Decision::Start
        );
    }

    #[test]
    fn one_slow_decode_after_a_seek_does_not_own_the_estimate() {
        // Decodes of 30 ms, then a seek decodes 400 ms from its keyframe,
        // then 30 ms again.
        let mut decodes = vec![30u64; 20];
        decodes.push(400);
        decodes.extend([30u64; 5]);
        let lead = lead_after(&decodes, &[20; 10]);
        assert_eq!(lead.estimate().decode, ms(30));
        // Many slow decodes are a slow run, not an outlier.
        let lead = lead_after(&[400; 10], &[20; 10]);
        assert_eq!(lead.estimate().decode, ms(400));
    }

    #[test]
    fn nothing_is_estimated_before_the_warm_up_ends() {
        let lead = lead_after(&[500], &[500, 500]);
        assert_eq!(lead.estimate(), Estimate::default());
    }
}
