//! Staging goes back by itself. Resident memory is measured for the whole
//! process, so this file holds one test: test binaries run one after
//! another, and no other test's textures come and go beside it.

mod common;

use stagehand_gpu::upload::{EngineConfig, StagingPolicy, UploadEngine, UploadStatus};
use std::sync::Arc;
use std::time::Duration;

const FRAME: u64 = 3840 * 2160 * 4;

/// Streams three frames through a 4K texture with a ring of 3, drops it,
/// and waits (up to 10 s) for the tracker's buffer bytes to fall to
/// `floor`.
fn ring_of_3_round(
    engine: &UploadEngine,
    frame: &bytes::Bytes,
    buffers: impl Fn() -> u64,
    floor: u64,
) {
    let desc = common::texture_desc("4k frame", 3840, 2160, 1);
    {
        let texture = engine
            .create_texture(&desc, StagingPolicy::Ring(3))
            .unwrap();
        for _ in 0..3 {
            let up = texture.upload_frame(frame.clone()).unwrap();
            let outcome = up.wait_timeout(Duration::from_secs(60)).expect("landed");
            assert_eq!(outcome.status, UploadStatus::Done);
        }
        assert!(buffers() >= floor + 3 * FRAME, "the ring is held");
    }
    let started = std::time::Instant::now();
    while buffers() > floor {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{} staging bytes still held {:?} after the drop",
            buffers() - floor,
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(engine.staging_pool().stats().held, 0);
}

/// The seed's "the memory is not cleared when I erase": a 4K texture with a
/// ring of 3 staging buffers is dropped, and without `trim_staging()` its
/// staging goes back to the device once idle for the engine's idle time
/// (1 s by default): the tracker's buffer bytes and the process's resident
/// memory return to where they were before the texture. (A first round
/// warms up: the Vulkan software adapter keeps a frame-sized buffer of its
/// own after its first 4K copy, once.)
#[test]
fn a_dropped_4k_ring_of_3_gives_back_buffers_and_resident_memory_without_trim_staging() {
    common::pin_the_c_allocators_mapping_threshold();
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default()).unwrap();
    let frame = bytes::Bytes::from(vec![0x5A; FRAME as usize]);
    let buffers = || gpu.tracker().stats(stagehand_gpu::ObjectKind::Buffer).bytes;
    let floor = buffers();
    ring_of_3_round(&engine, &frame, buffers, floor);
    let rss_before = common::resident_bytes();
    ring_of_3_round(&engine, &frame, buffers, floor);
    if let (Some(before), Some(after)) = (rss_before, common::resident_bytes()) {
        eprintln!(
            "resident: {} MB before the texture, {} MB after its staging went back",
            before >> 20,
            after >> 20
        );
        assert!(
            after <= before + FRAME / 2,
            "resident memory {} MB above where it was before the texture",
            (after - before) >> 20
        );
    }
}
