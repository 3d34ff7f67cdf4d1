//! What a playback did: [`PlaySummary`], and its `playback` report section.

use crate::cache::CacheStats;
use crate::cache::gpu::GpuCacheStats;
use crate::convert::format::FormatPlan;
use crate::options::Mode;
use crate::render::Display;
use serde::Serialize;
use stagehand_gpu::diag::human_bytes;
use stagehand_gpu::diag::{Block, Cell, Row, Section, Table, View};
use stagehand_gpu::upload::FrameStats;

/// Progress while playing, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Render ticks done.
    pub tick: u64,
    /// Render ticks in all.
    pub ticks: u64,
    /// Frames shown and dropped so far.
    pub frames: FrameStats,
    /// Upload bandwidth over the last second, bytes per second.
    pub bandwidth: f64,
}

/// Percentiles in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Millis {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Millis {
    /// The percentiles of `samples` (milliseconds); zeros when empty.
    pub fn of(mut samples: Vec<f64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: usize| samples[(samples.len() * q / 100).min(samples.len() - 1)];
        Self {
            p50: at(50),
            p99: at(99),
            max: samples[samples.len() - 1],
        }
    }
}

/// The frame shown at a `PlayOptions::save_ticks` tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SavedTick {
    /// The render tick.
    pub tick: u64,
    /// The frame number on screen (the sequence's own number where names
    /// carry one, else its position from 0); `None` before the first frame.
    pub frame: Option<i64>,
}

/// What the frame buffers did: frames written into memory allocated for
/// them, and into memory an earlier frame gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameBufferStats {
    /// Buffers allocated (touched for the first time by their frame).
    pub allocated: u64,
    /// Buffers reused.
    pub reused: u64,
    /// Most bytes of buffers held at once.
    pub peak_bytes: u64,
    /// Frames the GPU copied from these buffers where their decoder wrote
    /// them, with no copy into staging first (a device that imports host
    /// memory, a frame laid out as its upload's staging).
    pub copied_in_place: u64,
}

/// One pass over the sequence (looping plays several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PassStats {
    /// Frames of the pass (its ticks less gaps).
    pub frames: u64,
    /// Frames put on screen during the pass's ticks.
    pub shown: u64,
    /// Frames of the pass not shown: dropped, failed or never pushed.
    pub missed: u64,
    /// Frames uploaded for the pass's ticks (through the frame queue or
    /// into the GPU tier); 0 for a pass played from the GPU tier alone.
    pub uploads: u64,
}

impl PassStats {
    /// Counts `other`'s frames into this pass's.
    pub fn add(&mut self, other: &PassStats) {
        self.frames += other.frames;
        self.shown += other.shown;
        self.missed += other.missed;
        self.uploads += other.uploads;
    }
}

