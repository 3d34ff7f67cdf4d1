//! The file decoders the player uses (`image`, `exr`) are other crates'
//! code reading bytes from anywhere; a damaged file they do not guard
//! against can make one panic (a TIFF whose SampleFormat tag has no
//! values indexes an empty list in the `tiff` crate). [`guarded`] turns
//! such a panic into [`PlayError::Decode`] naming the file, so it costs
//! that frame, not the player, and keeps the panic's message off the
//! terminal (the error says it once, as every other decode error).

use crate::PlayError;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

thread_local! {
    /// Guarded calls this thread is inside.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// Installs, once, a panic hook that stays quiet for panics inside
/// [`guarded`] and hands every other panic to the hook before it.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let before = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE.with(Cell::get) == 0 {
                before(info);
            }
        }));
    });
}

/// Leaves the guarded region however the call ends.
struct Inside;

impl Inside {
    fn enter() -> Self {
        INSIDE.with(|n| n.set(n.get() + 1));
        Self
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// Runs `decode`, a decoder's work on `path`; a panic inside it is a
/// decode error naming the file and what the decoder said.
pub fn guarded<T>(
    path: &Path,
    decode: impl FnOnce() -> Result<T, PlayError>,
) -> Result<T, PlayError> {
    install_hook();
    let inside = Inside::enter();
    let result = panic::catch_unwind(AssertUnwindSafe(decode));
    drop(inside);
    result.unwrap_or_else(|panic| {
        let said = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(PlayError::Decode {
            path: path.to_owned(),
            reason: format!("the decoder failed on this file ({said})"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_is_a_decode_error_and_the_thread_goes_on() {
        let path = Path::new("broken.tif");
        let got: Result<(), PlayError> = guarded(path, || panic!("index out of bounds"));
        match got {
            Err(PlayError::Decode { path: p, reason }) => {
                assert_eq!(p, path);
                assert!(reason.contains("index out of bounds"), "{reason}");
            }
            other => panic!("expected a decode error, got {other:?}"),
        }
        assert_eq!(INSIDE.with(Cell::get), 0, "left the guarded region");
        assert_eq!(guarded(path, || Ok(7)).unwrap(), 7);
    }
}
