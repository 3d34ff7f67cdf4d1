//! The player's window: a winit window whose events the render loop pumps
//! between frames (the loop keeps its own clock, so pacing stays the
//! player's), and the wgpu surface it presents to: or, for wgpu's GL
//! backend on a software rasteriser in an X11 window, the X server it
//! copies frames to without wgpu's blit (`x11.rs`).
//!
//! Open the [`Screen`] before the GPU: its display handle goes into
//! [`GpuOptions::display`](stagehand_gpu::GpuOptions::display), which the
//! GL backend needs to present at all.

pub mod keys;
mod native;
#[cfg(all(unix, not(target_os = "macos"), not(target_os = "android")))]
mod x11;

/// Where winit speaks no X11: frames always go through a surface.
#[cfg(not(all(unix, not(target_os = "macos"), not(target_os = "android"))))]
mod x11 {
    pub(crate) const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

    pub(crate) fn format_for(_: &stagehand_gpu::Gpu) -> wgpu::TextureFormat {
        FORMAT
    }

    /// Never made.
    pub(crate) enum X11Present {}

    impl X11Present {
        pub(crate) fn open(_: &winit::window::Window, _: wgpu::TextureFormat) -> Option<Self> {
            None
        }

        pub(crate) fn open_id(
            _: Option<&str>,
            _: u32,
            _: wgpu::TextureFormat,
        ) -> Result<Self, String> {
            Err("this platform has no X11".into())
        }

        pub(crate) fn format(&self) -> wgpu::TextureFormat {
            match *self {}
        }

        pub(crate) fn put_texture(
            &self,
            _: &stagehand_gpu::Gpu,
            _: &wgpu::Texture,
        ) -> Result<bool, String> {
            match *self {}
        }

        pub(crate) fn size(&self) -> Result<(u32, u32), String> {
            match *self {}
        }

        pub(crate) fn put(&self, _: &[u8], _: u32, _: u32) -> Result<(), String> {
            match *self {}
        }

        pub(crate) fn request(&self) -> &'static str {
            match *self {}
        }
    }
}

pub use native::NativeWindow;

use crate::PlayError;
use crate::render::overlay::Overlay;
use crate::transport::Command;
use serde::Serialize;
use stagehand_gpu::Gpu;
use std::sync::Arc;
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::platform::pump_events::{EventLoopExtPumpEvents, PumpStatus};
use winit::window::{Fullscreen, Window, WindowId};

/// How the surface presents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PresentChoice {
    /// Fifo where the display reports a refresh rate at least the frame
    /// rate (it paces presentation, the player's clock picks the frame);
    /// otherwise Mailbox, else Immediate, with the player's clock alone
    /// pacing; Fifo where the surface offers nothing else. On a software
    /// adapter, an X11 window takes no surface: frames are copied to the
    /// X server (`ShmPutImage`, or `PutImage` without shared memory), and
    /// the player's clock paces.
    #[default]
    Auto,
    /// Wait for the display's vertical blank.
    Fifo,
    /// Replace the frame waiting for the display; never blocks.
    Mailbox,
    /// Present at once.
    Immediate,
}

/// How to open the window.
#[derive(Clone, Debug)]
pub struct WindowOptions {
    /// The window's inner size in pixels, before any fullscreen.
    pub size: (u32, u32),
    /// Start fullscreen (borderless, on the current monitor).
    pub fullscreen: bool,
    /// The window's title.
    pub title: String,
    /// How the surface presents.
    pub present: PresentChoice,
}

/// What the surface was set up with, for the summary.
#[derive(Clone, Debug, Serialize)]
pub struct SurfaceInfo {
    /// The format frames are drawn in for the window.
    pub format: String,
    /// The present mode in use (`ShmPutImage` or `PutImage`: copied to
    /// the X server, in shared memory or through the socket).
    pub present_mode: String,
    /// Why that present mode.
    pub reason: String,
    /// The display's refresh rate in Hz, where it reports one.
    pub refresh_hz: Option<f64>,
}

