//! `stagehand play` in a real window, under Xvfb, on both software
//! adapters: what the window shows is read back from the X server with
//! `xwd`, and keys and clicks go in through `xdotool`.
//!
//! Each test starts its own Xvfb. Where Xvfb, xdotool or xwd is missing,
//! the tests say so and skip (CI installs them: see `.ci/run`).

mod common;
mod movie_files;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The frames' colours: distinct in every channel from their neighbours.
const COLOURS: [[u8; 3]; 8] = [
    [200, 30, 40],
    [30, 180, 60],
    [40, 60, 210],
    [220, 200, 20],
    [20, 200, 210],
    [190, 40, 200],
    [250, 140, 10],
    [90, 90, 90],
];
/// The first frame's number.
const FIRST: usize = 1001;
/// The frames' size: 4:3.
const FRAME: (u32, u32) = (64, 48);
/// The timeline strip's height at the bottom of the window.
const BAR: u32 = 24;
/// Longest a window takes to show what it was asked to.
const SETTLE: Duration = Duration::from_secs(8);

/// Two tests running `body` on lavapipe (Vulkan) and on llvmpipe (GL).
macro_rules! on_both_adapters {
    ($body:ident: $vulkan:ident, $gl:ident) => {
        #[test]
        fn $vulkan() {
            $body("vulkan");
        }

        #[test]
        fn $gl() {
            $body("gl");
        }
    };
}

