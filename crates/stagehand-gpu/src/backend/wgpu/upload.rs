//! The upload engine on wgpu: [`UploadEngine`]'s constructors,
//! [`StreamedTexture`], and a [`FrameQueue`] of textures. The engine itself
//! is written once in [`crate::upload`], over [`WgpuTransfer`].

use super::transfer::{WgpuTarget, WgpuTransfer};
use super::{BufferPool, Gpu};
use crate::upload::InPlace;
use crate::upload::frame_queue::check_depth;
use crate::upload::region::{self, TextureInfo, staging_pitch};
use crate::upload::resource::{Source, Streamed};
use crate::upload::{
    CopyLayout, CopyPlan, Engine, EngineConfig, FrameQueue, FrameQueueConfig, FrameSlot, IfFull,
    ResourceStats, SourceLayout, StagingPolicy, StreamOptions, StreamedBuffer, TextureRegion,
    Upload, UploadError, UploadPriority,
};
use bytes::Bytes;
use std::sync::Arc;

/// The upload engine of a wgpu device.
pub type UploadEngine = Engine<WgpuTransfer>;

impl Engine<WgpuTransfer> {
    /// Starts an engine on `gpu`.
    pub fn new(gpu: Arc<Gpu>, config: EngineConfig) -> Result<Self, UploadError> {
        Self::with_backend(WgpuTransfer::new(gpu)?, config)
    }

    /// The engine's staging pool.
    pub fn staging_pool(&self) -> &BufferPool {
        self.backend().staging_pool()
    }

    /// Creates a streamed texture. Its ring (if any) is taken from the
    /// staging pool now (mapped on first use), sized for one layer of mip 0. Each upload lands in one
    /// submission, so the texture never shows half of one.
    pub fn create_texture(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
        policy: StagingPolicy,
    ) -> Result<StreamedTexture, UploadError> {
        self.create_texture_with(desc, policy.into())
    }

    /// Creates a streamed texture with more options.
    pub fn create_texture_with(
        &self,
        desc: &wgpu::TextureDescriptor<'_>,
        options: StreamOptions,
    ) -> Result<StreamedTexture, UploadError> {
        let mut desc = desc.clone();
        desc.usage |= wgpu::TextureUsages::COPY_DST;
        // Options are checked before anything is created.
        if options.rows_per_submit == Some(0) {
            return Err(UploadError::InvalidConfig(
                "rows_per_submit must be at least 1".into(),
            ));
        }
        let texture = self
            .backend()
            .gpu()
            .device()
            .create_texture(&desc)
            .map_err(|e| UploadError::Create(e.to_string()))?;
        let info = TextureInfo::of(&texture);
        let capacity = frame_staging_bytes(&info)?;
        let target = WgpuTarget::Texture {
            texture,
            info,
            rows_per_submit: options.rows_per_submit,
        };
        Ok(StreamedTexture {
            inner: self.streamed(target, options, capacity)?,
            info,
        })
    }

    /// Creates a streamed buffer; its staging buffers hold the whole buffer.
    pub fn create_buffer(
        &self,
        desc: &wgpu::BufferDescriptor<'_>,
        policy: StagingPolicy,
    ) -> Result<StreamedBuffer, UploadError> {
        self.create_buffer_with(desc, policy.into())
    }

    /// Creates a streamed buffer with more options. `rows_per_submit` is for
    /// textures: a buffer given one is an [`UploadError::InvalidConfig`].
    pub fn create_buffer_with(
        &self,
        desc: &wgpu::BufferDescriptor<'_>,
        options: StreamOptions,
    ) -> Result<StreamedBuffer, UploadError> {
        if options.rows_per_submit.is_some() {
            return Err(UploadError::InvalidConfig(
                "rows_per_submit applies to textures, not buffers".into(),
            ));
        }
        let mut desc = desc.clone();
        desc.usage |= wgpu::BufferUsages::COPY_DST;
        let buffer = self
            .backend()
            .gpu()
            .device()
            .create_buffer(&desc)
            .map_err(|e| UploadError::Create(e.to_string()))?;
        let capacity = buffer.size();
        Ok(StreamedBuffer {
            inner: self.streamed(WgpuTarget::Buffer(buffer), options, capacity)?,
        })
    }
}

