//! [`Player`]: playback an application drives and draws where it likes.
//!
//! Opening starts everything a player runs (decoders, the frame cache, the
//! producer, sound, and the player's own render loop on a thread of its
//! own, keeping its clock) and returns once the first frame is drawn. The
//! caller then commands it (play, pause, seek, step, loop, exposure, the
//! picture's size), asks it (the state now), hears from it (events through
//! a channel) and draws its picture into any texture the caller owns, from
//! the caller's render thread, in the caller's command encoder. Commands
//! never wait on the player's threads: they are queued and run between the
//! player's ticks.

use super::watch::{CacheInfo, Event, Status, Watch};
use crate::render::blit::Blit;
use crate::transport::{Command, Remote};
use crate::{PlayError, PlayOptions, PlaySummary};
use crossbeam_channel::Receiver;
use parking_lot::Mutex;
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::UploadEngine;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest opening waits for the first frame (a long pre-roll, a slow
/// first decode) before it gives up.
const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

/// A player an application drives: opened on a source, commanded
/// (play, pause, seek, step, loop, exposure, size), asked (its status, its
/// cache), heard from (events through a channel), and drawn into the
/// caller's own textures. Its clock and its render loop run on threads of
/// its own; commands are queued and never wait on them.
pub struct Player {
    gpu: Arc<Gpu>,
    remote: Remote,
    watch: Watch,
    events: Receiver<Event>,
    /// The render loop's thread; `None` once joined.
    thread: Option<JoinHandle<Result<PlaySummary, PlayError>>>,
    /// One blit per target format the caller has drawn into.
    blits: Mutex<Vec<Blit>>,
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Player")
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Player {
    /// Opens `options.source` (or synthetic frames) and starts playing it
    /// offscreen at `options.output_size`, paused on the first frame when
    /// `options.start_paused`. Returns once the first frame is drawn; a
    /// source or an option that cannot play is its typed error.
    /// `options.remote` is the player's own.
    pub fn open(
        gpu: &Arc<Gpu>,
        engine: &Arc<UploadEngine>,
        mut options: PlayOptions,
    ) -> Result<Self, PlayError> {
        options.validate()?;
        let remote = Remote::new();
        let (watch, events) = Watch::new();
        options.remote = Some(remote.clone());
        let thread = {
            let (gpu, engine) = (Arc::clone(gpu), Arc::clone(engine));
            let watch = watch.clone();
            std::thread::Builder::new()
                .name("stagehand player".into())
                .spawn(move || {
                    super::play_watched(&gpu, &engine, &options, &watch, |p| {
                        watch.set_progress(p);
                        ControlFlow::Continue(())
                    })
                })
                .map_err(|cause| PlayError::Spawn {
                    thread: "player",
                    cause,
                })?
        };
        let mut player = Self {
            gpu: Arc::clone(gpu),
            remote,
            watch,
            events,
            thread: Some(thread),
            blits: Mutex::new(Vec::new()),
        };
        let opened = player
            .watch
            .wait(OPEN_TIMEOUT, |s| s.position.is_some() || s.ended);
        if player.watch.status().position.is_none() {
            // It failed (its error is the thread's), or is still opening.
            player.remote.send(Command::Quit);
            return Err(match player.join() {
                Err(e) => e,
                Ok(_) if !opened => PlayError::Thread(format!(
                    "the first frame did not come within {} s",
                    OPEN_TIMEOUT.as_secs()
                )),
                Ok(_) => PlayError::Thread("playback ended before any frame".into()),
            });
        }
        Ok(player)
    }

    /// Runs the clock (from the first frame again at the end of a range
    /// that does not loop).
    pub fn play(&self) {
        self.remote.send(Command::Play);
    }

    /// Stops the clock on the frame on screen.
    pub fn pause(&self) {
        self.remote.send(Command::Pause);
    }

    /// Shows `position` of the range (clamped to its last), pausing.
    pub fn seek(&self, position: usize) {
        self.remote.send(Command::Seek(position));
    }

    /// Steps `n` frames forward (or back, negative), pausing.
    pub fn step(&self, n: i64) {
        self.remote.send(Command::Step(n));
    }

    /// Loops the range, or not.
    pub fn set_looped(&self, on: bool) {
        self.remote.send(Command::Loop(on));
    }

    /// Plays only positions `first` to `last` of the range (in and out
    /// points, both played; clamped to it): loops wrap from `last` to
    /// `first`, seeks, steps and the first and last frames stay inside.
    /// A frame on screen outside them gives way to `first`'s.
    pub fn set_range(&self, first: usize, last: usize) {
        self.remote.send(Command::Range(first, last));
    }

    /// Plays the whole range again (no in and out points).
    pub fn clear_range(&self) {
        self.remote.send(Command::Range(0, usize::MAX));
    }

    /// Makes the frame on screen the in point (the out point stays where
    /// it still follows it, else the range runs to the end).
    pub fn mark_in(&self) {
        self.remote.send(Command::InPoint);
    }

    /// Makes the frame on screen the out point (the in point stays where
    /// it still comes before it, else the range starts at the first
    /// frame).
    pub fn mark_out(&self) {
        self.remote.send(Command::OutPoint);
    }

    /// Changes the exposure of scene-linear sources by `stops`.
    pub fn expose(&self, stops: f32) {
        self.remote.send(Command::Exposure(stops));
    }

    /// Sets the exposure of scene-linear sources to `stops` (clamped to
    /// the options' bound).
    pub fn set_exposure(&self, stops: f32) {
        self.remote.send(Command::SetExposure(stops));
    }

    /// Shows scene-linear sources through `transfer` (display-referred
    /// sources are drawn as they are).
    pub fn set_transfer(&self, transfer: crate::render::Transfer) {
        self.remote.send(Command::Transfer(transfer));
    }

    /// Plays at `rate` times the frame rate from now on, from the frame on
    /// screen (clamped to [`MIN_RATE`](crate::transport::MIN_RATE) to
    /// [`MAX_RATE`](crate::transport::MAX_RATE); not a number: ignored).
    /// Sound plays at 1 only, and is silent at any other rate.
    pub fn set_rate(&self, rate: f64) {
        self.remote.send(Command::Rate(rate));
    }

    /// Draws the picture at `width` x `height` from now on (what
    /// [`texture`](Self::texture) holds; [`draw`](Self::draw) scales it
    /// to any viewport all the same).
    pub fn resize(&self, width: u32, height: u32) {
        self.remote.send(Command::Resize(width, height));
    }

    /// Sends any transport command.
    pub fn command(&self, command: Command) {
        self.remote.send(command);
    }

    /// The state of playback now.
    pub fn status(&self) -> Status {
        self.watch.status()
    }

    /// The position on screen in the range.
    pub fn position(&self) -> Option<usize> {
        self.status().position
    }

    /// Whether the clock runs.
    pub fn is_playing(&self) -> bool {
        self.status().playing
    }

    /// What the frame cache holds now (budget and bytes, frames ahead and
    /// behind the one on screen, the positions held in RAM and on the
    /// device); `None` for synthetic frames.
    pub fn cache_info(&self) -> Option<CacheInfo> {
        self.watch.cache_info()
    }

    /// The summary so far: ticks run, frames pushed, shown, dropped and
    /// late, the upload bandwidth, as of the render loop's latest tick;
    /// `None` before its first. [`close`](Self::close) returns the whole
    /// summary.
    pub fn progress(&self) -> Option<crate::Progress> {
        self.watch.progress()
    }

    /// The events, as they happen: frame changed, play started and
    /// stopped, ended, error. The receiver can be cloned and handed to
    /// another thread (one that forwards the events to a toolkit's loop).
    /// A caller need not read them: past
    /// [`EVENT_QUEUE`](crate::EVENT_QUEUE) unread events the oldest
    /// go, counted in [`events_lost`](Self::events_lost).
    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    /// Events let go unread because [`EVENT_QUEUE`](crate::EVENT_QUEUE)
    /// of them were waiting.
    pub fn events_lost(&self) -> u64 {
        self.watch.events_lost()
    }

    /// Waits up to `timeout` for `until` to hold of the status (a seek to
    /// land, say); whether it does.
    pub fn wait(&self, timeout: Duration, until: impl Fn(&Status) -> bool) -> bool {
        self.watch.wait(timeout, until)
    }

    /// The texture the picture is drawn into (`Rgba8Unorm`, the size last
    /// asked for), for the caller's own pass. Replaced by a resize.
    pub fn texture(&self) -> Option<wgpu::Texture> {
        self.watch.picture()
    }

    /// Records into `encoder` a pass drawing the picture on screen into
    /// `view` (a texture of `format`, which the caller owns: its window's
    /// surface texture, a widget's target) at `viewport` (x, y, width,
    /// height in pixels). What the pass shows is the frame due when the
    /// caller submits, give or take the frame being drawn.
    pub fn draw(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        view: &wgpu::TextureView,
        format: wgpu::TextureFormat,
        viewport: (f32, f32, f32, f32),
    ) -> Result<(), PlayError> {
        let Some(picture) = self.watch.picture() else {
            return Ok(());
        };
        let mut blits = self.blits.lock();
        let at = match blits.iter().position(|b| b.format() == format) {
            Some(at) => at,
            None => {
                blits.push(Blit::new(&self.gpu, format)?);
                blits.len() - 1
            }
        };
        blits[at].draw(&self.gpu, encoder, &picture, view, viewport)?;
        Ok(())
    }

    /// Ends playback and returns what happened.
    pub fn close(mut self) -> Result<PlaySummary, PlayError> {
        self.remote.send(Command::Quit);
        self.join()
    }

    fn join(&mut self) -> Result<PlaySummary, PlayError> {
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|panic| PlayError::panicked("player", panic.as_ref()))?,
            None => Err(PlayError::Closed),
        }
    }
}

impl Drop for Player {
    /// Ends playback and waits for the player's threads.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.remote.send(Command::Quit);
            let _ = self.join();
        }
    }
}
