//! `stagehand bench play`: builds and players compared in one run.
//!
//! This build, a baseline build (`--baseline`, e.g. one built from the
//! commit a change started from) and mpv each play the same footage (image
//! sequences and movies, written once and kept) in the same scenarios:
//! one realtime pass, a three-pass loop from a cache that holds it,
//! `--preroll all`, the loop with a GPU tier, headless; and one pass into a
//! 1920x1080 window under an Xvfb of the bench's own. Every run is a child
//! process, so each player's CPU time is its own. Rounds interleave: round
//! 1 runs every player on the first scenario, then the next, ..., then
//! round 2 (the players' order turns each round), so drift in the
//! machine's load falls on them all alike. Before every run the footage
//! is read through once, so no player reads it from disk where another
//! found it cached. The table gives each number as its range over the
//! rounds.

mod cells;
mod child;
pub(super) mod display;
mod error;
mod footage;
mod mpv;
mod outcome;
mod play_json;
mod players;
mod scenarios;
mod table;

pub use footage::Footage;
pub use scenarios::{Common, Scenario};

use crate::{Failure, output};
use error::BenchError;
use footage::Written;
use outcome::Outcome;
use players::{Build, Context, Player};
use std::path::{Path, PathBuf};
use table::{Outcomes, Row};

/// What one bench run compares.
#[derive(Debug)]
pub struct Setup {
    /// Where the footage is kept (and each run's output, under `runs/`).
    pub dir: PathBuf,
    /// Frames per sequence (movies get twice as many).
    pub length: u32,
    /// Frame size of the footage.
    pub size: (u32, u32),
    /// Rounds of every scenario.
    pub rounds: usize,
    /// The footage to play.
    pub kinds: Vec<Footage>,
    /// The scenarios to play it in.
    pub scenarios: Vec<Scenario>,
    /// Another `stagehand` binary to compare with.
    pub baseline: Option<PathBuf>,
    /// What every `stagehand play` is given.
    pub common: Common,
}

/// Runs the comparison and prints its table.
pub fn run(setup: &Setup) -> Result<(), Failure> {
    // The baseline is checked before anything is written.
    let baseline = setup.baseline.as_deref().map(Build::baseline).transpose()?;
    let ours = Build::ours()?;
    let runs = make_dir(&setup.dir.join("runs"))?;
    let mut players = vec![Player::Build(ours)];
    players.extend(baseline.map(Player::Build));
    players.push(Player::Mpv(mpv::Mpv::find(&runs)));
    print_header(setup, &players, &runs)?;
    let footage = write_footage(setup)?;
    let screen = if setup.scenarios.iter().any(|s| s.windowed()) {
        let screen = display::Screen::open();
        output::println(&format!("window: {}", screen.describe()))?;
        Some(screen)
    } else {
        None
    };
    let display = screen
        .as_ref()
        .map_or(Err("no window scenario"), display::Screen::display);
    let rows = plan(setup, &footage);
    let ctx = |round| Context {
        size: setup.size,
        common: &setup.common,
        display,
        screen: screen.as_ref(),
        runs: &runs,
        round,
    };
    let outcomes = play_rounds(setup, &rows, &footage, &players, ctx)?;
    output::println(&format!("\n{}", table::render(&rows, &players, &outcomes)))?;
    print_adapters(&players, &outcomes)?;
    Ok(())
}

