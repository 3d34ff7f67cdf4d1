//! `Player`: playback a Python program drives (OpenRV's `addSource`,
//! `setFrame`, `play`, `stop`, `cacheInfo()` and events, by other names),
//! its picture as a numpy array or as pixels for a widget, and presented
//! into a native window (`NativeView`) a toolkit made.

use crate::errors;
use crate::gpu::{Gpu, json_to_py};
use crate::python_thread::{call, run_later};
use parking_lot::Mutex;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use stagehand_gpu::Gpu as RustGpu;
use stagehand_gpu::upload::UploadEngine;
use stagehand_play::{
    Command, Event, Mode, NativeWindow, PictureReader, PlayOptions, PlaySummary,
    Player as RustPlayer, Remote, Screen, Status, WindowOptions, engine_config,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The events a handler can be given to, and what each is called with.
const EVENTS: [&str; 6] = [
    "frame-changed",
    "play-start",
    "play-stop",
    "cache-changed",
    "ended",
    "error",
];

type Handlers = Arc<Mutex<HashMap<&'static str, Vec<Py<PyAny>>>>>;

/// A player on a sequence (a folder, a `name.####.exr` pattern) or a
/// movie, paused on its first frame once opened (unless `paused=False`).
/// Its clock, decoders, frame cache and sound run on threads of its own;
/// commands return at once.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct Player {
    gpu: Arc<RustGpu>,
    inner: Mutex<Option<Arc<RustPlayer>>>,
    handlers: Handlers,
    reader: Mutex<Option<PictureReader>>,
    summary: Mutex<Option<Py<PyAny>>>,
    /// What it was opened with, for `run_window`.
    options: PlayOptions,
}

impl Player {
    pub(crate) fn player(&self) -> PyResult<Arc<RustPlayer>> {
        self.inner
            .lock()
            .clone()
            .ok_or_else(|| errors::raise("ClosedError", "the player is closed"))
    }

    fn status(&self) -> PyResult<Status> {
        Ok(self.player()?.status())
    }

    /// Sends a command through `send`, then waits (a second at most, the
    /// interpreter free meanwhile) until the player has taken it
    /// (`taken`) or has ended: reading the state back then says what was
    /// set.
    fn send_and_settle(
        &self,
        py: Python<'_>,
        send: impl FnOnce(&RustPlayer),
        taken: impl Fn(&Status) -> bool + Sync,
    ) -> PyResult<()> {
        let player = self.player()?;
        send(&player);
        py.detach(|| player.wait(Duration::from_secs(1), |s| taken(s) || s.ended));
        Ok(())
    }
}

