//! [`Upload`]: the handle an upload returns at once, resolved when it ends.

use super::error::UploadError;
use crate::sync::{AtomicBool, AtomicU8, AtomicU64, Condvar, Mutex};
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How an upload ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadStatus {
    /// The data is on the GPU; work submitted from now on sees it.
    Done,
    /// Cancelled before it was submitted.
    Cancelled,
    /// A newer upload to the same region came before this one started.
    Superseded,
    /// It failed. On wgpu nothing was written; a CUDA upload that failed
    /// partway may have written its first chunks.
    Failed(UploadError),
}

/// When each stage happened. A stage the upload never reached is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// Accepted by the engine.
    pub queued: Option<Instant>,
    /// A worker began copying into staging.
    pub copy_started: Option<Instant>,
    /// The copy into staging finished.
    pub copy_ended: Option<Instant>,
    /// The GPU copy was submitted.
    pub submitted: Option<Instant>,
    /// The GPU finished the copy.
    pub gpu_complete: Option<Instant>,
}

impl StageTimes {
    /// From queued to GPU complete, if both happened.
    pub fn latency(&self) -> Option<Duration> {
        Some(self.gpu_complete?.duration_since(self.queued?))
    }
}

/// The end of an upload: how, and when each stage happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadOutcome {
    /// How it ended.
    pub status: UploadStatus,
    /// When each stage happened.
    pub times: StageTimes,
}

/// Where an upload is: its phases, in order; it only moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UploadPhase {
    /// Accepted, waiting for a worker; it can be superseded or cancelled.
    Queued,
    /// A worker is filling its staging; a cancel is still honoured.
    Started,
    /// Submitted to the device; it will land.
    Submitted,
    /// Resolved: see its [`UploadOutcome`].
    Ended,
}

/// The phases an upload moves through, in order; only forward.
pub(crate) mod phase {
    /// Accepted, waiting for a worker.
    pub const QUEUED: u8 = 0;
    /// A worker owns it; it can still be cancelled until submitted.
    pub const STARTED: u8 = 1;
    /// Submitted to the GPU; it will land.
    pub const SUBMITTED: u8 = 2;
    /// Resolved.
    pub const ENDED: u8 = 3;
}

type Callback = Box<dyn FnOnce(&UploadOutcome) + Send>;

/// What the handle and the engine share.
pub(crate) struct UploadShared {
    /// One of [`phase`]; moves only forward.
    pub phase: AtomicU8,
    /// Set by `cancel` on a started upload; the worker checks it before submitting.
    pub cancel_requested: AtomicBool,
    inner: Mutex<Inner>,
    ended: Condvar,
    /// Counts callbacks that panicked, engine-wide.
    panics: Arc<AtomicU64>,
    /// Staging bytes this upload holds of the engine's in-flight bound.
    pub admitted: AtomicU64,
}

#[derive(Default)]
struct Inner {
    times: StageTimes,
    outcome: Option<UploadOutcome>,
    callbacks: Vec<Callback>,
    /// One per task awaiting the upload (clones of the handle share it).
    wakers: Vec<Waker>,
}

impl UploadShared {
    pub fn new(panics: Arc<AtomicU64>) -> Arc<Self> {
        let inner = Inner {
            times: StageTimes {
                queued: Some(Instant::now()),
                ..StageTimes::default()
            },
            ..Inner::default()
        };
        Arc::new(Self {
            phase: AtomicU8::new(phase::QUEUED),
            cancel_requested: Default::default(),
            inner: Mutex::new(inner),
            ended: Condvar::new(),
            panics,
            admitted: AtomicU64::new(0),
        })
    }