/// Staging bytes of one layer of mip 0: what each ring slot holds.
fn frame_staging_bytes(info: &TextureInfo) -> Result<u64, UploadError> {
    let format = info.format;
    let block = format
        .block_copy_size(None)
        .ok_or(UploadError::UnsupportedFormat(format))?;
    let (bw, bh) = format.block_dimensions();
    let row = u64::from(info.size.width.div_ceil(bw)) * u64::from(block);
    let rows = u64::from(info.size.height.div_ceil(bh));
    Ok(staging_pitch(row) * rows)
}

/// A texture whose contents stream in through the engine. The texture keeps
/// its previous contents until an upload has landed completely.
///
/// Dropping it (or [`release`](Self::release)) cancels queued uploads, waits
/// for those in flight, and gives back its staging buffers.
pub struct StreamedTexture {
    pub(crate) inner: Streamed<WgpuTransfer>,
    info: TextureInfo,
}

impl StreamedTexture {
    /// The texture, for binding and sampling.
    pub fn texture(&self) -> &wgpu::Texture {
        match &self.inner.resource.target {
            WgpuTarget::Texture { texture, .. } => texture,
            WgpuTarget::Buffer(_) => unreachable!("a streamed texture holds a texture"),
        }
    }

    /// Checks a texture upload; shared by every upload method.
    pub fn layout(
        &self,
        region: TextureRegion,
        source: SourceLayout,
        len: u64,
    ) -> Result<CopyLayout, UploadError> {
        region::check_texture(&self.info, region, source, len)
    }

    /// Uploads `data` into `region`, waiting while this resource or the
    /// engine is at its in-flight bound. Returns once the upload is queued.
    pub fn upload(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> Result<Upload, UploadError> {
        self.send(data.into(), region, source, IfFull::Wait)
    }

    /// Like [`upload`](Self::upload), but fails with
    /// [`UploadError::WouldBlock`] instead of waiting.
    pub fn try_upload(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> Result<Upload, UploadError> {
        self.send(data.into(), region, source, IfFull::Refuse)
    }

    /// The async form of [`upload`](Self::upload): yields, instead of
    /// blocking the thread, while this resource or the engine is full.
    pub fn upload_async(
        &self,
        data: impl Into<Bytes>,
        region: TextureRegion,
        source: SourceLayout,
    ) -> crate::upload::Admit<impl FnMut() -> Result<Upload, UploadError> + Unpin + '_> {
        let data = data.into();
        crate::upload::Admit::new(Arc::clone(&self.inner.resource.core.room), move || {
            self.send(data.clone(), region, source, IfFull::Refuse)
        })
    }

    /// Uploads a whole frame: tightly packed data for all of mip 0, layer 0.
    pub fn upload_frame(&self, data: impl Into<Bytes>) -> Result<Upload, UploadError> {
        self.upload(
            data,
            TextureRegion::frame(self.texture().size()),
            SourceLayout::default(),
        )
    }

    fn send(
        &self,
        data: Bytes,
        region: TextureRegion,
        source: SourceLayout,
        if_full: IfFull,
    ) -> Result<Upload, UploadError> {
        let layout = self.layout(region, source, data.len() as u64)?;
        self.inner
            .submit(CopyPlan::Texture(layout), Source::Bytes(data), if_full)
    }

    /// Fills `region` in place: `fill` runs on a worker thread and writes the
    /// texels straight into mapped staging memory, one row of blocks every
    /// `layout.staging_pitch` bytes, so the data is never copied on the CPU.
    pub fn upload_with(
        &self,
        region: TextureRegion,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send + 'static,
        if_full: IfFull,
    ) -> Result<Upload, UploadError> {
        let layout = region::plan_texture(&self.info, region, SourceLayout::default())?;
        if self.inner.resource.policy == StagingPolicy::Synchronous {
            return Err(UploadError::InvalidConfig(
                "fill in place needs a staging policy other than Synchronous".into(),
            ));
        }
        let fill = Box::new(move |view: wgpu::WriteOnly<'_, [u8]>| fill(view, &layout));
        self.inner
            .submit(CopyPlan::Texture(layout), Source::Fill(fill), if_full)
    }

    /// Copies `region` from bytes already where the device reads them
    /// ([`InPlace`]: host memory imported as a buffer), laid out as
    /// staging would be: one row of blocks every
    /// [`staging_pitch`](CopyLayout::staging_pitch) bytes from the
    /// source's offset. No staging is taken and no byte is copied on the
    /// CPU; the source is held until the copy has landed.
    pub fn upload_in_place(
        &self,
        region: TextureRegion,
        source: InPlace,
        if_full: IfFull,
    ) -> Result<Upload, UploadError> {
        let layout = region::plan_texture(&self.info, region, SourceLayout::default())?;
        self.inner
            .submit(CopyPlan::Texture(layout), Source::InPlace(source), if_full)
    }

    /// The staging layout of `region`: where an [`InPlace`] source puts
    /// its rows.
    pub fn layout_of(&self, region: TextureRegion) -> Result<CopyLayout, UploadError> {
        region::plan_texture(&self.info, region, SourceLayout::default())
    }

    /// Cancels queued uploads, waits for those in flight, gives back the
    /// staging buffers. Uploads after this fail with [`UploadError::Released`].
    pub fn release(&self) {
        self.inner.release();
    }

    /// This texture's uploads and staging now.
    pub fn stats(&self) -> ResourceStats {
        self.inner.resource.stats()
    }
}

impl Drop for StreamedTexture {
    fn drop(&mut self) {
        self.inner.release();
    }
}

impl std::fmt::Debug for StreamedTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedTexture")
            .field("policy", &self.inner.resource.policy)
            .finish_non_exhaustive()
    }
}

