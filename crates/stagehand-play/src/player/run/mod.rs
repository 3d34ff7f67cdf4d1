//! The render loop: ticks at the clock's pace, the user's commands (pause,
//! step, seek), and what it measures.

mod present;

use super::output::Output;
use super::{Feed, Picture, Shared, spawn_producer};
use crate::PlayError;
use crate::cache::gpu::GpuCache;
use crate::options::{Mode, PlayOptions, Preroll};
use crate::render::{Display, Renderer};
use crate::samples::{Samples, Timings};
use crate::summary::{PassStats, Progress, Saved, record_pass};
use crate::transport::{Command, Tick};
use stagehand_gpu::Gpu;
use stagehand_gpu::upload::{UploadEngine, WaitReady};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a paused window redraws (its overlay moves on: the cache
/// fills).
pub(super) const PAUSED_REDRAW: Duration = Duration::from_millis(100);
/// The largest offscreen picture a resize asks for, a side (the CLI's
/// bound for `PlayOptions::output_size`).
const MAX_OUTPUT: u32 = 16_384;
/// Longest a seek or a step waits for its frame before showing what it has.
pub(super) const SEEK_WAIT: Duration = Duration::from_secs(10);

/// The render loop's state and measurements.
pub(super) struct Run<'a> {
    pub(super) shared: Arc<Shared>,
    pub(super) feed: &'a Feed,
    pub(super) producer: Option<JoinHandle<Result<(), PlayError>>>,
    pub(super) decoders: Vec<JoinHandle<()>>,
    pub(super) blocked: Timings,
    pub(super) render: Timings,
    pub(super) saved: Vec<Saved>,
    pub(super) passes: Vec<PassStats>,
    pub(super) gpu_cache: Option<GpuCache>,
    /// The tick of the frame on screen and where it comes from.
    pub(super) screen: Option<(Tick, Picture)>,
    /// Ticks run that fell on a gap.
    pub(super) gaps: u64,
    /// Ticks left to the GPU tier past the last tick run.
    pub(super) tier_leftover: u64,
    /// Ticks left to the GPU tier for places a seek left.
    pub(super) tier_discarded: u64,
    /// Milliseconds in the surface's acquire and present calls (a window).
    pub(super) present_calls: Timings,
    /// Milliseconds between successive presents while playing.
    pub(super) intervals: Timings,
    /// The last present while playing; `None` after a pause, step or seek.
    pub(super) last_present: Option<Instant>,
    /// Offscreen: the picture last drawn into the target (`None` before
    /// the first draw).
    pub(super) drawn_offscreen: Option<Option<(Tick, Picture)>>,
    /// The display transform now (exposure keys change it).
    pub(super) display: Option<Display>,
    /// Ticks run so far.
    pub(super) ticks_run: u64,
    /// Milliseconds each presented frame came after its time by the
    /// sound's clock (with sound, realtime).
    pub(super) drift: Samples<(u64, f64)>,
    /// The largest |drift| of all, in milliseconds.
    pub(super) drift_max: f64,
    /// Where the state of playback, its events and the picture's texture
    /// are reported (a [`Player`](crate::Player)'s); `None`: nowhere.
    pub(super) watch: Option<super::watch::Watch>,
}

/// What waiting for a tick ended with.
enum Wake {
    /// Playback ends: the window closed, or the user quit.
    Quit,
    /// Not this tick's time (paused, or woken early): wait again.
    Again,
    /// The tick is due: show it.
    Due,
}

/// What the render loop did.
pub(super) struct Played {
    /// Ticks run.
    pub(super) ticks: u64,
    /// The tick after the last one run: pushes from it on were never due.
    pub(super) next_tick: Tick,
    /// Pre-roll seconds.
    pub(super) preroll: f64,
    /// Frames the cache held when pre-roll ended.
    pub(super) prerolled: u64,
    /// The staging peak of the first second.
    pub(super) first_second_peak: Option<u64>,
}

impl<'a> Run<'a> {
    /// A run of `feed` that has not started: no producer yet, nothing
    /// measured.
    pub(super) fn new(
        shared: Arc<Shared>,
        feed: &'a Feed,
        decoders: Vec<JoinHandle<()>>,
        gpu_cache: Option<GpuCache>,
        display: Option<Display>,
    ) -> Self {
        Self {
            shared,
            feed,
            producer: None,
            decoders,
            blocked: Timings::default(),
            render: Timings::default(),
            saved: Vec::new(),
            passes: Vec::new(),
            gpu_cache,
            screen: None,
            gaps: 0,
            tier_leftover: 0,
            tier_discarded: 0,
            intervals: Timings::default(),
            present_calls: Timings::default(),
            last_present: None,
            drawn_offscreen: None,
            display,
            ticks_run: 0,
            drift: Samples::default(),
            drift_max: 0.0,
            watch: None,
        }
    }
}

impl Drop for Run<'_> {
    /// A run left early (an error, or a panic in the progress callback)
    /// still stops its threads and lets its frames go.
    fn drop(&mut self) {
        if self.producer.is_some() || !self.decoders.is_empty() {
            let _ = self.stop();
        }
    }
}

/// What the loop does after handling the user's commands.
#[derive(PartialEq, Eq)]
pub(super) enum Next {
    Go,
    Quit,
}

