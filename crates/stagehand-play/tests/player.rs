//! The `Player` an application drives: opened on a folder of numbered
//! frames, paused, moved by seeks and steps, played and paused, drawn into
//! a texture the test owns; the picture drawn is the frame the player says
//! is on screen, and the events come in the order things happened.

use stagehand_gpu::Gpu;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::render::read_texture;
use stagehand_play::source::pattern;
use stagehand_play::{Event, PlayError, PlayOptions, Player, engine_config};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const W: u32 = 96;
const H: u32 = 64;
const FRAMES: u64 = 12;
/// Longest a command takes to show, on a loaded machine.
const SETTLE: Duration = Duration::from_secs(10);

fn gpu_and_engine() -> (Arc<Gpu>, Arc<UploadEngine>) {
    let gpu = match Gpu::open(&stagehand_gpu::GpuOptions::default()) {
        Ok(gpu) => Arc::new(gpu),
        Err(e) => panic!("tests need a GPU adapter: {e}"),
    };
    let engine = Arc::new(UploadEngine::new(Arc::clone(&gpu), engine_config(1)).unwrap());
    (gpu, engine)
}

/// Frames `frame_1` to `frame_12` (PNG), each showing its number.
fn write_frames(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-player-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for n in 1..=FRAMES {
        image::RgbaImage::from_raw(W, H, pattern::frame(n, W, H))
            .unwrap()
            .save(dir.join(format!("frame_{n}.png")))
            .unwrap();
    }
    dir
}

fn options(dir: &Path) -> PlayOptions {
    PlayOptions {
        source: Some(dir.to_owned()),
        fps: 24.0,
        output_size: (W, H),
        start_paused: true,
        ..PlayOptions::default()
    }
}

/// Draws the player's picture into a texture of the test's own, through
/// the player's `draw`, and reads it back.
fn drawn(gpu: &Gpu, player: &Player) -> Vec<u8> {
    let target = gpu
        .device()
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("caller's target"),
            size: wgpu::Extent3d {
                width: W,
                height: H,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        })
        .unwrap();
    let view = target.create_view(&Default::default());
    let mut encoder = gpu
        .device()
        .create_command_encoder(&Default::default())
        .unwrap();
    player
        .draw(
            &mut encoder,
            &view,
            wgpu::TextureFormat::Rgba8Unorm,
            (0.0, 0.0, W as f32, H as f32),
        )
        .unwrap();
    gpu.queue().submit([encoder.finish().unwrap()]).unwrap();
    read_texture(gpu, &target, 4).unwrap()
}

/// Asserts that `got` is file frame `n`'s picture (within a code value).
fn assert_shows(got: &[u8], n: u64, what: &str) {
    let want = pattern::frame(n, W, H);
    let off = got
        .iter()
        .zip(&want)
        .filter(|(a, b)| a.abs_diff(**b) > 1)
        .count();
    assert_eq!(off, 0, "{what}: {off} samples differ from frame {n}");
}

/// Waits until the player shows `position`.
fn wait_for(player: &Player, position: usize) {
    assert!(
        player.wait(SETTLE, |s| s.position == Some(position)),
        "position {position} never came: {:?}",
        player.status()
    );
}

