//! `UploadEngine`, its streamed textures, and `Upload`: the future each
//! upload returns (`done()`, `result()`, `add_done_callback()`, `await`).
//!
//! An upload reads the caller's array in place: the engine's worker copies
//! straight from the Python buffer into staging, with no copy on the
//! Python side. The buffer is held until the upload has ended (do not
//! write into the array before), and let go on stagehand's Python thread,
//! so a worker never waits for the interpreter.

use crate::errors;
use crate::gpu::{Gpu, json_to_py};
use crate::python_thread::{call_later, run_later};
use bytes::Bytes;
use parking_lot::Mutex;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTimeoutError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stagehand_gpu::Gpu as RustGpu;
use stagehand_gpu::backend::wgpu::names;
use stagehand_gpu::upload::{
    self as up, EngineConfig, SourceLayout, StagingPolicy, TextureRegion, ThreadPriority,
    UploadStatus,
};
use std::sync::Arc;
use std::time::Duration;

/// The upload engine of a GPU: transfer workers that copy uploads into
/// staging and submit them, so the caller never waits for a copy.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct UploadEngine {
    gpu: Arc<RustGpu>,
    inner: Mutex<Option<Arc<up::UploadEngine>>>,
}

impl UploadEngine {
    fn engine(&self) -> PyResult<Arc<up::UploadEngine>> {
        self.inner
            .lock()
            .clone()
            .ok_or_else(|| errors::raise("ClosedError", "the upload engine is closed"))
    }
}

#[pymethods]
impl UploadEngine {
    /// Starts `workers` transfer threads (1 to 64) at `priority`
    /// (`"low"`: below the caller's threads; `"normal"`; `"high"`).
    #[new]
    #[pyo3(signature = (gpu, workers=2, priority="low"))]
    fn new(py: Python<'_>, gpu: &Gpu, workers: usize, priority: &str) -> PyResult<Self> {
        let priority = match priority.to_ascii_lowercase().as_str() {
            "low" => ThreadPriority::Low,
            "normal" => ThreadPriority::Normal,
            "high" => ThreadPriority::High,
            other => {
                return Err(errors::invalid(format!(
                    "unknown priority {other:?}: expected low, normal or high"
                )));
            }
        };
        let config = EngineConfig {
            workers,
            priority,
            ..EngineConfig::default()
        };
        let rust_gpu = Arc::clone(&gpu.inner);
        let engine = py
            .detach(|| up::UploadEngine::new(Arc::clone(&rust_gpu), config))
            .map_err(errors::upload)?;
        Ok(Self {
            gpu: rust_gpu,
            inner: Mutex::new(Some(Arc::new(engine))),
        })
    }

    /// Creates a texture that uploads stream into. `staging`: `"ring:N"`
    /// (N staging buffers cycled, 1 to 4), `"per-upload:N"` (one buffer
    /// from the engine's pool per upload, at most N at once) or `"sync"`
    /// (the device's own write, on the caller's thread).
    #[pyo3(signature = (width, height, format="rgba8unorm", staging="ring:3", label=None))]
    fn create_texture(
        &self,
        width: u32,
        height: u32,
        format: &str,
        staging: &str,
        label: Option<String>,
    ) -> PyResult<StreamedTexture> {
        let texture_format = names::texture_format(format).map_err(errors::gpu)?;
        let policy = staging_policy(staging)?;
        let most = self.gpu.device().limits().max_texture_dimension_2d;
        if !(1..=most).contains(&width) || !(1..=most).contains(&height) {
            return Err(errors::invalid(format!(
                "a texture of {width}x{height}: each side must be 1 to {most} on this device"
            )));
        }
        let sample = Sample::of(texture_format)?;
        let texture = self
            .engine()?
            .create_texture(
                &wgpu::TextureDescriptor {
                    label: label.as_deref(),
                    size: wgpu::Extent3d {
                        width,
                        height,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: texture_format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING
                        | wgpu::TextureUsages::COPY_DST
                        | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                },
                policy,
            )
            .map_err(errors::upload)?;
        Ok(StreamedTexture {
            gpu: Arc::clone(&self.gpu),
            size: (width, height),
            format: names::texture_format_name(texture_format),
            sample,
            inner: Mutex::new(Some(Arc::new(texture))),
        })
    }

    /// The engine's numbers now: `queued`, `active`, `completed`,
    /// `cancelled`, `superseded`, `failed`, `bytes_uploaded`, `bandwidth`
    /// (bytes a second over the last second), `staging_held`, `workers`,
    /// `priority`, `callback_panics`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut stats = self.engine()?.stats();
        // The names the constructor takes.
        stats.priority = stats.priority.to_ascii_lowercase();
        let value = serde_json::to_value(stats).map_err(|e| errors::invalid(e.to_string()))?;
        json_to_py(py, &value)
    }

