//! Device and pinned host memory, and the pool over them.
//!
//! # Which allocator, and why
//!
//! The device pool allocates with plain `cuMemAlloc` and frees with
//! `cuMemFree`, even where the device supports stream-ordered pools
//! (`cuMemAllocAsync`, reported as [`CudaInfo::memory_pools`]). The driver's
//! stream-ordered pool is itself a cache: stacking ours on it would keep
//! freed memory in two places, and [`Pool::trim`] could no longer hand
//! memory back to the device, which is what out-of-memory recovery and a
//! leak check by `cuMemGetInfo` both rely on. The stream ordering that
//! `cuMemAllocAsync` gives is kept here by [`DeviceBuffer`] (below).
//!
//! # Stream-ordered reuse
//!
//! A [`DeviceBuffer`] belongs to one stream. Dropping it hands the block
//! back at once, without waiting for the GPU: work queued on that stream
//! before the drop runs before anything queued on it later, so the next
//! user on the same stream may have it immediately. A user on another
//! stream gets it only after the driver is told to order the two: the block
//! records an event on the stream it last belonged to and the new stream
//! waits for it (on the GPU; the CPU does not wait). The same happens when a
//! buffer [moves](DeviceBuffer::move_to) to another stream.
//!
//! The rule for users, as on wgpu: queue every use of a buffer on its
//! stream before dropping it.
//!
//! [`CudaInfo::memory_pools`]: super::CudaInfo::memory_pools

use super::{Cuda, CudaError, Event, Shared, Stream, check};
use crate::diag::{ObjectKind, Token};
use crate::pool::{AllocError, Pool, PoolBackend, PoolConfig, PoolError, Pooled};
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest single allocation we pass to the driver.
const MAX_BYTES: u64 = isize::MAX as u64;

/// Where a block was last used, and the event that orders reuse elsewhere.
#[derive(Default)]
struct LastUse {
    stream: Option<Stream>,
    event: Option<Event>,
}

/// One `cuMemAlloc` allocation, freed with `cuMemFree` when dropped.
pub struct DeviceBlock {
    ptr: sys::CUdeviceptr,
    bytes: u64,
    /// The id of `last.stream` (0: none), read without the lock on the hot
    /// path: reuse on the same stream.
    last_id: AtomicU64,
    last: Mutex<LastUse>,
    cuda: Arc<Shared>,
    /// Un-counts the allocation when dropped, after the free.
    _token: Token,
}

impl DeviceBlock {
    pub(super) fn allocate(cuda: &Arc<Shared>, bytes: u64) -> Result<Self, CudaError> {
        if bytes == 0 || bytes > MAX_BYTES {
            return Err(CudaError::Invalid(format!(
                "a device allocation of {bytes} bytes"
            )));
        }
        let _bound = cuda.bind()?;
        let mut ptr = 0;
        // SAFETY: the driver writes one device pointer through a valid
        // pointer; the length is checked above.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut ptr, bytes as usize)
        })?;
        Ok(Self {
            ptr,
            bytes,
            last_id: AtomicU64::new(0),
            last: Mutex::new(LastUse::default()),
            cuda: Arc::clone(cuda),
            _token: cuda
                .tracker
                .register(ObjectKind::CudaDeviceMemory, bytes, None),
        })
    }

    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Bytes allocated.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Orders this block's use on `stream` after its last use elsewhere, and
    /// makes `stream` its stream.
    fn hand_to(&self, stream: &Stream) -> Result<(), CudaError> {
        // Only the block's one holder calls this, so the id cannot change
        // between this check and the lock below.
        if self.last_id.load(Ordering::Acquire) == stream.id() {
            return Ok(());
        }
        let mut guard = self.last.lock();
        let last = &mut *guard;
        match &last.stream {
            // The hot path: reuse on the same stream costs nothing more.
            Some(previous) if previous.same(stream) => return Ok(()),
            Some(previous) => {
                let event = match &mut last.event {
                    Some(event) => event,
                    empty => empty.insert(Event::new(&self.cuda)?),
                };
                event.record(previous)?;
                stream.wait(event)?;
            }
            None => {}
        }
        last.stream = Some(stream.clone());
        self.last_id.store(stream.id(), Ordering::Release);
        Ok(())
    }
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        let last = self.last.get_mut();
        // Free only once the last user's work is done with it.
        if let Some(stream) = last.stream.take() {
            let _ = stream.synchronize();
        }
        last.event = None;
        if let Ok(_bound) = self.cuda.bind() {
            // SAFETY: the pointer came from cuMemAlloc and is freed once,
            // here; no queued work uses it (synchronised above).
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

impl fmt::Debug for DeviceBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBlock({:#x}, {} bytes)", self.ptr, self.bytes)
    }
}

/// The pool backend over device memory. All device memory stands in for
/// all other, so the key is `()`; requests round up to capacity classes.
#[derive(Clone, Debug)]
pub struct DeviceMemory {
    cuda: Cuda,
}

fn alloc_error(e: CudaError) -> AllocError {
    match e {
        CudaError::OutOfMemory { .. } => AllocError::OutOfMemory,
        CudaError::Invalid(m) => AllocError::Invalid(m),
        other => AllocError::Device(other.to_string()),
    }
}

fn check_len(capacity: u64) -> Result<(), AllocError> {
    if capacity > MAX_BYTES {
        return Err(AllocError::Invalid(format!(
            "{capacity} bytes is more than one allocation can hold"
        )));
    }
    Ok(())
}

impl PoolBackend for DeviceMemory {
    type Key = ();
    type Block = DeviceBlock;
    const CLASSES: bool = true;

    /// Only the length's range is checked: a request larger than the device
    /// reaches the driver and comes back as out-of-memory, as it would
    /// from `cuMemAlloc`.
    fn check(&self, _key: &(), capacity: u64) -> Result<(), AllocError> {
        check_len(capacity)
    }

    fn allocate(&self, _key: &(), capacity: u64) -> Result<DeviceBlock, AllocError> {
        self.cuda.alloc_device(capacity).map_err(alloc_error)
    }

    fn free(&self, _key: &(), block: DeviceBlock) {
        drop(block);
    }
}

/// A caching pool of device memory with stream-ordered reuse (see the
/// [module](self) notes).
pub struct DevicePool {
    pool: Pool<DeviceMemory>,
}

impl DevicePool {
    /// A pool over `cuda`'s device memory.
    pub fn new(cuda: &Cuda, config: PoolConfig) -> Result<Self, PoolError> {
        let backend = DeviceMemory { cuda: cuda.clone() };
        Ok(Self {
            pool: Pool::new(backend, config)?,
        })
    }

    /// Takes at least `len` bytes for work on `stream`. A block last used
    /// on another stream is ordered after that use on the GPU.
    ///
    /// Errors as [`Pool::take`]: zero length is
    /// [`PoolError::InvalidRequest`]; more than the device can give is
    /// [`PoolError::OutOfMemory`] after idle blocks were freed and the
    /// allocation retried.
    pub fn take(&self, len: u64, stream: &Stream) -> Result<DeviceBuffer, PoolError> {
        let block = self.pool.take((), len)?;
        block
            .hand_to(stream)
            .map_err(|e| PoolError::Device(e.to_string()))?;
        Ok(DeviceBuffer {
            block,
            stream: stream.clone(),
        })
    }

    /// The pool itself: stats, trim, batches and budget.
    pub fn pool(&self) -> &Pool<DeviceMemory> {
        &self.pool
    }
}

impl fmt::Debug for DevicePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pool.fmt(f)
    }
}

