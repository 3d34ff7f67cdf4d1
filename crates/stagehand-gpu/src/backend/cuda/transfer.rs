//! The upload engine's CUDA side ([`CudaTransfer`]): pinned staging from a
//! pool of page-locked memory, copies queued on a transfer stream of the
//! engine's own (after the work already queued on the destination's
//! stream), and each copy's end learnt from an event recorded after it.

use super::{Cuda, CudaError, DeviceBuffer, Event, PinnedMemory, Stream};
use crate::pool::{Pool, PoolConfig, Pooled};
use crate::upload::{CopyPlan, TransferBackend, UploadError};
use parking_lot::Mutex;
use std::sync::Arc;

/// Uploads to a CUDA device.
pub struct CudaTransfer {
    cuda: Cuda,
    /// The stream every upload's copy is queued on.
    stream: Stream,
    /// Orders the transfer stream after a destination's stream; used by one
    /// submission at a time.
    order: Mutex<Event>,
    pinned: Pool<PinnedMemory>,
    /// Events of landed copies, for the next ones.
    events: Mutex<Vec<Event>>,
}

/// A CUDA copy in flight: the event recorded after it, or nothing for a
/// copy that was synchronous.
pub struct CudaInFlight(Option<Event>);

fn device(e: CudaError) -> UploadError {
    UploadError::Device(e.to_string())
}

impl CudaTransfer {
    /// The transfer side of `cuda`: a stream and a pinned staging pool of
    /// its own.
    pub fn new(cuda: &Cuda) -> Result<Self, UploadError> {
        let pinned = Pool::new(
            PinnedMemory::new(cuda),
            PoolConfig::named("cuda pinned staging"),
        )?;
        Ok(Self {
            cuda: cuda.clone(),
            stream: cuda.new_stream().map_err(device)?,
            order: Mutex::new(cuda.new_event().map_err(device)?),
            pinned,
            events: Mutex::new(Vec::new()),
        })
    }

    /// The stream uploads are copied on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The pinned staging pool.
    pub fn pinned_pool(&self) -> &Pool<PinnedMemory> {
        &self.pinned
    }

    fn event(&self) -> Result<Event, UploadError> {
        match self.events.lock().pop() {
            Some(event) => Ok(event),
            None => self.cuda.new_event().map_err(device),
        }
    }

    /// Queues the copy of `len` bytes of `staging` to `dst` at `offset` on
    /// the transfer stream, after the work already queued on `dst`'s stream.
    fn queue_copy(
        &self,
        staging: &Pooled<PinnedMemory>,
        dst: &DeviceBuffer,
        offset: u64,
        len: u64,
    ) -> Result<(), UploadError> {
        {
            let order = self.order.lock();
            order.record(dst.stream()).map_err(device)?;
            self.stream.wait(&order).map_err(device)?;
        }
        dst.copy_from_pinned(offset, staging, len as usize, &self.stream)
            .map_err(device)
    }
}

impl TransferBackend for CudaTransfer {
    type Target = Arc<DeviceBuffer>;
    type Staging = Pooled<PinnedMemory>;
    type InFlight = CudaInFlight;

    fn check_bytes(
        &self,
        dst: &Arc<DeviceBuffer>,
        offset: u64,
        len: u64,
    ) -> Result<(), UploadError> {
        if len == 0 {
            return Err(UploadError::ZeroSized);
        }
        if offset.checked_add(len).is_none_or(|end| end > dst.len()) {
            return Err(UploadError::OutOfBounds {
                region: format!("bytes {offset}..{}", offset.saturating_add(len)),
                bounds: format!("a buffer of {} bytes", dst.len()),
            });
        }
        Ok(())
    }

    fn stage(&self, bytes: u64) -> Result<Self::Staging, UploadError> {
        Ok(self.pinned.take((), bytes)?)
    }

    fn write(
        &self,
        staging: &mut Self::Staging,
        len: u64,
        write: &mut dyn FnMut(wgpu::WriteOnly<'_, [u8]>),
    ) -> Result<(), UploadError> {
        let bytes = staging.as_mut_slice();
        let len = usize::try_from(len)
            .ok()
            .filter(|&n| n <= bytes.len())
            .ok_or_else(|| {
                UploadError::Device(format!("{len} bytes into a smaller staging buffer"))
            })?;
        write(wgpu::WriteOnly::from(&mut bytes[..len]));
        Ok(())
    }

    fn submit(
        &self,
        staging: &mut Self::Staging,
        dst: &Arc<DeviceBuffer>,
        plan: &CopyPlan,
    ) -> Result<CudaInFlight, UploadError> {
        let CopyPlan::Bytes { offset, len } = *plan else {
            return Err(UploadError::InvalidConfig(
                "CUDA uploads go to byte ranges of device buffers".into(),
            ));
        };
        // The event that will mark the copy's end exists before the copy is
        // queued: failing to make it afterwards would give the staging back
        // while the queued copy still reads it.
        let event = self.event()?;
        if let Err(e) = self.queue_copy(staging, dst, offset, len) {
            self.events.lock().push(event);
            return Err(e);
        }
        if let Err(e) = event.record(&self.stream) {
            // The copy is queued but nothing marks its end: wait for the
            // whole stream before the staging can go back.
            let _ = self.stream.synchronize();
            return Err(device(e));
        }
        Ok(CudaInFlight(Some(event)))
    }

    fn submit_direct(
        &self,
        dst: &Arc<DeviceBuffer>,
        plan: &CopyPlan,
        data: &[u8],
    ) -> Result<CudaInFlight, UploadError> {
        let CopyPlan::Bytes { offset, .. } = *plan else {
            return Err(UploadError::InvalidConfig(
                "CUDA uploads go to byte ranges of device buffers".into(),
            ));
        };
        dst.write(offset, data).map_err(device)?;
        Ok(CudaInFlight(None))
    }

    fn wait(&self, in_flight: CudaInFlight) -> Result<(), UploadError> {
        let Some(event) = in_flight.0 else {
            return Ok(());
        };
        match event.synchronize() {
            Ok(()) => {
                self.events.lock().push(event);
                Ok(())
            }
            Err(e) => {
                // Without the event, only the whole stream says the copy is
                // done.
                let _ = self.stream.synchronize();
                Err(device(e))
            }
        }
    }

    fn staging_held(&self) -> u64 {
        self.pinned.stats().held
    }

    fn trim_staging(&self) {
        self.pinned.trim();
    }

    fn end_staging_period(&self) {
        self.pinned.end_batch();
    }
}