    /// Stops the engine: queued uploads are cancelled, those started
    /// land, its threads are joined. Uploads after this raise `ClosedError`.
    fn close(&self, py: Python<'_>) {
        let engine = self.inner.lock().take();
        py.detach(move || drop(engine));
    }

    /// Whether the engine was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }
}

/// `"ring:3"`, `"per-upload:2"` or `"sync"`.
fn staging_policy(text: &str) -> PyResult<StagingPolicy> {
    let bad = || {
        errors::invalid(format!(
            "unknown staging {text:?}: expected ring:N, per-upload:N (N from 1 to {}) or sync",
            up::MAX_STAGING_BUFFERS
        ))
    };
    let text = text.trim().to_ascii_lowercase();
    if text == "sync" {
        return Ok(StagingPolicy::Synchronous);
    }
    let (kind, n) = text.split_once(':').ok_or_else(bad)?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if !(1..=up::MAX_STAGING_BUFFERS).contains(&n) {
        return Err(bad());
    }
    match kind.trim() {
        "ring" => Ok(StagingPolicy::Ring(n)),
        "per-upload" | "per_upload" => Ok(StagingPolicy::PerUpload(n)),
        _ => Err(bad()),
    }
}

/// What an array for a texture must hold: its item size and the buffer
/// protocol's type codes that fit, and numpy's name for the error message.
#[derive(Clone, Copy, Debug)]
struct Sample {
    itemsize: usize,
    codes: &'static [&'static str],
    dtype: &'static str,
}

impl Sample {
    fn of(format: wgpu::TextureFormat) -> PyResult<Self> {
        use wgpu::TextureFormat as F;
        let (itemsize, codes, dtype): (usize, &'static [&'static str], &'static str) = match format
        {
            F::R8Unorm
            | F::Rg8Unorm
            | F::Rgba8Unorm
            | F::Rgba8UnormSrgb
            | F::Bgra8Unorm
            | F::Bgra8UnormSrgb
            | F::R8Uint
            | F::Rg8Uint
            | F::Rgba8Uint => (1, &["B", "c"], "uint8"),
            F::R8Snorm | F::Rg8Snorm | F::Rgba8Snorm | F::R8Sint | F::Rg8Sint | F::Rgba8Sint => {
                (1, &["b"], "int8")
            }
            F::R16Float | F::Rg16Float | F::Rgba16Float => (2, &["e"], "float16"),
            F::R16Uint
            | F::Rg16Uint
            | F::Rgba16Uint
            | F::R16Unorm
            | F::Rg16Unorm
            | F::Rgba16Unorm => (2, &["H"], "uint16"),
            F::R32Float | F::Rg32Float | F::Rgba32Float => (4, &["f"], "float32"),
            F::R32Uint | F::Rg32Uint | F::Rgba32Uint => (4, &["I", "L"], "uint32"),
            other => {
                return Err(errors::invalid(format!(
                    "streamed textures from Python take 8-, 16- and 32-bit colour formats, not {}",
                    names::texture_format_name(other)
                )));
            }
        };
        Ok(Self {
            itemsize,
            codes,
            dtype,
        })
    }
}

/// A texture whose contents stream in through the engine; it shows its
/// previous contents until an upload has landed.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct StreamedTexture {
    gpu: Arc<RustGpu>,
    size: (u32, u32),
    format: String,
    sample: Sample,
    inner: Mutex<Option<Arc<up::StreamedTexture>>>,
}

impl StreamedTexture {
    fn texture(&self) -> PyResult<Arc<up::StreamedTexture>> {
        self.inner
            .lock()
            .clone()
            .ok_or_else(|| errors::raise("ClosedError", "the texture was released"))
    }

    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>, wait: bool) -> PyResult<Upload> {
        let texture = self.texture()?;
        let bytes = borrow(py, data, self.sample)?;
        let region = TextureRegion::frame(texture.texture().size());
        let sent = if wait {
            py.detach(|| texture.upload(bytes, region, SourceLayout::default()))
        } else {
            texture.try_upload(bytes, region, SourceLayout::default())
        };
        Ok(Upload {
            inner: sent.map_err(errors::upload)?,
        })
    }
}

