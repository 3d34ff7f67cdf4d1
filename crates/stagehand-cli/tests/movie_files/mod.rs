//! Shared by the CLI tests that play movies: movies written by the
//! `ffmpeg` command, and saying SKIPPED where it is missing.

use std::path::Path;
use std::process::Command;

/// Whether the `ffmpeg` command runs; says `SKIPPED test` if not.
pub fn has_ffmpeg(test: &str) -> bool {
    let ok = Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED {test}: no ffmpeg command to write test movies with");
    }
    ok
}

/// Writes `path`: `seconds` of the lavfi source `video`, encoded with the
/// arguments `encode`, with a click on the sound (AAC) at every second.
pub fn write_clicking_movie(path: &Path, video: &str, seconds: u32, encode: &[&str]) {
    let audio = "aevalsrc='if(lt(mod(t,1),0.005),0.9,0)':s=48000";
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i", video])
        .args(["-f", "lavfi", "-i", audio, "-t", &seconds.to_string()])
        .args(encode)
        .args(["-c:a", "aac"])
        .arg(path)
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "ffmpeg writing {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
