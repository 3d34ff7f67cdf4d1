//! The locks, condition variables and atomics of the upload engine's
//! hand-offs (admission, completion, release), in one place so that a model
//! checker can stand in for them.
//!
//! A normal build uses `parking_lot` and `std`. Built with the feature
//! `model-check`, the same names are `loom`'s, and the
//! models in `upload::models` explore every interleaving of the hand-offs.
//! `loom` has no clock: a timed wait there waits for a signal as an untimed
//! one does, so a model that passes shows each wait is woken by a signal,
//! never rescued by its timeout.

#[cfg(not(feature = "model-check"))]
pub(crate) use parking_lot::{Condvar, Mutex};
#[cfg(not(feature = "model-check"))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64};

#[cfg(feature = "model-check")]
pub(crate) use self::model::{Condvar, Mutex};
#[cfg(feature = "model-check")]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU64};

/// `loom`'s lock and condition variable behind `parking_lot`'s interface:
/// `lock` returns the guard, and waits take the guard by `&mut`.
#[cfg(feature = "model-check")]
mod model {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    /// A mutex; see the module.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Its guard. `None` only inside a wait, while the condition variable
    /// holds the inner guard.
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(|p| p.into_inner())))
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard held outside a wait")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard held outside a wait")
        }
    }

    /// What a timed wait found; under the model it never times out.
    pub(crate) struct WaitTimeoutResult;

    impl WaitTimeoutResult {
        pub fn timed_out(&self) -> bool {
            false
        }
    }

    /// A condition variable; see the module.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let inner = guard.0.take().expect("guard held outside a wait");
            let inner = self.0.wait(inner).unwrap_or_else(|p| p.into_inner());
            guard.0 = Some(inner);
        }

        /// Waits for a signal: the model has no clock.
        pub fn wait_until<T>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            _deadline: Instant,
        ) -> WaitTimeoutResult {
            self.wait(guard);
            WaitTimeoutResult
        }

        pub fn notify_one(&self) -> bool {
            self.0.notify_one();
            true
        }

        pub fn notify_all(&self) -> usize {
            self.0.notify_all();
            0
        }
    }
}