/// The pass being counted, and the frames shown before it.
#[derive(Default)]
struct Passes {
    pass: PassStats,
    shown_before: u64,
}

/// What a run's start measures: its pre-roll, when the clock started, and the staging
/// pool's peak over the first second (from then on the pool must not
/// grow, so its peak is measured afresh).
struct Warmup {
    /// Seconds the pre-roll took, and the frames it decoded.
    preroll: f64,
    prerolled: u64,
    start: Instant,
    first_second_peak: Option<u64>,
}

impl Warmup {
    fn sample(&mut self, engine: &UploadEngine) {
        if self.first_second_peak.is_none() && self.start.elapsed() > Duration::from_secs(1) {
            self.first_second_peak = Some(engine.staging_pool().stats().peak_held);
            engine.staging_pool().reset_peaks();
        }
    }
}

impl Run<'_> {
    pub(super) fn play(
        &mut self,
        gpu: &Gpu,
        engine: &UploadEngine,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        options: &PlayOptions,
        progress: &mut impl FnMut(Progress) -> ControlFlow<()>,
    ) -> Result<Played, PlayError> {
        let (mut warmup, mut tick) = self.begin(gpu, renderer, output, options)?;
        let shared = Arc::clone(&self.shared);
        let (mut last_queue_frame, mut passes) = (None, Passes::default());
        let mut heap = crate::heap::Keeper::default();
        while self.ticks_run < shared.total {
            heap.tend();
            if let Some(watch) = &self.watch {
                self.report(watch, false);
            }
            self.check_failed()?;
            match self.await_tick(gpu, renderer, output, &mut tick, options)? {
                Wake::Quit => break,
                Wake::Again => continue,
                Wake::Due => {}
            }
            let Some(pos) = shared.route.position(tick) else {
                if self.past_the_end(output) {
                    break;
                }
                continue;
            };
            let is_frame = self.show_due(
                gpu,
                renderer,
                output,
                tick,
                pos,
                &mut last_queue_frame,
                options,
            )?;
            self.sample(gpu, engine, &shared);
            self.count_tick(&mut passes, tick, pos, is_frame);
            tick = tick.next();
            warmup.sample(engine);
            if self.report_progress(engine, progress).is_break() {
                break;
            }
        }
        if passes.pass.frames > 0 {
            let shown = self.shown();
            self.close_pass(&mut passes.pass, shown - passes.shown_before);
        }
        Ok(Played {
            ticks: self.ticks_run,
            next_tick: tick,
            preroll: warmup.preroll,
            prerolled: warmup.prerolled,
            first_second_peak: warmup.first_second_peak,
        })
    }

    /// The end of a sequence that does not loop: headless, the run is
    /// over (`true`); a window holds the last frame, paused.
    fn past_the_end(&mut self, output: &Output<'_>) -> bool {
        if matches!(output, Output::Offscreen) {
            return true;
        }
        self.shared.clock.pause();
        self.last_present = None;
        false
    }

    /// Tells `progress` how far the run is; whether it asks to stop.
    fn report_progress(
        &self,
        engine: &UploadEngine,
        progress: &mut impl FnMut(Progress) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        progress(Progress {
            tick: self.ticks_run,
            ticks: self.shared.total,
            frames: self.shared.queue.stats(),
            bandwidth: engine.stats().bandwidth,
        })
    }

    /// Pre-rolls, starts the clock and, paused, shows the first frame;
    /// the tick to run next.
    fn begin(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        options: &PlayOptions,
    ) -> Result<(Warmup, Tick), PlayError> {
        let preroll_started = Instant::now();
        let prerolled = self.preroll(options, output)?;
        if !options.start_paused {
            // Paused, the first frame is drawn before the clock starts.
            self.warm_up(gpu, renderer, output)?;
        }
        let warmup = Warmup {
            preroll: preroll_started.elapsed().as_secs_f64(),
            prerolled,
            start: self.shared.clock.start(),
            first_second_peak: None,
        };
        gpu.tracker().reset_peaks();
        if !options.start_paused {
            return Ok((warmup, Tick::ZERO));
        }
        // Show the first frame, then wait for the user.
        self.shared.clock.pause();
        self.show_now(gpu, renderer, output, Tick::ZERO, options)?;
        Ok((warmup, Tick::ZERO.next()))
    }

    /// Shows what is due at `tick` (position `pos`): from the GPU tier
    /// where it holds the frame, else through the frame queue (in
    /// every-frame mode waiting for the frame); then follows the sound.
    /// Returns whether `pos` carries a frame (not a gap).
    #[allow(clippy::too_many_arguments)]
    fn show_due(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: Tick,
        pos: usize,
        last_queue_frame: &mut Option<Tick>,
        options: &PlayOptions,
    ) -> Result<bool, PlayError> {
        let shared = Arc::clone(&self.shared);
        let is_frame = self.is_frame(pos);
        let from_tier = self.tier_tick(tick, output, tier_wait(&shared, tick));
        if is_frame {
            // The frame a gap holds, when it comes through the queue; one
            // the GPU tier showed is there already.
            *last_queue_frame = (!from_tier).then_some(tick);
        }
        if shared.mode == Mode::EveryFrame
            && !from_tier
            && let Some(want) = *last_queue_frame
        {
            self.wait_for(want, output)?;
        }
        if shared.mode == Mode::Realtime && !from_tier && is_frame {
            self.await_landing(tick, output)?;
        }
        let t = match shared.mode {
            Mode::Realtime => shared.clock.now().unwrap_or_default(),
            Mode::EveryFrame => shared.pts(tick),
        };
        self.tick(gpu, renderer, output, tick, t, from_tier, options, true)?;
        if is_frame && shared.has_audio_clock() {
            self.follow_sound(tick, pos);
        }
        Ok(is_frame)
    }

    /// Records how far the frame at `tick` is from the sound's clock, and
    /// lets the producer follow the sound.
    fn follow_sound(&mut self, tick: Tick, pos: usize) {
        let shared = &self.shared;
        let now = shared.clock.now().unwrap_or_default();
        let late = now.as_secs_f64() - shared.pts(tick).as_secs_f64();
        self.drift.push((tick.get(), late * 1e3));
        self.drift_max = self.drift_max.max((late * 1e3).abs());
        if let Some(timeline) = &shared.timeline {
            // The sound's clock beside the frame's own time.
            timeline.counter(
                "a/v sync",
                Instant::now(),
                &[
                    ("sound clock s", now.as_secs_f64()),
                    ("frame time s", shared.pts(tick).as_secs_f64()),
                    ("drift ms", late * 1e3),
                ],
            );
        }
        shared.follow_sound(pos, late);
    }

    /// Counts tick `tick` (position `pos`) into the pass, closing the pass
    /// at the range's last position.
    fn count_tick(&mut self, passes: &mut Passes, tick: Tick, pos: usize, is_frame: bool) {
        passes.pass.frames += u64::from(is_frame);
        passes.pass.uploads += self.uploaded_through(tick);
        self.gaps += u64::from(!is_frame);
        if pos + 1 == self.shared.route.span().1 {
            let shown = self.shown();
            self.close_pass(&mut passes.pass, shown - passes.shown_before);
            passes.shown_before = shown;
        }
    }

    /// Waits for tick `tick`'s time (or, paused, for the user), handling
    /// the window's events and the commands they bring meanwhile (a step or
    /// a seek moves `tick`).
    fn await_tick(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        options: &PlayOptions,
    ) -> Result<Wake, PlayError> {
        let shared = Arc::clone(&self.shared);
        let paused = shared.clock.paused();
        let due = shared.clock.due(shared.pts(*tick));
        let wait = if paused {
            PAUSED_REDRAW
        } else {
            due.saturating_duration_since(Instant::now())
        };
        let mut commands = match output {
            Output::Offscreen => {
                std::thread::sleep(wait);
                Vec::new()
            }
            Output::Window(w) => {
                w.screen.pump(wait);
                if w.screen.closed() {
                    return Ok(Wake::Quit);
                }
                w.screen.take_commands()
            }
        };
        if let Some(remote) = &options.remote {
            commands.extend(remote.take());
        }
        let commands = crate::transport::coalesce(commands);
        for command in commands {
            // Nothing after a quit runs: a seek queued behind Q would only
            // delay the end.
            if self.command(gpu, renderer, output, tick, command, options)? == Next::Quit {
                return Ok(Wake::Quit);
            }
        }
        if shared.clock.paused() {
            self.redraw(gpu, renderer, output)?;
            return Ok(Wake::Again);
        }
        if Instant::now() < shared.clock.due(shared.pts(*tick)) {
            // Woken early by the window: not this tick's time yet.
            return Ok(Wake::Again);
        }
        Ok(Wake::Due)
    }

    /// Carries out one command; returns whether to go on. A step or a seek
    /// shows its frame at once.
    pub(super) fn command(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        command: Command,
        options: &PlayOptions,
    ) -> Result<Next, PlayError> {
        let shared = Arc::clone(&self.shared);
        let (clock, route) = (&shared.clock, &shared.route);
        let (first, end) = route.span();
        let last = end.saturating_sub(1);
        match command {
            Command::Quit => return Ok(Next::Quit),
            Command::TogglePause | Command::Play if clock.paused() => {
                self.resume(gpu, renderer, output, tick, options)?;
            }
            Command::TogglePause | Command::Pause => clock.pause(),
            Command::Play => {}
            Command::Step(n) => self.step(gpu, renderer, output, tick, n, options)?,
            Command::First => self.seek(gpu, renderer, output, tick, first, options)?,
            Command::Last => self.seek(gpu, renderer, output, tick, last, options)?,
            Command::Seek(pos) => {
                self.seek(gpu, renderer, output, tick, pos.clamp(first, last), options)?;
            }
            Command::Range(from, to) => {
                self.set_range(gpu, renderer, output, tick, (from, to), options)?
            }
            Command::ToggleLoop => self.set_looped(!route.looped()),
            Command::Loop(on) => self.set_looped(on),
            Command::Rate(_) | Command::RateTimes(_) => set_rate(clock, command),
            Command::InPoint | Command::OutPoint => {
                let marked = self.marked_range(command == Command::InPoint);
                if let Some(range) = marked {
                    self.set_range(gpu, renderer, output, tick, range, options)?;
                }
            }
            Command::Resize(width, height) => {
                self.resize(gpu, renderer, output, (width, height))?;
            }
            Command::Exposure(_)
            | Command::SetExposure(_)
            | Command::Transfer(_)
            | Command::NextTransfer => {
                self.change_display(gpu, renderer, output, command)?;
            }
            Command::ToggleFullscreen | Command::ToggleHud => toggle_window(output, command),
        }
        if let Output::Window(w) = output {
            // Whatever it changed, the window shows it.
            w.dirty = true;
        }
        Ok(Next::Go)
    }

    /// Loops the range, or not: the route and the cache (which keeps what
    /// a loop will show again) together.
    fn set_looped(&self, on: bool) {
        self.shared.route.set_looped(on);
        if let Feed::Frames { cache, .. } = self.feed {
            cache.set_looped(on);
        }
    }

    /// Plays only positions `first` to `last` from now on: the route's
    /// in and out points; a frame on screen outside them gives way to the
    /// in point's, shown at once.
    fn set_range(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        (first, last): (usize, usize),
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let (first, end) = self.shared.route.set_range(first, last);
        if let Feed::Frames { cache, .. } = self.feed {
            cache.set_range(first, end);
        }
        match self.screen_position() {
            Some(pos) if !(first..end).contains(&pos) => {
                self.seek(gpu, renderer, output, tick, first, options)
            }
            _ => Ok(()),
        }
    }

    /// Runs the clock again: from the start of the range when playback
    /// had run past its end.
    fn resume(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        if self.shared.route.position(*tick).is_none() {
            let first = self.shared.route.span().0;
            self.seek(gpu, renderer, output, tick, first, options)?;
        }
        self.last_present = None;
        self.shared.clock.resume();
        Ok(())
    }

    /// Steps `n` frames (back when negative), paused: the next tick's
    /// frame shown at once when it is the one wanted and was pushed, else
    /// a seek to it.
    fn step(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        n: i64,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        shared.clock.pause();
        let ((first, end), looped) = (shared.route.span(), shared.route.looped());
        let Some(on_screen) = self.screen_position() else {
            if n > 0 && shared.route.position(*tick).is_some() {
                self.show_now(gpu, renderer, output, *tick, options)?;
                *tick = tick.next();
            }
            return Ok(());
        };
        // Steps count within the in and out points.
        let (from, len) = (on_screen.clamp(first, end - 1) - first, end - first);
        if n < 0 {
            let to = first + step_back(from, n.unsigned_abs(), len, looped);
            return self.seek(gpu, renderer, output, tick, to, options);
        }
        if n == 0 {
            return Ok(());
        }
        let wanted = first + step_forward(from, n.unsigned_abs(), len, looped);
        if wanted == on_screen && !looped {
            // The last frame of a range that does not loop stays.
            return Ok(());
        }
        let skipped = shared.counters.skipped.lock().contains(tick);
        match shared.route.position(*tick) {
            // The next tick shows the next frame, and it was pushed (the
            // producer did not skip it as late).
            Some(p) if p == wanted && !skipped => {
                self.show_now(gpu, renderer, output, *tick, options)?;
                *tick = tick.next();
                Ok(())
            }
            _ => self.seek(gpu, renderer, output, tick, wanted, options),
        }
    }

    /// The in and out points once the frame on screen becomes the in
    /// point (`in_point`) or the out point: the other stays where it
    /// leaves a range, else goes to its end of the sequence. `None` before
    /// the first frame.
    fn marked_range(&self, in_point: bool) -> Option<(usize, usize)> {
        let pos = self.screen_position()?;
        let (first, end) = self.shared.route.span();
        let last = end.saturating_sub(1);
        Some(if in_point {
            (pos, if last >= pos { last } else { usize::MAX })
        } else {
            (if first <= pos { first } else { 0 }, pos)
        })
    }

    /// Changes how a scene-linear source is shown (exposure, transfer
    /// function) and draws the picture on screen again with it: offscreen
    /// at once (a paused player's caller sees it); a window, dirtied by
    /// every command, at its next redraw. Display-referred sources have no
    /// transform: nothing changes.
    fn change_display(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        command: Command,
    ) -> Result<(), PlayError> {
        let Some(display) = &mut self.display else {
            return Ok(());
        };
        match command {
            Command::Exposure(stops) => {
                display.exposure = bounded_exposure(display.exposure + stops);
            }
            Command::SetExposure(stops) => display.exposure = bounded_exposure(stops),
            Command::Transfer(transfer) => display.transfer = transfer,
            Command::NextTransfer => display.transfer = display.transfer.next(),
            _ => return Ok(()),
        }
        renderer.set_display(gpu, self.display)?;
        self.drawn_offscreen = None;
        if matches!(output, Output::Offscreen) {
            self.present(gpu, renderer, output, false)?;
        }
        Ok(())
    }

    /// A window asks its windowing system for `size`; offscreen, the
    /// picture is drawn at `size` from now on, at once.
    fn resize(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        (width, height): (u32, u32),
    ) -> Result<(), PlayError> {
        if let Output::Window(w) = output {
            w.screen.request_size((width, height));
            return Ok(());
        }
        let size = (width.clamp(1, MAX_OUTPUT), height.clamp(1, MAX_OUTPUT));
        renderer.set_output_size(gpu, size)?;
        self.drawn_offscreen = None;
        if let Some(watch) = &self.watch {
            watch.set_picture(renderer.output_texture().clone());
        }
        self.present(gpu, renderer, output, false)?;
        Ok(())
    }

    /// Moves playback to position `pos`: a new leg of the route from a
    /// tick past everything pushed, the frames pushed for the old place
    /// let go, the clock set to the new tick's time. Shows the frame at
    /// once (waiting for it, with the clock still).
    pub(super) fn seek(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: &mut Tick,
        pos: usize,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        let start = shared.route.seek(*tick, pos);
        shared.queue.discard_before(start.get());
        if let Some(tier) = &shared.tier {
            tier.handoff.discard_before(start);
        }
        if let Feed::Frames { cache, .. } = self.feed {
            cache.set_playhead(pos);
        }
        *tick = start.next();
        self.show_now(gpu, renderer, output, start, options)
    }

    /// Runs tick `tick` now, out of the clock's order (a step or a seek):
    /// the clock is set to its time, and stands still while its frame
    /// comes. Nothing past the end of the route.
    pub(super) fn show_now(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: Tick,
        options: &PlayOptions,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        let Some(pos) = shared.route.position(tick) else {
            return Ok(());
        };
        let was_paused = shared.clock.paused();
        shared.clock.pause();
        shared.clock.set(shared.pts(tick));
        let deadline = Instant::now() + SEEK_WAIT;
        self.await_decision(tick, output, deadline)?;
        // A step or a seek waits for its frame, wherever it comes from.
        let from_tier = self.tier_tick(tick, output, TierWait::Landed);
        if !from_tier && self.is_frame(pos) {
            self.await_queued(tick, output, deadline)?;
        }
        self.last_present = None;
        self.tick(
            gpu,
            renderer,
            output,
            tick,
            shared.pts(tick),
            from_tier,
            options,
            false,
        )?;
        self.gaps += u64::from(!self.is_frame(pos));
        if !was_paused {
            shared.clock.resume();
        }
        Ok(())
    }

    /// With a GPU tier, waits (until `deadline`) for the producer's word
    /// on tick `tick`: the frame may be on the device already, and then
    /// nothing will come through the queue.
    fn await_decision(
        &mut self,
        tick: Tick,
        output: &mut Output<'_>,
        deadline: Instant,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        let Some(tier) = &shared.tier else {
            return Ok(());
        };
        while !tier
            .handoff
            .wait_decided(tick, Some(Instant::now() + Duration::from_millis(20)))
            && Instant::now() < deadline
        {
            self.check_failed()?;
            if output.closed() {
                break;
            }
        }
        Ok(())
    }

    /// Waits (until `deadline`) for tick `tick`'s frame to land in the
    /// queue. A key pressed meanwhile (another step, Q) is not kept
    /// waiting: what there is shows, and the key runs next.
    fn await_queued(
        &mut self,
        tick: Tick,
        output: &mut Output<'_>,
        deadline: Instant,
    ) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        while shared
            .queue
            .wait_ready(tick.get(), Duration::from_millis(20))
            == WaitReady::TimedOut
            && Instant::now() < deadline
        {
            self.check_failed()?;
            if output.attention() {
                break;
            }
        }
        Ok(())
    }

    /// Tells `watch` the state of playback now (`ended`: for good).
    pub(super) fn report(&self, watch: &super::watch::Watch, ended: bool) {
        let shared = &self.shared;
        let position = self.screen_position();
        watch.update(super::watch::Status {
            position,
            playing: !ended && !shared.clock.paused(),
            len: shared.route.len(),
            range: shared.route.span(),
            looped: shared.route.looped(),
            ended,
            number: position.map(|p| super::number_at(self.feed, p)),
            fps: shared.period.as_secs_f64().recip(),
            rate: shared.clock.rate(),
            display: self.display,
        });
        if !ended {
            watch.look_at_cache();
        }
    }

    /// The sequence position of the frame on screen.
    pub(super) fn screen_position(&self) -> Option<usize> {
        let (tick, _) = self.screen?;
        self.shared.route.position(tick)
    }

    /// Draws the frame on screen again (paused: the overlay moves on, the
    /// window may have been resized or the exposure changed).
    pub(super) fn redraw(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
    ) -> Result<(), PlayError> {
        if let Output::Window(_) = output {
            // Frames whose time has come but which landed late (the end of
            // a range, a pause just after a slow frame) go up now.
            let t = self.shared.clock.now().unwrap_or_default();
            let tick = self.screen.map_or(Tick::ZERO, |(tick, _)| tick);
            self.pick(gpu, renderer, tick, t, false)?;
            self.present(gpu, renderer, output, false)?;
        }
        Ok(())
    }

    /// Frames put on screen so far, from the queue and the GPU tier.
    pub(super) fn shown(&self) -> u64 {
        self.shared.queue.stats().shown + self.gpu_cache.as_ref().map_or(0, |c| c.stats().shown)
    }

    /// Whether the GPU tier shows tick `tick` (the producer left it to the
    /// tier). In every-frame mode it first waits for the producer's word.
    /// `wait`: how long a frame still being uploaded into the tier is
    /// waited for.
    pub(super) fn tier_tick(
        &mut self,
        tick: Tick,
        output: &mut Output<'_>,
        wait: TierWait,
    ) -> bool {
        let producer_gone = self.producer_done();
        let (Some(tier), Some(cache)) = (&self.shared.tier, &mut self.gpu_cache) else {
            return false;
        };
        if self.shared.mode == Mode::EveryFrame && !producer_gone {
            // The user can still stop, pause or seek meanwhile; a producer
            // that has ended (failed) decides nothing more.
            let producer = self.producer.as_ref();
            while !tier
                .handoff
                .wait_decided(tick, Some(Instant::now() + Duration::from_millis(20)))
            {
                if output.attention() || producer.is_none_or(JoinHandle::is_finished) {
                    break;
                }
            }
        }
        let (mine, passed_over) = tier.handoff.take(tick);
        let pos = self.shared.route.position(tick).unwrap_or(0);
        let landed = mine && {
            let textures = cache.textures();
            match wait {
                // Uploads always end; closing the window ends the wait.
                TierWait::Landed => loop {
                    if textures.landed(pos, Duration::from_millis(20)).is_some() {
                        break true;
                    }
                    if !textures.pending(pos) || output.closed() {
                        break false;
                    }
                },
                TierWait::For(time) => textures.landed(pos, time).is_some(),
            }
        };
        cache.count_shown(landed, passed_over + u64::from(mine && !landed));
        landed
    }

    /// The position in the sequence of tick `tick` (0 for a tick the
    /// route no longer knows: it was pushed for a place a seek left).
    pub(super) fn position(&self, tick: Tick) -> usize {
        self.shared.route.position(tick).unwrap_or(0)
    }

    /// The picture for tick `tick`: the GPU tier's, or the frame queue's
    /// at time `t`, never one older than the picture on screen. A frame
    /// newly shown from the queue is kept in the GPU tier, if it has room.
    pub(super) fn pick(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        tick: Tick,
        t: Duration,
        from_tier: bool,
    ) -> Result<(), PlayError> {
        if from_tier {
            let pos = self.position(tick);
            if let Some(cache) = &mut self.gpu_cache {
                // Landed (the tier tick checked): its bind group, made
                // the first time it is shown.
                if cache.prepare(gpu, renderer, pos, Duration::ZERO)? {
                    self.screen = Some((tick, Picture::Tier(pos)));
                }
            }
            return Ok(());
        }
        let Some(p) = self.shared.queue.present(t) else {
            return Ok(());
        };
        let frame = Tick(p.frame);
        if self.screen.is_none_or(|(f, _)| frame > f) {
            self.screen = Some((frame, Picture::Slot(p.slot)));
        }
        Ok(())
    }

    /// The bind group and texture of the picture on screen.
    pub(super) fn picture<'a>(
        &'a self,
        renderer: &'a Renderer,
    ) -> Option<(&'a wgpu::BindGroup, &'a wgpu::Texture)> {
        match self.screen?.1 {
            Picture::Slot(slot) => Some((renderer.slot(slot)?, self.shared.queue.texture(slot))),
            Picture::Tier(pos) => self.gpu_cache.as_ref()?.get(pos).map(|(t, b)| (b, t)),
        }
    }

    /// Uploads for ticks up to `tick`, which the render loop has now
    /// passed, taken off the producer's record.
    fn uploaded_through(&self, tick: Tick) -> u64 {
        let mut uploaded = self.shared.counters.uploaded.lock();
        let later = uploaded.split_off(&tick.next());
        let passed = std::mem::replace(&mut *uploaded, later);
        passed.len() as u64
    }

    pub(super) fn close_pass(&mut self, pass: &mut PassStats, shown: u64) {
        pass.shown = shown.min(pass.frames);
        pass.missed = pass.frames - pass.shown;
        record_pass(&mut self.passes, std::mem::take(pass));
    }

    /// Whether position `pos` carries a frame (not a gap).
    pub(super) fn is_frame(&self, pos: usize) -> bool {
        match self.feed {
            Feed::Synthetic(_) => true,
            Feed::Frames { frames, .. } => !frames.is_gap(pos),
        }
    }

    /// Fills the cache as asked, starts the producer, then waits for the
    /// frame queue's first frames, so start-up costs do not count as late or dropped frames.
    /// Returns the frames the cache held when it ended.
    pub(super) fn preroll(
        &mut self,
        options: &PlayOptions,
        output: &mut Output<'_>,
    ) -> Result<u64, PlayError> {
        let held = self.fill_cache(options, output);
        if output.closed() {
            return Ok(held);
        }
        // The producer starts once the cache is filled: what it fetches
        // from then on are hits.
        self.producer = Some(spawn_producer(&self.shared, self.feed)?);
        self.await_first_frames(options, output)?;
        Ok(held)
    }

    /// Decodes into the cache what `PlayOptions::preroll` asks for, as far as the
    /// cache holds it; the frames it then holds (0 without pre-roll).
    fn fill_cache(&self, options: &PlayOptions, output: &mut Output<'_>) -> u64 {
        let (
            Feed::Frames {
                frames: source,
                cache,
            },
            Some(p),
        ) = (self.feed, options.preroll)
        else {
            return 0;
        };
        let frames = source.len() - source.gaps();
        let want = match p {
            Preroll::Frames(n) => n.min(frames),
            Preroll::All => frames,
        }
        .min(cache.capacity());
        // Ends when `want` frames are held, or nothing more will be
        // decoded (a failed decode is held as its error, and the
        // producer reports it when it reaches that frame).
        while cache.wait_filled(want, Duration::from_millis(50)) < want && !cache.idle() {
            // The window stays alive meanwhile; closing it ends the run.
            if output.closed() {
                break;
            }
        }
        cache.stats().frames
    }

    /// Waits (up to ten seconds) for the frame queue's first frames: as
    /// many as it holds, or as the route has before its end (a start near
    /// the end of a range that does not loop).
    fn await_first_frames(
        &mut self,
        options: &PlayOptions,
        output: &mut Output<'_>,
    ) -> Result<(), PlayError> {
        let first: Vec<usize> = (0..options.depth.min(self.shared.total as usize) as u64)
            .filter_map(|tick| self.shared.route.position(Tick(tick)))
            .filter(|&pos| self.is_frame(pos))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Frames the GPU tier holds come through no queue slot.
            let in_tier = self.shared.tier.as_ref().map_or(0, |tier| {
                let resident = tier.textures.residency();
                first.iter().filter(|&&pos| resident.contains(pos)).count()
            });
            let wanted = first.len() - in_tier;
            if self.shared.queue.preroll(wanted, Duration::from_millis(20)) >= wanted
                || self.producer_done()
                || Instant::now() >= deadline
                || output.closed()
            {
                return Ok(());
            }
            self.check_failed()?;
        }
    }

    pub(super) fn producer_done(&self) -> bool {
        self.producer.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops at once when the producer failed (a corrupt frame, a frame of
    /// another size): the error now, not after the clock has run out.
    pub(super) fn check_failed(&mut self) -> Result<(), PlayError> {
        if self.producer_done()
            && let Some(handle) = self.producer.take()
        {
            handle
                .join()
                .map_err(|panic| PlayError::panicked("producer", panic.as_ref()))??;
        }
        Ok(())
    }

    /// Every-frame mode: waits until frame `tick` has landed (or failed),
    /// with the clock standing still meanwhile (a window's events are
    /// still handled: its commands run at the next tick).
    pub(super) fn wait_for(
        &mut self,
        tick: Tick,
        output: &mut Output<'_>,
    ) -> Result<(), PlayError> {
        let started = Instant::now();
        let slice = match output {
            Output::Offscreen => Duration::from_millis(100),
            Output::Window(_) => Duration::from_millis(20),
        };
        while self.shared.queue.wait_ready(tick.get(), slice) == WaitReady::TimedOut {
            // Wakes now and then to stop at once if the producer failed,
            // and to let the user stop, pause or seek rather than wait.
            self.check_failed()?;
            if output.attention() {
                break;
            }
        }
        self.shared.clock.wait_added(started.elapsed());
        Ok(())
    }

    /// Realtime: while tick `tick`'s frame is on its way (pushed, its
    /// upload not yet ended), waits for it to land, until the next tick is
    /// due. A frame that lands a few milliseconds after its tick is then
    /// shown, late, where before it waited in the queue for the next tick
    /// and was passed over for that tick's frame: an upload held up behind
    /// one draw cost the next frame too.
    fn await_landing(&mut self, tick: Tick, output: &mut Output<'_>) -> Result<(), PlayError> {
        let shared = Arc::clone(&self.shared);
        if shared.clock.paused() {
            return Ok(());
        }
        let until = shared.clock.due(shared.pts(tick.next()));
        while shared.queue.is_coming(tick.get()) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            // In slices, to stop at once if the producer failed and to
            // let the user's commands in.
            let slice = left.min(Duration::from_millis(20));
            if shared.queue.wait_ready(tick.get(), slice) != WaitReady::TimedOut {
                break;
            }
            self.check_failed()?;
            if output.attention() {
                break;
            }
        }
        Ok(())
    }

    /// Runs tick `tick`: picks the picture for time `t`, draws it, and
    /// reads it back if this is a tick to save. `playing`: the tick follows
    /// the one before at the clock's pace (its present interval counts).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tick(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        tick: Tick,
        t: Duration,
        from_tier: bool,
        options: &PlayOptions,
        playing: bool,
    ) -> Result<(), PlayError> {
        let index = self.ticks_run;
        self.ticks_run += 1;
        let t1 = Instant::now();
        self.pick(gpu, renderer, tick, t, from_tier)?;
        let t2 = Instant::now();
        self.present(gpu, renderer, output, playing)?;
        let t3 = Instant::now();
        self.blocked.push((t2 - t1).as_secs_f64() * 1e3);
        self.render.push((t3 - t2).as_secs_f64() * 1e3);
        if let Some(timeline) = &self.shared.timeline {
            timeline.span("render", "present", t1, t2);
            timeline.span("render", "render pass", t2, t3);
        }
        if options.save_ticks.contains(&index) {
            self.save(gpu, renderer, output, index)?;
        }
        Ok(())
    }

    pub(super) fn sample(&self, gpu: &Gpu, engine: &UploadEngine, shared: &Shared) {
        let Some(timeline) = &shared.timeline else {
            return;
        };
        let staging = engine.staging_pool().stats().held as f64;
        let textures = gpu
            .tracker()
            .stats(stagehand_gpu::ObjectKind::Texture)
            .bytes as f64;
        let mut counters = vec![("staging pool", staging), ("textures", textures)];
        if let Feed::Frames { cache, .. } = self.feed {
            counters.push(("frame cache", cache.stats().bytes as f64));
        }
        timeline.counter("memory", Instant::now(), &counters);
    }

    /// Ends the run: the queue closes (a producer waiting for a slot
    /// stops), the cache closes (decoders stop, its memory goes back),
    /// every thread is joined. Returns the queue's final numbers, or the
    /// producer's error if it failed.
    pub(super) fn stop(&mut self) -> Result<stagehand_gpu::upload::FrameStats, PlayError> {
        self.shared.route.close();
        self.shared.queue.close();
        if let Feed::Frames { cache, .. } = self.feed {
            cache.close();
        }
        if let Some(tier) = &self.shared.tier {
            // Ticks left to the tier that the loop never reached lie past
            // its last tick.
            self.tier_leftover = tier.handoff.close();
            self.tier_discarded = tier.handoff.discarded();
        }
        let produced = match self.producer.take() {
            Some(handle) => handle
                .join()
                .map_err(|panic| PlayError::panicked("producer", panic.as_ref()))
                .and_then(|r| r),
            None => Ok(()),
        };
        for d in self.decoders.drain(..) {
            let _ = d.join();
        }
        let mut frames = self.shared.queue.finish();
        if let Some(cache) = &self.gpu_cache {
            // Frames the tier showed count as shown; tier ticks the loop
            // passed over (or never reached), as dropped.
            let tier = cache.stats();
            frames.shown += tier.shown;
            frames.dropped += tier.passed_over;
        }
        produced.map(|()| frames)
    }
}