fn tool(name: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One window test at a time: on a 2-core machine, players started side
/// by side would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An X server of the test's own.
struct Xvfb {
    child: Child,
    display: String,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Xvfb {
    /// Starts one on a free display; `None` (with a line saying why) where
    /// the tools are missing.
    fn start(test: &str) -> Option<Self> {
        Self::start_with(test, &[])
    }

    /// Starts one with `extra` arguments (`-extension NAME` turns one off).
    fn start_with(test: &str, extra: &[&str]) -> Option<Self> {
        for needed in ["Xvfb", "xdotool", "xwd"] {
            if !tool(needed) {
                eprintln!(
                    "skipped {test}: {needed} is not installed (apt install xvfb xdotool x11-apps)"
                );
                return None;
            }
        }
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        // The server picks a free display and writes its number to us.
        // Keys injected are pressed and released at once: a loaded machine
        // must not have the server repeat one that took long to release.
        // No reset when the last client leaves (the readiness probe below
        // is one): a client that connects while the server starts over
        // can be refused.
        let mut child = Command::new("Xvfb")
            .args([
                "-noreset",
                "-displayfd",
                "1",
                "-ardelay",
                "30000",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        let mut line = String::new();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        std::io::BufRead::read_line(&mut stdout, &mut line).expect("Xvfb names its display");
        let number: u32 = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("Xvfb did not name a display: {line:?}")
        });
        let x = Self {
            child,
            display: format!(":{number}"),
            _turn: turn,
        };
        // Ready once a client's request is answered, not only once named.
        let started = Instant::now();
        while !Command::new("xdotool")
            .arg("getdisplaygeometry")
            .env("DISPLAY", &x.display)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(
                started.elapsed() < SETTLE,
                "Xvfb on {} does not answer",
                x.display
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(x)
    }

    fn xdotool(&self, args: &[&str]) -> String {
        let out = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .expect("xdotool runs");
        assert!(
            out.status.success(),
            "xdotool {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Xvfb {
    /// Stops the server with SIGTERM, so it removes its lock and socket
    /// before the next test's server starts (SIGKILL after a second).
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let started = Instant::now();
        if common::wait_at_most(&mut self.child, started, Duration::from_secs(1)).is_none() {
            let _ = self.child.wait();
        }
    }
}

/// A sequence of solid frames, one colour each, as 8-bit PNGs.
fn write_sequence(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stagehand-window-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (i, c) in COLOURS.iter().enumerate() {
        let image = image::RgbImage::from_pixel(FRAME.0, FRAME.1, image::Rgb(*c));
        image
            .save(dir.join(format!("shot.{}.png", FIRST + i)))
            .unwrap();
    }
    dir
}

/// The player, running in a window.
struct Player<'x> {
    x: &'x Xvfb,
    child: Child,
    window: String,
}

impl<'x> Player<'x> {
    fn launch_program(x: &'x Xvfb, backend: &str, program: &Path, args: &[&str]) -> Self {
        Self::try_launch_program(x, backend, program, args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn launch(x: &'x Xvfb, backend: &str, args: &[&str]) -> Self {
        Self::try_launch(x, backend, args).unwrap_or_else(|e| {
            // A refused connection to a server that answers xdotool has been
            // seen once in many runs: one more try, then fail with the reason.
            assert!(e.contains("Failed to open connection to X server"), "{e}");
            eprintln!("retrying once: {e}");
            Self::try_launch(x, backend, args).unwrap_or_else(|e| panic!("{e}"))
        })
    }

    fn try_launch(x: &'x Xvfb, backend: &str, args: &[&str]) -> Result<Self, String> {
        let mut play = vec!["play"];
        play.extend_from_slice(args);
        Self::try_launch_program(
            x,
            backend,
            Path::new(env!("CARGO_BIN_EXE_stagehand")),
            &play,
        )
    }

    /// Runs `program args` (a program whose window's title starts
    /// "stagehand play") on `x`.
    fn try_launch_program(
        x: &'x Xvfb,
        backend: &str,
        program: &Path,
        args: &[&str],
    ) -> Result<Self, String> {
        let child = Command::new(program)
            .args(args)
            .env("DISPLAY", &x.display)
            .env_remove("WAYLAND_DISPLAY")
            .env("WGPU_BACKEND", backend)
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("stagehand starts");
        let mut player = Self {
            x,
            child,
            window: String::new(),
        };
        let started = Instant::now();
        player.window = loop {
            if let Ok(Some(status)) = player.child.try_wait() {
                let mut stderr = String::new();
                let _ = player
                    .child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr);
                return Err(format!(
                    "the player exited ({status}) before its window appeared: {stderr}"
                ));
            }
            let out = Command::new("xdotool")
                .args(["search", "--name", "^stagehand play"])
                .env("DISPLAY", &x.display)
                .output()
                .expect("xdotool runs");
            let found = String::from_utf8_lossy(&out.stdout);
            if let Some(id) = found.split_whitespace().next() {
                break id.to_owned();
            }
            assert!(started.elapsed() < SETTLE, "no window within {SETTLE:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        Ok(player)
    }

    /// Presses keys, with the window focused (the keys go in as a
    /// keyboard's would).
    fn key(&self, keys: &[&str]) {
        self.x.xdotool(&["windowfocus", "--sync", &self.window]);
        let mut args = vec!["key", "--delay", "30"];
        args.extend_from_slice(keys);
        self.x.xdotool(&args);
    }

    /// The window's inner size as X has it.
    fn size(&self) -> (u32, u32) {
        let shot = self.screenshot();
        (shot.width, shot.height)
    }

    fn screenshot(&self) -> Xwd {
        let out = Command::new("xwd")
            .args(["-silent", "-id", &self.window])
            .env("DISPLAY", &self.x.display)
            .output()
            .expect("xwd runs");
        assert!(
            out.status.success(),
            "xwd: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Xwd::parse(&out.stdout)
    }

    /// The colour at the centre of the picture area (the window above the
    /// timeline strip).
    fn centre(&self) -> [u8; 3] {
        let shot = self.screenshot();
        shot.pixel(shot.width / 2, (shot.height - BAR) / 2)
    }

    /// Waits until the picture's centre is `want`, failing with `what`.
    fn wait_for(&self, want: [u8; 3], what: &str) {
        let started = Instant::now();
        loop {
            let got = self.centre();
            if got == want {
                return;
            }
            assert!(
                started.elapsed() < SETTLE,
                "{what}: the centre is {got:?}, expected {want:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the player to exit, which it must do with status 0; its
    /// output.
    fn finish_ok(self) -> Output {
        let out = self.finish();
        assert!(
            out.status.success(),
            "exit: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Waits for the player to exit; its output.
    fn finish(mut self) -> Output {
        let started = Instant::now();
        let status = common::wait_at_most(&mut self.child, started, SETTLE)
            .expect("the player exits once its window is closed");
        let mut stdout = String::new();
        let mut stderr = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        Output {
            status,
            stdout: stdout.into_bytes(),
            stderr: stderr.into_bytes(),
        }
    }
}

impl Drop for Player<'_> {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An X window dump: 24-bit TrueColor, 32 bits per pixel, as Xvfb's
/// screen makes them.
struct Xwd {
    width: u32,
    height: u32,
    bytes_per_line: u32,
    little_endian: bool,
    masks: [u32; 3],
    data: Vec<u8>,
}

impl Xwd {
    fn parse(bytes: &[u8]) -> Self {
        let field = |i: usize| u32::from_be_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
        let header = field(0) as usize;
        assert_eq!(field(1), 7, "XWD version 7");
        assert_eq!(field(2), 2, "ZPixmap");
        assert_eq!(field(11), 32, "32 bits per pixel");
        let colours = field(19) as usize;
        let start = header + colours * 12;
        Self {
            width: field(4),
            height: field(5),
            bytes_per_line: field(12),
            little_endian: field(7) == 0,
            masks: [field(14), field(15), field(16)],
            data: bytes[start..].to_vec(),
        }
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let at = (y * self.bytes_per_line + x * 4) as usize;
        let raw: [u8; 4] = self.data[at..at + 4].try_into().unwrap();
        let v = if self.little_endian {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        };
        self.masks.map(|m| ((v & m) >> m.trailing_zeros()) as u8)
    }
}

fn colour(frame: usize) -> [u8; 3] {
    COLOURS[frame - FIRST]
}

/// Plays the colour sequence with `args` in a window on an Xvfb of its
/// own, runs `body` against it, then presses `quit` and checks the player
/// ends with status 0; its output. `None` (said on standard error) where
/// the tools are missing.
fn in_window(
    test: &str,
    backend: &str,
    args: &[&str],
    quit: &str,
    body: impl FnOnce(&Xvfb, &Player<'_>),
) -> Option<Output> {
    let x = Xvfb::start(&format!("{test} on {backend}"))?;
    let dir = write_sequence(&format!("{}-{backend}", test.replace(' ', "-")));
    let mut all = vec![dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let player = Player::launch(&x, backend, &all);
    body(&x, &player);
    player.key(&[quit]);
    let out = player.finish_ok();
    let _ = std::fs::remove_dir_all(dir);
    Some(out)
}

/// On a software adapter, a server without shared memory (MIT-SHM) takes the
/// frames through the socket: the transport shows the right frames all
/// the same, and the summary says which request carried them.
fn no_shared_memory(backend: &str) {
    let test = format!("a window on a server without MIT-SHM on {backend}");
    let Some(x) = Xvfb::start_with(&test, &["-extension", "MIT-SHM"]) else {
        return;
    };
    let dir = write_sequence(&format!("no-shm-{backend}"));
    let args = [
        dir.to_str().unwrap(),
        "--window",
        "--start-paused",
        "--seek",
        "1002",
        "--output-size",
        "320x240",
    ];
    let out = one_step_from_1002(Player::launch(&x, backend, &args));
    let _ = std::fs::remove_dir_all(dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("PutImage") && !stdout.contains("ShmPutImage"),
        "{stdout}"
    );
}

on_both_adapters!(
    no_shared_memory:
    a_window_on_a_server_without_shared_memory_puts_its_frames_through_the_socket_on_lavapipe,
    a_window_on_a_server_without_shared_memory_puts_its_frames_through_the_socket_on_llvmpipe
);

/// Checks that `player`, paused at frame 1002, shows it and steps right
/// to 1003; quits it and returns its output.
fn one_step_from_1002(player: Player<'_>) -> Output {
    player.wait_for(colour(1002), "paused at --seek 1002");
    player.key(&["Right"]);
    player.wait_for(colour(1003), "one step right");
    player.key(&["q"]);
    player.finish_ok()
}

/// A window's arguments for a player paused at frame `seek`, 480x360.
fn paused_at(seek: &str) -> [&str; 6] {
    [
        "--window",
        "--start-paused",
        "--seek",
        seek,
        "--output-size",
        "480x360",
    ]
}

fn transport(backend: &str) {
    let args = paused_at("1003");
    let Some(out) = in_window("transport", backend, &args, "q", |x, player| {
        player.wait_for(colour(1003), "paused at --seek 1003");
        player.key(&["Right"]);
        player.wait_for(colour(1004), "one step right");
        player.key(&["Right", "Right"]);
        player.wait_for(colour(1006), "two more steps");
        player.key(&["Left"]);
        player.wait_for(colour(1005), "one step left");
        player.key(&["Home"]);
        player.wait_for(colour(1001), "Home");
        player.key(&["End"]);
        player.wait_for(colour(1008), "End");
        // A click on the timeline: the middle of position 2's cell.
        let (w, h) = player.size();
        let x_at = (2.5 * f64::from(w) / COLOURS.len() as f64) as u32;
        let y_at = h - BAR / 2;
        x.xdotool(&[
            "mousemove",
            "--window",
            &player.window,
            &x_at.to_string(),
            &y_at.to_string(),
        ]);
        x.xdotool(&["click", "1"]);
        player.wait_for(colour(1003), "a click on the timeline at position 2");
    }) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("output:  window 480x360"), "{stdout}");
}

on_both_adapters!(
    transport:
    paused_steps_home_end_and_a_timeline_click_show_the_right_frame_on_lavapipe,
    paused_steps_home_end_and_a_timeline_click_show_the_right_frame_on_llvmpipe
);

fn keys(backend: &str) {
    let args = paused_at("1008");
    in_window("keys", backend, &args, "Escape", |_, player| {
        player.wait_for(colour(1008), "paused on the last frame");
        // Without the loop, a step past the end stays on the last frame.
        player.key(&["Right"]);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            player.centre(),
            colour(1008),
            "no step past the end without the loop"
        );
        player.key(&["l", "Right"]);
        player.wait_for(colour(1001), "with the loop on, a step past the end wraps");
        // The heads-up display darkens its corner; H hides it.
        // (The picture starts 16 px in: 4:3 in 480x336.)
        let corner = |p: &Player<'_>| p.screenshot().pixel(30, 14);
        assert_ne!(corner(player), colour(1001), "the heads-up display is up");
        player.key(&["h"]);
        let started = Instant::now();
        while corner(player) != colour(1001) {
            assert!(
                started.elapsed() < SETTLE,
                "H did not hide the heads-up display"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Space plays: the picture moves on; Space again holds it.
        player.key(&["space"]);
        let started = Instant::now();
        while player.centre() == colour(1001) {
            assert!(started.elapsed() < SETTLE, "Space did not resume playback");
            std::thread::sleep(Duration::from_millis(20));
        }
        player.key(&["space"]);
        std::thread::sleep(Duration::from_millis(300));
        let held = player.centre();
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(player.centre(), held, "paused again: the picture holds");
        assert!(COLOURS.contains(&held), "{held:?} is a frame's colour");
    });
}

on_both_adapters!(
    keys:
    loop_heads_up_display_and_pause_keys_on_lavapipe,
    loop_heads_up_display_and_pause_keys_on_llvmpipe
);

/// I and O make the frame on screen the in and out points: the timeline
/// marks them, loops wrap between them, Home and End go to them, X clears
/// them.
fn in_and_out(backend: &str) {
    let args = paused_at("1003");
    in_window("in-and-out", backend, &args, "q", |_, player| {
        player.wait_for(colour(1003), "paused at --seek 1003");
        player.key(&["i", "Right", "Right"]);
        player.wait_for(colour(1005), "two steps from the in point");
        player.key(&["o", "l", "Right"]);
        player.wait_for(
            colour(1003),
            "looped, a step past the out point wraps to the in point",
        );
        player.key(&["End"]);
        player.wait_for(colour(1005), "End is the out point");
        // The line above the cache bar spans positions 2 to 4 of 8.
        let shot = player.screenshot();
        let line_y = shot.height - BAR + 2;
        let column =
            |position: f64| (position * f64::from(shot.width) / COLOURS.len() as f64) as u32;
        let white = [255, 255, 255];
        assert_eq!(shot.pixel(column(3.5), line_y), white, "the range's line");
        assert_ne!(
            shot.pixel(column(0.5), line_y),
            white,
            "before the in point"
        );
        assert_ne!(
            shot.pixel(column(6.5), line_y),
            white,
            "after the out point"
        );
        player.key(&["x", "End"]);
        player.wait_for(colour(1008), "X cleared them: End is the last frame");
    });
}

on_both_adapters!(
    in_and_out:
    in_and_out_point_keys_mark_the_timeline_and_keep_loops_and_home_end_inside_on_lavapipe,
    in_and_out_point_keys_mark_the_timeline_and_keep_loops_and_home_end_inside_on_llvmpipe
);

/// Up and Down change the exposure of a scene-linear source.
fn exposure(backend: &str) {
    let Some(x) = Xvfb::start(&format!("exposure on {backend}")) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "stagehand-window-exposure-{backend}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Mid grey, scene-linear: 0.18 (as a half, 0.17993).
    let grey = |_, _, c| if c == 3 { 1.0 } else { 0.18 };
    stagehand_play::testdata::write_exr_half(
        &dir.join("grey.1001.exr"),
        (64, 48),
        exr::compression::Compression::ZIP16,
        grey,
    )
    .unwrap();
    let mut player = Player::launch(
        &x,
        backend,
        &[
            dir.to_str().unwrap(),
            "--window",
            "--start-paused",
            "--output-size",
            "320x240",
        ],
    );
    // sRGB of 0.18 is 118 of 255, give or take rounding on the way.
    let level = |p: &Player<'_>| i32::from(p.centre()[1]);
    let wait_level = |p: &mut Player<'_>, want: i32, what: &str| {
        let started = Instant::now();
        loop {
            let got = level(p);
            if (got - want).abs() <= 1 {
                return;
            }
            assert!(
                started.elapsed() < SETTLE,
                "{what}: level {got}, expected {want}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_level(&mut player, 118, "0.18 through sRGB");
    // Two presses of Up: one stop brighter, 0.36 → 162.
    player.key(&["Up", "Up"]);
    wait_level(&mut player, 162, "+1 stop");
    // Four presses of Down: one stop darker than the start, 0.09 → 85.
    player.key(&["Down", "Down", "Down", "Down"]);
    wait_level(&mut player, 85, "-1 stop");
    player.key(&["q"]);
    player.finish_ok();
    let _ = std::fs::remove_dir_all(dir);
}

on_both_adapters!(
    exposure:
    up_and_down_change_the_exposure_of_a_float_source_on_lavapipe,
    up_and_down_change_the_exposure_of_a_float_source_on_llvmpipe
);

/// L while playing a loop: playback goes on to the end of the range and
/// holds its last frame there.
fn loop_off_while_playing(backend: &str) {
    let args = [
        "--window",
        "--loop",
        "--fps",
        "4",
        "--output-size",
        "320x240",
    ];
    in_window(
        "loop off while playing",
        backend,
        &args,
        "q",
        |_, player| {
            player.wait_for(colour(1002), "playing the loop");
            player.key(&["l"]);
            player.wait_for(colour(1008), "on to the last frame with the loop off");
            std::thread::sleep(Duration::from_millis(800));
            assert_eq!(player.centre(), colour(1008), "the last frame holds");
        },
    );
}

on_both_adapters!(
    loop_off_while_playing:
    loop_off_while_playing_goes_on_to_the_last_frame_and_holds_it_on_lavapipe,
    loop_off_while_playing_goes_on_to_the_last_frame_and_holds_it_on_llvmpipe
);

/// Frames stepped over land in the GPU tier; stepping back onto them
/// shows them from the device at once.
fn steps_back_onto_the_gpu_tier(backend: &str) {
    let args = [
        "--window",
        "--start-paused",
        "--seek",
        "1002",
        "--gpu-cache",
        "64M",
        "--output-size",
        "320x240",
    ];
    in_window(
        "steps back onto the gpu tier",
        backend,
        &args,
        "q",
        |_, player| {
            player.wait_for(colour(1002), "paused at 1002");
            player.key(&["Right", "Right", "Right"]);
            player.wait_for(colour(1005), "three steps right");
            player.key(&["Left"]);
            player.wait_for(colour(1004), "one step back, onto the device");
            player.key(&["Left", "Left"]);
            player.wait_for(colour(1002), "two more steps back");
        },
    );
}

on_both_adapters!(
    steps_back_onto_the_gpu_tier:
    steps_back_onto_frames_in_the_gpu_tier_show_them_at_once_on_lavapipe,
    steps_back_onto_frames_in_the_gpu_tier_show_them_at_once_on_llvmpipe
);

fn letterbox_and_close(backend: &str) {
    let Some(x) = Xvfb::start(&format!("letterbox on {backend}")) else {
        return;
    };
    let dir = write_sequence(&format!("letterbox-{backend}"));
    let player = Player::launch(
        &x,
        backend,
        &[
            dir.to_str().unwrap(),
            "--window",
            "--start-paused",
            "--output-size",
            "320x240",
            "--json",
        ],
    );
    player.wait_for(colour(1001), "the first frame");
    // Wider than 4:3: bars left and right.
    x.xdotool(&["windowsize", "--sync", &player.window, "600", "224"]);
    let started = Instant::now();
    loop {
        let shot = player.screenshot();
        if (shot.width, shot.height) == (600, 224) {
            let area = shot.height - BAR;
            let centre = shot.pixel(300, area / 2);
            let bar = shot.pixel(10, area / 2);
            let right = shot.pixel(590, area / 2);
            // 600x200 fits 267x200 of 4:3, from x = 166.
            let edge = shot.pixel(170, area / 2);
            if centre == colour(1001)
                && bar == [0, 0, 0]
                && right == [0, 0, 0]
                && edge == colour(1001)
            {
                break;
            }
            assert!(
                started.elapsed() < SETTLE,
                "after the resize: centre {centre:?}, left bar {bar:?}, right bar {right:?}, picture edge {edge:?}"
            );
        }
        assert!(started.elapsed() < SETTLE, "the window was not resized");
        std::thread::sleep(Duration::from_millis(50));
    }
    x.xdotool(&["windowclose", &player.window]);
    let out = player.finish_ok();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "a JSON summary: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let playback = &report["playback"];
    assert!(
        playback["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("window 600x224")),
        "{playback}"
    );
    assert!(
        playback["frames"]["shown"].as_u64() >= Some(1),
        "{playback}"
    );
    // On a software adapter the frames reach the X server without a
    // surface (the resize above went through that path), in memory shared
    // with it (Xvfb has MIT-SHM).
    assert!(
        playback["output"]
            .as_str()
            .is_some_and(|o| o.contains("ShmPutImage")),
        "{playback}"
    );
    // lavapipe imports that memory (VK_EXT_external_memory_host): the
    // device copies each frame into it, drawn in the server's own byte
    // order, and the colours checked above came that way, at a width
    // (600) whose rows the copy pads to 640 pixels. GL reads back.
    let straight = match backend {
        "vulkan" => "Bgra8Unorm",
        _ => "Rgba8Unorm",
    };
    assert!(
        playback["output"]
            .as_str()
            .is_some_and(|o| o.contains(straight)),
        "{playback}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A present mode named on the command line asks for a surface that
/// presents so, on a software adapter too: the window shows the frames
/// through it, and the summary names the mode, not a copy to the server.
fn named_present_mode(backend: &str) {
    let Some(x) = Xvfb::start(&format!("--present-mode mailbox on {backend}")) else {
        return;
    };
    let dir = write_sequence(&format!("named-mode-{backend}"));
    let mut args = vec![dir.to_str().unwrap()];
    args.extend(paused_at("1002"));
    args.extend(["--present-mode", "mailbox", "--json"]);
    let out = one_step_from_1002(Player::launch(&x, backend, &args));
    let _ = std::fs::remove_dir_all(dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "a JSON summary: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let output = report["playback"]["output"].as_str().unwrap_or_default();
    assert!(
        !output.contains("PutImage")
            && ["Mailbox", "Fifo", "Immediate"]
                .iter()
                .any(|m| output.contains(m)),
        "{output}"
    );
}

on_both_adapters!(
    named_present_mode:
    a_present_mode_named_presents_through_a_surface_on_lavapipe,
    a_present_mode_named_presents_through_a_surface_on_llvmpipe
);

on_both_adapters!(
    letterbox_and_close:
    a_resized_window_letterboxes_with_black_bars_and_closing_it_ends_with_a_summary_on_lavapipe,
    a_resized_window_letterboxes_with_black_bars_and_closing_it_ends_with_a_summary_on_llvmpipe
);

fn save_frame(backend: &str) {
    let Some(x) = Xvfb::start(&format!("save-frame on {backend}")) else {
        return;
    };
    let dir = write_sequence(&format!("save-{backend}"));
    let png = dir.with_extension("saved.png");
    let player = Player::launch(
        &x,
        backend,
        &[
            dir.to_str().unwrap(),
            "--window",
            "--mode",
            "every-frame",
            "--frames",
            "6",
            "--output-size",
            "320x240",
            "--save-frame",
            "4",
            png.to_str().unwrap(),
        ],
    );
    player.finish_ok();
    let saved = image::open(&png).unwrap().to_rgb8();
    assert_eq!(saved.dimensions(), (320, 240), "the window's size");
    let centre = saved.get_pixel(160, (240 - BAR) / 2).0;
    assert_eq!(
        centre,
        colour(1005),
        "tick 4 shows frame 1005 in every-frame mode"
    );
    // What was presented includes the timeline strip.
    let strip = saved.get_pixel(300, 240 - BAR / 2).0;
    assert_ne!(
        strip,
        [0, 0, 0],
        "the timeline strip is in the saved picture"
    );
    let _ = std::fs::remove_file(png);
    let _ = std::fs::remove_dir_all(dir);
}

on_both_adapters!(
    save_frame:
    save_frame_in_a_window_reads_back_what_was_presented_on_lavapipe,
    save_frame_in_a_window_reads_back_what_was_presented_on_llvmpipe
);

/// A 2-second movie written by the `ffmpeg` command: solid frames, each
/// of its own colour (red and green 5 code values apart from one frame to
/// the next, blue 60 apart from the frames either side), and a click on the
/// sound at every second.
/// `None` (said on standard error) without the command.
fn write_movie(name: &str) -> Option<PathBuf> {
    if !movie_files::has_ffmpeg(name) {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("stagehand-window-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cycle.mp4");
    let video = "color=black:size=64x48:rate=24,format=rgb24,\
                 geq=r='10+5*N':g='245-5*N':b='100+60*mod(N,2)'";
    let encode = [
        "-c:v", "libx264", "-qp", "0", "-g", "12", "-pix_fmt", "yuv444p",
    ];
    movie_files::write_clicking_movie(&path, video, 2, &encode);
    Some(path)
}

/// Each frame's colour as FFmpeg decodes and converts it.
fn movie_colours(path: &std::path::Path) -> Vec<[u8; 3]> {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-pix_fmt", "rgb24", "-f", "rawvideo", "-"])
        .output()
        .expect("ffmpeg runs");
    assert!(out.status.success());
    let frame = 64 * 48 * 3;
    out.stdout
        .chunks_exact(frame)
        .map(|f| {
            let at = (24 * 64 + 32) * 3;
            [f[at], f[at + 1], f[at + 2]]
        })
        .collect()
}

/// The frame whose colour (as FFmpeg converts it) is nearest `got`, if it
/// is within 3 code values in every channel (the player's conversion
/// against FFmpeg's).
fn frame_of(colours: &[[u8; 3]], got: [u8; 3]) -> Option<usize> {
    let distance = |c: &[u8; 3]| c.iter().zip(got).map(|(a, b)| a.abs_diff(b)).max();
    let (frame, nearest) = colours
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| distance(c))?;
    (distance(nearest)? <= 3).then_some(frame)
}

impl Player<'_> {
    /// Waits until the picture's centre shows frame `want` of the movie.
    fn wait_frame(&self, colours: &[[u8; 3]], want: usize, what: &str) {
        let started = Instant::now();
        loop {
            let got = self.centre();
            if frame_of(colours, got) == Some(want) {
                return;
            }
            assert!(
                started.elapsed() < SETTLE,
                "{what}: the centre is {got:?} (frame {:?}), expected frame {want} {:?}",
                frame_of(colours, got),
                colours[want]
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn movie_transport(backend: &str) {
    let Some(x) = Xvfb::start(&format!("movie transport on {backend}")) else {
        return;
    };
    let Some(movie) = write_movie(&format!("movie-{backend}")) else {
        return;
    };
    let colours = movie_colours(&movie);
    assert_eq!(colours.len(), 48);
    let player = Player::launch(
        &x,
        backend,
        &[
            movie.to_str().unwrap(),
            "--window",
            "--start-paused",
            "--seek",
            "12",
            "--audio-out",
            "null",
            "--output-size",
            "320x240",
        ],
    );
    let wait = |want: usize, what: &str| player.wait_frame(&colours, want, what);
    wait(12, "paused at --seek 12");
    player.key(&["Right"]);
    wait(13, "one step right");
    player.key(&["Right", "Right"]);
    wait(15, "two more steps");
    player.key(&["Left"]);
    wait(14, "one step left (back across no keyframe)");
    player.key(&["Home"]);
    wait(0, "Home");
    player.key(&["End"]);
    wait(47, "End");
    player.key(&["Home"]);
    wait(0, "Home again");
    // Play with the sound's clock for a moment, then pause: the picture
    // moved on, and holds while paused.
    player.key(&["space"]);
    std::thread::sleep(Duration::from_millis(500));
    player.key(&["space"]);
    std::thread::sleep(Duration::from_millis(200));
    let paused = player.centre();
    let at = frame_of(&colours, paused);
    assert!(
        at.is_some_and(|f| f > 0),
        "playing moved on to a frame of the movie: {paused:?} (frame {at:?})"
    );
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(player.centre(), paused, "paused, the picture holds");
    player.key(&["q"]);
    let out = player.finish_ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("audio:"), "{stdout}");
    assert!(stdout.contains("null sink"), "{stdout}");
    let _ = std::fs::remove_dir_all(movie.parent().unwrap());
}

on_both_adapters!(
    movie_transport:
    a_movie_with_sound_steps_seeks_plays_and_pauses_in_a_window_on_lavapipe,
    a_movie_with_sound_steps_seeks_plays_and_pauses_in_a_window_on_llvmpipe
);

#[test]
fn window_without_a_display_fails_at_once_with_one_line() {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_stagehand"))
        .args(["play", "--window", "--frames", "2"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("stagehand: cannot open a window: no display"),
        "{stderr}"
    );
}

#[test]
fn auto_without_a_display_plays_headless() {
    let out = Command::new(env!("CARGO_BIN_EXE_stagehand"))
        .args([
            "play",
            "--size",
            "64x64",
            "--output-size",
            "64x64",
            "--frames",
            "3",
            "--json",
        ])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["playback"]["output"], "offscreen");
}

fn resized_again_and_again_while_playing(backend: &str) {
    // A window resized while frames upload: the surface must be configured
    // while an upload worker submits (the device does not come idle), and
    // the window may change size again between the configure and the
    // draw. Either ended playback with an error before.
    let Some(x) = Xvfb::start(&format!("resizes on {backend}")) else {
        return;
    };
    let dir = write_sequence(&format!("resizes-{backend}"));
    let player = Player::launch(
        &x,
        backend,
        &[
            dir.to_str().unwrap(),
            "--window",
            "--loop",
            "--output-size",
            "320x240",
            "--json",
        ],
    );
    for i in 0..60u32 {
        let (w, h) = (200 + (i * 37) % 500, 150 + (i * 53) % 350);
        x.xdotool(&["windowsize", &player.window, &w.to_string(), &h.to_string()]);
        std::thread::sleep(Duration::from_millis(20));
    }
    x.xdotool(&["windowclose", &player.window]);
    let out = player.finish_ok();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["playback"]["frames"]["failed"], 0, "{report}");
}

on_both_adapters!(
    resized_again_and_again_while_playing:
    a_window_resized_again_and_again_while_playing_keeps_playing_on_lavapipe,
    a_window_resized_again_and_again_while_playing_keeps_playing_on_llvmpipe
);

/// The embedding example `name`, built beside this test by `cargo test
/// --all-targets` (`None` where it was not built).
fn embed_example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let example = profile.join("examples").join(name);
    example.is_file().then_some(example)
}

fn embedded_player_follows_its_programs_keys(backend: &str) {
    // examples/embed.rs: a program that opens its own window and surface,
    // runs its own event loop and timer, and has the player draw into its
    // surface texture. Paused on the first frame, then a seek, a step
    // forward and one back, each checked on screen.
    follows_its_programs_keys("embed", backend);
}

fn embedded_by_its_x11_handle_follows_its_programs_keys(backend: &str) {
    // examples/embed_x11.rs: a program that makes its own X11 window with
    // Xlib (as a toolkit does) and hands the player the window's raw
    // handles; the player makes the surface (or, on a software GL
    // adapter, copies to the X server). The same checks on screen.
    follows_its_programs_keys("embed_x11", backend);
}

/// Runs the embedding example `name` on a sequence and checks on screen,
/// and in the events it prints, that the paused first frame, a seek, a
/// step forward and two back show the right frames.
fn follows_its_programs_keys(name: &str, backend: &str) {
    let Some(program) = embed_example(name) else {
        eprintln!(
            "skipped the embedding example {name} on {backend}: it is not built (cargo test --all-targets builds it)"
        );
        return;
    };
    let Some(x) = Xvfb::start(&format!("{name} on {backend}")) else {
        return;
    };
    let dir = write_sequence(&format!("{name}-{backend}"));
    let player = Player::launch_program(&x, backend, &program, &[dir.to_str().unwrap()]);
    player.wait_for(colour(FIRST), "paused on the first frame");
    player.key(&["5"]);
    player.wait_for(colour(FIRST + 5), "after a seek to position 5");
    player.key(&["Right"]);
    player.wait_for(colour(FIRST + 6), "after a step forward");
    player.key(&["Left", "Left"]);
    player.wait_for(colour(FIRST + 4), "after two steps back");
    player.key(&["q"]);
    let out = player.finish_ok();
    let printed = String::from_utf8_lossy(&out.stdout);
    for event in [
        "FrameChanged(0)",
        "FrameChanged(5)",
        "FrameChanged(6)",
        "FrameChanged(4)",
    ] {
        assert!(
            printed.contains(event),
            "no {event} among the events: {printed}"
        );
    }
}

on_both_adapters!(
    embedded_player_follows_its_programs_keys:
    a_player_embedded_in_a_programs_own_window_follows_its_keys_on_lavapipe,
    a_player_embedded_in_a_programs_own_window_follows_its_keys_on_llvmpipe
);

on_both_adapters!(
    embedded_by_its_x11_handle_follows_its_programs_keys:
    a_player_given_a_programs_own_x11_window_by_its_raw_handle_follows_its_keys_on_lavapipe,
    a_player_given_a_programs_own_x11_window_by_its_raw_handle_follows_its_keys_on_llvmpipe
);
