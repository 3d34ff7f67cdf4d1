//! What stops `stagehand bench play` before its table: a baseline that
//! cannot be run, or a folder that cannot be written. Anything that goes
//! wrong in one player's run is a cell of the table instead, never this.

use crate::Failure;
use std::path::PathBuf;

/// Why the bench stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// `--baseline` names nothing the bench can run: give it the path of
    /// a `stagehand` binary, executable by this user.
    #[error("--baseline {}: {reason}", path.display())]
    Baseline {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The bench could not find its own binary to run as the player
    /// under test (it was moved or deleted while running).
    #[error("cannot find this stagehand binary to run it: {0}")]
    OwnBinary(String),
    /// A folder for the footage or the runs' output cannot be made:
    /// choose another with `--dir`.
    #[error("{}: {reason}", path.display())]
    Dir {
        /// The folder.
        path: PathBuf,
        /// Why it cannot be made or written.
        reason: String,
    },
}

impl From<BenchError> for Failure {
    fn from(e: BenchError) -> Self {
        Self::Other(e.to_string())
    }
}