/// The window's state, as its events leave it.
struct App {
    attributes: Option<winit::window::WindowAttributes>,
    window: Option<Arc<Window>>,
    error: Option<String>,
    commands: Vec<Command>,
    close: bool,
    resized: bool,
    occluded: bool,
    cursor: PhysicalPosition<f64>,
    dragging: bool,
    /// Positions on the timeline, for clicks.
    timeline_len: usize,
    /// The inner size in pixels.
    size: (u32, u32),
}

impl App {
    /// The state of a window not yet open, to be made with `attributes`.
    fn new(attributes: winit::window::WindowAttributes) -> Self {
        Self {
            attributes: Some(attributes),
            window: None,
            error: None,
            commands: Vec::new(),
            close: false,
            resized: false,
            occluded: false,
            cursor: PhysicalPosition::new(0.0, 0.0),
            dragging: false,
            timeline_len: 0,
            size: (0, 0),
        }
    }

    /// The inner size, as the window's events left it (never asked of
    /// the display: a window destroyed under us cannot answer).
    fn size(&self) -> (u32, u32) {
        self.size
    }

    /// A seek to the timeline position under the cursor; a drag keeps
    /// only the latest of the seeks it makes between two pumps.
    fn seek_at_cursor(&mut self) {
        let pos = Overlay::position_at(self.size(), self.cursor.x, self.timeline_len);
        if let Some(Command::Seek(last)) = self.commands.last_mut() {
            *last = pos;
        } else {
            self.commands.push(Command::Seek(pos));
        }
    }

    /// Whether the cursor is over the timeline strip.
    fn on_bar(&self) -> bool {
        let (x, y, w, h) = Overlay::bar_rect(self.size());
        let (cx, cy) = (self.cursor.x, self.cursor.y);
        cx >= f64::from(x) && cx < f64::from(x + w) && cy >= f64::from(y) && cy < f64::from(y + h)
    }

    /// A key pressed: the command it stands for, if any.
    fn key_pressed(&mut self, key: &winit::keyboard::Key) {
        if let Some(command) = keys::command(key) {
            self.commands.push(command);
        }
    }

    /// The cursor moved to `position`: a drag on the timeline seeks there.
    fn cursor_moved(&mut self, position: PhysicalPosition<f64>) {
        self.cursor = position;
        if self.dragging {
            self.seek_at_cursor();
        }
    }

