//! Streamed resources: a texture or buffer with its staging policy, its ring
//! of staging buffers, and the books of its uploads in flight.

use super::admission::IfFull;
use super::core::{Core, Counted, EngineThread, Landing, Turns};
use super::error::UploadError;
use super::future::{Upload, UploadShared, UploadStatus, phase};
use super::region::TextureRegion;
use super::stats::Counters;
use super::transfer::{CopyPlan, TransferBackend};
use super::{StreamOptions, UploadPriority};
use crate::sync::{AtomicBool, Condvar, Mutex};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

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
    /// Ring slots free now (staged, or yet to be staged).
    pub ring_free: u64,
    /// Whether it was released.
    pub released: bool,
}

/// How a resource's uploads are staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StagingPolicy {
    /// The device's own write on the caller's thread (`queue.write_texture`
    /// / `write_buffer`; a synchronous copy on CUDA): for small data, and
    /// for comparison.
    Synchronous,
    /// A ring of this many staging buffers, cycled: while the device copies
    /// from one, workers fill the next. At least 1; 2 or 3 for streaming.
    Ring(usize),
    /// One staging buffer per upload, from the engine's staging pool, given
    /// back when the device is done with it. At most this many at once.
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

/// Writes the data straight into staging memory, laid out as the plan says.
pub(crate) type Fill = Box<dyn FnOnce(wgpu::WriteOnly<'_, [u8]>) + Send>;

/// Where an upload's data comes from.
pub(crate) enum Source {
    /// Shared immutable bytes; the caller cannot change them under us.
    Bytes(Bytes),
    /// A closure that writes the data in place on a worker.
    Fill(Fill),
    /// Bytes the device copies from where they are: no staging.
    InPlace(super::InPlace),
}

/// One admitted upload.
pub(crate) struct Job<T: TransferBackend> {
    pub resource: Arc<Resource<T>>,
    pub upload: Arc<UploadShared>,
    pub plan: CopyPlan,
    pub source: Source,
}

/// Which uploads can replace one another: those to the same region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RegionKey {
    Texture(TextureRegion),
    Bytes { offset: u64, len: u64 },
}

impl RegionKey {
    pub fn of(plan: &CopyPlan) -> Self {
        match plan {
            CopyPlan::Texture(l) => Self::Texture(l.region),
            CopyPlan::Bytes { offset, len } => Self::Bytes {
                offset: *offset,
                len: *len,
            },
        }
    }
}

/// A resource's uploads that are admitted and not ended. Kept apart from
/// the resource so that an ending upload can let go of the resource before
/// it is counted out: once [`Books::wait_idle`] returns, no engine thread
/// holds the resource.
#[derive(Default)]
pub(crate) struct Books {
    pending: Mutex<Pending>,
    ended: Condvar,
    released: AtomicBool,
}

#[derive(Default)]
struct Pending {
    /// Admitted and not ended; at most the policy's limit.
    count: usize,
    /// Those not yet started, by region, so a newer one can supersede.
    queued: HashMap<RegionKey, Arc<UploadShared>>,
}

/// What [`Books::admit`] did.
pub(crate) struct Admitted {
    /// A queued upload to the same region it replaced: ended (its phase),
    /// its count handed to the new one; the caller finishes it.
    pub superseded: Option<Arc<UploadShared>>,
    pub result: Result<(), UploadError>,
}

