//! Where the render loop draws: offscreen, or a window with its overlay
//! (the timeline and the heads-up display).

use super::Picture;
use crate::render::overlay::{Cell, Overlay};
use crate::window::{Screen, SurfaceInfo};
use std::time::{Duration, Instant};

/// Where the render loop draws.
pub(super) enum Output<'s> {
    /// The renderer's own target, headless.
    Offscreen,
    /// A window, with its overlay.
    Window(Box<Windowed<'s>>),
}

impl Output<'_> {
    /// Handles the window's events now; whether the user wants the loop's
    /// attention (commands waiting, or the window closed). Offscreen, never.
    pub(super) fn attention(&mut self) -> bool {
        self.closed() || matches!(self, Output::Window(w) if w.screen.has_commands())
    }

    /// Handles the window's events now; whether it was closed.
    pub(super) fn closed(&mut self) -> bool {
        let Output::Window(w) = self else {
            return false;
        };
        w.screen.pump(Duration::ZERO);
        w.screen.closed()
    }
}

/// A window being played into.
pub(super) struct Windowed<'s> {
    pub(super) screen: &'s mut Screen,
    pub(super) overlay: Overlay,
    /// Whether the heads-up display shows.
    pub(super) hud: bool,
    pub(super) info: SurfaceInfo,
    /// The timeline's texels, as last looked up.
    pub(super) cells: Vec<Cell>,
    pub(super) cells_at: Option<Instant>,
    pub(super) text_at: Option<Instant>,
    /// When the last second's new frames were presented, for the achieved
    /// rate on the heads-up display.
    pub(super) presents: std::collections::VecDeque<Instant>,
    /// The playhead the timeline shows.
    pub(super) playhead: Option<usize>,
    /// The heads-up display's lines as drawn.
    pub(super) lines: Vec<String>,
    /// The picture last drawn into the window.
    pub(super) drawn: Option<(crate::transport::Tick, Picture)>,
    /// Something the overlay does not track changed (exposure, the
    /// heads-up display turned on or off): draw again.
    pub(super) dirty: bool,
    /// The overlay changed since the last draw (the timeline's cells as
    /// the cache fills, the heads-up display's figures) while the picture
    /// did not: the next frame carries it, or it is drawn alone once
    /// [`OVERLAY_ALONE_EVERY`] has passed since the last draw.
    pub(super) overlay_pending: bool,
    /// When the window was last drawn.
    pub(super) drawn_at: Option<Instant>,
}

/// How often the overlay looks at the caches and re-renders its text.
pub(super) const CELLS_EVERY: Duration = Duration::from_millis(100);
pub(super) const TEXT_EVERY: Duration = Duration::from_millis(250);
/// While playing, the longest an overlay change waits for a new frame to
/// carry it before it is drawn alone. Drawing the picture again only for
/// the overlay costs a software adapter most of a frame period, taken from
/// the frames still to come.
pub(super) const OVERLAY_ALONE_EVERY: Duration = Duration::from_millis(250);
impl Windowed<'_> {
    /// Counts a present made while playing, for the rate over the last
    /// second.
    pub(super) fn count_present(&mut self, now: Instant) {
        self.presents.push_back(now);
        while self
            .presents
            .front()
            .is_some_and(|&p| now - p > Duration::from_secs(1))
        {
            self.presents.pop_front();
        }
    }
}

/// `frames` frames at `fps` as hours:minutes:seconds:frames (whole frames
/// per second, rounded: no drop-frame counting).
pub(super) fn timecode(frames: u64, fps: f64) -> String {
    let per_second = (fps.round() as u64).max(1);
    let (seconds, f) = (frames / per_second, frames % per_second);
    format!(
        "{:02}:{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        f
    )
}

#[cfg(test)]
mod tests {
    use super::timecode;

    #[test]
    pub(super) fn timecode_counts_whole_frames_per_second() {
        assert_eq!(timecode(0, 24.0), "00:00:00:00");
        assert_eq!(timecode(23, 24.0), "00:00:00:23");
        assert_eq!(timecode(24 * 3661 + 5, 24.0), "01:01:01:05");
        assert_eq!(timecode(30, 29.97), "00:00:01:00");
    }
}