    /// The left button pressed or let go: a press on the timeline seeks
    /// and starts a drag; letting go ends it.
    fn left_button(&mut self, state: ElementState) {
        match state {
            ElementState::Pressed if self.on_bar() => {
                self.dragging = true;
                self.seek_at_cursor();
            }
            ElementState::Released => self.dragging = false,
            ElementState::Pressed => {}
        }
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        let Some(attributes) = self.attributes.take() else {
            return;
        };
        match event_loop.create_window(attributes) {
            Ok(window) => {
                let size = window.inner_size();
                self.size = (size.width, size.height);
                self.window = Some(Arc::new(window));
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    fn window_event(&mut self, _: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested | WindowEvent::Destroyed => self.close = true,
            WindowEvent::Resized(size) => {
                self.size = (size.width, size.height);
                self.resized = true;
            }
            WindowEvent::Occluded(occluded) => self.occluded = occluded,
            // Synthetic presses stand for keys already down when the window
            // took the focus: they were pressed for something else.
            WindowEvent::KeyboardInput {
                event,
                is_synthetic: false,
                ..
            } if event.state == ElementState::Pressed => self.key_pressed(&event.logical_key),
            WindowEvent::CursorMoved { position, .. } => self.cursor_moved(position),
            WindowEvent::MouseInput {
                state,
                button: MouseButton::Left,
                ..
            } => self.left_button(state),
            _ => {}
        }
    }
}

/// The surface and how it is configured.
struct Surface {
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    /// Whether the last configuration took: wgpu panics on asking an
    /// unconfigured surface for a texture.
    configured: bool,
}

impl Surface {
    /// `surface` with `config`, configured now where the window (of
    /// `size`) has an area.
    fn configured(
        gpu: &Gpu,
        surface: wgpu::Surface<'static>,
        config: wgpu::SurfaceConfiguration,
        (w, h): (u32, u32),
    ) -> Result<Self, PlayError> {
        let configured = w > 0 && h > 0;
        if configured {
            gpu.queue()
                .configure_surface(&surface, &config)
                .map_err(|e| PlayError::NoDisplay(format!("cannot present to the window: {e}")))?;
        }
        Ok(Self {
            surface,
            config,
            configured,
        })
    }
}

/// How frames reach the window: a wgpu surface, or (wgpu's GL backend on
/// a software rasteriser, an X11 window) by copying its pixels to the X
/// server ([`x11`]).
enum Present {
    Surface(Surface),
    Put(Box<x11::X11Present>),
}

/// A window to play into.
pub struct Screen {
    event_loop: EventLoop<()>,
    app: App,
    /// `None` before [`Screen::attach`].
    present: Option<Present>,
    fullscreen: bool,
}

/// How long opening waits for the window to appear.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// Pumps `event_loop` until `app`'s window is there (or why it is not, in
/// [`OPEN_TIMEOUT`] at most).
fn await_window(event_loop: &mut EventLoop<()>, app: &mut App) -> Result<(), PlayError> {
    let deadline = Instant::now() + OPEN_TIMEOUT;
    while app.window.is_none() {
        if let Some(e) = app.error.take() {
            return Err(PlayError::NoDisplay(e.to_string()));
        }
        if Instant::now() > deadline {
            return Err(PlayError::NoDisplay(format!(
                "the window did not appear within {} s",
                OPEN_TIMEOUT.as_secs()
            )));
        }
        if let PumpStatus::Exit(code) =
            event_loop.pump_app_events(Some(Duration::from_millis(10)), app)
        {
            return Err(PlayError::NoDisplay(format!(
                "the display's event loop ended ({code})"
            )));
        }
    }
    Ok(())
}

/// The window `options` ask for: its title, inner size, and whether it
/// is fullscreen.
fn window_attributes(options: &WindowOptions) -> winit::window::WindowAttributes {
    let (w, h) = options.size;
    let attributes = Window::default_attributes()
        .with_title(options.title.clone())
        .with_inner_size(PhysicalSize::new(w.max(1), h.max(1)));
    if options.fullscreen {
        attributes.with_fullscreen(Some(Fullscreen::Borderless(None)))
    } else {
        attributes
    }
}

/// The refresh rate of the monitor `window` is on, where it says one.
fn refresh_hz(window: &Window) -> Option<f64> {
    window
        .current_monitor()
        .and_then(|m| m.refresh_rate_millihertz())
        .map(|mhz| f64::from(mhz) / 1000.0)
        .filter(|&hz| hz > 0.0)
}

/// The configuration of a window's surface: drawn into at `size`, in
/// `format`, presented in `mode`. A surface offering only an sRGB format is
/// configured with it and drawn through a plain view: the player writes
/// display-encoded values and must not have them encoded twice.
fn surface_config(
    caps: &wgpu::SurfaceCapabilities,
    format: wgpu::TextureFormat,
    mode: wgpu::PresentMode,
    (w, h): (u32, u32),
) -> wgpu::SurfaceConfiguration {
    wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format,
        width: w.max(1),
        height: h.max(1),
        present_mode: mode,
        desired_maximum_frame_latency: 2,
        alpha_mode: caps.alpha_modes.first().copied().unwrap_or_default(),
        color_space: wgpu::SurfaceColorSpace::Auto,
        view_formats: if format.is_srgb() {
            vec![format.remove_srgb_suffix()]
        } else {
            Vec::new()
        },
    }
}

impl Screen {
    /// Opens a window. Fails at once, with [`PlayError::NoDisplay`], where
    /// there is no display to open it on.
    pub fn open(options: &WindowOptions) -> Result<Self, PlayError> {
        check_display()?;
        let mut builder = EventLoop::builder();
        #[cfg(all(unix, not(target_os = "macos"), not(target_os = "android")))]
        {
            // The player's loop may run on any thread (tests run it on
            // theirs); events are pumped from that thread alone.
            use winit::platform::x11::EventLoopBuilderExtX11;
            builder.with_any_thread(true);
        }
        let mut event_loop = builder
            .build()
            .map_err(|e| PlayError::NoDisplay(format!("the display does not answer: {e}")))?;
        let mut app = App::new(window_attributes(options));
        await_window(&mut event_loop, &mut app)?;
        Ok(Self {
            event_loop,
            app,
            present: None,
            fullscreen: options.fullscreen,
        })
    }

