//! Transfer workers: take the next upload from the schedule, fill its
//! staging (a large upload in chunks, on several threads at once), wait for
//! its turn, submit the copy and hand it to the completion thread.
//!
//! Everything a worker runs for an upload is under `catch_unwind`: a panic
//! (in a fill closure, in the data's owner, in the device layer, or in our
//! own code) fails that upload, settles its books, passes its turn on, and
//! leaves the worker running.

use super::core::{Core, Counted, EngineThread, Landing};
use super::error::UploadError;
use super::future::{UploadStatus, phase};
use super::resource::{Job, Source};
use super::schedule::Next;
use super::stats::Counters;
use super::transfer::{CopyPlan, TransferBackend};
use crossbeam_channel::Sender;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// A worker's loop: runs uploads until the schedule is closed and drained.
pub(crate) fn run<T: TransferBackend>(core: &Core<T>, index: usize, landings: Sender<Landing<T>>) {
    EngineThread::Worker.mark();
    while let Some((job, seq)) = next(core) {
        process(core, job, seq, index, &landings);
    }
}

/// Waits for the next upload to start and claims it.
fn next<T: TransferBackend>(core: &Core<T>) -> Option<(Job<T>, u64)> {
    let mut schedule = core.schedule.lock();
    loop {
        let next = schedule.next(
            |job| job.plan.data_bytes(),
            |job| !job.resource.busy.load(Ordering::Acquire),
            |job| job.upload.advance(phase::QUEUED, phase::STARTED),
        );
        match next {
            Next::Start(job) => {
                job.resource.busy.store(true, Ordering::Release);
                // Numbered under the schedule's lock: in the order its
                // resource's uploads leave their lane.
                let seq = job.resource.turns.take_number();
                return Some((job, seq));
            }
            Next::Exit => return None,
            Next::Wait => core.work.wait(&mut schedule),
        }
    }
}

/// How an upload a worker started ends on the worker, if it does.
enum Outcome<I> {
    Submitted(I),
    Ended(UploadStatus),
}

fn process<T: TransferBackend>(
    core: &Core<T>,
    mut job: Job<T>,
    seq: u64,
    worker: usize,
    landings: &Sender<Landing<T>>,
) {
    job.resource.books.started(&job.upload);
    Counters::drop_one(&core.counters.queued);
    Counters::bump(&core.counters.active);
    job.upload.stamp(|t| t.copy_started = Some(Instant::now()));
    let mut staging = None;
    // Bytes already where the device reads them need no staging; they
    // stay with the job until it lands.
    let filled = if matches!(job.source, Source::InPlace(_)) {
        Ok(())
    } else {
        let source = std::mem::replace(&mut job.source, Source::Bytes(bytes::Bytes::new()));
        catch_unwind(AssertUnwindSafe(|| {
            let bytes = job.plan.staging_bytes();
            let slot = staging.insert(job.resource.take_staging(bytes)?);
            fill(core, slot, &job.plan, source)
        }))
        .unwrap_or_else(|_| Err(panicked("filling staging")))
    };
    job.upload.stamp(|t| t.copy_ended = Some(Instant::now()));
    let outcome = {
        // Submitted in turn: this resource's uploads reach the device in the
        // order they started. The turn passes when this block ends, before
        // the upload is handed on or ended (its callbacks may wait for this
        // resource's later uploads).
        let _turn = job.resource.turns.wait(seq);
        match filled {
            Err(e) => Outcome::Ended(UploadStatus::Failed(e)),
            Ok(()) if job.upload.cancel_requested.load(Ordering::Acquire) => {
                Outcome::Ended(UploadStatus::Cancelled)
            }
            Ok(()) => {
                job.upload.advance(phase::STARTED, phase::SUBMITTED);
                let target = &job.resource.target;
                let submitted = catch_unwind(AssertUnwindSafe(|| match &job.source {
                    Source::InPlace(source) => {
                        core.backend.submit_in_place(source, target, &job.plan)
                    }
                    _ => {
                        let slot = staging.as_mut().expect("filled staging");
                        core.backend.submit(slot, target, &job.plan)
                    }
                }))
                .unwrap_or_else(|_| Err(panicked("submitting the copy")));
                match submitted {
                    Ok(in_flight) => Outcome::Submitted(in_flight),
                    Err(e) => {
                        // A failed submission may leave its staging half
                        // way: it is not used again.
                        if let Some(slot) = staging.take() {
                            job.resource.lose(slot);
                        }
                        Outcome::Ended(UploadStatus::Failed(e))
                    }
                }
            }
        }
    };
    // The resource's next upload may start (on any worker).
    {
        let _schedule = core.schedule.lock();
        job.resource.busy.store(false, Ordering::Release);
    }
    core.work.notify_all();
    match outcome {
        Outcome::Submitted(in_flight) => {
            job.upload.stamp(|t| t.submitted = Some(Instant::now()));
            let landing = Landing {
                job,
                staging,
                in_flight,
                worker: Some(worker),
            };
            if let Err(e) = landings.send(landing) {
                core.land(e.into_inner());
            }
        }
        Outcome::Ended(status) => {
            Counters::drop_one(&core.counters.active);
            if let Some(slot) = staging {
                job.resource.give_back(slot);
            }
            let Job {
                resource, upload, ..
            } = job;
            core.finish(resource, &upload, status, Counted::Yes);
        }
    }
}

