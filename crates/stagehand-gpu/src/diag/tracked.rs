//! [`Tracked`]: a GPU object paired with the token that counts it.

use super::kind::ObjectKind;
use super::tracker::{Token, Tracker};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A GPU object counted by a [`Tracker`] until it is dropped.
///
/// Derefs to the wrapped object, so code written against the plain type keeps
/// working. It is deliberately not `Clone`: one handle, one count. To share
/// it, put it in an `Arc`. A clone of the *inner* object (`(*t).clone()`)
/// keeps the object alive in wgpu after the count has dropped; avoid it where
/// the count matters.
pub struct Tracked<T> {
    // Declared before `token` so the object is released before it is un-counted.
    inner: T,
    token: Token,
}

impl<T> Tracked<T> {
    /// Counts `inner` as one object of `kind` owning `bytes`.
    pub fn new(
        tracker: &Arc<Tracker>,
        kind: ObjectKind,
        bytes: u64,
        label: Option<&str>,
        inner: T,
    ) -> Self {
        Self {
            inner,
            token: tracker.register(kind, bytes, label),
        }
    }

    /// The kind it is counted as.
    pub fn kind(&self) -> ObjectKind {
        self.token.kind()
    }

    /// The resource bytes it is counted with.
    pub fn tracked_bytes(&self) -> u64 {
        self.token.bytes()
    }

    /// The tracker that counts it.
    pub fn tracker(&self) -> &Arc<Tracker> {
        self.token.tracker()
    }

    /// Takes the object out; it stops being counted now.
    ///
    /// Use this where the object is consumed (a command buffer handed to
    /// `submit`) or deliberately handed to code that stagehand does not see.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T> Deref for Tracked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for Tracked<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> AsRef<T> for Tracked<T> {
    fn as_ref(&self) -> &T {
        &self.inner
    }
}

impl<T: fmt::Debug> fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracked")
            .field("kind", &self.kind())
            .field("bytes", &self.tracked_bytes())
            .field("inner", &self.inner)
            .finish()
    }
}
