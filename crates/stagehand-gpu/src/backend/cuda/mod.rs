//! CUDA through the driver API, loaded at run time (feature `cuda`).
//!
//! Building needs no CUDA toolkit: `libcuda` is opened when [`Cuda::open`]
//! runs. On a machine without it, `open` returns [`CudaError::NoDriver`];
//! it checks for the library before making any call that would otherwise
//! panic, and catches a panic from the loader (an entry point missing from
//! an old driver) as [`CudaError::Panicked`].
//!
//! What is here:
//! - [`Cuda`]: one device's primary context; its context, every device
//!   allocation, pinned buffer, stream and event made through it are counted
//!   in a [`Tracker`] (its own, or one shared with a wgpu context), so
//!   [`check_leaks`](crate::diag::check_leaks) and the report see them;
//! - [`Stream`] and [`Event`], counted;
//! - [`DevicePool`]: the [pool](crate::pool) over `cuMemAlloc` /
//!   `cuMemFree`, with stream-ordered reuse ([`DeviceBuffer`]);
//! - [`PinnedMemory`]: page-locked host memory for the same pool type, which
//!   the [CUDA upload engine](crate::upload::cuda) stages through.
//!
//! Every unsafe call into the driver lives in this module and its children.

mod handles;
pub mod memory;
mod transfer;
pub(crate) mod upload;

pub use crate::diag::sections::cuda::{CudaCounts, CudaInfo};
pub use handles::{Event, Stream};
pub use memory::{DeviceBlock, DeviceBuffer, DeviceMemory, DevicePool, PinnedBlock, PinnedMemory};
pub use transfer::{CudaInFlight, CudaTransfer};

use crate::diag::{ObjectKind, Token, Tracker};
use cudarc::driver::{CudaContext, DriverError, sys};
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Why a CUDA call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// `libcuda` could not be loaded: no NVIDIA driver on this machine.
    #[error(
        "no CUDA driver: libcuda.so could not be loaded (install the NVIDIA driver, or add its folder to LD_LIBRARY_PATH)"
    )]
    NoDriver,
    /// The driver is there but the device asked for is not.
    #[error("no CUDA device {ordinal}: the driver sees {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices the driver sees.
        count: usize,
    },
    /// The device (or pinned host memory) is out of memory.
    #[error("CUDA out of memory in {call}")]
    OutOfMemory {
        /// The driver call that failed.
        call: &'static str,
    },
    /// Any other driver error.
    #[error("CUDA call {call} failed: {code}")]
    Driver {
        /// The driver call that failed.
        call: &'static str,
        /// The driver's error code.
        code: String,
    },
    /// The driver library panicked inside a call (for example, an entry point
    /// this driver lacks); the call did not happen.
    #[error("the CUDA driver library failed in {call}: {message}")]
    Panicked {
        /// The call it failed in.
        call: &'static str,
        /// The panic's message.
        message: String,
    },
    /// A request that can never succeed (a length or offset out of range).
    #[error("invalid CUDA request: {0}")]
    Invalid(String),
}

impl CudaError {
    /// Whether freeing memory might let the call succeed.
    pub fn is_oom(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }
}

/// Turns a driver result into ours. Never formats through the driver (its
/// error strings need the library), only the code's name.
pub(crate) fn check(call: &'static str, result: sys::CUresult) -> Result<(), CudaError> {
    match result {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        code => Err(from_code(call, code)),
    }
}

fn from_code(call: &'static str, code: sys::CUresult) -> CudaError {
    match code {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => CudaError::OutOfMemory { call },
        code => CudaError::Driver {
            call,
            code: format!("{code:?}"),
        },
    }
}

fn from_driver(call: &'static str) -> impl Fn(DriverError) -> CudaError {
    move |e| from_code(call, e.0)
}

/// Runs `f`, turning a panic inside the driver library into an error.
fn guarded<T>(call: &'static str, f: impl FnOnce() -> T) -> Result<T, CudaError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "unknown panic".into());
        CudaError::Panicked { call, message }
    })
}

/// Whether `libcuda` can be loaded. Never panics.
pub fn driver_present() -> bool {
    // SAFETY: this only tries to open the library by name; it calls nothing
    // in it.
    unsafe { sys::is_culib_present() }
}

