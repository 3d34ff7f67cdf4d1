//! The upload engine on CUDA (feature `cuda`): host bytes to device memory
//! through rings of pinned staging buffers, on a transfer stream, without
//! the caller waiting.
//!
//! The protocol matches the wgpu engine's:
//! 1. [`CudaUploadEngine::new`] once per device: it takes its pinned slots
//!    from a pool of page-locked memory and starts its threads;
//! 2. [`upload`](CudaUploadEngine::upload) /
//!    [`try_upload`](CudaUploadEngine::try_upload) shared immutable bytes to
//!    a range of a [`DeviceBuffer`]; each returns an [`Upload`] at once, the
//!    same handle as on wgpu;
//! 3. drop the engine: queued uploads are cancelled, started ones land,
//!    every thread is joined and every slot goes back to the pinned pool.
//!
//! How an upload moves: it is cut into chunks of `chunk_bytes`. Workers copy
//! chunks into their own ring of pinned slots in parallel (one CPU thread
//! copies far slower than the bus moves), then queue each chunk's
//! `cuMemcpyHtoDAsync` on the transfer stream strictly in the order the
//! uploads were made, so the last upload to a range wins. Each slot's event
//! is recorded after its copy; a completion thread waits on the events in
//! order (sleeping, not spinning), gives each slot back to its worker, and
//! resolves an upload when its last chunk is on the device. Work queued on
//! the destination's stream before a chunk is queued runs first: the
//! transfer stream waits for it on the GPU.
//!
//! Callbacks given to [`Upload::on_complete`] run on the engine's completion
//! thread: they must not block on the engine (an `upload` waiting for room
//! there would wait for itself). An upload that fails after some of its
//! chunks landed leaves those bytes written; its outcome says `Failed`.
//!
//! Not here, unlike on wgpu: superseding a queued upload by a newer one and
//! filling staging in place.

use super::error::UploadError;
use super::future::{Upload, UploadShared, UploadStatus, phase};
use super::stats::{Counters, UploadStats, Window};
use crate::backend::cuda::{Cuda, CudaError, DeviceBuffer, Event, PinnedMemory, Stream};
use crate::diag::sections::UploadSection;
use crate::pool::{Pool, PoolConfig, Pooled};
use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

/// How a CUDA upload engine is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaEngineConfig {
    /// Threads copying into pinned staging, in parallel; at least 1.
    pub workers: usize,
    /// Bytes per pinned slot, and the largest chunk; at least 4 KiB. An
    /// upload is cut into one chunk per worker where that is smaller (down
    /// to 256 KiB), so small uploads are filled in parallel too.
    pub chunk_bytes: u64,
    /// Pinned slots each worker cycles through; at least 1 (2 lets a worker
    /// fill one while the device reads the other).
    pub slots_per_worker: usize,
    /// Bound on the bytes of uploads accepted and not yet landed. One upload
    /// larger than the bound is accepted when nothing else is in flight.
    pub max_in_flight_bytes: u64,
}

impl Default for CudaEngineConfig {
    /// Half the machine's threads (1 to 8), 4 MiB chunks, 2 slots each,
    /// 256 MiB in flight.
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            workers: (threads / 2).clamp(1, 8),
            chunk_bytes: 4 << 20,
            slots_per_worker: 2,
            max_in_flight_bytes: 256 << 20,
        }
    }
}

impl CudaEngineConfig {
    /// Most workers an engine may have.
    pub const MAX_WORKERS: usize = 64;
    /// Most slots a worker may cycle through.
    pub const MAX_SLOTS_PER_WORKER: usize = 16;
    /// Most pinned memory an engine may hold, `workers * slots_per_worker *
    /// chunk_bytes`: 16 GiB.
    pub const MAX_PINNED_BYTES: u64 = 16 << 30;

