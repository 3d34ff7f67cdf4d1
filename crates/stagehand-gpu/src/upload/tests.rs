//! The engine's logic against a backend in memory: faults on demand that
//! no real adapter produces when asked (a staging buffer that cannot be
//! mapped again, a submission that fails).

use super::resource::StagingPolicy;
use super::streamed::StreamedBuffer;
use super::{
    CopyPlan, Engine, EngineConfig, StreamOptions, TransferBackend, UploadError, UploadStatus,
};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Host memory standing in for a device: copies land at once; waits fail
/// while `failing_waits` is above 0, submissions while `failing_submits` is.
#[derive(Default)]
struct Memory {
    failing_waits: AtomicUsize,
    failing_submits: AtomicUsize,
    staged: AtomicUsize,
}

struct Landed(bool);

fn take_one(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

impl TransferBackend for Memory {
    type Target = Mutex<Vec<u8>>;
    type Staging = Vec<u8>;
    type InFlight = Landed;

    fn check_bytes(&self, target: &Self::Target, offset: u64, len: u64) -> Result<(), UploadError> {
        let size = target.lock().len() as u64;
        if len == 0 {
            return Err(UploadError::ZeroSized);
        }
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(UploadError::OutOfBounds {
                region: format!("{len} bytes at {offset}"),
                bounds: format!("{size} bytes"),
            });
        }
        Ok(())
    }

    fn stage(&self, bytes: u64) -> Result<Vec<u8>, UploadError> {
        self.staged.fetch_add(1, Ordering::Relaxed);
        Ok(vec![0; bytes as usize])
    }

    fn write(
        &self,
        staging: &mut Vec<u8>,
        len: u64,
        write: &mut dyn FnMut(wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<(), UploadError> {
        write(wgpu::WriteOnly::from(&mut staging[..len as usize]));
        Ok(())
    }

    fn submit(
        &self,
        staging: &mut Vec<u8>,
        target: &Self::Target,
        plan: &CopyPlan,
    ) -> Result<Landed, UploadError> {
        if take_one(&self.failing_submits) {
            return Err(UploadError::Device("the submission failed".into()));
        }
        let CopyPlan::Bytes { offset, len } = *plan else {
            return Err(UploadError::InvalidConfig("bytes only".into()));
        };
        let (offset, len) = (offset as usize, len as usize);
        target.lock()[offset..offset + len].copy_from_slice(&staging[..len]);
        Ok(Landed(!take_one(&self.failing_waits)))
    }

    fn submit_direct(
        &self,
        target: &Self::Target,
        plan: &CopyPlan,
        data: &[u8],
    ) -> Result<Landed, UploadError> {
        let CopyPlan::Bytes { offset, .. } = *plan else {
            return Err(UploadError::InvalidConfig("bytes only".into()));
        };
        let offset = offset as usize;
        target.lock()[offset..offset + data.len()].copy_from_slice(data);
        Ok(Landed(true))
    }

    fn wait(&self, landed: Landed) -> Result<(), UploadError> {
        if landed.0 {
            Ok(())
        } else {
            Err(UploadError::Device(
                "the staging buffer could not be mapped again".into(),
            ))
        }
    }

    fn staging_held(&self) -> u64 {
        0
    }

    fn trim_staging(&self) {}

    fn end_staging_period(&self) {}
}

fn engine(memory: Memory) -> Engine<Memory> {
    Engine::with_backend(memory, EngineConfig::default()).unwrap()
}

fn buffer(engine: &Engine<Memory>, len: usize, policy: StagingPolicy) -> StreamedBuffer<Memory> {
    let options = StreamOptions {
        policy,
        ..StreamOptions::default()
    };
    StreamedBuffer {
        inner: engine
            .streamed(Mutex::new(vec![0; len]), options, len as u64)
            .unwrap(),
    }
}

#[test]
fn a_ring_slot_that_cannot_be_mapped_again_is_replaced_not_lost() {
    let engine = engine(Memory::default());
    let buf = buffer(&engine, 64, StagingPolicy::Ring(2));
    // Every wait of the next five fails, as a re-map of the slot would.
    engine.backend().failing_waits.store(5, Ordering::Release);
    let mut statuses = Vec::new();
    for i in 0..12u8 {
        let up = buf.upload(vec![i; 64], 0).unwrap();
        statuses.push(
            up.wait_timeout(WAIT)
                .expect("an upload hung: the ring ran dry")
                .status,
        );
    }
    let failed = statuses
        .iter()
        .filter(|s| matches!(s, UploadStatus::Failed(_)))
        .count();
    assert_eq!(failed, 5, "{statuses:?}");
    assert!(
        statuses[5..].iter().all(|s| *s == UploadStatus::Done),
        "{statuses:?}"
    );
    // Two slots at first; a lost one is staged again when the ring needs it.
    let staged = engine.backend().staged.load(Ordering::Relaxed);
    assert!((3..=2 + 5).contains(&staged), "{staged} staged");
    assert_eq!(buf.stats().ring_free, 2, "the ring is whole again");
    assert_eq!(*buf.inner.resource.target.lock(), vec![11u8; 64]);
}

#[test]
fn a_failed_submission_ends_its_upload_and_the_next_ones_land() {
    let engine = engine(Memory::default());
    let buf = buffer(&engine, 64, StagingPolicy::Ring(1));
    engine.backend().failing_submits.store(3, Ordering::Release);
    // One at a time, so none supersedes another.
    let ended: Vec<_> = (0..6u8)
        .map(|i| {
            let up = buf.upload(vec![i; 64], 0).unwrap();
            up.wait_timeout(WAIT).expect("hung").status
        })
        .collect();
    assert!(
        ended[..3]
            .iter()
            .all(|s| matches!(s, UploadStatus::Failed(_))),
        "{ended:?}"
    );
    assert!(
        ended[3..].iter().all(|s| *s == UploadStatus::Done),
        "{ended:?}"
    );
    assert_eq!(*buf.inner.resource.target.lock(), vec![5u8; 64]);
    assert_eq!(buf.stats().in_flight, 0);
    assert_eq!(engine.stats().queued + engine.stats().active, 0);
}

#[test]
fn many_threads_uploading_and_releasing_leave_no_books_open() {
    let engine = Arc::new(engine(Memory::default()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let engine = Arc::clone(&engine);
            std::thread::spawn(move || {
                for round in 0..50u8 {
                    let buf = buffer(&engine, 256, StagingPolicy::Ring(2));
                    let ups: Vec<_> = (0..4u64)
                        .map(|i| buf.upload(vec![round ^ t; 64], i * 64).unwrap())
                        .collect();
                    if round % 2 == 0 {
                        drop(buf);
                    } else {
                        for up in &ups {
                            up.wait_timeout(WAIT).expect("hung");
                        }
                    }
                    for up in ups {
                        up.wait_timeout(WAIT).expect("an upload never ended");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = engine.stats();
    assert_eq!(stats.queued + stats.active, 0, "{stats:?}");
    assert_eq!(
        stats.completed + stats.cancelled + stats.superseded,
        4 * 50 * 4,
        "{stats:?}"
    );
}

#[test]
fn an_engine_whose_worker_cannot_be_spawned_returns_the_error_instead_of_hanging() {
    // Spawn 0 is the completion thread, 1 and 2 the two workers: each
    // fails in turn (the fill threads are a pool's, not spawned here).
    for n in 0..3 {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            super::engine::spawn_fault::fail_after(n);
            let config = EngineConfig {
                workers: 2,
                ..EngineConfig::default()
            };
            let _ = tx.send(Engine::with_backend(Memory::default(), config).map(|_| ()));
        });
        match rx.recv_timeout(WAIT) {
            Ok(Err(e)) => assert!(e.to_string().contains("could not start"), "{e}"),
            Ok(Ok(())) => panic!("the engine started though its spawn {n} failed"),
            Err(_) => panic!("the engine hung when its spawn {n} failed"),
        }
    }
}