#[pymethods]
impl StreamedTexture {
    /// Uploads a whole frame from anything with the buffer protocol (a
    /// numpy array of shape (height, width, channels), `bytes`, a
    /// `memoryview`), read in place: C-contiguous, the format's sample
    /// type (`uint8` for 8-bit formats, `float16`, `uint16`, `float32`,
    /// `uint32`), exactly one frame's bytes. Waits while the texture's
    /// staging is all in use; returns an `Upload`.
    fn upload(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Upload> {
        self.send(py, data, true)
    }

    /// Like `upload`, but raises `WouldBlockError` instead of waiting.
    fn try_upload(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Upload> {
        self.send(py, data, false)
    }

    /// The texture's texels now, read back from the device, tightly
    /// packed rows (what landed last).
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let texture = self.texture()?;
        let format = texture.texture().format();
        let texel = format.block_copy_size(None).unwrap_or(4);
        let gpu = Arc::clone(&self.gpu);
        let bytes = py
            .detach(move || stagehand_play::render::read_texture(&gpu, texture.texture(), texel))
            .map_err(errors::gpu)?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    /// This texture's uploads now: `in_flight`, `queued`,
    /// `staging_capacity`, `ring_free`, `released`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.texture()?.stats();
        let out = PyDict::new(py);
        out.set_item("in_flight", s.in_flight)?;
        out.set_item("queued", s.queued)?;
        out.set_item("staging_capacity", s.staging_capacity)?;
        out.set_item("ring_free", s.ring_free)?;
        out.set_item("released", s.released)?;
        Ok(out)
    }

    /// Cancels queued uploads, waits for those in flight, and gives back
    /// the staging buffers; uploads after this raise `ClosedError`.
    fn release(&self, py: Python<'_>) {
        let texture = self.inner.lock().take();
        py.detach(move || drop(texture));
    }

    /// (width, height).
    #[getter]
    fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The format's WebGPU name.
    #[getter]
    fn format(&self) -> String {
        self.format.clone()
    }

    /// The numpy dtype its uploads take: `"uint8"`, `"float16"`, ...
    #[getter]
    fn dtype(&self) -> &'static str {
        self.sample.dtype
    }

    fn __repr__(&self) -> String {
        format!(
            "<stagehand_gpu.StreamedTexture {}x{} {}>",
            self.size.0, self.size.1, self.format
        )
    }
}

/// A Python buffer an upload reads in place: held until the upload's
/// bytes are dropped, then given back on the Python thread.
struct Borrowed {
    buffer: Option<PyBuffer<u8>>,
}

impl AsRef<[u8]> for Borrowed {
    fn as_ref(&self) -> &[u8] {
        let Some(buffer) = &self.buffer else {
            return &[];
        };
        let len = buffer.len_bytes();
        if len == 0 {
            return &[];
        }
        let start = buffer.buf_ptr().cast::<u8>().cast_const();
        // SAFETY: a held `PyBuffer` keeps its exporter alive and its memory
        // where it is (the buffer protocol forbids resizing an exported
        // buffer), `len` bytes from `start`, C-contiguous (checked before
        // the buffer was taken). The bytes are only read. The one thing the
        // protocol cannot stop is Python writing into a writable array
        // meanwhile; the method's docs tell the caller not to before the
        // upload has ended.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(start, len)
        }
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            run_later(move |_py| drop(buffer));
        }
    }
}

/// `data`'s bytes, in place, once its layout and sample type are checked
/// against `sample`.
fn borrow(py: Python<'_>, data: &Bound<'_, PyAny>, sample: Sample) -> PyResult<Bytes> {
    let view = py
        .import("builtins")?
        .getattr("memoryview")?
        .call1((data,))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "an upload takes an object with the buffer protocol (a numpy array, bytes, a memoryview), not {}",
                data.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
    if !view.getattr("c_contiguous")?.extract::<bool>()? {
        return Err(errors::invalid(
            "the array is not C-contiguous (a strided view): pass numpy.ascontiguousarray(a)",
        ));
    }
    let code: String = view.getattr("format")?.extract()?;
    let code = code.trim_start_matches(['@', '=', '<']);
    let itemsize: usize = view.getattr("itemsize")?.extract()?;
    if itemsize != sample.itemsize || !sample.codes.contains(&code) {
        return Err(errors::invalid(format!(
            "the array holds {code:?} samples of {itemsize} bytes; this texture takes {}",
            sample.dtype
        )));
    }
    let flat = view.call_method1("cast", ("B",))?;
    let buffer = PyBuffer::<u8>::get(&flat)?;
    Ok(Bytes::from_owner(Borrowed {
        buffer: Some(buffer),
    }))
}

