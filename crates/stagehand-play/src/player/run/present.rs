//! How the render loop shows a frame: drawn offscreen or into the
//! window with its overlay (the timeline and the heads-up display), and
//! saved where asked.

use super::Run;
use crate::PlayError;
use crate::convert::format;
use crate::player::output::{
    CELLS_EVERY, OVERLAY_ALONE_EVERY, Output, TEXT_EVERY, Windowed, timecode,
};
use crate::player::{Feed, number_at};
use crate::render::Frame;
use crate::render::overlay::timeline_texels;
use crate::render::{Renderer, read_texture};
use crate::source::Gaps;
use crate::summary::{Millis, Saved};
use stagehand_gpu::Gpu;
use stagehand_gpu::diag::human_bytes;
use std::time::{Duration, Instant};

impl Run<'_> {
    /// Draws the picture on screen into the output and presents it.
    /// `playing`: counts the interval since the last present.
    pub(super) fn present(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        playing: bool,
    ) -> Result<(), PlayError> {
        let presented = match output {
            Output::Offscreen => {
                // The target holds the picture on screen already: drawing
                // it again would take the CPU (on a software adapter) from
                // the frames still to come, as in a window.
                if self.drawn_offscreen == Some(self.screen) {
                    return Ok(());
                }
                self.drawn_offscreen = Some(self.screen);
                renderer.draw(gpu, self.frame(renderer))?;
                Some(Instant::now())
            }
            Output::Window(w) => match self.present_window(gpu, renderer, w)? {
                Shown::Nothing => return Ok(()),
                Shown::Hidden => None,
                Shown::At(now) => {
                    if playing {
                        w.count_present(now);
                    }
                    Some(now)
                }
            },
        };
        match (playing, presented) {
            (true, Some(now)) => {
                if let Some(last) = self.last_present {
                    self.intervals.push((now - last).as_secs_f64() * 1e3);
                }
                self.last_present = Some(now);
            }
            (true, None) => {}
            (false, _) => self.last_present = None,
        }
        Ok(())
    }

    /// Draws into the window, where there is anything new to show: another
    /// frame is on screen, the window was dirtied or went stale, or the
    /// overlay changed (while playing, an overlay change waits for the
    /// next frame to carry it, up to [`OVERLAY_ALONE_EVERY`]). Nothing new
    /// (the next frame is late, or playback is paused): no draw and no
    /// present; on a software adapter a present costs the render thread
    /// most of a frame period, which the frames still to come need more.
    fn present_window(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        w: &mut Windowed<'_>,
    ) -> Result<Shown, PlayError> {
        w.overlay_pending |= self.update_overlay(gpu, w)?;
        let now = Instant::now();
        if !needs_draw(w, self.screen, self.shared.clock.paused(), now) {
            return Ok(Shown::Nothing);
        }
        w.dirty = false;
        w.overlay_pending = false;
        w.drawn = self.screen;
        w.drawn_at = Some(now);
        let shown = if w.screen.puts() {
            self.put(gpu, renderer, w)?
        } else {
            self.present_surface(gpu, renderer, w)?
        };
        Ok(match shown {
            // Minimised or occluded: nothing drawn, the clock goes on;
            // drawn as soon as it can be.
            None => {
                w.dirty = true;
                Shown::Hidden
            }
            Some(now) => Shown::At(now),
        })
    }

    /// Draws into the window's next surface texture and presents it; when
    /// it was presented (`None`: there was nothing to draw into).
    fn present_surface(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        w: &mut Windowed<'_>,
    ) -> Result<Option<Instant>, PlayError> {
        let picture = self.frame(renderer);
        let acquiring = Instant::now();
        let acquired = w.screen.acquire(gpu);
        let acquire = acquiring.elapsed();
        let Some(frame) = acquired else {
            return Ok(None);
        };
        let view = frame.texture.create_view(&wgpu::TextureViewDescriptor {
            format: Some(renderer.format()),
            ..Default::default()
        });
        let size = (frame.texture.width(), frame.texture.height());
        let drawn = renderer.draw_to(gpu, Some((&view, size)), picture, Some((&w.overlay, w.hud)));
        if let Err(e) = drawn {
            // The window was resized again after the surface was
            // configured: a swapchain that follows the window (lavapipe's
            // on X11) gave an image of the new size, and a draw laid out
            // for the configured one fails validation. Not presented; the
            // surface is configured afresh for the next frame. Any other
            // failure ends playback.
            w.screen.pump(Duration::ZERO);
            if w.screen.size() == size {
                return Err(e.into());
            }
            w.screen.mark_stale();
            return Ok(None);
        }
        let presenting = Instant::now();
        gpu.queue().present(frame);
        let now = Instant::now();
        self.present_calls
            .push((acquire + (now - presenting)).as_secs_f64() * 1e3);
        Ok(Some(now))
    }

    /// Draws into the offscreen target at the window's size and copies it
    /// into the window ([`Screen::put`](crate::window::Screen)); when it
    /// was shown (`None`: it was not).
    fn put(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        w: &mut Windowed<'_>,
    ) -> Result<Option<Instant>, PlayError> {
        if !w.screen.drawable() {
            return Ok(None);
        }
        let size = w.screen.size();
        renderer.set_output_size(gpu, size)?;
        renderer.draw_to(gpu, None, self.frame(renderer), Some((&w.overlay, w.hud)))?;
        let putting = Instant::now();
        let screen = &mut w.screen;
        let shown = match screen.put_texture(gpu, renderer.output()) {
            Some(shown) => Some(shown),
            None => renderer.read_output(gpu, |pixels, pitch| screen.put(pixels, pitch, size.1))?,
        };
        let now = Instant::now();
        self.present_calls.push((now - putting).as_secs_f64() * 1e3);
        Ok((shown == Some(true)).then_some(now))
    }

    /// Reads back what tick `index` drew: headless, the target; in a
    /// window, the same draw (overlay and all) into a target of the
    /// window's size.
    pub(super) fn save(
        &mut self,
        gpu: &Gpu,
        renderer: &mut Renderer,
        output: &mut Output<'_>,
        index: u64,
    ) -> Result<(), PlayError> {
        if let Output::Window(w) = output {
            let size = w.screen.size();
            renderer.set_output_size(gpu, (size.0.max(1), size.1.max(1)))?;
            renderer.draw_to(gpu, None, self.frame(renderer), Some((&w.overlay, w.hud)))?;
        }
        let (w, h, rgba) = renderer.read_back(gpu)?;
        let texel = format::texel_bytes(self.shared.texture) as u32;
        let texels = match self.picture(renderer) {
            Some((_, texture)) => read_texture(gpu, texture, texel)?,
            None => Vec::new(),
        };
        self.saved.push(Saved {
            tick: index,
            frame: self.screen.map(|(f, _)| f.get()),
            position: self.screen_position(),
            size: (w, h),
            rgba,
            texels,
        });
        Ok(())
    }

    /// Draws once into the offscreen target, with the pipelines a frame in
    /// this output is drawn with (a frame-queue slot's picture, and a
    /// window's overlay), and waits for it: a software rasteriser compiles
    /// a pipeline's code the first time it draws with it (about 100 ms
    /// for a Y'CbCr picture on lavapipe, measured), which would otherwise
    /// fall on the first ticks the clock counts. What it draws is thrown
    /// away; the first tick draws over it.
    pub(super) fn warm_up(
        &self,
        gpu: &Gpu,
        renderer: &Renderer,
        output: &Output<'_>,
    ) -> Result<(), PlayError> {
        let Some(bind) = renderer.slot(0) else {
            return Ok(());
        };
        let overlay = match output {
            Output::Window(w) => Some((&w.overlay, w.hud)),
            Output::Offscreen => None,
        };
        // No tick is named so: nothing drawn later takes this for its
        // picture.
        let frame = Frame { bind, id: u64::MAX };
        renderer.draw_to(gpu, None, Some(frame), overlay)?;
        let _ = gpu.device().poll(wgpu::PollType::wait_indefinitely());
        Ok(())
    }

    /// The picture on screen as the renderer draws it, named by its tick
    /// (each tick's picture is its own: a tick is never pushed twice).
    fn frame<'a>(&'a self, renderer: &'a Renderer) -> Option<Frame<'a>> {
        let (tick, _) = self.screen?;
        let (bind, _) = self.picture(renderer)?;
        Some(Frame {
            bind,
            id: tick.get(),
        })
    }

    /// Brings the overlay up to date: the timeline's cells (now and then),
    /// the playhead, and the heads-up display's text.
    /// Whether anything it shows changed.
    pub(super) fn update_overlay(
        &self,
        gpu: &Gpu,
        w: &mut Windowed<'_>,
    ) -> Result<bool, PlayError> {
        let now = Instant::now();
        let len = self.shared.route.len();
        let mut changed = false;
        if w.cells_at.is_none_or(|at| now - at >= CELLS_EVERY) {
            w.cells_at = Some(now);
            let mut held = Vec::new();
            let mut gaps = &Gaps::NONE;
            if let Feed::Frames { frames, cache } = self.feed {
                cache.held_positions(|pos| held.push(pos));
                gaps = frames.gap_runs();
            }
            let on_device = self
                .shared
                .tier
                .as_ref()
                .map_or_else(Vec::new, |tier| tier.textures.residency().positions());
            let cells = timeline_texels(len, gaps, &held, &on_device);
            changed |= cells != w.cells;
            w.cells = cells;
        }
        let playhead = self.screen_position();
        if changed || playhead != w.playhead {
            w.playhead = playhead;
            w.overlay
                .set_timeline_texels(gpu, &w.cells, len, playhead)?;
            changed = true;
        }
        changed |= w.overlay.set_range(self.shared.route.span());
        if w.hud && w.text_at.is_none_or(|at| now - at >= TEXT_EVERY) {
            w.text_at = Some(now);
            let lines = self.hud_lines(w);
            if lines != w.lines {
                let scale = if w.screen.size().0 >= 1280 { 2 } else { 1 };
                w.overlay.set_text(gpu, &lines, scale)?;
                w.lines = lines;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// The heads-up display's lines: where playback is, how it goes,
    /// what the caches hold, the uploads' latency, the display.
    pub(super) fn hud_lines(&self, w: &Windowed<'_>) -> Vec<String> {
        let mut lines = self.playback_lines(w).to_vec();
        lines.extend(self.cache_lines());
        let latency = {
            let l = self.shared.counters.latencies.lock();
            Millis::of(l.recent.iter().copied().collect())
        };
        lines.push(format!(
            "upload latency p50 {:.1} ms  p99 {:.1} ms",
            latency.p50, latency.p99
        ));
        if let Some(d) = &self.display {
            lines.push(format!("{:?}, exposure {:+.1}", d.transfer, d.exposure));
        }
        lines
    }

    /// The frame on screen, the transport's state and rate, the frames
    /// lost.
    fn playback_lines(&self, w: &Windowed<'_>) -> [String; 3] {
        let shared = &self.shared;
        let len = shared.route.len();
        let fps = shared.period.as_secs_f64().recip();
        let stats = shared.queue.stats();
        let state = if shared.clock.paused() {
            "paused"
        } else {
            "playing"
        };
        let looped = if shared.route.looped() {
            "loop on"
        } else {
            "loop off"
        };
        let frame = match self.screen_position() {
            Some(p) => format!(
                "frame {} ({}/{})  {}",
                number_at(self.feed, p),
                p + 1,
                len,
                timecode(p as u64, fps)
            ),
            None => format!("frame -  (-/{len})"),
        };
        [
            frame,
            format!(
                "{state}, {looped}{}  fps {:.2} of {:.2}",
                in_and_out(shared.route.span(), len),
                w.presents.len(),
                fps * shared.clock.rate()
            ),
            format!(
                "dropped {}  late {}  failed {}",
                stats.dropped, stats.late, stats.failed
            ),
        ]
    }

    /// What the frame cache and the GPU tier hold.
    fn cache_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Feed::Frames { cache, .. } = self.feed {
            let c = cache.stats();
            lines.push(format!(
                "cache {} frames, {} of {}",
                c.frames,
                human_bytes(c.bytes),
                human_bytes(c.budget)
            ));
        }
        if let Some(g) = &self.gpu_cache {
            let g = g.stats();
            lines.push(format!(
                "gpu cache {} frames, {}",
                g.frames,
                human_bytes(g.bytes)
            ));
        }
        lines
    }
}

/// The heads-up display's words for in and out points `(first, end)`
/// of `len` positions (numbered from 1, as its frame line): nothing for
/// the whole sequence.
fn in_and_out((first, end): (usize, usize), len: usize) -> String {
    if (first, end) == (0, len) {
        return String::new();
    }
    format!(", in {} out {}", first + 1, end)
}

/// Whether the window needs drawing now: see [`draw_due`].
fn needs_draw(
    w: &Windowed<'_>,
    screen: Option<(crate::transport::Tick, crate::player::Picture)>,
    paused: bool,
    now: Instant,
) -> bool {
    draw_due(
        w.drawn != screen,
        w.dirty || w.screen.stale(),
        w.overlay_pending,
        paused,
        w.drawn_at.map(|at| now.saturating_duration_since(at)),
    )
}

/// Whether a window is drawn now: for a new picture, when something
/// forces it (a resize, a setting), and for an overlay change alone when
/// paused or once [`OVERLAY_ALONE_EVERY`] has passed since the last draw
/// (`since_draw`; `None`: never drawn).
fn draw_due(
    new_picture: bool,
    forced: bool,
    overlay_pending: bool,
    paused: bool,
    since_draw: Option<Duration>,
) -> bool {
    let overlay_alone =
        overlay_pending && (paused || since_draw.is_none_or(|d| d >= OVERLAY_ALONE_EVERY));
    new_picture || forced || overlay_alone
}

/// What a window's present did.
enum Shown {
    /// Nothing new to show: not drawn.
    Nothing,
    /// Minimised or occluded: nothing could be drawn.
    Hidden,
    /// Presented at this time.
    At(Instant),
}

#[cfg(test)]
mod tests {
    use super::{OVERLAY_ALONE_EVERY, draw_due};
    use std::time::Duration;

    #[test]
    fn while_playing_an_overlay_change_alone_waits_for_the_next_frame_up_to_a_bound() {
        let soon = Some(Duration::from_millis(40));
        let later = Some(OVERLAY_ALONE_EVERY);
        // A new frame is always drawn, and carries the overlay with it.
        assert!(draw_due(true, false, false, false, soon));
        assert!(draw_due(true, false, true, false, soon));
        // The timeline moved on while the frame on screen stayed: not
        // drawn again for it alone, until the bound.
        assert!(!draw_due(false, false, true, false, soon));
        assert!(draw_due(false, false, true, false, later));
        // Paused, an overlay change is drawn at once; nothing new, nothing.
        assert!(draw_due(false, false, true, true, soon));
        assert!(!draw_due(false, false, false, true, later));
        assert!(!draw_due(false, false, false, false, later));
        // A resize or a setting forces a draw; so does a first draw.
        assert!(draw_due(false, true, false, false, soon));
        assert!(draw_due(false, false, true, false, None));
    }
}
