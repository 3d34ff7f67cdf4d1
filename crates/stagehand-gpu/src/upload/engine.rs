//! [`Engine`]: the upload engine of one device, written once for every
//! [`TransferBackend`]. It starts the workers and the completion thread,
//! makes streamed resources, and shuts everything down when dropped.

use super::UploadStats;
use super::core::{Core, EngineThread, Landing, Settings};
use super::error::UploadError;
use super::resource::{Resource, StagingPolicy, Streamed};
use super::transfer::TransferBackend;
use super::{EngineConfig, StreamOptions, ThreadPriority, UploadPriority, worker};
use crate::diag::sections::UploadSection;
use crossbeam_channel::Receiver;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Instant;

/// The upload engine of one device. Dropping it cancels queued uploads,
/// lets started ones land, and joins every thread.
pub struct Engine<T: TransferBackend> {
    pub(crate) core: Arc<Core<T>>,
    workers: Vec<JoinHandle<()>>,
    completer: Option<JoinHandle<()>>,
    priority: String,
}

impl<T: TransferBackend> Engine<T> {
    /// Starts an engine over `backend`.
    pub fn with_backend(backend: T, config: EngineConfig) -> Result<Self, UploadError> {
        config.validate()?;
        let fill = worker::fill_pool(config.fill_threads, config.priority)?;
        let (landings, landed) = crossbeam_channel::unbounded();
        let settings = Settings {
            max_in_flight_bytes: config.max_in_flight_bytes,
            staging_idle: config.staging_idle,
            chunk_bytes: config.chunk_bytes,
            timeline: config.timeline.clone(),
        };
        let core = Arc::new(Core::new(
            backend,
            settings,
            config.background_bytes_per_frame,
            landings.clone(),
            fill,
        ));
        let mut engine = Self {
            core: Arc::clone(&core),
            workers: Vec::with_capacity(config.workers),
            completer: None,
            priority: format!("{:?}", config.priority),
        };
        // Each thread reports once it runs (and whether its priority took).
        let (report_tx, report) = crossbeam_channel::bounded(config.workers + 1);
        let completer_core = Arc::clone(&core);
        let started = report_tx.clone();
        engine.completer = Some(spawn("stagehand-complete".into(), move || {
            let _ = started.send(Ok(()));
            complete(&completer_core, &landed);
        })?);
        let spawned = (0..config.workers).try_for_each(|i| {
            let (core, landings, started) =
                (Arc::clone(&core), landings.clone(), report_tx.clone());
            let priority = config.priority;
            engine
                .workers
                .push(spawn(format!("stagehand-upload-{i}"), move || {
                    let _ = started.send(set_priority(priority));
                    worker::run(&core, i, landings);
                })?);
            Ok::<_, UploadError>(())
        });
        // The completion thread ends once every sender has gone: this one
        // goes before a failure drops `engine`, which joins that thread and
        // shuts down whatever started.
        drop(landings);
        spawned?;
        let refused = (0..=config.workers)
            .map_while(|_| report.recv_timeout(std::time::Duration::from_secs(5)).ok())
            .filter_map(Result::err)
            .next();
        if let Some(e) = refused {
            engine.priority = format!("{:?} (not applied: {e})", config.priority);
        }
        Ok(engine)
    }

    /// A streamed resource over `target`, its uploads staged as `options`
    /// say, each staging buffer holding `capacity` bytes. A ring's slots
    /// are staged now, so a missing staging pool fails here, not later.
    pub(crate) fn streamed(
        &self,
        target: T::Target,
        options: StreamOptions,
        capacity: u64,
    ) -> Result<Streamed<T>, UploadError> {
        check_options(options)?;
        let ring = match options.policy {
            StagingPolicy::Ring(n) => (0..n)
                .map(|_| self.core.backend.stage(capacity))
                .collect::<Result<Vec<_>, _>>()?,
            _ => Vec::new(),
        };
        let resource = Resource::new(Arc::clone(&self.core), target, options, capacity, ring);
        Ok(Streamed {
            resource: Arc::new(resource),
        })
    }

    /// The backend this engine moves bytes with.
    pub fn backend(&self) -> &T {
        &self.core.backend
    }

    /// Ends a frame: background uploads may start another
    /// [`EngineConfig::background_bytes_per_frame`] bytes. What they spent
    /// past the budget carries over, so over many frames they average to
    /// the budget. Call it once per rendered frame; without a budget it does
    /// nothing.
    pub fn end_frame(&self) {
        self.core.schedule.lock().end_frame();
        self.core.work.notify_all();
    }

    /// The engine's numbers now.
    pub fn stats(&self) -> UploadStats {
        self.core.counters.stats(
            self.workers.len(),
            self.priority.clone(),
            self.core.window.lock().rate(),
            self.core.backend.staging_held(),
            self.core.panics.load(Ordering::Relaxed),
        )
    }

    /// The report section of this engine.
    pub fn section(&self) -> UploadSection {
        UploadSection {
            engine: self.stats(),
        }
    }

    /// Gives every idle staging buffer back to the device now. Without it,
    /// idle staging goes back after [`EngineConfig::staging_idle`].
    pub fn trim_staging(&self) {
        self.core.backend.trim_staging();
    }
}

