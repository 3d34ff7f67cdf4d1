//! The pool shared by threads: blocks given back on another thread are
//! idle to everyone (stats, trim, end_batch, a budget), and threads taking
//! and dropping at once lose nothing and double-hand nothing.

use stagehand_gpu::backend::fault::FaultBackend;
use stagehand_gpu::pool::{Pool, PoolConfig};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};

fn pool() -> Pool<FaultBackend> {
    Pool::new(FaultBackend::new(None), PoolConfig::named("threads")).unwrap()
}

#[test]
fn blocks_dropped_on_another_thread_are_idle_and_trim_frees_them() {
    let pool = pool();
    let handles: Vec<_> = (0..5).map(|_| pool.take(0, 4096).unwrap()).collect();
    // Dropped on another thread.
    std::thread::spawn(move || drop(handles)).join().unwrap();
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle, s.held), (0, 5 * 4096, 5 * 4096), "{s:?}");
    let classes = pool.class_stats();
    assert_eq!((classes[0].idle, classes[0].in_use), (5, 0), "{classes:?}");
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.held, s.idle), (0, 0), "{s:?}");
    assert_eq!(pool.backend().counts().live_bytes, 0);
    assert_eq!(pool.backend().counts().frees, 5);
}

#[test]
fn a_class_used_every_batch_survives_end_batch() {
    let pool = pool();
    drop(pool.take(0, 1000).unwrap());
    for batch in 0..10 {
        for _ in 0..3 {
            drop(pool.take(0, 1000).unwrap());
        }
        pool.end_batch();
        assert_eq!(
            pool.stats().held,
            1024,
            "batch {batch} freed a class in use"
        );
    }
    assert_eq!(pool.backend().counts().allocations, 1);
    assert_eq!(pool.stats().hits, 30);
    // A batch that does not ask for it frees it.
    pool.end_batch();
    assert_eq!(pool.stats().held, 0);
}

#[test]
fn a_budget_sees_blocks_given_back_on_any_thread() {
    let pool = pool();
    let handles: Vec<_> = (0..4).map(|_| pool.take(0, 4096).unwrap()).collect();
    std::thread::spawn(move || drop(handles)).join().unwrap();
    assert_eq!(pool.stats().idle, 4 * 4096);
    pool.set_budget(Some(2 * 4096)).unwrap();
    let s = pool.stats();
    assert!(s.held <= 2 * 4096, "{s:?}");
    // Blocks coming back under the budget: it still holds.
    let handles: Vec<_> = (0..4).map(|_| pool.take(1, 2048).unwrap()).collect();
    std::thread::spawn(move || drop(handles)).join().unwrap();
    let s = pool.stats();
    assert!(s.held <= 2 * 4096, "{s:?}");
    assert_eq!(s.held, pool.backend().counts().live_bytes);
}

#[test]
fn four_threads_taking_and_dropping_lose_and_double_hand_nothing() {
    let pool = Arc::new(pool());
    // Block ids out in handles, all threads: added after a take, removed
    // before a drop, so a block handed to two threads at once is found.
    let out = Arc::new(parking_lot::Mutex::new(HashSet::new()));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (pool, out) = (Arc::clone(&pool), Arc::clone(&out));
            s.spawn(move || {
                let mut held = Vec::new();
                for i in 0..5_000u64 {
                    let len = 64 + (i * 7 + t * 13) % 3000;
                    let h = pool.take((i % 2) as u8, len).unwrap();
                    assert!(out.lock().insert(h.id), "block {} in two handles", h.id);
                    held.push(h);
                    if held.len() > 6 || i % 5 == 0 {
                        // Dropped in an order unlike the takes.
                        let h = held.swap_remove((i as usize * 31) % held.len());
                        out.lock().remove(&h.id);
                        drop(h);
                    }
                }
                for h in held {
                    out.lock().remove(&h.id);
                    drop(h);
                }
            });
        }
    });
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s:?}");
    assert_eq!(s.held, s.idle);
    assert_eq!(s.held, pool.backend().counts().live_bytes);
    assert!(s.peak_in_use > 0 && s.peak_in_use <= 4 * 7 * 4096, "{s:?}");
    pool.trim();
    assert_eq!(pool.stats().held, 0);
    let c = pool.backend().counts();
    assert_eq!((c.live_bytes, c.bad_frees), (0, 0), "{c:?}");
    assert_eq!(c.allocations, c.frees);
}

#[test]
fn a_thread_reuses_a_block_another_thread_took_and_dropped_instead_of_allocating() {
    let pool = pool();
    // Taken and dropped on each of 16 threads in turn (more threads than
    // the pool keeps shelves on this machine, so at least some take from a
    // shelf other than the one the block idles on).
    for _ in 0..16 {
        std::thread::scope(|s| {
            s.spawn(|| drop(pool.take(7, 4096).unwrap()));
        });
    }
    drop(pool.take(7, 4096).unwrap());
    let s = pool.stats();
    assert_eq!(pool.backend().counts().allocations, 1, "{s:?}");
    assert_eq!((s.hits, s.misses, s.held, s.idle), (16, 1, 4096, 4096));
    let classes = pool.class_stats();
    assert_eq!(classes.len(), 1, "one class however many shelves saw it");
    assert_eq!((classes[0].idle, classes[0].takes), (1, 17));
}

