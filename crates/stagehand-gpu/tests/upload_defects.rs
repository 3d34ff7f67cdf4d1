//! Defects a review of the upload engine found, each reproduced through the
//! public API by the test named after it (written before the fix, and
//! failing on the code before it).

mod common;

use stagehand_gpu::upload::{
    CopyLayout, EngineConfig, FrameQueue, FrameQueueConfig, IfFull, SourceLayout, StagingPolicy,
    StreamedTexture, TextureRegion, UploadEngine, UploadError, UploadStatus,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// The longest any step may take before the test gives up on it.
const WAIT: Duration = Duration::from_secs(30);

fn engine() -> UploadEngine {
    UploadEngine::new(Arc::new(common::gpu()), EngineConfig::default()).unwrap()
}

/// A `w`x`h` RGBA8 streamed texture.
fn texture(engine: &UploadEngine, w: u32, h: u32, policy: StagingPolicy) -> StreamedTexture {
    engine
        .create_texture(&common::texture_desc("defect", w, h, 1), policy)
        .unwrap()
}

fn whole(w: u32, h: u32) -> TextureRegion {
    TextureRegion::frame(wgpu::Extent3d {
        width: w,
        height: h,
        depth_or_array_layers: 1,
    })
}

/// A waker that counts its wakes, and panics on them if asked to.
struct Counting {
    wakes: AtomicUsize,
    panics: bool,
}

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        assert!(!self.panics, "a waker that panics");
    }
}

fn counting(panics: bool) -> (Arc<Counting>, Waker) {
    let c = Arc::new(Counting {
        wakes: AtomicUsize::new(0),
        panics,
    });
    (Arc::clone(&c), Waker::from(c))
}

fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Holds an upload's worker until the returned sender is dropped; returns
/// once the worker holds it (so nothing can replace it in the queue).
fn held_upload(
    t: &StreamedTexture,
    w: u32,
    h: u32,
) -> (crossbeam_channel::Sender<()>, stagehand_gpu::upload::Upload) {
    let (open, gate) = crossbeam_channel::bounded::<()>(0);
    let (started_tx, started) = crossbeam_channel::bounded::<()>(1);
    let up = t
        .upload_with(
            whole(w, h),
            move |mut out: wgpu::WriteOnly<'_, [u8]>, _: &CopyLayout| {
                let _ = started_tx.send(());
                let _ = gate.recv_timeout(WAIT);
                out.fill(7);
            },
            IfFull::Wait,
        )
        .unwrap();
    started
        .recv_timeout(WAIT)
        .expect("a worker starts the upload");
    (open, up)
}

/// Queues uploads behind a held one until the resource is at its limit:
/// each to its own row (one to the same region would replace the last).
fn fill_to_limit(t: &StreamedTexture) -> Vec<stagehand_gpu::upload::Upload> {
    let mut queued = Vec::new();
    for row in 0..8 {
        let region = TextureRegion {
            mip_level: 0,
            origin: wgpu::Origin3d { x: 0, y: row, z: 0 },
            size: wgpu::Extent3d {
                width: 4,
                height: 1,
                depth_or_array_layers: 1,
            },
        };
        match t.try_upload(vec![4u8; 16], region, SourceLayout::default()) {
            Ok(up) => queued.push(up),
            Err(UploadError::WouldBlock(_)) => return queued,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("the resource never reached its limit");
}

#[test]
fn bytes_per_row_near_u64_max_is_refused_at_the_call_not_panicked_on_a_worker() {
    let engine = engine();
    for (rows, pitch) in [(2, u64::MAX), (3, 1 << 63), (2, 1 << 63)] {
        let t = texture(&engine, 4, rows, StagingPolicy::Ring(1));
        let layout = SourceLayout {
            format: None,
            bytes_per_row: Some(pitch),
        };
        let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.upload(vec![0u8; 64], whole(4, rows), layout)
        }))
        .unwrap_or_else(|_| panic!("{rows} rows at pitch {pitch}: the call panicked"));
        match sent {
            Err(UploadError::PitchTooLarge { given, rows: r }) => {
                assert_eq!((given, r), (pitch, u64::from(rows)));
            }
            other => panic!("{rows} rows at pitch {pitch}: {other:?}"),
        }
    }
    // The engine is unharmed: an upload after them lands.
    let t = texture(&engine, 4, 2, StagingPolicy::Ring(1));
    let up = t.upload_frame(vec![1u8; 32]).unwrap();
    assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
}

