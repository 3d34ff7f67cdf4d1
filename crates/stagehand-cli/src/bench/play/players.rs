//! The players compared: this build of `stagehand`, a baseline build
//! (`--baseline`), and mpv. Each run is a child process given the same
//! footage; what it reports becomes an [`Outcome`].

use super::child::{self, End, Finished};
use super::error::BenchError;
use super::footage::Written;
use super::mpv::{self, Mpv};
use super::outcome::{Measured, Outcome};
use super::play_json;
use super::scenarios::{self, Common, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Longest `--version` or `play --help` may take.
const PROBE: Duration = Duration::from_secs(20);

/// A `stagehand` binary.
#[derive(Clone, Debug)]
pub struct Build {
    /// `ours` or `baseline`.
    pub label: &'static str,
    /// The path run.
    pub exe: PathBuf,
    /// What its `--version` says.
    pub version: String,
    /// Whether its `play` has `--headless`. Older builds had no window
    /// and always drew offscreen: they are given no display instead.
    headless_flag: bool,
}

impl Build {
    /// This binary, the player under test.
    pub fn ours() -> Result<Self, BenchError> {
        let exe = std::env::current_exe().map_err(|e| BenchError::OwnBinary(e.to_string()))?;
        Self::probe("ours", &exe).map_err(BenchError::OwnBinary)
    }

    /// The binary at `path`, checked before anything is written: it must
    /// be an executable file that answers `--version` and has `play`.
    pub fn baseline(path: &Path) -> Result<Self, BenchError> {
        let refuse = |reason: String| BenchError::Baseline {
            path: path.to_owned(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(refuse("is not a file".into()));
        }
        if !is_executable(&meta) {
            return Err(refuse("is not executable".into()));
        }
        Self::probe("baseline", path).map_err(refuse)
    }

    fn probe(label: &'static str, exe: &Path) -> Result<Self, String> {
        let version = ask(exe, &["--version"]).map_err(|e| format!("does not run: {e}"))?;
        let help = ask(exe, &["play", "--help"]).map_err(|e| format!("has no play: {e}"))?;
        Ok(Self {
            label,
            exe: exe.to_owned(),
            version: child::first_line(&version).unwrap_or("").to_owned(),
            headless_flag: help.contains("--headless"),
        })
    }

    /// Plays `footage` for `scenario`.
    fn run(&self, footage: &Written, scenario: Scenario, ctx: &Context<'_>) -> Outcome {
        let args =
            scenarios::play_args(scenario, footage, ctx.size, ctx.common, self.headless_flag);
        let mut command = Command::new(&self.exe);
        command.arg("play").args(args);
        let finished = match ctx.spawn(self.label, command, footage, scenario) {
            Ok(f) => f,
            Err(unran) => return unran.into(),
        };
        if !finished.succeeded() {
            return ended_badly(&finished, finished.failure());
        }
        match play_json::measured(&finished.stdout, scenario, footage.frames) {
            Ok(m) => Outcome::Ran(Measured {
                cpu: finished.cpu,
                ..m
            }),
            Err(e) => Outcome::Failed(e),
        }
    }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

/// Runs `exe args` to its end: its standard output, or why it failed.
fn ask(exe: &Path, args: &[&str]) -> Result<String, String> {
    let mut command = Command::new(exe);
    command.args(args);
    let done = child::run(command, PROBE).map_err(|e| e.to_string())?;
    if done.succeeded() {
        Ok(done.stdout)
    } else {
        Err(done.failure())
    }
}

/// A run that did not exit 0: refused where it exited with an error,
/// failed where it was killed or timed out.
fn ended_badly(finished: &Finished, why: String) -> Outcome {
    match finished.end {
        End::Exited(_) => Outcome::Refused(why),
        End::Signalled(_) | End::TimedOut(_) => Outcome::Failed(why),
    }
}

/// One column group of the table.
#[derive(Debug)]
pub enum Player {
    /// A `stagehand` build.
    Build(Build),
    /// mpv, or why it is not there.
    Mpv(Result<Mpv, String>),
}

impl Player {
    /// Its name in the table.
    pub fn label(&self) -> &'static str {
        match self {
            Player::Build(build) => build.label,
            Player::Mpv(_) => "mpv",
        }
    }

    /// Whether it is a `stagehand` build (with uploads to report).
    pub fn is_build(&self) -> bool {
        matches!(self, Player::Build(_))
    }

    /// One line for the header.
    pub fn describe(&self) -> String {
        match self {
            Player::Build(build) => format!("{} ({})", build.exe.display(), build.version),
            Player::Mpv(Ok(m)) => format!("{} (--vo=gpu --gpu-sw --gpu-api=opengl)", m.version),
            Player::Mpv(Err(why)) => why.clone(),
        }
    }

    /// Plays `footage` for `scenario`.
    pub fn run(&self, footage: &Written, scenario: Scenario, ctx: &Context<'_>) -> Outcome {
        match self {
            Player::Build(build) => build.run(footage, scenario, ctx),
            Player::Mpv(Err(why)) => Outcome::NotRun(why.clone()),
            Player::Mpv(Ok(m)) => run_mpv(m, footage, scenario, ctx),
        }
    }
}

fn run_mpv(m: &Mpv, footage: &Written, scenario: Scenario, ctx: &Context<'_>) -> Outcome {
    let stats = ctx
        .runs
        .join(format!("{}.stats", ctx.stem("mpv", footage, scenario)));
    // A record left by an earlier run must not stand in for this one's.
    let _ = std::fs::remove_file(&stats);
    let command = match m.command(footage, scenario, &stats) {
        Ok(c) => c,
        Err(why) => return Outcome::NotRun(why),
    };
    let finished = match ctx.spawn("mpv", command, footage, scenario) {
        Ok(f) => f,
        Err(unran) => return unran.into(),
    };
    let complaint = mpv::complaint(&finished.stdout, &finished.stderr);
    if !finished.succeeded() {
        let how = finished.failure();
        let why = complaint.map_or(how.clone(), |c| format!("{how}: {c}"));
        return ended_badly(&finished, why);
    }
    let record = std::fs::read_to_string(&stats).unwrap_or_default();
    match mpv::measured(&record) {
        Ok(m) if m.shown == Some(0) => Outcome::Refused(format!(
            "showed no frame: {}",
            complaint.unwrap_or_else(|| "no message".into())
        )),
        Ok(m) => Outcome::Ran(Measured {
            cpu: finished.cpu,
            ..m
        }),
        Err(e) => Outcome::Failed(e),
    }
}

/// What every run of a round shares.
#[derive(Debug)]
pub struct Context<'a> {
    /// The footage's frame size.
    pub size: (u32, u32),
    /// Options passed on to every `stagehand play`.
    pub common: &'a Common,
    /// `DISPLAY` for window runs, or why there is none.
    pub display: Result<&'a str, &'a str>,
    /// The display's server, where the bench started it (its CPU time is
    /// read around each window run).
    pub screen: Option<&'a super::display::Screen>,
    /// Where each run's output is kept.
    pub runs: &'a Path,
    /// The round, from 1.
    pub round: usize,
}

impl Context<'_> {
    /// The bench's X server's CPU seconds so far, for a window scenario.
    pub fn server_cpu(&self, scenario: Scenario) -> Option<f64> {
        if !scenario.windowed() {
            return None;
        }
        self.screen?.server_cpu()
    }

    /// The name of a run's files under `runs`.
    fn stem(&self, label: &str, footage: &Written, scenario: Scenario) -> String {
        format!(
            "r{}-{}-{}-{label}",
            self.round,
            footage.kind.name(),
            scenario.slug()
        )
    }

    /// Runs `command` (the player `label`'s) with the display the
    /// scenario wants (none headless), keeps its output under `runs`, and
    /// gives it back; why not where it could not run.
    fn spawn(
        &self,
        label: &str,
        mut command: Command,
        footage: &Written,
        scenario: Scenario,
    ) -> Result<Finished, Unran> {
        command.env_remove("WAYLAND_DISPLAY");
        if scenario.windowed() {
            let display = self.display.map_err(|why| Unran::NoDisplay(why.into()))?;
            command.env("DISPLAY", display);
        } else {
            command.env_remove("DISPLAY");
        }
        let finished = child::run(command, scenario.limit(footage))
            .map_err(|e| Unran::NoStart(e.to_string()))?;
        let stem = self.stem(label, footage, scenario);
        // The kept output is for reading afterwards; a full disk here
        // does not change what the run measured.
        let _ = std::fs::write(self.runs.join(format!("{stem}.out")), &finished.stdout);
        let _ = std::fs::write(self.runs.join(format!("{stem}.err")), &finished.stderr);
        Ok(finished)
    }
}

/// Why a run did not happen.
#[derive(Debug)]
enum Unran {
    /// A window run with no display: why there is none.
    NoDisplay(String),
    /// The program could not be started.
    NoStart(String),
}

impl From<Unran> for Outcome {
    fn from(u: Unran) -> Self {
        match u {
            Unran::NoDisplay(why) => Outcome::NotRun(why),
            Unran::NoStart(e) => Outcome::Failed(format!("could not start: {e}")),
        }
    }
}