impl<T: TransferBackend> Drop for Engine<T> {
    fn drop(&mut self) {
        self.core.shut_down();
        if EngineThread::current() != EngineThread::None {
            // Dropped inside a callback, on one of the engine's own threads:
            // that thread cannot join itself, and the others may be waiting
            // for it. They are told to stop and end on their own once their
            // work is drained.
            self.workers.clear();
            self.completer.take();
            self.core.fill.lock().take();
            return;
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        // The fill threads end with their pool.
        self.core.fill.lock().take();
        if let Some(completer) = self.completer.take() {
            let _ = completer.join();
        }
    }
}

impl<T: TransferBackend> std::fmt::Debug for Engine<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, UploadError> {
    #[cfg(test)]
    if spawn_fault::strikes() {
        return Err(UploadError::InvalidConfig(format!(
            "could not start {name}: the test refused the thread"
        )));
    }
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|e| UploadError::InvalidConfig(format!("could not start {name}: {e}")))
}

/// The completion thread: waits for each submitted upload in the order they
/// were submitted and ends it; between them, gives staging nothing asked
/// for during the last idle period back to the device. Ends when every
/// worker has and the engine is shut down.
fn complete<T: TransferBackend>(core: &Core<T>, landed: &Receiver<Landing<T>>) {
    EngineThread::Completer.mark();
    let mut period_started = Instant::now();
    loop {
        let next = match core.settings.staging_idle {
            Some(idle) => {
                let left = idle.saturating_sub(period_started.elapsed());
                landed.recv_timeout(left).map_err(|e| e.is_disconnected())
            }
            None => landed.recv().map_err(|_| true),
        };
        match next {
            Ok(landing) => core.land(landing),
            Err(true) => return,
            Err(false) => {}
        }
        if let Some(idle) = core.settings.staging_idle
            && period_started.elapsed() >= idle
        {
            core.backend.end_staging_period();
            period_started = Instant::now();
        }
    }
}

fn check_options(options: StreamOptions) -> Result<(), UploadError> {
    match options.policy {
        StagingPolicy::Ring(0) | StagingPolicy::PerUpload(0) => {
            return Err(UploadError::InvalidConfig(
                "a staging policy needs at least one buffer".into(),
            ));
        }
        StagingPolicy::Ring(n) | StagingPolicy::PerUpload(n) if n > MAX_STAGING_BUFFERS => {
            return Err(UploadError::InvalidConfig(format!(
                "a staging policy of {n} buffers: at most {MAX_STAGING_BUFFERS}"
            )));
        }
        _ => {}
    }
    if options.policy == StagingPolicy::Synchronous
        && options.priority == UploadPriority::Background
    {
        return Err(UploadError::InvalidConfig(
            "background uploads need a worker (for their budget): use a policy other than Synchronous".into(),
        ));
    }
    if options.rows_per_submit == Some(0) {
        return Err(UploadError::InvalidConfig(
            "rows_per_submit must be at least 1".into(),
        ));
    }
    Ok(())
}

/// Most staging buffers one resource may cycle through.
pub const MAX_STAGING_BUFFERS: usize = 64;

/// Applies `priority` to the calling thread (a decoder of a player, say,
/// that should yield to the transfer workers); `Err` says why the OS
/// refused.
///
/// On Linux, `Low` is also `SCHED_BATCH`: such a thread never preempts
/// another when it wakes. Without it, a worker woken by the render thread's
/// upload call took that thread's core for its whole 33 MB memcpy: `bench
/// upload` at 60 fps counted an involuntary context switch inside the wake
/// and a call p99 of 2.6-3.8 ms.
pub fn set_priority(priority: ThreadPriority) -> Result<(), String> {
    use thread_priority::{ThreadPriority as Os, set_current_thread_priority};
    match priority {
        ThreadPriority::Normal => Ok(()),
        ThreadPriority::Low => low_priority(),
        ThreadPriority::High => set_current_thread_priority(Os::Max).map_err(|e| format!("{e:?}")),
    }
}

#[cfg(target_os = "linux")]
fn low_priority() -> Result<(), String> {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    set_thread_priority_and_policy(
        thread_native_id(),
        thread_priority::ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
    )
    .map_err(|e| format!("{e:?}"))
}

#[cfg(not(target_os = "linux"))]
fn low_priority() -> Result<(), String> {
    thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
        .map_err(|e| format!("{e:?}"))
}

/// A fault on demand for the tests: the engine's Nth thread, counted on
/// the thread that builds it, cannot be spawned.
#[cfg(test)]
pub(super) mod spawn_fault {
    use std::cell::Cell;

    thread_local! {
        static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Spawns on this thread fail from the one `n` spawns from now.
    pub(in crate::upload) fn fail_after(n: usize) {
        LEFT.with(|left| left.set(Some(n)));
    }

    /// Whether this spawn is refused.
    pub(in crate::upload) fn strikes() -> bool {
        LEFT.with(|left| match left.get() {
            Some(0) => true,
            Some(n) => {
                left.set(Some(n - 1));
                false
            }
            None => false,
        })
    }
}
