//! The pool on a real adapter: buffers and textures reused, counted in the
//! report, freed on trim; bad requests refused without touching the pool.

mod common;

use stagehand_gpu::ObjectKind;
use stagehand_gpu::backend::wgpu::{buffer_pool, texture_pool};
use stagehand_gpu::pool::size_class::class_of;
use stagehand_gpu::pool::{PoolConfig, PoolError};
use std::collections::HashSet;
use std::sync::Arc;
use wgpu::BufferUsages as U;

#[test]
fn ten_thousand_mixed_takes_allocate_once_per_class_and_trim_to_zero() {
    let gpu = Arc::new(common::gpu());
    let pool = buffer_pool(gpu.clone(), PoolConfig::named("mixed")).unwrap();
    let sizes = [256u64, 1000, 1020, 4096, 65_536, 70_000, 1 << 20];
    let usages = [U::STORAGE | U::COPY_DST, U::VERTEX | U::COPY_DST];
    let mut classes = HashSet::new();
    let mut x = 12345u64;
    for i in 0..10_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (len, usage) = (sizes[(x >> 33) as usize % sizes.len()], usages[i % 2]);
        classes.insert((usage, class_of(len)));
        let held = pool.take(usage, len).unwrap();
        assert!(held.size() >= len);
    }
    let s = pool.stats();
    assert_eq!(
        s.allocations as usize,
        classes.len(),
        "one driver allocation per class used"
    );
    assert_eq!(s.hits + s.misses, 10_000);
    assert_eq!(
        gpu.tracker().stats(ObjectKind::Buffer).count as usize,
        classes.len(),
        "pooled buffers are counted"
    );
    pool.trim();
    let report = gpu.report();
    let buffers = report.section("object_counts").unwrap()["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Buffer")
        .unwrap()["count"]
        .as_u64();
    assert_eq!(
        buffers,
        Some(0),
        "after trim the report shows no pooled buffers"
    );
    assert_eq!(pool.stats().held, 0);
}

#[test]
fn pool_section_joins_the_report() {
    let gpu = Arc::new(common::gpu());
    let pool = buffer_pool(gpu.clone(), PoolConfig::named("frames")).unwrap();
    let a = pool.take(U::COPY_SRC | U::MAP_WRITE, 1000).unwrap();
    drop(pool.take(U::STORAGE, 5000).unwrap());
    let mut report = gpu.report();
    report.add(&pool.section(true));
    let json = report.section("pool").unwrap();
    assert_eq!(json["pools"][0]["name"], "frames");
    assert_eq!(json["pools"][0]["in_use"].as_u64(), Some(1024));
    assert_eq!(json["pools"][0]["idle"].as_u64(), Some(5120));
    assert_eq!(json["classes"][0]["classes"].as_array().unwrap().len(), 2);
    let text = report.to_text();
    assert!(
        text.contains("\u{2588}\u{2588} pool:") && text.contains("classes of frames:"),
        "{text}"
    );
    drop(a);
}

#[test]
fn bad_requests_are_typed_and_leave_the_pool_unchanged() {
    let gpu = Arc::new(common::gpu());
    let pool = buffer_pool(gpu.clone(), PoolConfig::default()).unwrap();
    drop(pool.take(U::STORAGE, 64).unwrap());
    let before = (pool.stats(), gpu.tracker().snapshot());
    let zero = pool.take(U::STORAGE, 0).unwrap_err();
    assert!(
        matches!(zero, PoolError::InvalidRequest { len: 0, .. }),
        "{zero}"
    );
    let max = gpu.device().limits().max_buffer_size;
    let huge = pool.take(U::STORAGE, max + 1).unwrap_err();
    assert!(
        matches!(huge, PoolError::InvalidRequest { .. })
            && huge.to_string().contains("max_buffer_size"),
        "{huge}"
    );
    let usage = pool.take(U::MAP_READ | U::MAP_WRITE, 64).unwrap_err();
    assert!(matches!(usage, PoolError::InvalidRequest { .. }), "{usage}");
    let empty = pool.take(U::empty(), 64).unwrap_err();
    assert!(matches!(empty, PoolError::InvalidRequest { .. }), "{empty}");
    assert_eq!((pool.stats(), gpu.tracker().snapshot()), before);
    assert_eq!(gpu.tracker().uncaptured_errors().0, 0);
}

#[test]
fn textures_are_reused_per_descriptor() {
    let gpu = Arc::new(common::gpu());
    let pool = texture_pool(gpu.clone(), PoolConfig::named("targets")).unwrap();
    let mut desc = common::texture_desc("frame", 64, 32, 1);
    for _ in 0..10 {
        let t = pool.take_texture(&desc).unwrap();
        assert_eq!(t.size().width, 64);
    }
    desc.size.width = 32;
    drop(pool.take_texture(&desc).unwrap());
    let s = pool.stats();
    assert_eq!((s.allocations, s.hits), (2, 9));
    assert_eq!(
        s.held,
        64 * 32 * 4 + 32 * 32 * 4,
        "textures are held at their exact size"
    );
    let mut bad = desc.clone();
    bad.size.width = 0;
    assert!(matches!(
        pool.take_texture(&bad),
        Err(PoolError::InvalidRequest { .. })
    ));
    assert_eq!(pool.stats(), s);
}

#[test]
fn a_mapped_buffer_comes_back_unmapped() {
    let gpu = Arc::new(common::gpu());
    let pool = buffer_pool(gpu.clone(), PoolConfig::default()).unwrap();
    let usage = U::MAP_READ | U::COPY_DST;
    let first = pool.take(usage, 256).unwrap();
    first
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.expect("mapped"));
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    drop(first); // still mapped
    let second = pool.take(usage, 256).unwrap();
    assert_eq!(pool.stats().hits, 1);
    // Mapping again succeeds only on an unmapped buffer.
    let (tx, rx) = std::sync::mpsc::channel();
    second
        .slice(..)
        .map_async(wgpu::MapMode::Read, move |r| tx.send(r.is_ok()).unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    assert!(rx.recv().unwrap(), "the returned buffer maps again");
    drop(second);
    // Dropping a never-mapped mappable buffer raises nothing either.
    drop(pool.take(usage, 256).unwrap());
    assert_eq!(gpu.tracker().uncaptured_errors().0, 0);
}

#[test]
fn reuse_is_queue_ordered() {
    // A buffer written and copied from, then returned and rewritten by the
    // next user: the first copy still sees the first contents.
    let gpu = Arc::new(common::gpu());
    let pool = buffer_pool(gpu.clone(), PoolConfig::default()).unwrap();
    let readback = gpu
        .device()
        .create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: 256,
            usage: U::MAP_READ | U::COPY_DST,
            mapped_at_creation: false,
        })
        .unwrap();
    let src = pool.take(U::COPY_SRC | U::COPY_DST, 256).unwrap();
    gpu.queue().write_buffer(&src, 0, &[1u8; 256]);
    let mut encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    encoder.copy_buffer_to_buffer(&src, 0, &readback, 0, 256);
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    drop(src); // submitted: safe to return
    let next = pool.take(U::COPY_SRC | U::COPY_DST, 256).unwrap();
    gpu.queue().write_buffer(&next, 0, &[2u8; 256]);
    gpu.queue().submit([]).unwrap();
    readback
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let view = readback.slice(..).get_mapped_range().expect("mapped");
    assert!(
        view.iter().all(|&b| b == 1),
        "the first copy saw the second write"
    );
    assert_eq!(pool.stats().hits, 1);
}
