//! One player's rounds of one scenario, as the table's cells: each number
//! as its range over the rounds that ran (`48`, or `46–48`), a dash where
//! the player did not report it, and a marked note where a round did not
//! run, so "3 of 3 rounds" can be read off the cell.

use super::outcome::{Measured, Outcome};
use super::scenarios::Scenario;

/// A player's cells in one row.
#[derive(Clone, Debug, PartialEq)]
pub enum Group {
    /// One cell a column.
    Values(Vec<String>),
    /// One text across the whole group: why there are no numbers.
    Span(String),
}

/// Which of the columns that only some scenarios fill are in the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    /// Frames missed on passes after the first (loops).
    pub later: bool,
    /// Uploads for passes after the first (the GPU tier).
    pub uploads: bool,
    /// The X server's CPU seconds (window runs on the bench's own server).
    pub server: bool,
}

impl Columns {
    /// The column titles of a player's group.
    pub fn titles(self, is_build: bool) -> Vec<&'static str> {
        let mut titles = vec![if is_build {
            "shown/drop/never"
        } else {
            "shown/drop"
        }];
        if self.later && is_build {
            titles.push("missed 2nd+");
        }
        titles.push("CPU s");
        if self.server {
            titles.push("X CPU s");
        }
        if !is_build {
            return titles;
        }
        titles.push("upload p50");
        if self.uploads {
            titles.push("uploads 2nd+");
        }
        titles
    }
}

/// Footnotes, each text once, numbered in order of first use.
#[derive(Debug, Default)]
pub struct Notes {
    texts: Vec<String>,
}

impl Notes {
    /// The mark of `text` (`[1]`), adding it where it is new.
    pub fn mark(&mut self, text: &str) -> String {
        let at = match self.texts.iter().position(|t| t == text) {
            Some(at) => at,
            None => {
                self.texts.push(text.to_owned());
                self.texts.len() - 1
            }
        };
        format!("[{}]", at + 1)
    }

    /// The notes, one line each.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.texts
            .iter()
            .enumerate()
            .map(|(i, t)| format!("[{}] {t}", i + 1))
    }
}

/// The cells of a player's `rounds` of `scenario`.
pub fn group(
    rounds: &[Outcome],
    scenario: Scenario,
    is_build: bool,
    columns: Columns,
    notes: &mut Notes,
) -> Group {
    let ran: Vec<&Measured> = rounds
        .iter()
        .filter_map(|o| match o {
            Outcome::Ran(m) => Some(m),
            _ => None,
        })
        .collect();
    if ran.is_empty() {
        return Group::Span(why_not(rounds, notes));
    }
    let mut cells = values(&ran, scenario, is_build, columns);
    cells[0] += &marks(rounds, &ran, notes);
    Group::Values(cells)
}

/// Why no round gave numbers (the first round's reason).
fn why_not(rounds: &[Outcome], notes: &mut Notes) -> String {
    match rounds.first() {
        Some(Outcome::NotRun(why)) => why.clone(),
        Some(Outcome::Refused(why)) => format!("refused {}", notes.mark(why)),
        Some(Outcome::Failed(why)) => format!("failed {}", notes.mark(why)),
        Some(Outcome::Ran(_)) | None => "\u{2014}".into(),
    }
}

/// `*` where a cache did not hold the footage in some round; a note mark
/// where some rounds gave no numbers.
fn marks(rounds: &[Outcome], ran: &[&Measured], notes: &mut Notes) -> String {
    let mut s = String::new();
    if ran.iter().any(|m| m.held_all == Some(false)) {
        s.push('*');
    }
    let missing = rounds
        .iter()
        .enumerate()
        .find(|(_, o)| !matches!(o, Outcome::Ran(_)));
    if let Some((i, o)) = missing {
        let text = format!(
            "{} of {} rounds gave numbers; round {}: {}",
            ran.len(),
            rounds.len(),
            i + 1,
            o.brief()
        );
        s += &format!(" {}", notes.mark(&text));
    }
    s
}