#[test]
fn end_batch_keeps_a_class_taken_on_a_different_thread_every_batch() {
    let pool = pool();
    for _ in 0..8 {
        std::thread::scope(|s| {
            s.spawn(|| drop(pool.take(1, 1000).unwrap()));
        });
        pool.end_batch();
        assert_eq!(pool.stats().held, 1024);
    }
    assert_eq!(pool.backend().counts().allocations, 1);
    pool.end_batch();
    assert_eq!(pool.stats().held, 0, "a batch without it frees it");
    assert_eq!(pool.backend().counts().live_bytes, 0);
}

#[test]
fn a_budget_evicts_idle_blocks_from_every_threads_shelf() {
    let pool = pool();
    // Four threads each leave two idle blocks of a class of their own.
    std::thread::scope(|s| {
        for key in 0..4u8 {
            let pool = &pool;
            s.spawn(move || {
                let two = [pool.take(key, 4096).unwrap(), pool.take(key, 4096).unwrap()];
                drop(two);
            });
        }
    });
    assert_eq!(pool.stats().idle, 8 * 4096);
    // A budget of three blocks evicts five, wherever they idle; a new
    // class under it evicts one more.
    pool.set_budget(Some(3 * 4096)).unwrap();
    let s = pool.stats();
    assert_eq!((s.held, s.evictions), (3 * 4096, 5), "{s:?}");
    let held = pool.take(9, 4096).unwrap();
    let s = pool.stats();
    assert_eq!(
        (s.held, s.in_use, s.evictions),
        (3 * 4096, 4096, 6),
        "{s:?}"
    );
    drop(held);
    pool.trim();
    assert_eq!(pool.backend().counts().live_bytes, 0);
}

#[test]
fn end_batch_keeps_every_idle_block_of_a_class_used_this_batch() {
    let pool = pool();
    // Batch 0: two threads hold a block of the class at once, so it has
    // idle blocks on two shelves.
    let both = Barrier::new(2);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let h = pool.take(1, 4096).unwrap();
                both.wait();
                drop(h);
            });
        }
    });
    assert_eq!(pool.backend().counts().allocations, 2);
    pool.end_batch();
    assert_eq!(pool.stats().held, 2 * 4096);
    // Batch 1 asks for the class once, on this thread's shelf: the class
    // was used, so none of its idle blocks go.
    drop(pool.take(1, 4096).unwrap());
    pool.end_batch();
    let s = pool.stats();
    assert_eq!(s.held, 2 * 4096, "{s:?}");
}

#[test]
fn set_budget_evicts_the_class_least_recently_taken_or_given_back() {
    let pool = pool();
    let x = pool.take(0, 4096).unwrap();
    pool.end_batch();
    drop(pool.take(1, 4096).unwrap());
    // Class 0 was taken a batch earlier but given back last.
    drop(x);
    pool.set_budget(Some(4096)).unwrap();
    let idle: Vec<String> = pool
        .class_stats()
        .into_iter()
        .filter(|c| c.idle > 0)
        .map(|c| c.key)
        .collect();
    assert_eq!(idle, vec!["0".to_string()]);
}

#[test]
fn a_drop_racing_set_budget_leaves_no_idle_block_over_the_budget() {
    let pool = pool();
    let (go, done) = (Barrier::new(2), Barrier::new(2));
    let (tx, rx) = std::sync::mpsc::channel();
    let mut over = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            for handle in rx {
                go.wait();
                drop(handle);
                done.wait();
            }
        });
        for _ in 0..20_000 {
            pool.set_budget(None).unwrap();
            tx.send(pool.take(0, 4096).unwrap()).unwrap();
            go.wait();
            pool.set_budget(Some(1)).unwrap();
            done.wait();
            let s = pool.stats();
            if s.idle > 0 {
                over.push(s);
            }
            pool.trim();
        }
        drop(tx);
    });
    assert!(
        over.is_empty(),
        "{} rounds left an idle block over a 1-byte budget; first {:?}",
        over.len(),
        over.first()
    );
}

#[test]
fn stats_taken_while_threads_take_drop_and_steal_add_up() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let pool = pool();
    let running = AtomicUsize::new(3);
    let mut bad = Vec::new();
    let mut snapshots = 0;
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (pool, running) = (&pool, &running);
            s.spawn(move || {
                for i in 0..20_000u64 {
                    // Two at once now and then, so blocks move between
                    // shelves (a miss takes another shelf's idle block).
                    let a = pool.take(0, 4096).unwrap();
                    let b = ((i + t) % 3 == 0).then(|| pool.take(0, 4096).unwrap());
                    drop((a, b));
                }
                running.fetch_sub(1, Relaxed);
            });
        }
        while running.load(Relaxed) > 0 {
            let s = pool.stats();
            snapshots += 1;
            if s.in_use > s.held || s.held != s.in_use + s.idle {
                bad.push(s);
            }
            std::thread::yield_now();
        }
    });
    assert!(snapshots > 0);
    assert!(
        bad.is_empty(),
        "{} of {snapshots} snapshots do not add up; first {:?}",
        bad.len(),
        bad.first()
    );
}
