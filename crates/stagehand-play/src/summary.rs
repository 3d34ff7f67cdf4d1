//! The `playback` section: what `play` showed, dropped and waited for.

use crate::{Millis, PlaySummary};
use stagehand_gpu::diag::human_bytes;
use stagehand_gpu::diag::{Block, Cell, Row, Section, Table, View};

fn ms(m: &Millis) -> Vec<Cell> {
    [m.p50, m.p99, m.max]
        .iter()
        .map(|v| Cell::text(format!("{v:.3}")))
        .collect()
}

impl Section for PlaySummary {
    fn name(&self) -> &str {
        "playback"
    }

    fn view(&self) -> View {
        let f = &self.frames;
        let fields = vec![
            ("adapter".into(), Cell::text(&self.adapter)),
            (
                "frames".into(),
                Cell::text(format!(
                    "{}x{} at {} fps into {}x{}",
                    self.size.0, self.size.1, self.fps, self.output_size.0, self.output_size.1
                )),
            ),
            ("pushed".into(), Cell::int(f.pushed)),
            ("presented".into(), Cell::int(f.shown)),
            ("dropped".into(), Cell::int(f.dropped)),
            ("late".into(), Cell::int(f.late)),
            ("failed".into(), Cell::int(f.failed)),
            (
                "seconds".into(),
                Cell::text(format!(
                    "{:.2} (after a {:.2} s pre-roll)",
                    self.seconds, self.preroll
                )),
            ),
            (
                "decode".into(),
                Cell::text(if self.decode_bandwidth > 0.0 {
                    format!("{}/s per thread", human_bytes(self.decode_bandwidth as u64))
                } else {
                    "generated in place".into()
                }),
            ),
            (
                "upload".into(),
                Cell::text(format!("{}/s", human_bytes(self.upload_bandwidth as u64))),
            ),
            ("peak staging".into(), Cell::Bytes(self.peak_staging)),
            (
                "after 1st second".into(),
                Cell::Bytes(self.peak_staging_after_warmup),
            ),
            ("peak textures".into(), Cell::Bytes(self.peak_textures)),
        ];
        let rows = vec![
            Row::new("upload latency", ms(&self.upload_latency)),
            Row::new("blocked by uploads", ms(&self.blocked)),
            Row::new("render pass", ms(&self.render)),
        ];
        let table = Table {
            title: Some("milliseconds:".into()),
            columns: ["p50", "p99", "max"].map(String::from).to_vec(),
            rows,
            total: None,
        };
        View {
            blocks: vec![Block::Fields(fields), Block::Table(table)],
            footnotes: vec![
                "presented + dropped + failed = pushed; late: shown more than a frame after its time.".into(),
                "blocked by uploads: render-thread time per tick choosing the frame to show; the render pass (draw + submit) is timed apart.".into(),
                "upload latency: from queued to GPU complete. after 1st second: the staging pool's peak from then on (flat memory: no growth).".into(),
            ],
        }
    }
}
