//! `stagehand_gpu`: stagehand from Python. The GPU and its diagnostics
//! report, the upload engine with futures, and the player; the Qt widget
//! is Python (`stagehand_gpu/qt.py`) over the player's pixels and its
//! native-window path.
//!
//! Every call that can wait (opening a GPU, an upload into a full ring, a
//! player opening, a read-back) lets go of the interpreter while it waits.
//! Python code that stagehand calls (upload callbacks, player events) runs
//! on one thread of stagehand's, in order (`python_thread.rs`).

mod errors;
mod gpu;
mod player;
mod pool;
mod python_thread;
mod upload;

use pyo3::prelude::*;

/// The native part of `stagehand_gpu`; import `stagehand_gpu`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let shut_down = wrap_pyfunction!(python_thread::shut_down, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (shut_down,))?;
    m.add_class::<gpu::Gpu>()?;
    m.add_class::<gpu::Buffer>()?;
    m.add_class::<gpu::Texture>()?;
    m.add_class::<gpu::Report>()?;
    m.add_class::<gpu::LeakCheck>()?;
    m.add_class::<pool::BufferPool>()?;
    m.add_class::<pool::PooledBuffer>()?;
    m.add_class::<upload::UploadEngine>()?;
    m.add_class::<upload::StreamedTexture>()?;
    m.add_class::<upload::Upload>()?;
    m.add_class::<player::Player>()?;
    m.add_class::<player::NativeView>()?;
    Ok(())
}
