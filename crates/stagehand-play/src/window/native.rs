//! [`NativeWindow`]: a [`Player`] shown in a window another program made
//! (a toolkit's widget): through a wgpu surface the player makes from the
//! window's raw handles (`raw-window-handle` 0.6: X11, Wayland, Win32,
//! AppKit), or, on X11, through the path the player's own window takes on
//! a software adapter: the picture drawn at the window's size, read back,
//! and put to the X server.

use super::x11::{self, X11Present};
use super::{PresentChoice, choose_format, choose_present_mode, surface_config};
use crate::player::draw_letterboxed;
use crate::{PictureReader, PlayError, Player};
use stagehand_gpu::Gpu;
use std::sync::Arc;
use wgpu::rwh::{RawDisplayHandle, RawWindowHandle};

/// A window of another program's that a player presents into.
pub struct NativeWindow {
    target: Target,
}

/// How frames reach the window.
enum Target {
    /// Drawn into a texture of the reader's, read back, put to the X
    /// server.
    Put(Box<(X11Present, PictureReader)>),
    /// Drawn into the surface's texture and presented.
    Surface(RawSurface),
}

/// A surface made from a window's raw handles, and how it is set up.
struct RawSurface {
    gpu: Arc<Gpu>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    /// Whether the surface is set up with `config`.
    configured: bool,
}

impl std::fmt::Debug for NativeWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeWindow")
            .field("surface", &self.presents_through_a_surface())
            .finish_non_exhaustive()
    }
}

impl NativeWindow {
    /// Opens the X11 window `window` (a Qt widget's `winId()`, say) on
    /// `display` (`None`: the environment's `DISPLAY`). A window that
    /// does not exist, or whose pixels the server would need converted,
    /// is [`PlayError::NoDisplay`] with the reason.
    pub fn open_x11(gpu: &Arc<Gpu>, display: Option<&str>, window: u32) -> Result<Self, PlayError> {
        let x11 = X11Present::open_id(display, window, x11::format_for(gpu))
            .map_err(PlayError::NoDisplay)?;
        let reader = PictureReader::new(gpu, x11.format())?;
        Ok(Self {
            target: Target::Put(Box::new((x11, reader))),
        })
    }

    /// A window given by its raw handles (any `raw-window-handle` 0.6
    /// window: a Qt widget's `winId()` with its display, a winit or SDL
    /// window, an `HWND`, an `NSView`), `size` pixels now. The player
    /// presents through a wgpu surface made on `gpu` from the handles;
    /// on a software adapter an X11 window is drawn into by copying
    /// pixels to the X server (on the environment's `DISPLAY`), as the
    /// player's own window is there. A handle no backend of `gpu` can
    /// present to is [`PlayError::NoDisplay`] with the reason.
    ///
    /// # Safety
    ///
    /// `display` and `window` must be a valid display and a window on it,
    /// and stay so until the `NativeWindow` is dropped; it presents from
    /// the thread the window's toolkit allows (AppKit's main thread, a
    /// `Display*` opened after `XInitThreads` where Xlib is shared).
    #[allow(unsafe_code)] // a surface from raw handles; the caller's promise above
    pub unsafe fn from_raw(
        gpu: &Arc<Gpu>,
        display: RawDisplayHandle,
        window: RawWindowHandle,
        size: (u32, u32),
    ) -> Result<Self, PlayError> {
        if software_adapter(gpu)
            && let Some(id) = x11::window_id(window)
            && let Ok(put) = Self::open_x11(gpu, None, id)
        {
            return Ok(put);
        }
        let target = wgpu::SurfaceTargetUnsafe::RawHandle {
            raw_display_handle: Some(display),
            raw_window_handle: window,
        };
        // SAFETY: the caller promises the handles are valid and outlive
        // this window, which owns the surface.
        let surface = unsafe { gpu.instance().create_surface_unsafe(target) }
            .map_err(|e| PlayError::NoDisplay(format!("cannot present to the window: {e}")))?;
        let caps = surface.get_capabilities(gpu.adapter());
        let format = choose_format(&caps.formats).ok_or_else(|| {
            PlayError::NoDisplay(format!(
                "the window offers no 8-bit RGBA format to draw into (it offers {:?})",
                caps.formats
            ))
        })?;
        // No refresh rate to pace by: the caller's timer paces.
        let (mode, _) = choose_present_mode(&caps.present_modes, PresentChoice::Auto, None, 1.0);
        let mut shown = RawSurface {
            gpu: Arc::clone(gpu),
            config: surface_config(&caps, format, mode, size),
            surface,
            configured: false,
        };
        if size.0 > 0 && size.1 > 0 {
            shown.configure()?;
        }
        Ok(Self {
            target: Target::Surface(shown),
        })
    }

