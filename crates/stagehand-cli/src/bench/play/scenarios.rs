//! What each scenario asks of a player, and of `stagehand play` in
//! particular: the options, the frames and the budgets that make a loop
//! fit its caches.

use super::footage::Written;
use std::ffi::OsString;

/// Frames per second of every run.
pub const FPS: u32 = 24;

/// Room over the footage's own bytes in each budget: the frame queue's
/// textures and rounding in the cache, so "fits" never hangs on a few
/// megabytes.
const MARGIN: u64 = 256 << 20;

/// A way of playing the footage (`--scenarios`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// One pass in realtime, offscreen, with the default cache: what
    /// decoding keeps up with.
    First,
    /// Three passes looped in realtime, offscreen, with a RAM cache that
    /// holds the footage: passes after the first play from the cache.
    Loop,
    /// One pass after `--preroll all` (the whole footage decoded into a
    /// cache that holds it before the clock starts).
    Preroll,
    /// The three-pass loop with a GPU tier (`--gpu-cache`) that holds the
    /// footage too: passes after the first need no upload.
    Tier,
    /// One pass in realtime into a 1920x1080 window (under Xvfb); mpv
    /// plays the same file into a window of the same size.
    Window,
}

impl Scenario {
    /// Every scenario, in table order.
    pub const ALL: [Scenario; 5] = [
        Scenario::First,
        Scenario::Loop,
        Scenario::Preroll,
        Scenario::Tier,
        Scenario::Window,
    ];

    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::First => "first pass",
            Scenario::Loop => "loop x3",
            Scenario::Preroll => "preroll all",
            Scenario::Tier => "gpu-cache x3",
            Scenario::Window => "window 1080p",
        }
    }

    /// A short name for file names.
    pub fn slug(self) -> &'static str {
        match self {
            Scenario::First => "first",
            Scenario::Loop => "loop",
            Scenario::Preroll => "preroll",
            Scenario::Tier => "tier",
            Scenario::Window => "window",
        }
    }

    /// Passes over the footage.
    pub fn passes(self) -> u32 {
        match self {
            Scenario::Loop | Scenario::Tier => 3,
            _ => 1,
        }
    }

    /// Whether it plays into a window.
    pub fn windowed(self) -> bool {
        self == Scenario::Window
    }

    /// Frames the run covers: the footage's, once per pass.
    pub fn frames(self, footage: &Written) -> u64 {
        u64::from(footage.frames) * u64::from(self.passes())
    }

    /// Longest a run may take before it is killed: ten times its playing
    /// time plus two minutes for start-up and pre-roll on a loaded machine.
    pub fn limit(self, footage: &Written) -> std::time::Duration {
        let playing = self.frames(footage) as f64 / f64::from(FPS);
        std::time::Duration::from_secs_f64(120.0 + 10.0 * playing)
    }
}

/// What the bench passes on to every `stagehand play` it runs.
#[derive(Clone, Debug, Default)]
pub struct Common {
    /// `--backend`, where the bench was given one (else the children see
    /// the same `WGPU_BACKEND`).
    pub backend: Option<String>,
    /// `--adapter`, likewise.
    pub adapter: Option<String>,
    /// Decode threads.
    pub threads: usize,
}

/// The arguments of `stagehand play` for `scenario` on `footage`, after
/// `play`. `headless` is false for an older build with no `--headless`
/// (it always drew offscreen, and is given no display).
pub fn play_args(
    scenario: Scenario,
    footage: &Written,
    size: (u32, u32),
    common: &Common,
    headless: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![footage.path.clone().into_os_string()];
    let mut push = |words: &[&str]| args.extend(words.iter().map(OsString::from));
    if scenario.windowed() {
        push(&["--window", "--output-size", "1920x1080"]);
    } else if headless {
        push(&["--headless"]);
    }
    push(&["--json", "--fps", &FPS.to_string()]);
    push(&["--threads", &common.threads.to_string()]);
    push(&["--frames", &scenario.frames(footage).to_string()]);
    if let Some(b) = &common.backend {
        push(&["--backend", b]);
    }
    if let Some(a) = &common.adapter {
        push(&["--adapter", a]);
    }
    match scenario {
        Scenario::First | Scenario::Window => {}
        Scenario::Loop => push(&["--loop", "--cache", &cache(footage, size)]),
        Scenario::Preroll => push(&["--preroll", "all", "--cache", &cache(footage, size)]),
        Scenario::Tier => push(&[
            "--loop",
            "--cache",
            &cache(footage, size),
            "--gpu-cache",
            &tier(footage, size),
        ]),
    }
    args
}

/// A RAM cache that holds the whole footage, up to half the machine's
/// memory (past that the run says the footage did not fit).
fn cache(footage: &Written, size: (u32, u32)) -> String {
    let bytes = bytes(footage, size, footage.kind.cache_bytes_per_pixel());
    let half_ram = stagehand_play::cache::total_memory().map_or(u64::MAX, |r| r / 2);
    mebibytes(bytes.min(half_ram))
}

/// A GPU tier that holds the whole footage as textures.
fn tier(footage: &Written, size: (u32, u32)) -> String {
    mebibytes(bytes(footage, size, footage.kind.texture_bytes_per_pixel()))
}

fn bytes(footage: &Written, (w, h): (u32, u32), per_pixel: u64) -> u64 {
    u64::from(w) * u64::from(h) * per_pixel * u64::from(footage.frames) + MARGIN
}

/// Whole mebibytes, rounded up, as `stagehand play` reads them.
fn mebibytes(bytes: u64) -> String {
    format!("{}M", bytes.div_ceil(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::play::footage::Footage;

    fn footage(kind: Footage, frames: u32) -> Written {
        Written {
            kind,
            path: "/f".into(),
            frames,
            files: Vec::new(),
        }
    }

    fn args(scenario: Scenario, kind: Footage) -> Vec<String> {
        let common = Common {
            threads: 2,
            ..Common::default()
        };
        play_args(scenario, &footage(kind, 48), (3840, 2160), &common, true)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn a_loop_plays_three_passes_with_a_cache_that_holds_them() {
        let a = args(Scenario::Loop, Footage::Png16);
        let at = |flag: &str| a.iter().position(|x| x == flag).map(|i| a[i + 1].clone());
        assert_eq!(at("--frames").as_deref(), Some("144"));
        // 48 frames of 3840x2160 at 8 bytes a pixel, and the margin.
        let want = (3840 * 2160 * 8 * 48 + MARGIN).div_ceil(1 << 20);
        let half_ram = stagehand_play::cache::total_memory().map_or(u64::MAX, |r| r / 2);
        let want = want.min(half_ram.div_ceil(1 << 20));
        assert_eq!(at("--cache"), Some(format!("{want}M")));
        assert!(a.contains(&"--loop".to_owned()) && a.contains(&"--headless".to_owned()));
    }

    #[test]
    fn the_window_run_asks_for_a_1080p_window_and_no_cache_size() {
        let a = args(Scenario::Window, Footage::H264);
        assert!(
            a.windows(3)
                .any(|w| w == ["--window", "--output-size", "1920x1080"])
        );
        assert!(!a.iter().any(|x| x == "--headless" || x == "--cache"));
    }

    #[test]
    fn only_the_tier_run_has_a_gpu_cache() {
        for s in Scenario::ALL {
            let a = args(s, Footage::Rgb8);
            assert_eq!(
                a.contains(&"--gpu-cache".to_owned()),
                s == Scenario::Tier,
                "{s:?}"
            );
        }
    }
}