fn values(ran: &[&Measured], scenario: Scenario, is_build: bool, columns: Columns) -> Vec<String> {
    let int = |f: fn(&Measured) -> Option<u64>| range(ran.iter().map(|m| f(m)), |v| v.to_string());
    let looped = scenario.passes() > 1;
    let frames = if is_build {
        format!(
            "{}/{}/{}",
            int(|m| m.shown),
            int(|m| m.dropped),
            int(|m| m.never_pushed)
        )
    } else {
        format!("{}/{}", int(|m| m.shown), int(|m| m.dropped))
    };
    let cpu = range(ran.iter().map(|m| m.cpu), seconds);
    let server = if scenario.windowed() {
        range(ran.iter().map(|m| m.server_cpu), seconds)
    } else {
        String::new()
    };
    let mut cells = vec![frames];
    if columns.later && is_build {
        cells.push(if looped {
            int(|m| m.later_missed)
        } else {
            String::new()
        });
    }
    cells.push(cpu);
    if columns.server {
        cells.push(server);
    }
    if !is_build {
        return cells;
    }
    cells.push(range(ran.iter().map(|m| m.upload_p50), |v| {
        format!("{v:.1}")
    }));
    if columns.uploads {
        cells.push(if scenario == Scenario::Tier {
            uploads(ran)
        } else {
            String::new()
        });
    }
    cells
}

/// The lowest low bound to the highest high bound over the rounds.
fn uploads(ran: &[&Measured]) -> String {
    let bounds: Vec<(u64, u64)> = ran.iter().filter_map(|m| m.uploads_later).collect();
    let low = bounds.iter().map(|b| b.0).min();
    let high = bounds.iter().map(|b| b.1).max();
    match (low, high) {
        (Some(l), Some(h)) if l == h => l.to_string(),
        (Some(l), Some(h)) => format!("{l}\u{2013}{h}"),
        _ => "\u{2014}".into(),
    }
}

