//! The `adapter` section: which GPU, through which API, with which limits.

use crate::diag::report::{Block, Cell, Row, Section, Table, View};
use serde::Serialize;

/// The adapter a context opened, and the limits worth knowing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AdapterSection {
    /// Adapter name (`llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub name: String,
    /// Graphics API (`Vulkan`, `Gl`, `Metal`, `Dx12`).
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` or `Other`.
    pub device_type: String,
    /// Whether the adapter runs on the CPU (lavapipe, llvmpipe, WARP).
    pub software: bool,
    /// Driver name.
    pub driver: String,
    /// Driver version and build details.
    pub driver_info: String,
    /// PCI vendor id, where there is one.
    pub vendor: u32,
    /// PCI device id, where there is one.
    pub device: u32,
    /// Optional features the device was opened with.
    pub features: Vec<String>,
    /// Limits of the opened device, by wgpu's field name.
    pub limits: Vec<(String, u64)>,
}

impl Section for AdapterSection {
    fn name(&self) -> &str {
        "adapter"
    }

    fn view(&self) -> View {
        let or_none = |s: &str| {
            if s.is_empty() {
                "(not given)".to_owned()
            } else {
                s.to_owned()
            }
        };
        let fields = vec![
            ("name".into(), Cell::text(&self.name)),
            ("backend".into(), Cell::text(&self.backend)),
            ("device_type".into(), Cell::text(&self.device_type)),
            (
                "software".into(),
                Cell::text(if self.software { "yes" } else { "no" }),
            ),
            ("driver".into(), Cell::text(or_none(&self.driver))),
            ("driver_info".into(), Cell::text(or_none(&self.driver_info))),
            (
                "vendor:device".into(),
                Cell::text(format!("{:04x}:{:04x}", self.vendor, self.device)),
            ),
            (
                "features".into(),
                Cell::text(feature_summary(&self.features)),
            ),
        ];
        let rows = self
            .limits
            .iter()
            .map(|(k, v)| Row::new(k.clone(), vec![Cell::int(*v)]))
            .collect();
        let limits = Table {
            title: Some("limits:".into()),
            columns: vec!["value".into()],
            rows,
            total: None,
        };
        View {
            blocks: vec![Block::Fields(fields), Block::Table(limits)],
            footnotes: vec![
                "limits are the opened device's; the JSON form lists every optional feature."
                    .into(),
            ],
        }
    }
}

fn feature_summary(features: &[String]) -> String {
    match features.len() {
        0 => "none".into(),
        n if n <= 4 => features.join(", "),
        n => format!("{n} optional features"),
    }
}
