//! Counted streams and events.

use super::{CudaError, Shared, check};
use crate::diag::{ObjectKind, Token};
use cudarc::driver::sys;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A stream handle the driver gave us. Driver handles may be used from any
/// thread once the context is current there, which every call here ensures.
struct RawStream(sys::CUstream);
// SAFETY: see `RawStream`: the driver's handles are not tied to a thread.
unsafe impl Send for RawStream {}
// SAFETY: as above; the driver serialises calls on one stream itself.
unsafe impl Sync for RawStream {}

struct StreamInner {
    raw: RawStream,
    /// Unique in the process, never 0.
    id: u64,
    cuda: Arc<Shared>,
    /// Un-counts the stream when dropped, after the destroy above.
    _token: Token,
}

/// Stream ids; 0 means "no stream".
static NEXT_STREAM_ID: AtomicU64 = AtomicU64::new(1);

impl Drop for StreamInner {
    fn drop(&mut self) {
        // Work still queued on the stream completes; the driver releases the
        // stream afterwards. An error here has nowhere to go.
        if let Ok(_bound) = self.cuda.bind() {
            // SAFETY: the handle came from cuStreamCreate and is destroyed
            // once, here, when the last clone is gone.
            let _ = unsafe { sys::cuStreamDestroy_v2(self.raw.0) };
        }
    }
}

/// A CUDA stream: work on it runs in order. Cheap to clone; destroyed with
/// its last clone (work already queued on it still completes).
#[derive(Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

impl Stream {
    pub(super) fn new(cuda: &Arc<Shared>) -> Result<Self, CudaError> {
        let _bound = cuda.bind()?;
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: the driver writes one handle through a valid pointer.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut raw, flags)
        })?;
        Ok(Self {
            inner: Arc::new(StreamInner {
                raw: RawStream(raw),
                id: NEXT_STREAM_ID.fetch_add(1, Ordering::Relaxed),
                cuda: Arc::clone(cuda),
                _token: cuda.tracker.register(ObjectKind::CudaStream, 0, None),
            }),
        })
    }

    /// The driver's handle, for launching kernels on this stream.
    pub fn raw(&self) -> sys::CUstream {
        self.inner.raw.0
    }

    /// Whether `other` is this stream.
    pub fn same(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A number no other stream of this process has (never 0).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Waits on the CPU for all work queued on the stream.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        let _bound = self.inner.cuda.bind()?;
        // SAFETY: a live stream handle.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.raw())
        })
    }

    /// Makes work queued on this stream from now on wait until `event`'s
    /// last recorded point has passed. The CPU does not wait.
    pub fn wait(&self, event: &Event) -> Result<(), CudaError> {
        let _bound = self.inner.cuda.bind()?;
        // SAFETY: live stream and event handles of the same context.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(self.raw(), event.raw.0, 0)
        })
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({:p})", self.raw())
    }
}

/// An event handle the driver gave us; see [`RawStream`].
struct RawEvent(sys::CUevent);
// SAFETY: as for `RawStream`.
unsafe impl Send for RawEvent {}
// SAFETY: as for `RawStream`.
unsafe impl Sync for RawEvent {}

/// A CUDA event: a point in a stream's work that other streams can wait for
/// and the CPU can test or wait on. A thread waiting on it sleeps.
pub struct Event {
    raw: RawEvent,
    cuda: Arc<Shared>,
    /// Un-counts the event when dropped, after the destroy.
    _token: Token,
}

impl Event {
    pub(super) fn new(cuda: &Arc<Shared>) -> Result<Self, CudaError> {
        let _bound = cuda.bind()?;
        let mut raw = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32
            | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: the driver writes one handle through a valid pointer.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags)
        })?;
        Ok(Self {
            raw: RawEvent(raw),
            cuda: Arc::clone(cuda),
            _token: cuda.tracker.register(ObjectKind::CudaEvent, 0, None),
        })
    }

    /// Marks the current end of `stream`'s queued work.
    pub fn record(&self, stream: &Stream) -> Result<(), CudaError> {
        let _bound = self.cuda.bind()?;
        // SAFETY: live event and stream handles of the same context.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.raw.0, stream.raw())
        })
    }

    /// Whether the work before the last record has finished (true if never
    /// recorded).
    pub fn is_done(&self) -> Result<bool, CudaError> {
        let _bound = self.cuda.bind()?;
        // SAFETY: a live event handle.
        match unsafe { sys::cuEventQuery(self.raw.0) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => check("cuEventQuery", code).map(|()| false),
        }
    }

    /// Waits on the CPU until the work before the last record has finished.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        let _bound = self.cuda.bind()?;
        // SAFETY: a live event handle.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.raw.0)
        })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Ok(_bound) = self.cuda.bind() {
            // SAFETY: the handle came from cuEventCreate and is destroyed
            // once, here.
            let _ = unsafe { sys::cuEventDestroy_v2(self.raw.0) };
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({:p})", self.raw.0)
    }
}