    /// Whether frames reach the window through a wgpu surface (else they
    /// are copied to the X server).
    pub fn presents_through_a_surface(&self) -> bool {
        matches!(self.target, Target::Surface(_))
    }

    /// Draws the frame `player` shows into the window at `size` (its
    /// size in physical pixels, letterboxed; `None`: as the X server
    /// reports it when copying to it, as last drawn through a surface)
    /// and returns the size drawn. A window of no area is left as it is,
    /// and so is a surface that cannot give a texture now (hidden, being
    /// resized): the next call draws.
    pub fn present(
        &mut self,
        player: &Player,
        size: Option<(u32, u32)>,
    ) -> Result<(u32, u32), PlayError> {
        match &mut self.target {
            Target::Put(put_to) => {
                let (x11, reader) = &mut **put_to;
                put(x11, reader, player, size)
            }
            Target::Surface(shown) => shown.present(player, size),
        }
    }
}

/// Draws into an X11 window by reading the picture back and putting it.
fn put(
    x11: &X11Present,
    reader: &mut PictureReader,
    player: &Player,
    size: Option<(u32, u32)>,
) -> Result<(u32, u32), PlayError> {
    let size = match size {
        Some(size) => size,
        None => x11.size().map_err(PlayError::NoDisplay)?,
    };
    if size.0 == 0 || size.1 == 0 {
        return Ok(size);
    }
    let target = reader.draw(player, size)?;
    let gpu = Arc::clone(reader.gpu());
    // Straight into the memory shared with the server where the device
    // can copy there; else read back and put.
    if x11
        .put_texture(&gpu, &target)
        .map_err(PlayError::NoDisplay)?
    {
        return Ok(size);
    }
    reader
        .read_back(&target, |pixels, pitch| x11.put(pixels, pitch, size.1))?
        .transpose()
        .map_err(PlayError::NoDisplay)?;
    Ok(size)
}

impl RawSurface {
    /// Sets the surface up with `config`; until that succeeds, each
    /// present tries again.
    fn configure(&mut self) -> Result<(), PlayError> {
        let done = self
            .gpu
            .queue()
            .configure_surface(&self.surface, &self.config);
        self.configured = done.is_ok();
        done.map_err(|e| PlayError::NoDisplay(format!("cannot present to the window: {e}")))
    }

    /// The surface's texture to draw into now, set up at `size` first
    /// where it is not; `None` where there is none to draw into now (a
    /// configuration that failed, a window being resized or hidden: the
    /// next call tries again). A surface lost for good is an error: make
    /// the `NativeWindow` again.
    fn texture(&mut self, size: (u32, u32)) -> Result<Option<wgpu::SurfaceTexture>, PlayError> {
        if !self.configured || size != (self.config.width, self.config.height) {
            (self.config.width, self.config.height) = size;
            if self.configure().is_err() {
                return Ok(None);
            }
        }
        // A window destroyed under us fails validation: no frame.
        let got = self
            .gpu
            .device()
            .catch(|| self.surface.get_current_texture());
        Ok(match got.ok() {
            Some(wgpu::CurrentSurfaceTexture::Success(t)) => Some(t),
            Some(wgpu::CurrentSurfaceTexture::Suboptimal(t)) => {
                // Drawn this once; set up afresh before the next.
                self.configured = false;
                Some(t)
            }
            Some(wgpu::CurrentSurfaceTexture::Lost) => {
                return Err(PlayError::NoDisplay("the window's surface was lost".into()));
            }
            Some(wgpu::CurrentSurfaceTexture::Outdated) => {
                self.configured = false;
                None
            }
            _ => None,
        })
    }

    fn present(
        &mut self,
        player: &Player,
        size: Option<(u32, u32)>,
    ) -> Result<(u32, u32), PlayError> {
        let size = size.unwrap_or((self.config.width, self.config.height));
        if size.0 == 0 || size.1 == 0 {
            return Ok(size);
        }
        let Some(frame) = self.texture(size)? else {
            return Ok(size);
        };
        let view = frame.texture.create_view(&wgpu::TextureViewDescriptor {
            format: Some(self.config.format.remove_srgb_suffix()),
            ..Default::default()
        });
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default())?;
        let format = self.config.format.remove_srgb_suffix();
        draw_letterboxed(player, &mut encoder, &view, format, size)?;
        self.gpu.queue().submit([encoder.finish()?])?;
        self.gpu.queue().present(frame);
        Ok(size)
    }
}

/// Whether `gpu` is a software rasteriser (llvmpipe behind the GL
/// backend, lavapipe behind Vulkan), where an X11 window is better drawn
/// into by copying to the X server in memory shared with it (see
/// `x11.rs`).
pub(super) fn software_adapter(gpu: &Gpu) -> bool {
    gpu.adapter().get_info().device_type == wgpu::DeviceType::Cpu
}