fn make_dir(path: &Path) -> Result<PathBuf, BenchError> {
    std::fs::create_dir_all(path).map_err(|e| BenchError::Dir {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(path.to_owned())
}

fn print_header(setup: &Setup, players: &[Player], runs: &Path) -> Result<(), Failure> {
    let (w, h) = setup.size;
    let mut text = format!(
        "stagehand bench play: {} footage x {} scenarios, {} round(s) interleaved; {w}x{h} at {} fps, \
         sequences {} frames, movies {}\nfootage: {} (kept for the next run); each run's output: {}\n",
        setup.kinds.len(),
        setup.scenarios.len(),
        setup.rounds,
        scenarios::FPS,
        setup.length,
        Footage::H264.frames(setup.length),
        setup.dir.display(),
        runs.display(),
    );
    for p in players {
        text += &format!("{:<9} {}\n", p.label(), p.describe());
    }
    output::print(&text)?;
    Ok(())
}

/// Each kind's footage, written where it is not there yet; a kind that
/// cannot be written is a row note, not the end of the bench.
fn write_footage(setup: &Setup) -> Result<Vec<Result<Written, String>>, Failure> {
    let mut all = Vec::new();
    for &kind in &setup.kinds {
        let started = std::time::Instant::now();
        let written = footage::prepare(&setup.dir, kind, setup.length, setup.size);
        let status = match &written {
            Ok(w) => format!("{} frames, {}", w.frames, w.path.display()),
            Err(e) => format!("cannot be written: {e}"),
        };
        output::println(&format!(
            "footage {:<13} {status} ({:.1} s)",
            kind.name(),
            started.elapsed().as_secs_f64()
        ))?;
        all.push(written);
    }
    Ok(all)
}

/// The rows: every scenario of every kind, kind by kind.
fn plan(setup: &Setup, footage: &[Result<Written, String>]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (kind, written) in setup.kinds.iter().zip(footage) {
        for &scenario in &setup.scenarios {
            rows.push(Row {
                footage: *kind,
                scenario,
                frames: written.as_ref().ok().map(|w| scenario.frames(w)),
                missing: written.as_ref().err().cloned(),
            });
        }
    }
    rows
}

/// Every round of every row, interleaved; each run logged as it ends.
fn play_rounds<'a>(
    setup: &Setup,
    rows: &[Row],
    footage: &[Result<Written, String>],
    players: &[Player],
    ctx: impl Fn(usize) -> Context<'a>,
) -> Result<Outcomes, Failure> {
    let mut outcomes: Outcomes = vec![vec![Vec::new(); players.len()]; rows.len()];
    let per_kind = setup.scenarios.len();
    for round in 1..=setup.rounds {
        let ctx = ctx(round);
        for (r, row) in rows.iter().enumerate() {
            let Ok(written) = &footage[r / per_kind] else {
                continue;
            };
            for p in turn(players.len(), round) {
                written.warm();
                let before = ctx.server_cpu(row.scenario);
                let outcome = players[p].run(written, row.scenario, &ctx);
                let spent = before
                    .zip(ctx.server_cpu(row.scenario))
                    .map(|(before, after)| after - before);
                let outcome = outcome.with_server_cpu(spent);
                log(setup, round, row, &players[p], &outcome)?;
                outcomes[r][p].push(outcome);
            }
        }
    }
    Ok(outcomes)
}

/// The players' order in `round`: turned by one each round.
fn turn(players: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..players).map(move |i| (i + round - 1) % players)
}

fn log(setup: &Setup, round: usize, row: &Row, p: &Player, o: &Outcome) -> Result<(), Failure> {
    output::println(&format!(
        "round {round}/{} {:<13} {:<13} {:<9} {}",
        setup.rounds,
        row.footage.name(),
        row.scenario.name(),
        p.label(),
        o.brief()
    ))?;
    Ok(())
}

/// The adapter each build said it drew on (the first it named).
fn print_adapters(players: &[Player], outcomes: &Outcomes) -> Result<(), Failure> {
    let mut text = String::new();
    for (i, p) in players.iter().enumerate().filter(|(_, p)| p.is_build()) {
        let adapter = outcomes
            .iter()
            .flat_map(|row| &row[i])
            .find_map(|o| match o {
                Outcome::Ran(m) => m.adapter.clone(),
                _ => None,
            });
        if let Some(a) = adapter {
            text += &format!("{} drew on {a}\n", p.label());
        }
    }
    output::print(&text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::turn;

    #[test]
    fn every_player_leads_a_round_in_turn() {
        let order = |round| turn(3, round).collect::<Vec<_>>();
        assert_eq!(order(1), [0, 1, 2]);
        assert_eq!(order(2), [1, 2, 0]);
        assert_eq!(order(3), [2, 0, 1]);
        assert_eq!(order(4), [0, 1, 2]);
    }
}
