//! `stagehand bench play`: this build against a baseline (here the same
//! binary) and mpv, on tiny footage, on the adapter `WGPU_BACKEND` names
//! (scripts/test runs these on both). What is checked is the table's
//! shape and that its numbers are the players' own, never their speed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a tiny bench run may take on a loaded machine (each player run
/// is a debug build starting a software adapter).
const RUN_WITHIN: Duration = Duration::from_secs(600);

/// How long a refused baseline may take: it is refused before anything runs.
const REFUSE_WITHIN: Duration = Duration::from_secs(20);

/// One bench at a time: two side by side on a 2-core machine would only
/// slow each other down.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn bench(args: &[&str], limit: Duration) -> Ran {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out_file = tempfile("out");
    let err_file = tempfile("err");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_stagehand"))
        .args(["bench", "play"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).expect("a temporary file"))
        .stderr(std::fs::File::create(&err_file).expect("a temporary file"))
        .spawn()
        .expect("the binary starts");
    let status = common::wait_at_most(&mut child, started, limit);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let ran = Ran {
        code: status.and_then(|s| s.code()),
        stdout: read(&out_file),
        stderr: read(&err_file),
        elapsed: started.elapsed(),
    };
    let _ = std::fs::remove_file(out_file);
    let _ = std::fs::remove_file(err_file);
    ran
}

fn tempfile(what: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "stagehand-bench-play-{}-{n}.{what}",
        std::process::id()
    ))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "stagehand-bench-play-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The table's row for `footage` and `scenario`, split into its label part
/// and one part per player.
fn row<'a>(table: &'a str, footage: &str, scenario: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(footage) && l.contains(scenario))
        .unwrap_or_else(|| panic!("no row for {footage} {scenario}:\n{table}"));
    line.split(" | ").map(str::trim).collect()
}

/// `shown/dropped/never` at the start of a build's cells, as numbers.
fn frames(cells: &str) -> (u64, u64, u64) {
    let first = cells.split_whitespace().next().unwrap_or("");
    let n: Vec<u64> = first.split('/').filter_map(|v| v.parse().ok()).collect();
    assert_eq!(n.len(), 3, "not shown/dropped/never: {cells:?}");
    (n[0], n[1], n[2])
}

/// The CPU seconds of a build's cells (the first number with a point).
fn cpu(cells: &str) -> f64 {
    cells
        .split_whitespace()
        .find_map(|c| c.contains('.').then(|| c.parse::<f64>().ok()).flatten())
        .unwrap_or_else(|| panic!("no CPU seconds in {cells:?}"))
}

#[test]
fn bench_play_gives_both_builds_numbers_in_every_row() {
    let dir = scratch("builds");
    let exe = env!("CARGO_BIN_EXE_stagehand");
    let args = [
        "--size",
        "320x180",
        "--length",
        "4",
        "--rounds",
        "1",
        "--kinds",
        "png16,exr-half-zip",
        "--scenarios",
        "first,loop",
        "--baseline",
        exe,
        "--dir",
    ];
    let ran = bench(&[&args[..], &[dir.to_str().unwrap()]].concat(), RUN_WITHIN);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let t = &ran.stdout;
    for (footage, scenario, want) in [
        ("png-16bit", "first pass", 4),
        ("png-16bit", "loop x3", 12),
        ("exr-half-zip", "first pass", 4),
        ("exr-half-zip", "loop x3", 12),
    ] {
        let parts = row(t, footage, scenario);
        assert_eq!(parts.len(), 4, "labels, ours, baseline, mpv: {parts:?}");
        assert!(parts[0].ends_with(&want.to_string()), "{parts:?}");
        for build in &parts[1..3] {
            // Every frame of the run is shown, dropped or never pushed.
            let (s, d, n) = frames(build);
            assert_eq!(s + d + n, want, "{footage} {scenario}: {build:?}");
            assert!(cpu(build) > 0.0, "{build:?}");
        }
        let mpv = parts[3];
        assert!(
            mpv.starts_with("no headless output") || mpv.starts_with("not installed"),
            "{mpv:?}"
        );
    }
    for label in ["ours drew on", "baseline drew on"] {
        assert!(t.contains(label), "{label:?} missing:\n{t}");
    }
    footage_is_kept(&dir, exe);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A second run plays the footage the first wrote, without writing it again.
fn footage_is_kept(dir: &Path, exe: &str) {
    let frame = dir.join("png-16bit-320x180-4").join("shot.1001.png");
    let written = std::fs::metadata(&frame).and_then(|m| m.modified());
    let written = written.unwrap_or_else(|e| panic!("{}: {e}", frame.display()));
    let args = [
        "--size", "320x180", "--length", "4", "--rounds", "1", "--kinds", "png16",
    ];
    let more = [
        "--scenarios",
        "first",
        "--baseline",
        exe,
        "--dir",
        dir.to_str().unwrap(),
    ];
    let ran = bench(&[&args[..], &more[..]].concat(), RUN_WITHIN);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let again = std::fs::metadata(&frame)
        .and_then(|m| m.modified())
        .unwrap();
    assert_eq!(written, again, "the footage was written again");
}

#[test]
fn a_baseline_that_cannot_run_is_refused_before_any_footage() {
    let missing = scratch("missing").join("stagehand");
    let plain = tempfile("not-executable");
    std::fs::write(&plain, b"#!/bin/sh\n").unwrap();
    let folder = std::env::temp_dir();
    for (baseline, says) in [
        (missing.as_path(), "cannot be read"),
        (plain.as_path(), "is not executable"),
        (folder.as_path(), "is not a file"),
    ] {
        let dir = scratch("refused");
        let args = [
            "--baseline",
            baseline.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
        ];
        let ran = bench(&args, REFUSE_WITHIN);
        assert_eq!(ran.code, Some(1), "{baseline:?}: {}", ran.stderr);
        let want = format!("stagehand: --baseline {}: {says}", baseline.display());
        assert!(
            ran.stderr.starts_with(&want),
            "{want:?} expected:\n{}",
            ran.stderr
        );
        assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
        assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
        assert!(ran.elapsed < REFUSE_WITHIN, "took {:?}", ran.elapsed);
        assert!(
            !dir.exists(),
            "{} was made before the baseline was checked",
            dir.display()
        );
    }
    let _ = std::fs::remove_file(plain);
}

/// An older build, as far as the bench can tell: no `--headless` (it drew
/// offscreen only), no `--loop`, and a summary with fewer fields.
const OLDER_BUILD: &str = r#"#!/bin/sh
case "$1" in --version) echo "stagehand 0.0.1"; exit 0 ;; esac
case "$*" in *--help*) echo "Usage: stagehand play [OPTIONS] [DIR]"; exit 0 ;; esac
for a in "$@"; do
    case "$a" in --headless|--loop) echo "error: unexpected argument '$a' found" >&2; exit 2 ;; esac
