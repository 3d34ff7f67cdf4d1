//! Frames put straight into an X11 window, for a software rasteriser
//! behind either backend.
//!
//! wgpu's GL backend draws into a renderbuffer of its own and presents it
//! with a flipped `glBlitFramebuffer` into the window's framebuffer, which
//! the driver then copies to the X server. On a GPU the blit costs
//! nothing; on llvmpipe it is one more full-window shader pass, a gather a
//! pixel: 9 to 11 CPU ms a 1920x1080 frame measured here, more than
//! drawing the picture. lavapipe's Vulkan swapchain has no blit, but
//! presents each image to the server with `PutImage` through the socket:
//! a 1920x1080 frame is 8 MB the kernel copies twice, and the server's
//! share of the two cores is more than three times what it is when it
//! reads the frames from shared memory (0.5 against 0.15 CPU-seconds for
//! 96 frames, measured under Xvfb), CPU the decoders need.
//!
//! Instead the player draws into its own target, reads it back (the copy
//! GL's swap makes too) and hands the rows to the server: in memory shared
//! with the server (MIT-SHM) where it has that, else with `PutImage`
//! through the socket, as the drivers do.
//!
//! Only where the server takes 32-bit pixels of blue, green, red bytes: a
//! window whose visual is 24-bit true colour (red, green, blue masks
//! 0xff0000, 0xff00, 0xff) in 32-bit pixels, least significant byte first.
//! The player draws red first ([`FORMAT`]), as a software adapter stores a
//! texture, so reading it back is a plain copy; red and blue trade places
//! as the rows are copied for the server. Read back as blue first, the
//! driver swaps them itself, a word at a time: 5% of the player's CPU time
//! in a 1920x1080 window on llvmpipe, measured.

use std::borrow::Cow;
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};

use memmap2::MmapRaw;
use parking_lot::Mutex;
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::{Gpu, HostRegion};
use std::sync::Arc;
use winit::raw_window_handle::{HasWindowHandle, RawWindowHandle};
use winit::window::Window;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::image::{BitsPerPixel, Image, ImageOrder, ScanlinePad};
use x11rb::protocol::Event;
use x11rb::protocol::shm::{self, ConnectionExt as _};
use x11rb::protocol::xproto::{
    ConnectionExt, CreateGCAux, ImageFormat, ImageOrder as ByteOrder, Setup,
};
use x11rb::rust_connection::RustConnection;

/// The texture format frames for the window are drawn in where they are
/// read back to the CPU (red first; [`X11Present::put`] hands the server
/// blue first).
pub(crate) const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// The granularity of shared memory segments' sizes.
const SEGMENT_ALIGN: usize = 64 << 10;

/// The format frames for a window are drawn in on `gpu`: blue first
/// (the server's own order) where the device copies them straight into
/// the memory shared with the server ([`X11Present::put_texture`]), so
/// neither the device nor the CPU touches a pixel on the way; else
/// [`FORMAT`].
pub(crate) fn format_for(gpu: &Gpu) -> wgpu::TextureFormat {
    match copies_into_shared_memory(gpu) {
        true => wgpu::TextureFormat::Bgra8Unorm,
        false => FORMAT,
    }
}

/// Whether `gpu` copies frames into memory shared with the X server: a
/// software adapter (its copies are the CPU's own, so the host sees them
/// once the copy has ended; a GPU's would need a host barrier wgpu does
/// not give) that imports host memory.
fn copies_into_shared_memory(gpu: &Gpu) -> bool {
    gpu.adapter().get_info().device_type == wgpu::DeviceType::Cpu
        && gpu.device().host_import_alignment().is_some()
}

/// The X11 window id of `window`, if it is an X11 window.
pub(crate) fn window_id(window: RawWindowHandle) -> Option<u32> {
    match window {
        RawWindowHandle::Xlib(h) => u32::try_from(h.window).ok(),
        RawWindowHandle::Xcb(h) => Some(h.window.get()),
        _ => None,
    }
}

