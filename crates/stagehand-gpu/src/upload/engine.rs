//! What the engine's threads, resources and handles share, and the poller
//! thread that turns GPU completions into resolved uploads.

use super::future::{UploadShared, UploadStatus};
use super::resource::ResourceShared;
use super::stats::{Counters, Window};
use super::worker::Job;
use crate::backend::wgpu::{BufferBackend, BufferPool, Gpu};
use crate::pool::Pooled;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex, RwLock};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the poller asks the device for finished work while uploads
/// are in flight. A non-blocking poll holds wgpu's locks only briefly; a
/// blocking one would hold them for the whole wait and stall the render
/// thread's submits (the stall a naive background thread shows).
const POLL_INTERVAL: Duration = Duration::from_micros(200);

/// A staging buffer on its way back after the GPU finished with it.
pub(crate) enum Staging {
    /// A ring slot, mapped again and ready for its next upload.
    Ring(Pooled<BufferBackend>),
    /// A per-upload buffer, to go back to the pool.
    Once(Pooled<BufferBackend>),
    /// Nothing to return (synchronous uploads).
    None,
}

/// A GPU completion, sent from a wgpu callback to the poller.
pub(crate) struct Completion {
    pub resource: Arc<ResourceShared>,
    pub upload: Arc<UploadShared>,
    pub admitted: u64,
    pub data_bytes: u64,
    pub staging: Staging,
    /// `Err` if the device reported a failure (map failed, device lost).
    pub result: Result<(), String>,
}

/// Which of the engine's threads this is, if any: callbacks run on them,
/// and a callback that drops a resource must not wait there for work only
/// that very thread can finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EngineThread {
    /// Not one of the engine's threads.
    None,
    /// A transfer worker.
    Worker,
    /// The poller, which ends submitted uploads.
    Poller,
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

/// Admission: bytes of staging in flight across the engine, and of those
/// the background uploads' (which never take room from the others).
#[derive(Debug, Default)]
pub(crate) struct Admission {
    pub bytes: u64,
    pub uploads: u64,
    pub background_bytes: u64,
    pub background_uploads: u64,
}

impl Admission {
    /// Whether `bytes` more of this kind must wait. One upload larger than
    /// the bound is let in when nothing of its kind is in flight.
    /// Background uploads get room only while the whole engine is under the
    /// bound; the others count only themselves, so waiting background
    /// uploads cannot starve them (the engine may then hold up to twice the
    /// bound).
    pub fn full(&self, bytes: u64, background: bool, bound: u64) -> bool {
        let (held, uploads) = if background {
            (self.bytes, self.uploads)
        } else {
            (
                self.bytes - self.background_bytes,
                self.uploads - self.background_uploads,
            )
        };
        uploads > 0 && held + bytes > bound
    }

    pub fn add(&mut self, bytes: u64, background: bool) {
        self.bytes += bytes;
        self.uploads += 1;
        if background {
            self.background_bytes += bytes;
            self.background_uploads += 1;
        }
    }

    fn remove(&mut self, bytes: u64, background: bool) {
        self.bytes -= bytes;
        self.uploads -= 1;
        if background {
            self.background_bytes -= bytes;
            self.background_uploads -= 1;
        }
    }
}

pub(crate) struct EngineShared {
    pub gpu: Arc<Gpu>,
    pub staging: BufferPool,
    /// Each worker's lanes, by [`UploadPriority`](super::UploadPriority);
    /// `None` once shut down. A resource always goes to the same worker and
    /// lane, so its uploads are copied and submitted in the order they were
    /// made: the last upload to a region wins.
    pub jobs: RwLock<Option<Vec<[Sender<Job>; 3]>>>,
    /// Wakes each worker waiting for the background budget to reopen.
    pub frame_ticks: Vec<Sender<()>>,
    /// Bytes background uploads may start per frame; `None`: no cap.
    pub background_budget: Option<u64>,
    /// Idle staging goes back to the device after this long.
    pub staging_idle: Option<Duration>,
    /// Bytes background uploads started since the last `end_frame`.
    pub background_spent: AtomicU64,
    /// Hands out workers to new resources, round robin.
    pub next_worker: AtomicUsize,
    pub completions: (Sender<Completion>, Receiver<Completion>),
    /// wgpu callbacks armed and not yet fired; the poller polls while above 0.
    pub outstanding: AtomicUsize,
    pub wake_poller: (Mutex<()>, Condvar),
    pub admission: Mutex<Admission>,
    pub admitted: Condvar,
    pub max_in_flight_bytes: u64,
    pub shut_down: AtomicBool,
    pub counters: Counters,
    pub window: Mutex<Window>,
    pub panics: Arc<AtomicU64>,
    /// Worker threads still running.
    pub workers_alive: AtomicUsize,
    /// Async uploads waiting for room; woken whenever an upload ends.
    pub room_wakers: Mutex<Vec<std::task::Waker>>,
    /// Where landed uploads' stages are recorded, if anywhere.
    pub timeline: Option<Arc<crate::diag::Timeline>>,
}

impl EngineShared {
    /// Whether background uploads may start now.
    pub fn background_open(&self) -> bool {
        self.background_budget
            .is_none_or(|budget| self.background_spent.load(Ordering::Acquire) < budget)
    }

    /// Arms one wgpu callback: the poller will poll until it fires.
    pub fn arm(&self) {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
        self.wake_poller.1.notify_one();
    }

