//! The library's errors as Python exceptions: each keeps the library's
//! message, and its class says its kind (the classes live in
//! `stagehand_gpu/_errors.py`, where each is a `StagehandError` and, where
//! Python has one, the built-in of the same meaning too: an out-of-memory
//! is a `MemoryError`, a bad argument a `ValueError`).

use pyo3::prelude::*;
use stagehand_gpu::upload::UploadError;
use stagehand_play::PlayError;

/// The exception of class `class` (a name in `_errors.py`) with `message`.
pub fn raise(class: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let made = py
            .import("stagehand_gpu._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message,)));
        match made {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })
}

/// An argument out of range: `InvalidArgumentError` (a `ValueError`).
pub fn invalid(message: impl Into<String>) -> PyErr {
    raise("InvalidArgumentError", message)
}

/// A GPU error.
pub fn gpu(e: stagehand_gpu::Error) -> PyErr {
    use stagehand_gpu::Error as E;
    let class = match &e {
        _ if e.is_oom() => "OutOfMemoryError",
        E::NoAdapter { .. } | E::AdapterNotFound { .. } => "NoAdapterError",
        E::UnknownBackend(_)
        | E::UnknownName { .. }
        | E::InvalidDescriptor { .. }
        | E::UnsupportedFormat { .. }
        | E::UnsupportedUsage { .. } => "InvalidArgumentError",
        E::Upload(u) => return upload(u.clone()),
        _ => "GpuError",
    };
    raise(class, e.to_string())
}

/// A pool error: out-of-memory (past the budget or the device's memory)
/// is `OutOfMemoryError`.
pub fn pool(e: stagehand_gpu::pool::PoolError) -> PyErr {
    use stagehand_gpu::pool::PoolError as P;
    let class = match &e {
        _ if e.is_oom() => "OutOfMemoryError",
        P::InvalidRequest { .. } | P::InvalidConfig(_) => "InvalidArgumentError",
        _ => "GpuError",
    };
    raise(class, e.to_string())
}

/// An upload error.
pub fn upload(e: UploadError) -> PyErr {
    use UploadError as U;
    let class = match &e {
        U::Staging(p) => return pool(p.clone()),
        U::Released | U::ShutDown => "ClosedError",
        U::WouldBlock(_) => "WouldBlockError",
        U::Device(_) | U::Create(_) => "GpuError",
        _ => "InvalidArgumentError",
    };
    raise(class, e.to_string())
}

/// A player error.
pub fn play(e: PlayError) -> PyErr {
    match e {
        PlayError::Gpu(e) => gpu(e),
        PlayError::Upload(e) => upload(e),
        PlayError::Memory(p) => pool(p),
        e => raise(play_class(&e), e.to_string()),
    }
}

/// The class of a player error that carries no GPU, upload or pool error;
/// a frame's error, shared between threads, is classed by the error inside.
fn play_class(e: &PlayError) -> &'static str {
    use PlayError as P;
    match e {
        P::Frame(inner) => play_class(inner),
        P::NoFrames(_)
        | P::Unsupported { .. }
        | P::Io { .. }
        | P::Decode { .. }
        | P::SizeMismatch { .. }
        | P::Write { .. } => "SourceError",
        P::NoDisplay(_) => "NoDisplayError",
        P::InvalidOption(_) | P::BadOption { .. } => "InvalidArgumentError",
        P::Closed => "ClosedError",
        _ => "PlayerError",
    }
}
