//! Bad input, cancellation, panicking callbacks, release and engine drop:
//! typed errors before anything is queued, every future resolved, no hang
//! (every wait has a timeout), no leak, other uploads unharmed.

mod common;

use stagehand_gpu::upload::{
    Cancel, EngineConfig, IfFull, SourceLayout, StagingPolicy, TextureRegion, UploadEngine,
    UploadError, UploadStatus,
};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn desc(w: u32, h: u32, layers: u32, mips: u32) -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some("streamed"),
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: layers,
        },
        mip_level_count: mips,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    }
}

fn region(mip: u32, x: u32, y: u32, z: u32, w: u32, h: u32) -> TextureRegion {
    TextureRegion {
        mip_level: mip,
        origin: wgpu::Origin3d { x, y, z },
        size: wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    }
}

fn engine() -> (Arc<stagehand_gpu::Gpu>, UploadEngine) {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(gpu.clone(), EngineConfig::default()).unwrap();
    (gpu, engine)
}

#[test]
fn each_bad_input_gets_its_own_error_and_other_uploads_land() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(64, 64, 2, 2), StagingPolicy::Ring(2))
        .unwrap();
    let other = engine
        .create_texture(&desc(64, 64, 1, 1), StagingPolicy::Ring(2))
        .unwrap();
    let in_flight = other.upload_frame(vec![9u8; 64 * 64 * 4]).unwrap();
    let l = SourceLayout::default();
    let before = engine.stats();
    let e = |r, len: usize| texture.upload(vec![0u8; len], r, l).unwrap_err();
    assert!(
        matches!(
            e(region(0, 0, 0, 0, 4, 4), 63),
            UploadError::DataLength { got: 63, .. }
        ),
        "short data"
    );
    assert!(
        matches!(
            e(region(0, 0, 0, 0, 4, 4), 65),
            UploadError::DataLength { got: 65, .. }
        ),
        "long data"
    );
    assert!(
        matches!(
            e(region(0, 62, 0, 0, 4, 4), 64),
            UploadError::OutOfBounds { .. }
        ),
        "outside"
    );
    assert!(matches!(
        e(region(2, 0, 0, 0, 1, 1), 4),
        UploadError::NoSuchMip { level: 2, count: 2 }
    ));
    assert!(matches!(
        e(region(0, 0, 0, 2, 4, 4), 64),
        UploadError::NoSuchLayer { first: 2, .. }
    ));
    assert!(matches!(
        e(region(0, 0, 0, 0, 0, 4), 0),
        UploadError::ZeroSized
    ));
    let srgb = SourceLayout {
        format: Some(wgpu::TextureFormat::Bgra8Unorm),
        bytes_per_row: None,
    };
    assert!(matches!(
        texture.upload(vec![0u8; 64], region(0, 0, 0, 0, 4, 4), srgb),
        Err(UploadError::FormatMismatch { .. })
    ));
    let buffer = engine
        .create_buffer(
            &wgpu::BufferDescriptor {
                label: None,
                size: 256,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            },
            StagingPolicy::Ring(1),
        )
        .unwrap();
    assert!(matches!(
        buffer.upload(vec![0u8; 8], 2),
        Err(UploadError::Unaligned { offset: 2, len: 8 })
    ));
    assert!(matches!(
        buffer.upload(vec![0u8; 6], 0),
        Err(UploadError::Unaligned { .. })
    ));
    assert!(matches!(
        buffer.upload(vec![0u8; 8], 252),
        Err(UploadError::OutOfBounds { .. })
    ));
    assert!(matches!(
        buffer.upload(Vec::<u8>::new(), 0),
        Err(UploadError::ZeroSized)
    ));
    texture.release();
    assert_eq!(
        texture
            .upload(vec![0u8; 64], region(0, 0, 0, 0, 4, 4), l)
            .unwrap_err(),
        UploadError::Released
    );
    let after = engine.stats();
    let total = |s: &stagehand_gpu::upload::UploadStats| {
        s.queued + s.active + s.completed + s.cancelled + s.superseded + s.failed
    };
    assert_eq!(total(&after), total(&before), "no bad upload was admitted");
    assert_eq!(
        in_flight.wait_timeout(WAIT).expect("lands").status,
        UploadStatus::Done
    );
}

