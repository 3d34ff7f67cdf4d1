//! The `uploads` section: the upload engine's workers, queue and bandwidth.

use crate::diag::report::{Block, Cell, Section, View};
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

/// The engine's numbers at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UploadStats {
    /// Worker threads.
    pub workers: usize,
    /// The priority asked for, and whether the OS applied it.
    pub priority: String,
    /// Uploads accepted and not yet started.
    pub queued: u64,
    /// Uploads started and not yet landed.
    pub active: u64,
    /// Uploads landed.
    pub completed: u64,
    /// Uploads cancelled (by the caller, by release or by shutdown).
    pub cancelled: u64,
    /// Uploads replaced by a newer one to the same region before starting.
    pub superseded: u64,
    /// Uploads that failed.
    pub failed: u64,
    /// Bytes of texel or buffer data landed.
    pub bytes_uploaded: u64,
    /// Bytes landed per second, over the last second.
    pub bandwidth: f64,
    /// Bytes the engine's staging pool holds.
    pub staging_held: u64,
    /// Callbacks that panicked (caught; the upload still ended normally).
    pub callback_panics: u64,
}