fn seconds(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// `min–max` of the values reported, written by `show`; one value where
/// they agree; a dash where none was reported.
fn range<T: PartialOrd + Copy>(
    values: impl Iterator<Item = Option<T>>,
    show: impl Fn(T) -> String,
) -> String {
    let reported: Vec<T> = values.flatten().collect();
    let pick = |better: fn(&T, &T) -> bool| {
        reported
            .iter()
            .copied()
            .reduce(|a, b| if better(&b, &a) { b } else { a })
    };
    match (pick(|b, a| b < a), pick(|b, a| b > a)) {
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (show(lo), show(hi));
            if lo == hi {
                lo
            } else {
                format!("{lo}\u{2013}{hi}")
            }
        }
        _ => "\u{2014}".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(shown: u64, dropped: u64, cpu: f64) -> Outcome {
        Outcome::Ran(Measured {
            shown: Some(shown),
            dropped: Some(dropped),
            never_pushed: Some(0),
            later_missed: Some(0),
            upload_p50: Some(23.04),
            cpu: Some(cpu),
            ..Measured::default()
        })
    }

    #[test]
    fn rounds_that_agree_give_one_number_and_others_a_range() {
        let rounds = [ran(48, 0, 3.1), ran(46, 2, 3.4), ran(48, 0, 3.2)];
        let cells = group(
            &rounds,
            Scenario::First,
            true,
            Columns::default(),
            &mut Notes::default(),
        );
        let want = ["46\u{2013}48/0\u{2013}2/0", "3.10\u{2013}3.40", "23.0"];
        assert_eq!(cells, Group::Values(want.map(String::from).to_vec()));
    }

    #[test]
    fn a_round_that_did_not_run_is_marked_with_its_reason() {
        let rounds = [ran(48, 0, 3.1), Outcome::Failed("timed out".into())];
        let mut notes = Notes::default();
        let Group::Values(cells) = group(
            &rounds,
            Scenario::First,
            false,
            Columns::default(),
            &mut notes,
        ) else {
            panic!("numbers expected");
        };
        assert_eq!(cells[0], "48/0 [1]");
        let lines: Vec<String> = notes.lines().collect();
        assert_eq!(
            lines,
            ["[1] 1 of 2 rounds gave numbers; round 2: failed: timed out"]
        );
    }

    #[test]
    fn a_player_that_never_ran_says_why_across_its_group() {
        let mut notes = Notes::default();
        let why = Outcome::NotRun("no GPU cache".into());
        let refused = Outcome::Refused("error: unexpected argument '--cache' found".into());
        let cols = Columns::default();
        assert_eq!(
            group(&[why], Scenario::Tier, false, cols, &mut notes),
            Group::Span("no GPU cache".into())
        );
        let r = group(
            &[refused.clone(), refused],
            Scenario::Loop,
            true,
            cols,
            &mut notes,
        );
        assert_eq!(r, Group::Span("refused [1]".into()));
    }

    #[test]
    fn missing_numbers_are_dashes_not_zeros() {
        let old = Outcome::Ran(Measured {
            shown: Some(48),
            dropped: Some(0),
            ..Measured::default()
        });
        let cols = Columns {
            later: true,
            uploads: true,
            server: false,
        };
        let g = group(&[old], Scenario::Tier, true, cols, &mut Notes::default());
        let dash = "\u{2014}";
        let want = [
            format!("48/0/{dash}"),
            dash.into(),
            dash.into(),
            dash.into(),
            dash.into(),
        ];
        assert_eq!(g, Group::Values(want.to_vec()));
    }

    #[test]
    fn the_x_servers_cpu_fills_its_column_in_window_rows_only() {
        let with_server = |cpu, server| match ran(48, 0, cpu) {
            Outcome::Ran(m) => Outcome::Ran(Measured {
                server_cpu: Some(server),
                ..m
            }),
            other => other,
        };
        let cols = Columns {
            server: true,
            ..Columns::default()
        };
        assert_eq!(
            cols.titles(true),
            ["shown/drop/never", "CPU s", "X CPU s", "upload p50"]
        );
        assert_eq!(cols.titles(false), ["shown/drop", "CPU s", "X CPU s"]);
        let rounds = [with_server(3.5, 0.13), with_server(3.6, 0.52)];
        let mut notes = Notes::default();
        let window = group(&rounds, Scenario::Window, false, cols, &mut notes);
        let want = ["48/0", "3.50\u{2013}3.60", "0.13\u{2013}0.52"];
        assert_eq!(window, Group::Values(want.map(String::from).to_vec()));
        // Headless, the column stays empty (a server that drew nothing).
        let first = group(&rounds, Scenario::First, true, cols, &mut notes);
        let Group::Values(cells) = first else {
            panic!()
        };
        assert_eq!(cells[2], "", "{cells:?}");
    }

    #[test]
    fn a_cache_that_did_not_hold_the_footage_is_starred() {
        let held = |h| {
            Outcome::Ran(Measured {
                shown: Some(144),
                held_all: Some(h),
                ..Measured::default()
            })
        };
        let g = group(
            &[held(true), held(false)],
            Scenario::Loop,
            true,
            Columns::default(),
            &mut Notes::default(),
        );
        let Group::Values(cells) = g else { panic!() };
        assert!(cells[0].ends_with('*'), "{cells:?}");
    }

    #[test]
    fn later_uploads_span_the_bounds_of_every_round() {
        let tier = |b| Measured {
            uploads_later: Some(b),
            ..Measured::default()
        };
        assert_eq!(uploads(&[&tier((0, 0)), &tier((0, 0))]), "0");
        assert_eq!(uploads(&[&tier((0, 0)), &tier((2, 5))]), "0\u{2013}5");
    }
}
