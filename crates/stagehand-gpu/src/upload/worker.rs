//! Transfer workers: take a job, fill a staging buffer, submit the GPU copy,
//! and arm the callback that ends the upload when the GPU is done.

use super::UploadPriority;
use super::engine::{Completion, EngineShared, Staging};
use super::error::UploadError;
use super::future::{UploadShared, UploadStatus, phase};
use super::region::CopyLayout;
use super::resource::{Kind, ResourceShared, StagingPolicy};
use super::stats::Counters;
use crate::backend::wgpu::{BufferBackend, scoped_call};
use crate::pool::Pooled;
use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Usage of every staging buffer.
pub(crate) const STAGING_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_WRITE.union(wgpu::BufferUsages::COPY_SRC);

/// Writes texels straight into mapped staging memory.
pub(crate) type Fill = Box<dyn FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send>;

/// Where the data comes from.
pub(crate) enum Source {
    /// Shared immutable bytes; the caller cannot change them under us.
    Bytes(Bytes),
    /// A closure that writes the data in place on the worker.
    Fill(Fill),
}

/// Where the data goes.
pub(crate) enum Target {
    Texture(CopyLayout),
    Buffer { offset: u64, len: u64 },
}

impl Target {
    pub fn data_bytes(&self) -> u64 {
        match self {
            Self::Texture(l) => l.data_bytes(),
            Self::Buffer { len, .. } => *len,
        }
    }

    pub fn staging_bytes(&self) -> u64 {
        match self {
            Self::Texture(l) => l.staging_bytes(),
            Self::Buffer { len, .. } => *len,
        }
    }
}

/// One admitted upload.
pub(crate) struct Job {
    pub resource: Arc<ResourceShared>,
    pub upload: Arc<UploadShared>,
    pub target: Target,
    pub source: Source,
    /// Staging bytes held of the engine's bound.
    pub admitted: u64,
    /// Bytes of data the upload moves.
    pub data_bytes: u64,
}

/// A worker's queues, one per [`UploadPriority`](super::UploadPriority).
pub(crate) type Lanes = [Receiver<Job>; 3];

/// A worker's lanes: senders for the engine, receivers for the worker.
pub(crate) fn lanes() -> ([Sender<Job>; 3], Lanes) {
    let [(h, hr), (n, nr), (b, br)] = [(); 3].map(|()| crossbeam_channel::unbounded());
    ([h, n, b], [hr, nr, br])
}

/// How often a worker holding background jobs over budget looks for ones
/// cancelled meanwhile (so their resources can be released).
const PARKED_RECHECK: Duration = Duration::from_millis(5);

/// A worker's lanes and the jobs it has taken off them, in order.
pub(crate) struct Queues {
    lanes: Lanes,
    taken: [VecDeque<Job>; 3],
    tick: Receiver<()>,
}

impl Queues {
    pub fn new(lanes: Lanes, tick: Receiver<()>) -> Self {
        Self {
            lanes,
            taken: Default::default(),
            tick,
        }
    }

    /// Moves every waiting job off the lanes, keeping order, and drops those
    /// already ended (cancelled, superseded, released), so that nothing a
    /// busier lane holds up keeps a released resource alive. True once the
    /// lanes are closed (they close together, at shutdown).
    fn gather(&mut self) -> bool {
        let mut closed = false;
        for (lane, taken) in self.lanes.iter().zip(&mut self.taken) {
            loop {
                match lane.try_recv() {
                    Ok(job) => taken.push_back(job),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
            taken.retain(|job| job.upload.phase.load(Ordering::Acquire) != phase::ENDED);
        }
        closed
    }

    /// The next job: the oldest of the highest priority. Background jobs
    /// start only while the frame's budget is open; over budget they wait
    /// here. `None` once the lanes are closed and everything is drained
    /// (what is left at shutdown is handed out, budget or not, to be
    /// cancelled).
    fn next(&mut self, engine: &EngineShared) -> Option<Job> {
        loop {
            let closed = self.gather();
            let lanes = if closed || engine.background_open() {
                3
            } else {
                2
            };
            if let Some(job) = self.taken[..lanes].iter_mut().find_map(VecDeque::pop_front) {
                return Some(job);
            }
            if closed {
                return None;
            }
            let idle = if self.taken[2].is_empty() {
                Duration::from_secs(1)
            } else {
                PARKED_RECHECK
            };
            let [high, normal, background] = &self.lanes;
            // Wake for a job on any lane, a new frame, or (holding background
            // jobs) to look for cancelled ones; `gather` takes it from there.
            crossbeam_channel::select_biased! {
                recv(high) -> job => self.taken[0].extend(job),
                recv(normal) -> job => self.taken[1].extend(job),
                recv(background) -> job => self.taken[2].extend(job),
                recv(self.tick) -> _ => {}
                default(idle) => {}
            }
        }
    }
}

/// A worker's loop: runs jobs until its lanes are closed and drained.
pub(crate) fn run(engine: Arc<EngineShared>, mut queues: Queues) {
    struct Alive<'a>(&'a EngineShared);
    impl Drop for Alive<'_> {
        // Runs even if a job panics in our own code, so shutdown never waits
        // for a worker that is gone.
        fn drop(&mut self) {
            self.0.workers_alive.fetch_sub(1, Ordering::AcqRel);
        }
    }
    let _alive = Alive(&engine);
    while let Some(job) = queues.next(&engine) {
        process(job);
    }
}

