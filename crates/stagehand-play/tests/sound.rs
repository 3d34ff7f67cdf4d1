//! Movies with sound, on the null sink: pictures follow the sound's
//! clock within half a frame, the trace shows it beside each frame, a
//! sound file plays beside a movie (with an offset, or a timeline that
//! starts late), loops and seeks bring the sound to the frame shown, and
//! bad sound options are refused before playback. Written by the
//! `ffmpeg` command; without it, each test says SKIPPED.
//!
//! These tests measure milliseconds, so they are a test binary of their
//! own (cargo runs one binary at a time) and each runs alone
//! ([`alone`]): nothing else of the suite competes for the two cores
//! while a playback is timed.

#![cfg(feature = "video")]

mod support;

use stagehand_play::{Mode, PlayError, PlayOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use support::{FPS, ffmpeg, has_ffmpeg, movie, options, pattern, run, temp_dir};

/// The whole of one test at a time, its movies' encoding included.
fn alone() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A movie whose sound clicks at every 24th frame's time.
fn clicking_movie(dir: &Path, seconds: u32) -> PathBuf {
    let path = dir.join("clicks.mp4");
    let video = format!(
        "color=black:size=128x96:rate={FPS},format=yuv420p,{}",
        pattern(1)
    );
    let audio = "aevalsrc='if(lt(mod(t\\,1)\\,0.005)\\,0.9\\,0)':s=48000";
    ffmpeg(
        &format!(
            "-f lavfi -i {video} -f lavfi -i {audio} -t {seconds} -c:v libx264 -qp 0 -g 24 -c:a aac"
        ),
        &path,
    );
    path
}

fn with_sound(path: &Path, frames: Option<u64>) -> PlayOptions {
    let mut o = options(path, (128, 96), vec![]);
    o.mode = Mode::Realtime;
    o.frames = frames;
    o.audio.out = stagehand_play::audio::AudioOut::Null;
    o
}

/// Plays `o` and checks that its sound ended within 0.15 s of `want`
/// (seconds on the sound's own timeline); returns what it said of the
/// sound.
fn sound_ends_near(o: &PlayOptions, want: f64) -> stagehand_play::AudioSummary {
    let audio = run(o).unwrap().audio.expect("sound");
    let end = audio.source_end.expect("the sound played");
    assert!(
        (end - want).abs() < 0.15,
        "the sound ended at {end} s: {audio:?}"
    );
    audio
}

#[test]
fn pictures_follow_the_sound_within_half_a_frame_on_the_null_sink() {
    let _alone = alone();
    if !has_ffmpeg("sync") {
        return;
    }
    let dir = temp_dir("sync");
    let path = clicking_movie(&dir, 4);
    let summary = run(&with_sound(&path, None)).unwrap();
    let audio = summary.audio.clone().expect("the movie's sound played");
    assert!(audio.played, "{audio:?}");
    assert!(audio.sink.contains("null sink"), "{audio:?}");
    assert!(audio.source.contains("aac"), "{audio:?}");
    assert!(audio.error.is_none(), "{:?}", audio.error);
    // Every tick that put a frame up is measured; on a busy machine a
    // few frames may be dropped, but most are shown.
    assert!(audio.measured >= summary.frames.shown, "{audio:?}");
    assert!(summary.frames.shown >= 48, "{summary:?}");
    assert!(audio.drift.p99 < 1000.0 / FPS / 2.0, "{audio:?}");
    assert!(audio.drift.max < 1000.0 / FPS, "{audio:?}");
}

#[test]
fn the_trace_shows_the_sound_clock_beside_each_frame() {
    let _alone = alone();
    if !has_ffmpeg("trace") {
        return;
    }
    let dir = temp_dir("av-trace");
    let path = clicking_movie(&dir, 1);
    let timeline = Arc::new(stagehand_gpu::diag::Timeline::new());
    let mut o = with_sound(&path, None);
    o.timeline = Some(timeline.clone());
    let summary = run(&o).unwrap();
    let audio = summary.audio.expect("the movie's sound played");
    let json = timeline.to_chrome_json();
    let events: Vec<_> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "a/v sync")
        .collect();
    assert_eq!(events.len() as u64, audio.measured);
    assert_eq!(audio.drift_by_tick.len() as u64, audio.measured);
    for (e, (tick, drift)) in events.iter().zip(&audio.drift_by_tick) {
        let args = &e["args"];
        let clock = args["sound clock s"].as_f64().unwrap();
        let frame = args["frame time s"].as_f64().unwrap();
        assert!((frame - *tick as f64 / FPS).abs() < 1e-6, "{e}");
        assert!((args["drift ms"].as_f64().unwrap() - drift).abs() < 1e-9);
        assert!(((clock - frame) * 1e3 - drift).abs() < 1e-6, "{e}");
    }
}

#[test]
fn every_frame_mode_does_not_play_sound_and_says_so() {
    let _alone = alone();
    if !has_ffmpeg("every-frame sound") {
        return;
    }
    let dir = temp_dir("every-frame-sound");
    let path = clicking_movie(&dir, 1);
    let mut o = with_sound(&path, None);
    o.mode = Mode::EveryFrame;
    let audio = run(&o).unwrap().audio.expect("sound found");
    assert!(!audio.played);
    assert!(audio.sink.contains("every-frame"), "{audio:?}");
}

