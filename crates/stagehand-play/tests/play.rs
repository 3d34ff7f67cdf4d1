//! Playback of a generated folder of numbered frames: the render pass drew
//! the frame the queue says was on screen, in natural file order, and every
//! pushed frame was shown, dropped or failed. Bad folders get typed errors.

use stagehand_gpu::Gpu;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::source::pattern;
use stagehand_play::{PlayError, PlayOptions, engine_config, play};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

const W: u32 = 256;
const H: u32 = 64;

/// Frames `frame_1` to `frame_12`: PNG, 16-bit PNG and JPEG, each showing
/// its file number.
fn write_frames(dir: &Path) {
    for n in 1..=12u64 {
        let rgba = pattern::frame(n, W, H);
        let img = image::RgbaImage::from_raw(W, H, rgba).unwrap();
        match n {
            1..=4 => img.save(dir.join(format!("frame_{n}.png"))).unwrap(),
            5..=8 => {
                let wide: Vec<u16> = img.as_raw().iter().map(|&v| u16::from(v) * 257).collect();
                let img16 =
                    image::ImageBuffer::<image::Rgba<u16>, _>::from_raw(W, H, wide).unwrap();
                img16.save(dir.join(format!("frame_{n}.png"))).unwrap();
            }
            _ => image::DynamicImage::ImageRgba8(img)
                .to_rgb8()
                .save(dir.join(format!("frame_{n}.jpg")))
                .unwrap(),
        }
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_drawn_frame_is_the_one_on_screen_in_natural_order() {
    let dir = temp_dir("frames");
    write_frames(&dir);
    let gpu = Arc::new(gpu());
    let engine = UploadEngine::new(gpu.clone(), engine_config(2)).unwrap();
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 12.0,
        output_size: (W, H),
        save_ticks: vec![2, 5, 8, 11],
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    let f = summary.frames;
    // Realtime: on a loaded machine the producer may skip a frame whose
    // time has passed; every frame is accounted for all the same.
    assert_eq!(summary.frames_in_range, 12);
    assert_eq!(
        f.shown + f.dropped + f.failed + summary.never_pushed,
        12,
        "{f:?}"
    );
    assert_eq!(f.failed, 0);
    assert_eq!(summary.saved.len(), 4);
    for saved in &summary.saved {
        let drawn = pattern::read_frame_number(&saved.rgba, saved.size.0, saved.size.1);
        match saved.frame {
            // Push index k is file frame_{k+1}: natural order, not frame_1, frame_10, ...
            Some(k) => {
                assert_eq!(
                    drawn,
                    k + 1,
                    "tick {}: queue showed push {k}, the pass drew frame_{drawn}",
                    saved.tick
                );
                assert!(k <= saved.tick, "a frame shown before its time");
            }
            None => assert_eq!(drawn, 0, "nothing on screen yet, the pass cleared"),
        }
    }
    assert!(
        summary.saved.iter().filter(|s| s.frame.is_some()).count() >= 3,
        "frames reached the screen"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_folders_get_typed_errors() {
    let gpu = Arc::new(gpu());
    let engine = UploadEngine::new(gpu.clone(), engine_config(1)).unwrap();
    let run = |dir: &Path| {
        play(
            &gpu,
            &engine,
            &PlayOptions {
                source: Some(dir.to_owned()),
                fps: 60.0,
                output_size: (64, 16),
                ..PlayOptions::default()
            },
            |_| ControlFlow::Continue(()),
        )
    };
    let empty = temp_dir("empty");
    assert!(matches!(run(&empty), Err(PlayError::NoFrames(_))));
    let mixed = temp_dir("mixed");
    image::RgbaImage::new(8, 8)
        .save(mixed.join("a_1.png"))
        .unwrap();
    image::RgbaImage::new(16, 8)
        .save(mixed.join("a_2.png"))
        .unwrap();
    assert!(matches!(
        run(&mixed),
        Err(PlayError::SizeMismatch {
            expected: (8, 8),
            got: (16, 8),
            ..
        })
    ));
    let broken = temp_dir("broken");
    std::fs::write(broken.join("a_1.png"), b"not a png").unwrap();
    assert!(matches!(run(&broken), Err(PlayError::Decode { .. })));
    let missing = empty.join("nowhere");
    assert!(matches!(run(&missing), Err(PlayError::Io { .. })));
    let bad_fps = PlayOptions {
        fps: 0.0,
        ..PlayOptions::default()
    };
    assert!(matches!(
        play(&gpu, &engine, &bad_fps, |_| ControlFlow::Continue(())),
        Err(PlayError::BadOption {
            field: stagehand_play::Field::Fps,
            ..
        })
    ));
    for dir in [empty, mixed, broken] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_timeline_records_decode_uploads_render_and_memory() {
    let dir = temp_dir("trace");
    write_frames(&dir);
    let gpu = Arc::new(gpu());
    let timeline = Arc::new(stagehand_gpu::diag::Timeline::new());
    let config = stagehand_gpu::upload::EngineConfig {
        timeline: Some(timeline.clone()),
        ..engine_config(2)
    };
    let engine = UploadEngine::new(gpu.clone(), config).unwrap();
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 30.0,
        output_size: (64, 16),
        timeline: Some(timeline.clone()),
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    let json = timeline.to_chrome_json();
    let events = json["traceEvents"].as_array().unwrap();
    let count = |name: &str| events.iter().filter(|e| e["name"] == name).count() as u64;
    // Realtime on a loaded machine may skip a frame before it is
    // decoded: the trace holds one span per decode done.
    let decoded = summary.cache.expect("a sequence has a cache").decoded;
    assert!(decoded > 0);
    assert_eq!(count("decode"), decoded);
    assert_eq!(count("render pass"), summary.ticks);
    assert_eq!(
        count("copy to staging"),
        summary.frames.pushed,
        "every landed upload"
    );
    assert_eq!(count("gpu copy"), summary.frames.pushed);
    assert_eq!(count("memory"), summary.ticks);
    let tracks: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(
        tracks.contains(&"render")
            && tracks.contains(&"gpu")
            && tracks.iter().any(|t| t.starts_with("decode")),
        "{tracks:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Opens the adapter `WGPU_BACKEND` names, or fails the test with the reason.
fn gpu() -> stagehand_gpu::Gpu {
    match stagehand_gpu::Gpu::open(&stagehand_gpu::GpuOptions::default()) {
        Ok(gpu) => gpu,
        Err(e) => panic!("tests need a GPU adapter: {e}"),
    }
}

/// Resident memory of this process, bytes (Linux).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// A folder of `n` frames (see [`write_sequence`]), the GPU and an engine.
fn sequence_run(
    name: &str,
    n: u64,
    w: u32,
    h: u32,
) -> (std::path::PathBuf, Arc<Gpu>, UploadEngine) {
    let dir = temp_dir(name);
    write_sequence(&dir, n, w, h);
    let gpu = Arc::new(gpu());
    let engine = UploadEngine::new(gpu.clone(), engine_config(2)).unwrap();
    (dir, gpu, engine)
}

/// A sequence of `n` 8-bit PNG frames of `w` x `h` named `shot.0001.png`...
fn write_sequence(dir: &Path, n: u64, w: u32, h: u32) {
    for k in 1..=n {
        let img = image::RgbaImage::from_raw(w, h, pattern::frame(k, w, h)).unwrap();
        img.save(dir.join(format!("shot.{k:04}.png"))).unwrap();
    }
}

#[test]
fn the_cache_stays_within_its_budget_and_loops_play_from_it() {
    let (w, h) = (320, 180);
    let frame_bytes = u64::from(w * h * 4);
    let (dir, gpu, engine) = sequence_run("cache-budget", 12, w, h);
    // Room for three and a half frames of twelve.
    let budget = frame_bytes * 7 / 2;
    let small = PlayOptions {
        source: Some(dir.clone()),
        fps: 60.0,
        output_size: (64, 36),
        looped: true,
        frames: Some(36),
        cache_bytes: Some(budget),
        read_behind: 0.0,
        mode: stagehand_play::Mode::EveryFrame,
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &small, |_| ControlFlow::Continue(())).unwrap();
    let cache = summary.cache.expect("a sequence has a cache");
    assert!(
        cache.peak_bytes <= budget,
        "peak {} over the budget {budget}",
        cache.peak_bytes
    );
    assert_eq!(
        summary.frames.shown, 36,
        "every-frame mode shows every frame"
    );
    assert!(
        cache.decoded >= 36 - 3,
        "a loop that does not fit is decoded again"
    );
    // A budget that holds the loop: three passes, one decode per frame.
    let roomy = PlayOptions {
        cache_bytes: Some(frame_bytes * 20),
        preroll: Some(stagehand_play::Preroll::All),
        ..small
    };
    let summary = play(&gpu, &engine, &roomy, |_| ControlFlow::Continue(())).unwrap();
    let cache = summary.cache.unwrap();
    assert_eq!(cache.decoded, 12, "each frame decoded once: {cache:?}");
    assert_eq!(
        (cache.hits, cache.misses),
        (36, 0),
        "every fetch hit: {cache:?}"
    );
    assert_eq!(summary.prerolled_frames, 12);
    assert_eq!(summary.passes.len(), 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_cache_gives_its_memory_back_when_playback_ends() {
    let Some(before) = resident() else {
        eprintln!(
            "SKIPPED the_cache_gives_its_memory_back_when_playback_ends: no /proc/self/statm"
        );
        return;
    };
    // Resident memory measures the cache only if the C allocator gives
    // freed frames back: glibc raises its mapping threshold as large
    // blocks are freed, and then serves 2.4 MB frames from heaps it keeps.
    // Pinned below a frame's size, every frame is its own mapping.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: mallopt only sets a malloc parameter; it is safe to call at
    // any time, from any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
    let (w, h) = (1024, 576);
    let (dir, gpu, engine) = sequence_run("cache-memory", 24, w, h);
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 240.0,
        output_size: (64, 36),
        preroll: Some(stagehand_play::Preroll::All),
        ..PlayOptions::default()
    };
    let baseline = {
        // A first run settles the GPU's and the allocator's own memory.
        play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
        resident().unwrap()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    let held = summary.cache.unwrap().peak_bytes;
    assert_eq!(
        held,
        24 * u64::from(w * h * 4),
        "the whole sequence was cached"
    );
    let after = resident().unwrap();
    assert!(
        after < baseline + held / 4,
        "resident {after} after playback, {baseline} before it (first run from {before}); the cache held {held}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_loop_that_fits_the_gpu_cache_plays_later_passes_with_no_upload() {
    let (w, h) = (192, 108);
    let (dir, gpu, engine) = sequence_run("gpu-cache", 8, w, h);
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 60.0,
        output_size: (w, h),
        looped: true,
        frames: Some(32),
        gpu_cache_bytes: Some(u64::from(w * h * 4) * 16),
        mode: stagehand_play::Mode::EveryFrame,
        save_ticks: vec![3, 13, 22, 31],
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    let tier = summary.gpu_cache.expect("the GPU tier is on");
    assert_eq!(tier.frames, 8, "every frame of the loop is on the device");
    // The first pass uploads each frame into the tier itself, once; every
    // later pass shows them from there, with no upload at all.
    let f = summary.frames;
    assert_eq!(
        tier.uploads, 8,
        "one upload per frame, all in the first pass: {tier:?}"
    );
    assert_eq!(f.pushed, 0, "nothing went through the frame queue: {f:?}");
    assert_eq!(tier.shown, 32, "every tick drawn from the device: {tier:?}");
    let uploads: Vec<u64> = summary.passes.iter().map(|p| p.uploads).collect();
    assert_eq!(uploads, [8, 0, 0, 0], "uploads per pass");
    assert_eq!(
        f.shown + f.dropped + f.failed + summary.never_pushed,
        summary.frames_in_range,
        "{f:?}, never pushed {}",
        summary.never_pushed
    );
    for saved in &summary.saved {
        let k = saved
            .frame
            .expect("every-frame mode has a frame at each tick");
        assert_eq!(k, saved.tick, "every-frame mode shows frame k at tick k");
        let drawn = pattern::read_frame_number(&saved.rgba, saved.size.0, saved.size.1);
        assert_eq!(
            drawn,
            k % 8 + 1,
            "tick {} drew shot.{:04}",
            saved.tick,
            drawn
        );
        let source = pattern::frame(k % 8 + 1, w, h);
        assert_eq!(
            saved.texels, source,
            "the device copy holds the frame exactly"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stopping_early_accounts_for_exactly_the_ticks_run() {
    let (w, h) = (64, 36);
    let (dir, gpu, engine) = sequence_run("early-stop", 24, w, h);
    // Frames 7 and 8 missing: two gaps.
    std::fs::remove_file(dir.join("shot.0007.png")).unwrap();
    std::fs::remove_file(dir.join("shot.0008.png")).unwrap();
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 60.0,
        output_size: (w, h),
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |p| {
        if p.tick == 12 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(summary.ticks, 12, "the callback stopped it after tick 12");
    assert_eq!(summary.gaps, 2, "ticks 6 and 7 fell on the gaps");
    assert_eq!(summary.frames_in_range, 10);
    let f = summary.frames;
    assert_eq!(
        f.shown + f.dropped + f.failed + summary.never_pushed,
        summary.frames_in_range,
        "{f:?}, never pushed {}",
        summary.never_pushed
    );
    assert!(
        f.pushed <= 10,
        "pushes past the last tick are not counted: {f:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_looped_realtime_sequence_that_skips_on_its_first_pass_keeps_every_frame_it_decodes() {
    // 240 fps: the first pass cannot decode in time and skips frames. A
    // loop that fits the budget must still keep every frame it decodes,
    // so that later passes come from the cache (decoding none again).
    let (w, h) = (640, 360);
    let len = 24u64;
    let (dir, gpu, engine) = sequence_run("loop-skips", len, w, h);
    let options = PlayOptions {
        source: Some(dir.clone()),
        fps: 240.0,
        output_size: (64, 36),
        looped: true,
        frames: Some(3 * len),
        cache_bytes: Some(u64::from(w * h * 4) * (len + 4)),
        ..PlayOptions::default()
    };
    let summary = play(&gpu, &engine, &options, |_| ControlFlow::Continue(())).unwrap();
    let cache = summary.cache.expect("a sequence has a cache");
    // How many it decodes in time depends on the machine's load; what it
    // decodes it keeps: no frame decoded twice, none evicted.
    assert!(
        (1..=len).contains(&cache.decoded) && cache.evicted == 0,
        "no frame decoded twice over three passes, none evicted: {cache:?}"
    );
    let buffers = summary.frame_buffers.expect("decoded frames have buffers");
    assert!(
        buffers.allocated <= len + 4,
        "no frame buffer allocated twice for the same frame: {buffers:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// The nice value in a `/proc` task's `stat` file.
#[cfg(target_os = "linux")]
fn nice_in(stat: &Path) -> i64 {
    let stat = std::fs::read_to_string(stat).unwrap();
    // Fields after the command's closing parenthesis: state is the 3rd
    // field of the line, nice the 19th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// The nice value of each of this process's threads named `prefix…`.
#[cfg(target_os = "linux")]
fn nice_of_threads(prefix: &str) -> Vec<i64> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            found.push(nice_in(&task.path().join("stat")));
        }
    }
    found
}

#[cfg(target_os = "linux")]
#[test]
fn the_players_upload_workers_do_not_run_below_the_render_thread() {
    // An upload worker submits to the device queue and holds the driver's
    // locks while it does (on GL, the one context every thread shares).
    // Below the render thread, the scheduler ranks it with the decoders,
    // and the render thread waits on a lock held by a thread that is not
    // running: on llvmpipe a 4K H.264 movie dropped 1-17 frames of 96 in
    // a window that way, and none with the workers at the render thread's
    // priority.
    let gpu = Arc::new(gpu());
    let _engine = UploadEngine::new(gpu, engine_config(2)).unwrap();
    // This thread builds the engine and draws, as a player's render
    // thread does.
    let render = nice_in(Path::new("/proc/thread-self/stat"));
    let workers = nice_of_threads("stagehand-uploa");
    // Other tests' engines may be running too: every one is a player's.
    assert!(!workers.is_empty(), "no upload worker found");
    for nice in workers {
        assert!(
            nice <= render,
            "an upload worker runs at nice {nice}, below the render thread's {render}"
        );
    }
}