fn process(mut job: Job) {
    let engine = Arc::clone(&job.resource.engine);
    if engine.shut_down.load(Ordering::Acquire) {
        if job.upload.advance(phase::QUEUED, phase::ENDED) {
            Counters::drop_one(&engine.counters.queued);
            engine.end_early(
                &job.resource,
                &job.upload,
                job.admitted,
                UploadStatus::Cancelled,
            );
        }
        return;
    }
    if !job.upload.advance(phase::QUEUED, phase::STARTED) {
        return; // cancelled or superseded while queued; already ended
    }
    job.resource.started(&job.upload);
    if job.resource.priority == UploadPriority::Background {
        engine
            .background_spent
            .fetch_add(job.data_bytes, Ordering::AcqRel);
    }
    Counters::drop_one(&engine.counters.queued);
    Counters::bump(&engine.counters.active);
    job.upload.stamp(|t| t.copy_started = Some(Instant::now()));
    let source = std::mem::replace(&mut job.source, Source::Bytes(Bytes::new()));
    if let Err(failure) = stage_and_submit(&engine, &job, source) {
        let (status, staging) = *failure;
        Counters::drop_one(&engine.counters.active);
        give_back(&job.resource, staging);
        engine.end_early(&job.resource, &job.upload, job.admitted, status);
    }
}

/// A staging buffer that did not reach the GPU, going back where it came from.
fn give_back(resource: &ResourceShared, staging: Option<Staging>) {
    match staging {
        Some(Staging::Ring(slot)) => resource.ring_return(slot),
        Some(Staging::Once(buffer)) => drop(buffer),
        Some(Staging::None) | None => {}
    }
}

/// How an upload that never reached the GPU ends, and its staging buffer.
/// Boxed: failures are rare and the pair is large.
type Failure = Box<(UploadStatus, Option<Staging>)>;

fn failed(e: UploadError) -> UploadStatus {
    UploadStatus::Failed(e)
}

fn stage_and_submit(engine: &Arc<EngineShared>, job: &Job, source: Source) -> Result<(), Failure> {
    let resource = &job.resource;
    let bytes = job.target.staging_bytes();
    let staging = match resource.policy {
        StagingPolicy::Ring(_) => Staging::Ring(
            resource
                .ring_take()
                .ok_or((UploadStatus::Cancelled, None))?,
        ),
        _ => Staging::Once(take_mapped(engine, bytes).map_err(|e| Box::new((failed(e), None)))?),
    };
    let buffer = match &staging {
        Staging::Ring(b) | Staging::Once(b) => (***b).clone(),
        Staging::None => unreachable!("workers always stage"),
    };
    let wrote = match (source, &job.target) {
        (Source::Bytes(data), target) => write_bytes(&buffer, target, &data),
        (Source::Fill(fill), Target::Texture(layout)) => run_fill(&buffer, layout, fill),
        (Source::Fill(_), Target::Buffer { .. }) => {
            Err(UploadError::Device("fill in place is for textures".into()))
        }
    };
    if let Err(e) = wrote {
        return Err(Box::new((failed(e), Some(staging))));
    }
    finish_and_submit(engine, job, buffer, staging)
}

/// Runs the caller's fill closure on the mapped staging memory. A panic in
/// it fails this upload and leaves the worker running.
pub(crate) fn run_fill(
    buffer: &wgpu::Buffer,
    layout: &CopyLayout,
    fill: Fill,
) -> Result<(), UploadError> {
    let mut view = buffer
        .slice(..layout.staging_bytes())
        .get_mapped_range_mut()
        .map_err(|e| UploadError::Device(e.to_string()))?;
    let target = view.slice(..);
    catch_unwind(AssertUnwindSafe(|| fill(target, layout)))
        .map_err(|_| UploadError::Device("the fill closure panicked".into()))
}