/// Device memory on loan from a [`DevicePool`], for work on one stream.
/// Goes back to the pool when dropped.
pub struct DeviceBuffer {
    block: Pooled<DeviceMemory>,
    stream: Stream,
}

impl DeviceBuffer {
    /// The device address, for kernels and copies.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.block.ptr()
    }

    /// Bytes asked for.
    pub fn len(&self) -> u64 {
        self.block.requested()
    }

    /// Whether it holds no bytes (never, for a buffer from a pool).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the block holds (the request rounded up to its class).
    pub fn capacity(&self) -> u64 {
        self.block.capacity()
    }

    /// The stream its work is queued on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Moves it to `stream`: work queued there from now on runs after
    /// everything queued on its old stream so far.
    pub fn move_to(&mut self, stream: &Stream) -> Result<(), CudaError> {
        self.block.hand_to(stream)?;
        self.stream = stream.clone();
        Ok(())
    }

    fn range(&self, offset: u64, len: usize) -> Result<sys::CUdeviceptr, CudaError> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.len() => Ok(self.ptr() + offset),
            _ => Err(CudaError::Invalid(format!(
                "bytes {offset}..{offset}+{len} are outside a buffer of {} bytes",
                self.len()
            ))),
        }
    }

    /// Copies `data` to `offset` on the buffer's stream (after the work
    /// queued there) and waits until it has landed. For set-up and checks;
    /// uploads that must not block go through the
    /// [CUDA upload engine](crate::upload::cuda).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), CudaError> {
        let dst = self.range(offset, data.len())?;
        let _bound = self.block.cuda.bind()?;
        // SAFETY: `dst..dst+len` lies in this live allocation (checked); the
        // source slice stays borrowed until the stream has passed the copy
        // (synchronised below).
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, data.as_ptr().cast(), data.len(), self.stream.raw())
        })?;
        self.stream.synchronize()
    }

    /// As [`write`](Self::write), from pinned memory: the copy runs at full
    /// bus speed. Copies the first `len` bytes of `src`.
    pub fn write_pinned(
        &self,
        offset: u64,
        src: &PinnedBlock,
        len: usize,
    ) -> Result<(), CudaError> {
        self.copy_from_pinned(offset, src, len, &self.stream)?;
        self.stream.synchronize()
    }

    /// Copies bytes from `offset` into `out` on the buffer's stream (after
    /// the work queued there) and waits for them.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), CudaError> {
        let src = self.range(offset, out.len())?;
        let _bound = self.block.cuda.bind()?;
        // SAFETY: `src..src+len` lies in this live allocation (checked) and
        // `out` stays exclusively borrowed until the stream has passed the
        // copy (synchronised below).
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(out.as_mut_ptr().cast(), src, out.len(), self.stream.raw())
        })?;
        self.stream.synchronize()
    }

    /// Queues a copy of the first `len` bytes of `src` to `offset` on
    /// `stream`, and returns at once.
    ///
    /// Only for the upload engine, which keeps both sides safe: it holds the
    /// destination (an `Arc`) and the pinned slot until an event recorded
    /// after the copy has passed, so neither is reused or freed under it.
    pub(crate) fn copy_from_pinned(
        &self,
        offset: u64,
        src: &PinnedBlock,
        len: usize,
        stream: &Stream,
    ) -> Result<(), CudaError> {
        let dst = self.range(offset, len)?;
        if len > src.len() {
            return Err(CudaError::Invalid(format!(
                "{len} bytes from a pinned buffer of {}",
                src.len()
            )));
        }
        let _bound = self.block.cuda.bind()?;
        // SAFETY: both ranges are in live allocations (checked); the caller
        // keeps the pinned source alive and unchanged until the copy is done.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.ptr.as_ptr().cast(), len, stream.raw())
        })
    }
}

