//! What the engine's threads, resources and handles share ([`Core`]), and
//! how an upload ends: every path (landed, failed, cancelled, superseded,
//! released, shut down) goes through [`Core::finish`], which settles the
//! books in one order.

use super::admission::Gate;
use super::error::UploadError;
use super::future::{Upload, UploadShared, UploadStatus, phase};
use super::resource::{Job, Resource};
use super::schedule::Schedule;
use super::stats::{Counters, Window};
use super::transfer::TransferBackend;
use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex};
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::Duration;

/// Which of the engine's threads this is, if any: callbacks run on them,
/// and a callback that drops a resource must not wait there for work only
/// that very thread can finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EngineThread {
    /// Not one of the engine's threads.
    None,
    /// A transfer worker.
    Worker,
    /// The completion thread, which ends submitted uploads.
    Completer,
}

thread_local! {
    static ENGINE_THREAD: std::cell::Cell<EngineThread> =
        const { std::cell::Cell::new(EngineThread::None) };
}

impl EngineThread {
    /// The calling thread.
    pub fn current() -> Self {
        ENGINE_THREAD.with(std::cell::Cell::get)
    }

    /// Marks the calling thread.
    pub fn mark(self) {
        ENGINE_THREAD.with(|t| t.set(self));
    }
}

/// A submitted upload on its way to the completion thread, which waits for
/// it in submission order.
pub(crate) struct Landing<T: TransferBackend> {
    pub job: Job<T>,
    /// The staging it was copied from (`None`: the queue's own write).
    pub staging: Option<T::Staging>,
    pub in_flight: T::InFlight,
    /// The worker that filled it, for the timeline.
    pub worker: Option<usize>,
}

/// One resource's submission turns: its uploads are filled in any order, by
/// any worker, and submitted strictly in the order the schedule started
/// them.
#[derive(Default)]
pub(crate) struct Turns {
    /// The number the next upload started gets.
    next: AtomicU64,
    now: Mutex<u64>,
    turned: Condvar,
}

/// The turn of one upload: submit while holding it; dropping it (even by a
/// panic) passes the turn on.
pub(crate) struct Turn<'a>(&'a Turns);

impl Turns {
    /// Numbers an upload as it starts.
    pub fn take_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::AcqRel)
    }

    /// Waits for turn `seq`.
    pub fn wait(&self, seq: u64) -> Turn<'_> {
        let mut now = self.now.lock();
        while *now != seq {
            self.turned.wait(&mut now);
        }
        Turn(self)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.0.now.lock() += 1;
        self.0.turned.notify_all();
    }
}

/// How the engine runs, as the core needs it.
pub(crate) struct Settings {
    pub max_in_flight_bytes: u64,
    pub staging_idle: Option<Duration>,
    pub chunk_bytes: u64,
    pub timeline: Option<Arc<crate::diag::Timeline>>,
}

pub(crate) struct Core<T: TransferBackend> {
    pub backend: T,
    pub settings: Settings,
    /// Queued uploads; workers wait on `work` for one.
    pub schedule: Mutex<Schedule<Job<T>>>,
    pub work: Condvar,
    /// Where submitted uploads go; `None` once shut down (the completion
    /// thread ends when every sender is gone).
    pub landings: Mutex<Option<Sender<Landing<T>>>>,
    /// The engine-wide bound on staging bytes in flight.
    pub gate: Gate,
    /// Tasks waiting for room (`upload_async`); woken whenever an upload ends.
    pub room: Arc<Mutex<Vec<Waker>>>,
    pub shut_down: AtomicBool,
    pub counters: Counters,
    pub window: Mutex<Window>,
    pub panics: Arc<AtomicU64>,
    /// Fills one upload's chunks in parallel; `None` with one fill thread,
    /// and once the engine is dropped (its threads then end, although
    /// resources may keep the core alive).
    pub fill: Mutex<Option<Arc<rayon::ThreadPool>>>,
}

impl<T: TransferBackend> Core<T> {
    pub fn new(
        backend: T,
        settings: Settings,
        budget: Option<u64>,
        landings: Sender<Landing<T>>,
        fill: Option<rayon::ThreadPool>,
    ) -> Self {
        let bound = settings.max_in_flight_bytes;
        Self {
            backend,
            settings,
            schedule: Mutex::new(Schedule::new(budget)),
            work: Condvar::new(),
            landings: Mutex::new(Some(landings)),
            gate: Gate::new(bound),
            room: Arc::default(),
            shut_down: AtomicBool::new(false),
            counters: Counters::default(),
            window: Mutex::default(),
            panics: Arc::default(),
            fill: Mutex::new(fill.map(Arc::new)),
        }
    }

