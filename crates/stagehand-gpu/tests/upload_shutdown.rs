//! Dropping the engine with uploads pending: every upload resolves and every
//! engine thread exits. Alone in its binary, so the thread census sees no
//! other test's engine.

mod common;

use stagehand_gpu::ObjectKind;
use stagehand_gpu::upload::{
    EngineConfig, IfFull, SourceLayout, StagingPolicy, TextureRegion, UploadEngine, UploadError,
    UploadStatus,
};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn region(x: u32, w: u32) -> TextureRegion {
    TextureRegion {
        mip_level: 0,
        origin: wgpu::Origin3d { x, y: 0, z: 0 },
        size: wgpu::Extent3d {
            width: w,
            height: w,
            depth_or_array_layers: 1,
        },
    }
}

fn engine_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("stagehand-"))
        .count()
}

#[test]
fn dropping_the_engine_resolves_every_upload_and_joins_every_thread() {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default()).unwrap();
    let desc = common::texture_desc("streamed", 32, 32, 1);
    let texture = engine
        .create_texture(&desc, StagingPolicy::Ring(3))
        .unwrap();
    let (open, gate) = crossbeam_channel::bounded::<()>(1);
    // The first upload holds its worker until `open`, so the others queue.
    let fill = move |mut out: wgpu::WriteOnly<'_, [u8]>, _: &stagehand_gpu::upload::CopyLayout| {
        let _ = gate.recv_timeout(WAIT);
        out.fill(3);
    };
    let mut ups = vec![
        texture
            .upload_with(region(0, 32), fill, IfFull::Wait)
            .unwrap(),
    ];
    for i in 0..2u32 {
        ups.push(
            texture
                .upload(vec![1u8; 64], region(i * 4, 4), SourceLayout::default())
                .unwrap(),
        );
    }
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let _ = open.send(());
    });
    let threads_before = engine_threads();
    drop(engine);
    opener.join().unwrap();
    for up in &ups {
        let status = up.wait_timeout(WAIT).expect("resolved").status;
        assert!(
            matches!(status, UploadStatus::Done | UploadStatus::Cancelled),
            "{status:?}"
        );
    }
    if cfg!(target_os = "linux") {
        assert!(threads_before >= 3, "workers and poller were running");
        // A joined thread can stay listed in /proc for a moment: the kernel
        // wakes the joiner as it clears the thread's id, before it removes
        // the task. Give the listing a bounded moment to catch up.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while engine_threads() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(engine_threads(), 0, "every engine thread exited");
    } else {
        eprintln!("SKIPPED: thread census needs /proc");
    }
    assert_eq!(
        texture.upload_frame(vec![0u8; 32 * 32 * 4]).unwrap_err(),
        UploadError::ShutDown
    );
    drop(texture);
    assert_eq!(gpu.tracker().stats(ObjectKind::Texture).count, 0);
}
