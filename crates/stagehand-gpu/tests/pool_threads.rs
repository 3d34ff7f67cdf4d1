//! The pool shared by threads: blocks given back on another thread are
//! idle to everyone (stats, trim, end_batch, a budget), and threads taking
//! and dropping at once lose nothing and double-hand nothing.

use stagehand_gpu::backend::fault::FaultBackend;
use stagehand_gpu::pool::{Pool, PoolConfig};
use std::collections::HashSet;
use std::sync::Arc;

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