#[test]
fn a_driven_player_draws_the_frame_it_says_is_on_screen_into_the_callers_texture() {
    let dir = write_frames("driven");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    let status = player.status();
    assert_eq!(status.position, Some(0), "{status:?}");
    assert!(!status.playing, "it opened paused");
    assert_eq!(status.len, FRAMES as usize);
    assert_shows(&drawn(&gpu, &player), 1, "opened paused");

    player.seek(5);
    wait_for(&player, 5);
    assert_shows(&drawn(&gpu, &player), 6, "after seek(5)");
    player.step(1);
    wait_for(&player, 6);
    assert_shows(&drawn(&gpu, &player), 7, "after step(1)");
    player.step(-2);
    wait_for(&player, 4);
    assert_shows(&drawn(&gpu, &player), 5, "after step(-2)");

    player.set_looped(true);
    player.play();
    assert!(player.wait(SETTLE, |s| s.playing && s.looped), "it plays");
    assert!(
        player.wait(SETTLE, |s| s.position != Some(4)),
        "playing moves on"
    );
    player.pause();
    assert!(player.wait(SETTLE, |s| !s.playing), "it pauses");
    let at = player.position().unwrap();
    assert_shows(&drawn(&gpu, &player), at as u64 + 1, "paused after playing");

    // The picture at another size: the player's own texture follows.
    player.resize(48, 32);
    assert!(
        player.wait(SETTLE, |_| player
            .texture()
            .is_some_and(|t| (t.width(), t.height()) == (48, 32))),
        "the picture is drawn at the new size"
    );

    // The cache: the footage fits, so once filled every frame is held.
    let filled = |player: &Player| {
        player
            .cache_info()
            .is_some_and(|c| c.ram == vec![(0, FRAMES as usize - 1)])
    };
    let started = std::time::Instant::now();
    while !filled(&player) {
        assert!(started.elapsed() < SETTLE, "{:?}", player.cache_info());
        std::thread::sleep(Duration::from_millis(20));
    }
    let cache = player.cache_info().unwrap();
    assert_eq!(cache.frames, FRAMES, "{cache:?}");
    assert!(cache.bytes > 0 && cache.bytes <= cache.budget, "{cache:?}");
    // Looping: every other frame is ahead, and behind.
    assert_eq!((cache.ahead, cache.behind), (11, 11), "{cache:?}");

    let summary = player.close().unwrap();
    assert_eq!(summary.frames.failed, 0, "{summary:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn in_and_out_points_set_while_playing_keep_a_looped_player_between_them() {
    let dir = write_frames("range");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    // Position 0 on screen is outside 4..=7: the in point's frame shows.
    player.set_range(4, 7);
    wait_for(&player, 4);
    assert_eq!(player.status().range, (4, 8));
    assert_shows(&drawn(&gpu, &player), 5, "the in point");
    player.set_looped(true);
    player.play();
    // Play wraps from 7 back to 4 and never leaves the range.
    let mut seen = std::collections::BTreeSet::new();
    let started = std::time::Instant::now();
    while !(seen.contains(&7) && seen.contains(&4) && seen.len() >= 4) {
        assert!(started.elapsed() < SETTLE * 2, "saw only {seen:?}");
        if let Some(p) = player.position() {
            assert!((4..=7).contains(&p), "position {p} is outside 4..=7");
            seen.insert(p);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    player.pause();
    assert!(player.wait(SETTLE, |s| !s.playing));
    // Steps wrap at the out point; the whole range comes back.
    player.seek(7);
    wait_for(&player, 7);
    player.step(1);
    wait_for(&player, 4);
    player.clear_range();
    assert!(player.wait(SETTLE, |s| s.range == (0, FRAMES as usize)));
    player.seek(11);
    wait_for(&player, 11);
    assert_shows(&drawn(&gpu, &player), 12, "past the old out point");
    let summary = player.close().unwrap();
    assert_eq!(summary.frames.failed, 0, "{summary:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_driven_players_events_come_in_the_order_things_happened() {
    let dir = write_frames("events");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    player.seek(3);
    wait_for(&player, 3);
    player.step(1);
    wait_for(&player, 4);
    player.play();
    assert!(player.wait(SETTLE, |s| s.playing));
    player.pause();
    assert!(player.wait(SETTLE, |s| !s.playing));
    let events: Vec<Event> = player.events().try_iter().collect();
    let at = |e: &Event| {
        events
            .iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("no {e:?} in {events:?}"))
    };
    assert_eq!(events.first(), Some(&Event::FrameChanged(0)), "{events:?}");
    assert!(at(&Event::FrameChanged(3)) < at(&Event::FrameChanged(4)));
    assert!(at(&Event::FrameChanged(4)) < at(&Event::PlayStarted));
    assert!(at(&Event::PlayStarted) < at(&Event::PlayStopped));
    drop(player);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_player_opened_on_nothing_playable_returns_a_typed_error_at_once() {
    let (gpu, engine) = gpu_and_engine();
    let missing = std::env::temp_dir().join("stagehand-player-no-such-folder");
    let started = std::time::Instant::now();
    let err = Player::open(&gpu, &engine, options(&missing)).unwrap_err();
    assert!(
        matches!(err, PlayError::Io { .. } | PlayError::NoFrames(_)),
        "{err:?}"
    );
    assert!(started.elapsed() < SETTLE, "took {:?}", started.elapsed());
    let bad = PlayOptions {
        fps: 0.0,
        ..options(&missing)
    };
    assert!(matches!(
        Player::open(&gpu, &engine, bad),
        Err(PlayError::BadOption {
            field: stagehand_play::Field::Fps,
            ..
        })
    ));
}

#[test]
fn marking_in_and_out_at_the_frame_on_screen_sets_the_range_there() {
    let dir = write_frames("marks");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    player.seek(3);
    wait_for(&player, 3);
    let status = player.status();
    assert_eq!(status.number, Some(4), "frame_4.png");
    assert_eq!(status.timecode().as_deref(), Some("00:00:00:03"));
    player.mark_in();
    assert!(player.wait(SETTLE, |s| s.range == (3, FRAMES as usize)));
    player.seek(8);
    wait_for(&player, 8);
    player.mark_out();
    assert!(player.wait(SETTLE, |s| s.range == (3, 9)));
    // A seek before the in point stops at it.
    player.seek(1);
    wait_for(&player, 3);
    assert_shows(&drawn(&gpu, &player), 4, "the in point");
    // An in point after the out point opens the range to the end.
    player.seek(8);
    wait_for(&player, 8);
    player.clear_range();
    assert!(player.wait(SETTLE, |s| s.range == (0, FRAMES as usize)));
    player.seek(10);
    wait_for(&player, 10);
    player.set_range(2, 5);
    wait_for(&player, 2);
    player.seek(5);
    wait_for(&player, 5);
    player.mark_in();
    assert!(
        player.wait(SETTLE, |s| s.range == (5, 6)),
        "{:?}",
        player.status()
    );
    player.close().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn at_a_sixteenth_of_the_rate_a_second_of_play_moves_a_frame_or_two_and_back_at_one_it_runs_to_the_end()
 {
    let dir = write_frames("rate");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    assert_eq!(player.status().rate, 1.0);
    player.set_rate(1.0 / 16.0);
    assert!(player.wait(SETTLE, |s| s.rate == 1.0 / 16.0));
    player.play();
    assert!(player.wait(SETTLE, |s| s.playing));
    std::thread::sleep(Duration::from_secs(1));
    // 24 fps at a sixteenth: 1.5 frames a second. At 1 the 12 frames
    // would have run out after half a second.
    let slow = player.position().unwrap();
    assert!(slow <= 3, "position {slow} after a second at 1/16");
    assert!(player.status().playing, "still playing");
    // Out of bounds is clamped; not a number is ignored.
    player.set_rate(f64::NAN);
    player.set_rate(1000.0);
    assert!(
        player.wait(SETTLE, |s| s.rate == 16.0),
        "{:?}",
        player.status()
    );
    player.set_rate(1.0);
    assert!(player.wait(SETTLE, |s| s.rate == 1.0));
    wait_for(&player, FRAMES as usize - 1);
    player.close().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_display_transfer_changes_how_a_scene_linear_frame_is_drawn_and_not_a_display_referred_one() {
    use stagehand_play::render::{Display, Transfer, encode};
    let dir = std::env::temp_dir().join(format!("stagehand-player-exr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for n in 1..=3 {
        stagehand_play::testdata::write_exr_half(
            &dir.join(format!("grey.{n:04}.exr")),
            (W, H),
            exr::compression::Compression::ZIP16,
            |_, _, c| if c == 3 { 1.0 } else { 0.18 },
        )
        .unwrap();
    }
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    for transfer in [Transfer::Linear, Transfer::Rec709, Transfer::Srgb] {
        player.set_transfer(transfer);
        assert!(
            player.wait(SETTLE, |s| s
                .display
                .is_some_and(|d| d.transfer == transfer)),
            "{:?}",
            player.status()
        );
        let want = (encode(
            0.18,
            Display {
                transfer,
                exposure: 0.0,
            },
        ) * 255.0)
            .round() as u8;
        // The player redraws its picture between ticks: wait for it.
        let deadline = std::time::Instant::now() + SETTLE;
        let mut got = drawn(&gpu, &player);
        while got[0].abs_diff(want) > 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            got = drawn(&gpu, &player);
        }
        assert!(
            got[0].abs_diff(want) <= 2,
            "{transfer:?}: {} for {want}",
            got[0]
        );
    }
    // An exposure set outright, then changed by a step.
    player.set_exposure(5.0);
    player.expose(-4.0);
    assert!(
        player.wait(SETTLE, |s| s.display.is_some_and(|d| d.exposure == 1.0)),
        "{:?}",
        player.status()
    );
    player.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    // A display-referred source has no transform to change.
    let dir = write_frames("transfer");
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    player.set_transfer(Transfer::Linear);
    player.step(1);
    wait_for(&player, 1);
    assert_eq!(player.status().display, None);
    assert_shows(&drawn(&gpu, &player), 2, "a PNG through any transfer");
    player.close().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_players_cache_filling_is_heard_as_cache_changed_events_and_seen_in_cache_info() {
    let dir = write_frames("cache-events");
    let (gpu, engine) = gpu_and_engine();
    let player = Player::open(&gpu, &engine, options(&dir)).unwrap();
    // Paused on frame 0, the decoders fill the cache ahead of it.
    let started = std::time::Instant::now();
    let mut heard = false;
    while !heard {
        assert!(started.elapsed() < SETTLE, "no cache-changed event");
        if let Ok(event) = player.events().recv_timeout(Duration::from_millis(50)) {
            heard = event == Event::CacheChanged;
        }
    }
    while player.cache_info().is_none_or(|c| c.frames < FRAMES) {
        assert!(
            started.elapsed() < SETTLE * 2,
            "the cache never held every frame: {:?}",
            player.cache_info()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing changes while it stays paused with everything held: no more
    // of them (events already waiting aside).
    std::thread::sleep(Duration::from_millis(400));
    let _ = player.events().try_iter().count();
    std::thread::sleep(Duration::from_millis(400));
    let later: Vec<Event> = player.events().try_iter().collect();
    assert!(!later.contains(&Event::CacheChanged), "{later:?}");
    player.close().unwrap();
    std::fs::remove_dir_all(dir).unwrap();
}