/// A connection to the window's X server, and what drawing into the
/// window needs.
pub(crate) struct X11Present {
    conn: RustConnection,
    window: u32,
    gc: u32,
    /// The window's depth (24, or 32 for a visual with alpha).
    depth: u8,
    /// The byte order of the pixels [`X11Present::put`] is given.
    format: wgpu::TextureFormat,
    /// How frames reach the server.
    path: Mutex<Path>,
}

/// How frames reach the server.
enum Path {
    /// In memory shared with it; `None` before the first frame.
    Shared(Option<Segment>),
    /// Through the socket, from the rows as the server takes them (kept
    /// from frame to frame): the server has no MIT-SHM 1.2 (passing the
    /// memory's file descriptor), or sharing failed once.
    Socket(Vec<u8>),
}

/// Memory shared with the X server, which it reads frames from.
struct Segment {
    /// The server's name for it.
    seg: shm::Seg,
    map: Arc<MmapRaw>,
    /// A put from it the server may not have finished reading.
    in_flight: bool,
    /// The same memory as a buffer the device copies frames into.
    device: DeviceCopy,
}

/// Whether the device copies frames into a segment.
enum DeviceCopy {
    /// Not tried yet.
    Untried,
    /// Into this buffer, the segment's memory imported.
    Into(Tracked<wgpu::Buffer>),
    /// The device could not import the memory: frames are read back.
    Refused,
}

/// The shared memory as the device's: kept mapped until the device has
/// destroyed the buffer that aliases it.
struct SharedWithDevice(Arc<MmapRaw>);

// SAFETY: the segment's mapping stays mapped, at one address and
// length, while this `Arc` holds it.
#[allow(unsafe_code)]
unsafe impl HostRegion for SharedWithDevice {
    fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl X11Present {
    /// Connects to the X server of `window` (the `DISPLAY` the event loop
    /// uses); `None` where the window is not an X11 one, or the server
    /// would need the pixels converted.
    pub(crate) fn open(window: &Window, format: wgpu::TextureFormat) -> Option<Self> {
        let id = window_id(window.window_handle().ok()?.as_raw())?;
        Self::open_id(None, id, format).ok()
    }

    /// Connects to `display` (`None`: the `DISPLAY` of the environment)
    /// to draw into the window `id`, which another program (a toolkit)
    /// made; the error says why it cannot. Frames are given to
    /// [`X11Present::put`] in `format` (`Rgba8Unorm` or `Bgra8Unorm`).
    pub(crate) fn open_id(
        display: Option<&str>,
        id: u32,
        format: wgpu::TextureFormat,
    ) -> Result<Self, String> {
        let (conn, _) = x11rb::connect(display).map_err(|e| format!("no X server: {e}"))?;
        let (depth, visual) = depth_and_visual(&conn, id)?;
        if !takes_bgra(conn.setup(), depth, visual) {
            return Err(format!(
                "window {id:#x}'s visual does not take 32-bit BGR pixels as they are"
            ));
        }
        let gc = create_gc(&conn, id)?;
        let path = match shares_memory(&conn) {
            true => Path::Shared(None),
            false => Path::Socket(Vec::new()),
        };
        Ok(Self {
            conn,
            window: id,
            gc,
            depth,
            format,
            path: Mutex::new(path),
        })
    }

    /// The byte order of the pixels this window is given.
    pub(crate) fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// The request frames go to the server with (so far): `ShmPutImage`
    /// (in shared memory) or `PutImage` (through the socket).
    pub(crate) fn request(&self) -> &'static str {
        match *self.path.lock() {
            Path::Shared(_) => "ShmPutImage",
            Path::Socket(_) => "PutImage",
        }
    }

    /// The window's size now, in pixels.
    pub(crate) fn size(&self) -> Result<(u32, u32), String> {
        let g = self
            .conn
            .get_geometry(self.window)
            .map_err(|e| e.to_string())?
            .reply()
            .map_err(|e| format!("the window is gone: {e}"))?;
        Ok((u32::from(g.width), u32::from(g.height)))
    }