/// Options as `stagehand play` takes them, from the constructor's
/// arguments.
#[allow(clippy::too_many_arguments)]
fn options(
    source: PathBuf,
    fps: Option<f64>,
    audio: Option<PathBuf>,
    cache: Option<&Bound<'_, PyAny>>,
    mode: &str,
    size: Option<(u32, u32)>,
    looped: bool,
    paused: bool,
    range: Option<(i64, i64)>,
    threads: Option<usize>,
    mute: bool,
    gpu_cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<PlayOptions> {
    let fps = match fps {
        Some(fps) => fps,
        None => stagehand_play::source::nominal_rate(&source).unwrap_or(24.0),
    };
    let mode: Mode = mode.parse().map_err(errors::invalid)?;
    let mut options = PlayOptions {
        source: Some(source),
        fps,
        mode,
        looped,
        start_paused: paused,
        range,
        cache_bytes: bytes_option("cache", cache)?,
        gpu_cache_bytes: bytes_option("gpu_cache", gpu_cache)?,
        ..PlayOptions::default()
    };
    if let Some(size) = size {
        options.output_size = size;
    }
    if let Some(threads) = threads {
        options.threads = threads;
    }
    options.audio.file = audio;
    options.audio.mute = mute;
    Ok(options)
}

/// A byte count given as an int or as text (`"2G"`, `"512M"`).
fn bytes_option(name: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(value) = value else {
        return Ok(None);
    };
    if let Ok(n) = value.extract::<u64>() {
        return Ok(Some(n));
    }
    let text: String = value.extract().map_err(|_| {
        errors::invalid(format!(
            "{name}: a number of bytes or a size such as \"2G\""
        ))
    })?;
    stagehand_play::parse_bytes(&text)
        .map(Some)
        .map_err(|e| errors::invalid(format!("{name} {text:?}: {e}")))
}

/// A summary as a dict.
fn summary_dict(py: Python<'_>, summary: &PlaySummary) -> PyResult<Py<PyAny>> {
    let value = serde_json::to_value(summary).map_err(|e| errors::invalid(e.to_string()))?;
    Ok(json_to_py(py, &value)?.unbind())
}

/// Hands each event the player sends to the handlers registered for it,
/// on the Python thread, in order; ends when the player does.
fn forward_events(events: crossbeam_channel::Receiver<Event>, handlers: Handlers) -> PyResult<()> {
    let spawned = std::thread::Builder::new()
        .name("stagehand player events".into())
        .spawn(move || {
            for event in events {
                let (name, arg): (&'static str, Option<EventArg>) = match event {
                    Event::FrameChanged(p) => ("frame-changed", Some(EventArg::Frame(p))),
                    Event::PlayStarted => ("play-start", None),
                    Event::PlayStopped => ("play-stop", None),
                    Event::CacheChanged => ("cache-changed", None),
                    Event::Ended => ("ended", None),
                    Event::Error(e) => ("error", Some(EventArg::Text(e))),
                };
                let handlers = Arc::clone(&handlers);
                run_later(move |py| {
                    let wanted: Vec<Py<PyAny>> = handlers
                        .lock()
                        .get(name)
                        .map(|v| v.iter().map(|f| f.clone_ref(py)).collect())
                        .unwrap_or_default();
                    for handler in &wanted {
                        let arg = arg.clone();
                        call(py, handler, move |py| {
                            Ok(match arg {
                                Some(EventArg::Frame(p)) => {
                                    vec![p.into_pyobject(py)?.into_any().unbind()]
                                }
                                Some(EventArg::Text(t)) => {
                                    vec![t.into_pyobject(py)?.into_any().unbind()]
                                }
                                None => Vec::new(),
                            })
                        });
                    }
                });
            }
        });
    spawned.map(drop).map_err(|e| {
        errors::raise(
            "PlayerError",
            format!("could not start the event thread: {e}"),
        )
    })
}

#[derive(Clone)]
enum EventArg {
    Frame(usize),
    Text(String),
}

#[pymethods]
impl Player {
    /// Opens `source` and returns once its first frame is drawn; a source
    /// that cannot play raises (`SourceError` for a missing or unreadable
    /// file, `InvalidArgumentError` for an option out of range).
    ///
    /// `fps`: the rate (default: a movie's own, else 24); `audio`: a sound
    /// file to play beside the pictures; `cache`: the RAM frame cache's
    /// budget in bytes or as `"2G"`; `mode`: `"realtime"` (drop what is
    /// late) or `"every-frame"`; `gpu`: the `Gpu` to use (default: one
    /// opened for the player); `size`: the picture's (width, height)
    /// (default 1920x1080); `looped`; `paused` (default `True`: paused on
    /// the first frame); `range`: (first, last) file frame numbers;
    /// `threads`: decoder threads; `mute`; `gpu_cache`: a device tier's
    /// budget.
    #[new]
    #[pyo3(signature = (source, fps=None, audio=None, cache=None, mode="realtime", *, gpu=None, size=None, looped=false, paused=true, range=None, threads=None, mute=false, gpu_cache=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: PathBuf,
        fps: Option<f64>,
        audio: Option<PathBuf>,
        cache: Option<&Bound<'_, PyAny>>,
        mode: &str,
        gpu: Option<&Gpu>,
        size: Option<(u32, u32)>,
        looped: bool,
        paused: bool,
        range: Option<(i64, i64)>,
        threads: Option<usize>,
        mute: bool,
        gpu_cache: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = options(
            source, fps, audio, cache, mode, size, looped, paused, range, threads, mute, gpu_cache,
        )?;
        let gpu = match gpu {
            Some(gpu) => Arc::clone(&gpu.inner),
            None => {
                let options = stagehand_gpu::GpuOptions {
                    wanted_features: stagehand_play::wanted_features(),
                    ..Default::default()
                };
                Arc::new(py.detach(|| RustGpu::open(&options)).map_err(errors::gpu)?)
            }
        };
        let opened = options.clone();
        let player = py
            .detach(|| {
                let engine = Arc::new(UploadEngine::new(Arc::clone(&gpu), engine_config(1))?);
                RustPlayer::open(&gpu, &engine, opened)
            })
            .map_err(errors::play)?;
        let handlers: Handlers = Arc::default();
        forward_events(player.events().clone(), Arc::clone(&handlers))?;
        Ok(Self {
            gpu,
            inner: Mutex::new(Some(Arc::new(player))),
            handlers,
            reader: Mutex::new(None),
            summary: Mutex::new(None),
            options,
        })
    }

    /// Runs the clock (from the first frame again at the end of a range
    /// that does not loop).
    fn play(&self) -> PyResult<()> {
        self.player()?.play();
        Ok(())
    }

    /// Stops the clock on the frame on screen.
    fn pause(&self) -> PyResult<()> {
        self.player()?.pause();
        Ok(())
    }

    /// Shows `frame` (a position in the range, 0 its first; clamped to
    /// its last) and pauses.
    fn seek(&self, frame: i64) -> PyResult<()> {
        let at = usize::try_from(frame)
            .map_err(|_| errors::invalid(format!("seek({frame}): a frame is 0 or more")))?;
        self.player()?.seek(at);
        Ok(())
    }

    /// Steps `n` frames forward (back when negative) and pauses.
    #[pyo3(signature = (n=1))]
    fn step(&self, n: i64) -> PyResult<()> {
        self.player()?.step(n);
        Ok(())
    }

    /// Changes the exposure of scene-linear sources by `stops`
    /// (-32 to 32).
    fn expose(&self, stops: f32) -> PyResult<()> {
        let stops = checked_stops(&format!("expose({stops})"), stops)?;
        self.player()?.expose(stops);
        Ok(())
    }

    /// Draws the player's own picture at `width` x `height` from now on
    /// (what `frame_array()` returns).
    fn resize(&self, width: u32, height: u32) -> PyResult<()> {
        let side = 1..=stagehand_play::options::MAX_OUTPUT_SIDE;
        if !(side.contains(&width) && side.contains(&height)) {
            return Err(errors::invalid(format!(
                "resize({width}, {height}): each side must be 1 to {}",
                side.end()
            )));
        }
        self.player()?.resize(width, height);
        Ok(())
    }

    /// The frame on screen: its position in the range (0 its first);
    /// `None` before the first.
    #[getter]
    fn frame(&self) -> PyResult<Option<usize>> {
        Ok(self.status()?.position)
    }

    /// The frame on screen's own number: a sequence's file frame number
    /// (`shot.1001.exr`: 1001), a movie's position; `None` before the
    /// first frame.
    #[getter]
    fn frame_number(&self) -> PyResult<Option<i64>> {
        Ok(self.status()?.number)
    }

    /// The frame on screen's timecode, "hh:mm:ss:ff" from the range's
    /// first frame at whole frames per second; `None` before the first
    /// frame.
    #[getter]
    fn timecode(&self) -> PyResult<Option<String>> {
        Ok(self.status()?.timecode())
    }

    /// Whether the clock runs.
    #[getter]
    fn playing(&self) -> PyResult<bool> {
        Ok(self.status()?.playing)
    }

    /// Whether playback loops; set it to change.
    #[getter]
    fn looped(&self) -> PyResult<bool> {
        Ok(self.status()?.looped)
    }

    /// Waits (a second at most) for the player to take it, so that
    /// reading it back says what was set.
    #[setter]
    fn set_looped(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.send_and_settle(py, |p| p.set_looped(on), |s| s.looped == on)
    }

    /// The positions played, as (first, last): the in and out points
    /// `set_range` set, else (0, len - 1).
    #[getter]
    fn range(&self) -> PyResult<(usize, usize)> {
        let (first, end) = self.status()?.range;
        Ok((first, end.saturating_sub(1)))
    }

    /// Plays only positions `first` to `last` (in and out points, both
    /// played; clamped to the range): loops wrap from `last` to `first`,
    /// seeks and steps stay inside, and a frame on screen outside them
    /// gives way to `first`'s. Waits (a second at most) for the player to
    /// take it, so that `range` then says what was set.
    fn set_range(&self, py: Python<'_>, first: i64, last: i64) -> PyResult<()> {
        let (Ok(from), Ok(to)) = (usize::try_from(first), usize::try_from(last)) else {
            return Err(errors::invalid(format!(
                "set_range({first}, {last}): positions are 0 or more"
            )));
        };
        if from > to {
            return Err(errors::invalid(format!(
                "set_range({first}, {last}): the first comes after the last"
            )));
        }
        let len = self.status()?.len;
        let want = (
            from.min(len.saturating_sub(1)),
            to.min(len.saturating_sub(1)) + 1,
        );
        self.send_and_settle(py, |p| p.set_range(from, to), |s| s.range == want)
    }

    /// Plays the whole range again.
    fn clear_range(&self, py: Python<'_>) -> PyResult<()> {
        let len = self.status()?.len;
        self.send_and_settle(py, |p| p.clear_range(), |s| s.range == (0, len))
    }

    /// Makes the frame on screen the in point (the out point stays where
    /// it still follows it, else the range runs to the end). Waits (a
    /// second at most) for the player to take it.
    fn mark_in(&self, py: Python<'_>) -> PyResult<()> {
        let at = self.status()?.position.unwrap_or(0);
        self.send_and_settle(py, |p| p.mark_in(), |s| s.range.0 == at)
    }

    /// Makes the frame on screen the out point (the in point stays where
    /// it still comes before it, else the range starts at the first
    /// frame). Waits (a second at most) for the player to take it.
    fn mark_out(&self, py: Python<'_>) -> PyResult<()> {
        let at = self.status()?.position;
        self.send_and_settle(
            py,
            |p| p.mark_out(),
            |s| s.range.1 == at.map_or(s.range.1, |p| p + 1),
        )
    }

    /// Play time per wall time: 1 plays at the frame rate, 2 twice as
    /// fast, 0.5 at half speed; set it to change (from 1/16 to 16). Sound
    /// plays at 1 only, and is silent at any other rate.
    #[getter]
    fn rate(&self) -> PyResult<f64> {
        Ok(self.status()?.rate)
    }

    /// Waits (a second at most) for the player to take it, so that
    /// reading it back says what was set.
    #[setter]
    fn set_rate(&self, py: Python<'_>, rate: f64) -> PyResult<()> {
        use stagehand_play::transport::{MAX_RATE, MIN_RATE};
        if !(MIN_RATE..=MAX_RATE).contains(&rate) {
            return Err(errors::invalid(format!(
                "rate {rate}: must be from {MIN_RATE} to {MAX_RATE}"
            )));
        }
        self.send_and_settle(py, |p| p.set_rate(rate), |s| s.rate == rate)
    }

    /// The display transform of scene-linear sources (EXR, float TIFF):
    /// "srgb", "rec709" or "linear"; `None` for display-referred sources,
    /// drawn as they are. Set it to change.
    #[getter]
    fn transfer(&self) -> PyResult<Option<String>> {
        Ok(self
            .status()?
            .display
            .map(|d| transfer_name(d.transfer).to_owned()))
    }

    /// Waits (a second at most) for the player to take it.
    #[setter]
    fn set_transfer(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let transfer: stagehand_play::Transfer = name
            .parse()
            .map_err(|e: String| errors::invalid(format!("transfer {e}")))?;
        self.send_and_settle(
            py,
            |p| p.set_transfer(transfer),
            |s| s.display.is_none_or(|d| d.transfer == transfer),
        )
    }

    /// The exposure of scene-linear sources, in stops; `None` for
    /// display-referred sources. Set it (-32 to 32) to change.
    #[getter]
    fn exposure(&self) -> PyResult<Option<f32>> {
        Ok(self.status()?.display.map(|d| d.exposure))
    }

    /// Waits (a second at most) for the player to take it.
    #[setter]
    fn set_exposure(&self, py: Python<'_>, stops: f32) -> PyResult<()> {
        let stops = checked_stops(&format!("exposure {stops}"), stops)?;
        self.send_and_settle(
            py,
            |p| p.set_exposure(stops),
            |s| s.display.is_none_or(|d| d.exposure == stops),
        )
    }

    /// Events let go because 1,024 waited unforwarded (handlers slower
    /// than the frames); 0 while the handlers keep up.
    #[getter]
    fn events_lost(&self) -> PyResult<u64> {
        Ok(self.player()?.events_lost())
    }

    /// Whether playback has ended (closed, or failed).
    #[getter]
    fn ended(&self) -> bool {
        self.inner.lock().as_ref().is_none_or(|p| p.status().ended)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.status()?.len)
    }

    /// Waits up to `timeout` seconds until the frame on screen is `frame`
    /// and/or `playing` is as given; whether it came.
    #[pyo3(signature = (frame=None, playing=None, timeout=10.0))]
    fn wait(
        &self,
        py: Python<'_>,
        frame: Option<usize>,
        playing: Option<bool>,
        timeout: f64,
    ) -> PyResult<bool> {
        if !(timeout.is_finite() && timeout >= 0.0) {
            return Err(errors::invalid(format!(
                "timeout {timeout}: must be 0 or more"
            )));
        }
        let player = self.player()?;
        let timeout = Duration::from_secs_f64(timeout.min(1e6));
        Ok(py.detach(|| {
            player.wait(timeout, |s| {
                frame.is_none_or(|f| s.position == Some(f))
                    && playing.is_none_or(|p| s.playing == p)
            })
        }))
    }

    /// Calls `fn` on each `event`: `"frame-changed"` (with the new
    /// frame), `"play-start"`, `"play-stop"`, `"cache-changed"` (what the
    /// frame cache holds changed; at most every 100 ms: ask
    /// `cache_info()`), `"ended"`, `"error"` (with the message). Handlers run on stagehand's Python thread, in the
    /// order the events happened.
    fn on(&self, event: &str, callback: Py<PyAny>, py: Python<'_>) -> PyResult<()> {
        let Some(name) = EVENTS.iter().find(|e| **e == event) else {
            return Err(errors::invalid(format!(
                "unknown event {event:?}: expected one of {}",
                EVENTS.join(", ")
            )));
        };
        if !callback.bind(py).is_callable() {
            return Err(PyTypeError::new_err("on(event, fn): fn must be callable"));
        }
        self.handlers.lock().entry(name).or_default().push(callback);
        Ok(())
    }

    /// What the frame cache holds: `budget` and `bytes`, `frames`, frames
    /// `ahead` of and `behind` the one on screen, and the positions held
    /// in `ram` and on the `device` as (first, last) runs; `None` for a
    /// source without a cache.
    fn cache_info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(info) = self.player()?.cache_info() else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        out.set_item("budget", info.budget)?;
        out.set_item("bytes", info.bytes)?;
        out.set_item("frames", info.frames)?;
        out.set_item("ahead", info.ahead)?;
        out.set_item("behind", info.behind)?;
        out.set_item("ram", info.ram)?;
        out.set_item("device", info.device)?;
        Ok(Some(out))
    }

    /// The picture on screen as drawn: a numpy `uint8` array of shape
    /// (height, width, 4), RGBA, at the player's size.
    fn frame_array<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let player = self.player()?;
        let gpu = Arc::clone(&self.gpu);
        let read = py.detach(
            move || -> Result<Option<(u32, u32, Vec<u8>)>, stagehand_gpu::Error> {
                let Some(texture) = player.texture() else {
                    return Ok(None);
                };
                let pixels = stagehand_play::render::read_texture(&gpu, &texture, 4)?;
                Ok(Some((texture.width(), texture.height(), pixels)))
            },
        );
        let Some((w, h, pixels)) = read.map_err(errors::gpu)? else {
            return Err(errors::raise("PlayerError", "no picture yet"));
        };
        let numpy = py.import("numpy")?;
        let array = numpy.call_method1("frombuffer", (PyBytes::new(py, &pixels), "uint8"))?;
        array.call_method1("reshape", ((h as usize, w as usize, 4usize),))
    }

    /// The picture on screen drawn at `width` x `height` (letterboxed on
    /// black), RGBA rows tightly packed: for an image widget.
    fn frame_bytes<'py>(
        &self,
        py: Python<'py>,
        width: u32,
        height: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let player = self.player()?;
        let gpu = Arc::clone(&self.gpu);
        let reader = &self.reader;
        let pixels = py.detach(
            move || -> Result<Option<Vec<u8>>, stagehand_play::PlayError> {
                let mut reader = reader.lock();
                if reader.is_none() {
                    *reader = Some(PictureReader::new(&gpu, wgpu::TextureFormat::Rgba8Unorm)?);
                }
                let Some(reader) = reader.as_mut() else {
                    unreachable!("made above");
                };
                reader.read(&player, (width, height), |rows, pitch| {
                    let row = width as usize * 4;
                    let mut out = Vec::with_capacity(row * height as usize);
                    for y in 0..height as usize {
                        let start = y * pitch as usize;
                        out.extend_from_slice(&rows[start..start + row]);
                    }
                    out
                })
            },
        );
        let pixels = pixels
            .map_err(errors::play)?
            .ok_or_else(|| errors::raise("GpuError", "the picture could not be read back"))?;
        Ok(PyBytes::new(py, &pixels))
    }

    /// Presents into the X11 window `window_id` (a Qt widget's `winId()`)
    /// on `display` (default: `DISPLAY`); call the returned view's
    /// `present()` once per frame of the host's timer.
    #[pyo3(signature = (window_id, display=None))]
    fn attach_window(
        &self,
        py: Python<'_>,
        window_id: u64,
        display: Option<String>,
    ) -> PyResult<NativeView> {
        let id = u32::try_from(window_id)
            .map_err(|_| errors::invalid(format!("window id {window_id:#x} is not an X11 id")))?;
        let gpu = Arc::clone(&self.gpu);
        let window = py
            .detach(|| NativeWindow::open_x11(&gpu, display.as_deref(), id))
            .map_err(errors::play)?;
        Ok(NativeView {
            player: Arc::downgrade(&self.player()?),
            window: Mutex::new(Some(window)),
        })
    }

    /// Plays the same source in a window of stagehand's own, with its
    /// transport keys, timeline and heads-up display, from the first
    /// frame of the range, until the window is closed (or Q, Esc) or
    /// `seconds` have played; returns that playback's summary. This
    /// player is paused meanwhile. Blocks (without the interpreter); one
    /// window per process (the windowing library allows one event loop).
    #[pyo3(signature = (seconds=None, paused=false, size=(1280, 720)))]
    fn run_window(
        &self,
        py: Python<'_>,
        seconds: Option<f64>,
        paused: bool,
        size: (u32, u32),
    ) -> PyResult<Py<PyAny>> {
        self.player()?.pause();
        let mut options = self.options.clone();
        options.start_paused = paused;
        options.output_size = size;
        if let Some(seconds) = seconds
            && !(seconds.is_finite() && seconds > 0.0 && seconds <= 1e6)
        {
            return Err(errors::invalid(format!(
                "run_window(seconds={seconds}): must be above 0"
            )));
        }
        // Quits after `seconds` of wall time, held frames included (a
        // range that does not loop holds its last frame, ticking on).
        let remote = Remote::new();
        options.remote = Some(remote.clone());
        let (ended, ended_rx) = crossbeam_channel::bounded::<()>(1);
        if let Some(seconds) = seconds {
            let limit = Duration::from_secs_f64(seconds);
            std::thread::Builder::new()
                .name("stagehand window timer".into())
                .spawn(move || {
                    if ended_rx.recv_timeout(limit).is_err() {
                        remote.send(Command::Quit);
                    }
                })
                .map_err(|e| {
                    errors::raise("PlayerError", format!("could not start a timer: {e}"))
                })?;
        }
        let summary = py
            .detach(|| -> Result<PlaySummary, stagehand_play::PlayError> {
                let mut screen = Screen::open(&WindowOptions {
                    size,
                    fullscreen: false,
                    title: "stagehand play".into(),
                    present: options.present,
                })?;
                let gpu = Arc::new(RustGpu::open(&stagehand_gpu::GpuOptions {
                    wanted_features: stagehand_play::wanted_features(),
                    display: Some(screen.display_handle()),
                    ..Default::default()
                })?);
                let engine = UploadEngine::new(Arc::clone(&gpu), engine_config(options.threads))?;
                stagehand_play::play_in(&gpu, &engine, &options, &mut screen, |_| {
                    std::ops::ControlFlow::Continue(())
                })
            })
            .map_err(errors::play);
        drop(ended);
        let summary = summary?;
        summary_dict(py, &summary)
    }

    /// Ends playback and returns its summary (a dict: frames shown,
    /// dropped, late, rates, the cache, sound). Closing twice returns the
    /// same summary.
    fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(summary) = self.summary.lock().as_ref() {
            return Ok(summary.clone_ref(py));
        }
        let Some(player) = self.inner.lock().take() else {
            return Err(errors::raise("ClosedError", "the player is closed"));
        };
        self.reader.lock().take();
        // A view presenting at this moment holds it for that frame.
        let summary = py.detach(move || {
            let mut player = player;
            loop {
                match Arc::try_unwrap(player) {
                    Ok(player) => return player.close(),
                    Err(shared) => player = shared,
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let summary = summary_dict(py, &summary.map_err(errors::play)?)?;
        *self.summary.lock() = Some(summary.clone_ref(py));
        Ok(summary)
    }

    /// The summary: once closed, the whole of it (what `close()`
    /// returned); while open, the summary so far: `frames` (`pushed`,
    /// `shown`, `dropped`, `late`, `failed`, `discarded`, as in the whole
    /// summary), `ticks` run, the upload `bandwidth` in bytes a second,
    /// the `frame` on screen, `playing`, and `cache` (as `cache_info()`).
    fn summary(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(summary) = self.summary.lock().as_ref() {
            return Ok(summary.clone_ref(py));
        }
        let player = self.player()?;
        let status = player.status();
        let progress = player.progress();
        let out = PyDict::new(py);
        let frames = progress.map(|p| p.frames).unwrap_or_default();
        let frames = serde_json::to_value(frames).map_err(|e| errors::invalid(e.to_string()))?;
        out.set_item("frames", json_to_py(py, &frames)?)?;
        out.set_item("ticks", progress.map_or(0, |p| p.tick))?;
        out.set_item("bandwidth", progress.map_or(0.0, |p| p.bandwidth))?;
        out.set_item("frame", status.position)?;
        out.set_item("playing", status.playing)?;
        out.set_item("cache", self.cache_info(py)?)?;
        Ok(out.into_any().unbind())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        if self.inner.lock().is_some() {
            self.close(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match self.inner.lock().as_ref() {
            Some(p) => {
                let s = p.status();
                format!(
                    "<stagehand_gpu.Player frame {} of {}{}>",
                    s.position.map_or("-".into(), |p| p.to_string()),
                    s.len,
                    if s.playing { ", playing" } else { "" }
                )
            }
            None => "<stagehand_gpu.Player closed>".into(),
        }
    }
}

/// A player presented into a native window another toolkit made.
#[pyclass(module = "stagehand_gpu", frozen)]
pub struct NativeView {
    /// Not kept alive by the view: closing the player ends its views.
    player: std::sync::Weak<RustPlayer>,
    window: Mutex<Option<NativeWindow>>,
}

#[pymethods]
impl NativeView {
    /// Draws the frame on screen into the window at `width` x `height`
    /// (its size in physical pixels; `None` asks the X server) and
    /// returns the size drawn.
    #[pyo3(signature = (width=None, height=None))]
    fn present(
        &self,
        py: Python<'_>,
        width: Option<u32>,
        height: Option<u32>,
    ) -> PyResult<(u32, u32)> {
        let size = width.zip(height);
        let Some(player) = self.player.upgrade() else {
            return Err(errors::raise("ClosedError", "the player is closed"));
        };
        let window = &self.window;
        py.detach(|| {
            let mut window = window.lock();
            let Some(window) = window.as_mut() else {
                return Err(stagehand_play::PlayError::NoDisplay(
                    "the view is closed".into(),
                ));
            };
            window.present(&player, size)
        })
        .map_err(errors::play)
    }

    /// Lets go of the window (the toolkit is about to destroy it).
    fn close(&self) {
        self.window.lock().take();
    }
}

/// A transfer function's name, as `transfer` takes and gives it.
fn transfer_name(transfer: stagehand_play::Transfer) -> &'static str {
    match transfer {
        stagehand_play::Transfer::Srgb => "srgb",
        stagehand_play::Transfer::Rec709 => "rec709",
        stagehand_play::Transfer::Linear => "linear",
    }
}

/// `stops` of exposure where it is a number from -32 to 32 (the options'
/// bound), else an invalid argument named by `what`.
fn checked_stops(what: &str, stops: f32) -> PyResult<f32> {
    let most = stagehand_play::options::MAX_EXPOSURE as f32;
    if !(stops.is_finite() && stops.abs() <= most) {
        return Err(errors::invalid(format!(
            "{what}: stops must be from -{most} to {most}"
        )));
    }
    Ok(stops)
}