/// What a playback did.
#[derive(Clone, Debug, Serialize)]
pub struct PlaySummary {
    /// What the user should know first: a damaged movie played up to its
    /// damage.
    pub warnings: Vec<String>,
    /// The adapter it ran on.
    pub adapter: String,
    /// What played: the folder or pattern, or "synthetic".
    pub source: String,
    /// Frame size.
    pub size: (u32, u32),
    /// Render target size (a window's, as it was at the end).
    pub output_size: (u32, u32),
    /// Where frames went: offscreen, or a window with its surface format
    /// and present mode.
    pub output: String,
    /// Time between successive presents while playing (pauses, steps and
    /// seeks excepted), against the frame period `1000 / fps` ms.
    pub present_interval: Millis,
    /// Render-thread time per frame in the window surface's acquire and
    /// present calls (zeros offscreen). A software adapter finishes the
    /// frame's drawing and copies it to the display inside them.
    pub present_calls: Millis,
    /// Target rate.
    pub fps: f64,
    /// Realtime or every frame.
    pub mode: Mode,
    /// The texture format and what the source lost on the way (if anything).
    pub format: FormatPlan,
    /// The display transform; `None` for display-referred (integer) sources.
    pub display: Option<Display>,
    /// Seconds spent before the clock started (cache pre-roll and the
    /// frame queue's first frames).
    pub preroll: f64,
    /// Frames the cache held when the clock started.
    pub prerolled_frames: u64,
    /// Frames of the sequence the run covered (render ticks less gaps):
    /// `presented + dropped + failed + never_pushed` add up to it.
    pub frames_in_range: u64,
    /// Frames pushed (uploaded), shown (from the frame queue and the GPU
    /// tier), dropped, late, failed.
    pub frames: FrameStats,
    /// Frames never pushed: the producer fell behind the clock (realtime
    /// skips them) or playback ended first. Frames the GPU tier showed
    /// were not pushed either, and are not counted here.
    pub never_pushed: u64,
    /// Ticks that fell on a gap in the sequence (the previous frame held).
    pub gaps: u64,
    /// Each pass over the sequence: the first shows what decoding keeps up
    /// with, later ones what the cache holds. Empty for synthetic frames.
    /// At most [`MAX_PASSES`] entries: the last sums every pass from it on,
    /// so a short loop left running does not grow the list.
    pub passes: Vec<PassStats>,
    /// Render ticks run.
    pub ticks: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Frames presented per second of the run.
    pub achieved_fps: f64,
    /// Seconds the clock stood still waiting for frames (every-frame mode).
    pub waited: f64,
    /// Upload latency, queued to GPU complete.
    pub upload_latency: Millis,
    /// Render-thread time per tick spent on uploads: choosing the frame to
    /// show (the frame queue). Drawing is not in it.
    pub blocked: Millis,
    /// Render-thread time per tick drawing and submitting the pass.
    pub render: Millis,
    /// Decoding speed per decode thread, decoded bytes per second (0 for
    /// synthetic frames).
    pub decode_bandwidth: f64,
    /// Frames decoded per second per decode thread.
    pub decode_fps_per_thread: f64,
    /// Bytes uploaded per second of the run.
    pub upload_bandwidth: f64,
    /// The frame cache; `None` for synthetic frames.
    pub cache: Option<CacheStats>,
    /// The GPU tier of the cache; `None` without `gpu_cache_bytes`.
    pub gpu_cache: Option<GpuCacheStats>,
    /// The host buffers decoded frames were written into; `None` for
    /// synthetic frames.
    pub frame_buffers: Option<FrameBufferStats>,
    /// Highest bytes the staging pool held.
    pub peak_staging: u64,
    /// Highest texture bytes alive.
    pub peak_textures: u64,
    /// Highest staging bytes held after the first second (0 for runs of a
    /// second or less); equal to `peak_staging` when memory stays flat.
    pub peak_staging_after_warmup: u64,
    /// The frame on screen at each `PlayOptions::save_ticks` tick.
    pub saved_frames: Vec<SavedTick>,
    /// Frames read back at the ticks asked for.
    #[serde(skip)]
    pub saved: Vec<Saved>,
    /// Sound, when there was any.
    pub audio: Option<AudioSummary>,
}

/// What the sound did, and how well the pictures kept up with it.
#[derive(Clone, Debug, Serialize)]
pub struct AudioSummary {
    /// The stream: file, codec, rate, channels.
    pub source: String,
    /// Where it went: the device, the null sink, or why it did not play.
    pub sink: String,
    /// Whether it kept the clock (realtime mode); in every-frame mode the
    /// pictures wait for decoding, so sound is not played.
    pub played: bool,
    /// Milliseconds each presented frame came after its time by the
    /// sound's clock (negative: before it), absolute values.
    pub drift: Millis,
    /// Frames presented and measured.
    pub measured: u64,
    /// Frames skipped to hold sync.
    pub skipped: u64,
    /// Frames of sound the decoder could not supply in time (silence).
    pub underruns: u64,
    /// Why the sound stopped or never started, if it did (the JSON gives
    /// its message).
    #[serde(serialize_with = "message_of")]
    pub error: Option<crate::audio::SoundError>,
    /// Times the sound moved to keep with the pictures (seeks, steps,
    /// loops back to the start).
    pub seeks: u64,
    /// The second of the sound's source playing when playback ended.
    pub source_end: Option<f64>,
    /// Each measured frame's render tick and its drift in milliseconds
    /// (signed: negative, before its time), in order: for a breakdown over
    /// time (`stagehand bench sync`). Past [`crate::samples::KEPT`] frames
    /// (22 minutes at 24 fps) a uniform sample of them, in no order, so a
    /// long run's memory does not grow. Left out of the JSON.
    #[serde(skip)]
    pub drift_by_tick: Vec<(u64, f64)>,
}

/// Passes the summary's text names one by one.
const PASSES_SHOWN: usize = 24;

/// Serializes an optional error as its message.
fn message_of<S: serde::Serializer>(
    error: &Option<crate::audio::SoundError>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match error {
        Some(e) => serializer.serialize_some(&e.to_string()),
        None => serializer.serialize_none(),
    }
}

