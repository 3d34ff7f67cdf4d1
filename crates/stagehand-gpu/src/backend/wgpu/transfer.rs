//! The upload engine's wgpu side ([`WgpuTransfer`]): staging buffers from a
//! pool, mapped for writing; copies recorded and submitted on the device's
//! queue; each copy's end learnt from the staging buffer mapping again (or,
//! for the queue's own writes, from its work-done callback).
//!
//! wgpu delivers those callbacks only while someone polls the device. A
//! blocking poll holds wgpu's locks for the whole wait and would stall the
//! render thread's submits, so [`wait`](TransferBackend::wait) polls
//! without blocking every [`POLL_INTERVAL`] until its callback has fired:
//! the one timed loop of the engine, and only on its completion thread.

use super::{BufferBackend, BufferPool, Gpu, scoped_call};
use crate::diag::Tracked;
use crate::pool::{Pool, PoolConfig, Pooled};
use crate::upload::region::{self, CopyLayout, TextureInfo};
use crate::upload::{CopyPlan, InPlace, TransferBackend, UploadError};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a wait polls the device while its copy is in flight.
pub const POLL_INTERVAL: Duration = Duration::from_micros(200);

/// Usage of every staging buffer.
const STAGING_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_WRITE.union(wgpu::BufferUsages::COPY_SRC);

/// Uploads to a wgpu device.
pub struct WgpuTransfer {
    gpu: Arc<Gpu>,
    staging: BufferPool,
}

/// What a wgpu upload lands in.
pub enum WgpuTarget {
    /// A texture; `rows_per_submit` splits single-layer copies into strips.
    Texture {
        /// The texture.
        texture: Tracked<wgpu::Texture>,
        /// Its format, size and levels.
        info: TextureInfo,
        /// Rows of blocks per submission, if split.
        rows_per_submit: Option<u32>,
    },
    /// A buffer.
    Buffer(Tracked<wgpu::Buffer>),
}

/// A wgpu copy in flight: set by the callback that says it ended.
pub struct WgpuInFlight(Arc<Signal>);

#[derive(Default)]
struct Signal {
    fired: AtomicBool,
    error: Mutex<Option<String>>,
}

impl Signal {
    fn fire(&self, error: Option<String>) {
        *self.error.lock() = error;
        self.fired.store(true, Ordering::Release);
    }
}

impl WgpuTransfer {
    /// The transfer side of `gpu`, with a staging pool of its own.
    pub fn new(gpu: Arc<Gpu>) -> Result<Self, UploadError> {
        let staging = Pool::new(
            BufferBackend::keeping_mappings(Arc::clone(&gpu)),
            PoolConfig::named("staging"),
        )?;
        Ok(Self { gpu, staging })
    }

    /// The GPU.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The staging pool.
    pub fn staging_pool(&self) -> &BufferPool {
        &self.staging
    }