    /// The display the window is on, for
    /// [`GpuOptions::display`](stagehand_gpu::GpuOptions::display).
    pub fn display_handle(&self) -> Arc<dyn wgpu::wgt::WgpuHasDisplayHandle> {
        Arc::new(self.event_loop.owned_display_handle())
    }

    /// Creates the surface on `gpu` and configures it for frames at `fps`.
    pub(crate) fn attach(
        &mut self,
        gpu: &Gpu,
        present: PresentChoice,
        fps: f64,
    ) -> Result<SurfaceInfo, PlayError> {
        let window = self.window()?;
        if let Some(info) = self.attach_put(gpu, present, &window) {
            return Ok(info);
        }
        let surface = gpu
            .instance()
            .create_surface(Arc::clone(&window))
            .map_err(|e| PlayError::NoDisplay(format!("cannot present to the window: {e}")))?;
        let caps = surface.get_capabilities(gpu.adapter());
        let format = surface_format(&caps)?;
        let refresh_hz = refresh_hz(&window);
        let (mode, reason) = choose_present_mode(&caps.present_modes, present, refresh_hz, fps);
        let size = self.app.size();
        let config = surface_config(&caps, format, mode, size);
        let surface = Surface::configured(gpu, surface, config, size)?;
        self.present = Some(Present::Surface(surface));
        Ok(SurfaceInfo {
            format: format!("{:?}", format.remove_srgb_suffix()),
            present_mode: format!("{mode:?}"),
            reason: reason.to_owned(),
            refresh_hz,
        })
    }

    /// Presents by copying pixels to the X server where a surface would
    /// cost more CPU on a software adapter (see `x11.rs`): a software
    /// adapter on either backend, an X11 window the server takes 32-bit
    /// blue, green, red pixels for, and no present mode named (a named
    /// mode asks for a surface that presents with it). `None`: present
    /// through a surface.
    fn attach_put(
        &mut self,
        gpu: &Gpu,
        present: PresentChoice,
        window: &Window,
    ) -> Option<SurfaceInfo> {
        if !native::software_adapter(gpu) || present != PresentChoice::Auto {
            return None;
        }
        let put = x11::X11Present::open(window, x11::format_for(gpu))?;
        let present_mode = put.request().into();
        let format = put.format();
        self.present = Some(Present::Put(Box::new(put)));
        Some(SurfaceInfo {
            format: format!("{format:?}"),
            present_mode,
            reason: match format {
                wgpu::TextureFormat::Bgra8Unorm => {
                    "software adapter: drawn into a target of the player's own, which the \
                     device copies straight into memory shared with the X server where it \
                     has that; the player's clock paces"
                }
                _ => {
                    "software adapter: drawn into a target of the player's own and copied \
                     to the X server, in memory shared with it where it has that; \
                     the player's clock paces"
                }
            }
            .into(),
            refresh_hz: None,
        })
    }

    /// The window; an error once it is gone.
    fn window(&self) -> Result<Arc<Window>, PlayError> {
        self.app
            .window
            .clone()
            .ok_or_else(|| PlayError::NoDisplay("the window is gone".into()))
    }

    /// The format the player draws into: the surface's, without sRGB (or
    /// the one the X server takes as it is).
    pub(crate) fn format(&self) -> wgpu::TextureFormat {
        match &self.present {
            Some(Present::Surface(s)) => s.config.format.remove_srgb_suffix(),
            Some(Present::Put(put)) => put.format(),
            None => wgpu::TextureFormat::Bgra8Unorm,
        }
    }

    /// The surface, where frames are presented through one.
    fn surface(&self) -> Option<&Surface> {
        match self.present.as_ref()? {
            Present::Surface(s) => Some(s),
            Present::Put(_) => None,
        }
    }