/// Frames each pass missed, the first [`PASSES_SHOWN`] passes by name and
/// the rest summed.
fn missed_line(passes: &[PassStats]) -> String {
    let shown = passes.len().min(PASSES_SHOWN);
    let mut line: Vec<String> = passes[..shown]
        .iter()
        .map(|p| p.missed.to_string())
        .collect();
    if passes.len() > shown {
        let mut rest = PassStats::default();
        passes[shown..].iter().for_each(|p| rest.add(p));
        line.push(format!("and {} over the later passes", rest.missed));
    }
    line.join(" ")
}

/// Passes a summary lists one by one.
pub const MAX_PASSES: usize = 1000;

/// Adds `pass` to `passes`: as an entry of its own up to [`MAX_PASSES`],
/// then into the last entry.
pub(crate) fn record_pass(passes: &mut Vec<PassStats>, pass: PassStats) {
    let full = passes.len() >= MAX_PASSES;
    match passes.last_mut() {
        Some(last) if full => last.add(&pass),
        _ => passes.push(pass),
    }
}

/// One read-back: the render target and the frame texture on screen.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The render tick.
    pub tick: u64,
    /// The frame-queue number on screen (the render tick it was made for).
    pub frame: Option<u64>,
    /// Its position in the sequence.
    pub position: Option<usize>,
    /// Target width and height.
    pub size: (u32, u32),
    /// What the render pass drew (in a window, what it presented, overlay
    /// and all): tightly packed RGBA8.
    pub rgba: Vec<u8>,
    /// The texels of the frame texture on screen, tightly packed in the
    /// texture's format (empty before the first frame).
    pub texels: Vec<u8>,
}

fn ms(m: &Millis) -> Vec<Cell> {
    [m.p50, m.p99, m.max]
        .iter()
        .map(|v| Cell::text(format!("{v:.3}")))
        .collect()
}

/// One line of the summary's fields.
type Field = (String, Cell);

fn field(name: &str, value: impl Into<String>) -> Field {
    (name.into(), Cell::text(value))
}

impl PlaySummary {
    /// The summary's lines, in the order they print: what played, the
    /// sound, the picture, the counts, the memory, the frames saved.
    fn fields(&self) -> Vec<Field> {
        let mut fields: Vec<Field> = self.warnings.iter().map(|w| field("warning", w)).collect();
        fields.extend(self.source_fields());
        if let Some(a) = &self.audio {
            fields.extend(audio_fields(a));
        }
        fields.extend(self.picture_fields());
        fields.extend(self.count_fields());
        fields.extend(self.memory_fields());
        if self.passes.len() > 1 {
            fields.push(field("missed per pass", missed_line(&self.passes)));
        }
        fields.extend(self.saved_frames.iter().map(|s| {
            let shown = match s.frame {
                Some(n) => format!("frame {n}"),
                None => "nothing on screen yet".into(),
            };
            (format!("tick {}", s.tick), Cell::text(shown))
        }));
        fields
    }

    /// The adapter, the source, the output, the frames and their format.
    fn source_fields(&self) -> Vec<Field> {
        let (size, out) = (self.size, self.output_size);
        let source = &self.format.source;
        vec![
            field("adapter", &self.adapter),
            field("source", &self.source),
            field("output", &self.output),
            field(
                "frames",
                format!(
                    "{}x{} at {} fps into {}x{}",
                    size.0, size.1, self.fps, out.0, out.1
                ),
            ),
            field(
                "format",
                format!(
                    "{:?} from {} channel(s) of {:?}",
                    self.format.texture, source.channels, source.sample
                ),
            ),
        ]
    }

    /// The planes of a Y'CbCr source, a reduced precision, the display.
    fn picture_fields(&self) -> Vec<Field> {
        let mut fields = Vec::new();
        if let Some(yuv) = &self.format.source.yuv {
            fields.push(field("planes", planes_line(yuv, self.size)));
        }
        if let Some(reduction) = &self.format.reduction {
            fields.push(field("precision", format!("reduced: {reduction}")));
        }
        fields.push(field(
            "display",
            match &self.display {
                Some(d) => format!("{:?}, exposure {:+} stops", d.transfer, d.exposure),
                None => "as stored (display-referred source)".into(),
            },
        ));
        fields
    }