impl StreamedBuffer<WgpuTransfer> {
    /// The buffer, for binding.
    pub fn buffer(&self) -> &wgpu::Buffer {
        match &self.inner.resource.target {
            WgpuTarget::Buffer(buffer) => buffer,
            WgpuTarget::Texture { .. } => unreachable!("a streamed buffer holds a buffer"),
        }
    }
}

impl FrameSlot for StreamedTexture {
    type Layout = CopyLayout;

    fn upload_frame(&self, data: Bytes) -> Result<Upload, UploadError> {
        StreamedTexture::upload_frame(self, data)
    }

    fn fill_frame(
        &self,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send + 'static,
    ) -> Result<Upload, UploadError> {
        let region = TextureRegion::frame(self.texture().size());
        self.upload_with(region, fill, IfFull::Wait)
    }

    fn copy_frame_in_place(&self, source: InPlace) -> Result<Upload, UploadError> {
        let region = TextureRegion::frame(self.texture().size());
        self.upload_in_place(region, source, IfFull::Wait)
    }
}

impl FrameQueue<StreamedTexture> {
    /// A queue of `config.depth` textures like `desc` on `engine`.
    pub fn new(
        engine: &UploadEngine,
        desc: &wgpu::TextureDescriptor<'_>,
        config: FrameQueueConfig,
    ) -> Result<Self, UploadError> {
        check_depth(config.depth)?;
        let options = StreamOptions {
            priority: UploadPriority::Normal,
            policy: StagingPolicy::Ring(config.staging_buffers),
            rows_per_submit: config.rows_per_submit,
        };
        let textures = (0..config.depth)
            .map(|_| engine.create_texture_with(desc, options))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_slots(textures, config.frame_duration)
    }

    /// The texture of a slot.
    pub fn texture(&self, slot: usize) -> &wgpu::Texture {
        self.slot(slot).texture()
    }
}