/// An upload's future: poll it, wait on it, give it a callback, or await
/// it in asyncio.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Upload {
    inner: up::Upload,
}

/// The status's name.
fn status_name(status: &UploadStatus) -> &'static str {
    match status {
        UploadStatus::Done => "done",
        UploadStatus::Cancelled => "cancelled",
        UploadStatus::Superseded => "superseded",
        UploadStatus::Failed(_) => "failed",
    }
}

#[pymethods]
impl Upload {
    /// Whether it has ended (landed, cancelled, superseded or failed).
    fn done(&self) -> bool {
        self.inner.is_done()
    }

    /// Where it is: `"queued"`, `"started"`, `"submitted"`, or how it
    /// ended: `"done"`, `"cancelled"`, `"superseded"`, `"failed"`.
    #[getter]
    fn status(&self) -> &'static str {
        match self.inner.outcome() {
            Some(outcome) => status_name(&outcome.status),
            None => match self.inner.phase() {
                up::UploadPhase::Queued => "queued",
                up::UploadPhase::Started => "started",
                _ => "submitted",
            },
        }
    }

    /// Waits (up to `timeout` seconds; `None`: as long as it takes) for
    /// it to end and returns its latency, queued to landed, in seconds.
    /// Raises `UploadCancelledError` if it was cancelled or superseded by
    /// a newer upload, `UploadFailedError` if it failed, `TimeoutError`.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<f64>> {
        let outcome = match timeout {
            None => py.detach(|| self.inner.wait()),
            Some(t) if t.is_finite() && t >= 0.0 => {
                let t = Duration::from_secs_f64(t.min(1e9));
                py.detach(|| self.inner.wait_timeout(t))
                    .ok_or_else(|| PyTimeoutError::new_err("the upload has not ended"))?
            }
            Some(t) => return Err(errors::invalid(format!("timeout {t}: must be 0 or more"))),
        };
        match outcome.status {
            UploadStatus::Done => Ok(outcome.times.latency().map(|d| d.as_secs_f64())),
            UploadStatus::Cancelled => Err(errors::raise(
                "UploadCancelledError",
                "the upload was cancelled",
            )),
            UploadStatus::Superseded => Err(errors::raise(
                "UploadCancelledError",
                "the upload was superseded by a newer one to the same texture before it started",
            )),
            UploadStatus::Failed(e) => Err(errors::raise("UploadFailedError", e.to_string())),
        }
    }

    /// Calls `fn(upload)` once it has ended, on stagehand's Python thread
    /// (at once, there, if it already has).
    fn add_done_callback(slf: Py<Self>, py: Python<'_>, callback: Py<PyAny>) {
        let me = slf.clone_ref(py);
        slf.get().inner.on_complete(move |_| {
            call_later(callback, move |py| Ok(vec![me.into_any().clone_ref(py)]));
        });
    }

    /// Cancels it if it has not been submitted; whether it will end
    /// cancelled (`True`) or has gone too far (`False`).
    fn cancel(&self) -> bool {
        !matches!(self.inner.cancel(), up::Cancel::TooLate)
    }

    fn __await__<'py>(slf: Py<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let future = event_loop.call_method0("create_future")?;
        let resolve = py.import("stagehand_gpu._futures")?.getattr("resolve")?;
        let (l, f, r, me) = (
            event_loop.unbind(),
            future.clone().unbind(),
            resolve.unbind(),
            slf.clone_ref(py),
        );
        slf.get().inner.on_complete(move |_| {
            run_later(move |py| {
                // A loop closed meanwhile has no one to tell.
                let _ = l.bind(py).call_method1("call_soon_threadsafe", (r, f, me));
            });
        });
        future.call_method0("__await__")
    }

    fn __repr__(&self) -> String {
        format!("<stagehand_gpu.Upload {}>", self.status())
    }
}
