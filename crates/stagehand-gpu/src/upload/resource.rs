//! Streamed resources: a texture or buffer with its staging policy, its ring
//! of staging buffers, and its uploads in flight.

use super::engine::{EngineShared, EngineThread};
use super::error::UploadError;
use super::future::{Upload, UploadShared, UploadStatus, phase};
use super::region::{self, CopyLayout, SourceLayout, TextureInfo, TextureRegion};
use super::worker::{Job, Source, Target};
use crate::backend::wgpu::BufferBackend;
use crate::diag::Tracked;
use crate::pool::Pooled;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// One streamed resource's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceStats {
    /// Its staging policy.
    pub policy: StagingPolicy,
    /// Uploads admitted and not ended (queued or in flight).
    pub in_flight: u64,
    /// Of those, not yet started (they can still be superseded).
    pub queued: u64,
    /// Bytes each of its staging buffers holds.
    pub staging_capacity: u64,
    /// Ring slots mapped and free now.
    pub ring_free: u64,
    /// Whether it was released.
    pub released: bool,
}

/// How a resource's uploads are staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StagingPolicy {
    /// `queue.write_texture` / `write_buffer` on the caller's thread: for
    /// small data, and for comparison.
    Synchronous,
    /// A ring of this many staging buffers, cycled: while the GPU copies from
    /// one, a worker fills the next. At least 1; 2 or 3 for streaming.
    Ring(usize),
    /// One staging buffer per upload, from the engine's staging pool, given
    /// back when the GPU is done with it. At most this many at once.
    PerUpload(usize),
}

impl StagingPolicy {
    /// Uploads of one resource that may be in flight at once.
    pub fn limit(self) -> usize {
        match self {
            Self::Synchronous => usize::MAX,
            Self::Ring(n) | Self::PerUpload(n) => n,
        }
    }
}

pub(crate) enum Kind {
    Texture {
        texture: Tracked<wgpu::Texture>,
        info: TextureInfo,
    },
    Buffer {
        buffer: Tracked<wgpu::Buffer>,
    },
}

/// Which uploads can replace one another: those to the same region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RegionKey {
    Texture(TextureRegion),
    Buffer { offset: u64, len: u64 },
}

/// Uploads of one resource that are admitted and not ended.
#[derive(Default)]
struct Pending {
    /// Admitted and not ended; at most the policy's limit.
    count: usize,
    /// Those not yet started, by region, so a newer one can supersede.
    queued: HashMap<RegionKey, Arc<UploadShared>>,
}

pub(crate) struct ResourceShared {
    pub engine: Arc<EngineShared>,
    pub kind: Kind,
    pub policy: StagingPolicy,
    /// Bytes each staging buffer of this resource holds.
    pub staging_capacity: u64,
    /// Ring slots that are mapped and free; the others are in flight.
    ring: Mutex<Vec<Pooled<BufferBackend>>>,
    ring_freed: Condvar,
    pending: Mutex<Pending>,
    ended: Condvar,
    released: AtomicBool,
    /// The worker whose queue this resource's uploads go to.
    worker: usize,
    /// Split texture copies into submissions of at most this many rows.
    pub rows_per_submit: Option<u32>,
    /// Which of its worker's lanes its uploads wait in.
    pub priority: super::UploadPriority,
}

impl ResourceShared {
    pub fn new(
        engine: Arc<EngineShared>,
        kind: Kind,
        options: super::StreamOptions,
        staging_capacity: u64,
        ring: Vec<Pooled<BufferBackend>>,
        worker: usize,
    ) -> Self {
        Self {
            engine,
            kind,
            policy: options.policy,
            staging_capacity,
            ring: Mutex::new(ring),
            ring_freed: Condvar::new(),
            pending: Mutex::new(Pending::default()),
            ended: Condvar::new(),
            released: AtomicBool::new(false),
            worker,
            rows_per_submit: options.rows_per_submit,
            priority: options.priority,
        }
    }

    /// The worker whose queue this resource's uploads go to.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Whether its uploads are background ones (budgeted per frame).
    pub fn is_background(&self) -> bool {
        self.priority == super::UploadPriority::Background
    }

    /// This resource's numbers now.
    pub fn stats(&self) -> ResourceStats {
        let p = self.pending.lock();
        ResourceStats {
            policy: self.policy,
            in_flight: p.count as u64,
            queued: p.queued.len() as u64,
            staging_capacity: self.staging_capacity,
            ring_free: self.ring.lock().len() as u64,
            released: self.released.load(Ordering::Acquire),
        }
    }

    /// Marks an upload ended for this resource.
    pub fn finish(&self, upload: &Arc<UploadShared>) {
        let mut p = self.pending.lock();
        p.count -= 1;
        p.queued.retain(|_, u| !Arc::ptr_eq(u, upload));
        drop(p);
        self.ended.notify_all();
    }