/// How long the GPU tier may wait for tick `tick`'s frame: in
/// every-frame mode until it lands; in realtime, a frame still on its way
/// into the tier may land late, within its period, as a frame-queue frame
/// may.
fn tier_wait(shared: &Shared, tick: Tick) -> TierWait {
    match shared.mode {
        Mode::EveryFrame => TierWait::Landed,
        Mode::Realtime => {
            let end = shared.pts(tick) + shared.period;
            let now = shared.clock.now().unwrap_or_default();
            TierWait::For(end.saturating_sub(now).min(shared.period))
        }
    }
}

/// How long the render loop waits for a frame still on its way into the
/// GPU tier.
#[derive(Clone, Copy, Debug)]
pub(super) enum TierWait {
    /// Until it lands (every-frame mode, a step, a seek).
    Landed,
    /// At most this long (realtime: what is left of its period).
    For(Duration),
}

/// `stops` of exposure within the bound the options take (not a number:
/// none).
fn bounded_exposure(stops: f32) -> f32 {
    let max = crate::options::MAX_EXPOSURE as f32;
    if stops.is_nan() {
        return 0.0;
    }
    stops.clamp(-max, max)
}

/// Sets the clock's rate as a rate command asks: to a rate, or times the
/// rate now; bounded, and a value that is not a number left out.
fn set_rate(clock: &super::clock::Clock, command: Command) {
    let wanted = match command {
        Command::Rate(rate) => rate,
        Command::RateTimes(k) => clock.rate() * k,
        _ => return,
    };
    if let Some(rate) = crate::transport::bounded_rate(wanted) {
        clock.set_rate(rate);
    }
}