    /// Polls the device without blocking until `signal` has fired.
    fn poll_until(&self, signal: &Signal) -> Result<(), UploadError> {
        loop {
            if signal.fired.load(Ordering::Acquire) {
                return match signal.error.lock().take() {
                    None => Ok(()),
                    Some(e) => Err(UploadError::Device(e)),
                };
            }
            if let Err(e) = self.gpu.device().poll(wgpu::PollType::Poll) {
                return Err(UploadError::Device(e.to_string()));
            }
            if !signal.fired.load(Ordering::Acquire) {
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }

    /// Maps `buffer` for writing and waits for it.
    fn map(&self, buffer: &wgpu::Buffer) -> Result<(), UploadError> {
        let signal = Arc::new(Signal::default());
        let fired = Arc::clone(&signal);
        buffer.slice(..).map_async(wgpu::MapMode::Write, move |r| {
            fired.fire(r.err().map(|e| e.to_string()))
        });
        self.poll_until(&signal)
    }

    /// Lets wgpu free what was dropped: it frees a buffer or texture only
    /// on a device poll or a submit after the last work using it, so a
    /// resource released while the device is otherwise idle would keep its
    /// memory until the caller's next submit. One non-blocking poll.
    fn free_dropped(&self) {
        let _ = self.gpu.device().poll(wgpu::PollType::Poll);
    }

    fn submit_one(&self, record: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<(), String> {
        let device = self.gpu.device();
        let mut encoder = device
            .create_command_encoder(&Default::default())
            .map_err(|e| e.to_string())?;
        record(&mut encoder);
        let commands = encoder.finish().map_err(|e| e.to_string())?;
        self.gpu
            .queue()
            .submit([commands])
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Records and submits the copy of `plan` from `staging`, whose bytes
    /// start at `base`: in strips where the target asks for them.
    fn copy(
        &self,
        staging: &wgpu::Buffer,
        base: u64,
        target: &WgpuTarget,
        plan: &CopyPlan,
    ) -> Result<(), String> {
        match (target, plan) {
            (
                WgpuTarget::Texture {
                    texture,
                    rows_per_submit,
                    ..
                },
                CopyPlan::Texture(l),
            ) => {
                for rows in strips(l, *rows_per_submit) {
                    self.submit_one(|encoder| {
                        copy_strip(encoder, (staging, base), texture, l, rows);
                    })?;
                }
                Ok(())
            }
            (WgpuTarget::Buffer(buffer), CopyPlan::Bytes { offset, len }) => {
                self.submit_one(|e| e.copy_buffer_to_buffer(staging, base, buffer, *offset, *len))
            }
            _ => Err("the copy does not match the resource".into()),
        }
    }
}

impl TransferBackend for WgpuTransfer {
    type Target = WgpuTarget;
    type Staging = Pooled<BufferBackend>;
    type InFlight = WgpuInFlight;

    fn check_bytes(&self, target: &WgpuTarget, offset: u64, len: u64) -> Result<(), UploadError> {
        match target {
            WgpuTarget::Buffer(buffer) => region::check_buffer(buffer.size(), offset, len),
            WgpuTarget::Texture { .. } => Err(UploadError::InvalidConfig(
                "a byte range of a texture: upload a region instead".into(),
            )),
        }
    }

    fn stage(&self, bytes: u64) -> Result<Self::Staging, UploadError> {
        // Mapped when first written: one back from a copy already is.
        Ok(self.staging.take(STAGING_USAGE, bytes)?)
    }

    fn write(
        &self,
        staging: &mut Self::Staging,
        len: u64,
        write: &mut dyn FnMut(wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<(), UploadError> {
        // Staging comes back from its copy mapped again; a buffer new from
        // the pool is not (wgpu has no call that tells: asking for the
        // range does).
        let mut view = match staging.slice(..len).get_mapped_range_mut() {
            Ok(view) => view,
            Err(_) => {
                self.map(staging)?;
                staging
                    .slice(..len)
                    .get_mapped_range_mut()
                    .map_err(|e| UploadError::Device(e.to_string()))?
            }
        };
        write(view.slice(..));
        Ok(())
    }

    fn submit(
        &self,
        staging: &mut Self::Staging,
        target: &WgpuTarget,
        plan: &CopyPlan,
    ) -> Result<WgpuInFlight, UploadError> {
        let buffer: &wgpu::Buffer = staging;
        buffer.unmap();
        self.copy(buffer, 0, target, plan)
            .map_err(UploadError::Device)?;
        // Mapping again waits for the copy: its callback is the copy's end,
        // and leaves the buffer ready for the next upload.
        let signal = Arc::new(Signal::default());
        let fired = Arc::clone(&signal);
        buffer.slice(..).map_async(wgpu::MapMode::Write, move |r| {
            fired.fire(r.err().map(|e| e.to_string()))
        });
        Ok(WgpuInFlight(signal))
    }

    fn submit_in_place(
        &self,
        source: &InPlace,
        target: &WgpuTarget,
        plan: &CopyPlan,
    ) -> Result<WgpuInFlight, UploadError> {
        let end = source.offset.checked_add(plan.staging_bytes());
        if end.is_none_or(|end| end > source.buffer.size()) {
            return Err(UploadError::InvalidConfig(format!(
                "{} bytes from offset {} of a buffer of {}",
                plan.staging_bytes(),
                source.offset,
                source.buffer.size()
            )));
        }
        if let Err(e) = self.copy(&source.buffer, source.offset, target, plan) {
            // Strips submitted before the one that failed may still be
            // queued, and the engine lets the source go when the upload
            // ends: nothing may read it after that, so their end is
            // waited for first.
            let _ = self.gpu.device().poll(wgpu::PollType::wait_indefinitely());
            return Err(UploadError::Device(e));
        }
        // No staging to map again: the copy's end is the end of the work
        // submitted so far.
        let signal = Arc::new(Signal::default());
        let fired = Arc::clone(&signal);
        self.gpu
            .queue()
            .on_submitted_work_done(move || fired.fire(None));
        Ok(WgpuInFlight(signal))
    }

    fn submit_direct(
        &self,
        target: &WgpuTarget,
        plan: &CopyPlan,
        data: &[u8],
    ) -> Result<WgpuInFlight, UploadError> {
        let queue = self.gpu.queue();
        scoped_call(self.gpu.device(), || match (target, plan) {
            (WgpuTarget::Texture { texture, .. }, CopyPlan::Texture(l)) => {
                write_texture(queue, texture, l, data);
            }
            (WgpuTarget::Buffer(buffer), CopyPlan::Bytes { offset, .. }) => {
                queue.write_buffer(buffer, *offset, data);
            }
            _ => {}
        })
        .map_err(UploadError::Device)?;
        queue
            .submit([])
            .map_err(|e| UploadError::Device(e.to_string()))?;
        let signal = Arc::new(Signal::default());
        let fired = Arc::clone(&signal);
        queue.on_submitted_work_done(move || fired.fire(None));
        Ok(WgpuInFlight(signal))
    }

    fn wait(&self, in_flight: WgpuInFlight) -> Result<(), UploadError> {
        self.poll_until(&in_flight.0)
    }

    fn staging_held(&self) -> u64 {
        self.staging.stats().held
    }

    fn trim_staging(&self) {
        self.staging.trim();
        self.free_dropped();
    }

    fn end_staging_period(&self) {
        self.staging.end_batch();
        self.free_dropped();
    }
}

/// The queue's own texture write. wgpu takes a 32-bit pitch: a longer one
/// (a row from a larger image) is packed row by row first, never narrowed.
fn write_texture(queue: &super::Queue, texture: &wgpu::Texture, l: &CopyLayout, data: &[u8]) {
    let dst = wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: l.region.mip_level,
        origin: l.region.origin,
        aspect: wgpu::TextureAspect::All,
    };
    let packed;
    let (data, pitch) = match u32::try_from(l.src_pitch) {
        Ok(pitch) => (data, pitch),
        Err(_) => {
            packed = pack_rows(data, l);
            (&packed[..], l.row_bytes as u32)
        }
    };
    let layout = wgpu::TexelCopyBufferLayout {
        offset: 0,
        bytes_per_row: Some(pitch),
        rows_per_image: Some(l.rows as u32),
    };
    queue.write_texture(dst, data, layout, l.region.size);
}

/// The rows of a copy, tightly packed.
fn pack_rows(data: &[u8], l: &CopyLayout) -> Vec<u8> {
    let row = l.row_bytes as usize;
    let mut packed = Vec::with_capacity(l.data_bytes() as usize);
    for layer in 0..l.layers {
        for r in 0..l.rows {
            let at = l.src_offset(layer, r) as usize;
            packed.extend_from_slice(&data[at..at + row]);
        }
    }
    packed
}

/// The row ranges (in rows of blocks) a texture copy is split into: one
/// range unless the resource asked for strips and the copy is one layer.
fn strips(l: &CopyLayout, rows_per_submit: Option<u32>) -> Vec<std::ops::Range<u64>> {
    match rows_per_submit {
        Some(n) if l.layers == 1 && u64::from(n) < l.rows => {
            let n = u64::from(n.max(1));
            (0..l.rows)
                .step_by(n as usize)
                .map(|start| start..(start + n).min(l.rows))
                .collect()
        }
        _ => std::iter::once(0..l.rows).collect(),
    }
}

fn copy_strip(
    encoder: &mut wgpu::CommandEncoder,
    (staging, base): (&wgpu::Buffer, u64),
    texture: &wgpu::Texture,
    l: &CopyLayout,
    rows: std::ops::Range<u64>,
) {
    let (_, bh) = texture.format().block_dimensions();
    let region = l.region;
    let top = rows.start as u32 * bh;
    let height = (rows.end as u32 * bh).min(region.size.height) - top;
    let src = wgpu::TexelCopyBufferInfo {
        buffer: staging,
        layout: wgpu::TexelCopyBufferLayout {
            offset: base + l.staging_offset(0, rows.start),
            bytes_per_row: Some(l.staging_pitch as u32),
            rows_per_image: Some((rows.end - rows.start) as u32),
        },
    };
    let origin = wgpu::Origin3d {
        y: region.origin.y + top,
        ..region.origin
    };
    let dst = wgpu::TexelCopyTextureInfo {
        texture,
        mip_level: region.mip_level,
        origin,
        aspect: wgpu::TextureAspect::All,
    };
    let size = wgpu::Extent3d {
        height,
        ..region.size
    };
    encoder.copy_buffer_to_texture(src, dst, size);
}
