//! What to play and how: [`PlayOptions`], with the bounds every option is
//! checked against before anything starts.

use crate::PlayError;
use crate::convert::format::FormatChoice;
pub use crate::error::Field;
use crate::render::Display;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Most frames one run plays (about 116 hours at 24 fps): per-tick
/// measurements are kept for the summary, so a run has to end somewhere.
pub const MAX_FRAMES: u64 = 10_000_000;
/// Most decode threads and transfer workers.
pub const MAX_THREADS: usize = 64;
/// Most staging buffers per frame-queue slot.
pub const MAX_STAGING_BUFFERS: usize = 4;
/// Most frame-queue slots.
pub const MAX_DEPTH: usize = 16;
/// Largest GPU tier: more than any device has today; the device's own
/// out-of-memory stops the tier growing before that.
pub const MAX_GPU_CACHE: u64 = 1 << 40;
/// Most stops of exposure either way.
pub const MAX_EXPOSURE: f64 = 32.0;
/// Largest render target side.
pub const MAX_OUTPUT_SIDE: u32 = 16_384;

/// How the clock treats frames that are not ready in time (`PlayOptions::mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Keep the clock; a frame not ready when its time comes is dropped.
    #[default]
    Realtime,
    /// Never drop: wait for each frame, and report the rate achieved.
    EveryFrame,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "realtime" => Ok(Self::Realtime),
            "every-frame" | "every_frame" | "all" => Ok(Self::EveryFrame),
            _ => Err(format!("{s:?}: expected realtime or every-frame")),
        }
    }
}

/// What to decode into the cache before the clock starts (`PlayOptions::preroll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preroll {
    /// This many frames.
    Frames(usize),
    /// Every frame of the range, as far as the cache budget holds them.
    All,
}

impl std::str::FromStr for Preroll {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        s.parse::<usize>()
            .map(Self::Frames)
            .map_err(|e| format!("{s:?}: expected a number of frames or all ({e})"))
    }
}

/// What to play and how.
#[derive(Clone, Debug)]
pub struct PlayOptions {
    /// A folder of frames, a pattern (`shot.####.exr`) or one image;
    /// `None` plays synthetic frames.
    pub source: Option<PathBuf>,
    /// Frame numbers to play, first and last (inclusive).
    pub range: Option<(i64, i64)>,
    /// Frames per second.
    pub fps: f64,
    /// Size of synthetic frames (a sequence's frames keep their own).
    pub size: (u32, u32),
    /// Size of the render target.
    pub output_size: (u32, u32),
    /// Frames to play; `None`: the sequence once, or 5 seconds of synthetic frames.
    pub frames: Option<u64>,
    /// Decode threads.
    pub threads: usize,
    /// Staging buffers per frame-queue slot.
    pub staging_buffers: usize,
    /// Frame-queue slots.
    pub depth: usize,
    /// Play the sequence again from the start until `frames` have played.
    pub looped: bool,
    /// The texture format.
    pub format: FormatChoice,
    /// How scene-linear frames are shown.
    pub display: Display,
    /// Bytes of decoded frames the cache may hold; `None`: the smaller of
    /// 4 GiB and a quarter of RAM; `Some(0)`: no cache.
    pub cache_bytes: Option<u64>,
    /// Bytes of landed frames to keep on the device (the GPU tier);
    /// `None` or `Some(0)`: none.
    pub gpu_cache_bytes: Option<u64>,
    /// Seconds of frames behind the playhead the cache keeps; without
    /// looping, frames further behind are let go (their buffers hold the
    /// frames decoded next).
    pub read_behind: f64,
    /// Realtime or every frame.
    pub mode: Mode,
    /// Frames to decode into the cache before the clock starts.
    pub preroll: Option<Preroll>,
    /// Render ticks (from 0) whose output to read back.
    pub save_ticks: Vec<u64>,
    /// Where to record decode, render and memory; `None` records nothing.
    pub timeline: Option<Arc<stagehand_gpu::diag::Timeline>>,
    /// The frame to start at: a frame number of the sequence (its
    /// position, for names without numbers or synthetic frames).
    pub seek: Option<i64>,
    /// Start paused on the first frame (a window, or a run with a
    /// [`remote`](Self::remote) to resume it).
    pub start_paused: bool,
    /// Commands from outside the player while it runs (beside a window's
    /// keys); `None`: none.
    pub remote: Option<crate::transport::Remote>,
    /// How a window's surface presents.
    pub present: crate::window::PresentChoice,
    /// Sound: a file beside the pictures, an offset, mute, the output.
    pub audio: crate::audio::AudioOptions,
}