impl Books {
    /// Admits one upload to `key` within `limit`, superseding a queued one
    /// to the same region, waiting (or not) while the resource is full.
    pub(super) fn admit(
        &self,
        key: RegionKey,
        upload: &Arc<UploadShared>,
        limit: usize,
        if_full: IfFull,
        open: impl Fn() -> Result<(), UploadError>,
    ) -> Admitted {
        let mut p = self.pending.lock();
        // Asked under the lock, before anything changes: a release that
        // set its flag before this lock was taken is seen here, and one
        // after finds this upload counted and waits for it (an upload let
        // in after `release` returned was found by the model
        // `release_waits_for_every_upload_it_let_in`). Asked before the
        // supersede, so a refused upload never ends a queued one that only
        // a worker would have counted out, leaving a release waiting
        // (`a_submit_refused_by_a_release_leaves_the_release_a_way_to_wake`).
        if let Err(e) = open() {
            return Admitted {
                superseded: None,
                result: Err(e),
            };
        }
        let mut superseded = None;
        if let Some(old) = p.queued.get(&key).cloned()
            && old.advance(phase::QUEUED, phase::ENDED)
        {
            p.queued.remove(&key);
            p.count -= 1;
            superseded = Some(old);
        }
        // A supersede made room, so an upload that superseded never waits
        // below, and never fails after ending the one it replaced.
        let result = loop {
            if p.count < limit {
                p.count += 1;
                p.queued.insert(key, Arc::clone(upload));
                break Ok(());
            }
            if if_full == IfFull::Refuse {
                break Err(UploadError::WouldBlock(
                    "the resource has as many uploads in flight as staging buffers",
                ));
            }
            self.ended.wait(&mut p);
            if let Err(e) = open() {
                break Err(e);
            }
        };
        Admitted { superseded, result }
    }

    /// Marks an upload started: it can no longer be superseded.
    pub fn started(&self, upload: &Arc<UploadShared>) {
        self.pending
            .lock()
            .queued
            .retain(|_, u| !Arc::ptr_eq(u, upload));
    }

    /// Counts an upload out.
    pub fn finish(&self, upload: &Arc<UploadShared>) {
        let mut p = self.pending.lock();
        p.count -= 1;
        p.queued.retain(|_, u| !Arc::ptr_eq(u, upload));
        drop(p);
        self.ended.notify_all();
    }

    /// Waits until every upload counted here has ended.
    pub(super) fn wait_idle(&self) {
        let mut p = self.pending.lock();
        while p.count > 0 {
            self.ended.wait(&mut p);
        }
    }

    pub(super) fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Marks the resource released and wakes whoever waits for room in it,
    /// to look again; false if it already was.
    pub(super) fn release(&self) -> bool {
        if self.released.swap(true, Ordering::AcqRel) {
            return false;
        }
        // Taking the lock orders the flag before any admission that
        // follows: one that held the lock first is counted, and
        // `wait_idle` waits for it; one after sees the flag.
        drop(self.pending.lock());
        self.ended.notify_all();
        true
    }
}

/// A ring's staging buffers: those free, and how many it owns (free, in
/// flight, or yet to be staged: a slot is staged on first use, and a slot
/// the device failed is staged again).
struct Ring<S> {
    free: Vec<S>,
    owned: usize,
}

pub(crate) struct Resource<T: TransferBackend> {
    pub core: Arc<Core<T>>,
    pub target: T::Target,
    pub policy: StagingPolicy,
    pub priority: UploadPriority,
    /// Bytes each staging buffer of this resource holds.
    pub staging_capacity: u64,
    ring: Mutex<Ring<T::Staging>>,
    ring_freed: Condvar,
    pub books: Arc<Books>,
    /// The order its uploads are submitted in.
    pub turns: Turns,
    /// A worker is filling one of its uploads; changed under the
    /// schedule's lock.
    pub busy: AtomicBool,
}

impl<T: TransferBackend> Resource<T> {
    pub fn new(
        core: Arc<Core<T>>,
        target: T::Target,
        options: StreamOptions,
        staging_capacity: u64,
        ring: Vec<T::Staging>,
    ) -> Self {
        let owned = ring.len();
        Self {
            core,
            target,
            policy: options.policy,
            priority: options.priority,
            staging_capacity,
            ring: Mutex::new(Ring { free: ring, owned }),
            ring_freed: Condvar::new(),
            books: Arc::default(),
            turns: Turns::default(),
            busy: AtomicBool::new(false),
        }
    }

