//! A program with a window of its own that shows a stagehand `Player` in
//! it: `embed [SOURCE]`. The program opens the window, makes the surface
//! and runs the event loop and the timer; the player keeps the clock and
//! draws the frame due into the program's surface texture whenever the
//! program asks, each tick of the program's own 1/48 s timer.
//!
//! Keys: Space play/pause, Right/Left step, Home the first frame, 0-9
//! seek to that position, L loop, Q or Esc quit. Events print as they
//! come.

use stagehand_gpu::upload::UploadEngine;
use stagehand_gpu::{Gpu, GpuOptions};
use stagehand_play::{Event, PlayOptions, Player, engine_config, wanted_features};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

/// The program's own timer: twice a 24 fps frame's rate.
const TICK: Duration = Duration::from_micros(20_833);

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let event_loop = EventLoop::new()?;
    // The device is opened on the program's display: the GL backend
    // presents only through it.
    let gpu = Arc::new(Gpu::open(&GpuOptions {
        wanted_features: wanted_features(),
        display: Some(Arc::new(event_loop.owned_display_handle())),
        ..GpuOptions::default()
    })?);
    let engine = Arc::new(UploadEngine::new(Arc::clone(&gpu), engine_config(1))?);
    let options = PlayOptions {
        source: std::env::args_os().nth(1).map(Into::into),
        size: (640, 360),
        output_size: (640, 360),
        start_paused: true,
        ..PlayOptions::default()
    };
    let player = Player::open(&gpu, &engine, options)?;
    let mut app = App {
        gpu,
        player,
        window: None,
        error: None,
    };
    event_loop.run_app(&mut app)?;
    match app.error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The program's window and what it draws with.
struct Shown {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
}

struct App {
    gpu: Arc<Gpu>,
    player: Player,
    window: Option<Shown>,
    error: Option<String>,
}

impl App {
    fn open_window(&mut self, event_loop: &ActiveEventLoop) -> Result<(), String> {
        let attributes = Window::default_attributes()
            .with_title("stagehand play: embedded")
            .with_inner_size(winit::dpi::PhysicalSize::new(640, 360));
        let window = Arc::new(
            event_loop
                .create_window(attributes)
                .map_err(|e| e.to_string())?,
        );
        let surface = self
            .gpu
            .instance()
            .create_surface(Arc::clone(&window))
            .map_err(|e| e.to_string())?;
        let caps = surface.get_capabilities(self.gpu.adapter());
        let format = [
            wgpu::TextureFormat::Bgra8Unorm,
            wgpu::TextureFormat::Rgba8Unorm,
        ]
        .into_iter()
        .find(|f| caps.formats.contains(f))
        .ok_or("the surface takes no 8-bit RGBA format")?;
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::Fifo,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps.alpha_modes[0],
            color_space: wgpu::SurfaceColorSpace::Auto,
            view_formats: Vec::new(),
        };
        self.gpu.queue().configure_surface(&surface, &config)?;
        self.window = Some(Shown {
            window,
            surface,
            config,
        });
        Ok(())
    }

    /// Draws the frame due into the window, letterboxed.
    fn draw(&mut self) -> Result<(), String> {
        let Some(shown) = &mut self.window else {
            return Ok(());
        };
        let size = shown.window.inner_size();
        if (size.width, size.height) != (shown.config.width, shown.config.height)
            && size.width > 0
            && size.height > 0
        {
            shown.config.width = size.width;
            shown.config.height = size.height;
            self.gpu
                .queue()
                .configure_surface(&shown.surface, &shown.config)?;
        }
        let frame = match shown.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            // Not drawable now (resized, hidden): the next tick tries again.
            _ => return Ok(()),
        };
        let view = frame.texture.create_view(&Default::default());
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default())
            .map_err(|e| e.to_string())?;
        clear(&mut encoder, &view);
        let (w, h) = (frame.texture.width() as f32, frame.texture.height() as f32);
        let scale = (w / 640.0).min(h / 360.0);
        let (pw, ph) = (640.0 * scale, 360.0 * scale);
        let viewport = ((w - pw) / 2.0, (h - ph) / 2.0, pw, ph);
        self.player
            .draw(&mut encoder, &view, shown.config.format, viewport)
            .map_err(|e| e.to_string())?;
        self.gpu
            .queue()
            .submit([encoder.finish().map_err(|e| e.to_string())?])
            .map_err(|e| e.to_string())?;
        self.gpu.queue().present(frame);
        Ok(())
    }

    fn key(&mut self, key: &Key, event_loop: &ActiveEventLoop) {
        let player = &self.player;
        match key {
            Key::Named(NamedKey::Space) if player.is_playing() => player.pause(),
            Key::Named(NamedKey::Space) => player.play(),
            Key::Named(NamedKey::ArrowRight) => player.step(1),
            Key::Named(NamedKey::ArrowLeft) => player.step(-1),
            Key::Named(NamedKey::Home) => player.seek(0),
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Character(c) => match c.as_str() {
                "q" | "Q" => event_loop.exit(),
                "l" | "L" => player.set_looped(!player.status().looped),
                digit => {
                    if let Ok(n) = digit.parse::<usize>() {
                        player.seek(n);
                    }
                }
            },
            _ => {}
        }
    }
}

/// Clears `view` to black: the letterbox's bars.
fn clear(encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView) {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("embed clear"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                store: wgpu::StoreOp::Store,
            },
        })],
        ..Default::default()
    });
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_none()
            && let Err(e) = self.open_window(event_loop)
        {
            self.error = Some(e);
            event_loop.exit();
        }
        event_loop.set_control_flow(ControlFlow::WaitUntil(Instant::now() + TICK));
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::KeyboardInput {
                event,
                is_synthetic: false,
                ..
            } if event.state == ElementState::Pressed => self.key(&event.logical_key, event_loop),
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.draw() {
                    self.error = Some(e);
                    event_loop.exit();
                }
            }
            _ => {}
        }
    }

    /// The program's timer: each tick, the events so far print and the
    /// window draws the frame due.
    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        for event in self.player.events().try_iter() {
            match event {
                Event::Error(e) => {
                    self.error = Some(e);
                    event_loop.exit();
                }
                other => println!("{other:?}"),
            }
        }
        if let Some(shown) = &self.window {
            shown.window.request_redraw();
        }
        event_loop.set_control_flow(ControlFlow::WaitUntil(Instant::now() + TICK));
    }
}
