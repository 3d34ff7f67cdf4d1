//! Model checks of the engine's hand-offs: every interleaving of the
//! threads below is run, and a wake-up lost anywhere shows as a deadlock
//! (the model's timed waits never time out; see `crate::sync`).
//!
//! Run with
//! `cargo test -p stagehand-gpu --features model-check --lib models`.

use super::admission::{Gate, IfFull};
use super::core::Turns;
use super::error::UploadError;
use super::future::{Upload, UploadShared, UploadStatus, phase};
use super::resource::{Books, RegionKey};
use crate::sync::{AtomicBool, AtomicU64, Mutex};
use loom::thread;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a streamed resource's `check_open` answers, for books alone.
fn open_unless_released(books: &Books) -> Result<(), UploadError> {
    if books.is_released() {
        Err(UploadError::Released)
    } else {
        Ok(())
    }
}

fn upload(shared: &Arc<UploadShared>, cancelled: Arc<AtomicU64>) -> Upload {
    Upload {
        shared: Arc::clone(shared),
        on_cancel: Arc::new(move || {
            cancelled.fetch_add(1, Ordering::Relaxed);
        }),
    }
}

/// Two uploads wait for room behind a third; when it leaves, both get in
/// (one after the other: the bound holds both only once the first is in),
/// and every byte comes back.
#[test]
fn waiters_at_the_bound_all_get_in_when_room_is_made() {
    loom::model(|| {
        let gate = Arc::new(Gate::new(100));
        gate.enter(80, false, IfFull::Wait, || Ok(())).unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let gate = Arc::clone(&gate);
                thread::spawn(move || {
                    gate.enter(50, false, IfFull::Wait, || Ok(())).unwrap();
                    gate.leave(50, false);
                })
            })
            .collect();
        gate.leave(80, false);
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(gate.bytes(), 0);
    });
}

/// An upload waiting for room gives up when its resource is released: the
/// release wakes the gate, and the waiter sees it closed.
#[test]
fn a_release_wakes_an_upload_waiting_at_the_bound() {
    loom::model(|| {
        let gate = Arc::new(Gate::new(100));
        let released = Arc::new(AtomicBool::new(false));
        gate.enter(100, false, IfFull::Wait, || Ok(())).unwrap();
        let waiter = {
            let (gate, released) = (Arc::clone(&gate), Arc::clone(&released));
            thread::spawn(move || {
                gate.enter(10, false, IfFull::Wait, || {
                    if released.load(Ordering::Acquire) {
                        Err(UploadError::Released)
                    } else {
                        Ok(())
                    }
                })
            })
        };
        released.store(true, Ordering::Release);
        gate.wake();
        assert!(matches!(waiter.join().unwrap(), Err(UploadError::Released)));
        assert_eq!(gate.bytes(), 100, "the waiter took nothing");
    });
}

/// The completion thread resolves an upload while one thread waits on it
/// and another registers a callback: the waiter wakes with the outcome and
/// the callback runs exactly once, whichever comes first.
#[test]
fn resolving_wakes_the_waiter_and_runs_each_callback_once() {
    loom::model(|| {
        let shared = UploadShared::new(Arc::default());
        let calls = Arc::new(AtomicU64::new(0));
        let handle = upload(&shared, Arc::default());
        let waiter = {
            let handle = handle.clone();
            thread::spawn(move || handle.wait().status)
        };
        let registrar = {
            let (handle, calls) = (handle.clone(), Arc::clone(&calls));
            thread::spawn(move || {
                handle.on_complete(move |_| {
                    calls.fetch_add(1, Ordering::Relaxed);
                });
            })
        };
        shared.resolve(UploadStatus::Done);
        assert_eq!(waiter.join().unwrap(), UploadStatus::Done);
        registrar.join().unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    });
}

/// A caller cancels a queued upload just as a worker claims it: exactly one
/// wins. A cancelled upload gives back its admission once and never starts;
/// a started one lands and its admission stays with the worker.
#[test]
fn a_cancel_racing_a_worker_start_has_one_winner() {
    loom::model(|| {
        let shared = UploadShared::new(Arc::default());
        let given_back = Arc::new(AtomicU64::new(0));
        let handle = upload(&shared, Arc::clone(&given_back));
        let worker = {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let started = shared.advance(phase::QUEUED, phase::STARTED);
                if started {
                    shared.resolve(UploadStatus::Done);
                }
                started
            })
        };
        let cancel = handle.cancel();
        let started = worker.join().unwrap();
        let status = handle.wait().status;
        if started {
            assert_eq!(status, UploadStatus::Done);
            assert_eq!(given_back.load(Ordering::Relaxed), 0);
        } else {
            assert_eq!(cancel, super::Cancel::Cancelled);
            assert_eq!(status, UploadStatus::Cancelled);
            assert_eq!(given_back.load(Ordering::Relaxed), 1);
        }
    });
}

