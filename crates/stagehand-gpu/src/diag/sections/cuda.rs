//! The `cuda` section: the device, its memory, live CUDA objects, pools and
//! pinned staging; or one line saying why CUDA is unavailable.

use crate::diag::report::{Block, Cell, Row, Section, Table, View};
use crate::diag::sections::PoolSection;
use crate::diag::sections::pool::PoolStats;
use crate::diag::sections::upload::UploadStats;
use crate::diag::{ObjectKind, Snapshot, Tracker};
use serde::Serialize;
use std::fmt;

/// What the report says about CUDA.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CudaSection {
    /// `None` when CUDA is available; otherwise why not.
    pub unavailable: Option<String>,
    /// The device.
    pub device: Option<CudaInfo>,
    /// Free and total device memory (`cuMemGetInfo`), bytes.
    pub memory: Option<(u64, u64)>,
    /// Live CUDA objects made through stagehand.
    pub live: Option<CudaCounts>,
    /// Pools over device or pinned memory.
    pub pools: Vec<PoolStats>,
    /// The CUDA upload engine, if there is one.
    pub uploads: Option<UploadStats>,
}

impl CudaSection {
    /// The section of a device that opened.
    pub fn available(
        device: CudaInfo,
        memory: Option<(u64, u64)>,
        live: CudaCounts,
        pools: Vec<PoolStats>,
        uploads: Option<UploadStats>,
    ) -> Self {
        Self {
            unavailable: None,
            device: Some(device),
            memory,
            live: Some(live),
            pools,
            uploads,
        }
    }

    /// The one-line section for a machine where CUDA could not be opened.
    pub fn unavailable(why: &dyn fmt::Display) -> Self {
        Self {
            unavailable: Some(why.to_string()),
            device: None,
            memory: None,
            live: None,
            pools: Vec::new(),
            uploads: None,
        }
    }

    fn live_table(live: &CudaCounts) -> Table {
        let row = |label: &str, count: u64, bytes: Option<u64>| {
            Row::new(
                label,
                vec![Cell::int(count), bytes.map_or(Cell::Empty, Cell::Bytes)],
            )
        };
        Table {
            title: Some("live objects:".into()),
            columns: vec!["count".into(), "bytes".into()],
            rows: vec![
                row(
                    "device allocations",
                    live.device_allocations,
                    Some(live.device_bytes),
                ),
                row(
                    "pinned buffers",
                    live.pinned_buffers,
                    Some(live.pinned_bytes),
                ),
                row("streams", live.streams, None),
                row("events", live.events, None),
            ],
            total: None,
        }
    }
}

/// `12080` as `12.8`.
fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

impl Section for CudaSection {
    fn name(&self) -> &str {
        "cuda"
    }

    fn view(&self) -> View {
        if let Some(why) = &self.unavailable {
            return View {
                blocks: vec![Block::Fields(vec![("unavailable".into(), Cell::text(why))])],
                footnotes: vec![],
            };
        }
        let mut fields = Vec::new();
        if let Some(d) = &self.device {
            let (major, minor) = d.compute_capability;
            fields.push((
                "device".into(),
                Cell::text(format!("{} ({})", d.name, d.ordinal)),
            ));
            fields.push((
                "compute capability".into(),
                Cell::text(format!("{major}.{minor}")),
            ));
            fields.push(("driver".into(), Cell::text(cuda_version(d.driver_version))));
            fields.push((
                "memory pools".into(),
                Cell::text(if d.memory_pools {
                    "supported (not used)"
                } else {
                    "not supported"
                }),
            ));
        }
        if let Some((free, total)) = self.memory {
            fields.push(("memory free".into(), Cell::Bytes(free)));
            fields.push(("memory total".into(), Cell::Bytes(total)));
        }
        if let Some(u) = &self.uploads {
            fields.push(("pinned staging held".into(), Cell::Bytes(u.staging_held)));
            fields.push(("uploads landed".into(), Cell::int(u.completed)));
            fields.push(("uploads failed".into(), Cell::int(u.failed)));
        }
        let mut blocks = vec![Block::Fields(fields)];
        if let Some(live) = &self.live {
            blocks.push(Block::Table(Self::live_table(live)));
        }
        if !self.pools.is_empty() {
            let mut pools = PoolSection::new(self.pools.clone()).pools_table();
            pools.title = Some("pools:".into());
            blocks.push(Block::Table(pools));
        }
        View {
            blocks,
            footnotes: vec![
                "live objects: made through stagehand and not yet freed; memory free: cuMemGetInfo, which counts every process on the device.".into(),
            ],
        }
    }
}

/// What the device is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CudaInfo {
    /// The device's ordinal.
    pub ordinal: usize,
    /// Its name.
    pub name: String,
    /// Compute capability, major and minor.
    pub compute_capability: (i32, i32),
    /// The driver's CUDA version, e.g. 12080 for 12.8.
    pub driver_version: i32,
    /// Device memory, bytes.
    pub total_memory: u64,
    /// Whether the device supports stream-ordered memory pools
    /// (`cuMemAllocAsync`). stagehand's pool does not use them; see
    /// `backend::cuda::DevicePool`.
    pub memory_pools: bool,
}

/// Live CUDA objects and their bytes at one moment, as counted by the
/// tracker a CUDA device (`backend::cuda::Cuda`) was opened with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CudaCounts {
    /// Device allocations (`cuMemAlloc`) alive.
    pub device_allocations: u64,
    /// Their bytes.
    pub device_bytes: u64,
    /// Page-locked host buffers (`cuMemHostAlloc`) alive.
    pub pinned_buffers: u64,
    /// Their bytes.
    pub pinned_bytes: u64,
    /// Streams alive.
    pub streams: u64,
    /// Events alive.
    pub events: u64,
}

impl CudaCounts {
    /// The CUDA rows of `snapshot`.
    pub fn from_snapshot(snapshot: &Snapshot) -> Self {
        let device = snapshot.get(ObjectKind::CudaDeviceMemory);
        let pinned = snapshot.get(ObjectKind::CudaPinnedMemory);
        Self {
            device_allocations: device.count,
            device_bytes: device.bytes,
            pinned_buffers: pinned.count,
            pinned_bytes: pinned.bytes,
            streams: snapshot.get(ObjectKind::CudaStream).count,
            events: snapshot.get(ObjectKind::CudaEvent).count,
        }
    }

    /// The CUDA rows of `tracker` now.
    pub fn of(tracker: &Tracker) -> Self {
        Self::from_snapshot(&tracker.snapshot())
    }
}