    fn validate(&self) -> Result<(), UploadError> {
        let bad = |m: &str| Err(UploadError::InvalidConfig(m.into()));
        if self.workers == 0 || self.workers > Self::MAX_WORKERS {
            return bad("workers must be between 1 and 64");
        }
        if self.chunk_bytes < 4096 {
            return bad("chunk_bytes must be at least 4 KiB");
        }
        if self.slots_per_worker == 0 || self.slots_per_worker > Self::MAX_SLOTS_PER_WORKER {
            return bad("slots_per_worker must be between 1 and 16");
        }
        let pinned = (self.workers as u64 * self.slots_per_worker as u64)
            .checked_mul(self.chunk_bytes)
            .filter(|&b| b <= Self::MAX_PINNED_BYTES);
        if pinned.is_none() {
            return bad(
                "workers * slots_per_worker * chunk_bytes must be at most 16 GiB of pinned memory",
            );
        }
        if self.max_in_flight_bytes == 0 {
            return bad("max_in_flight_bytes must be at least 1");
        }
        Ok(())
    }
}

/// One upload, shared by its chunks.
struct Job {
    upload: Arc<UploadShared>,
    dst: Arc<DeviceBuffer>,
    offset: u64,
    data: Bytes,
    /// Chunks not yet finished (landed, skipped or failed).
    remaining: AtomicUsize,
    /// Set when the upload will not land: cancelled, shut down or failed.
    skip: AtomicBool,
    failure: Mutex<Option<CudaError>>,
}

impl Job {
    fn fail(&self, e: CudaError) {
        self.failure.lock().get_or_insert(e);
        self.skip.store(true, Ordering::Release);
    }
}

struct Chunk {
    job: Arc<Job>,
    /// Position in the engine's order of queueing on the transfer stream.
    seq: u64,
    index: usize,
    range: Range<usize>,
}

/// A pinned staging buffer and the event recorded after the copy from it.
struct Slot {
    block: Pooled<PinnedMemory>,
    event: Event,
}

/// A chunk queued on the transfer stream, and where its slot goes after.
struct InFlight {
    slot: Slot,
    home: Sender<Slot>,
    job: Arc<Job>,
}

/// The in-flight bound. Uploads that wait are served first come, first
/// served: a large upload is not passed over by a stream of small ones.
#[derive(Default)]
struct Admission {
    bytes: u64,
    uploads: u64,
    /// The next waiting upload's ticket, and the ticket served now.
    next_ticket: u64,
    serving: u64,
}

struct Shared {
    stream: Stream,
    /// Orders the transfer stream after a destination's stream; used only
    /// by the worker whose turn it is.
    order: Event,
    pinned: Pool<PinnedMemory>,
    chunk_bytes: u64,
    /// Chunks to copy; `None` once the engine is dropped.
    chunks: Mutex<Option<(Sender<Chunk>, u64)>>,
    /// The next sequence number to queue on the stream.
    turn: Mutex<u64>,
    turned: Condvar,
    admission: Mutex<Admission>,
    admitted: Condvar,
    max_in_flight: u64,
    shut_down: AtomicBool,
    counters: Counters,
    window: Mutex<Window>,
    panics: Arc<AtomicU64>,
}

impl Shared {
    fn unadmit(&self, bytes: u64) {
        let mut a = self.admission.lock();
        a.bytes -= bytes;
        a.uploads -= 1;
        drop(a);
        self.admitted.notify_all();
    }

    /// The books of an upload that ended while queued (by its handle's
    /// cancel, or by shutdown): it leaves the queue and the in-flight bound.
    fn cancelled_while_queued(&self, len: u64) {
        Counters::drop_one(&self.counters.queued);
        Counters::bump(&self.counters.cancelled);
        self.unadmit(len);
    }