fn panicked(what: &str) -> UploadError {
    UploadError::Device(format!("the upload engine panicked {what}"))
}

/// Writes an upload's data into its staging: a fill closure on this
/// thread; bytes in parallel chunks.
fn fill<T: TransferBackend>(
    core: &Core<T>,
    staging: &mut T::Staging,
    plan: &CopyPlan,
    source: Source,
) -> Result<(), UploadError> {
    let len = plan.staging_bytes();
    match source {
        Source::Fill(fill) => {
            let mut fill = Some(fill);
            let mut outcome = Ok(());
            core.backend.write(staging, len, &mut |view| {
                if let Some(fill) = fill.take()
                    && catch_unwind(AssertUnwindSafe(|| fill(view))).is_err()
                {
                    outcome = Err(UploadError::Device("the fill closure panicked".into()));
                }
            })?;
            outcome
        }
        Source::InPlace(_) => Ok(()),
        Source::Bytes(data) => {
            let pool = core.fill.lock().clone();
            let pool = pool.as_deref();
            let chunks = chunks(plan, core.settings.chunk_bytes, pool);
            let result = core.backend.write(staging, len, &mut |view| {
                copy_chunks(pool, view, plan, &data, chunks)
            });
            // The data's owner lets go here, under the worker's guard.
            drop(data);
            result
        }
    }
}

/// How many pieces to cut an upload into: one per `chunk_bytes`, at most
/// one per fill thread.
fn chunks(plan: &CopyPlan, chunk_bytes: u64, pool: Option<&rayon::ThreadPool>) -> usize {
    let threads = pool.map_or(1, |p| p.current_num_threads() + 1);
    let by_size = plan.staging_bytes().div_ceil(chunk_bytes.max(1));
    // `split` keeps pieces to at least one row (or byte) each.
    by_size.min(threads as u64).max(1) as usize
}

/// A piece of staging and the rows (or bytes) of the plan it holds.
struct Piece<'a> {
    view: SendView<'a>,
    /// Rows of blocks (a texture), or bytes (a buffer).
    span: std::ops::Range<u64>,
    /// Where the view starts in staging.
    at: u64,
}

/// Copies `data` into `view` as `plan` lays it out, cut into `n` pieces
/// filled at once: this thread fills the first, the fill pool the others.
fn copy_chunks(
    pool: Option<&rayon::ThreadPool>,
    view: wgpu::WriteOnly<'_, [u8]>,
    plan: &CopyPlan,
    data: &[u8],
    n: usize,
) {
    let pieces = split(view, plan, n);
    match pool {
        Some(pool) if pieces.len() > 1 => {
            let mut pieces = pieces.into_iter();
            let first = pieces.next().expect("at least one piece");
            pool.in_place_scope(|scope| {
                for piece in pieces {
                    scope.spawn(move |_| copy_piece(piece, plan, data));
                }
                copy_piece(first, plan, data);
            });
        }
        _ => {
            for piece in pieces {
                copy_piece(piece, plan, data);
            }
        }
    }
}

