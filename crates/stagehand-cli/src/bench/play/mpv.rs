//! mpv, the player we measure ourselves against: the same files, its own
//! GPU renderer on the same software GL (`--vo=gpu --gpu-sw
//! --gpu-api=opengl`), into a window of the same size. A sequence goes in as
//! `mf://@LIST`, a file naming the frames in natural order (mpv's own
//! glob sorts `frame.10` before `frame.9`). What it showed and dropped it
//! says itself: a small Lua script, written next to the runs' output,
//! counts the frames it displayed and prints its drop counters at exit.

use super::footage::Written;
use super::outcome::Measured;
use super::scenarios::{FPS, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The line the script prints, before its `key=value` fields.
const TAG: &str = "stagehand-bench-mpv:";

/// The script's name (mpv names its log lines after it).
const SCRIPT: &str = "stagehand_bench.lua";

/// Counts frames shown (a new `estimated-frame-number` at a `tick`, the
/// event after each displayed frame) and keeps mpv's drop counters as
/// they change (they are gone by shutdown), then prints them. A count it
/// never saw is `-`.
const LUA: &str = r#"-- Written by `stagehand bench play`: what mpv showed and dropped.
local shown, ticks, last = 0, 0, nil
local counts = {}
for _, name in ipairs({"decoder-frame-drop-count", "frame-drop-count", "mistimed-frame-count"}) do
  mp.observe_property(name, "number", function(n, v) if v ~= nil then counts[n] = v end end)
end
mp.register_event("tick", function()
  ticks = ticks + 1
  local f = mp.get_property_number("estimated-frame-number")
  if f ~= nil and f ~= last then shown = shown + 1; last = f end
end)
local function count(n)
  if counts[n] == nil then return "-" end
  return string.format("%d", counts[n])
end
mp.register_event("shutdown", function()
  local s = "-"
  if ticks > 0 then s = string.format("%d", shown) end
  io.stdout:write(string.format(
    "stagehand-bench-mpv: shown=%s decoder-dropped=%s vo-dropped=%s mistimed=%s\n",
    s, count("decoder-frame-drop-count"), count("frame-drop-count"), count("mistimed-frame-count")))
  io.stdout:flush()
end)
"#;

/// mpv, found and ready.
#[derive(Clone, Debug)]
pub struct Mpv {
    /// Its version line, e.g. `mpv 0.35.1`.
    pub version: String,
    /// The counting script.
    script: PathBuf,
    /// Where the frame lists go.
    lists: PathBuf,
}

impl Mpv {
    /// Finds mpv on the `PATH` and writes its script into `runs`; the
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
        let script = runs.join(SCRIPT);
        std::fs::write(&script, LUA).map_err(|e| format!("{}: {e}", script.display()))?;
        Ok(Self {
            version,
            script,
            lists: runs.to_owned(),
        })
    }

    /// The command that plays `footage` for `scenario`, or why mpv has
    /// none.
    pub fn command(&self, footage: &Written, scenario: Scenario) -> Result<Command, String> {
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
            "--term-status-msg=",
            // Warnings and errors only; the script's own deprecation
            // notice for `tick` is not one the reader needs.
            "--msg-level=all=warn,stagehand_bench=error",
        ]);
        command.arg(format!("--script={}", self.script.display()));
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

/// What the script printed, from mpv's standard output.
pub fn measured(stdout: &str) -> Result<Measured, String> {
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(TAG))
        .ok_or("it printed no statistics (the Lua script did not run)")?;
    let count = |key: &str| -> Option<u64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    let decoder = count("decoder-dropped");
    let vo = count("vo-dropped");
    let dropped = match (decoder, vo) {
        (None, None) => None,
        (d, v) => Some(d.unwrap_or(0) + v.unwrap_or(0)),
    };
    Ok(Measured {
        shown: count("shown"),
        dropped,
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
            .filter(|l| !l.is_empty() && !l.starts_with(TAG))
    };
    let mut plain = lines().filter(|l| !l.starts_with('['));
    plain.next().or_else(|| lines().next()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_line_gives_shown_and_both_drops() {
        let out = "[vo/gpu/opengl] Suspected software renderer\n\
                   stagehand-bench-mpv: shown=44 decoder-dropped=3 vo-dropped=1 mistimed=-\n";
        let m = measured(out).unwrap();
        assert_eq!(
            (m.shown, m.dropped, m.never_pushed),
            (Some(44), Some(4), None)
        );
    }

    #[test]
    fn counts_mpv_never_reported_stay_unknown() {
        let m = measured("stagehand-bench-mpv: shown=- decoder-dropped=- vo-dropped=-").unwrap();
        assert_eq!((m.shown, m.dropped), (None, None));
        assert!(measured("Exiting... (Errors when loading file)").is_err());
    }

    #[test]
    fn the_complaint_is_the_plain_message_not_a_module_warning() {
        let out = "[vo/gpu] warning\nFailed to recognize file format.\n\
                   stagehand-bench-mpv: shown=0 decoder-dropped=- vo-dropped=- mistimed=-\n";
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