    /// Waits until it is chunk `seq`'s turn to be queued on the stream; the
    /// turn passes to the next chunk when the guard drops, even by a panic.
    fn wait_turn(&self, seq: u64) -> Turn<'_> {
        let mut turn = self.turn.lock();
        while *turn != seq {
            self.turned.wait(&mut turn);
        }
        Turn(self)
    }

    /// Ends a chunk; the last chunk of a job resolves its upload.
    fn chunk_finished(&self, job: &Job) {
        if job.remaining.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let bytes = job.data.len() as u64;
        let failure = job.failure.lock().take();
        if job.upload.phase.load(Ordering::Acquire) == phase::ENDED {
            // Cancelled while queued: its handle has already ended it and
            // given its admission back.
            return;
        }
        Counters::drop_one(&self.counters.active);
        let status = match failure {
            Some(e) => {
                Counters::bump(&self.counters.failed);
                UploadStatus::Failed(UploadError::Device(e.to_string()))
            }
            None => {
                Counters::bump(&self.counters.completed);
                self.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                self.window.lock().push(bytes);
                UploadStatus::Done
            }
        };
        self.unadmit(bytes);
        job.upload.resolve(status);
    }

    /// The first chunk decides whether the upload goes ahead: it moves the
    /// upload from queued to submitted, unless it was cancelled or the
    /// engine is shutting down.
    fn start(&self, job: &Job) -> bool {
        if self.shut_down.load(Ordering::Acquire) && job.upload.advance(phase::QUEUED, phase::ENDED)
        {
            self.cancelled_while_queued(job.data.len() as u64);
            job.upload.resolve(UploadStatus::Cancelled);
        }
        if !job.upload.advance(phase::QUEUED, phase::SUBMITTED) {
            job.skip.store(true, Ordering::Release);
            return false;
        }
        Counters::drop_one(&self.counters.queued);
        Counters::bump(&self.counters.active);
        true
    }

    /// Queues one filled slot's copy, after the destination stream's work.
    fn enqueue(&self, chunk: &Chunk, slot: &Slot) -> Result<(), CudaError> {
        let job = &chunk.job;
        if chunk.index == 0 {
            self.order.record(job.dst.stream())?;
            self.stream.wait(&self.order)?;
        }
        let offset = job.offset + chunk.range.start as u64;
        job.dst
            .copy_from_pinned(offset, &slot.block, chunk.range.len(), &self.stream)?;
        if let Err(e) = slot.event.record(&self.stream) {
            // The copy is queued but nothing marks its end: wait for the
            // whole stream before the slot or the destination can go back.
            let _ = self.stream.synchronize();
            return Err(e);
        }
        Ok(())
    }
}

/// Chunks no smaller than this, unless the slots are: below it the cost of
/// each copy call outweighs filling in parallel.
const MIN_CHUNK: u64 = 256 << 10;

/// The chunk length for an upload of `len` bytes: split so every worker
/// fills a share in parallel, at most a slot, at least [`MIN_CHUNK`].
fn chunk_len(len: u64, workers: usize, slot: u64) -> usize {
    let share = len.div_ceil(workers.max(1) as u64);
    share.clamp(MIN_CHUNK.min(slot), slot) as usize
}

/// A chunk's turn at the transfer stream.
struct Turn<'a>(&'a Shared);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.0.turn.lock() += 1;
        self.0.turned.notify_all();
    }
}

/// Streams bytes into device memory from worker threads; see the
/// [module](self) notes.
pub struct CudaUploadEngine {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    completer: Option<JoinHandle<()>>,
}

