//! [`Admit`]: the async form of `upload`, which yields instead of blocking
//! while the resource or the engine is at its in-flight bound.

use super::error::UploadError;
use super::future::Upload;
use crate::sync::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A future that resolves to the [`Upload`] once the engine has room for it.
/// Any error other than [`UploadError::WouldBlock`] resolves it at once.
#[must_use = "an admission does nothing until polled"]
pub struct Admit<F> {
    room: Arc<Mutex<Vec<Waker>>>,
    attempt: F,
}

impl<F: FnMut() -> Result<Upload, UploadError> + Unpin> Admit<F> {
    pub(crate) fn new(room: Arc<Mutex<Vec<Waker>>>, attempt: F) -> Self {
        Self { room, attempt }
    }
}

impl<F: FnMut() -> Result<Upload, UploadError> + Unpin> Future for Admit<F> {
    type Output = Result<Upload, UploadError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Register before trying, so room made between the try and the
        // registration still wakes us.
        self.room.lock().push(cx.waker().clone());
        match (self.attempt)() {
            Err(UploadError::WouldBlock(_)) => Poll::Pending,
            done => Poll::Ready(done),
        }
    }
}

impl<F> std::fmt::Debug for Admit<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admit").finish_non_exhaustive()
    }
}
