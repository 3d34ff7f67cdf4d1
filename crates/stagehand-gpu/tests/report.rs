//! The diagnostics report: every section, real numbers, JSON equal to text.

mod common;

use common::{buffer_desc, gpu, texture_desc};
use stagehand_gpu::diag::{Cell, Row, Section, Table, View};

const SECTIONS: [&str; 5] = [
    "system",
    "adapter",
    "versions",
    "object_counts",
    "wgpu_report",
];

#[test]
fn report_has_every_section_in_text_and_json() {
    let gpu = gpu();
    let report = gpu.report();
    assert_eq!(report.names().collect::<Vec<_>>(), SECTIONS);
    let text = report.to_text();
    for name in SECTIONS {
        assert!(
            text.contains(&format!("\u{2588}\u{2588} {name}:")),
            "{name} missing:\n{text}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&report.to_json_string()).expect("report JSON parses");
    for name in SECTIONS {
        assert!(json.get(name).is_some(), "{name} missing from JSON");
    }
    assert_eq!(json["adapter"]["name"], gpu.info().name.as_str());
    assert!(json["system"]["cpus"].as_u64().unwrap() >= 1);
    assert!(
        !json["wgpu_report"]["hub"].as_array().unwrap().is_empty(),
        "wgpu-core gives a global report"
    );
}

#[test]
fn object_counts_in_json_and_text_carry_the_same_numbers() {
    let gpu = gpu();
    let _buffer = gpu.device().create_buffer(&buffer_desc("b", 784)).unwrap();
    let _texture = gpu
        .device()
        .create_texture(&texture_desc("t", 128, 128, 1))
        .unwrap();
    let report = gpu.report();
    let counts = report.section("object_counts").unwrap();
    let objects = counts["objects"].as_array().unwrap();
    let buffer = objects.iter().find(|o| o["kind"] == "Buffer").unwrap();
    let texture = objects.iter().find(|o| o["kind"] == "Texture").unwrap();
    assert_eq!(
        (buffer["count"].as_u64(), buffer["bytes"].as_u64()),
        (Some(1), Some(784))
    );
    assert_eq!(
        (texture["count"].as_u64(), texture["bytes"].as_u64()),
        (Some(1), Some(65_536))
    );
    assert_eq!(counts["total_bytes"].as_u64(), Some(784 + 65_536));
    let text = report.to_text();
    let line = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap()
            .to_owned()
    };
    let words = |l: String| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(words(line("Buffer:"))[1..3], ["1", "784"]);
    assert_eq!(words(line("Texture:"))[1..3], ["1", "65.5K"]);
    // wgpu's own registry agrees that one buffer is held by the user.
    let hub = report.section("wgpu_report").unwrap()["hub"]
        .as_array()
        .unwrap()
        .clone();
    let buffers = hub.iter().find(|h| h["name"] == "buffers").unwrap();
    assert_eq!(buffers["kept_from_user"].as_u64(), Some(1));
}

/// A section defined outside the crate, as the pool and upload parts will be.
#[derive(serde::Serialize)]
struct Custom {
    frames: u64,
}

impl Section for Custom {
    fn name(&self) -> &str {
        "custom"
    }
    fn view(&self) -> View {
        let table = Table {
            title: None,
            columns: vec!["frames".into()],
            rows: vec![Row::new("player", vec![Cell::int(self.frames)])],
            total: None,
        };
        View {
            blocks: vec![stagehand_gpu::diag::Block::Table(table)],
            footnotes: vec!["made outside".into()],
        }
    }
}

#[test]
fn new_sections_plug_in_without_touching_the_renderer() {
    let gpu = gpu();
    let mut report = gpu.report();
    report.add(&Custom { frames: 42 });
    assert_eq!(report.section("custom").unwrap()["frames"], 42);
    let text = report.to_text();
    assert!(
        text.contains("\u{2588}\u{2588} custom:") && text.contains("player:      42"),
        "{text}"
    );
    assert!(text.contains("* made outside"));
}

#[test]
fn the_backend_wgpu_backend_names_is_the_one_opened() {
    let Ok(wanted) = std::env::var("WGPU_BACKEND") else {
        eprintln!("SKIPPED: WGPU_BACKEND is not set, any adapter will do");
        return;
    };
    let gpu = gpu();
    let backends = stagehand_gpu::backend::wgpu::parse_backends(&wanted).unwrap();
    let opened = gpu.info().backend;
    assert!(
        backends.contains(opened.into()),
        "asked for {wanted}, opened {opened:?}"
    );
}