impl CudaUploadEngine {
    /// Starts the engine on `cuda`: its transfer stream, its pinned slots
    /// (`workers * slots_per_worker` of `chunk_bytes`) and its threads.
    ///
    /// Errors: [`UploadError::InvalidConfig`], [`UploadError::Staging`] when
    /// pinned memory cannot be had, [`UploadError::Device`].
    pub fn new(cuda: &Cuda, config: CudaEngineConfig) -> Result<Self, UploadError> {
        config.validate()?;
        let device = |e: CudaError| UploadError::Device(e.to_string());
        let pinned = Pool::new(
            PinnedMemory::new(cuda),
            PoolConfig::named("cuda pinned staging"),
        )?;
        let (chunk_tx, chunk_rx) = crossbeam_channel::unbounded::<Chunk>();
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<InFlight>();
        let mut rings = Vec::with_capacity(config.workers);
        for _ in 0..config.workers {
            let (tx, rx) = crossbeam_channel::unbounded();
            for _ in 0..config.slots_per_worker {
                let block = pinned.take((), config.chunk_bytes)?;
                let event = cuda.new_event().map_err(device)?;
                let _ = tx.send(Slot { block, event });
            }
            rings.push((tx, rx));
        }
        let shared = Arc::new(Shared {
            stream: cuda.new_stream().map_err(device)?,
            order: cuda.new_event().map_err(device)?,
            pinned,
            chunk_bytes: config.chunk_bytes,
            chunks: Mutex::new(Some((chunk_tx, 0))),
            turn: Mutex::new(0),
            turned: Condvar::new(),
            admission: Mutex::new(Admission::default()),
            admitted: Condvar::new(),
            max_in_flight: config.max_in_flight_bytes,
            shut_down: AtomicBool::new(false),
            counters: Counters::default(),
            window: Mutex::new(Window::default()),
            panics: Arc::new(AtomicU64::new(0)),
        });
        let mut workers = Vec::with_capacity(rings.len());
        for (i, ring) in rings.into_iter().enumerate() {
            let (own, chunks, done) = (Arc::clone(&shared), chunk_rx.clone(), done_tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("stagehand cuda upload {i}"))
                .spawn(move || work(&own, &chunks, ring, &done));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    let engine = Self {
                        shared,
                        workers,
                        completer: None,
                    };
                    drop(engine);
                    return Err(UploadError::Device(format!(
                        "could not start a worker: {e}"
                    )));
                }
            }
        }
        drop(done_tx);
        let completer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("stagehand cuda completion".into())
                .spawn(move || complete(&shared, &done_rx))
        };
        let mut engine = Self {
            shared,
            workers,
            completer: None,
        };
        match completer {
            Ok(handle) => engine.completer = Some(handle),
            Err(e) => return Err(UploadError::Device(format!("could not start: {e}"))),
        }
        Ok(engine)
    }

    /// Queues `data` for bytes `offset..offset + data.len()` of `dst`,
    /// waiting while the engine is at its in-flight bound. Returns at once
    /// otherwise; the [`Upload`] resolves when the bytes are on the device
    /// (work queued on any stream afterwards sees them).
    ///
    /// Errors, before anything is queued: [`UploadError::ZeroSized`] for no
    /// data, [`UploadError::OutOfBounds`] for a range outside `dst`,
    /// [`UploadError::ShutDown`].
    pub fn upload(
        &self,
        dst: &Arc<DeviceBuffer>,
        offset: u64,
        data: impl Into<Bytes>,
    ) -> Result<Upload, UploadError> {
        self.queue(dst, offset, data.into(), true)
    }

    /// As [`upload`](Self::upload), but at the in-flight bound it returns
    /// [`UploadError::WouldBlock`] instead of waiting.
    pub fn try_upload(
        &self,
        dst: &Arc<DeviceBuffer>,
        offset: u64,
        data: impl Into<Bytes>,
    ) -> Result<Upload, UploadError> {
        self.queue(dst, offset, data.into(), false)
    }

    fn queue(
        &self,
        dst: &Arc<DeviceBuffer>,
        offset: u64,
        data: Bytes,
        wait: bool,
    ) -> Result<Upload, UploadError> {
        let len = data.len() as u64;
        if len == 0 {
            return Err(UploadError::ZeroSized);
        }
        if offset.checked_add(len).is_none_or(|end| end > dst.len()) {
            return Err(UploadError::OutOfBounds {
                region: format!("bytes {offset}..{}", offset.saturating_add(len)),
                bounds: format!("a buffer of {} bytes", dst.len()),
            });
        }
        self.admit(len, wait)?;
        let upload = UploadShared::new(Arc::clone(&self.shared.panics));
        upload.admitted.store(len, Ordering::Release);
        let chunk = chunk_len(len, self.workers.len(), self.shared.chunk_bytes);
        let count = data.len().div_ceil(chunk);
        let job = Arc::new(Job {
            upload: Arc::clone(&upload),
            dst: Arc::clone(dst),
            offset,
            data,
            remaining: AtomicUsize::new(count),
            skip: AtomicBool::new(false),
            failure: Mutex::new(None),
        });
        {
            let mut chunks = self.shared.chunks.lock();
            let Some((tx, next)) = chunks.as_mut() else {
                drop(chunks);
                self.shared.unadmit(len);
                return Err(UploadError::ShutDown);
            };
            Counters::bump(&self.shared.counters.queued);
            for index in 0..count {
                let start = index * chunk;
                let range = start..(start + chunk).min(job.data.len());
                let seq = *next;
                *next += 1;
                let _ = tx.send(Chunk {
                    job: Arc::clone(&job),
                    seq,
                    index,
                    range,
                });
            }
        }
        Ok(self.handle(&upload, len))
    }

    /// Takes `len` bytes of the in-flight bound, waiting for room (in turn
    /// with other waiters) if `wait`.
    fn admit(&self, len: u64, wait: bool) -> Result<(), UploadError> {
        let shared = &self.shared;
        let mut a = shared.admission.lock();
        let fits = |a: &Admission| a.uploads == 0 || a.bytes + len <= shared.max_in_flight;
        if !wait {
            if a.next_ticket != a.serving || !fits(&a) {
                return Err(UploadError::WouldBlock("the engine's in-flight bytes"));
            }
        } else {
            let ticket = a.next_ticket;
            a.next_ticket += 1;
            while a.serving != ticket || !fits(&a) {
                if shared.shut_down.load(Ordering::Acquire) {
                    break;
                }
                shared.admitted.wait(&mut a);
            }
            a.serving += 1;
            shared.admitted.notify_all();
        }
        if shared.shut_down.load(Ordering::Acquire) {
            return Err(UploadError::ShutDown);
        }
        a.bytes += len;
        a.uploads += 1;
        Ok(())
    }

    fn handle(&self, upload: &Arc<UploadShared>, len: u64) -> Upload {
        let weak = Arc::downgrade(&self.shared);
        let on_cancel = move || {
            if let Some(shared) = weak.upgrade() {
                shared.cancelled_while_queued(len);
            }
        };
        Upload {
            shared: Arc::clone(upload),
            on_cancel: Arc::new(on_cancel),
        }
    }

    /// The transfer stream.
    pub fn stream(&self) -> &Stream {
        &self.shared.stream
    }

    /// The engine's numbers now.
    pub fn stats(&self) -> UploadStats {
        self.shared.counters.stats(
            self.workers.len(),
            "normal (not changed)".into(),
            self.shared.window.lock().rate(),
            self.shared.pinned.stats().held,
            self.shared.panics.load(Ordering::Relaxed),
        )
    }

    /// The pinned staging pool's numbers.
    pub fn staging_stats(&self) -> crate::pool::PoolStats {
        self.shared.pinned.stats()
    }

    /// The `uploads` report section of this engine.
    pub fn section(&self) -> UploadSection {
        UploadSection {
            engine: self.stats(),
        }
    }
}

