//! The seed's leak: a streamed 4K texture with a ring of staging buffers,
//! created, uploaded to and released, over and over. After every release the
//! object counts and the staging pool's numbers are back where they were
//! after the first round (the pool keeps the ring's buffers idle for the
//! next texture), resident memory stays flat, and trimming at the end gives
//! everything back.

mod common;

use stagehand_gpu::diag::Snapshot;
use stagehand_gpu::pool::PoolStats;
use stagehand_gpu::upload::{EngineConfig, StagingPolicy, UploadEngine, UploadStatus};
use std::sync::Arc;
use std::time::Duration;

const FRAME: u64 = 3840 * 2160 * 4;

/// Live numbers only: peaks and event counters grow by design.
fn live(s: &Snapshot, p: &PoolStats) -> (Vec<(u64, u64)>, u64, u64, u64) {
    (
        s.kinds.iter().map(|k| (k.count, k.bytes)).collect(),
        p.held,
        p.in_use,
        p.idle,
    )
}

fn stream_and_release(rounds: usize) {
    common::pin_the_c_allocators_mapping_threshold();
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default()).unwrap();
    let desc = common::texture_desc("4k frame", 3840, 2160, 1);
    let frame = bytes::Bytes::from(vec![0x5A; FRAME as usize]);
    let before = live(&gpu.tracker().snapshot(), &engine.staging_pool().stats());
    let mut steady = None;
    let mut rss_after_warmup = None;
    for round in 0..rounds {
        let texture = engine
            .create_texture(&desc, StagingPolicy::Ring(2))
            .unwrap();
        let up = texture.upload_frame(frame.clone()).unwrap();
        assert_eq!(
            up.wait_timeout(Duration::from_secs(60))
                .expect("landed")
                .status,
            UploadStatus::Done,
            "round {round}"
        );
        drop(texture);
        let now = live(&gpu.tracker().snapshot(), &engine.staging_pool().stats());
        match &steady {
            None => steady = Some(now),
            Some(s) => assert_eq!(&now, s, "round {round}: counts or pool moved after release"),
        }
        if round == 9 {
            rss_after_warmup = common::resident_bytes();
        }
    }
    if let (Some(start), Some(end)) = (rss_after_warmup, common::resident_bytes()) {
        eprintln!(
            "resident: {} MB after warm-up, {} MB at the end",
            start >> 20,
            end >> 20
        );
        let growth = end.saturating_sub(start);
        assert!(
            growth <= 3 * FRAME,
            "resident memory grew {growth} bytes over {rounds} rounds"
        );
    }
    let stats = engine.stats();
    assert_eq!(
        (stats.completed, stats.failed, stats.queued, stats.active),
        (rounds as u64, 0, 0, 0)
    );
    engine.trim_staging();
    let after = live(&gpu.tracker().snapshot(), &engine.staging_pool().stats());
    assert_eq!(after, before, "trimmed, everything is back to the start");
}

#[test]
fn a_thousand_streamed_4k_textures_leak_nothing() {
    stream_and_release(1000);
}

#[test]
#[ignore = "long: 10,000 rounds; run with --ignored"]
fn ten_thousand_streamed_4k_textures_leak_nothing() {
    stream_and_release(10_000);
}