impl Default for PlayOptions {
    fn default() -> Self {
        Self {
            source: None,
            range: None,
            fps: 24.0,
            size: (3840, 2160),
            output_size: (1920, 1080),
            frames: None,
            threads: 2,
            staging_buffers: 1,
            depth: 3,
            looped: false,
            format: FormatChoice::Auto,
            display: Display::default(),
            cache_bytes: None,
            gpu_cache_bytes: None,
            read_behind: 0.5,
            mode: Mode::Realtime,
            preroll: None,
            save_ticks: Vec::new(),
            timeline: None,
            seek: None,
            start_paused: false,
            remote: None,
            present: crate::window::PresentChoice::Auto,
            audio: crate::audio::AudioOptions::default(),
        }
    }
}

impl PlayOptions {
    /// Checks every option against its bounds.
    pub fn validate(&self) -> Result<(), PlayError> {
        self.audio.validate()?;
        self.check_timing()?;
        self.check_threads()?;
        self.check_picture()?;
        self.check_memory()
    }

    /// The rate, the sizes, the frames to play, the range.
    fn check_timing(&self) -> Result<(), PlayError> {
        if !(self.fps.is_finite() && (0.1..=1000.0).contains(&self.fps)) {
            return bad(
                Field::Fps,
                format!("{}: must be from 0.1 to 1000", self.fps),
            );
        }
        self.check_sizes()?;
        self.check_frames()
    }

    /// The frames to play (at most [`MAX_FRAMES`]), the range, and the
    /// frames of preroll, in that order.
    fn check_frames(&self) -> Result<(), PlayError> {
        if let Some(n) = self.frames
            && !(1..=MAX_FRAMES).contains(&n)
        {
            return bad(
                Field::Frames,
                format!("{n}: must be from 1 to {MAX_FRAMES}"),
            );
        }
        if let Some((first, last)) = self.range
            && first > last
        {
            return bad(
                Field::Range,
                format!("{first}-{last}: the first frame is after the last"),
            );
        }
        if let Some(Preroll::Frames(n)) = self.preroll
            && n as u64 > MAX_FRAMES
        {
            return bad(Field::Preroll, format!("{n}: must be at most {MAX_FRAMES}"));
        }
        Ok(())
    }

    /// The frames' size (synthetic) and the picture's.
    fn check_sizes(&self) -> Result<(), PlayError> {
        let side = 1..=MAX_OUTPUT_SIDE;
        for (field, (w, h)) in [
            (Field::Size, self.size),
            (Field::OutputSize, self.output_size),
        ] {
            if !(side.contains(&w) && side.contains(&h)) {
                return bad(
                    field,
                    format!("{w}x{h}: must be from 1x1 to {MAX_OUTPUT_SIDE}x{MAX_OUTPUT_SIDE}"),
                );
            }
        }
        Ok(())
    }

