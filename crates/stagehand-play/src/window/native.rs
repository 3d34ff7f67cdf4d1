//! [`NativeWindow`]: a [`Player`] shown in a window another program made
//! (a toolkit's widget, found by its X11 id), through the same path the
//! player's own window takes on a software GL adapter: the picture drawn
//! at the window's size, read back, and put to the X server.

use super::x11::{self, X11Present};
use crate::{PictureReader, PlayError, Player};
use stagehand_gpu::Gpu;
use std::sync::Arc;

/// A window of another program's that a player presents into.
pub struct NativeWindow {
    x11: X11Present,
    reader: PictureReader,
}

impl std::fmt::Debug for NativeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeWindow").finish_non_exhaustive()
    }
}

impl NativeWindow {
    /// Opens the X11 window `window` (a Qt widget's `winId()`, say) on
    /// `display` (`None`: the environment's `DISPLAY`). A window that
    /// does not exist, or whose pixels the server would need converted,
    /// is [`PlayError::NoDisplay`] with the reason.
    pub fn open_x11(gpu: &Arc<Gpu>, display: Option<&str>, window: u32) -> Result<Self, PlayError> {
        let x11 = X11Present::open_id(display, window).map_err(PlayError::NoDisplay)?;
        Ok(Self {
            x11,
            reader: PictureReader::new(gpu, x11::FORMAT)?,
        })
    }

    /// Draws the frame `player` shows into the window at `size` (its
    /// size in physical pixels; `None` asks the server) and returns the
    /// size drawn. A window of no area is left as it is.
    pub fn present(
        &mut self,
        player: &Player,
        size: Option<(u32, u32)>,
    ) -> Result<(u32, u32), PlayError> {
        let size = match size {
            Some(size) => size,
            None => self.x11.size().map_err(PlayError::NoDisplay)?,
        };
        if size.0 == 0 || size.1 == 0 {
            return Ok(size);
        }
        let x11 = &self.x11;
        self.reader
            .read(player, size, |pixels, pitch| x11.put(pixels, pitch, size.1))?
            .transpose()
            .map_err(PlayError::NoDisplay)?;
        Ok(size)
    }
}