    /// The frames' fate, the time taken, the rates.
    fn count_fields(&self) -> Vec<Field> {
        let f = &self.frames;
        let mut fields = vec![
            field("mode", format!("{:?}", self.mode)),
            ("in range".into(), Cell::int(self.frames_in_range)),
            ("pushed".into(), Cell::int(f.pushed)),
            ("presented".into(), Cell::int(f.shown)),
            ("dropped".into(), Cell::int(f.dropped)),
            ("late".into(), Cell::int(f.late)),
            ("failed".into(), Cell::int(f.failed)),
            ("never pushed".into(), Cell::int(self.never_pushed)),
            ("gaps".into(), Cell::int(self.gaps)),
        ];
        fields.extend(self.rate_fields());
        fields
    }

    /// The time taken and the rates reached.
    fn rate_fields(&self) -> [Field; 4] {
        let decode = self.decode_rate();
        [
            field(
                "seconds",
                format!(
                    "{:.2} (after a {:.2} s pre-roll of {} frames)",
                    self.seconds, self.preroll, self.prerolled_frames
                ),
            ),
            field(
                "achieved",
                format!(
                    "{:.2} fps (waited {:.2} s for frames)",
                    self.achieved_fps, self.waited
                ),
            ),
            field("decode", decode),
            field(
                "upload",
                format!("{}/s", human_bytes(self.upload_bandwidth as u64)),
            ),
        ]
    }

    /// The rate frames were decoded at: bytes a second and frames a second
    /// per thread, or that they were generated in place.
    fn decode_rate(&self) -> String {
        if self.decode_bandwidth > 0.0 {
            format!(
                "{}/s, {:.1} frames/s per thread",
                human_bytes(self.decode_bandwidth as u64),
                self.decode_fps_per_thread
            )
        } else {
            "generated in place".into()
        }
    }

    /// The timings' table, in milliseconds: uploads, the render pass,
    /// presenting.
    fn timing_table(&self) -> Table {
        let rows = vec![
            Row::new("upload latency", ms(&self.upload_latency)),
            Row::new("blocked by uploads", ms(&self.blocked)),
            Row::new("render pass", ms(&self.render)),
            Row::new("acquire + present", ms(&self.present_calls)),
            Row::new("present interval", ms(&self.present_interval)),
        ];
        Table {
            title: Some("milliseconds:".into()),
            columns: ["p50", "p99", "max"].map(String::from).to_vec(),
            rows,
            total: None,
        }
    }

    /// The frame cache, the frame buffers, the GPU tier, the peaks.
    fn memory_fields(&self) -> Vec<Field> {
        let mut fields = Vec::new();
        if let Some(c) = &self.cache {
            fields.push(field("cache", cache_line(c)));
        }
        if let Some(b) = &self.frame_buffers {
            fields.push(field("frame buffers", buffers_line(b)));
        }
        if let Some(g) = &self.gpu_cache {
            fields.push(field("gpu cache", tier_line(g)));
        }
        fields.extend([
            ("peak staging".into(), Cell::Bytes(self.peak_staging)),
            (
                "after 1st second".into(),
                Cell::Bytes(self.peak_staging_after_warmup),
            ),
            ("peak textures".into(), Cell::Bytes(self.peak_textures)),
        ]);
        fields
    }
}

/// The frame cache's line: hits, misses, decodes, evictions, its peak.
fn cache_line(c: &CacheStats) -> String {
    format!(
        "{} hits, {} misses, {} decoded, {} evicted, {} played and let go; peak {} of {}",
        c.hits,
        c.misses,
        c.decoded,
        c.evicted,
        c.played_let_go,
        human_bytes(c.peak_bytes),
        human_bytes(c.budget)
    )
}

/// The frame buffers' line: allocated against reused.
fn buffers_line(b: &FrameBufferStats) -> String {
    let mut line = format!(
        "{} allocated, {} reused; peak {}",
        b.allocated,
        b.reused,
        human_bytes(b.peak_bytes)
    );
    if b.copied_in_place > 0 {
        line += &format!(
            "; {} frames copied to the GPU from where they were decoded",
            b.copied_in_place
        );
    }
    line
}

/// The GPU tier's line: what it holds and what it saved.
fn tier_line(g: &GpuCacheStats) -> String {
    format!(
        "{} frames ({} of {}), {} shown with no upload, {} passed over",
        g.frames,
        human_bytes(g.bytes),
        human_bytes(g.budget),
        g.shown,
        g.passed_over
    )
}