    /// The decoders, the staging buffers, the queue's depth.
    fn check_threads(&self) -> Result<(), PlayError> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return bad(
                Field::Threads,
                format!("{}: must be from 1 to {MAX_THREADS}", self.threads),
            );
        }
        if !(1..=MAX_STAGING_BUFFERS).contains(&self.staging_buffers) {
            return bad(
                Field::StagingBuffers,
                format!(
                    "{}: must be from 1 to {MAX_STAGING_BUFFERS}",
                    self.staging_buffers
                ),
            );
        }
        if !(2..=MAX_DEPTH).contains(&self.depth) {
            return bad(
                Field::Depth,
                format!("{}: must be from 2 to {MAX_DEPTH}", self.depth),
            );
        }
        Ok(())
    }

    /// The exposure.
    fn check_picture(&self) -> Result<(), PlayError> {
        if !(self.display.exposure.is_finite()
            && f64::from(self.display.exposure).abs() <= MAX_EXPOSURE)
        {
            return bad(
                Field::Exposure,
                format!("{}: must be from -32 to 32 stops", self.display.exposure),
            );
        }
        Ok(())
    }

    /// The read-behind, the cache's budget and the GPU tier's.
    fn check_memory(&self) -> Result<(), PlayError> {
        if !(self.read_behind.is_finite() && (0.0..=60.0).contains(&self.read_behind)) {
            return bad(
                Field::ReadBehind,
                format!("{}: must be from 0 to 60 seconds", self.read_behind),
            );
        }
        self.check_cache()?;
        if let Some(bytes) = self.gpu_cache_bytes
            && bytes > MAX_GPU_CACHE
        {
            return bad(
                Field::GpuCache,
                format!(
                    "{}: at most {}",
                    stagehand_gpu::diag::human_bytes(bytes),
                    stagehand_gpu::diag::human_bytes(MAX_GPU_CACHE)
                ),
            );
        }
        Ok(())
    }

    /// The cache's budget: no more than the machine's RAM.
    fn check_cache(&self) -> Result<(), PlayError> {
        if let (Some(bytes), Some(ram)) = (self.cache_bytes, crate::cache::total_memory())
            && bytes > ram
        {
            return bad(
                Field::Cache,
                format!(
                    "{}: more than this machine's {} of RAM",
                    stagehand_gpu::diag::human_bytes(bytes),
                    stagehand_gpu::diag::human_bytes(ram)
                ),
            );
        }
        Ok(())
    }
}

/// An option out of range.
fn bad(field: Field, message: String) -> Result<(), PlayError> {
    Err(PlayError::BadOption { field, message })
}

/// Parses a byte size: `0`, `512M`, `4G`, `1.5GiB`, `100000` (bytes).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?}: expected a size such as 512M or 4G"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0_f64.powi(4),
        other => return Err(format!("{s:?}: unknown unit {other:?} (use K, M, G or T)")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Ok(3 << 29));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("4X").is_err());
        assert!(parse_bytes("-1G").is_err());
    }

    #[test]
    fn options_out_of_bounds_are_refused() {
        let ok = PlayOptions::default();
        assert!(ok.validate().is_ok());
        let cases = [
            PlayOptions {
                fps: 1e-20,
                ..ok.clone()
            },
            PlayOptions {
                fps: f64::NAN,
                ..ok.clone()
            },
            PlayOptions {
                frames: Some(u64::MAX),
                ..ok.clone()
            },
            PlayOptions {
                frames: Some(0),
                ..ok.clone()
            },
            PlayOptions {
                staging_buffers: 100_000,
                ..ok.clone()
            },
            PlayOptions {
                depth: 1_000_000,
                ..ok.clone()
            },
            PlayOptions {
                threads: 0,
                ..ok.clone()
            },
            PlayOptions {
                range: Some((10, 1)),
                ..ok.clone()
            },
            PlayOptions {
                read_behind: f64::INFINITY,
                ..ok.clone()
            },
            PlayOptions {
                cache_bytes: Some(u64::MAX),
                ..ok.clone()
            },
        ];
        for (i, o) in cases.iter().enumerate() {
            assert!(
                matches!(o.validate(), Err(PlayError::BadOption { .. })),
                "case {i} should be refused"
            );
        }
    }
}