fn finish_and_submit(
    engine: &Arc<EngineShared>,
    job: &Job,
    buffer: wgpu::Buffer,
    staging: Staging,
) -> Result<(), Failure> {
    job.upload.stamp(|t| t.copy_ended = Some(Instant::now()));
    if job.upload.cancel_requested.load(Ordering::Acquire) {
        return Err(Box::new((UploadStatus::Cancelled, Some(staging))));
    }
    let advanced = job.upload.advance(phase::STARTED, phase::SUBMITTED);
    debug_assert!(advanced, "only this worker moves a started upload");
    buffer.unmap();
    let submitted = submit_copy(engine, &job.resource, &buffer, &job.target);
    job.upload.stamp(|t| t.submitted = Some(Instant::now()));
    arm(engine, job, staging, submitted.err());
    Ok(())
}

/// Writes `data` into mapped staging, re-pitching rows to the copy alignment.
fn write_bytes(buffer: &wgpu::Buffer, target: &Target, data: &[u8]) -> Result<(), UploadError> {
    let map_err = |e: wgpu::MapRangeError| UploadError::Device(e.to_string());
    match target {
        Target::Buffer { len, .. } => {
            let mut view = buffer
                .slice(..*len)
                .get_mapped_range_mut()
                .map_err(map_err)?;
            view.copy_from_slice(data);
        }
        Target::Texture(l) => {
            let mut view = buffer
                .slice(..l.staging_bytes())
                .get_mapped_range_mut()
                .map_err(map_err)?;
            if l.src_pitch == l.staging_pitch {
                view.slice(..data.len()).copy_from_slice(data);
                return Ok(());
            }
            let row = l.row_bytes as usize;
            for layer in 0..l.layers {
                for r in 0..l.rows {
                    let (src, dst) = (
                        l.src_offset(layer, r) as usize,
                        l.staging_offset(layer, r) as usize,
                    );
                    view.slice(dst..dst + row)
                        .copy_from_slice(&data[src..src + row]);
                }
            }
        }
    }
    Ok(())
}

fn submit_copy(
    engine: &EngineShared,
    resource: &ResourceShared,
    staging: &wgpu::Buffer,
    target: &Target,
) -> Result<(), String> {
    match (&resource.kind, target) {
        (Kind::Texture { texture, .. }, Target::Texture(l)) => {
            for strip in strips(l, resource.rows_per_submit) {
                submit_one(engine, |encoder| {
                    copy_strip(encoder, staging, texture, l, strip)
                })?;
            }
            Ok(())
        }
        (Kind::Buffer { buffer }, Target::Buffer { offset, len }) => submit_one(engine, |e| {
            e.copy_buffer_to_buffer(staging, 0, buffer, *offset, *len)
        }),
        _ => Err("target does not match the resource".into()),
    }
}

/// The row ranges (in rows of blocks) a texture copy is split into: one
/// range unless the resource asked for strips and the copy is one layer.
fn strips(l: &CopyLayout, rows_per_submit: Option<u32>) -> Vec<std::ops::Range<u64>> {
    match rows_per_submit {
        Some(n) if l.layers == 1 && u64::from(n) < l.rows => {
            let n = u64::from(n.max(1));
            (0..l.rows)
                .step_by(n as usize)
                .map(|start| start..(start + n).min(l.rows))
                .collect()
        }
        _ => std::iter::once(0..l.rows).collect(),
    }
}

fn copy_strip(
    encoder: &mut wgpu::CommandEncoder,
    staging: &wgpu::Buffer,
    texture: &wgpu::Texture,
    l: &CopyLayout,
    rows: std::ops::Range<u64>,
) {
    let (_, bh) = texture.format().block_dimensions();
    let region = l.region;
    let top = rows.start as u32 * bh;
    let height = (rows.end as u32 * bh).min(region.size.height) - top;
    let src = wgpu::TexelCopyBufferInfo {
        buffer: staging,
        layout: wgpu::TexelCopyBufferLayout {
            offset: l.staging_offset(0, rows.start),
            bytes_per_row: Some(l.staging_pitch as u32),
            rows_per_image: Some((rows.end - rows.start) as u32),
        },
    };
    let origin = wgpu::Origin3d {
        y: region.origin.y + top,
        ..region.origin
    };
    let dst = wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: region.mip_level,
        origin,
        aspect: wgpu::TextureAspect::All,
    };
    let size = wgpu::Extent3d {
        height,
        ..region.size
    };
    encoder.copy_buffer_to_texture(src, dst, size);
}

