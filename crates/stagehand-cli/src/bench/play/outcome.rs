//! What one player's run of one scenario gave: numbers, or why there are
//! none. A number the player did not report is `None` (an older build has
//! fewer fields), printed as a dash, never as 0.

/// The result of one run.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It played, and this is what it said.
    Ran(Measured),
    /// It exited with an error at once or later (an option or a format an
    /// older build does not know): the first line of its error.
    Refused(String),
    /// It gave nothing usable: it timed out, was killed, could not be
    /// started, or printed no summary.
    Failed(String),
    /// Not run: the player has no equivalent of the scenario, or is not
    /// there.
    NotRun(String),
}

/// What a run that played reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// The adapter it drew on, as it named it.
    pub adapter: Option<String>,
    /// Frames put on screen.
    pub shown: Option<u64>,
    /// Frames decoded or uploaded but not shown.
    pub dropped: Option<u64>,
    /// Frames never pushed (the producer fell behind the clock).
    pub never_pushed: Option<u64>,
    /// Frames missed on passes after the first (loops).
    pub later_missed: Option<u64>,
    /// Median upload latency, milliseconds.
    pub upload_p50: Option<f64>,
    /// Uploads made for passes after the first, as the bounds the summary
    /// allows (low, high): see `play_json::uploads_after_first`.
    pub uploads_later: Option<(u64, u64)>,
    /// Whether the footage fitted: the RAM cache evicted no frame for
    /// lack of room (and pre-rolled it all), the GPU tier's budget holds
    /// every frame's texture.
    pub held_all: Option<bool>,
    /// CPU seconds of the whole process, user + system.
    pub cpu: Option<f64>,
    /// CPU seconds the bench's own X server spent during the run (window
    /// runs): the drawing the player asked of it.
    pub server_cpu: Option<f64>,
}

impl Outcome {
    /// This outcome with the X server's CPU seconds over the run, where
    /// it ran.
    pub fn with_server_cpu(self, seconds: Option<f64>) -> Self {
        match self {
            Outcome::Ran(m) => Outcome::Ran(Measured {
                server_cpu: seconds,
                ..m
            }),
            other => other,
        }
    }

    /// One line for the progress log.
    pub fn brief(&self) -> String {
        match self {
            Outcome::Ran(m) => {
                let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
                let mut s = format!(
                    "{}/{}/{} shown/dropped/never pushed",
                    n(m.shown),
                    n(m.dropped),
                    n(m.never_pushed)
                );
                if let Some(later) = m.later_missed {
                    s += &format!(", {later} missed after the 1st pass");
                }
                if let Some(cpu) = m.cpu {
                    s += &format!(", {cpu:.2} CPU s");
                }
                if let Some(server) = m.server_cpu {
                    s += &format!(" (X server {server:.2})");
                }
                s
            }
            Outcome::Refused(why) => format!("refused: {why}"),
            Outcome::Failed(why) => format!("failed: {why}"),
            Outcome::NotRun(why) => format!("not run: {why}"),
        }
    }
}
