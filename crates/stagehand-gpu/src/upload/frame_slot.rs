//! [`FrameSlot`]: what a [`FrameQueue`](super::FrameQueue) fills, one frame
//! at a time. A streamed texture on wgpu, a streamed buffer on any backend
//! (a CUDA device buffer, a wgpu storage buffer).

use super::IfFull;
use super::error::UploadError;
use super::future::Upload;
use super::region::{CopyLayout, TextureRegion};
use super::streamed::{StreamedBuffer, StreamedTexture};
use super::transfer::TransferBackend;
use bytes::Bytes;

/// A streamed resource that holds one whole frame.
pub trait FrameSlot: Send + Sync + 'static {
    /// How a frame lies in staging memory, handed to a fill closure: a
    /// [`CopyLayout`] (row pitch and rows) for a texture, the frame's length
    /// in bytes for a buffer.
    type Layout;

    /// Uploads a whole frame of tightly packed bytes, waiting while the
    /// resource or the engine is at its in-flight bound.
    fn upload_frame(&self, data: Bytes) -> Result<Upload, UploadError>;

    /// Fills a whole frame in place: `fill` runs on an upload worker and
    /// writes straight into staging memory laid out as its second argument
    /// says.
    fn fill_frame(
        &self,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &Self::Layout) + Send + 'static,
    ) -> Result<Upload, UploadError>;
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
}

impl<T: TransferBackend> FrameSlot for StreamedBuffer<T> {
    type Layout = u64;

    /// Uploads `data` at offset 0; it may be shorter than the buffer.
    fn upload_frame(&self, data: Bytes) -> Result<Upload, UploadError> {
        self.upload(data, 0)
    }

    /// Fills the whole buffer.
    fn fill_frame(
        &self,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &u64) + Send + 'static,
    ) -> Result<Upload, UploadError> {
        let len = self.len();
        self.upload_with(0, len, move |view| fill(view, &len), IfFull::Wait)
    }
}