#[test]
fn wait_timeout_and_preroll_with_duration_max_wait_instead_of_panicking() {
    let engine = engine();
    let t = texture(&engine, 4, 2, StagingPolicy::Ring(1));
    let up = t.upload_frame(vec![1u8; 32]).unwrap();
    let outcome = up
        .wait_timeout(Duration::MAX)
        .expect("no deadline: it ends");
    assert_eq!(outcome.status, UploadStatus::Done);
    let queue = FrameQueue::new(
        &engine,
        &common::texture_desc("frames", 4, 2, 1),
        FrameQueueConfig::default(),
    )
    .unwrap();
    queue.push(0, Duration::ZERO, vec![2u8; 32].into()).unwrap();
    assert_eq!(queue.preroll(1, Duration::MAX), 1);
}

/// Reads back the rows of a `w`x2 RGBA8 texture.
fn read_rows(engine_gpu: &stagehand_gpu::Gpu, texture: &wgpu::Texture, w: u32) -> Vec<Vec<u8>> {
    let pitch = 256u32;
    let buffer = engine_gpu
        .device()
        .create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: u64::from(pitch) * 2,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        })
        .unwrap();
    let mut encoder = engine_gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(pitch),
                rows_per_image: Some(2),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: 2,
            depth_or_array_layers: 1,
        },
    );
    engine_gpu
        .queue()
        .submit([encoder.finish().unwrap()])
        .unwrap();
    buffer
        .slice(..)
        .map_async(wgpu::MapMode::Read, |r| r.unwrap());
    engine_gpu
        .device()
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    let view = buffer.slice(..).get_mapped_range().unwrap();
    (0..2)
        .map(|r| view[r * pitch as usize..r * pitch as usize + (w * 4) as usize].to_vec())
        .collect()
}

#[test]
fn a_synchronous_pitch_past_u32_max_lands_every_row_from_its_own_offset() {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(Arc::clone(&gpu), EngineConfig::default()).unwrap();
    let mut desc = common::texture_desc("defect", 4, 2, 1);
    desc.usage |= wgpu::TextureUsages::COPY_SRC;
    let t = engine
        .create_texture(&desc, StagingPolicy::Synchronous)
        .unwrap();
    let pitch: u64 = (1 << 32) + 256;
    // Zeroed memory is mapped lazily: only the two rows' pages are touched.
    let mut data = vec![0u8; (pitch + 16) as usize];
    data[..16].fill(0x11);
    data[pitch as usize..].fill(0x22);
    let layout = SourceLayout {
        format: None,
        bytes_per_row: Some(pitch),
    };
    let up = t.upload(data, whole(4, 2), layout).unwrap();
    assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
    let rows = read_rows(&gpu, t.texture(), 4);
    assert_eq!(rows[0], vec![0x11; 16], "row 0");
    assert_eq!(
        rows[1],
        vec![0x22; 16],
        "row 1 comes from offset 2^32 + 256"
    );
}

#[test]
fn two_tasks_awaiting_clones_of_one_upload_are_both_woken() {
    let engine = engine();
    let t = texture(&engine, 4, 2, StagingPolicy::Ring(1));
    let (open, up) = held_upload(&t, 4, 2);
    let (mut a, mut b) = (up.clone(), up.clone());
    let (wa, waker_a) = counting(false);
    let (wb, waker_b) = counting(false);
    assert!(poll_once(&mut a, &waker_a).is_pending());
    assert!(poll_once(&mut b, &waker_b).is_pending());
    drop(open);
    up.wait_timeout(WAIT).expect("it lands");
    // Waiters on the handle are released as the outcome is set; the wakers
    // run just after, on the thread that resolved it.
    let deadline = std::time::Instant::now() + WAIT;
    while wa.wakes.load(Ordering::SeqCst) + wb.wakes.load(Ordering::SeqCst) < 2
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        wa.wakes.load(Ordering::SeqCst),
        1,
        "the first task is woken"
    );
    assert_eq!(
        wb.wakes.load(Ordering::SeqCst),
        1,
        "the second task is woken"
    );
    assert!(poll_once(&mut a, &waker_a).is_ready());
    assert!(poll_once(&mut b, &waker_b).is_ready());
}

#[test]
fn upload_async_at_the_resource_limit_does_not_wake_itself_while_pending() {
    let engine = engine();
    let t = texture(&engine, 4, 8, StagingPolicy::Ring(1));
    let (open, first) = held_upload(&t, 4, 8);
    let queued = fill_to_limit(&t);
    let mut next = t.upload_async(vec![3u8; 128], whole(4, 8), SourceLayout::default());
    let (woken, waker) = counting(false);
    let polled = poll_once(&mut next, &waker);
    assert!(polled.is_pending(), "at the limit: {polled:?}");
    assert_eq!(
        woken.wakes.load(Ordering::SeqCst),
        0,
        "a pending poll must not wake its own task (an executor would spin)"
    );
    drop(open);
    first.wait_timeout(WAIT).expect("the first lands");
    for up in &queued {
        up.wait_timeout(WAIT).expect("the queued ones land");
    }
    assert!(woken.wakes.load(Ordering::SeqCst) >= 1, "room wakes it");
    match poll_once(&mut next, &waker) {
        Poll::Ready(Ok(up)) => {
            assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
        }
        other => panic!("admitted once there is room: {other:?}"),
    }
}

