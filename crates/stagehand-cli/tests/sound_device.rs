//! `stagehand play` with sound through a real device (cpal over ALSA), on a
//! machine with no sound card: ALSA's own `null` device, made the default
//! by an `.asoundrc` in a home folder of the test's own. That device takes
//! sound as fast as it is given and keeps no clock, so the player must not
//! follow it: the pictures keep real time on the player's own clock, and
//! the summary says why. Skipped, saying so, without the `ffmpeg` command
//! or ALSA's library.

mod movie_files;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 3-second movie with a click each second.
fn clicking_movie(dir: &Path) -> PathBuf {
    let path = dir.join("clicks.mp4");
    let video = "testsrc2=size=128x96:rate=24";
    movie_files::write_clicking_movie(&path, video, 3, &["-c:v", "libx264"]);
    path
}

#[test]
fn a_sound_device_that_keeps_no_clock_is_not_followed_and_the_summary_says_so() {
    let test = "null sound device";
    if !movie_files::has_ffmpeg(test) {
        return;
    }
    let has_alsa = Path::new("/usr/share/alsa/alsa.conf").is_file();
    if !has_alsa {
        eprintln!("SKIPPED {test}: no ALSA configuration (/usr/share/alsa/alsa.conf)");
        return;
    }
    let dir = temp_dir("null-sound-device");
    let movie = clicking_movie(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".asoundrc"), "pcm.!default {\n    type null\n}\n").unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stagehand"))
        .arg("play")
        .arg(&movie)
        .args(["--headless", "--output-size", "128x96", "--frames", "48"])
        .env("HOME", &home)
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .expect("stagehand runs");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
            .to_owned()
    };
    let sink = line("audio out:");
    if sink.contains("null sink") {
        // ALSA would not open even its null device here.
        eprintln!("SKIPPED {test}: no sound device opened ({sink})");
        return;
    }
    assert!(sink.contains("faster than real time"), "{sink}");
    // 48 frames at 24 fps: two seconds of real time, not the fraction of
    // a second the device's own clock would have run them in.
    assert!(took >= Duration::from_millis(1800), "{took:?}\n{stdout}");
    let presented: u64 = line("presented:")
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(presented >= 24, "{presented} of 48 presented\n{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}