/// The sound's lines: its source, its output, the drift, its error.
fn audio_fields(a: &AudioSummary) -> Vec<Field> {
    let mut fields = vec![field("audio", &a.source)];
    fields.push(field(
        "audio out",
        if a.played {
            format!("{} (underruns: {} frames)", a.sink, a.underruns)
        } else {
            a.sink.clone()
        },
    ));
    if a.played {
        fields.push(field(
            "a/v drift",
            format!(
                "|drift| p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} frames; {} skipped to hold sync",
                a.drift.p50, a.drift.p99, a.drift.max, a.measured, a.skipped
            ),
        ));
    }
    if let Some(e) = &a.error {
        fields.push(field("audio error", e.to_string()));
    }
    fields
}

/// A Y'CbCr source's planes, and what a frame of them costs to upload.
fn planes_line(yuv: &crate::yuv::Yuv, (w, h): (u32, u32)) -> String {
    let rgba = u64::from(w) * u64::from(h) * 4;
    let chroma = match yuv.chroma {
        crate::yuv::Chroma::S420 => "4:2:0",
        crate::yuv::Chroma::S422 => "4:2:2",
        crate::yuv::Chroma::S444 => "4:4:4",
    };
    format!(
        "Y'CbCr {chroma} {}-bit, {:?} {:?} range, chroma {:?}: {} a frame to upload (RGBA8 would be {})",
        yuv.bits,
        yuv.matrix,
        yuv.range,
        yuv.siting,
        human_bytes(yuv.packed_bytes(w, h) as u64),
        human_bytes(rgba),
    )
}

impl Section for PlaySummary {
    fn name(&self) -> &str {
        "playback"
    }

    fn view(&self) -> View {
        View {
            blocks: vec![Block::Fields(self.fields()), Block::Table(self.timing_table())],
            footnotes: vec![
                "presented + dropped + failed + never pushed = in range; late: shown more than a frame after its time.".into(),
                "blocked by uploads: render-thread time per tick choosing the frame to show; the render pass (draw + submit, and in a window the surface's acquire + present) is timed apart.".into(),
                "upload latency: from queued to GPU complete. after 1st second: the staging pool's peak from then on (flat memory: no growth).".into(),
                format!(
                    "present interval: between successive presents while playing; the frame period is {:.3} ms.",
                    1000.0 / self.fps
                ),
            ],
        }
    }
}

impl Section for CacheStats {
    fn name(&self) -> &str {
        "cache"
    }

    fn view(&self) -> View {
        let fields = vec![
            ("hits".into(), Cell::int(self.hits)),
            ("misses".into(), Cell::int(self.misses)),
            ("decoded".into(), Cell::int(self.decoded)),
            ("evicted".into(), Cell::int(self.evicted)),
            ("played, let go".into(), Cell::int(self.played_let_go)),
            ("handed over".into(), Cell::int(self.passed_through)),
            ("frames".into(), Cell::int(self.frames)),
            ("bytes".into(), Cell::Bytes(self.bytes)),
            ("peak".into(), Cell::Bytes(self.peak_bytes)),
            (
                "peak with hand-over".into(),
                Cell::Bytes(self.peak_total_bytes),
            ),
            ("budget".into(), Cell::Bytes(self.budget)),
        ];
        View {
            blocks: vec![Block::Fields(fields)],
            footnotes: vec![
                "hits: frames decoded before the player asked; misses: frames it waited for; handed over: frames that did not fit and were used once.".into(),
                "bytes and frames: what the cache held when playback ended (0: the memory went back).".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_PASSES, PassStats, missed_line, record_pass};

    fn pass(missed: u64) -> PassStats {
        PassStats {
            frames: 2,
            shown: 2 - missed,
            missed,
            uploads: 2,
        }
    }

    #[test]
    fn a_short_loop_left_running_keeps_a_bounded_list_of_passes_that_adds_up() {
        let mut passes = Vec::new();
        let n = 3 * MAX_PASSES as u64;
        for i in 0..n {
            record_pass(&mut passes, pass(i % 2));
        }
        assert_eq!(passes.len(), MAX_PASSES);
        let frames: u64 = passes.iter().map(|p| p.frames).sum();
        let missed: u64 = passes.iter().map(|p| p.missed).sum();
        assert_eq!((frames, missed), (2 * n, n / 2), "every pass counted");
        assert_eq!(passes[1], pass(1), "the first passes stay apart");
    }

    #[test]
    fn the_missed_line_names_the_first_passes_and_sums_the_rest() {
        assert_eq!(missed_line(&[pass(0), pass(1)]), "0 1");
        let many: Vec<_> = (0..30).map(|i| pass(u64::from(i >= 24))).collect();
        let line = missed_line(&many);
        assert!(line.starts_with("0 0 0"), "{line}");
        assert!(line.ends_with("0 and 6 over the later passes"), "{line}");
    }
}