#[test]
fn a_panicking_waker_of_a_waiting_upload_async_does_not_take_the_engine_down() {
    let engine = engine();
    let t = texture(&engine, 4, 8, StagingPolicy::Ring(1));
    let (open, first) = held_upload(&t, 4, 8);
    let _queued = fill_to_limit(&t);
    let mut next = t.upload_async(vec![3u8; 128], whole(4, 8), SourceLayout::default());
    let (woken, waker) = counting(true);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poll_once(&mut next, &waker)
    }));
    drop(open);
    first.wait_timeout(WAIT).expect("the first lands");
    assert!(woken.wakes.load(Ordering::SeqCst) >= 1);
    // The thread that woke it goes on: uploads on another texture land.
    let other = texture(&engine, 4, 2, StagingPolicy::Ring(1));
    for _ in 0..3 {
        let up = other.upload_frame(vec![5u8; 32]).unwrap();
        assert_eq!(
            up.wait_timeout(Duration::from_secs(10))
                .expect("the engine still ends uploads")
                .status,
            UploadStatus::Done
        );
    }
}

#[test]
fn a_dropped_ring_textures_staging_goes_back_by_itself_without_trim_staging() {
    let gpu = Arc::new(common::gpu());
    let engine = UploadEngine::new(Arc::clone(&gpu), EngineConfig::default()).unwrap();
    let buffers = || gpu.tracker().stats(stagehand_gpu::ObjectKind::Buffer).bytes;
    let baseline = buffers();
    {
        // A 1024x1024 RGBA8 ring of 3: 12 MiB of staging while it lives.
        let t = texture(&engine, 1024, 1024, StagingPolicy::Ring(3));
        let up = t.upload_frame(vec![9u8; 1024 * 1024 * 4]).unwrap();
        assert_eq!(up.wait_timeout(WAIT).unwrap().status, UploadStatus::Done);
        assert!(buffers() >= baseline + (12 << 20), "the ring is held");
    }
    // Dropped: its buffers go back to the staging pool, idle, and from
    // there to the device once idle for the engine's idle time (1 s).
    let started = std::time::Instant::now();
    while buffers() > baseline {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{} staging bytes still held {:?} after the drop",
            buffers() - baseline,
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(engine.staging_pool().stats().held, 0);
}

#[test]
fn staging_idle_out_of_range_is_refused() {
    for idle in [Duration::ZERO, Duration::from_secs(7200)] {
        let config = EngineConfig {
            staging_idle: Some(idle),
            ..EngineConfig::default()
        };
        match UploadEngine::new(Arc::new(common::gpu()), config) {
            Err(UploadError::InvalidConfig(m)) => assert!(m.contains("staging_idle"), "{m}"),
            other => panic!("{idle:?}: {:?}", other.map(|_| "an engine")),
        }
    }
}

#[test]
fn dropping_a_streamed_texture_inside_its_own_uploads_callback_stalls_nothing() {
    let engine = engine();
    let t = Arc::new(parking_lot::Mutex::new(Some(texture(
        &engine,
        4,
        2,
        StagingPolicy::Ring(2),
    ))));
    let (dropped_tx, dropped) = crossbeam_channel::bounded::<std::time::Instant>(1);
    let first = t
        .lock()
        .as_ref()
        .unwrap()
        .upload_frame(vec![1u8; 32])
        .unwrap();
    // The next upload to it is queued or in flight when the first lands.
    let second = t
        .lock()
        .as_ref()
        .unwrap()
        .upload(vec![2u8; 16], row(1), SourceLayout::default())
        .unwrap();
    let holder = Arc::clone(&t);
    first.on_complete(move |_| {
        // The callback runs on the engine's thread that ended the upload.
        drop(holder.lock().take());
        let _ = dropped_tx.send(std::time::Instant::now());
    });
    let started = std::time::Instant::now();
    let at = dropped
        .recv_timeout(WAIT)
        .expect("the drop inside the callback returns");
    assert!(
        at - started < Duration::from_secs(3),
        "the drop took {:?}",
        at - started
    );
    second.wait_timeout(WAIT).expect("the second upload ends");
    // Every other texture's uploads go on.
    let other = texture(&engine, 4, 2, StagingPolicy::Ring(1));
    let up = other.upload_frame(vec![5u8; 32]).unwrap();
    assert_eq!(
        up.wait_timeout(Duration::from_secs(3))
            .expect("the engine is not stalled")
            .status,
        UploadStatus::Done
    );
}

/// Row `y` of a 4-wide texture.
fn row(y: u32) -> TextureRegion {
    TextureRegion {
        mip_level: 0,
        origin: wgpu::Origin3d { x: 0, y, z: 0 },
        size: wgpu::Extent3d {
            width: 4,
            height: 1,
            depth_or_array_layers: 1,
        },
    }
}

/// Guards the engine's drop from one of its own callbacks (on the poller).
/// This form passed before the change too: the hang the review describes
/// (a worker waiting for a staging map only the poller delivers) was not
/// reproduced here; the drop no longer joins from an engine thread at all.
#[test]
fn dropping_the_engine_inside_one_of_its_callbacks_with_work_queued_returns() {
    let engine = Arc::new(parking_lot::Mutex::new(Some(engine())));
    let t = texture(
        engine.lock().as_ref().unwrap(),
        4,
        8,
        StagingPolicy::Ring(4),
    );
    let (open, first) = held_upload(&t, 4, 8);
    // Work queued behind it, on rows of their own.
    let queued: Vec<_> = (0..3)
        .map(|y| t.try_upload(vec![6u8; 16], row(y), SourceLayout::default()))
        .collect();
    assert!(queued.iter().all(Result::is_ok), "{queued:?}");
    let (dropped_tx, dropped) = crossbeam_channel::bounded::<()>(1);
    let holder = Arc::clone(&engine);
    first.on_complete(move |_| {
        drop(holder.lock().take());
        let _ = dropped_tx.send(());
    });
    drop(open);
    dropped
        .recv_timeout(Duration::from_secs(10))
        .expect("dropping the engine inside its own callback returns");
    // What was queued ends one way or another, and the texture drops.
    for up in queued.into_iter().flatten() {
        assert!(
            up.wait_timeout(WAIT).is_some(),
            "a queued upload never ended"
        );
    }
    drop(t);
}

/// Bytes whose owner panics when the worker lets go of them: a panic on a
/// worker outside the fill closure.
struct PanicsOnDrop(Vec<u8>);

impl AsRef<[u8]> for PanicsOnDrop {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("the data's owner panicked on drop");
        }
    }
}