    /// Whether its uploads are background ones (budgeted per frame).
    pub fn is_background(&self) -> bool {
        self.priority == UploadPriority::Background
    }

    /// This resource's numbers now.
    pub fn stats(&self) -> ResourceStats {
        let (in_flight, queued) = {
            let p = self.books.pending.lock();
            (p.count as u64, p.queued.len() as u64)
        };
        let ring_free = match self.policy {
            StagingPolicy::Ring(n) => {
                let ring = self.ring.lock();
                (ring.free.len() + n.saturating_sub(ring.owned)) as u64
            }
            _ => 0,
        };
        ResourceStats {
            policy: self.policy,
            in_flight,
            queued,
            staging_capacity: self.staging_capacity,
            ring_free,
            released: self.books.is_released(),
        }
    }

    fn check_open(&self) -> Result<(), UploadError> {
        if self.books.is_released() {
            return Err(UploadError::Released);
        }
        if self.core.is_shut_down() {
            return Err(UploadError::ShutDown);
        }
        Ok(())
    }

    /// Staging for one upload: a ring slot (staged on first use), or a
    /// buffer of the pool.
    pub fn take_staging(&self, bytes: u64) -> Result<T::Staging, UploadError> {
        let StagingPolicy::Ring(n) = self.policy else {
            return self.core.backend.stage(bytes);
        };
        let mut ring = self.ring.lock();
        loop {
            if let Some(slot) = ring.free.pop() {
                return Ok(slot);
            }
            if ring.owned < n {
                ring.owned += 1;
                drop(ring);
                let staged = self.core.backend.stage(self.staging_capacity);
                if staged.is_err() {
                    self.lose_slot();
                }
                return staged;
            }
            // Every slot is in flight; one comes back when its copy lands
            // (the resource's count admits no more uploads than slots, so
            // this is rare and short).
            self.ring_freed.wait(&mut ring);
        }
    }

    /// Staging the device is done with: a ring slot goes back to the ring
    /// (or, released, to the pool); a pool buffer to the pool.
    pub fn give_back(&self, staging: T::Staging) {
        if matches!(self.policy, StagingPolicy::Ring(_)) && !self.books.is_released() {
            self.ring.lock().free.push(staging);
            self.ring_freed.notify_one();
            return;
        }
        if matches!(self.policy, StagingPolicy::Ring(_)) {
            self.lose_slot();
        }
        drop(staging);
    }

    /// Staging that cannot be used again (its copy or its mapping failed):
    /// dropped; a ring stages a new slot in its place on next use.
    pub fn lose(&self, staging: T::Staging) {
        drop(staging);
        if matches!(self.policy, StagingPolicy::Ring(_)) {
            self.lose_slot();
        }
    }

    fn lose_slot(&self) {
        let mut ring = self.ring.lock();
        ring.owned = ring.owned.saturating_sub(1);
        drop(ring);
        self.ring_freed.notify_one();
    }
}

/// The engine-facing side of a streamed resource, shared by its handles.
pub(crate) struct Streamed<T: TransferBackend> {
    pub resource: Arc<Resource<T>>,
}