    /// Whether frames reach the window by [`Screen::put`], not through a
    /// surface texture ([`Screen::acquire`]).
    pub(crate) fn puts(&self) -> bool {
        self.present.is_some() && self.surface().is_none()
    }

    /// Whether there is anything to draw into: not while the window is
    /// minimised or occluded.
    pub(crate) fn drawable(&self) -> bool {
        let (w, h) = self.app.size();
        !self.app.occluded && w > 0 && h > 0
    }

    /// Copies a frame (`height` rows of `pixels` in [`Screen::format`],
    /// `pitch` bytes a row, the window's width at least) into the window.
    /// Whether it was shown: not while there is nothing to draw into
    /// (minimised, occluded), nor when the server refused it.
    pub(crate) fn put(&mut self, pixels: &[u8], pitch: u32, height: u32) -> bool {
        if !self.drawable() {
            return false;
        }
        // Drawn at the window's size: nothing to reconfigure.
        self.app.resized = false;
        match &self.present {
            Some(Present::Put(put)) => put.put(pixels, pitch, height).is_ok(),
            _ => false,
        }
    }

    /// Puts `texture` (drawn at the window's size in
    /// [`Screen::format`]) into the window by the device's own copy into
    /// memory shared with the X server, where it can go that way;
    /// `None` where it cannot (the caller reads it back and
    /// [puts](Screen::put) the rows). `Some(shown)` as [`Screen::put`].
    pub(crate) fn put_texture(&mut self, gpu: &Gpu, texture: &wgpu::Texture) -> Option<bool> {
        if !self.drawable() {
            return Some(false);
        }
        let Some(Present::Put(put)) = &self.present else {
            return None;
        };
        match put.put_texture(gpu, texture) {
            Ok(false) => None,
            Ok(true) => {
                self.app.resized = false;
                Some(true)
            }
            Err(_) => Some(false),
        }
    }

    /// The window's inner size in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.app.size()
    }

