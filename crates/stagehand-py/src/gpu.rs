//! `Gpu`, its counted objects (`Buffer`, `Texture`), its `Report` and its
//! leak check.

use crate::errors;
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use stagehand_gpu::backend::wgpu::names;
use stagehand_gpu::diag::{LeakCheck as RustLeakCheck, Tracked};
use stagehand_gpu::{Gpu as RustGpu, GpuOptions};
use std::sync::Arc;

/// A GPU: an adapter, its device and queue, and the tracker that counts
/// every object made through it.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Gpu {
    pub(crate) inner: Arc<RustGpu>,
}

#[pymethods]
impl Gpu {
    /// Opens the best adapter on `backend` (`"vulkan"`, `"gl"`, `"metal"`,
    /// `"dx12"`, or several comma-separated; `None` reads `WGPU_BACKEND`,
    /// else searches all) whose name contains `adapter` (`None` reads
    /// `WGPU_ADAPTER_NAME`, else takes the best).
    #[classmethod]
    #[pyo3(signature = (backend=None, adapter=None))]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        backend: Option<String>,
        adapter: Option<String>,
    ) -> PyResult<Self> {
        let options = GpuOptions {
            backend,
            adapter,
            wanted_features: stagehand_play::wanted_features(),
            ..GpuOptions::default()
        };
        let gpu = py.detach(|| RustGpu::open(&options)).map_err(errors::gpu)?;
        Ok(Self {
            inner: Arc::new(gpu),
        })
    }

    /// The adapter's name, with its backend: `"llvmpipe (LLVM 15.0.6, 256 bits) (Gl)"`.
    #[getter]
    fn adapter(&self) -> String {
        let info = self.inner.info();
        format!("{} ({:?})", info.name, info.backend)
    }

    /// The backend in use: `"vulkan"`, `"gl"`, `"metal"`, `"dx12"`.
    #[getter]
    fn backend(&self) -> String {
        format!("{:?}", self.inner.info().backend).to_ascii_lowercase()
    }

    /// The diagnostics report now: system, adapter, object counts,
    /// wgpu's own counts.
    fn report(&self, py: Python<'_>) -> Report {
        Report {
            inner: py.detach(|| self.inner.report()),
        }
    }

    /// Prints the report's tables to standard output.
    fn print_report(&self, py: Python<'_>) -> PyResult<()> {
        let text = py.detach(|| self.inner.report().to_text());
        py.import("builtins")?
            .getattr("print")?
            .call((text,), Some(&[("end", "")].into_py_dict(py)?))?;
        Ok(())
    }

    /// A context manager that fails (`LeakError`, naming each kind and
    /// labelled object left) when the objects made inside it are not all
    /// gone at its end.
    fn check_leaks(&self) -> LeakCheck {
        LeakCheck {
            tracker: Arc::clone(self.inner.tracker()),
            check: Mutex::new(None),
        }
    }

    /// Creates a buffer of `size` bytes with `usage` (wgpu's flag names
    /// joined by `|`: `"vertex|copy_dst"`), counted with its size.
    #[pyo3(signature = (size, usage, label=None))]
    fn create_buffer(&self, size: u64, usage: &str, label: Option<String>) -> PyResult<Buffer> {
        let usage = names::buffer_usages(usage).map_err(errors::gpu)?;
        let buffer = self
            .inner
            .device()
            .create_buffer(&wgpu::BufferDescriptor {
                label: label.as_deref(),
                size,
                usage,
                mapped_at_creation: false,
            })
            .map_err(errors::gpu)?;
        Ok(Buffer {
            size,
            label,
            inner: Mutex::new(Some(buffer)),
        })
    }

    /// Creates a 2D texture of `format` (WebGPU's name: `"rgba8unorm"`),
    /// counted with its exact size over its mips and layers.
    #[pyo3(signature = (width, height, format, label=None, layers=1, mip_level_count=1, usage="texture_binding|copy_dst"))]
    #[allow(clippy::too_many_arguments)]
    fn create_texture(
        &self,
        width: u32,
        height: u32,
        format: &str,
        label: Option<String>,
        layers: u32,
        mip_level_count: u32,
        usage: &str,
    ) -> PyResult<Texture> {
        let texture_format = names::texture_format(format).map_err(errors::gpu)?;
        let usage = names::texture_usages(usage).map_err(errors::gpu)?;
        let texture = self
            .inner
            .device()
            .create_texture(&wgpu::TextureDescriptor {
                label: label.as_deref(),
                size: wgpu::Extent3d {
                    width,
                    height,
                    depth_or_array_layers: layers,
                },
                mip_level_count,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: texture_format,
                usage,
                view_formats: &[],
            })
            .map_err(errors::gpu)?;
        Ok(Texture {
            size: (width, height, layers),
            format: names::texture_format_name(texture_format),
            label,
            bytes: texture.tracked_bytes(),
            inner: Mutex::new(Some(texture)),
        })
    }

    fn __repr__(&self) -> String {
        format!("<stagehand_gpu.Gpu {}>", self.adapter())
    }
}

use pyo3::types::IntoPyDict;

/// A counted GPU buffer; gone from the counts when destroyed or collected.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Buffer {
    size: u64,
    label: Option<String>,
    inner: Mutex<Option<Tracked<wgpu::Buffer>>>,
}