    /// Takes back an upload's admission, engine-wide and for its resource.
    pub fn release_admission(
        &self,
        resource: &ResourceShared,
        upload: &Arc<UploadShared>,
        bytes: u64,
    ) {
        resource.finish(upload);
        self.unadmit_bytes(bytes, resource.is_background());
    }

    /// Gives back engine-wide bytes of an upload that was not admitted.
    pub fn unadmit_bytes(&self, bytes: u64, background: bool) {
        self.unadmit_refused(bytes, background);
        // Every upload's end passes here: whoever waits for room may retry.
        // The wakers run with no lock held (one may poll at once, and
        // register again), each under `catch_unwind`: a waker is the
        // executor's code, and must not take down the thread ending uploads.
        let wakers = std::mem::take(&mut *self.room_wakers.lock());
        for waker in wakers {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake())).is_err() {
                self.panics.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Gives back bytes an attempt admitted before it was refused further
    /// on (the resource was full). Wakes no task: nothing ended, so no
    /// room was made; the refused attempt's own waker in particular must
    /// not be woken, or its executor polls it again at once, for ever.
    pub fn unadmit_refused(&self, bytes: u64, background: bool) {
        let mut a = self.admission.lock();
        a.remove(bytes, background);
        drop(a);
        self.admitted.notify_all();
    }

    /// Ends an upload a newer one replaced; its resource count was already
    /// handed to the newer one.
    pub fn end_superseded(&self, resource: &ResourceShared, old: &Arc<UploadShared>) {
        Counters::drop_one(&self.counters.queued);
        Counters::bump(&self.counters.superseded);
        self.unadmit_bytes(
            old.admitted.load(Ordering::Acquire),
            resource.is_background(),
        );
        old.resolve(UploadStatus::Superseded);
    }

    /// Ends an upload that never reached the GPU.
    pub fn end_early(
        &self,
        resource: &ResourceShared,
        upload: &Arc<UploadShared>,
        bytes: u64,
        status: UploadStatus,
    ) {
        let counter = match &status {
            UploadStatus::Cancelled => &self.counters.cancelled,
            UploadStatus::Superseded => &self.counters.superseded,
            _ => &self.counters.failed,
        };
        Counters::bump(counter);
        self.release_admission(resource, upload, bytes);
        upload.resolve(status);
    }

    fn complete(&self, c: Completion) {
        let Completion {
            resource,
            upload,
            admitted,
            data_bytes,
            staging,
            result,
        } = c;
        Counters::drop_one(&self.counters.active);
        match staging {
            Staging::Ring(slot) => resource.ring_return(slot),
            Staging::Once(buffer) => drop(buffer),
            Staging::None => {}
        }
        let status = match result {
            Ok(()) => {
                Counters::bump(&self.counters.completed);
                self.counters.bytes.fetch_add(data_bytes, Ordering::Relaxed);
                self.window.lock().push(data_bytes);
                UploadStatus::Done
            }
            Err(message) => {
                Counters::bump(&self.counters.failed);
                UploadStatus::Failed(super::UploadError::Device(message))
            }
        };
        let done = status == UploadStatus::Done;
        let worker = resource.worker();
        self.release_admission(&resource, &upload, admitted);
        // Its callbacks may drop the resource: this thread lets go of it
        // first, so the drop finds no reference of the engine's left.
        drop(resource);
        upload.resolve(status);
        if let (true, Some(timeline), Some(outcome)) = (done, &self.timeline, upload.outcome()) {
            record(timeline, worker, &outcome.times);
        }
    }

    /// The poller's loop: poll without blocking while callbacks are armed,
    /// resolve what completed, sleep on the condvar when nothing is in flight.
    /// Callbacks count themselves out after sending their completion, so the
    /// channel is drained on every turn, armed or not.
    pub fn poll_loop(&self) {
        EngineThread::Poller.mark();
        let mut batch_started = Instant::now();
        loop {
            if let Some(idle) = self.staging_idle
                && batch_started.elapsed() >= idle
            {
                // Staging no upload asked for during the last batch goes
                // back to the device.
                self.staging.end_batch();
                batch_started = Instant::now();
            }
            let armed = self.outstanding.load(Ordering::Acquire);
            if armed > 0 {
                let _ = self.gpu.device().poll(wgpu::PollType::Poll);
            }
            let mut any = false;
            while let Ok(c) = self.completions.1.try_recv() {
                any = true;
                self.complete(c);
            }
            if any {
                continue;
            }
            if armed > 0 {
                std::thread::sleep(POLL_INTERVAL);
                continue;
            }
            if self.shut_down.load(Ordering::Acquire)
                && self.idle_workers_done()
                && self.completions.1.is_empty()
            {
                return;
            }
            let mut guard = self.wake_poller.0.lock();
            if self.outstanding.load(Ordering::Acquire) == 0 {
                self.wake_poller
                    .1
                    .wait_for(&mut guard, Duration::from_millis(5));
            }
        }
    }

    /// Workers have all exited (the admission count is then final).
    fn idle_workers_done(&self) -> bool {
        self.workers_alive.load(Ordering::Acquire) == 0
    }
}

/// Puts one landed upload's stages on the timeline: the copy into staging
/// and the submit on its worker's track, the GPU copy on the GPU's.
fn record(timeline: &crate::diag::Timeline, worker: usize, t: &super::StageTimes) {
    let track = format!("upload worker {worker}");
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
