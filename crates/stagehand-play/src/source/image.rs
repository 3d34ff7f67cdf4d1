//! Decoding through the `image` crate.

use super::{Frame, FrameInfo};
use crate::PlayError;
use std::path::Path;

/// Decodes one file at its own precision.
pub fn decode(path: &Path) -> Result<Frame, PlayError> {
    todo!("{path:?}")
}

/// Reads a file's header.
pub fn probe(path: &Path) -> Result<FrameInfo, PlayError> {
    todo!("{path:?}")
}
