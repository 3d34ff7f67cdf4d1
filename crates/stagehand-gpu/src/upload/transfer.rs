//! [`TransferBackend`]: what the upload engine needs of a device, and
//! nothing more. The engine ([`Engine`](super::Engine)) is written once
//! against it, the way [`Pool`](crate::pool::Pool) is written once against
//! [`PoolBackend`](crate::pool::PoolBackend); wgpu and CUDA each implement
//! it in their backend module.

use super::error::UploadError;
use super::region::CopyLayout;
use std::any::Any;

/// Where one upload's bytes go within its resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyPlan {
    /// Rows of texel blocks into a region of a texture.
    Texture(CopyLayout),
    /// A byte range of a buffer.
    Bytes {
        /// First byte written.
        offset: u64,
        /// Bytes written.
        len: u64,
    },
}

impl CopyPlan {
    /// Bytes of data the copy moves.
    pub fn data_bytes(&self) -> u64 {
        match self {
            Self::Texture(l) => l.data_bytes(),
            Self::Bytes { len, .. } => *len,
        }
    }

    /// Bytes of staging the copy reads: the data, rows padded to the
    /// device's copy alignment.
    pub fn staging_bytes(&self) -> u64 {
        match self {
            Self::Texture(l) => l.staging_bytes(),
            Self::Bytes { len, .. } => *len,
        }
    }
}

/// An upload's bytes where they already are, in memory the device copies
/// from in place: host memory imported as a buffer
/// ([`Device::import_host_memory`](crate::Device::import_host_memory)),
/// the frame a decoder wrote. From `offset` they are laid out as the
/// upload's plan lays out staging (a texture's rows `staging_pitch`
/// bytes apart), so the device copies them into the resource with no
/// copy into staging first.
pub struct InPlace {
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) offset: u64,
    /// Kept until the copy has landed: what keeps the bytes unchanged
    /// and alive (the frame that holds them).
    _keep: Box<dyn Any + Send>,
}

impl InPlace {
    /// The bytes at `offset` of `buffer`, kept unchanged by `keep`, which
    /// the engine holds until the copy from them has landed.
    pub fn new(buffer: wgpu::Buffer, offset: u64, keep: impl Any + Send) -> Self {
        Self {
            buffer,
            offset,
            _keep: Box::new(keep),
        }
    }
}

impl std::fmt::Debug for InPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InPlace")
            .field("size", &self.buffer.size())
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

/// A device the upload engine streams bytes to: staging memory the CPU
/// writes, copies from it that the device runs in submission order, and a
/// way to learn when each copy is done.
///
/// The engine guarantees: a staging buffer is written by one call of
/// [`write`](Self::write) at a time and never while a copy from it is in
/// flight; [`submit`](Self::submit) is called by one thread at a time, in
/// the engine's order; each [`InFlight`](Self::InFlight) is waited on once,
/// by the engine's completion thread, in submission order.
pub trait TransferBackend: Send + Sync + Sized + 'static {
    /// A resource uploads land in: a texture or a buffer.
    type Target: Send + Sync + 'static;
    /// Host memory the device copies from.
    type Staging: Send + 'static;
    /// A submitted copy, until it is known to be done.
    type InFlight: Send + 'static;

    /// Checks a byte range of `target` before an upload to it is accepted:
    /// inside it, and aligned as the device needs.
    fn check_bytes(&self, target: &Self::Target, offset: u64, len: u64) -> Result<(), UploadError>;

    /// Staging of at least `bytes`, ready to be written, from the backend's
    /// staging pool; dropping it gives it back.
    fn stage(&self, bytes: u64) -> Result<Self::Staging, UploadError>;

    /// Lends bytes `0..len` of `staging` to `write` as one write-only slice
    /// (which the engine may split and fill from several threads).
    fn write(
        &self,
        staging: &mut Self::Staging,
        len: u64,
        write: &mut dyn FnMut(wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<(), UploadError>;

    /// Submits the copy of `plan` from `staging` into `target`, after
    /// everything submitted before it. The staging must not be written
    /// again until [`wait`](Self::wait) has returned `Ok`.
    fn submit(
        &self,
        staging: &mut Self::Staging,
        target: &Self::Target,
        plan: &CopyPlan,
    ) -> Result<Self::InFlight, UploadError>;

    /// Copies `data` (laid out as `plan` says of the source) without the
    /// engine's staging: the `Synchronous` policy, on the caller's thread.
    fn submit_direct(
        &self,
        target: &Self::Target,
        plan: &CopyPlan,
        data: &[u8],
    ) -> Result<Self::InFlight, UploadError>;

    /// Submits the copy of `plan` from bytes already in memory the device
    /// reads in place, after everything submitted before it. A backend
    /// that copies only from its own staging refuses it.
    fn submit_in_place(
        &self,
        source: &InPlace,
        target: &Self::Target,
        plan: &CopyPlan,
    ) -> Result<Self::InFlight, UploadError> {
        let _ = (source, target, plan);
        Err(UploadError::InvalidConfig(
            "this device copies only from staging of its own".into(),
        ))
    }

    /// Blocks until the copy has landed. After `Ok` the staging it read may
    /// be written again; after `Err` it is not used again.
    fn wait(&self, in_flight: Self::InFlight) -> Result<(), UploadError>;

    /// Bytes the staging pool holds (in use and idle).
    fn staging_held(&self) -> u64;

    /// Gives every idle staging buffer back to the device now.
    fn trim_staging(&self);

    /// Ends an idle period: staging nothing asked for since the last call
    /// goes back to the device.
    fn end_staging_period(&self);
}