    /// Puts `height` rows of `pixels` (in [`X11Present::format`], `pitch`
    /// bytes a row) at the window's top-left corner, red and blue swapped
    /// for the server where they come red first; columns past its right
    /// edge are clipped. Returns the server's error, if it reported one.
    pub(crate) fn put(&self, pixels: &[u8], pitch: u32, height: u32) -> Result<(), String> {
        let width = u16::try_from(pitch / 4).map_err(|e| e.to_string())?;
        let height = u16::try_from(height).map_err(|e| e.to_string())?;
        let mut path = self.path.lock();
        if let Path::Shared(segment) = &mut *path {
            match self.put_shared(segment, pixels, (width, height)) {
                Ok(()) => return Ok(()),
                // Memory that cannot be shared (a server on another
                // machine, no memfd): the socket from now on.
                Err(Sharing::Refused) => *path = Path::Socket(Vec::new()),
                Err(Sharing::Failed(e)) => return Err(e),
            }
        }
        let Path::Socket(rows) = &mut *path else {
            unreachable!("shared puts returned above")
        };
        rows.resize(pixels.len(), 0);
        self.to_server_order(pixels, rows);
        self.put_socket(rows, width, height)
    }

    /// Puts `texture` (`Bgra8Unorm`, the window's size or wider) to the
    /// window by having the device copy it straight into the memory
    /// shared with the server, and the server read it from there: no
    /// read-back buffer, no copy on the CPU. `Ok(false)` where frames
    /// cannot go that way (no shared memory, a device that cannot import
    /// it, another format): the caller reads the texture back and
    /// [puts](Self::put) the rows.
    pub(crate) fn put_texture(&self, gpu: &Gpu, texture: &wgpu::Texture) -> Result<bool, String> {
        let Some(align) = gpu.device().host_import_alignment() else {
            return Ok(false);
        };
        if !copies_into_shared_memory(gpu) {
            return Ok(false);
        }
        if texture.format() != wgpu::TextureFormat::Bgra8Unorm || self.format != texture.format() {
            return Ok(false);
        }
        let mut path = self.path.lock();
        let Path::Shared(segment) = &mut *path else {
            return Ok(false);
        };
        let (w, h) = (texture.width(), texture.height());
        let pitch = (w * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let (Ok(width), Ok(height)) = (u16::try_from(pitch / 4), u16::try_from(h)) else {
            return Ok(false);
        };
        let len = (pitch as usize * h as usize).next_multiple_of(align);
        if let Some(held) = segment {
            self.settle(held)?;
        }
        if segment.as_ref().is_none_or(|s| s.map.len() < len) {
            if let Some(old) = segment.take() {
                drop(self.conn.shm_detach(old.seg));
            }
            let Some(made) = Segment::new(&self.conn, len) else {
                *path = Path::Socket(Vec::new());
                return Ok(false);
            };
            *segment = Some(made);
        }
        let Some(held) = segment else {
            unreachable!("made above")
        };
        if matches!(held.device, DeviceCopy::Untried) {
            let region = Box::new(SharedWithDevice(Arc::clone(&held.map)));
            // SAFETY: the CPU writes the segment only in `put_shared`,
            // never while a copy into it is in flight: each copy is
            // waited for below before this returns.
            #[allow(unsafe_code)]
            let imported = unsafe {
                gpu.device()
                    .import_host_memory(region, Some("window shared memory"))
            };
            held.device = match imported {
                Some(Ok(buffer)) => DeviceCopy::Into(buffer),
                _ => DeviceCopy::Refused,
            };
        }
        let DeviceCopy::Into(buffer) = &held.device else {
            return Ok(false);
        };
        if let Err(e) = copy_and_wait(gpu, texture, buffer, pitch) {
            // Not submitted, or the device is lost: either way the device
            // writes this segment no more, and frames are read back.
            held.device = DeviceCopy::Refused;
            return Err(format!("copying the frame into shared memory: {e}"));
        }
        self.put_from(held, (width, height)).map_err(|e| match e {
            Sharing::Refused => "the server refused shared memory".to_owned(),
            Sharing::Failed(e) => e,
        })?;
        Ok(true)
    }

    /// Copies `pixels` into `to` in the order the server takes them.
    fn to_server_order(&self, pixels: &[u8], to: &mut [u8]) {
        match self.format {
            wgpu::TextureFormat::Bgra8Unorm => to[..pixels.len()].copy_from_slice(pixels),
            _ => swap_red_and_blue(pixels, to),
        }
    }

    /// Copies `pixels` into the shared segment (made or grown first) and
    /// asks the server to draw them from there, once it has finished
    /// reading the frame before.
    fn put_shared(
        &self,
        segment: &mut Option<Segment>,
        pixels: &[u8],
        (width, height): (u16, u16),
    ) -> Result<(), Sharing> {
        if let Some(held) = segment {
            self.settle(held).map_err(Sharing::Failed)?;
        }
        if segment.as_ref().is_none_or(|s| s.map.len() < pixels.len()) {
            if let Some(old) = segment.take() {
                drop(self.conn.shm_detach(old.seg));
            }
            *segment = Some(Segment::new(&self.conn, pixels.len()).ok_or(Sharing::Refused)?);
        }
        let Some(held) = segment else {
            unreachable!("made above")
        };
        // SAFETY: the mapping is `map.len()` bytes of this process's own
        // (at least `pixels.len()`, checked above), and nothing else
        // reads or writes it now: the server has finished reading it
        // (`settle`), and every device copy into it was waited for.
        #[allow(unsafe_code)]
        let map = unsafe { std::slice::from_raw_parts_mut(held.map.as_mut_ptr(), held.map.len()) };
        self.to_server_order(pixels, &mut map[..pixels.len()]);
        self.put_from(held, (width, height))
    }

    /// Asks the server to draw the window from `held`, `width` pixels a
    /// row, `height` rows.
    fn put_from(&self, held: &mut Segment, (width, height): (u16, u16)) -> Result<(), Sharing> {
        let put = self.conn.shm_put_image(
            self.window,
            self.gc,
            width,
            height,
            0,
            0,
            width,
            height,
            0,
            0,
            self.depth,
            ImageFormat::Z_PIXMAP.into(),
            true,
            held.seg,
            0,
        );
        drop(put.map_err(|e| Sharing::Failed(e.to_string()))?);
        held.in_flight = true;
        self.conn
            .flush()
            .map_err(|e| Sharing::Failed(e.to_string()))?;
        self.take_errors(Some(held)).map_err(Sharing::Failed)
    }

    /// Returns once the server has finished reading `segment`: its
    /// completion event came, or a round trip shows every request before
    /// it done. Never waits on an event that may not come.
    fn settle(&self, segment: &mut Segment) -> Result<(), String> {
        self.take_errors(Some(segment))?;
        if segment.in_flight {
            self.conn
                .get_input_focus()
                .map_err(|e| e.to_string())?
                .reply()
                .map_err(|e| format!("the X server is gone: {e}"))?;
            self.take_errors(Some(segment))?;
            segment.in_flight = false;
        }
        Ok(())
    }

    /// Puts the rows through the socket.
    fn put_socket(&self, pixels: &[u8], width: u16, height: u16) -> Result<(), String> {
        let image = Image::new(
            width,
            height,
            ScanlinePad::Pad32,
            self.depth,
            BitsPerPixel::B32,
            ImageOrder::LsbFirst,
            Cow::Borrowed(pixels),
        )
        .map_err(|e| e.to_string())?;
        // Requests larger than the server takes are split into bands.
        // Their errors, if any, come back as events: see below.
        drop(
            image
                .put(&self.conn, self.window, self.gc, 0, 0)
                .map_err(|e| e.to_string())?,
        );
        self.conn.flush().map_err(|e| e.to_string())?;
        self.take_errors(None)
    }

    /// Takes the events that came on the connection, returning the first
    /// error among them, if any; a completion of a put from `segment`
    /// marks it read.
    fn take_errors(&self, mut segment: Option<&mut Segment>) -> Result<(), String> {
        // No events are selected on this connection: what comes is an
        // error (the window gone, say) or a shared put's completion.
        while let Some(event) = self.conn.poll_for_event().map_err(|e| e.to_string())? {
            match event {
                Event::Error(e) => return Err(format!("{:?}", e.error_kind)),
                Event::ShmCompletion(done) => {
                    if let Some(s) = segment.as_deref_mut().filter(|s| s.seg == done.shmseg) {
                        s.in_flight = false;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Copies `texture` into `buffer`, rows `pitch` bytes apart, and waits
/// until the copy is done.
fn copy_and_wait(
    gpu: &Gpu,
    texture: &wgpu::Texture,
    buffer: &wgpu::Buffer,
    pitch: u32,
) -> Result<(), String> {
    let index =
        crate::render::readback::copy(gpu, texture, buffer, pitch).map_err(|e| e.to_string())?;
    gpu.device()
        .poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        })
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Copies the 32-bit pixels of `from` into `to` with their first and third
/// bytes swapped: red, green, blue, alpha into blue, green, red, alpha.
/// Whole words, so the compiler makes it a vector loop as fast as a copy.
fn swap_red_and_blue(from: &[u8], to: &mut [u8]) {
    // Fixed-size pixels: no bounds check inside the loop to stop it
    // becoming vector code (indexing slices of four did, at 9% of the
    // player's CPU time against 1% for a copy).
    let (from, to) = (from.as_chunks::<4>().0, to.as_chunks_mut::<4>().0);
    for (from, to) in from.iter().zip(to) {
        let p = u32::from_le_bytes(*from);
        let swapped = (p & 0xff00_ff00) | ((p >> 16) & 0xff) | ((p & 0xff) << 16);
        *to = swapped.to_le_bytes();
    }
}

/// Why a frame did not go through shared memory.
enum Sharing {
    /// Memory could not be shared with this server: use the socket.
    Refused,
    /// The put failed (the window gone, say).
    Failed(String),
}

impl Segment {
    /// `len` bytes of memory of this process's own, shared with the
    /// server of `conn` by passing it the memory's file descriptor;
    /// `None` where it cannot be (no memfd, a server that does not take
    /// it: one on another machine).
    fn new(conn: &RustConnection, len: usize) -> Option<Self> {
        // Whole 64 KiB: the alignment a device asks of memory it imports
        // is at most that in practice (a page on lavapipe), so a segment
        // made for a frame read back can still be the device's later.
        let len = len.max(1).checked_next_multiple_of(SEGMENT_ALIGN)?;
        let file = File::from(memfd()?);
        file.set_len(len as u64).ok()?;
        // The file is anonymous memory of this process's own (memfd),
        // sized above and never truncated while mapped; the server is
        // given it read-only.
        let map = Arc::new(MmapRaw::map_raw(&file).ok()?);
        let seg = conn.generate_id().ok()?;
        conn.shm_attach_fd(seg, OwnedFd::from(file), true)
            .ok()?
            .check()
            .ok()?;
        Some(Self {
            seg,
            map,
            in_flight: false,
            device: DeviceCopy::Untried,
        })
    }
}

/// A new anonymous memory file, closed on exec.
fn memfd() -> Option<OwnedFd> {
    // SAFETY: the name is a NUL-terminated string; the call has no other
    // inputs.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::memfd_create(c"stagehand frame".as_ptr(), libc::MFD_CLOEXEC) };
    // SAFETY: a non-negative `fd` was just made and nothing else owns it.
    #[allow(unsafe_code)]
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the server of `conn` takes shared memory by file descriptor
/// (MIT-SHM 1.2).
fn shares_memory(conn: &RustConnection) -> bool {
    let present = conn
        .extension_information(shm::X11_EXTENSION_NAME)
        .ok()
        .flatten()
        .is_some();
    present
        && conn
            .shm_query_version()
            .ok()
            .and_then(|cookie| cookie.reply().ok())
            .is_some_and(|v| (v.major_version, v.minor_version) >= (1, 2))
}

/// The depth and visual of the window `id`; an error where there is no
/// such window.
fn depth_and_visual(conn: &RustConnection, id: u32) -> Result<(u8, u32), String> {
    let geometry = conn
        .get_geometry(id)
        .map_err(|e| e.to_string())?
        .reply()
        .map_err(|e| format!("no X11 window {id:#x}: {e}"))?;
    let visual = conn
        .get_window_attributes(id)
        .map_err(|e| e.to_string())?
        .reply()
        .map_err(|e| format!("no X11 window {id:#x}: {e}"))?
        .visual;
    Ok((geometry.depth, visual))
}

/// A graphics context for drawing into the window `id`.
fn create_gc(conn: &RustConnection, id: u32) -> Result<u32, String> {
    let gc = conn.generate_id().map_err(|e| e.to_string())?;
    conn.create_gc(gc, id, &CreateGCAux::new())
        .map_err(|e| e.to_string())?
        .check()
        .map_err(|e| e.to_string())?;
    Ok(gc)
}

/// Whether the server of `setup` takes `FORMAT`'s bytes as they are for a
/// window of `depth` and `visual`.
fn takes_bgra(setup: &Setup, depth: u8, visual: u32) -> bool {
    let lsb_first = setup.image_byte_order == ByteOrder::LSB_FIRST;
    let pixels_of_32_bits = setup
        .pixmap_formats
        .iter()
        .any(|f| f.depth == depth && f.bits_per_pixel == 32 && f.scanline_pad <= 32);
    let bgr = setup
        .roots
        .iter()
        .flat_map(|screen| &screen.allowed_depths)
        .filter(|d| d.depth == depth)
        .flat_map(|d| &d.visuals)
        .any(|v| {
            v.visual_id == visual
                && (v.red_mask, v.green_mask, v.blue_mask) == (0xff_0000, 0xff00, 0xff)
        });
    lsb_first && pixels_of_32_bits && bgr
}

#[cfg(test)]
mod tests {
    use super::{swap_red_and_blue, takes_bgra};

    #[test]
    fn red_and_blue_trade_places_and_green_and_alpha_stay() {
        let rgba = [1, 2, 3, 4, 0xff, 0x80, 0x00, 0x7f];
        let mut out = [0; 8];
        swap_red_and_blue(&rgba, &mut out);
        assert_eq!(out, [3, 2, 1, 4, 0x00, 0x80, 0xff, 0x7f]);
    }
    use x11rb::protocol::xproto::{
        Depth, Format, ImageOrder, Screen, Setup, VisualClass, Visualtype,
    };

    /// A server with one screen whose depth-24 visual 0x21 has `masks`,
    /// in pixels of `bits` and byte order `order`.
    fn server(masks: (u32, u32, u32), bits: u8, order: ImageOrder) -> Setup {
        let visual = Visualtype {
            visual_id: 0x21,
            class: VisualClass::TRUE_COLOR,
            bits_per_rgb_value: 8,
            colormap_entries: 256,
            red_mask: masks.0,
            green_mask: masks.1,
            blue_mask: masks.2,
        };
        Setup {
            image_byte_order: order,
            pixmap_formats: vec![Format {
                depth: 24,
                bits_per_pixel: bits,
                scanline_pad: 32,
            }],
            roots: vec![Screen {
                allowed_depths: vec![Depth {
                    depth: 24,
                    visuals: vec![visual],
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    const BGR: (u32, u32, u32) = (0xff_0000, 0xff00, 0xff);

    #[test]
    fn only_32_bit_lsb_first_bgr_pixels_take_the_texture_as_it_is() {
        assert!(takes_bgra(
            &server(BGR, 32, ImageOrder::LSB_FIRST),
            24,
            0x21
        ));
        assert!(
            !takes_bgra(&server(BGR, 32, ImageOrder::LSB_FIRST), 24, 0x22),
            "another visual"
        );
        assert!(
            !takes_bgra(&server(BGR, 32, ImageOrder::LSB_FIRST), 32, 0x21),
            "another depth"
        );
        assert!(
            !takes_bgra(
                &server((0xff, 0xff00, 0xff_0000), 32, ImageOrder::LSB_FIRST),
                24,
                0x21
            ),
            "red and blue swapped"
        );
        assert!(
            !takes_bgra(&server(BGR, 24, ImageOrder::LSB_FIRST), 24, 0x21),
            "packed 24-bit pixels"
        );
        assert!(
            !takes_bgra(&server(BGR, 32, ImageOrder::MSB_FIRST), 24, 0x21),
            "most significant byte first"
        );
    }
}