/// What every CUDA object made through one [`Cuda`] shares: the context
/// (kept alive until the last of them is gone) and the tracker that counts
/// them.
pub(crate) struct Shared {
    /// Taken out only by `drop`.
    ctx: ManuallyDrop<Arc<CudaContext>>,
    tracker: Arc<Tracker>,
    info: CudaInfo,
    /// Counts the context; un-counts it after `drop` released it.
    _token: Token,
}

impl Drop for Shared {
    /// Releases the context (which makes it current first) and puts back the
    /// thread's previous context.
    fn drop(&mut self) {
        let restore = Restore::current();
        // SAFETY: `ctx` is taken once, here, and not used afterwards.
        drop(unsafe { ManuallyDrop::take(&mut self.ctx) });
        drop(restore);
    }
}

impl Shared {
    /// Makes the context current on this thread until the guard drops, then
    /// puts back whatever was current before: a caller's own context (another
    /// device, a non-primary context) is never left switched.
    pub(crate) fn bind(&self) -> Result<Bound, CudaError> {
        Bound::to(self.ctx.cu_ctx())
    }

    /// Runs one of the context's own methods (which make it current and
    /// leave it so) under a [`Bound`] guard.
    fn with_ctx<T>(
        &self,
        call: &'static str,
        f: impl FnOnce(&CudaContext) -> Result<T, DriverError>,
    ) -> Result<T, CudaError> {
        let _bound = self.bind()?;
        f(&self.ctx).map_err(from_driver(call))
    }
}

/// The context made current by [`Shared::bind`]; restores the previous one.
pub(crate) struct Bound {
    previous: Option<sys::CUcontext>,
}

impl Bound {
    fn to(ctx: sys::CUcontext) -> Result<Self, CudaError> {
        let mut current = std::ptr::null_mut();
        // SAFETY: the driver writes one handle through a valid pointer.
        check("cuCtxGetCurrent", unsafe {
            sys::cuCtxGetCurrent(&mut current)
        })?;
        if current == ctx {
            return Ok(Self { previous: None });
        }
        // SAFETY: `ctx` is a live context: its owner outlives every guard.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
        Ok(Self {
            previous: Some(current),
        })
    }
}

/// Puts back, when dropped, the context current when it was made; for the
/// context's own open and close, which make it current and leave it so.
struct Restore {
    saved: sys::CUcontext,
}

impl Restore {
    fn current() -> Result<Self, CudaError> {
        let mut saved = std::ptr::null_mut();
        // SAFETY: the driver writes one handle through a valid pointer.
        check("cuCtxGetCurrent", unsafe {
            sys::cuCtxGetCurrent(&mut saved)
        })?;
        Ok(Self { saved })
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let mut now = std::ptr::null_mut();
        // SAFETY: as in `current`; then `saved` was current on this thread
        // (or null, which unbinds), so setting it back is what the caller had.
        unsafe {
            if sys::cuCtxGetCurrent(&mut now) == sys::CUresult::CUDA_SUCCESS && now != self.saved {
                let _ = sys::cuCtxSetCurrent(self.saved);
            }
        }
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: `previous` was current on this thread a moment ago (or
            // null, which unbinds); putting it back is what the caller had.
            let _ = unsafe { sys::cuCtxSetCurrent(previous) };
        }
    }
}

/// One CUDA device, opened on its primary context. Cheap to clone.
#[derive(Clone)]
pub struct Cuda {
    shared: Arc<Shared>,
}

impl Cuda {
    /// Opens device `ordinal`.
    ///
    /// Errors: [`CudaError::NoDriver`] without `libcuda`,
    /// [`CudaError::NoDevice`] when the ordinal is out of range, otherwise
    /// the driver's error.
    pub fn open(ordinal: usize) -> Result<Self, CudaError> {
        Self::open_tracked(ordinal, Tracker::new())
    }

