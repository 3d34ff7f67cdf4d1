//! The keys of the player's window.

use crate::transport::Command;
use winit::keyboard::{Key, NamedKey};

/// Stops of exposure per key press.
pub const EXPOSURE_STEP: f32 = 0.5;

/// The command a key press asks for, if any.
pub fn command(key: &Key) -> Option<Command> {
    match key {
        Key::Named(named) => named_command(*named),
        Key::Character(text) => character_command(text),
        _ => None,
    }
}

/// The command a named key (an arrow, Space, Escape...) asks for, if any.
fn named_command(named: NamedKey) -> Option<Command> {
    Some(match named {
        NamedKey::Space => Command::TogglePause,
        NamedKey::ArrowRight => Command::Step(1),
        NamedKey::ArrowLeft => Command::Step(-1),
        NamedKey::Home => Command::First,
        NamedKey::End => Command::Last,
        NamedKey::ArrowUp => Command::Exposure(EXPOSURE_STEP),
        NamedKey::ArrowDown => Command::Exposure(-EXPOSURE_STEP),
        NamedKey::Escape => Command::Quit,
        NamedKey::Backspace => Command::Rate(1.0),
        _ => return None,
    })
}

/// The command a key that types `text` asks for, if any, in either case.
fn character_command(text: &str) -> Option<Command> {
    Some(match text.to_ascii_lowercase().as_str() {
        " " => Command::TogglePause,
        "q" => Command::Quit,
        "l" => Command::ToggleLoop,
        "f" => Command::ToggleFullscreen,
        "h" => Command::ToggleHud,
        "+" | "=" => Command::Exposure(EXPOSURE_STEP),
        "-" | "_" => Command::Exposure(-EXPOSURE_STEP),
        "i" => Command::InPoint,
        "o" => Command::OutPoint,
        "x" => Command::Range(0, usize::MAX),
        "d" => Command::NextTransfer,
        "[" => Command::RateTimes(0.5),
        "]" => Command::RateTimes(2.0),
        _ => return None,
    })
}

/// The keys, for `--help` and the README.
pub const HELP: &str = "Space pause/resume, Left/Right step (paused), Home/End first/last frame, \
L loop on/off, I/O in/out point at the frame on screen, X clear them, [/] half/double rate, \
Backspace rate 1, Up/Down or +/- exposure, D next display transfer (sRGB, BT.709, linear), \
F fullscreen, H heads-up display, Q or Esc quit; click or drag on the timeline to seek";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_key_has_its_command() {
        let named = |k| command(&Key::Named(k));
        let ch = |c: &str| command(&Key::Character(c.into()));
        assert_eq!(named(NamedKey::Space), Some(Command::TogglePause));
        assert_eq!(named(NamedKey::ArrowRight), Some(Command::Step(1)));
        assert_eq!(named(NamedKey::ArrowLeft), Some(Command::Step(-1)));
        assert_eq!(named(NamedKey::Home), Some(Command::First));
        assert_eq!(named(NamedKey::End), Some(Command::Last));
        assert_eq!(named(NamedKey::Escape), Some(Command::Quit));
        assert_eq!(ch("Q"), Some(Command::Quit));
        assert_eq!(ch("l"), Some(Command::ToggleLoop));
        assert_eq!(ch("f"), Some(Command::ToggleFullscreen));
        assert_eq!(ch("h"), Some(Command::ToggleHud));
        assert_eq!(ch("+"), Some(Command::Exposure(EXPOSURE_STEP)));
        assert_eq!(ch("-"), Some(Command::Exposure(-EXPOSURE_STEP)));
        assert_eq!(named(NamedKey::ArrowUp), ch("+"));
        assert_eq!(named(NamedKey::ArrowDown), ch("-"));
        assert_eq!(ch("I"), Some(Command::InPoint));
        assert_eq!(ch("o"), Some(Command::OutPoint));
        assert_eq!(ch("x"), Some(Command::Range(0, usize::MAX)));
        assert_eq!(ch("d"), Some(Command::NextTransfer));
        assert_eq!(ch("["), Some(Command::RateTimes(0.5)));
        assert_eq!(ch("]"), Some(Command::RateTimes(2.0)));
        assert_eq!(named(NamedKey::Backspace), Some(Command::Rate(1.0)));
        assert_eq!(ch("z"), None);
        assert_eq!(named(NamedKey::Tab), None);
    }
}
