//! The table: one row per footage and scenario, one column group per
//! player, then what the columns mean and the notes the cells point to.

use super::cells::{self, Columns, Group, Notes};
use super::footage::Footage;
use super::outcome::Outcome;
use super::players::Player;
use super::scenarios::Scenario;

/// One row: a scenario on a kind of footage.
#[derive(Clone, Debug)]
pub struct Row {
    /// The footage.
    pub footage: Footage,
    /// The scenario.
    pub scenario: Scenario,
    /// Frames the run covers; `None` where the footage could not be written.
    pub frames: Option<u64>,
    /// Why the footage is missing, where it is.
    pub missing: Option<String>,
}

/// Every outcome: `[row][player][round]`.
pub type Outcomes = Vec<Vec<Vec<Outcome>>>;

const LABELS: [&str; 3] = ["footage", "scenario", "frames"];

/// A rendered row: its labels and each player's cells.
struct Line {
    labels: [String; 3],
    groups: Vec<Group>,
}

/// The table, its legend and its notes, as text.
pub fn render(rows: &[Row], players: &[Player], outcomes: &Outcomes) -> String {
    let columns = Columns {
        later: rows.iter().any(|r| r.scenario.passes() > 1),
        uploads: rows.iter().any(|r| r.scenario == Scenario::Tier),
        server: outcomes
            .iter()
            .flatten()
            .flatten()
            .any(|o| matches!(o, Outcome::Ran(m) if m.server_cpu.is_some())),
    };
    let mut notes = Notes::default();
    let lines: Vec<Line> = rows
        .iter()
        .zip(outcomes)
        .map(|(row, by_player)| line(row, players, by_player, columns, &mut notes))
        .collect();
    let titles: Vec<Vec<&str>> = players
        .iter()
        .map(|p| columns.titles(p.is_build()))
        .collect();
    let mut text = grid(players, &titles, &lines);
    text += &legend(columns, &lines);
    for note in notes.lines() {
        text += &note;
        text.push('\n');
    }
    text
}

fn line(
    row: &Row,
    players: &[Player],
    by_player: &[Vec<Outcome>],
    columns: Columns,
    notes: &mut Notes,
) -> Line {
    let groups = match &row.missing {
        Some(why) => {
            let mark = notes.mark(&format!("no footage: {why}"));
            players
                .iter()
                .map(|_| Group::Span(format!("no footage {mark}")))
                .collect()
        }
        None => players
            .iter()
            .zip(by_player)
            .map(|(p, rounds)| cells::group(rounds, row.scenario, p.is_build(), columns, notes))
            .collect(),
    };
    Line {
        labels: [
            row.footage.name().to_owned(),
            row.scenario.name().to_owned(),
            row.frames.map_or("\u{2014}".into(), |f| f.to_string()),
        ],
        groups,
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Widths: the row labels', then each group's columns'.
fn widths(
    players: &[Player],
    titles: &[Vec<&str>],
    lines: &[Line],
) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut label_w: Vec<usize> = LABELS.iter().map(|l| chars(l)).collect();
    let mut group_w: Vec<Vec<usize>> = titles
        .iter()
        .map(|t| t.iter().map(|c| chars(c)).collect())
        .collect();
    for l in lines {
        for (w, s) in label_w.iter_mut().zip(&l.labels) {
            *w = (*w).max(chars(s));
        }
        for (w, g) in group_w.iter_mut().zip(&l.groups) {
            if let Group::Values(cells) = g {
                for (w, c) in w.iter_mut().zip(cells) {
                    *w = (*w).max(chars(c));
                }
            }
        }
    }
    // A group as wide as its widest span and its title: the last column
    // takes what is missing.
    for (g, w) in group_w.iter_mut().enumerate() {
        let spans = lines.iter().filter_map(|l| match &l.groups[g] {
            Group::Span(s) => Some(chars(s)),
            Group::Values(_) => None,
        });
        let need = spans.chain([chars(players[g].label())]).max().unwrap_or(0);
        let have = span_width(w);
        if let Some(last) = w.last_mut() {
            *last += need.saturating_sub(have);
        }
    }
    (label_w, group_w)
}

/// A group's width: its columns and the two spaces between each.
fn span_width(w: &[usize]) -> usize {
    w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1)
}

fn grid(players: &[Player], titles: &[Vec<&str>], lines: &[Line]) -> String {
    let (label_w, group_w) = widths(players, titles, lines);
    let left = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(chars(s))));
    let right = |s: &str, w: usize| format!("{}{s}", " ".repeat(w.saturating_sub(chars(s))));
    let labels = |cells: [&str; 3]| -> String {
        let parts: Vec<String> = cells
            .iter()
            .zip(&label_w)
            .map(|(c, w)| left(c, *w))
            .collect();
        parts.join("  ")
    };
    let mut out = String::new();
    // Group titles over their columns, then the column titles.
    let mut head = labels(["", "", ""]);
    let mut sub = labels(LABELS);
    for (g, w) in group_w.iter().enumerate() {
        head += &format!(" | {}", left(players[g].label(), span_width(w)));
        let cols: Vec<String> = titles[g].iter().zip(w).map(|(t, w)| right(t, *w)).collect();
        sub += &format!(" | {}", cols.join("  "));
    }
    let rule = "-".repeat(chars(&sub));
    for l in [head.trim_end(), &sub, &rule] {
        out += l;
        out.push('\n');
    }
    for l in lines {
        let mut text = labels([&l.labels[0], &l.labels[1], &l.labels[2]]);
        for (g, w) in l.groups.iter().zip(&group_w) {
            let cell = match g {
                Group::Values(cells) => {
                    let parts: Vec<String> =
                        cells.iter().zip(w).map(|(c, w)| right(c, *w)).collect();
                    parts.join("  ")
                }
                Group::Span(s) => left(s, span_width(w)),
            };
            text += &format!(" | {cell}");
        }
        out += text.trim_end();
        out.push('\n');
    }
    out
}

fn legend(columns: Columns, lines: &[Line]) -> String {
    let mut text = String::from(
        "\nshown/drop/never: frames shown / dropped (decoded or uploaded, never shown) / never pushed \
         (realtime skipped them), over the whole run; mpv: shown / dropped by its decoder and output.\n\
         CPU s: user + system seconds of the whole player process. upload p50: median upload, ms.\n\
         a–b: the lowest and highest over the rounds that ran; one number: every round agreed; \
         \u{2014}: the player does not report it.\n",
    );
    if columns.later {
        text += "missed 2nd+: frames missed on the passes after the first (the loops).\n";
    }
    if columns.server {
        text += "X CPU s: user + system seconds of the bench's own X server during the run (window \
                 runs): what drawing the player's frames cost the display, on the same cores.\n";
    }
    if columns.uploads {
        text += "uploads 2nd+: frames uploaded for the passes after the first (GPU tier runs); a range \
                 where the summary's run-wide count allows one (the first pass missed frames).\n";
    }
    let starred = lines.iter().any(|l| {
        l.groups
            .iter()
            .any(|g| matches!(g, Group::Values(c) if c[0].contains('*')))
    });
    if starred {
        text += "*: the footage did not fit in some round: the RAM cache evicted frames for \
                 lack of room (or pre-rolled fewer than all), or the GPU tier's budget is smaller \
                 than its textures.\n";
    }
    text
}