#[test]
fn a_panicking_callback_is_caught_and_counted() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(16, 16, 1, 1), StagingPolicy::Ring(2))
        .unwrap();
    let up = texture.upload_frame(vec![1u8; 16 * 16 * 4]).unwrap();
    up.on_complete(|_| panic!("a callback that panics"));
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&ran);
    up.on_complete(move |o| {
        assert_eq!(o.status, UploadStatus::Done);
        seen.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    // The next upload still lands: the poller survived.
    let next = texture.upload_frame(vec![2u8; 16 * 16 * 4]).unwrap();
    assert_eq!(next.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(engine.stats().callback_panics, 1);
}

/// A gate that holds a worker inside a fill closure: `started` returns once
/// the worker is in it, `open` lets it go on.
struct Gate {
    entered: crossbeam_channel::Receiver<()>,
    open: crossbeam_channel::Sender<()>,
}

impl Gate {
    fn started(&self) {
        self.entered
            .recv_timeout(WAIT)
            .expect("the worker entered the fill");
    }
    fn open(&self) {
        let _ = self.open.send(());
    }
}

/// A fill closure held at a [`Gate`].
fn held() -> (
    Gate,
    impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &stagehand_gpu::upload::CopyLayout) + Send + 'static,
) {
    let (entered_tx, entered) = crossbeam_channel::bounded(1);
    let (open, gate) = crossbeam_channel::bounded(1);
    let fill = move |mut out: wgpu::WriteOnly<'_, [u8]>, _: &stagehand_gpu::upload::CopyLayout| {
        let _ = entered_tx.send(());
        let _ = gate.recv_timeout(WAIT);
        out.fill(3);
    };
    (Gate { entered, open }, fill)
}

#[test]
fn cancellation_at_every_stage() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(32, 32, 1, 1), StagingPolicy::Ring(3))
        .unwrap();
    let whole = region(0, 0, 0, 0, 32, 32);
    // Stage 1: queued behind a held upload on the same worker.
    let (gate, fill) = held();
    let first = texture.upload_with(whole, fill, IfFull::Wait).unwrap();
    gate.started();
    let queued = texture
        .upload(
            vec![5u8; 16 * 16 * 4],
            region(0, 0, 0, 0, 16, 16),
            SourceLayout::default(),
        )
        .unwrap();
    assert_eq!(
        queued.cancel(),
        Cancel::Cancelled,
        "a queued upload cancels"
    );
    assert_eq!(
        queued.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Cancelled
    );
    // Stage 2: started (its fill is running): cancelled before submission.
    assert_eq!(first.cancel(), Cancel::Requested);
    gate.open();
    assert_eq!(
        first.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Cancelled
    );
    // Stage 3: landed: too late.
    let done = texture.upload_frame(vec![7u8; 32 * 32 * 4]).unwrap();
    assert_eq!(done.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    assert_eq!(done.cancel(), Cancel::TooLate);
    let s = engine.stats();
    assert_eq!((s.cancelled, s.completed, s.queued, s.active), (2, 1, 0, 0));
    // Every ring slot came back: three uploads can be in flight again.
    let ups: Vec<_> = (0..3)
        .map(|_| {
            texture
                .try_upload(vec![1u8; 32 * 32 * 4], whole, SourceLayout::default())
                .unwrap()
        })
        .collect();
    for up in ups {
        assert!(matches!(
            up.wait_timeout(WAIT).unwrap().status,
            UploadStatus::Done | UploadStatus::Superseded
        ));
    }
}

