//! Priorities and the background budget: a high-priority upload starts
//! ahead of a queue of normal ones, and background uploads start no more
//! than their per-frame budget until the frame ends, while other uploads go
//! straight through.

mod common;

use stagehand_gpu::upload::{
    EngineConfig, IfFull, StagingPolicy, StreamOptions, StreamedBuffer, UploadEngine, UploadError,
    UploadPriority, UploadStatus,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);
const LEN: u64 = 1 << 20;

/// One worker, so every upload waits in the same worker's lanes.
fn engine(budget: Option<u64>) -> UploadEngine {
    engine_bounded(budget, EngineConfig::default().max_in_flight_bytes)
}

fn engine_bounded(budget: Option<u64>, max_in_flight_bytes: u64) -> UploadEngine {
    let gpu = Arc::new(common::gpu());
    let config = EngineConfig {
        workers: 1,
        background_bytes_per_frame: budget,
        max_in_flight_bytes,
        ..EngineConfig::default()
    };
    UploadEngine::new(gpu, config).expect("engine")
}

fn buffer(engine: &UploadEngine, priority: UploadPriority) -> StreamedBuffer {
    let options = StreamOptions {
        policy: StagingPolicy::PerUpload(4),
        priority,
        rows_per_submit: None,
    };
    engine
        .create_buffer_with(&common::buffer_desc("lane", LEN), options)
        .expect("buffer")
}

fn buffers(engine: &UploadEngine, n: usize, priority: UploadPriority) -> Vec<StreamedBuffer> {
    (0..n).map(|_| buffer(engine, priority)).collect()
}