    /// Gives back an ended upload's bytes, and wakes whoever waits for room.
    fn unadmit(&self, bytes: u64, background: bool) {
        self.gate.leave(bytes, background);
        // The wakers run with no lock held (one may poll at once and
        // register again), each under `catch_unwind`: a waker is the
        // executor's code, and must not take down the thread ending uploads.
        let wakers = std::mem::take(&mut *self.room.lock());
        for waker in wakers {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake())).is_err() {
                self.panics.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Ends an upload: counts it, lets go of the resource, settles the
    /// resource's and the engine's books, then resolves it (callbacks run
    /// here, with no reference of this thread to the resource left, so a
    /// callback may drop it). `counted` is false for an upload whose
    /// resource count was already handed to a newer one (superseded).
    pub fn finish(
        &self,
        resource: Arc<Resource<T>>,
        upload: &Arc<UploadShared>,
        status: UploadStatus,
        counted: Counted,
    ) {
        let counter = match &status {
            UploadStatus::Done => None,
            UploadStatus::Cancelled => Some(&self.counters.cancelled),
            UploadStatus::Superseded => Some(&self.counters.superseded),
            UploadStatus::Failed(_) => Some(&self.counters.failed),
        };
        if let Some(counter) = counter {
            Counters::bump(counter);
        }
        let background = resource.is_background();
        let books = Arc::clone(&resource.books);
        drop(resource);
        if counted == Counted::Yes {
            books.finish(upload);
        }
        self.unadmit(upload.admitted.load(Ordering::Acquire), background);
        upload.resolve(status);
    }

    /// Ends an upload that had not started (its phase already moved from
    /// queued to ended by the caller: a cancel, a supersede): it leaves its
    /// lane and the books.
    pub fn finish_unstarted(
        &self,
        resource: Arc<Resource<T>>,
        upload: &Arc<UploadShared>,
        status: UploadStatus,
        counted: Counted,
    ) {
        let removed = self
            .schedule
            .lock()
            .remove(|j| Arc::ptr_eq(&j.upload, upload));
        drop(removed);
        Counters::drop_one(&self.counters.queued);
        self.finish(resource, upload, status, counted);
    }

    /// Cancels a job already taken out of its lane (by release, shutdown,
    /// or a push the closed schedule refused), unless it had ended.
    pub fn cancel_removed(&self, job: Job<T>) {
        if job.upload.advance(phase::QUEUED, phase::ENDED) {
            let Job {
                resource, upload, ..
            } = job;
            Counters::drop_one(&self.counters.queued);
            self.finish(resource, &upload, UploadStatus::Cancelled, Counted::Yes);
        }
    }

    /// The handle of a new upload; its cancel ends it if still queued.
    pub fn handle(resource: &Arc<Resource<T>>, upload: &Arc<UploadShared>) -> Upload {
        let weak = Arc::downgrade(resource);
        let weak_upload = Arc::downgrade(upload);
        let on_cancel = move || {
            if let (Some(resource), Some(upload)) = (weak.upgrade(), weak_upload.upgrade()) {
                let core = Arc::clone(&resource.core);
                core.finish_unstarted(resource, &upload, UploadStatus::Cancelled, Counted::Yes);
            }
        };
        Upload {
            shared: Arc::clone(upload),
            on_cancel: Arc::new(on_cancel),
        }
    }

    /// Hands a submitted upload to the completion thread, or, once that is
    /// shut down, waits for it here.
    pub fn land_later(&self, landing: Landing<T>) {
        let landings = self.landings.lock();
        let refused = match landings.as_ref() {
            Some(tx) => tx.send(landing).err().map(|e| e.into_inner()),
            None => Some(landing),
        };
        drop(landings);
        if let Some(landing) = refused {
            self.land(landing);
        }
    }

    /// Waits for a submitted upload and ends it; staging goes back to its
    /// ring or pool (or, if the device failed it, is let go).
    pub fn land(&self, landing: Landing<T>) {
        let Landing {
            job,
            staging,
            in_flight,
            worker,
        } = landing;
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.backend.wait(in_flight)
        }))
        .unwrap_or_else(|_| Err(UploadError::Device("waiting for the copy panicked".into())));
        Counters::drop_one(&self.counters.active);
        if let Some(staging) = staging {
            match &waited {
                Ok(()) => job.resource.give_back(staging),
                Err(_) => job.resource.lose(staging),
            }
        }
        let status = match waited {
            Ok(()) => {
                let bytes = job.plan.data_bytes();
                Counters::bump(&self.counters.completed);
                self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                self.window.lock().push(bytes);
                UploadStatus::Done
            }
            Err(e) => UploadStatus::Failed(e),
        };
        let done = status == UploadStatus::Done;
        let Job {
            resource,
            upload,
            source,
            ..
        } = job;
        drop(source);
        self.finish(resource, &upload, status, Counted::Yes);
        if let (true, Some(timeline), Some(outcome)) =
            (done, &self.settings.timeline, upload.outcome())
        {
            record(timeline, worker, &outcome.times);
        }
    }

    /// Whether the engine is shut down.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Closes the engine: queued uploads are cancelled, waiters give up,
    /// workers drain what they started and exit, then the completion thread.
    pub fn shut_down(&self) {
        self.shut_down.store(true, Ordering::Release);
        let queued = self.schedule.lock().close();
        self.work.notify_all();
        for job in queued {
            self.cancel_removed(job);
        }
        self.gate.wake();
        self.landings.lock().take();
    }
}

/// Whether an ending upload still counts against its resource's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    /// It does: ending it makes room.
    Yes,
    /// Its place was handed to the upload that superseded it.
    HandedOn,
}

/// Puts one landed upload's stages on the timeline: the copy into staging
/// and the submit on its worker's track, the device copy on the device's.
fn record(timeline: &crate::diag::Timeline, worker: Option<usize>, t: &super::StageTimes) {
    let track = match worker {
        Some(w) => format!("upload worker {w}"),
        None => "upload (caller)".to_owned(),
    };
    if let (Some(a), Some(b)) = (t.copy_started, t.copy_ended) {
        timeline.span(track.clone(), "copy to staging", a, b);
    }
    if let (Some(a), Some(b)) = (t.copy_ended, t.submitted) {
        timeline.span(track, "submit", a, b);
    }
    if let (Some(a), Some(b)) = (t.submitted, t.gpu_complete) {
        timeline.span("gpu", "gpu copy", a, b);
    }
}
