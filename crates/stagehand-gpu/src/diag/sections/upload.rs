//! The `uploads` section: the upload engine's workers, queue and bandwidth.

use crate::diag::report::{Block, Cell, Section, View};
use crate::upload::UploadStats;
use serde::Serialize;

/// The numbers of an upload engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UploadSection {
    /// The engine's stats.
    pub engine: UploadStats,
}

impl Section for UploadSection {
    fn name(&self) -> &str {
        "uploads"
    }

    fn view(&self) -> View {
        let e = &self.engine;
        let fields = vec![
            ("workers".into(), Cell::int(e.workers)),
            ("priority".into(), Cell::text(&e.priority)),
            ("queued".into(), Cell::int(e.queued)),
            ("active".into(), Cell::int(e.active)),
            ("completed".into(), Cell::int(e.completed)),
            ("cancelled".into(), Cell::int(e.cancelled)),
            ("superseded".into(), Cell::int(e.superseded)),
            ("failed".into(), Cell::int(e.failed)),
            ("uploaded".into(), Cell::Bytes(e.bytes_uploaded)),
            (
                "bandwidth".into(),
                Cell::text(format!(
                    "{}/s",
                    crate::diag::human_bytes(e.bandwidth as u64)
                )),
            ),
            ("staging held".into(), Cell::Bytes(e.staging_held)),
            ("callback panics".into(), Cell::int(e.callback_panics)),
        ];
        View {
            blocks: vec![Block::Fields(fields)],
            footnotes: vec!["bandwidth: bytes landed over the last second; staging held: the engine's staging pool.".into()],
        }
    }
}