#[test]
fn a_newer_frame_supersedes_a_queued_one() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(32, 32, 1, 1), StagingPolicy::Ring(3))
        .unwrap();
    let (gate, fill) = held();
    let whole = region(0, 0, 0, 0, 32, 32);
    let held_up = texture.upload_with(whole, fill, IfFull::Wait).unwrap();
    gate.started();
    let old = texture.upload_frame(vec![1u8; 32 * 32 * 4]).unwrap();
    let new = texture.upload_frame(vec![2u8; 32 * 32 * 4]).unwrap();
    gate.open();
    assert_eq!(
        old.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Superseded
    );
    assert_eq!(new.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    assert_eq!(
        held_up.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    assert_eq!(engine.stats().superseded, 1);
}

#[test]
fn try_upload_would_block_at_the_ring_bound() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(32, 32, 1, 1), StagingPolicy::Ring(1))
        .unwrap();
    let (gate, fill) = held();
    let held_up = texture
        .upload_with(region(0, 0, 0, 0, 32, 32), fill, IfFull::Wait)
        .unwrap();
    let err = texture
        .try_upload(
            vec![0u8; 64],
            region(0, 0, 0, 0, 4, 4),
            SourceLayout::default(),
        )
        .unwrap_err();
    assert!(matches!(err, UploadError::WouldBlock(_)), "{err}");
    gate.started();
    let busy = texture.stats();
    assert_eq!(
        (busy.in_flight, busy.queued, busy.ring_free),
        (1, 0, 0),
        "{busy:?}"
    );
    gate.open();
    assert_eq!(
        held_up.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
    let idle = texture.stats();
    assert_eq!(
        (idle.in_flight, idle.ring_free, idle.released),
        (0, 1, false),
        "{idle:?}"
    );
}

#[test]
fn a_panicking_fill_fails_its_upload_only() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(8, 8, 1, 1), StagingPolicy::Ring(2))
        .unwrap();
    let bad = texture
        .upload_with(
            region(0, 0, 0, 0, 8, 8),
            |_, _| panic!("decoder crashed"),
            IfFull::Wait,
        )
        .unwrap();
    assert!(matches!(
        bad.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Failed(UploadError::Device(_))
    ));
    let good = texture.upload_frame(vec![1u8; 8 * 8 * 4]).unwrap();
    assert_eq!(good.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
}

#[test]
fn an_upload_can_be_awaited() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(8, 8, 1, 1), StagingPolicy::PerUpload(2))
        .unwrap();
    let up = texture.upload_frame(vec![1u8; 8 * 8 * 4]).unwrap();
    let outcome = pollster::block_on(up);
    assert_eq!(outcome.status, UploadStatus::Done);
    let t = outcome.times;
    assert!(
        t.queued <= t.copy_started
            && t.copy_started <= t.copy_ended
            && t.copy_ended <= t.submitted
            && t.submitted <= t.gpu_complete
    );
    assert!(t.latency().is_some());
}

#[test]
fn upload_async_yields_until_there_is_room() {
    let (_gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(32, 32, 1, 1), StagingPolicy::Ring(1))
        .unwrap();
    let (gate, fill) = held();
    let first = texture
        .upload_with(region(0, 0, 0, 0, 32, 32), fill, IfFull::Wait)
        .unwrap();
    gate.started();
    let admission = texture.upload_async(
        vec![4u8; 64],
        region(0, 0, 0, 0, 4, 4),
        SourceLayout::default(),
    );
    let mut admission = std::pin::pin!(admission);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        admission.as_mut().poll(&mut cx).is_pending(),
        "the ring's one buffer is busy"
    );
    gate.open();
    let second = pollster::block_on(admission).expect("admitted once the first landed");
    assert_eq!(first.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    assert_eq!(
        second.wait_timeout(WAIT).unwrap().status,
        UploadStatus::Done
    );
}

#[test]
fn the_uploads_section_joins_the_report() {
    let (gpu, engine) = engine();
    let texture = engine
        .create_texture(&desc(8, 8, 1, 1), StagingPolicy::Ring(2))
        .unwrap();
    let up = texture.upload_frame(vec![1u8; 8 * 8 * 4]).unwrap();
    assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    let mut report = gpu.report();
    report.add(&engine.section());
    let json = report.section("uploads").unwrap();
    assert_eq!(json["engine"]["completed"], 1);
    assert_eq!(json["engine"]["bytes_uploaded"], 8 * 8 * 4);
    assert_eq!(json["engine"]["workers"], 2);
    assert!(
        report.to_text().contains("completed:  1"),
        "{}",
        report.to_text()
    );
}