done
if [ -n "$DISPLAY" ]; then echo "error: an older build is never given a display" >&2; exit 3; fi
echo '{ "playback": { "adapter": "older", "frames": { "pushed": 4, "shown": 3, "dropped": 1 },'
echo '  "upload_latency": { "p50": 1.5 } } }'
"#;

#[cfg(unix)]
#[test]
fn what_an_older_baseline_refuses_or_lacks_is_said_in_its_cells() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("older");
    std::fs::create_dir_all(&dir).unwrap();
    let older = dir.join("older-stagehand");
    std::fs::write(&older, OLDER_BUILD).unwrap();
    std::fs::set_permissions(&older, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = [
        "--size", "320x180", "--length", "4", "--rounds", "1", "--kinds", "png16",
    ];
    let more = [
        "--scenarios",
        "first,loop",
        "--baseline",
        older.to_str().unwrap(),
    ];
    let ran = bench(
        &[&args[..], &more[..], &["--dir", dir.to_str().unwrap()]].concat(),
        RUN_WITHIN,
    );
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let t = &ran.stdout;
    // What it did not report is a dash, not a zero.
    let first = row(t, "png-16bit", "first pass");
    assert!(first[2].starts_with("3/1/\u{2014} "), "{first:?}");
    assert!(first[2].contains("1.5"), "{first:?}");
    let looped = row(t, "png-16bit", "loop x3");
    let mark = looped[2]
        .strip_prefix("refused ")
        .unwrap_or_else(|| panic!("{looped:?}"));
    let note = t
        .lines()
        .find(|l| l.starts_with(mark))
        .unwrap_or_else(|| panic!("{mark}:\n{t}"));
    assert!(
        note.ends_with("exit 2: error: unexpected argument '--loop' found"),
        "{note}"
    );
    // This build's cells are untouched by the baseline's refusal.
    let (s, d, n) = frames(looped[1]);
    assert_eq!(s + d + n, 12, "{looped:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn installed(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn bench_play_puts_mpv_beside_us_in_the_window() {
    if !installed("Xvfb") {
        eprintln!("skipped bench_play_puts_mpv_beside_us_in_the_window: Xvfb is not installed");
        return;
    }
    let dir = scratch("window");
    let args = [
        "--size", "320x180", "--length", "4", "--rounds", "1", "--kinds", "png16",
    ];
    let more = ["--scenarios", "window", "--dir", dir.to_str().unwrap()];
    let ran = bench(&[&args[..], &more[..]].concat(), RUN_WITHIN);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("window: Xvfb :"), "{}", ran.stdout);
    let parts = row(&ran.stdout, "png-16bit", "window 1080p");
    assert_eq!(parts.len(), 3, "labels, ours, mpv: {parts:?}");
    let (s, d, n) = frames(parts[1]);
    assert_eq!(s + d + n, 4, "{parts:?}");
    // The bench's own server's CPU over the run, after the player's.
    assert!(ran.stdout.contains("X CPU s"), "{}", ran.stdout);
    let seconds: Vec<f64> = parts[1]
        .split_whitespace()
        .filter_map(|c| c.contains('.').then(|| c.parse().ok()).flatten())
        .collect();
    assert!(
        seconds.len() >= 2 && seconds[1] >= 0.0,
        "CPU s, then X CPU s: {parts:?}"
    );
    if installed("mpv") {
        let first = parts[2].split_whitespace().next().unwrap_or("");
        let n: Vec<u64> = first.split('/').filter_map(|v| v.parse().ok()).collect();
        assert_eq!(n.len(), 2, "mpv's shown/dropped: {parts:?}");
        assert!(n[0] + n[1] <= 4 && n[0] > 0, "{parts:?}");
        assert!(cpu(parts[2]) > 0.0, "{parts:?}");
    } else {
        assert!(parts[2].starts_with("not installed"), "{parts:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