impl Drop for CudaUploadEngine {
    /// Cancels what is queued, lets started uploads land, joins every
    /// thread. The slots go back to the pinned pool, which frees them with
    /// the engine.
    fn drop(&mut self) {
        self.shared.shut_down.store(true, Ordering::Release);
        self.shared.admitted.notify_all();
        // Closing the channel lets the workers drain it and exit; the
        // completion thread exits when the last worker has.
        drop(self.shared.chunks.lock().take());
        super::join_others(self.workers.drain(..).chain(self.completer.take()));
    }
}

impl std::fmt::Debug for CudaUploadEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaUploadEngine")
            .field("workers", &self.workers.len())
            .field("chunk_bytes", &self.shared.chunk_bytes)
            .finish_non_exhaustive()
    }
}

/// A worker: takes chunks in order, fills a slot of its own ring, queues the
/// copy in turn, hands the slot to the completion thread.
fn work(
    shared: &Shared,
    chunks: &Receiver<Chunk>,
    (home, ring): (Sender<Slot>, Receiver<Slot>),
    done: &Sender<InFlight>,
) {
    while let Ok(chunk) = chunks.recv() {
        // A slot of our own ring: it comes back once the device has read it.
        // We hold a sender, so this cannot fail while the ring has slots.
        let Ok(mut slot) = ring.recv() else {
            drop(shared.wait_turn(chunk.seq));
            chunk
                .job
                .fail(CudaError::Invalid("a worker lost its slots".into()));
            shared.chunk_finished(&chunk.job);
            continue;
        };
        let job = Arc::clone(&chunk.job);
        let filled = !job.skip.load(Ordering::Acquire)
            && job.upload.phase.load(Ordering::Acquire) != phase::ENDED;
        if filled {
            let started = Instant::now();
            let n = chunk.range.len();
            slot.block.as_mut_slice()[..n].copy_from_slice(&job.data[chunk.range.clone()]);
            let ended = Instant::now();
            job.upload.stamp(|t| {
                t.copy_started = Some(t.copy_started.map_or(started, |s| s.min(started)));
                t.copy_ended = Some(t.copy_ended.map_or(ended, |e| e.max(ended)));
            });
        }
        let turn = shared.wait_turn(chunk.seq);
        let go = if chunk.index == 0 {
            shared.start(&job)
        } else {
            !job.skip.load(Ordering::Acquire)
        };
        let queued = if go && filled {
            let queued = shared.enqueue(&chunk, &slot);
            if let Err(e) = &queued {
                job.fail(e.clone());
            }
            queued.is_ok()
        } else {
            if go {
                // Started, but this chunk was not filled: the upload was
                // cancelled in between, which only a failure can cause now.
                job.fail(CudaError::Invalid("a chunk was not filled".into()));
            }
            false
        };
        drop(turn);
        if queued {
            let submitted = Instant::now();
            job.upload.stamp(|t| {
                t.submitted = Some(t.submitted.map_or(submitted, |s| s.max(submitted)));
            });
            let in_flight = InFlight {
                slot,
                home: home.clone(),
                job,
            };
            if let Err(e) = done.send(in_flight) {
                // The completion thread is gone (it never is before the
                // workers); wait here instead.
                let in_flight = e.into_inner();
                if let Err(e) = in_flight.slot.event.synchronize() {
                    in_flight.job.fail(e);
                }
                shared.chunk_finished(&in_flight.job);
                let _ = home.send(in_flight.slot);
            }
        } else {
            let _ = home.send(slot);
            shared.chunk_finished(&job);
        }
    }
}