#[pymethods]
impl Buffer {
    /// Its size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.size
    }

    /// Its label.
    #[getter]
    fn label(&self) -> Option<String> {
        self.label.clone()
    }

    /// Frees it now (it is also freed when collected).
    fn destroy(&self) {
        self.inner.lock().take();
    }

    /// Whether it was destroyed.
    #[getter]
    fn destroyed(&self) -> bool {
        self.inner.lock().is_none()
    }

    fn __repr__(&self) -> String {
        format!(
            "<stagehand_gpu.Buffer {:?} {} bytes>",
            self.label, self.size
        )
    }
}

/// A counted GPU texture; gone from the counts when destroyed or collected.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Texture {
    size: (u32, u32, u32),
    format: String,
    label: Option<String>,
    bytes: u64,
    inner: Mutex<Option<Tracked<wgpu::Texture>>>,
}

#[pymethods]
impl Texture {
    /// (width, height, layers).
    #[getter]
    fn size(&self) -> (u32, u32, u32) {
        self.size
    }

    /// Its format's WebGPU name.
    #[getter]
    fn format(&self) -> String {
        self.format.clone()
    }

    /// Its label.
    #[getter]
    fn label(&self) -> Option<String> {
        self.label.clone()
    }

    /// The bytes it is counted with (all mips and layers).
    #[getter]
    fn nbytes(&self) -> u64 {
        self.bytes
    }

    /// Frees it now (it is also freed when collected).
    fn destroy(&self) {
        self.inner.lock().take();
    }

    /// Whether it was destroyed.
    #[getter]
    fn destroyed(&self) -> bool {
        self.inner.lock().is_none()
    }

    fn __repr__(&self) -> String {
        format!(
            "<stagehand_gpu.Texture {:?} {}x{} {}>",
            self.label, self.size.0, self.size.1, self.format
        )
    }
}

/// The diagnostics report at one moment: sections of tables.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Report {
    inner: stagehand_gpu::Report,
}

#[pymethods]
impl Report {
    /// The sections as dicts, by name. `object_counts` is keyed by object
    /// kind, each `{'count': n, 'resource_mem': bytes}` as wgpu-py has it
    /// (bytes 0 for kinds that hold no memory); the peaks and creation
    /// counts are in `object_peaks`, keyed the same way, each
    /// `{'count': n, 'resource_mem': bytes, 'created': n}`.
    fn get_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for name in self.inner.names() {
            let Some(section) = self.inner.section(name) else {
                continue;
            };
            if name == "object_counts" {
                out.set_item(name, json_to_py(py, &object_counts(section, false))?)?;
                out.set_item(
                    "object_peaks",
                    json_to_py(py, &object_counts(section, true))?,
                )?;
            } else {
                out.set_item(name, json_to_py(py, section)?)?;
            }
        }
        Ok(out)
    }

    /// The names of the sections, in order.
    fn names(&self) -> Vec<String> {
        self.inner.names().map(str::to_owned).collect()
    }

    /// The whole report as JSON text.
    fn to_json(&self) -> String {
        self.inner.to_json_string()
    }

    fn __str__(&self) -> String {
        self.inner.to_text()
    }

    fn __repr__(&self) -> String {
        format!("<stagehand_gpu.Report {}>", self.names().join(", "))
    }
}

/// The object counts keyed by kind, in wgpu-py's shape: now, or (`peaks`)
/// the highest since the start and the number ever created.
fn object_counts(section: &serde_json::Value, peaks: bool) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    let objects = section["objects"].as_array().cloned().unwrap_or_default();
    for o in objects {
        let Some(kind) = o["kind"].as_str() else {
            continue;
        };
        let counts = if peaks {
            serde_json::json!({
                "count": o["peak_count"],
                "resource_mem": o["peak_bytes"],
                "created": o["created"],
            })
        } else {
            serde_json::json!({ "count": o["count"], "resource_mem": o["bytes"] })
        };
        out.insert(kind.to_owned(), counts);
    }
    serde_json::Value::Object(out)
}

/// A JSON value as Python objects (through `json.loads`: one code path
/// for every shape the report has).
pub(crate) fn json_to_py<'py>(
    py: Python<'py>,
    value: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?
        .call_method1("loads", (value.to_string(),))
}

/// `with gpu.check_leaks():` fails if objects made inside are left alive.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct LeakCheck {
    tracker: Arc<stagehand_gpu::diag::Tracker>,
    check: Mutex<Option<RustLeakCheck>>,
}

#[pymethods]
impl LeakCheck {
    fn __enter__(slf: Py<Self>, py: Python<'_>) -> Py<Self> {
        *slf.get().check.lock() = Some(RustLeakCheck::start(&slf.get().tracker));
        slf.clone_ref(py)
    }

    /// Collects garbage first (objects only Python's cycles held), then
    /// compares; an exception already raised inside is left to propagate.
    #[pyo3(signature = (kind=None, _value=None, _traceback=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _traceback: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Some(check) = self.check.lock().take() else {
            return Err(PyTypeError::new_err("check_leaks() was not entered"));
        };
        py.import("gc")?.call_method0("collect")?;
        match check.finish() {
            Err(leaks) if kind.is_none() => Err(errors::raise("LeakError", leaks.to_string())),
            _ => Ok(false),
        }
    }
}