impl<T: TransferBackend> Streamed<T> {
    /// Checks, admits and queues one upload: engine-wide bytes first, then
    /// the resource's own bound (where a newer upload supersedes a queued
    /// one to the same region).
    pub fn submit(
        &self,
        plan: CopyPlan,
        source: Source,
        if_full: IfFull,
    ) -> Result<Upload, UploadError> {
        let resource = &self.resource;
        let core = &resource.core;
        resource.check_open()?;
        let staging_bytes = plan.staging_bytes();
        if resource.policy != StagingPolicy::Synchronous
            && staging_bytes > resource.staging_capacity
        {
            return Err(UploadError::StagingTooSmall {
                needed: staging_bytes,
                capacity: resource.staging_capacity,
            });
        }
        let upload = UploadShared::new(Arc::clone(&core.panics));
        upload.admitted.store(staging_bytes, Ordering::Release);
        let background = resource.is_background();
        core.gate
            .enter(staging_bytes, background, if_full, || resource.check_open())?;
        let admitted = resource.books.admit(
            RegionKey::of(&plan),
            &upload,
            resource.policy.limit(),
            if_full,
            || resource.check_open(),
        );
        if let Some(old) = admitted.superseded {
            core.finish_unstarted(
                Arc::clone(resource),
                &old,
                UploadStatus::Superseded,
                Counted::HandedOn,
            );
        }
        if let Err(e) = admitted.result {
            core.gate.leave(staging_bytes, background);
            return Err(e);
        }
        Counters::bump(&core.counters.queued);
        let handle = Core::handle(resource, &upload);
        let job = Job {
            resource: Arc::clone(resource),
            upload,
            plan,
            source,
        };
        if resource.policy == StagingPolicy::Synchronous {
            direct(core, job);
            return Ok(handle);
        }
        let pushed = core.schedule.lock().push(resource.priority, job);
        match pushed {
            Ok(()) => {
                core.work.notify_one();
            }
            Err(job) => {
                // Shut down between the check and the push: end it here.
                core.cancel_removed(job);
                return Err(UploadError::ShutDown);
            }
        }
        Ok(handle)
    }

    /// Cancels what is queued, waits for what is in flight, gives back the
    /// staging buffers. Later uploads get [`UploadError::Released`].
    pub fn release(&self) {
        let resource = &self.resource;
        let core = &resource.core;
        if !resource.books.release() {
            return;
        }
        // Whoever waits for room in the engine looks again.
        core.gate.wake();
        let queued = core
            .schedule
            .lock()
            .remove(|j| Arc::ptr_eq(&j.resource, resource));
        for job in queued {
            core.cancel_removed(job);
        }
        // Released on the completion thread (in a callback), the uploads
        // still in flight end on this very thread: it must not wait for
        // them. They end later; their staging then goes to the pool, and the
        // resource is freed with its last reference.
        if EngineThread::current() != EngineThread::Completer {
            resource.books.wait_idle();
        }
        resource.ring.lock().free.clear();
    }
}

/// An upload of the `Synchronous` policy, on the caller's thread: the
/// device's own write, then the completion thread (or, once it is shut
/// down, this thread) waits for it.
fn direct<T: TransferBackend>(core: &Core<T>, job: Job<T>) {
    if !job.upload.advance(phase::QUEUED, phase::STARTED) {
        return;
    }
    job.resource.books.started(&job.upload);
    Counters::drop_one(&core.counters.queued);
    Counters::bump(&core.counters.active);
    job.upload.stamp(|t| t.copy_started = Some(Instant::now()));
    let submitted = match &job.source {
        Source::Bytes(data) => core
            .backend
            .submit_direct(&job.resource.target, &job.plan, data),
        Source::Fill(_) => Err(UploadError::InvalidConfig(
            "fill in place needs a staging policy other than Synchronous".into(),
        )),
        Source::InPlace(source) => {
            core.backend
                .submit_in_place(source, &job.resource.target, &job.plan)
        }
    };
    job.upload.stamp(|t| t.copy_ended = Some(Instant::now()));
    match submitted {
        Ok(in_flight) => {
            job.upload.advance(phase::STARTED, phase::SUBMITTED);
            job.upload.stamp(|t| t.submitted = Some(Instant::now()));
            core.land_later(Landing {
                job,
                staging: None,
                in_flight,
                worker: None,
            });
        }
        Err(e) => {
            Counters::drop_one(&core.counters.active);
            let Job {
                resource, upload, ..
            } = job;
            core.finish(resource, &upload, UploadStatus::Failed(e), Counted::Yes);
        }
    }
}
