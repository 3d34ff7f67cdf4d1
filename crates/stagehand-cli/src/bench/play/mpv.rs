//! mpv, the player we measure ourselves against: the same files, its own
//! GPU renderer on the same software GL (`--vo=gpu --gpu-sw
//! --gpu-api=opengl`), into a window of the same size. A sequence goes in as
//! `mf://@LIST`, a file naming the frames in natural order (mpv's own
//! glob sorts `frame.10` before `frame.9`).
//!
//! What it showed and dropped comes from mpv's own record of each frame
//! (`--dump-stats`): its output writes `start video-flip` for each frame
//! it presents and `drop-vo` for each it drops (`--framedrop=vo`, mpv's
//! default, made explicit: the decoder never drops). Its properties read
//! from a script were tried first and were not as good: the last drops
//! had not reached the script's observers at shutdown, and `tick` events
//! do not come one per presented frame.

use super::footage::Written;
use super::outcome::Measured;
use super::scenarios::{FPS, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;

/// mpv, found and ready.
#[derive(Clone, Debug)]
pub struct Mpv {
    /// Its version line, e.g. `mpv 0.35.1`.
    pub version: String,
    /// Where the frame lists go.
    lists: PathBuf,
}

impl Mpv {
    /// Finds mpv on the `PATH`, to write its frame lists into `runs`; the
    /// error is what its column says instead.
    pub fn find(runs: &Path) -> Result<Self, String> {
        let out = Command::new("mpv")
            .args(["--no-config", "--version"])
            .output();
        let out = match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err("not installed (scripts/setup installs it)".into());
            }
            Err(e) => return Err(format!("does not run: {e}")),
            Ok(out) => out,
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let first = super::child::first_line(&text).unwrap_or("mpv");
        let version = first.split(" Copyright").next().unwrap_or(first).to_owned();
        Ok(Self {
            version,
            lists: runs.to_owned(),
        })
    }

    /// The command that plays `footage` for `scenario`, recording its
    /// frames into `stats`; or why mpv has none.
    pub fn command(
        &self,
        footage: &Written,
        scenario: Scenario,
        stats: &Path,
    ) -> Result<Command, String> {
        if let Some(why) = no_equivalent(scenario) {
            return Err(why.into());
        }
        let mut command = Command::new("mpv");
        command.args([
            "--no-config",
            "--vo=gpu",
            "--gpu-sw",
            "--gpu-api=opengl",
            "--no-audio-display",
            "--geometry=1920x1080",
            "--framedrop=vo",
            "--term-status-msg=",
            "--msg-level=all=warn",
        ]);
        command.arg(format!("--dump-stats={}", stats.display()));
        if footage.files.is_empty() {
            command.arg(&footage.path);
        } else {
            let list = self.list(footage)?;
            command.arg(format!("--mf-fps={FPS}"));
            command.arg(format!("mf://@{}", list.display()));
        }
        Ok(command)
    }

    /// Writes the frames' list (absolute paths, natural order).
    fn list(&self, footage: &Written) -> Result<PathBuf, String> {
        let path = self.lists.join(format!("{}.list", footage.kind.name()));
        let mut text = String::new();
        for file in &footage.files {
            let file = std::path::absolute(file).map_err(|e| e.to_string())?;
            text += &format!("{}\n", file.display());
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

/// Why mpv has no run for `scenario`; `None` where it has one.
pub fn no_equivalent(scenario: Scenario) -> Option<&'static str> {
    match scenario {
        Scenario::First | Scenario::Loop => Some("no headless output"),
        Scenario::Preroll => Some("no whole-footage pre-roll"),
        Scenario::Tier => Some("no GPU cache"),
        Scenario::Window => None,
    }
}

/// What mpv's record of a run says: frames presented and dropped.
pub fn measured(stats: &str) -> Result<Measured, String> {
    let mut shown = 0;
    let mut dropped = 0;
    let mut lines = 0;
    for line in stats.lines() {
        lines += 1;
        // `<microseconds> start video-flip`, `<microseconds> drop-vo`.
        let event: Vec<&str> = line.split_whitespace().skip(1).collect();
        match event[..] {
            ["start", "video-flip"] => shown += 1,
            ["drop-vo"] => dropped += 1,
            _ => {}
        }
    }
    if lines == 0 {
        return Err("it wrote no record of its frames (--dump-stats)".into());
    }
    Ok(Measured {
        shown: Some(shown),
        dropped: Some(dropped),
        ..Measured::default()
    })
}

/// Why mpv could not play an input, from what it printed: its first
/// message that is not a module's warning, else the first line at all.
pub fn complaint(stdout: &str, stderr: &str) -> Option<String> {
    let lines = || {
        stderr
            .lines()
            .chain(stdout.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
    };
    let mut plain = lines().filter(|l| !l.starts_with('['));
    plain.next().or_else(|| lines().next()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flip_is_a_frame_shown_and_each_drop_one_dropped() {
        let stats = "10014060 start init\n10014108 end init\n\
                     10090395 start video-flip\n10091155 end video-flip\n\
                     10100000 drop-vo\n10110000 value 0.041667 frame-duration\n\
                     10133295 start video-flip\n10139222 end video-flip\n";
        let m = measured(stats).unwrap();
        assert_eq!(
            (m.shown, m.dropped, m.never_pushed),
            (Some(2), Some(1), None)
        );
    }

    #[test]
    fn no_record_is_an_error_not_zero_frames() {
        assert!(measured("").is_err());
    }

    #[test]
    fn the_complaint_is_the_plain_message_not_a_module_warning() {
        let out = "[vo/gpu] warning\nFailed to recognize file format.\n";
        assert_eq!(
            complaint(out, "").as_deref(),
            Some("Failed to recognize file format.")
        );
        assert_eq!(complaint("", "").as_deref(), None);
    }

    #[test]
    fn mpv_runs_only_the_window_scenario() {
        for s in Scenario::ALL {
            assert_eq!(no_equivalent(s).is_none(), s == Scenario::Window, "{s:?}");
        }
    }
}
