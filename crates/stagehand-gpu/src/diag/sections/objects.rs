//! The `object_counts` section: stagehand's own counts per object kind.

use crate::diag::report::{Block, Cell, Row, Section, Table, View};
use crate::diag::tracker::{KindStats, Tracker};
use serde::Serialize;

/// Live objects, resource bytes and peaks per kind, from a [`Tracker`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ObjectCounts {
    /// One entry per kind, in report order.
    pub objects: Vec<KindStats>,
    /// Objects alive, all kinds.
    pub total_count: u64,
    /// Resource bytes alive, all kinds.
    pub total_bytes: u64,
    /// Errors the backend raised outside stagehand's error scopes.
    pub uncaptured_errors: u64,
    /// The latest such error.
    pub last_uncaptured_error: Option<String>,
}

impl ObjectCounts {
    /// The counts of `tracker` now.
    pub fn collect(tracker: &Tracker) -> Self {
        let snap = tracker.snapshot();
        let (uncaptured_errors, last_uncaptured_error) = tracker.uncaptured_errors();
        Self {
            total_count: snap.total_count(),
            total_bytes: snap.total_bytes,
            objects: snap.kinds,
            uncaptured_errors,
            last_uncaptured_error,
        }
    }
}

fn row(s: &KindStats) -> Row {
    let bytes = |n| {
        if s.kind.has_bytes() {
            Cell::Bytes(n)
        } else {
            Cell::Empty
        }
    };
    let cells = vec![
        Cell::int(s.count),
        bytes(s.bytes),
        Cell::int(s.peak_count),
        bytes(s.peak_bytes),
        Cell::int(s.created),
    ];
    Row::new(s.kind.name(), cells)
}

impl Section for ObjectCounts {
    fn name(&self) -> &str {
        "object_counts"
    }

    fn view(&self) -> View {
        let created: u64 = self.objects.iter().map(|s| s.created).sum();
        let total = Row::new(
            "total",
            vec![
                Cell::int(self.total_count),
                Cell::Bytes(self.total_bytes),
                Cell::Empty,
                Cell::Empty,
                Cell::int(created),
            ],
        );
        // A tracker that never saw a CUDA object prints no CUDA rows (the
        // data keeps them, at zero).
        let cuda_used = self
            .objects
            .iter()
            .any(|s| s.kind.is_cuda() && s.created > 0);
        let rows = self
            .objects
            .iter()
            .filter(|s| cuda_used || !s.kind.is_cuda())
            .map(row)
            .collect();
        let table = Table {
            title: None,
            columns: ["count", "resource_mem", "peak", "peak_mem", "created"]
                .map(String::from)
                .to_vec(),
            rows,
            total: Some(total),
        };
        let mut footnotes = vec![
            "count and resource_mem: alive now; peak and peak_mem: highest since start or reset_peaks().".into(),
            "resource_mem: buffer sizes; exact texture sizes over all mips, layers and samples; 8 bytes per query; CUDA allocation lengths (pinned memory is host memory).".into(),
            "created: objects ever created. Sizes are decimal: 65.5K = 65,500 bytes.".into(),
            "peaks are not totalled: each kind's peak may fall at a different moment.".into(),
        ];
        if self.uncaptured_errors > 0 {
            let last = self.last_uncaptured_error.as_deref().unwrap_or("");
            footnotes.push(format!(
                "{} uncaptured backend error(s); latest: {last}",
                self.uncaptured_errors
            ));
        }
        View {
            blocks: vec![Block::Table(table)],
            footnotes,
        }
    }
}
