//! Bad input and unwritable output: the `stagehand` command must refuse or
//! stop with a clear line on stderr and a non-zero status, never a panic and
//! never a run that goes on for minutes.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a rejected option may take before the test gives up on it.
/// Rejections are immediate; the margin is for a loaded test machine.
const REJECT_WITHIN: Duration = Duration::from_secs(10);

/// How long a run that opens the GPU may take (a report takes about a
/// second on a software adapter).
const RUN_WITHIN: Duration = Duration::from_secs(60);

/// What a finished (or killed) run left behind.
struct Finished {
    /// `None` when the run was killed for taking longer than allowed.
    status: Option<ExitStatus>,
    stderr: String,
    elapsed: Duration,
}

fn spawn(args: &[&str], stdout: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_stagehand"))
        // Headless whatever the desktop: these tests are about the output.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits for `child` at most `limit`, killing it past that.
fn finish(mut child: Child, started: Instant, limit: Duration) -> Finished {
    let status = common::wait_at_most(&mut child, started, limit);
    let elapsed = started.elapsed();
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    Finished {
        status,
        stderr,
        elapsed,
    }
}

/// Runs `stagehand args` with standard output discarded.
fn run(args: &[&str], limit: Duration) -> Finished {
    let started = Instant::now();
    finish(spawn(args, Stdio::null()), started, limit)
}

#[cfg(target_os = "linux")]
/// Runs `stagehand args` with standard output on `/dev/full`, where every
/// write fails with "No space left on device".
fn run_into_full_disk(args: &[&str]) -> Finished {
    let full = File::create("/dev/full").expect("/dev/full opens for writing");
    let started = Instant::now();
    finish(spawn(args, Stdio::from(full)), started, RUN_WITHIN)
}

/// Runs `stagehand args` into a pipe whose read end is closed at once,
/// before the command has written anything.
fn run_into_closed_pipe(args: &[&str]) -> Finished {
    let started = Instant::now();
    let mut child = spawn(args, Stdio::piped());
    drop(child.stdout.take());
    finish(child, started, RUN_WITHIN)
}

/// Runs `stagehand args` into a pipe that is read for one line and then
/// closed, as `stagehand ... | head -1` does.
fn run_into_pipe_read_for_one_line(args: &[&str]) -> (Finished, String) {
    let started = Instant::now();
    let mut child = spawn(args, Stdio::piped());
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out)
            .read_line(&mut first)
            .expect("reading the first line works");
    }
    (finish(child, started, RUN_WITHIN), first)
}

/// Asserts clap refused `option` with `value` as out of `range`, quickly,
/// without a panic and before doing any work.
fn assert_rejected(args: &[&str], option: &str, value: &str, range: &str) {
    let done = run(args, REJECT_WITHIN);
    let err = &done.stderr;
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    assert!(
        done.status.is_some(),
        "{args:?} still running after {:?}; stderr:\n{err}",
        done.elapsed
    );
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(2),
        "{args:?}: want the usage-error status; stderr:\n{err}"
    );
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!("invalid value '{value}' for '{option}")),
        "{args:?}: first line {first:?}"
    );
    assert!(
        first.contains(&format!("is not in {range}")),
        "{args:?}: first line {first:?} does not give the range {range}"
    );
    assert!(
        done.elapsed < Duration::from_secs(2),
        "{args:?} took {:?} to refuse",
        done.elapsed
    );
}

#[cfg(target_os = "linux")]
/// Asserts the run failed with status 1 and exactly one stderr line, the
/// one saying standard output could not be written.
fn assert_full_disk_reported(args: &[&str], done: &Finished) {
    let err = &done.stderr;
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(1),
        "{args:?}; stderr:\n{err}"
    );
    assert_eq!(
        err.as_str(),
        "stagehand: cannot write to standard output: No space left on device (os error 28)\n",
        "{args:?}"
    );
}

/// Asserts the run stopped quietly and successfully: the reader went away.
fn assert_closed_pipe_reported(args: &[&str], done: &Finished) {
    let err = &done.stderr;
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(1),
        "{args:?} ended {:?}; stderr:\n{err}",
        done.status
    );
    assert_eq!(
        err.trim_end(),
        "stagehand: cannot write to standard output: Broken pipe (os error 32)",
        "{args:?}: one line saying why"
    );
}

// Bench options: zero.

#[test]
fn bench_pool_with_zero_ops_is_rejected() {
    assert_rejected(
        &["bench", "pool", "--ops", "0"],
        "--ops",
        "0",
        "1..=1000000",
    );
}

#[test]
fn bench_tracking_with_zero_ops_is_rejected() {
    assert_rejected(
        &["bench", "tracking", "--ops", "0"],
        "--ops",
        "0",
        "1..=1000000",
    );
}

#[test]
fn bench_upload_with_zero_frames_is_rejected() {
    assert_rejected(
        &["bench", "upload", "--frames", "0"],
        "--frames",
        "0",
        "1..=10000",
    );
}

#[test]
fn bench_tracking_with_zero_rounds_is_rejected() {
    assert_rejected(
        &["bench", "tracking", "--rounds", "0"],
        "--rounds",
        "0",
        "1..=1000",
    );
}

#[test]
fn bench_pool_with_zero_rounds_is_rejected() {
    assert_rejected(
        &["bench", "pool", "--rounds", "0"],
        "--rounds",
        "0",
        "1..=1000",
    );
}