    /// Handles the window's events for up to `timeout` (returning early
    /// once there are commands or the window is closing).
    pub(crate) fn pump(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if let PumpStatus::Exit(_) = self.event_loop.pump_app_events(Some(left), &mut self.app)
            {
                self.app.close = true;
            }
            if self.app.close || !self.app.commands.is_empty() || Instant::now() >= deadline {
                return;
            }
        }
    }

    /// The commands asked for since the last call.
    pub(crate) fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.app.commands)
    }

    /// Whether the window needs drawing again whatever else changed: it
    /// was resized, or its surface no longer matches it.
    pub(crate) fn stale(&self) -> bool {
        self.app.resized
            || self
                .surface()
                .is_some_and(|s| (s.config.width, s.config.height) != self.app.size())
    }

    /// Whether commands wait to be taken.
    pub(crate) fn has_commands(&self) -> bool {
        !self.app.commands.is_empty()
    }

    /// Whether the window was closed.
    pub(crate) fn closed(&self) -> bool {
        self.app.close
    }

    /// Sets how many positions the timeline has, for clicks on it.
    pub(crate) fn set_timeline_len(&mut self, len: usize) {
        self.app.timeline_len = len;
    }

    /// Fullscreen on or off.
    /// Asks the window system for an inner size of `size` pixels (it
    /// answers with a resize event, perhaps of another size).
    pub(crate) fn request_size(&mut self, size: (u32, u32)) {
        if let Some(window) = &self.app.window {
            let _ = window.request_inner_size(PhysicalSize::new(size.0.max(1), size.1.max(1)));
        }
    }

    pub(crate) fn toggle_fullscreen(&mut self) {
        self.fullscreen = !self.fullscreen;
        if let Some(window) = &self.app.window {
            window.set_fullscreen(self.fullscreen.then_some(Fullscreen::Borderless(None)));
        }
    }

    /// The texture to draw the next frame into, reconfiguring the surface
    /// after a resize or when it is outdated, suboptimal or lost. `None`
    /// when there is nothing to draw into now (minimised, occluded, a
    /// timeout): the caller skips the frame and keeps its clock.
    pub(crate) fn acquire(&mut self, gpu: &Gpu) -> Option<wgpu::SurfaceTexture> {
        if !self.drawable() {
            return None;
        }
        if self.stale() {
            self.app.resized = false;
            self.reconfigure(gpu);
        }
        for _ in 0..2 {
            match self.current_texture(gpu)? {
                wgpu::CurrentSurfaceTexture::Success(t) => return Some(t),
                wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                    // Drawn this time; configured afresh before the next.
                    self.app.resized = true;
                    return Some(t);
                }
                wgpu::CurrentSurfaceTexture::Outdated => self.reconfigure(gpu),
                wgpu::CurrentSurfaceTexture::Lost => self.recreate(gpu),
                wgpu::CurrentSurfaceTexture::Timeout
                | wgpu::CurrentSurfaceTexture::Occluded
                | wgpu::CurrentSurfaceTexture::Validation => return None,
            }
        }
        None
    }

    /// The surface's current texture, as it gives it: `None` where there
    /// is no surface, its last configuration failed, or the window is gone.
    fn current_texture(&mut self, gpu: &Gpu) -> Option<wgpu::CurrentSurfaceTexture> {
        let surface = self.surface()?;
        if !surface.configured {
            // Its last configuration failed (the window changed size
            // again meanwhile): tried again before the next frame.
            self.app.resized = true;
            return None;
        }
        // A window destroyed under us fails validation: skip the frame
        // (its close event ends playback) rather than panic.
        gpu.device()
            .catch(|| surface.surface.get_current_texture())
            .ok()
    }

    /// Configures the surface afresh before the next frame.
    pub(crate) fn mark_stale(&mut self) {
        self.app.resized = true;
    }

    /// Configures the surface at the window's size, where it has an area;
    /// a configuration that fails is tried again before the next frame.
    fn reconfigure(&mut self, gpu: &Gpu) {
        let (w, h) = self.app.size();
        if let Some(Present::Surface(s)) = &mut self.present
            && w > 0
            && h > 0
        {
            s.config.width = w;
            s.config.height = h;
            // No submission of the queue runs meanwhile (see
            // `Queue::configure_surface`).
            s.configured = gpu.queue().configure_surface(&s.surface, &s.config).is_ok();
            if !s.configured {
                // Tried again before the next frame.
                self.app.resized = true;
            }
        }
    }

    /// Makes the surface afresh for the window (a lost one), and
    /// configures it.
    fn recreate(&mut self, gpu: &Gpu) {
        let Ok(window) = self.window() else {
            return;
        };
        if let (Some(Present::Surface(s)), Ok(surface)) =
            (&mut self.present, gpu.instance().create_surface(window))
        {
            s.surface = surface;
            s.configured = false;
        }
        self.reconfigure(gpu);
    }
}

