//! The bad-input table of `stagehand play`: options out of range, broken
//! sequences, unwritable outputs and standard output that goes away. Each
//! case must end quickly, with a non-zero status and one line on standard
//! error that says what was wrong (or clap's usage error, status 2), and
//! never with a panic. A short run that works is checked too: its JSON has
//! the fields scripts read, in report order.

mod common;

use exr::prelude::{Image, SpecificChannels, WritableImage};
use half::f16;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a failing case may take: each fails within about a second;
/// the margin is for a loaded machine.
const FAIL_WITHIN: Duration = Duration::from_secs(3);

/// How long any run may go on before the test kills it (a case that
/// plays on for minutes is a failure, not a hang of the test run).
const KILL_AFTER: Duration = Duration::from_secs(60);

/// Frame size of every sequence and synthetic run here: small, so
/// software adapters keep up.
const W: u32 = 64;
/// Frame height; see [`W`].
const H: u32 = 36;

/// Arguments that make a synthetic run small and ten seconds long: a case
/// that fails before or early in playback ends long before the clock would.
const TEN_SECONDS: [&str; 6] = [
    "--seconds",
    "10",
    "--size",
    "64x36",
    "--output-size",
    "64x36",
];

/// What a finished (or killed) `stagehand play` left behind.
struct Finished {
    /// The arguments after `play`, for messages.
    args: Vec<String>,
    /// `None` when the run was killed after [`KILL_AFTER`].
    status: Option<ExitStatus>,
    /// Standard output, when the test captured it.
    stdout: String,
    /// Standard error.
    stderr: String,
    /// Wall time from spawn to exit.
    elapsed: Duration,
}

impl Finished {
    /// The exit code; `None` when killed (or ended by a signal).
    fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Starts `stagehand play args` with `stdout` as its standard output.
fn spawn(args: &[&str], stdout: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stagehand"))
        // Headless whatever the desktop: these tests are about the output.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .arg("play")
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Reads all of `pipe` on its own thread, so a full pipe never stalls the child.
fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// Waits for `child` (killing it after [`KILL_AFTER`]) and collects what it wrote.
fn finish(
    mut child: Child,
    args: &[&str],
    started: Instant,
    stdout: JoinHandle<String>,
) -> Finished {
    let stderr = drain(child.stderr.take());
    let status = common::wait_at_most(&mut child, started, KILL_AFTER);
    let elapsed = started.elapsed();
    Finished {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        elapsed,
    }
}

/// Runs `stagehand play args`, capturing standard output and error.
fn play(args: &[&str]) -> Finished {
    let started = Instant::now();
    let mut child = spawn(args, Stdio::piped());
    let stdout = drain(child.stdout.take());
    finish(child, args, started, stdout)
}

/// Runs `stagehand play args | head -1`: standard output is read for one
/// line, then closed. Returns the run and the line read.
fn play_read_for_one_line(args: &[&str]) -> (Finished, String) {
    let started = Instant::now();
    let mut child = spawn(args, Stdio::piped());
    let out: Option<ChildStdout> = child.stdout.take();
    let mut first = String::new();
    if let Some(out) = out {
        // The reader (and the pipe's read end) is dropped at the end of
        // this block: the closed pipe the child writes into next.
        let _ = BufReader::new(out).read_line(&mut first);
    }
    let done = finish(child, args, started, drain(None::<ChildStdout>));
    (done, first)
}

/// Runs `stagehand play args > /dev/full`: every write to standard output
/// fails with "No space left on device".
#[cfg(target_os = "linux")]
fn play_into_full_disk(args: &[&str]) -> Finished {
    let full = std::fs::File::create("/dev/full").expect("/dev/full opens for writing");
    let started = Instant::now();
    let child = spawn(args, Stdio::from(full));
    finish(child, args, started, drain(None::<ChildStdout>))
}

/// Asserts `done` failed with status 1, within `within`, without a panic,
/// with exactly one line on standard error: `stagehand: ` and then text
/// containing `says`.
fn assert_fails_within(done: &Finished, says: &str, within: Duration) {
    let (args, err) = (&done.args, &done.stderr);
    assert!(!err.contains("panicked"), "play {args:?} panicked:\n{err}");
    assert!(
        done.status.is_some(),
        "play {args:?} still running after {:?}; stderr:\n{err}",
        done.elapsed
    );
    assert_eq!(done.code(), Some(1), "play {args:?}; stderr:\n{err}");
    assert_eq!(
        err.lines().count(),
        1,
        "play {args:?}: want one line on stderr, got:\n{err}"
    );
    assert!(
        err.starts_with("stagehand: "),
        "play {args:?}: the line does not start with `stagehand: `: {err:?}"
    );
    assert!(
        err.contains(says),
        "play {args:?}: the line does not say {says:?}: {err:?}"
    );
    assert!(
        done.elapsed < within,
        "play {args:?} took {:?} to fail (allowed {within:?}): {err:?}",
        done.elapsed
    );
}

/// [`assert_fails_within`] with the usual [`FAIL_WITHIN`].
fn assert_fails(done: &Finished, says: &str) {
    assert_fails_within(done, says, FAIL_WITHIN);
}

/// Asserts clap refused the arguments: status 2, quickly, no panic, its
/// `error:` line naming `option` and the offending `value`, and saying `says`.
fn assert_usage_error(done: &Finished, option: &str, value: &str, says: &str) {
    let (args, err) = (&done.args, &done.stderr);
    assert!(!err.contains("panicked"), "play {args:?} panicked:\n{err}");
    assert_eq!(done.code(), Some(2), "play {args:?}; stderr:\n{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ")
            && first.contains(&format!("invalid value '{value}' for '{option}"))
            && first.contains(says),
        "play {args:?}: first line {first:?} should refuse {value:?} for {option} saying {says:?}"
    );
    assert!(
        done.elapsed < FAIL_WITHIN,
        "play {args:?} took {:?} to refuse",
        done.elapsed
    );
}

/// Asserts standard output could not be written, with status 1, one line
/// that gives `reason`, within [`FAIL_WITHIN`].
fn assert_output_failed(done: &Finished, reason: &str) {
    assert_fails(done, "cannot write to standard output: ");
    assert_eq!(
        done.stderr,
        format!("stagehand: cannot write to standard output: {reason}\n"),
        "play {:?}",
        done.args
    );
}

/// A fresh, empty folder for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("stagehand-play-bad-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary folder is created");
    dir
}