/// Where row `g` (counting rows over layers) of a texture plan, or byte
/// `g` of a buffer plan, starts in staging.
fn staging_at(plan: &CopyPlan, g: u64) -> u64 {
    match plan {
        CopyPlan::Texture(l) if g >= l.layers * l.rows => l.staging_bytes(),
        CopyPlan::Texture(l) => l.staging_offset(g / l.rows, g % l.rows),
        CopyPlan::Bytes { .. } => g,
    }
}

/// Cuts the staging view into `n` pieces at row (or byte) boundaries.
fn split<'a>(view: wgpu::WriteOnly<'a, [u8]>, plan: &CopyPlan, n: usize) -> Vec<Piece<'a>> {
    let total = match plan {
        CopyPlan::Texture(l) => l.layers * l.rows,
        CopyPlan::Bytes { len, .. } => *len,
    };
    let n = (n as u64).clamp(1, total.max(1));
    let mut pieces = Vec::with_capacity(n as usize);
    let mut rest = view;
    let mut at = 0;
    for i in 0..n {
        let span = total * i / n..total * (i + 1) / n;
        let end = if i + 1 == n {
            at + rest.len() as u64
        } else {
            staging_at(plan, span.end)
        };
        let (piece, tail) = rest.split_at((end - at) as usize);
        pieces.push(Piece {
            view: SendView(piece),
            span,
            at,
        });
        rest = tail;
        at = end;
    }
    pieces
}

/// A write-only view of staging bytes that another thread may fill.
struct SendView<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<'a, [u8]>` is an exclusive borrow of bytes, as
// `&'a mut [u8]` is, and that is `Send`. wgpu-types implements `Send` for
// `WriteOnly<T>` with `T: Send` only for sized `T`, which leaves slices out;
// nothing in a slice view ties it to its thread. Pieces are disjoint
// (`split_at`), and the scope that fills them ends before the borrow does.
#[allow(unsafe_code)]
unsafe impl Send for SendView<'_> {}

/// Writes one piece: rows re-pitched to the staging pitch, or plain bytes.
fn copy_piece(piece: Piece<'_>, plan: &CopyPlan, data: &[u8]) {
    let Piece { view, span, at } = piece;
    let mut view = view.0;
    match plan {
        CopyPlan::Bytes { .. } => {
            let (a, b) = (span.start as usize, span.end as usize);
            view.slice(..b - a).copy_from_slice(&data[a..b]);
        }
        CopyPlan::Texture(l) => {
            let row = l.row_bytes as usize;
            if l.layers == 1 && l.src_pitch == l.staging_pitch {
                // Same layout: one copy (the last row may be unpadded).
                let a = l.src_offset(0, span.start) as usize;
                let b = (l.src_offset(0, span.end) as usize).min(data.len());
                view.slice(..b - a).copy_from_slice(&data[a..b]);
                return;
            }
            for g in span {
                let (layer, r) = (g / l.rows, g % l.rows);
                let src = l.src_offset(layer, r) as usize;
                let dst = (l.staging_offset(layer, r) - at) as usize;
                view.slice(dst..dst + row)
                    .copy_from_slice(&data[src..src + row]);
            }
        }
    }
}

/// The fill pool's threads, named after the engine's, at the workers'
/// priority.
pub(crate) fn fill_pool(
    threads: usize,
    priority: super::ThreadPriority,
) -> Result<Option<rayon::ThreadPool>, UploadError> {
    if threads <= 1 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads - 1)
        .thread_name(|i| format!("stagehand-fill-{i}"))
        .start_handler(move |_| {
            // Refused or not, the workers' report already says.
            let _ = super::set_priority(priority);
        })
        .build()
        .map(Some)
        .map_err(|e| UploadError::InvalidConfig(format!("could not start the fill threads: {e}")))
}
