//! Out-of-memory, budgets, batches and bad input on the fault-injecting
//! backend: every failure is a typed error, nothing panics, nothing leaks.

use stagehand_gpu::backend::fault::FaultBackend;
use stagehand_gpu::pool::{Pool, PoolConfig, PoolError, halve_on_oom};

const KIB: u64 = 1024;

fn pool(capacity: Option<u64>) -> Pool<FaultBackend> {
    Pool::new(FaultBackend::new(capacity), PoolConfig::named("test")).unwrap()
}

#[test]
fn repeat_takes_hit_the_free_list() {
    let pool = pool(None);
    for _ in 0..100 {
        drop(pool.take(0, 1000).unwrap());
        drop(pool.take(0, 1020).unwrap()); // same class as 1000
    }
    let s = pool.stats();
    assert_eq!((s.allocations, s.misses, s.hits), (1, 1, 199));
    assert_eq!((s.held, s.idle, s.in_use), (1024, 1024, 0));
}

#[test]
fn request_that_fits_only_after_trimming_succeeds() {
    // A 100 KiB device; 64 KiB idle in another class leaves too little.
    let pool = pool(Some(100 * KIB));
    drop(pool.take(0, 64 * KIB).unwrap());
    assert_eq!(pool.stats().idle, 64 * KIB);
    let big = pool
        .take(1, 48 * KIB)
        .expect("fits once the idle block is freed");
    let s = pool.stats();
    assert_eq!((s.held, s.in_use, s.idle), (48 * KIB, 48 * KIB, 0));
    assert_eq!(s.trims, 1, "trimmed once to retry");
    assert_eq!(pool.backend().counts().ooms, 1, "the first attempt failed");
    drop(big);
}

#[test]
fn request_that_cannot_fit_is_a_typed_oom_with_the_numbers() {
    let pool = pool(Some(100 * KIB));
    let held = pool.take(0, 60 * KIB).unwrap();
    drop(pool.take(1, 8 * KIB).unwrap());
    let err = pool.take(2, 48 * KIB).unwrap_err();
    assert!(err.is_oom(), "{err}");
    assert_eq!(
        err,
        PoolError::OutOfMemory {
            requested: 48 * KIB,
            held: 60 * KIB,
            in_use: 60 * KIB,
            idle: 0,
            budget: None
        }
    );
    assert!(
        err.to_string().contains("retry with a smaller batch"),
        "{err}"
    );
    assert_eq!(pool.stats().ooms, 1);
    drop(held);
}

#[test]
fn other_backend_errors_are_not_mistaken_for_oom() {
    let backend = FaultBackend::new(None).with_max_block(KIB);
    let pool = Pool::new(backend, PoolConfig::default()).unwrap();
    let err = pool.take(0, 4 * KIB).unwrap_err();
    assert!(
        matches!(err, PoolError::InvalidRequest { .. }) && !err.is_oom(),
        "{err}"
    );
}

#[test]
fn halving_converges_on_the_largest_batch_that_fits() {
    let pool = pool(Some(1024 * KIB));
    let run = |batch: usize| {
        // A batch needs one 4 KiB block per item, all at once.
        (0..batch)
            .map(|_| pool.take(0, 4 * KIB))
            .collect::<Result<Vec<_>, _>>()
            .map(|blocks| blocks.len())
    };
    let (batch, got) = halve_on_oom(1000, 1, run).unwrap();
    assert_eq!(
        (batch, got),
        (250, 250),
        "1000 and 500 do not fit in 1 MiB, 250 do"
    );
    let err = halve_on_oom(1000, 300, run).unwrap_err();
    assert!(err.is_oom());
}