/// A resource at its limit of one upload is released while its upload
/// lands and another caller submits a second: the release returns only
/// once every upload it let in has ended, woken by a signal, and no upload
/// gets in after it returned.
#[test]
fn release_waits_for_every_upload_it_let_in() {
    loom::model(|| {
        let books = Arc::new(Books::default());
        let key = RegionKey::Bytes { offset: 0, len: 4 };
        let first = UploadShared::new(Arc::default());
        let admitted = books.admit(key, &first, 1, IfFull::Wait, || Ok(()));
        assert!(admitted.result.is_ok() && admitted.superseded.is_none());
        books.started(&first);
        let released = Arc::new(AtomicBool::new(false));
        let late = {
            let (books, released) = (Arc::clone(&books), Arc::clone(&released));
            thread::spawn(move || {
                let second = UploadShared::new(Arc::default());
                let open = || open_unless_released(&books);
                let admitted = books.admit(key, &second, 1, IfFull::Wait, open);
                if admitted.result.is_ok() {
                    assert!(
                        !released.load(Ordering::Acquire),
                        "an upload got in after release returned"
                    );
                    books.started(&second);
                    books.finish(&second);
                }
            })
        };
        let completer = {
            let books = Arc::clone(&books);
            thread::spawn(move || books.finish(&first))
        };
        assert!(books.release());
        books.wait_idle();
        released.store(true, Ordering::Release);
        completer.join().unwrap();
        late.join().unwrap();
    });
}

/// Three uploads to one resource are started in order, filled by three
/// workers at once, and submitted strictly in the order they started,
/// whichever worker finishes filling first; a worker that panics while
/// holding its turn still passes it on.
#[test]
fn uploads_submit_in_the_order_they_started() {
    loom::model(|| {
        let turns = Arc::new(Turns::default());
        let submitted = Arc::new(Mutex::new(Vec::new()));
        let numbers: Vec<u64> = (0..3).map(|_| turns.take_number()).collect();
        let workers: Vec<_> = numbers
            .into_iter()
            .map(|seq| {
                let (turns, submitted) = (Arc::clone(&turns), Arc::clone(&submitted));
                thread::spawn(move || {
                    let turn = turns.wait(seq);
                    submitted.lock().push(seq);
                    if seq == 1 {
                        // Dropped while unwinding, as a panicking worker's is.
                        let unwound =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                                let _turn = turn;
                                panic!("a fill panicked");
                            }));
                        assert!(unwound.is_err());
                    } else {
                        drop(turn);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(*submitted.lock(), vec![0, 1, 2]);
    });
}

/// A submit supersedes a queued upload of a resource whose release is
/// waiting for it: the release must still wake. Here the queued upload's
/// own submitter starts and finishes it unless it was superseded first (a
/// superseded upload is never claimed, and nothing else ends it), and the
/// second submit is refused because the resource is released.
#[test]
fn a_submit_refused_by_a_release_leaves_the_release_a_way_to_wake() {
    loom::model(|| {
        let books = Arc::new(Books::default());
        let key = RegionKey::Bytes { offset: 0, len: 4 };
        let queued = UploadShared::new(Arc::default());
        let admitted = books.admit(key, &queued, 1, IfFull::Wait, || Ok(()));
        assert!(admitted.result.is_ok());
        let late = {
            let books = Arc::clone(&books);
            thread::spawn(move || {
                let newer = UploadShared::new(Arc::default());
                let open = || open_unless_released(&books);
                let admitted = books.admit(key, &newer, 1, IfFull::Wait, open);
                if admitted.result.is_ok() {
                    books.started(&newer);
                    books.finish(&newer);
                }
            })
        };
        let worker = {
            let (books, queued) = (Arc::clone(&books), Arc::clone(&queued));
            thread::spawn(move || {
                if queued.advance(phase::QUEUED, phase::STARTED) {
                    books.started(&queued);
                    books.finish(&queued);
                }
            })
        };
        assert!(books.release());
        books.wait_idle();
        late.join().unwrap();
        worker.join().unwrap();
    });
}