#[test]
fn a_sound_file_plays_beside_a_movie_with_an_offset() {
    let _alone = alone();
    if !has_ffmpeg("audio file") {
        return;
    }
    let dir = temp_dir("audio-file");
    let tags = "-c:v libx264 -qp 0";
    let path = movie(&dir, "silent.mp4", "64x48", "yuv420p", 1, tags);
    let wav = dir.join("tone.wav");
    ffmpeg("-f lavfi -i sine=frequency=440:duration=3", &wav);
    let mut o = with_sound(&path, Some(24));
    o.audio.file = Some(wav);
    o.audio.offset_ms = -250.0;
    let summary = run(&o).unwrap();
    let audio = summary.audio.expect("the file's sound played");
    assert!(audio.source.contains("tone.wav"), "{audio:?}");
    // One second of frames: the first, drawn as the sound starts, may
    // come late; the rest follow the sound.
    assert!(
        audio.played && audio.drift.p50 < 1000.0 / FPS / 2.0,
        "{audio:?}"
    );
}

#[test]
fn bad_sound_options_are_refused_before_playback() {
    let _alone = alone();
    if !has_ffmpeg("bad sound") {
        return;
    }
    let dir = temp_dir("bad-sound");
    let tags = "-c:v libx264 -qp 0";
    let path = movie(&dir, "m.mp4", "64x48", "yuv420p", 1, tags);
    // An unreadable file.
    let mut o = with_sound(&path, Some(2));
    o.audio.file = Some(dir.join("missing.wav"));
    assert!(matches!(run(&o).unwrap_err(), PlayError::Io { .. }));
    // A file with no sound in it.
    o.audio.file = Some(path.clone());
    let err = run(&o).unwrap_err();
    assert!(err.to_string().contains("no audio stream"), "{err}");
    // Not a media file at all.
    let junk = dir.join("junk.wav");
    std::fs::write(&junk, b"not a sound").unwrap();
    o.audio.file = Some(junk);
    assert!(matches!(run(&o).unwrap_err(), PlayError::Decode { .. }));
    // An offset out of range.
    let mut o = with_sound(&path, Some(2));
    o.audio.offset_ms = 1e9;
    let offset = |e| {
        matches!(
            e,
            PlayError::BadOption {
                field: stagehand_play::Field::AudioOffset,
                ..
            }
        )
    };
    assert!(offset(run(&o).unwrap_err()));
    o.audio.offset_ms = f64::NAN;
    assert!(offset(run(&o).unwrap_err()));
}

/// Ten minutes of a clicking movie on the null sink: every frame of the
/// whole run stays within a frame of the sound (p99 within half a frame),
/// so the pictures do not creep away from it. Ignored: it takes ten
/// minutes (`cargo test -p stagehand-play --features audio --test movies
/// -- --ignored`).
#[test]
#[ignore]
fn ten_minutes_of_pictures_do_not_drift_from_the_sound() {
    let _alone = alone();
    if !has_ffmpeg("ten minutes") {
        return;
    }
    let dir = temp_dir("ten-minutes");
    let path = clicking_movie(&dir, 600);
    let summary = run(&with_sound(&path, None)).unwrap();
    let audio = summary.audio.clone().expect("sound");
    assert_eq!(summary.frames_in_range, 600 * FPS as u64);
    assert!(
        audio.measured >= summary.frames_in_range * 9 / 10,
        "{summary:?}"
    );
    assert!(audio.drift.p99 < 1000.0 / FPS / 2.0, "{audio:?}");
    assert!(audio.drift.max < 1000.0 / FPS, "{audio:?}");
}

#[test]
fn a_looped_movie_brings_its_sound_back_to_the_start() {
    let _alone = alone();
    if !has_ffmpeg("loop sound") {
        return;
    }
    let dir = temp_dir("loop-sound");
    let path = clicking_movie(&dir, 2);
    // A pass and a half: the sound must be a second into its second pass.
    let mut o = with_sound(&path, Some(72));
    o.looped = true;
    let audio = sound_ends_near(&o, 1.0);
    assert!(audio.seeks >= 1, "{audio:?}");
}

#[test]
fn a_seek_starts_the_sound_at_the_frame_shown() {
    let _alone = alone();
    if !has_ffmpeg("seek sound") {
        return;
    }
    let dir = temp_dir("seek-sound");
    let path = clicking_movie(&dir, 3);
    let mut o = with_sound(&path, Some(24));
    o.seek = Some(24);
    sound_ends_near(&o, 2.0);
}

#[test]
fn a_sound_file_whose_timeline_starts_late_lines_up_with_the_first_picture() {
    let _alone = alone();
    if !has_ffmpeg("late sound") {
        return;
    }
    let dir = temp_dir("late-sound");
    let tags = "-c:v libx264 -qp 0";
    let path = movie(&dir, "pictures.mp4", "64x48", "yuv420p", 1, tags);
    // A broadcast-style file: its first sample is at 30000 s.
    let late = dir.join("late.mka");
    ffmpeg(
        "-f lavfi -i sine=frequency=440:duration=3 -output_ts_offset 30000 -c:a flac",
        &late,
    );
    let mut o = with_sound(&path, Some(24));
    o.audio.file = Some(late);
    sound_ends_near(&o, 30001.0);
}

#[test]
fn a_movie_shown_at_another_rate_plays_no_sound_and_says_why() {
    let _alone = alone();
    if !has_ffmpeg("off rate") {
        return;
    }
    let dir = temp_dir("off-rate");
    let path = clicking_movie(&dir, 1);
    let mut o = with_sound(&path, Some(12));
    o.fps = 30.0;
    let audio = run(&o).unwrap().audio.expect("sound found");
    assert!(!audio.played, "{audio:?}");
    assert!(
        audio.sink.contains("30 fps, is not the movie's"),
        "{audio:?}"
    );
}