#[test]
fn budget_evicts_idle_blocks_before_failing() {
    let pool = Pool::new(
        FaultBackend::new(None),
        PoolConfig {
            budget: Some(10 * KIB),
            ..PoolConfig::default()
        },
    )
    .unwrap();
    drop(pool.take(0, 4 * KIB).unwrap());
    drop(pool.take(1, 4 * KIB).unwrap());
    let b = pool.take(2, 6 * KIB).expect("idle blocks make room");
    let s = pool.stats();
    assert_eq!(
        (s.held, s.evictions),
        (6 * KIB + 4 * KIB, 1),
        "one idle block (the older) was evicted"
    );
    let err = pool.take(3, 8 * KIB).unwrap_err();
    assert_eq!(
        err,
        PoolError::OutOfMemory {
            requested: 8 * KIB,
            held: 6 * KIB,
            in_use: 6 * KIB,
            idle: 0,
            budget: Some(10 * KIB)
        }
    );
    drop(b);
    pool.set_budget(Some(2 * KIB)).unwrap();
    assert_eq!(
        pool.stats().held,
        0,
        "lowering the budget evicts idle blocks"
    );
}

#[test]
fn end_batch_frees_classes_the_batch_did_not_touch() {
    let pool = Pool::new(
        FaultBackend::new(None),
        PoolConfig {
            keep_batches: 2,
            ..PoolConfig::default()
        },
    )
    .unwrap();
    drop(pool.take(0, 1000).unwrap());
    drop(pool.take(0, 5000).unwrap());
    pool.end_batch(); // batch 0: both used
    drop(pool.take(0, 1000).unwrap());
    pool.end_batch(); // batch 1: 5000's class unused for 1 batch, kept (keep 2)
    assert_eq!(pool.stats().held, 1024 + 5120);
    pool.end_batch(); // batch 2: 5000's class unused for 2 batches, 1000's for 1
    assert_eq!(pool.stats().held, 1024);
    pool.end_batch();
    assert_eq!(pool.stats().held, 0);
    let c = pool.backend().counts();
    assert_eq!((c.allocations, c.frees), (2, 2));
}

#[test]
fn bad_requests_leave_the_pool_unchanged() {
    let backend = FaultBackend::new(None).with_max_block(1 << 20);
    let pool = Pool::new(backend, PoolConfig::default()).unwrap();
    drop(pool.take(0, 100).unwrap());
    let before = pool.stats();
    let zero = pool.take(0, 0).unwrap_err();
    assert!(
        matches!(zero, PoolError::InvalidRequest { len: 0, .. }),
        "{zero}"
    );
    let huge = pool.take(0, u64::MAX).unwrap_err();
    assert!(matches!(huge, PoolError::InvalidRequest { .. }), "{huge}");
    assert_eq!(pool.stats(), before);
    assert!(matches!(
        pool.set_budget(Some(0)),
        Err(PoolError::InvalidConfig(_))
    ));
    let bad = Pool::new(
        FaultBackend::default(),
        PoolConfig {
            keep_batches: 0,
            ..PoolConfig::default()
        },
    );
    assert!(matches!(bad, Err(PoolError::InvalidConfig(_))));
}

#[test]
fn handles_outliving_the_pool_are_freed_when_dropped() {
    let device = FaultBackend::new(None);
    let pool = Pool::new(device.clone(), PoolConfig::default()).unwrap();
    let handle = pool.take(0, 64).unwrap();
    drop(pool.take(0, 128).unwrap());
    drop(pool);
    let c = device.counts();
    assert_eq!(
        (c.allocations, c.frees),
        (2, 1),
        "the idle block went with the pool"
    );
    drop(handle);
    let c = device.counts();
    assert_eq!(
        (c.frees, c.live_bytes, c.bad_frees),
        (2, 0, 0),
        "the loaned block is freed, not kept"
    );
}

#[test]
fn eight_threads_never_share_a_block() {
    let pool = pool(None);
    let seen = parking_lot::Mutex::new(std::collections::HashSet::new());
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (pool, seen) = (&pool, &seen);
            s.spawn(move || {
                for i in 0..2000u64 {
                    let h = pool.take((t % 2) as u8, 64 + (i % 5) * 64).unwrap();
                    assert!(seen.lock().insert(h.id), "block {} handed out twice", h.id);
                    // Forget the id before the block goes back, or another
                    // thread may take it first.
                    seen.lock().remove(&h.id);
                    drop(h);
                }
            });
        }
    });
    let s = pool.stats();
    assert_eq!(s.hits + s.misses, 16_000);
    assert_eq!(s.in_use, 0);
    assert_eq!(s.allocations, pool.backend().counts().allocations);
}
