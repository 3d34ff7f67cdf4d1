//! The one thread of stagehand's that runs Python code: upload callbacks,
//! player event handlers, and the release of Python buffers an upload
//! borrowed. The engine's and the player's threads never wait for the
//! interpreter: they hand the job here and go on, so a Python thread that
//! holds the interpreter cannot stall an upload or a frame. Jobs run in
//! the order they were handed over.
//!
//! At interpreter exit ([`shut_down`], registered with `atexit`) the
//! thread stops taking the interpreter: a thread that asks for it while
//! the interpreter finalizes is ended by CPython mid-call, which a Rust
//! thread cannot survive. Jobs handed over after that are let go without
//! running and without their destructors (their Python objects die with
//! the process).

use crossbeam_channel::{Sender, unbounded};
use parking_lot::Mutex;
use pyo3::prelude::*;
use std::sync::OnceLock;

type Job = Box<dyn FnOnce(Python<'_>) + Send>;

static JOBS: OnceLock<Option<Sender<Job>>> = OnceLock::new();

/// Whether the interpreter is exiting; held by the thread while it runs a
/// job, so exit waits for the job in hand.
static EXITING: Mutex<bool> = Mutex::new(false);

/// Runs `job` on the Python thread, holding the interpreter. If that
/// thread could not be started, the job runs on the caller's thread.
pub fn run_later(job: impl FnOnce(Python<'_>) + Send + 'static) {
    let sender = JOBS.get_or_init(|| {
        let (send, receive) = unbounded::<Job>();
        std::thread::Builder::new()
            .name("stagehand python".into())
            .spawn(move || {
                for job in receive {
                    let exiting = EXITING.lock();
                    if *exiting {
                        std::mem::forget(job);
                        continue;
                    }
                    Python::attach(job);
                    drop(exiting);
                }
            })
            .ok()
            .map(|_| send)
    });
    match sender {
        Some(send) => {
            if let Err(returned) = send.send(Box::new(job)) {
                std::mem::forget(returned);
            }
        }
        None => Python::attach(job),
    }
}

/// Calls `f(args)` on the Python thread; an exception it raises is
/// reported as unraisable (printed), as for any callback Python runs
/// outside the code that registered it.
pub fn call_later(
    f: Py<PyAny>,
    args: impl FnOnce(Python<'_>) -> PyResult<Vec<Py<PyAny>>> + Send + 'static,
) {
    run_later(move |py| call(py, &f, args));
}

/// Calls `f(args(py))` now, reporting an exception as unraisable.
pub fn call(
    py: Python<'_>,
    f: &Py<PyAny>,
    args: impl FnOnce(Python<'_>) -> PyResult<Vec<Py<PyAny>>>,
) {
    let result = args(py).and_then(|args| {
        let args = pyo3::types::PyTuple::new(py, args)?;
        f.bind(py).call1(args).map(drop)
    });
    if let Err(e) = result {
        e.write_unraisable(py, Some(f.bind(py)));
    }
}

/// Stops running jobs: registered with `atexit`, so it runs before the
/// interpreter finalizes. Waits (without the interpreter, which the job
/// in hand may need) for the job in hand.
#[pyfunction]
pub fn shut_down(py: Python<'_>) {
    py.detach(|| *EXITING.lock() = true);
}
