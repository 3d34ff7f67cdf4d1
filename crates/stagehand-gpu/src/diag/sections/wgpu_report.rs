//! The `wgpu_report` section: wgpu's own view of what is alive, beside ours.

use crate::diag::report::{Block, Cell, Row, Section, Table, View};
use serde::Serialize;

/// wgpu's global report, internal counters and allocator report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WgpuReport {
    /// The backend the counters come from.
    pub backend: String,
    /// One entry per object registry in wgpu-core; empty when wgpu gave no report.
    pub hub: Vec<HubEntry>,
    /// wgpu-hal's internal counters.
    pub counters: HalCounters,
    /// The memory allocator's report, on backends that sub-allocate.
    pub allocator: Option<AllocatorSummary>,
}

/// One object registry of wgpu-core's global report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HubEntry {
    /// Registry name (`buffers`).
    pub name: String,
    /// Ids allocated: objects wgpu still holds, including ones users dropped
    /// that the GPU may still use.
    pub allocated: u64,
    /// Objects the user still holds.
    pub kept_from_user: u64,
    /// Ids the user has released.
    pub released_from_user: u64,
    /// Bytes of one registry element (wgpu's bookkeeping, not resource memory).
    pub element_size: u64,
}

/// wgpu-hal's counters; `None` where this backend does not keep the counter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HalCounters {
    /// Counter name and value, in wgpu's order.
    pub values: Vec<(String, Option<i64>)>,
}

/// The totals of a sub-allocator's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AllocatorSummary {
    /// Live sub-allocations.
    pub allocations: u64,
    /// Memory blocks reserved from the driver.
    pub blocks: u64,
    /// Bytes in live sub-allocations.
    pub allocated_bytes: u64,
    /// Bytes reserved in blocks, used or not.
    pub reserved_bytes: u64,
}

fn int_or_dash(v: Option<i64>) -> Cell {
    v.map_or(Cell::text("-"), Cell::Int)
}

impl WgpuReport {
    fn hub_table(&self) -> Table {
        let rows = self
            .hub
            .iter()
            .map(|h| {
                let cells = vec![
                    Cell::int(h.allocated),
                    Cell::int(h.kept_from_user),
                    Cell::int(h.released_from_user),
                    Cell::Bytes(h.element_size),
                ];
                Row::new(h.name.clone(), cells)
            })
            .collect();
        let sum = |f: fn(&HubEntry) -> u64| Cell::int(self.hub.iter().map(f).sum::<u64>());
        let total = Row::new(
            "total",
            vec![
                sum(|h| h.allocated),
                sum(|h| h.kept_from_user),
                Cell::Empty,
                Cell::Empty,
            ],
        );
        Table {
            title: Some("global report (wgpu-core registries):".into()),
            columns: ["allocated", "kept", "released", "el_size"]
                .map(String::from)
                .to_vec(),
            rows,
            total: Some(total),
        }
    }

    fn counters_table(&self) -> Table {
        let rows = self
            .counters
            .values
            .iter()
            .map(|(name, v)| {
                let cell = if name.ends_with("_memory") {
                    v.map_or(Cell::text("-"), |b| Cell::Bytes(b.max(0) as u64))
                } else {
                    int_or_dash(*v)
                };
                Row::new(name.clone(), vec![cell])
            })
            .collect();
        Table {
            title: Some(format!("internal counters ({}):", self.backend)),
            columns: vec!["value".into()],
            rows,
            total: None,
        }
    }

    fn allocator_block(&self) -> Block {
        let fields = match &self.allocator {
            Some(a) => vec![
                ("allocations".into(), Cell::int(a.allocations)),
                ("blocks".into(), Cell::int(a.blocks)),
                ("allocated".into(), Cell::Bytes(a.allocated_bytes)),
                ("reserved".into(), Cell::Bytes(a.reserved_bytes)),
            ],
            None => vec![("allocator".into(), Cell::text("no report on this backend"))],
        };
        Block::Fields(fields)
    }
}

impl Section for WgpuReport {
    fn name(&self) -> &str {
        "wgpu_report"
    }

    fn view(&self) -> View {
        let mut footnotes = vec![
            "allocated: ids wgpu holds, including objects users dropped that queued GPU work still uses; kept: held by users; released: given back by users.".to_owned(),
            "el_size: bytes of wgpu's bookkeeping per object; resource memory is in object_counts.".to_owned(),
            "internal counters: wgpu-hal's live objects and memory; '-' marks a counter this backend does not keep.".to_owned(),
        ];
        if self.hub.is_empty() {
            footnotes.push("wgpu gave no global report (only wgpu-core backends report).".into());
        }
        if self.allocator.is_none() {
            footnotes.push(format!(
                "the allocator report comes from Vulkan and DX12 sub-allocators; {} gives none.",
                self.backend
            ));
        }
        View {
            blocks: vec![
                Block::Table(self.hub_table()),
                Block::Table(self.counters_table()),
                self.allocator_block(),
            ],
            footnotes,
        }
    }
}
