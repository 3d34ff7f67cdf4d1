//! Streaming 4K RGBA8 frames to a texture: the render thread's view.
//!
//! Each variant runs the same render loop: every frame it hands the next
//! frame to its uploader and submits a small render pass, and we time how
//! long those calls block the render thread. `write_texture` and
//! `StagingBelt` copy on the render thread; the naive thread and stagehand
//! copy elsewhere and never wait (a frame that cannot be handed over yet is
//! retried next frame, and the texture keeps the previous one). Throughput
//! counts only frames that landed.

use super::stats::median;
use crate::Failure;
use crate::output::{self, OutputError};
use bytes::Bytes;
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{
    EngineConfig, IfFull, StagingPolicy, StreamOptions, ThreadPriority, UploadEngine, UploadError,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wgpu::util::StagingBelt;

const W: u32 = 3840;
const H: u32 = 2160;
const FRAME: usize = (W * H * 4) as usize;
const PITCH: u32 = W * 4; // already a multiple of 256
/// Rows per submission in the strip variants: 17 strips of 2 MB per frame.
const STRIP: u32 = 128;

/// What one variant measured.
struct Run {
    /// Render-thread time per frame: the upload call plus its own submit.
    blocked: Vec<f64>,
    /// The upload call alone (hand-over, or the whole copy where the
    /// variant copies on the render thread).
    calls: Vec<f64>,
    landed: usize,
    seconds: f64,
}

/// Times one frame of the render loop: `hand` is the upload call, `render`
/// the render thread's own submit.
fn frame(blocked: &mut Vec<f64>, calls: &mut Vec<f64>, hand: impl FnOnce(), render: impl FnOnce()) {
    let t = Instant::now();
    hand();
    calls.push(t.elapsed().as_secs_f64() * 1e3);
    render();
    blocked.push(t.elapsed().as_secs_f64() * 1e3);
}

fn p99(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[((samples.len() * 99) / 100).min(samples.len() - 1)]
}

/// Frames at the start of a run whose times are kept apart: every variant
/// maps and faults fresh staging (its own, or wgpu's) on its first frames.
const WARMUP: usize = 5;

impl Run {
    fn row(mut self, name: &str) -> Result<(), OutputError> {
        let warmup = WARMUP.min(self.blocked.len().saturating_sub(1));
        let first_max = self.blocked[..warmup].iter().copied().fold(0.0, f64::max);
        let blocked = &mut self.blocked[warmup..];
        let p99_blocked = p99(blocked);
        let max = blocked.iter().copied().fold(0.0, f64::max);
        let p50 = median(blocked);
        let warmup = WARMUP.min(self.calls.len().saturating_sub(1));
        let p99_call = p99(&mut self.calls[warmup..]);
        let gbps = (self.landed * FRAME) as f64 / self.seconds / 1e9;
        output::println(&format!(
            "{name:>26}  {p50:>8.3}  {p99_blocked:>8.3}  {max:>8.3}  {p99_call:>9.3}  {first_max:>9.3}  {:>6}  {gbps:>6.2}",
            self.landed
        ))
    }
}

fn texture(gpu: &Gpu) -> stagehand_gpu::Tracked<wgpu::Texture> {
    let desc = frame_desc();
    gpu.device().create_texture(&desc).expect("a 4K texture")
}

fn frame_desc() -> wgpu::TextureDescriptor<'static> {
    wgpu::TextureDescriptor {
        label: Some("bench frame"),
        size: wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    }
}

/// Records the copy of one packed frame at `offset` of `buffer` into `tex`.
fn copy_frame(
    encoder: &mut wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    offset: u64,
    tex: &wgpu::Texture,
) {
    let src = wgpu::TexelCopyBufferInfo {
        buffer,
        layout: wgpu::TexelCopyBufferLayout {
            offset,
            bytes_per_row: Some(PITCH),
            rows_per_image: Some(H),
        },
    };
    encoder.copy_buffer_to_texture(src, tex.as_image_copy(), frame_desc().size);
}

/// The render thread's own work each frame: a small clear pass, submitted.
struct Render {
    target: stagehand_gpu::Tracked<wgpu::TextureView>,
    _texture: stagehand_gpu::Tracked<wgpu::Texture>,
}

impl Render {
    fn new(gpu: &Gpu) -> Self {
        let mut desc = frame_desc();
        desc.size = wgpu::Extent3d {
            width: 256,
            height: 256,
            depth_or_array_layers: 1,
        };
        desc.usage = wgpu::TextureUsages::RENDER_ATTACHMENT;
        let texture = gpu.device().create_texture(&desc).expect("target");
        let target = gpu
            .device()
            .create_texture_view(&texture, &Default::default())
            .expect("view");
        Self {
            target,
            _texture: texture,
        }
    }