#[cfg(feature = "cuda")]
#[test]
fn bench_cuda_with_zero_ops_is_rejected() {
    assert_rejected(
        &["bench", "cuda", "--ops", "0"],
        "--ops",
        "0",
        "1..=1000000",
    );
}

#[cfg(feature = "cuda")]
#[test]
fn bench_cuda_with_zero_rounds_is_rejected() {
    assert_rejected(
        &["bench", "cuda", "--rounds", "0"],
        "--rounds",
        "0",
        "1..=1000",
    );
}

// Bench options: one past the largest accepted value.

#[test]
fn bench_tracking_with_too_many_rounds_is_rejected() {
    assert_rejected(
        &["bench", "tracking", "--rounds", "1001"],
        "--rounds",
        "1001",
        "1..=1000",
    );
}

#[test]
fn bench_pool_with_too_many_ops_is_rejected() {
    assert_rejected(
        &["bench", "pool", "--ops", "1000001"],
        "--ops",
        "1000001",
        "1..=1000000",
    );
}

#[test]
fn bench_upload_with_too_many_frames_is_rejected() {
    assert_rejected(
        &["bench", "upload", "--frames", "10001"],
        "--frames",
        "10001",
        "1..=10000",
    );
}

#[cfg(feature = "cuda")]
#[test]
fn bench_cuda_with_too_many_rounds_is_rejected() {
    assert_rejected(
        &["bench", "cuda", "--rounds", "1001"],
        "--rounds",
        "1001",
        "1..=1000",
    );
}

#[cfg(feature = "cuda")]
#[test]
fn bench_cuda_with_too_many_ops_is_rejected() {
    assert_rejected(
        &["bench", "cuda", "--ops", "1000001"],
        "--ops",
        "1000001",
        "1..=1000000",
    );
}

/// A value too big for any integer type is refused the same way, not wrapped.
#[test]
fn bench_with_a_value_past_every_integer_is_rejected() {
    let args = ["bench", "tracking", "--ops", "99999999999999999999999"];
    let done = run(&args, REJECT_WITHIN);
    assert!(!done.stderr.contains("panicked"), "{}", done.stderr);
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(2),
        "{}",
        done.stderr
    );
    assert!(
        done.stderr
            .contains("invalid value '99999999999999999999999' for '--ops"),
        "{}",
        done.stderr
    );
}

/// The bounds are in `--help`, so nobody has to find them by trial.
#[test]
fn bench_help_gives_every_bound() {
    let out = Command::new(env!("CARGO_BIN_EXE_stagehand"))
        // Headless whatever the desktop: these tests are about the output.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .args(["bench", "--help"])
        .output()
        .expect("the binary runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for bound in [
        "Rounds per variant, 1 to 1000;",
        "Operations per round, 1 to 1000000 ",
        "upload benchmark, 1 to 10000\n",
    ] {
        assert!(help.contains(bound), "{bound:?} missing:\n{help}");
    }
}

// Standard output that cannot be written.

/// `/dev/full` is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn report_to_a_full_disk_fails_with_one_line() {
    let args = ["report"];
    assert_full_disk_reported(&args, &run_into_full_disk(&args));
}

/// `/dev/full` is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn report_json_to_a_full_disk_fails_with_one_line() {
    let args = ["report", "--json"];
    assert_full_disk_reported(&args, &run_into_full_disk(&args));
}

/// `/dev/full` is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn bench_to_a_full_disk_fails_with_one_line() {
    let args = ["bench", "tracking", "--rounds", "1", "--ops", "1"];
    assert_full_disk_reported(&args, &run_into_full_disk(&args));
}

#[test]
fn report_into_a_closed_pipe_fails_with_one_line() {
    let args = ["report"];
    assert_closed_pipe_reported(&args, &run_into_closed_pipe(&args));
}

#[test]
fn report_json_into_a_closed_pipe_fails_with_one_line() {
    let args = ["report", "--json"];
    assert_closed_pipe_reported(&args, &run_into_closed_pipe(&args));
}

#[test]
fn bench_into_a_closed_pipe_fails_with_one_line() {
    let args = ["bench", "tracking", "--rounds", "1", "--ops", "1"];
    assert_closed_pipe_reported(&args, &run_into_closed_pipe(&args));
}

/// `stagehand report | head -1`: the first line arrives. The report may fit
/// in the pipe's buffer before the reader leaves, and then nothing fails;
/// if not, the write that fails ends the command with one line.
#[test]
fn report_read_for_one_line_then_closed_never_panics() {
    let args = ["report"];
    let (done, first) = run_into_pipe_read_for_one_line(&args);
    assert!(first.contains("system:"), "first line {first:?}");
    if done.status.is_some_and(|s| s.success()) {
        assert_eq!(done.stderr, "", "success says nothing");
    } else {
        assert_closed_pipe_reported(&args, &done);
    }
}

// Report options: the adapter and backend are strings checked when the GPU
// opens; both fail with one line.

#[test]
fn report_with_an_empty_backend_fails_with_one_line() {
    let done = run(&["report", "--backend", ""], RUN_WITHIN);
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        done.stderr
    );
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(
        done.stderr.starts_with("stagehand: unknown backend \"\""),
        "{}",
        done.stderr
    );
}

#[test]
fn report_with_an_adapter_nobody_has_fails_with_one_line() {
    let done = run(&["report", "--adapter", "no such adapter"], RUN_WITHIN);
    assert_eq!(
        done.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        done.stderr
    );
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(
        done.stderr
            .starts_with("stagehand: no adapter's name contains \"no such adapter\""),
        "{}",
        done.stderr
    );
}