#[test]
fn a_panic_on_a_worker_outside_the_fill_ends_the_upload_and_keeps_the_worker() {
    let engine = UploadEngine::new(
        Arc::new(common::gpu()),
        EngineConfig {
            workers: 1,
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let (w, h) = (16, 16);
    let t = texture(&engine, w, h, StagingPolicy::Ring(2));
    let data = bytes::Bytes::from_owner(PanicsOnDrop(vec![7; (w * h * 4) as usize]));
    let first = t
        .upload(data, whole(w, h), SourceLayout::default())
        .unwrap();
    let outcome = first
        .wait_timeout(WAIT)
        .expect("the upload whose data panicked on the worker never ended");
    // Whether it landed or failed, it ended; the worker goes on.
    let _ = outcome;
    let second = t.upload_frame(vec![9u8; (w * h * 4) as usize]).unwrap();
    let outcome = second
        .wait_timeout(WAIT)
        .expect("the worker took no upload after the panic");
    assert_eq!(outcome.status, UploadStatus::Done);
    let done = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(t);
        let _ = done.0.send(());
    });
    done.1
        .recv_timeout(WAIT)
        .expect("dropping the texture hung after a worker panic");
    assert_eq!(engine.stats().queued + engine.stats().active, 0);
}

#[test]
fn synchronous_uploads_racing_the_engines_drop_all_end() {
    for _ in 0..50 {
        let engine = engine();
        let t = texture(&engine, 8, 8, StagingPolicy::Synchronous);
        let start = Arc::new(std::sync::Barrier::new(2));
        let go = Arc::clone(&start);
        let uploader = std::thread::spawn(move || {
            go.wait();
            let mut uploads = Vec::new();
            for _ in 0..200 {
                match t.upload_frame(vec![1u8; 8 * 8 * 4]) {
                    Ok(u) => uploads.push(u),
                    Err(UploadError::ShutDown) => break,
                    Err(e) => panic!("unexpected error: {e}"),
                }
            }
            (t, uploads)
        });
        start.wait();
        drop(engine);
        let (t, uploads) = uploader.join().unwrap();
        for u in uploads {
            u.wait_timeout(WAIT)
                .expect("a synchronous upload made while the engine dropped never ended");
        }
        drop(t);
    }
}