    /// Moves from phase `from` to `to`; false if it was elsewhere.
    pub fn advance(&self, from: u8, to: u8) -> bool {
        self.phase
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Records the time of a stage.
    pub fn stamp(&self, set: impl FnOnce(&mut StageTimes)) {
        set(&mut self.inner.lock().times);
    }

    /// Resolves the upload once; later calls do nothing. Callbacks run here,
    /// each under `catch_unwind`, so a panicking callback cannot take the
    /// calling worker down.
    pub fn resolve(&self, status: UploadStatus) {
        let (callbacks, wakers, outcome) = {
            let mut inner = self.inner.lock();
            if inner.outcome.is_some() {
                return;
            }
            if status == UploadStatus::Done {
                inner.times.gpu_complete = Some(Instant::now());
            }
            let outcome = UploadOutcome {
                status,
                times: inner.times,
            };
            inner.outcome = Some(outcome.clone());
            (
                std::mem::take(&mut inner.callbacks),
                std::mem::take(&mut inner.wakers),
                outcome,
            )
        };
        self.phase.store(phase::ENDED, Ordering::Release);
        self.ended.notify_all();
        for callback in callbacks {
            self.run_callback(callback, &outcome);
        }
        for waker in wakers {
            // A waker is user code too (the executor's); a panic in it must
            // not take down the engine thread that resolves uploads.
            if catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
                self.panics.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn run_callback(&self, callback: Callback, outcome: &UploadOutcome) {
        if catch_unwind(AssertUnwindSafe(|| callback(outcome))).is_err() {
            self.panics.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn outcome(&self) -> Option<UploadOutcome> {
        self.inner.lock().outcome.clone()
    }
}

/// An upload in progress. Poll it, wait on it (with a timeout), give it a
/// callback, `.await` it in any executor, or cancel it.
///
/// Dropping the handle does not cancel the upload.
#[derive(Clone)]
pub struct Upload {
    pub(crate) shared: Arc<UploadShared>,
    /// Takes back a queued upload's admission when it is cancelled.
    pub(crate) on_cancel: Arc<dyn Fn() + Send + Sync>,
}

impl Upload {
    /// Where it is now.
    pub fn phase(&self) -> UploadPhase {
        match self.shared.phase.load(Ordering::Acquire) {
            phase::QUEUED => UploadPhase::Queued,
            phase::STARTED => UploadPhase::Started,
            phase::SUBMITTED => UploadPhase::Submitted,
            _ => UploadPhase::Ended,
        }
    }

    /// Whether it has ended (landed, cancelled, superseded or failed).
    pub fn is_done(&self) -> bool {
        self.shared.phase.load(Ordering::Acquire) == phase::ENDED
    }

    /// How it ended, if it has.
    pub fn outcome(&self) -> Option<UploadOutcome> {
        self.shared.outcome()
    }

    /// Waits until it ends.
    pub fn wait(&self) -> UploadOutcome {
        let mut inner = self.shared.inner.lock();
        loop {
            if let Some(outcome) = &inner.outcome {
                return outcome.clone();
            }
            self.shared.ended.wait(&mut inner);
        }
    }

    /// Waits until it ends or `timeout` passes; `None` on timeout.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<UploadOutcome> {
        // A timeout past what an `Instant` holds is no deadline at all.
        let Some(deadline) = Instant::now().checked_add(timeout) else {
            return Some(self.wait());
        };
        let mut inner = self.shared.inner.lock();
        loop {
            if let Some(outcome) = &inner.outcome {
                return Some(outcome.clone());
            }
            if self
                .shared
                .ended
                .wait_until(&mut inner, deadline)
                .timed_out()
            {
                return inner.outcome.clone();
            }
        }
    }

    /// Runs `callback` when it ends: on the thread that ends it, or at once
    /// on this thread if it already has. A panic in the callback is caught
    /// and counted in the engine's stats.
    pub fn on_complete(&self, callback: impl FnOnce(&UploadOutcome) + Send + 'static) {
        let mut inner = self.shared.inner.lock();
        match inner.outcome.clone() {
            Some(outcome) => {
                drop(inner);
                self.shared.run_callback(Box::new(callback), &outcome);
            }
            None => inner.callbacks.push(Box::new(callback)),
        }
    }

    /// Cancels it if it has not been submitted yet, without waiting.
    ///
    /// A queued upload ends at once ([`Cancel::Cancelled`]). One a worker has
    /// started is cancelled before it is submitted ([`Cancel::Requested`]:
    /// its outcome says `Cancelled`). One already submitted lands
    /// ([`Cancel::TooLate`]).
    pub fn cancel(&self) -> Cancel {
        if self.shared.advance(phase::QUEUED, phase::ENDED) {
            (self.on_cancel)();
            self.shared.resolve(UploadStatus::Cancelled);
            return Cancel::Cancelled;
        }
        if self.shared.phase.load(Ordering::Acquire) == phase::STARTED {
            self.shared.cancel_requested.store(true, Ordering::Release);
            // The worker checks the request after filling staging, just
            // before submitting; if it got there first, the upload lands.
            return Cancel::Requested;
        }
        Cancel::TooLate
    }
}

/// What [`Upload::cancel`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// It was queued and has ended, cancelled.
    Cancelled,
    /// It had started; it will end cancelled unless it was already being
    /// submitted. Its outcome tells.
    Requested,
    /// It was submitted or had ended; nothing changed.
    TooLate,
}

impl Future for Upload {
    type Output = UploadOutcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<UploadOutcome> {
        let mut inner = self.shared.inner.lock();
        match &inner.outcome {
            Some(outcome) => Poll::Ready(outcome.clone()),
            None => {
                // Each task awaiting a clone keeps its own waker; a task
                // polling again replaces nothing.
                if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    inner.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl fmt::Debug for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload")
            .field("phase", &self.phase())
            .finish_non_exhaustive()
    }
}