    /// Marks a queued upload started: it can no longer be superseded.
    pub fn started(&self, upload: &Arc<UploadShared>) {
        self.pending
            .lock()
            .queued
            .retain(|_, u| !Arc::ptr_eq(u, upload));
    }

    /// Takes a free ring slot, waiting for one if all are in flight.
    pub fn ring_take(&self) -> Option<Pooled<BufferBackend>> {
        let mut ring = self.ring.lock();
        loop {
            if let Some(slot) = ring.pop() {
                return Some(slot);
            }
            if self.engine.shut_down.load(Ordering::Acquire)
                && self.engine.outstanding.load(Ordering::Acquire) == 0
            {
                return None;
            }
            self.ring_freed
                .wait_for(&mut ring, Duration::from_millis(10));
        }
    }

    /// Puts a mapped slot back; a released resource's goes to the pool.
    pub fn ring_return(&self, slot: Pooled<BufferBackend>) {
        if self.released.load(Ordering::Acquire) {
            drop(slot);
            return;
        }
        self.ring.lock().push(slot);
        self.ring_freed.notify_one();
    }

    /// Admits one upload to `key`, superseding a queued one to the same
    /// region (returned, already out of the count), or waiting (if `block`)
    /// while the resource is at its limit.
    fn admit(
        &self,
        key: RegionKey,
        upload: &Arc<UploadShared>,
        block: bool,
    ) -> Result<Option<Arc<UploadShared>>, UploadError> {
        let mut p = self.pending.lock();
        let mut superseded = None;
        if let Some(old) = p.queued.get(&key).cloned() {
            if old.advance(phase::QUEUED, phase::ENDED) {
                p.queued.remove(&key);
                p.count -= 1;
                superseded = Some(old);
            }
        }
        while p.count >= self.policy.limit() {
            if !block {
                return Err(UploadError::WouldBlock(
                    "the resource has as many uploads in flight as staging buffers",
                ));
            }
            self.check_open()?;
            self.ended.wait_for(&mut p, Duration::from_millis(10));
        }
        p.count += 1;
        p.queued.insert(key, Arc::clone(upload));
        Ok(superseded)
    }

    fn check_open(&self) -> Result<(), UploadError> {
        if self.released.load(Ordering::Acquire) {
            return Err(UploadError::Released);
        }
        if self.engine.shut_down.load(Ordering::Acquire) {
            return Err(UploadError::ShutDown);
        }
        Ok(())
    }

    /// Engine-wide admission of `bytes` of staging.
    fn admit_bytes(&self, bytes: u64, block: bool) -> Result<(), UploadError> {
        let engine = &self.engine;
        let mut a = engine.admission.lock();
        let background = self.is_background();
        while a.full(bytes, background, engine.max_in_flight_bytes) {
            if !block {
                return Err(UploadError::WouldBlock(
                    "the engine is at its in-flight byte bound",
                ));
            }
            self.check_open()?;
            engine.admitted.wait_for(&mut a, Duration::from_millis(10));
        }
        a.add(bytes, background);
        Ok(())
    }

    /// Waits until every upload of this resource has ended.
    fn wait_idle(&self) {
        let mut p = self.pending.lock();
        while p.count > 0 {
            self.ended.wait_for(&mut p, Duration::from_millis(10));
        }
    }
}

/// The engine-facing side of a streamed resource, shared by the texture and
/// buffer handles.
pub(crate) struct Streamed {
    pub shared: Arc<ResourceShared>,
}

impl Streamed {
    /// Checks, admits and queues one upload: engine-wide bytes first, then
    /// the resource's own bound (where a newer upload supersedes a queued one
    /// to the same region).
    pub fn submit(
        &self,
        key: RegionKey,
        target: Target,
        source: Source,
        block: bool,
    ) -> Result<Upload, UploadError> {
        let shared = &self.shared;
        shared.check_open()?;
        let data_bytes = target.data_bytes();
        let staging_bytes = target.staging_bytes();
        if shared.policy != StagingPolicy::Synchronous && staging_bytes > shared.staging_capacity {
            return Err(UploadError::StagingTooSmall {
                needed: staging_bytes,
                capacity: shared.staging_capacity,
            });
        }
        let upload = UploadShared::new(Arc::clone(&shared.engine.panics));
        upload.admitted.store(staging_bytes, Ordering::Release);
        shared.admit_bytes(staging_bytes, block)?;
        let superseded = match shared.admit(key, &upload, block) {
            Ok(old) => old,
            Err(e) => {
                shared
                    .engine
                    .unadmit_refused(staging_bytes, shared.is_background());
                return Err(e);
            }
        };
        if let Some(old) = superseded {
            shared.engine.end_superseded(shared, &old);
        }
        shared
            .engine
            .counters
            .queued
            .fetch_add(1, Ordering::Relaxed);
        let handle = self.handle(&upload);
        let job = Job {
            resource: Arc::clone(shared),
            upload,
            target,
            source,
            admitted: staging_bytes,
            data_bytes,
        };
        if shared.policy == StagingPolicy::Synchronous {
            super::worker::run_synchronous(job);
            return Ok(handle);
        }
        let sent = match shared
            .engine
            .jobs
            .read()
            .as_ref()
            .and_then(|queues| queues.get(shared.worker))
            .map(|lanes| &lanes[shared.priority as usize])
        {
            Some(tx) => tx.send(job).map_err(|e| e.into_inner()),
            None => Err(job),
        };
        if let Err(job) = sent {
            // Shut down between the check and the send: end it here.
            if job.upload.advance(phase::QUEUED, phase::ENDED) {
                shared
                    .engine
                    .counters
                    .queued
                    .fetch_sub(1, Ordering::Relaxed);
                shared.engine.end_early(
                    shared,
                    &job.upload,
                    staging_bytes,
                    UploadStatus::Cancelled,
                );
            }
            return Err(UploadError::ShutDown);
        }
        Ok(handle)
    }