impl fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr()))
            .field("len", &self.len())
            .field("stream", &self.stream)
            .finish()
    }
}

/// Page-locked host memory from `cuMemHostAlloc`, zeroed when allocated and
/// freed with `cuMemFreeHost` when dropped. The device copies from it
/// asynchronously, at full bus speed.
pub struct PinnedBlock {
    ptr: NonNull<u8>,
    bytes: usize,
    cuda: Arc<Shared>,
    /// Un-counts the allocation when dropped, after the free.
    _token: Token,
}

// SAFETY: the block owns its allocation; `&self` gives only reads and
// `&mut self` the only writes, as for a `Box<[u8]>`.
unsafe impl Send for PinnedBlock {}
// SAFETY: as above.
unsafe impl Sync for PinnedBlock {}

impl PinnedBlock {
    pub(super) fn allocate(cuda: &Arc<Shared>, bytes: u64) -> Result<Self, CudaError> {
        if bytes == 0 || bytes > MAX_BYTES {
            return Err(CudaError::Invalid(format!(
                "a pinned allocation of {bytes} bytes"
            )));
        }
        let _bound = cuda.bind()?;
        let mut raw = std::ptr::null_mut();
        // Plain page-locked memory: write-combined memory would make the
        // CPU's copies in faster only for streaming stores, and reads of it
        // (a check reading staging back) very slow.
        // SAFETY: the driver writes one host pointer through a valid pointer.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut raw, bytes as usize, 0)
        })?;
        let Some(ptr) = NonNull::new(raw.cast::<u8>()) else {
            return Err(CudaError::Driver {
                call: "cuMemHostAlloc",
                code: "null pointer".into(),
            });
        };
        // SAFETY: the driver gave us `bytes` writable bytes at `ptr`.
        unsafe { ptr.as_ptr().write_bytes(0, bytes as usize) };
        Ok(Self {
            ptr,
            bytes: bytes as usize,
            cuda: Arc::clone(cuda),
            _token: cuda
                .tracker
                .register(ObjectKind::CudaPinnedMemory, bytes, None),
        })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether it holds no bytes (never).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Its bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `bytes` initialised bytes at `ptr`, owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.bytes) }
    }

    /// Its bytes, to write. The device must not be copying from it: wait for
    /// the event recorded after the last copy first.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes this the only borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.bytes) }
    }
}

impl Drop for PinnedBlock {
    fn drop(&mut self) {
        if let Ok(_bound) = self.cuda.bind() {
            // SAFETY: the pointer came from cuMemHostAlloc and is freed once,
            // here; its owners wait for copies from it before dropping it.
            let _ = unsafe { sys::cuMemFreeHost(self.ptr.as_ptr().cast()) };
        }
    }
}

impl fmt::Debug for PinnedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedBlock({:p}, {} bytes)", self.ptr, self.bytes)
    }
}

/// The pool backend over pinned host memory; the key is `()`.
#[derive(Clone, Debug)]
pub struct PinnedMemory {
    cuda: Cuda,
}

impl PinnedMemory {
    /// Pinned host memory of `cuda`'s context.
    pub fn new(cuda: &Cuda) -> Self {
        Self { cuda: cuda.clone() }
    }
}

impl PoolBackend for PinnedMemory {
    type Key = ();
    type Block = PinnedBlock;
    const CLASSES: bool = true;

    fn check(&self, _key: &(), capacity: u64) -> Result<(), AllocError> {
        check_len(capacity)
    }

    fn allocate(&self, _key: &(), capacity: u64) -> Result<PinnedBlock, AllocError> {
        self.cuda.alloc_pinned(capacity).map_err(alloc_error)
    }

    fn free(&self, _key: &(), block: PinnedBlock) {
        drop(block);
    }
}