/// Fullscreen or the heads-up display on or off, in a window (offscreen:
/// nothing).
fn toggle_window(output: &mut Output<'_>, command: Command) {
    let Output::Window(w) = output else {
        return;
    };
    match command {
        Command::ToggleFullscreen => w.screen.toggle_fullscreen(),
        Command::ToggleHud => {
            w.hud = !w.hud;
            w.text_at = None;
            w.lines.clear();
        }
        _ => {}
    }
}

/// The position `ahead` frames after `from` in a range of `len`: around
/// the end when looping, else no further than the last frame.
fn step_forward(from: usize, ahead: u64, len: usize, looped: bool) -> usize {
    let ahead = usize::try_from(ahead).unwrap_or(usize::MAX);
    if looped {
        (from + ahead % len) % len
    } else {
        from.saturating_add(ahead).min(len.saturating_sub(1))
    }
}

/// The position `back` frames before `from` in a range of `len`: around
/// the start when looping, else no further than the first frame.
fn step_back(from: usize, back: u64, len: usize, looped: bool) -> usize {
    let back = usize::try_from(back).unwrap_or(usize::MAX).min(len);
    if from >= back {
        from - back
    } else if looped {
        len - (back - from)
    } else {
        0
    }
}

#[cfg(test)]
mod step_tests {
    use super::{step_back, step_forward};

    #[test]
    fn steps_wrap_around_a_looped_range_and_stop_at_the_ends_of_one_that_does_not() {
        assert_eq!(step_forward(3, 1, 10, false), 4);
        assert_eq!(step_forward(9, 1, 10, false), 9, "the last frame stays");
        assert_eq!(step_forward(8, 5, 10, false), 9, "past the end: the last");
        assert_eq!(step_forward(9, 1, 10, true), 0);
        assert_eq!(step_forward(8, 25, 10, true), 3);
        assert_eq!(step_forward(0, u64::MAX, 10, false), 9);
        assert_eq!(step_back(3, 1, 10, false), 2);
        assert_eq!(step_back(0, 1, 10, false), 0, "the first frame stays");
        assert_eq!(step_back(2, 5, 10, false), 0);
        assert_eq!(step_back(0, 1, 10, true), 9);
        assert_eq!(step_back(2, 5, 10, true), 7);
        assert_eq!(step_back(2, u64::MAX, 10, true), 2, "a whole turn or more");
    }
}