/// Fails at once where no display is named: winit would otherwise try,
/// and take its time, to connect to nothing.
fn check_display() -> Result<(), PlayError> {
    #[cfg(all(unix, not(target_os = "macos"), not(target_os = "android")))]
    {
        let set = |name| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
            return Err(PlayError::NoDisplay(
                "no display: neither DISPLAY nor WAYLAND_DISPLAY is set (play headless, or run under Xvfb)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// An 8-bit RGBA format the player can draw into: plain ones first.
fn choose_format(offered: &[wgpu::TextureFormat]) -> Option<wgpu::TextureFormat> {
    use wgpu::TextureFormat as F;
    let plain = [F::Bgra8Unorm, F::Rgba8Unorm];
    let srgb = [F::Bgra8UnormSrgb, F::Rgba8UnormSrgb];
    plain
        .iter()
        .chain(&srgb)
        .find(|f| offered.contains(f))
        .copied()
}

/// The 8-bit RGBA format a surface of `caps` is configured with; an error
/// where it offers none.
fn surface_format(caps: &wgpu::SurfaceCapabilities) -> Result<wgpu::TextureFormat, PlayError> {
    choose_format(&caps.formats).ok_or_else(|| {
        PlayError::NoDisplay(format!(
            "the window offers no 8-bit RGBA format this player draws into (it offers {:?})",
            caps.formats
        ))
    })
}

/// The present mode for `choice` among those `offered`, and why.
fn choose_present_mode(
    offered: &[wgpu::PresentMode],
    choice: PresentChoice,
    refresh_hz: Option<f64>,
    fps: f64,
) -> (wgpu::PresentMode, &'static str) {
    use wgpu::PresentMode as M;
    let has = |m| offered.contains(&m);
    match choice {
        PresentChoice::Fifo => (M::Fifo, "asked for"),
        PresentChoice::Mailbox if has(M::Mailbox) => (M::Mailbox, "asked for"),
        PresentChoice::Immediate if has(M::Immediate) => (M::Immediate, "asked for"),
        PresentChoice::Mailbox | PresentChoice::Immediate => {
            (M::Fifo, "the mode asked for is not offered")
        }
        PresentChoice::Auto => auto_present_mode(offered, refresh_hz, fps),
    }
}

/// The present mode chosen among those `offered` for frames at `fps` on
/// a display refreshing at `refresh_hz`, and why: the display paces where
/// it refreshes fast enough, else the player's clock.
fn auto_present_mode(
    offered: &[wgpu::PresentMode],
    refresh_hz: Option<f64>,
    fps: f64,
) -> (wgpu::PresentMode, &'static str) {
    use wgpu::PresentMode as M;
    let has = |m| offered.contains(&m);
    match refresh_hz {
        Some(hz) if hz + 0.5 >= fps => (
            M::Fifo,
            "the display paces presentation; the player's clock picks each frame",
        ),
        _ if has(M::Mailbox) => (
            M::Mailbox,
            "no display refresh to pace by: the player's clock paces, mailbox never blocks",
        ),
        _ if has(M::Immediate) => (
            M::Immediate,
            "no display refresh to pace by: the player's clock paces",
        ),
        _ => (M::Fifo, "the only mode offered; the player's clock paces"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::PresentMode as M;
    use wgpu::TextureFormat as F;

    #[test]
    fn plain_formats_are_preferred_to_srgb() {
        assert_eq!(
            choose_format(&[F::Bgra8UnormSrgb, F::Bgra8Unorm]),
            Some(F::Bgra8Unorm)
        );
        assert_eq!(
            choose_format(&[F::Rgba16Float, F::Rgba8UnormSrgb]),
            Some(F::Rgba8UnormSrgb)
        );
        assert_eq!(choose_format(&[F::Rgba16Float]), None);
    }

    #[test]
    fn auto_paces_with_fifo_only_where_the_display_refreshes_fast_enough() {
        let all = [M::Fifo, M::Mailbox, M::Immediate];
        let auto =
            |offered: &[M], hz| choose_present_mode(offered, PresentChoice::Auto, hz, 24.0).0;
        assert_eq!(auto(&all, Some(60.0)), M::Fifo);
        assert_eq!(auto(&all, None), M::Mailbox);
        assert_eq!(
            auto(&all, Some(12.0)),
            M::Mailbox,
            "too slow to pace 24 fps"
        );
        assert_eq!(auto(&[M::Fifo, M::Immediate], None), M::Immediate);
        assert_eq!(auto(&[M::Fifo], None), M::Fifo);
        let mailbox =
            |offered: &[M]| choose_present_mode(offered, PresentChoice::Mailbox, None, 24.0).0;
        assert_eq!(mailbox(&all), M::Mailbox);
        assert_eq!(
            mailbox(&[M::Fifo]),
            M::Fifo,
            "not offered: the one always there"
        );
    }

    #[test]
    fn no_display_is_a_clear_error_at_once() {
        // Only where the variables are unset; a desktop session has them.
        if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
            eprintln!("skipped: this test needs no DISPLAY or WAYLAND_DISPLAY");
            return;
        }
        let started = Instant::now();
        let err = Screen::open(&WindowOptions {
            size: (64, 64),
            fullscreen: false,
            title: "test".into(),
            present: PresentChoice::Auto,
        })
        .err()
        .expect("no display, no window");
        assert!(matches!(err, PlayError::NoDisplay(_)), "{err}");
        assert!(err.to_string().contains("DISPLAY"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
