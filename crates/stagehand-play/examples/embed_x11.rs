//! A program that makes its own X11 window with Xlib, as a toolkit does
//! (Qt's widgets are such windows, `winId()` their ids), and shows a
//! stagehand `Player` in it through the window's raw handles:
//! `embed_x11 [SOURCE]`. The player makes the surface itself
//! (`NativeWindow::from_raw`); the program runs its own event loop and a
//! 1/48 s timer, and asks the player to present the frame due each tick.
//!
//! Keys as `embed`: Space play/pause, Right/Left step, Home the first
//! frame, 0-9 seek to that position, L loop, Q or Esc quit. Events print
//! as they come.

#![allow(unsafe_code)] // Xlib is a C library; each call says why it is sound

use stagehand_gpu::upload::UploadEngine;
use stagehand_gpu::{Gpu, GpuOptions};
use stagehand_play::{Event, NativeWindow, PlayOptions, Player, engine_config, wanted_features};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use wgpu::rwh::{RawDisplayHandle, RawWindowHandle, XlibDisplayHandle, XlibWindowHandle};
use x11_dl::xlib;

/// The program's own timer: twice a 24 fps frame's rate.
const TICK: Duration = Duration::from_micros(20_833);

/// The window's size when it opens.
const SIZE: (u32, u32) = (640, 360);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embed_x11: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The program's X11 window, made and shown with Xlib.
struct XWindow {
    xlib: xlib::Xlib,
    display: *mut xlib::Display,
    screen: i32,
    window: xlib::Window,
    size: (u32, u32),
}

impl XWindow {
    /// Opens `DISPLAY` and maps a window of `size` titled `title`, which
    /// reports key presses and size changes.
    fn open(title: &str, size: (u32, u32)) -> Result<Self, String> {
        let xlib = xlib::Xlib::open().map_err(|e| format!("no Xlib: {e}"))?;
        // SAFETY: XInitThreads comes first, before any other Xlib call:
        // the driver presents through this display from its own threads.
        // A null name asks Xlib for the environment's DISPLAY.
        let display = unsafe {
            (xlib.XInitThreads)();
            (xlib.XOpenDisplay)(std::ptr::null())
        };
        if display.is_null() {
            return Err("cannot open the X display (is DISPLAY set?)".into());
        }
        // SAFETY: `display` is the open display; every call below is on
        // it and on the window made on its default screen's root.
        let (screen, window) = unsafe {
            let screen = (xlib.XDefaultScreen)(display);
            let root = (xlib.XRootWindow)(display, screen);
            let black = (xlib.XBlackPixel)(display, screen);
            let window =
                (xlib.XCreateSimpleWindow)(display, root, 0, 0, size.0, size.1, 0, black, black);
            let name = std::ffi::CString::new(title).map_err(|e| e.to_string())?;
            (xlib.XStoreName)(display, window, name.as_ptr());
            (xlib.XSelectInput)(
                display,
                window,
                xlib::KeyPressMask | xlib::StructureNotifyMask,
            );
            (xlib.XMapWindow)(display, window);
            (xlib.XSync)(display, xlib::False);
            (screen, window)
        };
        Ok(Self {
            xlib,
            display,
            screen,
            window,
            size,
        })
    }

    /// The display and window as `raw-window-handle` gives them.
    fn handles(&self) -> Result<(RawDisplayHandle, RawWindowHandle), String> {
        let display =
            XlibDisplayHandle::new(std::ptr::NonNull::new(self.display.cast()), self.screen);
        Ok((
            RawDisplayHandle::Xlib(display),
            RawWindowHandle::Xlib(XlibWindowHandle::new(self.window)),
        ))
    }

    /// The keys pressed since the last call, as key symbols; the size is
    /// kept up to date on the way.
    fn keys(&mut self) -> Vec<xlib::KeySym> {
        let mut keys = Vec::new();
        // SAFETY: the display is open; XNextEvent fills the whole event,
        // and each union field is read only for its own event type.
        unsafe {
            while (self.xlib.XPending)(self.display) > 0 {
                let mut event: xlib::XEvent = std::mem::zeroed();
                (self.xlib.XNextEvent)(self.display, &mut event);
                match event.get_type() {
                    xlib::KeyPress => {
                        keys.push((self.xlib.XLookupKeysym)(&mut event.key, 0));
                    }
                    xlib::ConfigureNotify => {
                        let c = event.configure;
                        self.size = (c.width.max(0) as u32, c.height.max(0) as u32);
                    }
                    _ => {}
                }
            }
        }
        keys
    }
}

impl Drop for XWindow {
    fn drop(&mut self) {
        // SAFETY: the window and display are this program's and nothing
        // uses them after this.
        unsafe {
            (self.xlib.XDestroyWindow)(self.display, self.window);
            (self.xlib.XCloseDisplay)(self.display);
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut window = XWindow::open("stagehand play: embedded by its X11 handle", SIZE)?;
    let (display, handle) = window.handles()?;
    let gpu = Arc::new(Gpu::open(&GpuOptions {
        wanted_features: wanted_features(),
        ..GpuOptions::default()
    })?);
    let engine = Arc::new(UploadEngine::new(Arc::clone(&gpu), engine_config(1))?);
    let player = Player::open(
        &gpu,
        &engine,
        PlayOptions {
            source: std::env::args_os().nth(1).map(Into::into),
            size: SIZE,
            output_size: SIZE,
            start_paused: true,
            ..PlayOptions::default()
        },
    )?;
    // SAFETY: the display and window are the program's own, open until
    // `window` drops, after `shown` (declared after it).
    let mut shown = unsafe { NativeWindow::from_raw(&gpu, display, handle, window.size) }?;
    println!(
        "presenting through {}",
        if shown.presents_through_a_surface() {
            "a surface made from the window's handles"
        } else {
            "copies to the X server"
        }
    );
    loop {
        for key in window.keys() {
            if !command(&player, key) {
                drop(shown);
                player.close()?;
                return Ok(());
            }
        }
        for event in player.events().try_iter() {
            match event {
                Event::Error(e) => return Err(e.into()),
                other => println!("{other:?}"),
            }
        }
        shown.present(&player, Some(window.size))?;
        std::thread::sleep(TICK);
    }
}

/// Sends the player the command for `key`; false to quit.
fn command(player: &Player, key: xlib::KeySym) -> bool {
    use x11_dl::keysym;
    let key = key as u32;
    match key {
        keysym::XK_space if player.is_playing() => player.pause(),
        keysym::XK_space => player.play(),
        keysym::XK_Right => player.step(1),
        keysym::XK_Left => player.step(-1),
        keysym::XK_Home => player.seek(0),
        keysym::XK_l | keysym::XK_L => player.set_looped(!player.status().looped),
        keysym::XK_q | keysym::XK_Q | keysym::XK_Escape => return false,
        keysym::XK_0..=keysym::XK_9 => player.seek((key - keysym::XK_0) as usize),
        _ => {}
    }
    true
}