/// The path of frame `n` of the sequence `shot.####.png` in `dir`.
fn frame_path(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("shot.{n:04}.png"))
}

/// Writes a valid `width`x`height` RGB PNG, its pixels varying with `n`.
fn write_png(path: &Path, n: u32, (width, height): (u32, u32)) {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 7) as u8, (n * 5) as u8])
    });
    image.save(path).expect("the PNG is written");
}

/// Writes a valid 64x36 sequence `shot.0001.png` to `shot.{frames}.png`
/// in a fresh folder, and returns the folder.
fn png_sequence(name: &str, frames: u32) -> PathBuf {
    let dir = temp_dir(name);
    for n in 1..=frames {
        write_png(&frame_path(&dir, n), n, (W, H));
    }
    dir
}

/// A path as an argument.
fn arg(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

// --fps

/// `--fps 1e-20` once panicked: "cannot convert float seconds to Duration".
#[test]
fn fps_1e_minus_20_is_refused_without_the_duration_panic() {
    let done = play(&["--fps", "1e-20"]);
    assert_fails(&done, "must be from 0.1 to 1000");
    assert!(done.stderr.contains("--fps "), "{}", done.stderr);
}

/// A rate of zero would divide by zero into the frame period.
#[test]
fn fps_zero_is_refused() {
    assert_fails(&play(&["--fps", "0"]), "--fps 0: must be from 0.1 to 1000");
}

/// A negative rate is refused as out of range, not taken for an option.
#[test]
fn fps_negative_is_refused() {
    assert_fails(
        &play(&["--fps", "-5"]),
        "--fps -5: must be from 0.1 to 1000",
    );
}

/// NaN compares false with every bound, so it must be refused by name.
#[test]
fn fps_nan_is_refused() {
    assert_fails(
        &play(&["--fps", "NaN"]),
        "--fps NaN: must be from 0.1 to 1000",
    );
}

/// An infinite rate would give a frame period of zero.
#[test]
fn fps_infinite_is_refused() {
    assert_fails(
        &play(&["--fps", "inf"]),
        "--fps inf: must be from 0.1 to 1000",
    );
}

/// Above the largest rate the player keeps.
#[test]
fn fps_5000_is_refused() {
    assert_fails(
        &play(&["--fps", "5000"]),
        "--fps 5000: must be from 0.1 to 1000",
    );
}

// --seconds: each once played a single frame or ran forever.

/// Zero seconds once silently played one frame.
#[test]
fn seconds_zero_is_refused_not_played_as_one_frame() {
    assert_fails(&play(&["--seconds", "0"]), "--seconds 0: must be above 0");
}

/// A negative duration once silently played one frame.
#[test]
fn seconds_negative_is_refused_not_played_as_one_frame() {
    assert_fails(&play(&["--seconds=-3"]), "--seconds -3: must be above 0");
}

/// NaN seconds once converted to a frame count silently.
#[test]
fn seconds_nan_is_refused() {
    assert_fails(
        &play(&["--seconds", "NaN"]),
        "--seconds NaN: must be above 0",
    );
}

/// Infinite seconds once ran forever.
#[test]
fn seconds_infinite_is_refused_not_run_forever() {
    assert_fails(
        &play(&["--seconds", "inf"]),
        "--seconds inf: must be above 0",
    );
}

// --frames

/// `u64::MAX` frames once overflowed to 0 when looping and ran forever.
#[test]
fn loop_with_u64_max_frames_is_refused_not_run_forever() {
    assert_fails(
        &play(&["--loop", "--frames", "18446744073709551615"]),
        "--frames 18446744073709551615: must be from 1 to 10000000",
    );
}

// Memory: each of these once allocated without bound.

/// 100000 staging buffers per slot once exhausted memory.
#[test]
fn staging_buffers_100000_is_refused_before_exhausting_memory() {
    assert_fails(
        &play(&["--staging-buffers", "100000"]),
        "--staging-buffers 100000: must be from 1 to 4",
    );
}

/// 100000 frame-queue slots once exhausted GPU memory.
#[test]
fn depth_100000_is_refused_before_exhausting_memory() {
    assert_fails(
        &play(&["--depth", "100000"]),
        "--depth 100000: must be from 2 to 16",
    );
}

/// No decode threads would never decode a frame.
#[test]
fn threads_zero_is_refused() {
    assert_fails(
        &play(&["--threads", "0"]),
        "--threads 0: must be from 1 to 64",
    );
}

/// 100000 threads once exhausted memory starting them.
#[test]
fn threads_100000_is_refused_before_exhausting_memory() {
    assert_fails(
        &play(&["--threads", "100000"]),
        "--threads 100000: must be from 1 to 64",
    );
}

// Broken sequences.

/// Frame 2 of 48 is not a PNG at all: the error names it, and comes
/// long before the two seconds the sequence would play.
#[test]
fn corrupt_second_frame_fails_fast_naming_the_file() {
    let dir = png_sequence("corrupt-second", 48);
    let bad = frame_path(&dir, 2);
    std::fs::write(&bad, b"this is not a PNG, whatever its name says").unwrap();
    let done = play(&[arg(&dir), "--fps", "24", "--output-size", "64x36"]);
    assert_fails(&done, arg(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Frame 2 of 48 is a PNG cut short: its header reads, so the sequence
/// opens, and the decode fails during playback. The error names the file
/// and ends the run at once, not when the clock runs out.
#[test]
fn truncated_second_frame_fails_fast_naming_the_file() {
    let dir = png_sequence("truncated-second", 48);
    let bad = frame_path(&dir, 2);
    let whole = std::fs::read(&bad).unwrap();
    // The signature and IHDR are the first 33 bytes; keep a little of the
    // image data so the header probe passes and the decode does not.
    std::fs::write(&bad, &whole[..whole.len().min(60)]).unwrap();
    let done = play(&[arg(&dir), "--fps", "24", "--output-size", "64x36"]);
    assert_fails(&done, arg(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Frame 3 of 48 is half the size: refused before playback, naming the
/// file and both sizes.
#[test]
fn frame_of_another_size_mid_sequence_fails_naming_both_sizes() {
    let dir = png_sequence("other-size", 48);
    let bad = frame_path(&dir, 3);
    write_png(&bad, 3, (32, 18));
    let done = play(&[arg(&dir), "--fps", "24", "--output-size", "64x36"]);
    assert_fails(
        &done,
        &format!("{} is 32x18, but the sequence is 64x36", bad.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An EXR whose only channel is depth has nothing to show.
#[test]
fn exr_without_rgb_or_y_channels_is_unsupported_naming_the_file() {
    let dir = temp_dir("exr-depth-only");
    let path = dir.join("depth.0001.exr");
    let channels = SpecificChannels::build()
        .with_channel("Z")
        .with_pixel_fn(|p| (f16::from_f32(p.x() as f32 / W as f32),));
    Image::from_channels((W as usize, H as usize), channels)
        .write()
        .to_file(&path)
        .expect("the EXR is written");
    let done = play(&[arg(&path), "--output-size", "64x36"]);
    assert_fails(&done, &format!("{}: unsupported", path.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A folder holding no images is "no frames", naming the folder.
#[test]
fn folder_without_images_is_no_frames() {
    let dir = temp_dir("no-images");
    std::fs::write(dir.join("notes.txt"), b"not a frame").unwrap();
    let done = play(&[arg(&dir), "--output-size", "64x36"]);
    assert_fails(
        &done,
        &format!("no frames (EXR, PNG, JPEG or TIFF) in {}", dir.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A path that is not there is named in the error.
#[test]
fn missing_path_is_refused_naming_it() {
    let dir = temp_dir("missing");
    let missing = dir.join("no-such-folder");
    let done = play(&[arg(&missing), "--output-size", "64x36"]);
    assert_fails(&done, &format!("cannot read {}", missing.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

// Outputs that cannot be written: refused before playback.

/// The PNG of `--save-frame` is created before playback: a folder that is
/// not there fails the ten-second run at once, as a write.
#[test]
fn save_frame_into_a_missing_folder_fails_before_playback() {
    let mut args = vec!["--save-frame", "0", "/nonexistent-dir/x.png"];
    args.extend(TEN_SECONDS);
    let done = play(&args);
    assert_fails(&done, "cannot write /nonexistent-dir/x.png");
    assert!(!done.stderr.contains("cannot read"), "{}", done.stderr);
}

/// The trace file is created before playback, as the PNG is.
#[test]
fn trace_into_a_missing_folder_fails_before_playback() {
    let mut args = vec!["--trace", "/nonexistent-dir/t.json"];
    args.extend(TEN_SECONDS);
    let done = play(&args);
    assert_fails(&done, "cannot write /nonexistent-dir/t.json");
    assert!(!done.stderr.contains("cannot read"), "{}", done.stderr);
}

/// A tick past the end of a ten-frame run is refused before anything
/// plays, and no file is left behind.
#[test]
fn save_frame_past_the_last_tick_fails_before_playback() {
    let dir = temp_dir("save-past-end");
    let out = dir.join("out.png");
    let done = play(&[
        "--save-frame",
        "999",
        arg(&out),
        "--frames",
        "10",
        "--size",
        "64x36",
        "--output-size",
        "64x36",
    ]);
    assert_fails(&done, "--save-frame 999: playback has only 10 ticks");
    assert!(!out.exists(), "{} was created", out.display());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Synthetic frames play five seconds unless told otherwise: at 24 fps a
/// tick past 119 is refused before playback, not after five seconds.
#[test]
fn save_frame_past_the_default_five_seconds_fails_before_playback() {
    let dir = temp_dir("save-past-default");
    let out = dir.join("out.png");
    let done = play(&[
        "--save-frame",
        "999",
        arg(&out),
        "--size",
        "64x36",
        "--output-size",
        "64x36",
    ]);
    assert_fails(&done, "--save-frame 999: playback has only 120 ticks");
    assert!(!out.exists(), "{} was created", out.display());
    let _ = std::fs::remove_dir_all(&dir);
}

// Standard output that goes away.

/// `stagehand play | head -1`: the first progress line arrives, and the
/// next write, into the closed pipe, ends the ten-second run.
#[test]
fn play_read_for_one_line_then_closed_stops_with_one_line() {
    let (done, first) = play_read_for_one_line(&TEN_SECONDS);
    assert!(first.starts_with("tick "), "first line {first:?}");
    assert_output_failed(&done, "Broken pipe (os error 32)");
}

/// `stagehand play > /dev/full`: the first progress line fails, and ends
/// the ten-second run. `/dev/full` is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn play_into_a_full_disk_stops_with_one_line() {
    let done = play_into_full_disk(&TEN_SECONDS);
    assert_output_failed(&done, "No space left on device (os error 28)");
}

// Clap's own refusals.

/// A cache size that is not a size.
#[test]
fn cache_lots_is_a_usage_error() {
    let done = play(&["--cache", "lots"]);
    assert_usage_error(
        &done,
        "--cache",
        "lots",
        "expected a size such as 512M or 4G",
    );
}

/// A range whose first frame is after its last.
#[test]
fn range_10_to_1_is_a_usage_error() {
    let done = play(&["--range", "10-1"]);
    assert_usage_error(
        &done,
        "--range",
        "10-1",
        "the first frame is after the last",
    );
}

/// A texture format nobody has heard of. (A real format the adapter
/// lacks, rgba16 without 16-bit norm textures, cannot be forced here.)
#[test]
fn format_bogus_is_a_usage_error() {
    let done = play(&["--format", "bogus"]);
    assert_usage_error(&done, "--format", "bogus", "expected auto, rgba8");
}

// Runs that work.

/// The JSON summary, parsed, with the arguments and stderr for messages.
fn json_of(done: &Finished) -> serde_json::Value {
    assert!(
        !done.stderr.contains("panicked"),
        "play {:?} panicked:\n{}",
        done.args,
        done.stderr
    );
    assert_eq!(
        done.code(),
        Some(0),
        "play {:?}; stderr:\n{}",
        done.args,
        done.stderr
    );
    serde_json::from_str(&done.stdout).unwrap_or_else(|e| {
        panic!(
            "play {:?}: stdout is not JSON ({e}):\n{}",
            done.args, done.stdout
        )
    })
}

/// A number at `pointer` in `json`.
fn number(json: &serde_json::Value, pointer: &str) -> u64 {
    json.pointer(pointer)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not a whole number in:\n{json:#}"))
}

/// A cache smaller than one frame holds nothing and hands every frame
/// straight through: the run plays, and every frame is accounted for.
#[test]
fn cache_smaller_than_a_frame_plays_and_holds_nothing() {
    let dir = png_sequence("tiny-cache", 5);
    let done = play(&[
        arg(&dir),
        "--cache",
        "1K",
        "--fps",
        "60",
        "--output-size",
        "64x36",
        "--json",
    ]);
    let json = json_of(&done);
    assert_eq!(number(&json, "/playback/cache/bytes"), 0, "{json:#}");
    assert_eq!(number(&json, "/playback/cache/peak_bytes"), 0, "{json:#}");
    let accounted = number(&json, "/playback/frames/shown")
        + number(&json, "/playback/frames/dropped")
        + number(&json, "/playback/frames/failed")
        + number(&json, "/playback/never_pushed");
    assert_eq!(
        accounted,
        number(&json, "/playback/frames_in_range"),
        "presented + dropped + failed + never pushed\n{json:#}"
    );
    assert_eq!(number(&json, "/playback/frames_in_range"), 5, "{json:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A short run: exit 0, the fields scripts read, and the sections in
/// report order (the summary first, then the diagnostics report).
#[test]
fn short_run_json_has_the_fields_in_report_order() {
    let dir = png_sequence("short-run", 5);
    let done = play(&[arg(&dir), "--fps", "60", "--output-size", "64x36", "--json"]);
    let json = json_of(&done);
    for pointer in [
        "/playback/format/texture",
        "/playback/cache/hits",
        "/playback/never_pushed",
        "/playback/frames_in_range",
        "/playback/saved_frames",
    ] {
        assert!(
            json.pointer(pointer).is_some(),
            "{pointer} missing:\n{json:#}"
        );
    }
    assert_eq!(
        json.pointer("/playback/format/texture")
            .and_then(serde_json::Value::as_str),
        Some("Rgba8Unorm"),
        "{json:#}"
    );
    let keys: Vec<&str> = json
        .as_object()
        .expect("the report is a JSON object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys[..3], ["playback", "system", "adapter"], "{keys:?}");
    // The sections known today come in this order; others may join between.
    let order = [
        "playback",
        "system",
        "adapter",
        "versions",
        "object_counts",
        "wgpu_report",
        "pool",
        "uploads",
    ];
    let known: Vec<&str> = keys.iter().copied().filter(|k| order.contains(k)).collect();
    assert_eq!(known, order, "sections out of report order: {keys:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

// The window's options.

#[test]
fn window_value_other_than_auto_on_off_is_a_usage_error() {
    let done = play(&["--window=sometimes", "--frames", "2"]);
    assert_usage_error(&done, "--window", "sometimes", "");
    assert!(
        done.stderr.contains("possible values: auto, on, off"),
        "{}",
        done.stderr
    );
}

#[test]
fn window_and_headless_together_are_a_usage_error() {
    let done = play(&["--window", "--headless", "--frames", "2"]);
    assert_eq!(done.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("cannot be used with"),
        "{}",
        done.stderr
    );
}

#[test]
fn present_mode_unknown_is_a_usage_error() {
    let done = play(&["--present-mode", "vsync", "--frames", "2"]);
    assert_usage_error(&done, "--present-mode", "vsync", "");
    assert!(
        done.stderr
            .contains("possible values: auto, fifo, mailbox, immediate"),
        "{}",
        done.stderr
    );
}

#[test]
fn window_with_no_display_fails_at_once_saying_so() {
    let done = play(&["--window", "--frames", "2"]);
    assert_fails_within(
        &done,
        "cannot open a window: no display",
        Duration::from_secs(1),
    );
}

#[test]
fn start_paused_headless_is_refused_nothing_could_resume_it() {
    let mut args = vec!["--start-paused", "--headless"];
    args.extend(TEN_SECONDS);
    assert_fails(&play(&args), "--start-paused needs a window");
}

#[test]
fn seek_to_a_frame_not_in_the_sequence_is_refused_naming_the_range() {
    let dir = png_sequence("seek-outside", 3);
    let done = play(&[arg(&dir), "--seek", "7"]);
    assert_fails(&done, "--seek 7: the sequence has frames 1 to 3");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn seek_past_synthetic_frames_is_refused() {
    let mut args = vec!["--seek", "-1"];
    args.extend(TEN_SECONDS);
    assert_fails(
        &play(&args),
        "--seek -1: synthetic playback has frames 0 to 239",
    );
}

#[test]
fn seek_headless_plays_from_that_frame_to_the_end() {
    let dir = png_sequence("seek-headless", 5);
    let done = play(&[arg(&dir), "--seek", "3", "--mode", "every-frame", "--json"]);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let report: serde_json::Value = serde_json::from_str(&done.stdout).expect("JSON");
    let playback = &report["playback"];
    assert_eq!(playback["ticks"], 3, "frames 3, 4 and 5: {playback}");
    assert_eq!(playback["frames"]["shown"], 3, "{playback}");
    assert_eq!(playback["output"], "offscreen");
    let _ = std::fs::remove_dir_all(dir);
}

// --audio

/// Writes a WAV of about 4 KB whose header claims `rate` Hz and
/// `channels` channels, whatever they are.
fn write_wav_claiming(path: &Path, rate: u32, channels: u16) {
    let frames = (4096 - 44) / (2 * u32::from(channels.max(1)));
    let bytes = stagehand_play::testdata::wav_bytes(rate, channels, frames);
    std::fs::write(path, bytes).expect("the WAV file is written");
}

/// Plays a six-frame sequence for three looped seconds to `wav` on the
/// null sink, as a user trying a sound file would.
fn play_with_sound(name: &str, rate: u32, channels: u16) -> Finished {
    let dir = png_sequence(name, 6);
    let wav = dir.join("sound.wav");
    write_wav_claiming(&wav, rate, channels);
    let done = play(&[
        arg(&dir),
        "--audio",
        arg(&wav),
        "--audio-out",
        "null",
        "--seconds",
        "3",
        "--loop",
        "--fps",
        "24",
    ]);
    let _ = std::fs::remove_dir_all(dir);
    done
}

/// Found by the fuzz harness (`stagehand-play/tests/fuzz.rs`): 787 bytes
/// of JPEG whose frame header claims 65407x65535 pixels. Decoded, that is
/// 12.8 GB; the player refuses it when it makes the frame's texture, before
/// any decoding, in a fraction of a second.
#[test]
fn a_787_byte_jpeg_claiming_65407x65535_pixels_is_refused_before_decoding() {
    let dir = std::env::temp_dir().join(format!("stagehand-jpeg-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.jpg");
    image::RgbImage::from_fn(40, 24, |x, y| image::Rgb([x as u8 * 6, y as u8 * 9, 77]))
        .save(&path)
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The baseline frame header: marker, length, precision, then height
    // and width, big-endian.
    let sof = bytes
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("a baseline JPEG");
    bytes[sof + 5..sof + 7].copy_from_slice(&65535u16.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&65407u16.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let done = play(&[arg(&path), "--headless", "--frames", "1"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_fails(&done, "65407x65535");
}

#[test]
fn a_wav_claiming_2147483647_hz_is_refused_before_playing() {
    let done = play_with_sound("wav-rate-huge", 2_147_483_647, 2);
    assert_fails(&done, "2147483647 Hz");
}

#[test]
fn a_wav_claiming_1_hz_is_refused_before_playing() {
    let done = play_with_sound("wav-rate-tiny", 1, 2);
    assert_fails(&done, "1 Hz");
}

#[test]
fn a_wav_claiming_40_channels_is_refused_before_playing() {
    let done = play_with_sound("wav-channels", 48_000, 40);
    assert_fails(&done, "40 channels");
}