    /// Opens device `ordinal`, counting its objects (context, streams,
    /// events, device and pinned memory) in `tracker`: pass a wgpu
    /// context's tracker to see both backends in one report and one
    /// [`check_leaks`](crate::diag::check_leaks). Errors as [`Cuda::open`].
    pub fn open_tracked(ordinal: usize, tracker: Arc<Tracker>) -> Result<Self, CudaError> {
        if !driver_present() {
            return Err(CudaError::NoDriver);
        }
        let count = guarded("cuDeviceGetCount", CudaContext::device_count)?
            .map_err(from_driver("cuDeviceGetCount"))?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        // Opening makes the context current on this thread; put back what
        // the caller had.
        let _restore = Restore::current()?;
        let ctx = guarded("cuDevicePrimaryCtxRetain", || CudaContext::new(ordinal))?
            .map_err(from_driver("cuDevicePrimaryCtxRetain"))?;
        let info = guarded("cuDeviceGetAttribute", || describe(&ctx, ordinal))??;
        let shared = Shared {
            ctx: ManuallyDrop::new(ctx),
            _token: tracker.register(ObjectKind::CudaContext, 0, None),
            tracker,
            info,
        };
        Ok(Self {
            shared: Arc::new(shared),
        })
    }

    /// What the device is.
    pub fn info(&self) -> &CudaInfo {
        &self.shared.info
    }

    /// Free and total device memory now, bytes (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(u64, u64), CudaError> {
        let (free, total) = self
            .shared
            .with_ctx("cuMemGetInfo", CudaContext::mem_get_info)?;
        Ok((free as u64, total as u64))
    }

    /// The tracker this device's objects are counted in.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.shared.tracker
    }

    /// Live CUDA objects and bytes in this device's tracker (with those of
    /// any other device opened on the same tracker).
    pub fn counts(&self) -> CudaCounts {
        CudaCounts::of(&self.shared.tracker)
    }

    /// A new non-blocking stream (it does not wait for the legacy default
    /// stream).
    pub fn new_stream(&self) -> Result<Stream, CudaError> {
        Stream::new(&self.shared)
    }

    /// A new event, for ordering streams and waiting on the CPU (the
    /// waiting thread sleeps rather than spins).
    pub fn new_event(&self) -> Result<Event, CudaError> {
        Event::new(&self.shared)
    }

    /// One plain `cuMemAlloc` of `bytes`, freed with `cuMemFree` when
    /// dropped. The pool calls this on a miss; it is public for comparing
    /// against the pool.
    pub fn alloc_device(&self, bytes: u64) -> Result<DeviceBlock, CudaError> {
        DeviceBlock::allocate(&self.shared, bytes)
    }

    /// Page-locked host memory, `bytes` long and zeroed, freed when dropped.
    pub fn alloc_pinned(&self, bytes: u64) -> Result<PinnedBlock, CudaError> {
        PinnedBlock::allocate(&self.shared, bytes)
    }

    /// Waits for all work on the device.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.shared
            .with_ctx("cuCtxSynchronize", CudaContext::synchronize)
    }

    /// The `cuda` report section, with the pools and engine given.
    pub fn section(
        &self,
        pools: Vec<crate::pool::PoolStats>,
        uploads: Option<crate::upload::UploadStats>,
    ) -> crate::diag::sections::CudaSection {
        let memory = self.memory_info().ok();
        crate::diag::sections::CudaSection::available(
            self.info().clone(),
            memory,
            self.counts(),
            pools,
            uploads,
        )
    }
}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cuda")
            .field("info", &self.shared.info)
            .finish_non_exhaustive()
    }
}

fn describe(ctx: &Arc<CudaContext>, ordinal: usize) -> Result<CudaInfo, CudaError> {
    let name = ctx.name().map_err(from_driver("cuDeviceGetName"))?;
    let compute_capability = ctx
        .compute_capability()
        .map_err(from_driver("cuDeviceGetAttribute"))?;
    let total_memory = ctx.total_mem().map_err(from_driver("cuDeviceTotalMem"))? as u64;
    let mut driver_version = 0;
    // SAFETY: the driver writes one int through a valid pointer.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut driver_version)
    })?;
    Ok(CudaInfo {
        ordinal,
        name,
        compute_capability,
        driver_version,
        total_memory,
        memory_pools: ctx.has_async_alloc(),
    })
}