    fn handle(&self, upload: &Arc<UploadShared>) -> Upload {
        let weak: Weak<ResourceShared> = Arc::downgrade(&self.shared);
        let weak_upload = Arc::downgrade(upload);
        let on_cancel = move || {
            if let (Some(resource), Some(upload)) = (weak.upgrade(), weak_upload.upgrade()) {
                resource
                    .engine
                    .counters
                    .queued
                    .fetch_sub(1, Ordering::Relaxed);
                resource
                    .engine
                    .counters
                    .cancelled
                    .fetch_add(1, Ordering::Relaxed);
                let bytes = upload.admitted.load(Ordering::Acquire);
                resource.engine.release_admission(&resource, &upload, bytes);
            }
        };
        Upload {
            shared: Arc::clone(upload),
            on_cancel: Arc::new(on_cancel),
        }
    }

    /// Cancels what is queued, waits for what is in flight, gives back the
    /// staging buffers. Later uploads get [`UploadError::Released`].
    pub fn release(&self) {
        let shared = &self.shared;
        if shared.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let queued: Vec<Arc<UploadShared>> =
            shared.pending.lock().queued.values().cloned().collect();
        for upload in queued {
            if upload.advance(phase::QUEUED, phase::ENDED) {
                shared
                    .engine
                    .counters
                    .queued
                    .fetch_sub(1, Ordering::Relaxed);
                let bytes = upload.admitted.load(Ordering::Acquire);
                shared
                    .engine
                    .end_early(shared, &upload, bytes, UploadStatus::Cancelled);
            }
        }
        // Released from one of the engine's own threads (a callback): the
        // uploads still in flight end on the poller, so the poller must not
        // wait for them, and no engine thread may wait for references an
        // engine thread holds. They end later; their staging then goes to
        // the pool, and the resource is freed with its last reference.
        let on = EngineThread::current();
        if on != EngineThread::Poller {
            shared.wait_idle();
        }
        shared.ring.lock().clear();
        if on != EngineThread::None {
            return;
        }
        // A worker or the poller may still hold the resource for an instant
        // after its last upload ended (a finished job, a completion being
        // dropped). Wait for them, so that dropping this handle frees the
        // texture or buffer at once and the counts say so.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(shared) > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// A texture whose contents stream in through the engine. The texture keeps
/// its previous contents until an upload has landed completely.
///
/// Dropping it (or [`release`](Self::release)) cancels queued uploads, waits
/// for those in flight, and gives back its staging buffers.
pub struct StreamedTexture {
    pub(crate) inner: Streamed,
}

impl StreamedTexture {
    /// The texture, for binding and sampling.
    pub fn texture(&self) -> &wgpu::Texture {
        match &self.inner.shared.kind {
            Kind::Texture { texture, .. } => texture,
            Kind::Buffer { .. } => unreachable!("a streamed texture holds a texture"),
        }
    }

    fn info(&self) -> TextureInfo {
        match &self.inner.shared.kind {
            Kind::Texture { info, .. } => *info,
            Kind::Buffer { .. } => unreachable!("a streamed texture holds a texture"),
        }
    }

    /// Checks a texture upload; shared by every upload method.
    pub fn layout(
        &self,
        region: TextureRegion,
        source: SourceLayout,
        len: u64,
    ) -> Result<CopyLayout, UploadError> {
        region::check_texture(&self.info(), region, source, len)
    }

    /// Uploads `data` into `region`, waiting while this resource or the
    /// engine is at its in-flight bound. Returns once the upload is queued.
    pub fn upload(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> Result<Upload, UploadError> {
        self.send(data.into(), region, source, true)
    }

    /// Like [`upload`](Self::upload), but fails with
    /// [`UploadError::WouldBlock`] instead of waiting.
    pub fn try_upload(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> Result<Upload, UploadError> {
        self.send(data.into(), region, source, false)
    }

    /// The async form of [`upload`](Self::upload): yields, instead of
    /// blocking the thread, while this resource or the engine is full.
    pub fn upload_async(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> super::Admit<impl FnMut() -> Result<Upload, UploadError> + Unpin + '_> {
        let data = data.into();
        super::Admit::new(Arc::clone(&self.inner.shared.engine), move || {
            self.send(data.clone(), region, source, false)
        })
    }

    /// Uploads a whole frame: tightly packed data for all of mip 0, layer 0.
    pub fn upload_frame(&self, data: impl Into<Bytes>) -> Result<Upload, UploadError> {
        self.upload(
            data,
            TextureRegion::frame(self.texture().size()),
            SourceLayout::default(),
        )
    }

    fn send(
        &self,
        data: Bytes,
        region: TextureRegion,
        source: SourceLayout,
        block: bool,
    ) -> Result<Upload, UploadError> {
        let layout = self.layout(region, source, data.len() as u64)?;
        self.inner.submit(
            RegionKey::Texture(layout.region),
            Target::Texture(layout),
            Source::Bytes(data),
            block,
        )
    }

    /// Fills `region` in place: `fill` runs on a worker thread and writes the
    /// texels straight into mapped staging memory, one row of blocks every
    /// `layout.staging_pitch` bytes, so the data is never copied on the CPU.
    pub fn upload_with(
        &self,
        region: TextureRegion,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send + 'static,
        block: bool,
    ) -> Result<Upload, UploadError> {
        let layout = region::plan_texture(&self.info(), region, SourceLayout::default())?;
        if self.inner.shared.policy == StagingPolicy::Synchronous {
            return Err(UploadError::InvalidConfig(
                "fill in place needs a staging policy other than Synchronous".into(),
            ));
        }
        self.inner.submit(
            RegionKey::Texture(layout.region),
            Target::Texture(layout),
            Source::Fill(Box::new(fill)),
            block,
        )
    }

    /// Cancels queued uploads, waits for those in flight, gives back the
    /// staging buffers. Uploads after this fail with [`UploadError::Released`].
    pub fn release(&self) {
        self.inner.release();
    }

    /// This texture's uploads and staging now.
    pub fn stats(&self) -> ResourceStats {
        self.inner.shared.stats()
    }
}

impl Drop for StreamedTexture {
    fn drop(&mut self) {
        self.inner.release();
    }
}

impl std::fmt::Debug for StreamedTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedTexture")
            .field("policy", &self.inner.shared.policy)
            .finish_non_exhaustive()
    }
}

/// A buffer whose contents stream in through the engine.
pub struct StreamedBuffer {
    pub(crate) inner: Streamed,
}

impl StreamedBuffer {
    /// The buffer, for binding.
    pub fn buffer(&self) -> &wgpu::Buffer {
        match &self.inner.shared.kind {
            Kind::Buffer { buffer } => buffer,
            Kind::Texture { .. } => unreachable!("a streamed buffer holds a buffer"),
        }
    }

    /// Uploads `data` at byte `offset`, waiting while at the in-flight bound.
    pub fn upload(&self, data: impl Into<Bytes>, offset: u64) -> Result<Upload, UploadError> {
        self.send(data.into(), offset, true)
    }

    /// Like [`upload`](Self::upload), but fails with
    /// [`UploadError::WouldBlock`] instead of waiting.
    pub fn try_upload(&self, data: impl Into<Bytes>, offset: u64) -> Result<Upload, UploadError> {
        self.send(data.into(), offset, false)
    }

    fn send(&self, data: Bytes, offset: u64, block: bool) -> Result<Upload, UploadError> {
        let len = data.len() as u64;
        region::check_buffer(self.buffer().size(), offset, len)?;
        self.inner.submit(
            RegionKey::Buffer { offset, len },
            Target::Buffer { offset, len },
            Source::Bytes(data),
            block,
        )
    }

    /// Cancels queued uploads, waits for those in flight, gives back the
    /// staging buffers. Uploads after this fail with [`UploadError::Released`].
    pub fn release(&self) {
        self.inner.release();
    }

    /// This buffer's uploads and staging now.
    pub fn stats(&self) -> ResourceStats {
        self.inner.shared.stats()
    }
}

impl Drop for StreamedBuffer {
    fn drop(&mut self) {
        self.inner.release();
    }
}

impl std::fmt::Debug for StreamedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedBuffer")
            .field("policy", &self.inner.shared.policy)
            .finish_non_exhaustive()
    }
}
