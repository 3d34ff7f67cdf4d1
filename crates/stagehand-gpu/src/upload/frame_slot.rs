//! [`FrameSlot`]: what a [`FrameQueue`](super::FrameQueue) fills, one frame
//! at a time: a streamed buffer on any backend (a CUDA device buffer, a
//! wgpu storage buffer), or a streamed texture on wgpu
//! (`backend/wgpu/upload.rs`).

use super::IfFull;
use super::error::UploadError;
use super::future::Upload;
use super::streamed::StreamedBuffer;
use super::transfer::{InPlace, TransferBackend};
use bytes::Bytes;

/// A streamed resource that holds one whole frame.
pub trait FrameSlot: Send + Sync + 'static {
    /// How a frame lies in staging memory, handed to a fill closure: a
    /// [`CopyLayout`](super::CopyLayout) (row pitch and rows) for a texture, the frame's length
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

    /// Copies a whole frame from bytes already where the device reads them,
    /// laid out as staging would be ([`InPlace`]): no staging, no copy on
    /// the CPU. A slot whose device copies only from staging refuses it.
    fn copy_frame_in_place(&self, source: InPlace) -> Result<Upload, UploadError> {
        drop(source);
        Err(UploadError::InvalidConfig(
            "this frame slot copies only from staging".into(),
        ))
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