fn submit_one(
    engine: &EngineShared,
    record: impl FnOnce(&mut wgpu::CommandEncoder),
) -> Result<(), String> {
    let device = engine.gpu.device();
    let mut encoder = device
        .create_command_encoder(&Default::default())
        .map_err(|e| e.to_string())?;
    record(&mut encoder);
    let commands = encoder.finish().map_err(|e| e.to_string())?;
    engine
        .gpu
        .queue()
        .submit([commands])
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Arms the callback that ends the upload once the GPU is done with it: for
/// a ring slot, mapping it again (which waits for the copy); otherwise the
/// queue's work-done callback.
fn arm(engine: &Arc<EngineShared>, job: &Job, staging: Staging, error: Option<String>) {
    let tx = engine.completions.0.clone();
    let done_engine = Arc::clone(engine);
    let (resource, upload, admitted, data_bytes) = (
        Arc::clone(&job.resource),
        Arc::clone(&job.upload),
        job.admitted,
        job.data_bytes,
    );
    engine.arm();
    let send = move |staging: Staging, result: Result<(), String>| {
        let result = match error {
            Some(e) => Err(e),
            None => result,
        };
        let _ = tx.send(Completion {
            resource,
            upload,
            admitted,
            data_bytes,
            staging,
            result,
        });
        done_engine.outstanding.fetch_sub(1, Ordering::AcqRel);
    };
    match staging {
        Staging::Ring(slot) => {
            let buffer: wgpu::Buffer = (**slot).clone();
            buffer
                .slice(..)
                .map_async(wgpu::MapMode::Write, move |r| match r {
                    Ok(()) => send(Staging::Ring(slot), Ok(())),
                    // A slot that cannot be mapped cannot be used again.
                    Err(e) => send(Staging::Once(slot), Err(e.to_string())),
                });
        }
        other => engine
            .gpu
            .queue()
            .on_submitted_work_done(move || send(other, Ok(()))),
    }
}

/// A per-upload staging buffer from the pool, mapped for writing.
fn take_mapped(
    engine: &Arc<EngineShared>,
    bytes: u64,
) -> Result<Pooled<BufferBackend>, UploadError> {
    let buffer = engine.staging.take(STAGING_USAGE, bytes)?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let done = Arc::clone(engine);
    engine.arm();
    buffer.slice(..).map_async(wgpu::MapMode::Write, move |r| {
        let _ = tx.send(r.map_err(|e| e.to_string()));
        done.outstanding.fetch_sub(1, Ordering::AcqRel);
    });
    match rx.recv() {
        Ok(Ok(())) => Ok(buffer),
        Ok(Err(e)) => Err(UploadError::Device(e)),
        Err(_) => Err(UploadError::Device("the map callback was dropped".into())),
    }
}

/// An upload on the caller's thread through the queue's own write.
pub(crate) fn run_synchronous(job: Job) {
    let engine = Arc::clone(&job.resource.engine);
    if !job.upload.advance(phase::QUEUED, phase::STARTED) {
        return;
    }
    job.resource.started(&job.upload);
    Counters::drop_one(&engine.counters.queued);
    Counters::bump(&engine.counters.active);
    job.upload.stamp(|t| t.copy_started = Some(Instant::now()));
    let data = match &job.source {
        Source::Bytes(b) => b.clone(),
        Source::Fill(_) => Bytes::new(),
    };
    let queue = engine.gpu.queue();
    let wrote = scoped_call(engine.gpu.device(), || {
        match (&job.resource.kind, &job.target) {
            (Kind::Texture { texture, .. }, Target::Texture(l)) => {
                let dst = wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: l.region.mip_level,
                    origin: l.region.origin,
                    aspect: wgpu::TextureAspect::All,
                };
                // wgpu takes a 32-bit pitch: a longer one (a row from a
                // larger image) is packed row by row first, never narrowed.
                let (data, pitch) = match u32::try_from(l.src_pitch) {
                    Ok(pitch) => (data.clone(), pitch),
                    Err(_) => (Bytes::from(pack_rows(&data, l)), l.row_bytes as u32),
                };
                let layout = wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(pitch),
                    rows_per_image: Some(l.rows as u32),
                };
                queue.write_texture(dst, &data, layout, l.region.size);
            }
            (Kind::Buffer { buffer }, Target::Buffer { offset, .. }) => {
                queue.write_buffer(buffer, *offset, &data)
            }
            _ => {}
        }
    });
    job.upload.stamp(|t| t.copy_ended = Some(Instant::now()));
    job.upload.advance(phase::STARTED, phase::SUBMITTED);
    let submitted = wrote.and_then(|()| queue.submit([]).map(drop).map_err(|e| e.to_string()));
    job.upload.stamp(|t| t.submitted = Some(Instant::now()));
    arm(&engine, &job, Staging::None, submitted.err());
}

/// The rows of a copy, tightly packed: for a source whose pitch wgpu cannot
/// take.
fn pack_rows(data: &[u8], l: &CopyLayout) -> Vec<u8> {
    let row = l.row_bytes as usize;
    let mut packed = Vec::with_capacity(l.data_bytes() as usize);
    for layer in 0..l.layers {
        for r in 0..l.rows {
            let at = l.src_offset(layer, r) as usize;
            packed.extend_from_slice(&data[at..at + row]);
        }
    }
    packed
}
