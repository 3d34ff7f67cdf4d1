//! `BufferPool`: the caching pool of device buffers (size classes, free
//! lists, a budget), from Python. A request over the budget (or the
//! device's memory) is `OutOfMemoryError`, a `MemoryError`, so a caller
//! can shrink its batch and try again.

use crate::errors;
use crate::gpu::{Gpu, json_to_py};
use parking_lot::Mutex;
use pyo3::prelude::*;
use stagehand_gpu::backend::wgpu::names;
use stagehand_gpu::backend::wgpu::{BufferBackend, BufferPool as RustPool, buffer_pool};
use stagehand_gpu::pool::{PoolConfig, Pooled};
use std::sync::Arc;

/// A pool of device buffers: a buffer given back is kept for the next
/// request of its size class, so steady-state work allocates nothing.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct BufferPool {
    inner: Arc<RustPool>,
}

#[pymethods]
impl BufferPool {
    /// A pool on `gpu` holding at most `budget` bytes (`None`: no cap),
    /// named `name` in reports.
    #[new]
    #[pyo3(signature = (gpu, budget=None, name="pool"))]
    fn new(gpu: &Gpu, budget: Option<u64>, name: &str) -> PyResult<Self> {
        let config = PoolConfig {
            budget,
            ..PoolConfig::named(name)
        };
        let pool = buffer_pool(Arc::clone(&gpu.inner), config).map_err(errors::pool)?;
        Ok(Self {
            inner: Arc::new(pool),
        })
    }

    /// A buffer of at least `size` bytes with `usage` (wgpu's flag names
    /// joined by `|`), from the free lists where one is idle. Raises
    /// `OutOfMemoryError` past the budget or the device's memory.
    fn take(&self, py: Python<'_>, size: u64, usage: &str) -> PyResult<PooledBuffer> {
        let usage = names::buffer_usages(usage).map_err(errors::gpu)?;
        let pool = Arc::clone(&self.inner);
        let block = py
            .detach(move || pool.take(usage, size))
            .map_err(errors::pool)?;
        Ok(PooledBuffer {
            size,
            capacity: block.capacity(),
            inner: Mutex::new(Some(block)),
        })
    }

    /// Gives every idle buffer back to the device.
    fn trim(&self, py: Python<'_>) {
        py.detach(|| self.inner.trim());
    }

    /// Ends a batch: size classes no request touched in it are given back.
    fn end_batch(&self, py: Python<'_>) {
        py.detach(|| self.inner.end_batch());
    }

    /// Changes the budget (`None`: no cap); idle buffers over it are freed.
    #[pyo3(signature = (budget))]
    fn set_budget(&self, budget: Option<u64>) -> PyResult<()> {
        self.inner.set_budget(budget).map_err(errors::pool)
    }

    /// The pool's numbers: `held`, `peak_held`, `in_use`, `idle`,
    /// `budget`, `hits`, `misses`, `allocations`, `frees`, `trims`, ...
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value =
            serde_json::to_value(self.inner.stats()).map_err(|e| errors::invalid(e.to_string()))?;
        json_to_py(py, &value)
    }
}

/// A buffer taken from a pool; given back (to be reused) when released or
/// collected.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct PooledBuffer {
    size: u64,
    capacity: u64,
    inner: Mutex<Option<Pooled<BufferBackend>>>,
}

#[pymethods]
impl PooledBuffer {
    /// The bytes asked for.
    #[getter]
    fn size(&self) -> u64 {
        self.size
    }

    /// The bytes it holds (its size class).
    #[getter]
    fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Gives it back to the pool now.
    fn release(&self) {
        self.inner.lock().take();
    }

    /// Whether it was given back.
    #[getter]
    fn released(&self) -> bool {
        self.inner.lock().is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.release();
        false
    }
}