    fn pass(&self, encoder: &mut wgpu::CommandEncoder) {
        let attachment = wgpu::RenderPassColorAttachment {
            view: &self.target,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                store: wgpu::StoreOp::Store,
            },
        };
        let desc = wgpu::RenderPassDescriptor {
            color_attachments: &[Some(attachment)],
            ..Default::default()
        };
        drop(encoder.begin_render_pass(&desc));
    }

    fn submit(&self, gpu: &Gpu, extra: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let raw: &wgpu::Device = gpu.device();
        let mut encoder = raw.create_command_encoder(&Default::default());
        extra(&mut encoder);
        self.pass(&mut encoder);
        let queue: &wgpu::Queue = gpu.queue();
        queue.submit([encoder.finish()]);
    }
}

/// Whether a background variant's loop goes on: at a fixed rate, for `n`
/// frames; flat out, until `n` frames have landed (or two minutes pass).
fn more(i: usize, n: usize, fps: Option<f64>, landed: usize, start: Instant) -> bool {
    match fps {
        Some(_) => i < n,
        None => landed < n && start.elapsed() < Duration::from_secs(120),
    }
}

/// Paces the loop: `None` runs flat out.
fn pace(start: Instant, frame: usize, fps: Option<f64>) {
    if let Some(fps) = fps {
        let due = start + Duration::from_secs_f64(frame as f64 / fps);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

fn wait_idle(gpu: &Gpu) {
    let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
}

fn write_texture(gpu: &Gpu, frames: &[Bytes], n: usize, fps: Option<f64>) -> Run {
    let (tex, render) = (texture(gpu), Render::new(gpu));
    let (mut blocked, mut calls) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let start = Instant::now();
    for i in 0..n {
        pace(start, i, fps);
        let dst = wgpu::TexelCopyTextureInfo {
            texture: &tex,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        };
        let layout = wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(PITCH),
            rows_per_image: Some(H),
        };
        let frame_data = &frames[i % frames.len()];
        frame(
            &mut blocked,
            &mut calls,
            || {
                gpu.queue()
                    .write_texture(dst, frame_data, layout, frame_desc().size)
            },
            || render.submit(gpu, |_| {}),
        );
    }
    wait_idle(gpu);
    Run {
        blocked,
        calls,
        landed: n,
        seconds: start.elapsed().as_secs_f64(),
    }
}

fn staging_belt(gpu: &Gpu, frames: &[Bytes], n: usize, fps: Option<f64>) -> Run {
    let (tex, render) = (texture(gpu), Render::new(gpu));
    let raw: &wgpu::Device = gpu.device();
    let mut belt = StagingBelt::new(raw.clone(), FRAME as u64);
    let (mut blocked, mut calls) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let start = Instant::now();
    for i in 0..n {
        pace(start, i, fps);
        let t = Instant::now();
        render.submit(gpu, |encoder| {
            let size = wgpu::BufferSize::new(FRAME as u64).expect("non-zero");
            let align = wgpu::BufferSize::new(256).expect("non-zero");
            let slice = belt.allocate(size, align);
            let (buffer, offset) = (slice.buffer().clone(), slice.offset());
            slice
                .get_mapped_range_mut()
                .expect("mapped")
                .copy_from_slice(&frames[i % frames.len()]);
            copy_frame(encoder, &buffer, offset, &tex);
            belt.finish();
            calls.push(t.elapsed().as_secs_f64() * 1e3);
        });
        belt.recall();
        let _ = raw.poll(wgpu::PollType::Poll);
        blocked.push(t.elapsed().as_secs_f64() * 1e3);
    }
    wait_idle(gpu);
    Run {
        blocked,
        calls,
        landed: n,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The hand-written background thread: two staging buffers, a blocking
/// wait for the next to map, the copy submitted from the thread.
fn naive_thread(gpu: &Arc<Gpu>, frames: &[Bytes], n: usize, fps: Option<f64>) -> Run {
    let (tex, render) = (texture(gpu), Render::new(gpu));
    let raw: wgpu::Device = (**gpu.device()).clone();
    let staging: Vec<wgpu::Buffer> = (0..2)
        .map(|_| {
            raw.create_buffer(&wgpu::BufferDescriptor {
                label: Some("naive staging"),
                size: FRAME as u64,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        })
        .collect();
    let (tx, rx) = crossbeam_channel::bounded::<Bytes>(1);
    let landed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let thread = {
        let (gpu, tex, landed) = (Arc::clone(gpu), (*tex).clone(), Arc::clone(&landed));
        std::thread::spawn(move || {
            for (i, frame) in rx.iter().enumerate() {
                let buf = &staging[i % 2];
                if i >= 2 {
                    buf.slice(..).map_async(wgpu::MapMode::Write, |_| {});
                    let _ = raw.poll(wgpu::PollType::wait_indefinitely());
                }
                buf.slice(..)
                    .get_mapped_range_mut()
                    .expect("mapped")
                    .copy_from_slice(&frame);
                buf.unmap();
                let mut encoder = raw.create_command_encoder(&Default::default());
                copy_frame(&mut encoder, buf, 0, &tex);
                let queue: &wgpu::Queue = gpu.queue();
                queue.submit([encoder.finish()]);
                landed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let (mut blocked, mut calls) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let start = Instant::now();
    let landed_now = || landed.load(std::sync::atomic::Ordering::Relaxed);
    for i in (0..).take_while(|&i| more(i, n, fps, landed_now(), start)) {
        pace(start, i, fps);
        frame(
            &mut blocked,
            &mut calls,
            || {
                let frame = frames[i % frames.len()].clone();
                // Flat out, the hand-over waits for the thread to take the
                // frame; paced, a frame it cannot take yet is skipped.
                if fps.is_some() {
                    drop(tx.try_send(frame));
                } else {
                    drop(tx.send(frame));
                }
            },
            || render.submit(gpu, |_| {}),
        );
    }
    drop(tx);
    let _ = thread.join();
    wait_idle(gpu);
    Run {
        blocked,
        calls,
        landed: landed.load(std::sync::atomic::Ordering::Relaxed),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// stagehand: `upload` hands the frame over when the ring has room (flat
/// out), `try_upload` hands it over or says the ring is busy (paced).
/// How one stagehand row streams.
#[derive(Clone, Copy)]
struct Variant {
    name: &'static str,
    source: Source,
    /// Rows per copy submission; `None` for the whole frame in one.
    strips: Option<u32>,
    fill_threads: usize,
    /// The workers' scheduling priority.
    priority: ThreadPriority,
}

/// Where a stagehand row's frames come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Shared bytes, copied into staging by a worker.
    Bytes,
    /// Generated in place, straight into staging.
    FillInPlace,
}

const VARIANTS: [Variant; 5] = [
    Variant {
        name: "stagehand, whole frame",
        source: Source::Bytes,
        strips: None,
        fill_threads: 1,
        priority: ThreadPriority::Low,
    },
    Variant {
        name: "stagehand, normal priority",
        source: Source::Bytes,
        strips: None,
        fill_threads: 1,
        priority: ThreadPriority::Normal,
    },
    Variant {
        name: "stagehand, 2 fill threads",
        source: Source::Bytes,
        strips: None,
        fill_threads: 2,
        priority: ThreadPriority::Low,
    },
    Variant {
        name: "stagehand, strips",
        source: Source::Bytes,
        strips: Some(STRIP),
        fill_threads: 1,
        priority: ThreadPriority::Low,
    },
    Variant {
        name: "stagehand, fill in place",
        source: Source::FillInPlace,
        strips: Some(STRIP),
        fill_threads: 1,
        priority: ThreadPriority::Low,
    },
];

fn stagehand(
    gpu: &Arc<Gpu>,
    frames: &[Bytes],
    n: usize,
    fps: Option<f64>,
    variant: Variant,
) -> Result<Run, UploadError> {
    // Workers below the render thread (except where a row says otherwise):
    // on a machine with few cores the render thread gets the CPU first.
    let config = EngineConfig {
        priority: variant.priority,
        fill_threads: variant.fill_threads,
        ..EngineConfig::default()
    };
    let engine = UploadEngine::new(Arc::clone(gpu), config)?;
    let options = StreamOptions {
        priority: Default::default(),
        policy: StagingPolicy::Ring(3),
        rows_per_submit: variant.strips,
    };
    let streamed = engine.create_texture_with(&frame_desc(), options)?;
    let render = Render::new(gpu);
    let region = stagehand_gpu::upload::TextureRegion::frame(frame_desc().size);
    let (mut blocked, mut calls) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut last = None;
    // Flat out, the next frame is handed over once the one two frames back
    // has landed (two in flight, a third slot of the ring free), so each
    // frame is taken and none replaces a queued one; paced, a frame the
    // ring cannot take yet is skipped.
    let if_full = match fps {
        None => IfFull::Wait,
        Some(_) => IfFull::Refuse,
    };
    let mut in_flight: std::collections::VecDeque<stagehand_gpu::upload::Upload> =
        std::collections::VecDeque::new();
    let start = Instant::now();
    for i in (0..).take_while(|&i| more(i, n, fps, engine.stats().completed as usize, start)) {
        pace(start, i, fps);
        let t = Instant::now();
        while fps.is_none() && in_flight.len() >= 2 {
            if let Some(up) = in_flight.pop_front() {
                up.wait_timeout(Duration::from_secs(60));
            }
        }
        let sent = if variant.source == Source::FillInPlace {
            let shade = (i % 251) as u8;
            streamed.upload_with(
                region,
                move |mut out, layout| fill_frame(&mut out, layout, shade),
                if_full,
            )
        } else {
            let frame = frames[i % frames.len()].clone();
            match if_full {
                IfFull::Wait => streamed.upload(frame, region, Default::default()),
                IfFull::Refuse => streamed.try_upload(frame, region, Default::default()),
            }
        };
        calls.push(t.elapsed().as_secs_f64() * 1e3);
        match sent {
            Ok(up) => {
                if fps.is_none() {
                    in_flight.push_back(up.clone());
                }
                last = Some(up);
            }
            Err(UploadError::WouldBlock(_)) => {}
            Err(e) => return Err(e),
        }
        render.submit(gpu, |_| {});
        blocked.push(t.elapsed().as_secs_f64() * 1e3);
    }
    if let Some(up) = last {
        up.wait_timeout(Duration::from_secs(60));
    }
    let seconds = start.elapsed().as_secs_f64();
    let landed = engine.stats().completed as usize;
    Ok(Run {
        blocked,
        calls,
        landed,
        seconds,
    })
}

/// A generated frame, written row by row straight into staging.
fn fill_frame(
    out: &mut wgpu::WriteOnly<'_, [u8]>,
    layout: &stagehand_gpu::upload::CopyLayout,
    shade: u8,
) {
    let row: Vec<u8> = (0..layout.row_bytes)
        .map(|x| (x as u8).wrapping_add(shade))
        .collect();
    for y in 0..layout.rows {
        let at = (y * layout.staging_pitch) as usize;
        out.slice(at..at + row.len()).copy_from_slice(&row);
    }
}

/// The floor: one memcpy of a frame into memory already touched.
fn memcpy_gbps(frames: &[Bytes]) -> f64 {
    let mut dst = vec![0u8; FRAME];
    let mut samples: Vec<f64> = (0..20)
        .map(|i| {
            let t = Instant::now();
            dst.copy_from_slice(&frames[i % frames.len()]);
            std::hint::black_box(&dst);
            FRAME as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    median(&mut samples)
}

/// Runs every variant at both rates and prints the table.
pub fn run(gpu: Arc<Gpu>, frames_per_run: usize) -> Result<(), Failure> {
    let frames: Vec<Bytes> = (0..3u8)
        .map(|k| Bytes::from(vec![k.wrapping_mul(77); FRAME]))
        .collect();
    output::println(&format!(
        "4K RGBA8 frames ({} MB each), {frames_per_run} frames per run; p50/p99/max = render-thread time blocked per frame (upload call + its own small submit), call p99 = the upload call alone, both after the first {WARMUP} frames (first max: the worst of those, which map and fault fresh staging); all in ms\n",
        FRAME / 1_000_000
    ))?;
    for fps in [None, Some(60.0)] {
        output::println(&fps.map_or("unlimited rate".to_owned(), |f| format!("{f} fps")))?;
        output::println(&format!(
            "{:>26}  {:>8}  {:>8}  {:>8}  {:>9}  {:>9}  {:>6}  {:>6}",
            "variant", "p50", "p99", "max", "call p99", "first max", "landed", "GB/s"
        ))?;
        write_texture(&gpu, &frames, frames_per_run, fps).row("queue.write_texture")?;
        staging_belt(&gpu, &frames, frames_per_run, fps).row("StagingBelt")?;
        naive_thread(&gpu, &frames, frames_per_run, fps).row("naive thread")?;
        for variant in VARIANTS {
            stagehand(&gpu, &frames, frames_per_run, fps, variant)
                .map_err(upload_error)?
                .row(variant.name)?;
        }
        output::println("")?;
    }
    output::println(&format!(
        "memcpy of one frame (the floor): {:.2} GB/s",
        memcpy_gbps(&frames)
    ))?;
    output::println(&format!(
        "landed: frames that reached the texture. Paced, the naive thread and stagehand never wait: a frame the uploader cannot take yet is skipped (the texture keeps the last one). Flat out, every variant hands over each frame as soon as its uploader can take it (stagehand: upload, which waits for a ring slot; the naive thread: a blocking send) until {frames_per_run} frames have landed, so no render loop spins: stagehand hands frame i over once frame i-2 has landed. There, blocked times are waits for room, not stalls."
    ))?;
    output::println(&format!(
        "strips: each frame is copied in {STRIP}-row submissions (StreamOptions::rows_per_submit), for textures not shown while they fill."
    ))?;
    output::println(
        "normal priority: the engine's workers at the OS default priority; the other stagehand rows run them below the render thread (ThreadPriority::Low).",
    )?;
    Ok(())
}

fn upload_error(e: UploadError) -> stagehand_gpu::Error {
    stagehand_gpu::Error::Upload(e)
}
