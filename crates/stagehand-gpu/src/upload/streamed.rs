//! [`StreamedBuffer`]: a buffer streamed through the engine, on any
//! backend. The backends add their constructors and accessors
//! (`backend/wgpu/upload.rs`, `backend/cuda/upload.rs`).

use super::admission::IfFull;
use super::error::UploadError;
use super::future::Upload;
use super::resource::{ResourceStats, Source, StagingPolicy, Streamed};
use super::transfer::{CopyPlan, TransferBackend};
use crate::backend::wgpu::WgpuTransfer;
use bytes::Bytes;
use std::sync::Arc;

/// A buffer whose contents stream in through the engine, on any backend
/// (wgpu when no backend is named).
///
/// Dropping it (or [`release`](Self::release)) cancels queued uploads, waits
/// for those in flight, and gives back its staging buffers.
pub struct StreamedBuffer<T: TransferBackend = WgpuTransfer> {
    pub(crate) inner: Streamed<T>,
}

impl<T: TransferBackend> StreamedBuffer<T> {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.inner.resource.staging_capacity
    }

    /// Whether it holds no bytes (then every upload to it is refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Uploads `data` at byte `offset`, waiting while at the in-flight bound.
    pub fn upload(&self, data: impl Into<Bytes>, offset: u64) -> Result<Upload, UploadError> {
        self.send(data.into(), offset, IfFull::Wait)
    }

    /// Like [`upload`](Self::upload), but fails with
    /// [`UploadError::WouldBlock`] instead of waiting.
    pub fn try_upload(&self, data: impl Into<Bytes>, offset: u64) -> Result<Upload, UploadError> {
        self.send(data.into(), offset, IfFull::Refuse)
    }

    /// The async form of [`upload`](Self::upload): yields, instead of
    /// blocking the thread, while this resource or the engine is full.
    pub fn upload_async(
        &self,
        data: impl Into<Bytes>,
        offset: u64,
    ) -> super::Admit<impl FnMut() -> Result<Upload, UploadError> + Unpin + '_> {
        let data = data.into();
        super::Admit::new(Arc::clone(&self.inner.resource.core.room), move || {
            self.send(data.clone(), offset, IfFull::Refuse)
        })
    }

    /// Fills bytes `offset..offset + len` in place: `fill` runs on a worker
    /// and writes straight into staging memory (mapped, or pinned on CUDA).
    pub fn upload_with(
        &self,
        offset: u64,
        len: u64,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>) + Send + 'static,
        if_full: IfFull,
    ) -> Result<Upload, UploadError> {
        let resource = &self.inner.resource;
        resource
            .core
            .backend
            .check_bytes(&resource.target, offset, len)?;
        if resource.policy == StagingPolicy::Synchronous {
            return Err(UploadError::InvalidConfig(
                "fill in place needs a staging policy other than Synchronous".into(),
            ));
        }
        self.inner.submit(
            CopyPlan::Bytes { offset, len },
            Source::Fill(Box::new(fill)),
            if_full,
        )
    }

    fn send(&self, data: Bytes, offset: u64, if_full: IfFull) -> Result<Upload, UploadError> {
        let len = data.len() as u64;
        let resource = &self.inner.resource;
        resource
            .core
            .backend
            .check_bytes(&resource.target, offset, len)?;
        self.inner.submit(
            CopyPlan::Bytes { offset, len },
            Source::Bytes(data),
            if_full,
        )
    }

    /// Cancels queued uploads, waits for those in flight, gives back the
    /// staging buffers. Uploads after this fail with [`UploadError::Released`].
    pub fn release(&self) {
        self.inner.release();
    }

    /// This buffer's uploads and staging now.
    pub fn stats(&self) -> ResourceStats {
        self.inner.resource.stats()
    }
}

impl<T: TransferBackend> Drop for StreamedBuffer<T> {
    fn drop(&mut self) {
        self.inner.release();
    }
}

impl<T: TransferBackend> std::fmt::Debug for StreamedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedBuffer")
            .field("policy", &self.inner.resource.policy)
            .finish_non_exhaustive()
    }
}