/// The completion thread: waits on each queued chunk's event in the order
/// they were queued, returns the slot to its worker, ends uploads.
fn complete(shared: &Shared, done: &Receiver<InFlight>) {
    for InFlight { slot, home, job } in done.iter() {
        let waited = catch_unwind(AssertUnwindSafe(|| slot.event.synchronize()));
        let waited = waited.unwrap_or_else(|_| {
            Err(CudaError::Panicked {
                call: "cuEventSynchronize",
                message: "the driver library panicked".into(),
            })
        });
        if let Err(e) = waited {
            // Without the event, only the whole stream says the copy is done.
            let _ = shared.stream.synchronize();
            job.fail(e);
        }
        let _ = home.send(slot);
        shared.chunk_finished(&job);
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_len;

    #[test]
    fn chunks_spread_over_workers_within_bounds() {
        const MIB: u64 = 1 << 20;
        // 4 MiB over 8 workers: 512 KiB each.
        assert_eq!(chunk_len(4 * MIB, 8, 4 * MIB), 512 << 10);
        // Large uploads: whole slots.
        assert_eq!(chunk_len(256 * MIB, 8, 4 * MIB), 4 * MIB as usize);
        // Small ones: not below 256 KiB...
        assert_eq!(chunk_len(100, 8, 4 * MIB), 256 << 10);
        // ...unless the slots are smaller.
        assert_eq!(chunk_len(MIB, 4, 64 << 10), 64 << 10);
        // One worker: whole slots.
        assert_eq!(chunk_len(10 * MIB, 1, 4 * MIB), 4 * MIB as usize);
    }
}