#[test]
fn high_priority_starts_ahead_of_queued_normal_uploads() {
    let engine = engine(None);
    // Hold the one worker inside a fill-in-place upload until every other
    // upload is queued, so the order it then picks is the lanes' doing.
    let gate = engine
        .create_texture(
            &common::texture_desc("gate", 4, 4, 1),
            StagingPolicy::Ring(1),
        )
        .expect("texture");
    let (open, opened) = std::sync::mpsc::channel::<()>();
    let region = stagehand_gpu::upload::TextureRegion::frame(wgpu::Extent3d {
        width: 4,
        height: 4,
        depth_or_array_layers: 1,
    });
    let held = gate
        .upload_with(
            region,
            move |_, _| {
                let _ = opened.recv_timeout(WAIT);
            },
            IfFull::Wait,
        )
        .expect("gate upload");
    let normal = buffers(&engine, 24, UploadPriority::Normal);
    let high = buffer(&engine, UploadPriority::High);
    let data = vec![7u8; LEN as usize];
    let queued: Vec<_> = normal
        .iter()
        .map(|b| b.upload(data.clone(), 0).expect("normal upload"))
        .collect();
    let urgent = high.upload(data, 0).expect("high upload");
    open.send(()).expect("the gate's fill is waiting");
    assert_eq!(held.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    let started = |u: &stagehand_gpu::upload::Upload| {
        let outcome = u.wait_timeout(WAIT).expect("an upload hung");
        assert_eq!(outcome.status, UploadStatus::Done);
        outcome.times.copy_started.expect("started")
    };
    let urgent_start = started(&urgent);
    let ahead = queued.iter().filter(|u| started(u) < urgent_start).count();
    assert_eq!(
        ahead, 0,
        "{ahead} normal uploads started before the high one"
    );
}

#[test]
fn background_uploads_keep_to_the_frame_budget() {
    // One upload's bytes: each frame lets exactly one background upload
    // start.
    let engine = engine(Some(LEN));
    let background = buffers(&engine, 3, UploadPriority::Background);
    let normal = buffer(&engine, UploadPriority::Normal);
    let data = vec![3u8; LEN as usize];
    let queued: Vec<_> = background
        .iter()
        .map(|b| b.upload(data.clone(), 0).expect("background upload"))
        .collect();
    // A normal upload is not held back by the spent budget.
    let other = normal.upload(data, 0).expect("normal upload");
    assert_eq!(other.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    assert_eq!(
        queued[0].wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !queued[1].is_done() && !queued[2].is_done(),
        "background uploads started past the budget without a new frame"
    );
    for (frame, upload) in queued.iter().enumerate().skip(1) {
        engine.end_frame();
        assert_eq!(
            upload.wait_timeout(WAIT).unwrap().status,
            UploadStatus::Done,
            "frame {frame}"
        );
        if let Some(next) = queued.get(frame + 1) {
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                !next.is_done(),
                "frame {frame} let two background uploads start"
            );
        }
    }
}

#[test]
fn engine_drop_cancels_background_uploads_held_by_the_budget() {
    let engine = engine(Some(LEN));
    let background = buffers(&engine, 3, UploadPriority::Background);
    let uploads: Vec<_> = background
        .iter()
        .map(|b| b.upload(vec![1u8; LEN as usize], 0).unwrap())
        .collect();
    assert_eq!(
        uploads[0].wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    // The resources outlive the engine: the drop itself must end the
    // uploads the budget holds.
    drop(engine);
    for upload in &uploads[1..] {
        let outcome = upload.wait_timeout(WAIT).expect("resolved after drop");
        assert_eq!(outcome.status, UploadStatus::Cancelled);
    }
    drop(background);
}

#[test]
fn releasing_a_background_resource_over_budget_does_not_wait_for_a_frame() {
    let engine = engine(Some(LEN));
    let first = buffer(&engine, UploadPriority::Background);
    let held = buffer(&engine, UploadPriority::Background);
    let landed = first.upload(vec![1u8; LEN as usize], 0).unwrap();
    assert_eq!(
        landed.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    let waiting = held.upload(vec![2u8; LEN as usize], 0).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    held.release();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "release took {took:?}");
    assert_eq!(
        waiting.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Cancelled
    );
}

#[test]
fn waiting_background_uploads_leave_room_for_the_others() {
    // Room for two uploads in flight, and a budget of one per frame.
    let engine = engine_bounded(Some(LEN), 2 * LEN);
    let background = buffers(&engine, 3, UploadPriority::Background);
    let data = vec![5u8; LEN as usize];
    let first = background[0].upload(data.clone(), 0).unwrap();
    assert_eq!(first.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    // Two more wait for the next frame and fill the engine's bound...
    let _a = background[1].try_upload(data.clone(), 0).unwrap();
    let _b = background[2].try_upload(data.clone(), 0).unwrap();
    let e = background[0].try_upload(data.clone(), 0).unwrap_err();
    assert!(matches!(e, UploadError::WouldBlock(_)), "{e}");
    // ...but not for a normal upload, which lands without a new frame.
    let normal = buffer(&engine, UploadPriority::Normal);
    let other = normal
        .try_upload(data, 0)
        .expect("room for a normal upload");
    assert_eq!(other.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
}

#[test]
fn a_zero_budget_strips_on_a_buffer_and_synchronous_background_are_refused() {
    let gpu = Arc::new(common::gpu());
    let config = EngineConfig {
        background_bytes_per_frame: Some(0),
        ..EngineConfig::default()
    };
    let e = UploadEngine::new(gpu, config).unwrap_err();
    assert!(matches!(e, UploadError::InvalidConfig(_)), "{e}");
    let engine = engine(None);
    let options = StreamOptions {
        policy: StagingPolicy::Ring(2),
        priority: UploadPriority::Normal,
        rows_per_submit: Some(64),
    };
    let e = engine
        .create_buffer_with(&common::buffer_desc("strips", 256), options)
        .unwrap_err();
    assert!(matches!(e, UploadError::InvalidConfig(_)), "{e}");
    // Background uploads on the caller's thread would escape the budget.
    let options = StreamOptions {
        policy: StagingPolicy::Synchronous,
        priority: UploadPriority::Background,
        rows_per_submit: None,
    };
    let e = engine
        .create_buffer_with(&common::buffer_desc("sync", 256), options)
        .unwrap_err();
    assert!(matches!(e, UploadError::InvalidConfig(_)), "{e}");
}
