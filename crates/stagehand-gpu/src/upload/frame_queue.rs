//! [`FrameQueue`]: a few streamed resources (textures on wgpu, buffers on
//! any backend) holding uploaded frames with their presentation times, so a
//! player shows the right frame at the right time.

use super::error::UploadError;
use super::frame_slot::FrameSlot;
use super::future::{Upload, UploadStatus};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a frame queue is built. Defaults are starting points, not tuned values.
#[derive(Clone, Copy, Debug)]
pub struct FrameQueueConfig {
    /// Textures in the ring: one on screen, the rest filling or ready. At
    /// least 2; default 3.
    pub depth: usize,
    /// Staging buffers per slot; default 1 (each slot fills one frame at a time).
    pub staging_buffers: usize,
    /// Rows per copy submission, for texture slots. Slots are never on
    /// screen while they fill, so splitting is safe here; default 128 rows.
    pub rows_per_submit: Option<u32>,
    /// How long a frame stays on screen; shown later than its time plus
    /// this, it counts as late.
    pub frame_duration: Duration,
}

impl Default for FrameQueueConfig {
    fn default() -> Self {
        Self {
            depth: 3,
            staging_buffers: 1,
            rows_per_submit: Some(128),
            frame_duration: Duration::from_secs(1) / 24,
        }
    }
}

/// What a frame queue has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameStats {
    /// Frames pushed.
    pub pushed: u64,
    /// Frames put on screen.
    pub shown: u64,
    /// Frames never shown: passed over by a newer one, landed after a
    /// newer one was already on screen, or still unshown at `finish`.
    pub dropped: u64,
    /// Frames put on screen later than their time plus a frame duration.
    pub late: u64,
    /// Frames whose upload failed or was cancelled.
    pub failed: u64,
    /// Frames let go because playback moved past them before their time
    /// (a seek): see [`FrameQueue::discard_before`]. Not dropped: no one
    /// was waiting to see them.
    pub discarded: u64,
}

/// The frame on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Presented {
    /// The producer's frame number.
    pub frame: u64,
    /// Its presentation time.
    pub pts: Duration,
    /// The slot whose texture holds it.
    pub slot: usize,
}

/// What [`FrameQueue::wait_ready`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitReady {
    /// The frame, or a later one, has landed and waits to be shown, or is
    /// on screen.
    Ready,
    /// The frame's upload failed or was cancelled, and no later frame has
    /// landed yet: a player that shows every frame skips it.
    Failed,
    /// The queue is closed and neither the frame nor a later one is still
    /// on its way: it will not come.
    Closed,
    /// The timeout passed first.
    TimedOut,
}

/// How long [`FrameQueue::finish`] waits for frames still on their way.
const FINISH_WAIT: Duration = Duration::from_secs(30);

/// Failed frames remembered for [`FrameQueue::wait_ready`], newest kept.
const FAILED_KEPT: usize = 1024;

/// One slot's state; each moves Free -> Reserved -> Loading -> Ready ->
/// Shown -> Free, or back to Free from Reserved or Loading when the upload
/// fails, or from Loading or Ready when a newer frame is shown first.
enum SlotState {
    /// Holds nothing anyone needs.
    Free,
    /// Claimed by a producer that is sending this frame's upload.
    Reserved { frame: u64 },
    /// An upload into it is in flight.
    Loading {
        frame: u64,
        pts: Duration,
        upload: Upload,
    },
    /// Landed, waiting for its time.
    Ready { frame: u64, pts: Duration },
    /// On screen; not written until another frame replaces it.
    Shown { frame: u64, pts: Duration },
}

impl SlotState {
    /// The frame it holds, landed or on screen.
    fn in_hand(&self) -> Option<u64> {
        match self {
            Self::Ready { frame, .. } | Self::Shown { frame, .. } => Some(*frame),
            _ => None,
        }
    }

    /// The frame on its way into it: reserved or loading.
    fn coming(&self) -> Option<u64> {
        match self {
            Self::Reserved { frame } | Self::Loading { frame, .. } => Some(*frame),
            _ => None,
        }
    }
}

struct State {
    slots: Vec<SlotState>,
    stats: FrameStats,
    /// Frames whose upload failed, newer than the one on screen (older
    /// ones no longer matter to anyone waiting).
    failed_frames: BTreeSet<u64>,
    /// Frames below this number are discarded as they land (a seek moved
    /// playback past them).
    floor: u64,
}

impl State {
    /// The frame on screen.
    fn on_screen(&self) -> Option<Presented> {
        self.slots.iter().enumerate().find_map(|(slot, s)| match s {
            SlotState::Shown { frame, pts } => Some(Presented {
                frame: *frame,
                pts: *pts,
                slot,
            }),
            _ => None,
        })
    }

    /// Frames landed and waiting to be shown.
    fn ready(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, SlotState::Ready { .. }))
            .count()
    }

    /// Moves landed uploads to ready and failed ones to free. A frame no
    /// newer than the one on screen can never be shown: it is dropped and
    /// its slot freed, whether it lands now or was ready before.
    fn settle(&mut self) {
        let on_screen = self.on_screen().map(|p| p.frame);
        let behind = |frame: u64| on_screen.is_some_and(|shown| frame <= shown);
        let floor = self.floor;
        for slot in &mut self.slots {
            match slot {
                SlotState::Loading { frame, upload, .. } if *frame < floor => {
                    // Landed or failed, it was never due: discarded.
                    if upload.outcome().is_none() {
                        continue;
                    }
                    self.stats.discarded += 1;
                    *slot = SlotState::Free;
                }
                SlotState::Ready { frame, .. } if *frame < floor => {
                    self.stats.discarded += 1;
                    *slot = SlotState::Free;
                }
                SlotState::Loading { frame, pts, upload } => {
                    let Some(outcome) = upload.outcome() else {
                        continue;
                    };
                    let (frame, pts) = (*frame, *pts);
                    if outcome.status != UploadStatus::Done {
                        self.stats.failed += 1;
                        if !behind(frame) {
                            self.failed_frames.insert(frame);
                            if self.failed_frames.len() > FAILED_KEPT {
                                self.failed_frames.pop_first();
                            }
                        }
                        *slot = SlotState::Free;
                    } else if behind(frame) {
                        self.stats.dropped += 1;
                        *slot = SlotState::Free;
                    } else {
                        *slot = SlotState::Ready { frame, pts };
                    }
                }
                SlotState::Ready { frame, .. } if behind(*frame) => {
                    self.stats.dropped += 1;
                    *slot = SlotState::Free;
                }
                _ => {}
            }
        }
    }

    /// Puts the ready frame of slot `next` on screen at time `t`, freeing
    /// the slot it replaces and dropping the ready frames it passes over.
    fn show(&mut self, next: usize, t: Duration, frame_duration: Duration) {
        let SlotState::Ready { frame, pts } = self.slots[next] else {
            return;
        };
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if i == next {
                continue;
            }
            match slot {
                SlotState::Shown { .. } => *slot = SlotState::Free,
                SlotState::Ready { frame: f, pts: p } if *f < frame || *p < pts => {
                    self.stats.dropped += 1;
                    *slot = SlotState::Free;
                }
                _ => {}
            }
        }
        self.slots[next] = SlotState::Shown { frame, pts };
        self.stats.shown += 1;
        if t > pts.saturating_add(frame_duration) {
            self.stats.late += 1;
        }
        self.failed_frames.retain(|&f| f > frame);
    }
}

/// Rung on every change someone waiting on the queue may be waiting for: an
/// upload ending, a slot freed, the queue closed.
///
/// It has its own lock, never held while taking the queue's, so an upload's
/// completion callback (on the engine's poller or a worker) can ring it
/// whatever the queue's lock is doing.
#[derive(Default)]
struct Bell {
    rings: Mutex<u64>,
    rung: Condvar,
}

impl Bell {
    fn ring(&self) {
        let mut rings = self.rings.lock();
        *rings = rings.wrapping_add(1);
        self.rung.notify_all();
    }

    /// Rings so far: take it before looking at the queue, then
    /// [`wait`](Self::wait) for a ring after it.
    fn rings(&self) -> u64 {
        *self.rings.lock()
    }

    /// Waits until it has rung since `seen` was taken, or `deadline` passes.
    fn wait(&self, seen: u64, deadline: Option<Instant>) {
        let mut rings = self.rings.lock();
        while *rings == seen {
            match deadline {
                None => self.rung.wait(&mut rings),
                Some(deadline) => {
                    if self.rung.wait_until(&mut rings, deadline).timed_out() {
                        return;
                    }
                }
            }
        }
    }
}

/// When `timeout` from now ends; `None` if that is past what an [`Instant`]
/// can hold, which is as good as never.
fn deadline(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

/// A ring of frame slots fed by the upload engine: textures on wgpu
/// ([`FrameQueue::new`]), device buffers on CUDA (`FrameQueue::cuda`), or
/// any [`FrameSlot`]s ([`FrameQueue::from_slots`]).
///
/// The protocol:
/// 1. the producer [`push`](Self::push)es frames with increasing frame
///    numbers and their presentation times (it waits while every slot is
///    busy);
/// 2. the render loop calls [`present`](Self::present) with the current
///    time and draws the returned [`slot`](Self::slot). A
///    player that shows every frame instead waits for each with
///    [`wait_ready`](Self::wait_ready) and presents it at its time;
/// 3. [`finish`](Self::finish) closes the queue (a producer still waiting
///    is told to stop) and counts frames never shown as dropped, so
///    `shown + dropped + failed + discarded == pushed`. A player that
///    seeks lets go of the frames pushed for where it was with
///    [`discard_before`](Self::discard_before).
///
/// Slots fill on different upload workers, so frames can land out of
/// order; the screen still only moves forward. A frame that lands after a
/// newer one went on screen is dropped, never shown.
pub struct FrameQueue<S: FrameSlot = crate::backend::wgpu::upload::StreamedTexture> {
    targets: Vec<S>,
    state: Mutex<State>,
    /// Rung by every change waiters look for; uploads ring it as they end.
    bell: Arc<Bell>,
    frame_duration: Duration,
    /// Set by `close`: pushes fail instead of waiting for a slot.
    closed: AtomicBool,
}

pub(crate) fn check_depth(depth: usize) -> Result<(), UploadError> {
    if depth < 2 {
        return Err(UploadError::InvalidConfig(
            "a frame queue needs at least 2 slots".into(),
        ));
    }
    Ok(())
}

impl<S: FrameSlot> FrameQueue<S> {
    /// A queue over `slots` (at least 2), each holding one whole frame; a
    /// frame shown later than its time plus `frame_duration` counts as late.
    pub fn from_slots(slots: Vec<S>, frame_duration: Duration) -> Result<Self, UploadError> {
        check_depth(slots.len())?;
        let states = (0..slots.len()).map(|_| SlotState::Free).collect();
        Ok(Self {
            targets: slots,
            state: Mutex::new(State {
                slots: states,
                stats: FrameStats::default(),
                failed_frames: BTreeSet::new(),
                floor: 0,
            }),
            bell: Arc::default(),
            frame_duration,
            closed: AtomicBool::new(false),
        })
    }

    /// The streamed resource of a slot.
    pub fn slot(&self, slot: usize) -> &S {
        &self.targets[slot]
    }

    /// Slots in the ring.
    pub fn depth(&self) -> usize {
        self.targets.len()
    }

    /// Pushes a frame of tightly packed bytes, waiting for a free slot.
    ///
    /// Frame numbers must increase from push to push: a frame that lands
    /// when the one on screen has the same number or a higher one is
    /// dropped.
    pub fn push(&self, frame: u64, pts: Duration, data: Bytes) -> Result<Upload, UploadError> {
        self.push_into(frame, pts, |t| t.upload_frame(data))
    }

    /// Pushes a frame generated in place into staging memory: `fill` runs on
    /// an upload worker. Otherwise like [`push`](Self::push).
    pub fn push_with(
        &self,
        frame: u64,
        pts: Duration,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &S::Layout) + Send + 'static,
    ) -> Result<Upload, UploadError> {
        self.push_into(frame, pts, |t| t.fill_frame(fill))
    }

    /// Pushes a frame the device copies from where it already is
    /// ([`InPlace`](super::InPlace)): no staging, no copy on the CPU.
    /// Otherwise like [`push`](Self::push).
    pub fn push_in_place(
        &self,
        frame: u64,
        pts: Duration,
        source: super::InPlace,
    ) -> Result<Upload, UploadError> {
        self.push_into(frame, pts, |t| t.copy_frame_in_place(source))
    }

    fn push_into(
        &self,
        frame: u64,
        pts: Duration,
        send: impl FnOnce(&S) -> Result<Upload, UploadError>,
    ) -> Result<Upload, UploadError> {
        let slot = self.free_slot(frame)?;
        let upload = match send(&self.targets[slot]) {
            Ok(upload) => upload,
            Err(e) => {
                self.state.lock().slots[slot] = SlotState::Free;
                self.bell.ring();
                return Err(e);
            }
        };
        {
            let mut state = self.state.lock();
            state.slots[slot] = SlotState::Loading {
                frame,
                pts,
                upload: upload.clone(),
            };
            state.stats.pushed += 1;
        }
        // Ring when it ends. The callback runs on whichever thread ends the
        // upload (the poller, a worker, or this one if it has ended
        // already), so it takes no lock but the bell's; it is registered
        // with the queue's lock released for the same reason.
        let bell = Arc::clone(&self.bell);
        upload.on_complete(move |_| bell.ring());
        self.bell.ring();
        Ok(upload)
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Settles the slots and asks `check` until it answers, waiting for the
    /// bell between tries. `check` is told once `deadline` has passed and
    /// must answer then.
    fn wait_until<T>(
        &self,
        deadline: Option<Instant>,
        mut check: impl FnMut(&mut State, bool) -> Option<T>,
    ) -> T {
        loop {
            // Taken before looking, so a ring while we look is not missed.
            let seen = self.bell.rings();
            let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            {
                let mut state = self.state.lock();
                state.settle();
                if let Some(answer) = check(&mut state, timed_out) {
                    return answer;
                }
            }
            self.bell.wait(seen, deadline);
        }
    }

    /// Claims a free slot for `frame`, waiting for one. Ready frames wait
    /// their turn: slots come free when `present` moves on, when an upload
    /// fails, or when a frame lands too late to be shown.
    fn free_slot(&self, frame: u64) -> Result<usize, UploadError> {
        self.wait_until(None, |state, _| {
            if self.is_closed() {
                return Some(Err(UploadError::Released));
            }
            let i = state
                .slots
                .iter()
                .position(|s| matches!(s, SlotState::Free))?;
            state.slots[i] = SlotState::Reserved { frame };
            Some(Ok(i))
        })
    }

    /// The frame to have on screen at time `t`: the newest landed frame
    /// whose time has come (of two with the same time, the higher frame
    /// number), if it is newer than the one on screen. Ready frames it
    /// passes over are dropped. The screen never goes back: a frame no
    /// newer than the one on screen is never shown. `None` until the first
    /// frame is due and landed.
    pub fn present(&self, t: Duration) -> Option<Presented> {
        let mut state = self.state.lock();
        // Settling drops every frame no newer than the one on screen, so
        // each ready frame left is a step forward.
        state.settle();
        let next = state
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                SlotState::Ready { frame, pts } if *pts <= t => Some((*pts, *frame, i)),
                _ => None,
            })
            .max();
        if let Some((_, _, next)) = next {
            state.show(next, t, self.frame_duration);
            self.bell.ring();
        }
        state.on_screen()
    }

    /// The frame on screen now, as the last [`present`](Self::present) left
    /// it; this does not move the queue on.
    pub fn shown(&self) -> Option<Presented> {
        self.state.lock().on_screen()
    }

    /// Frames landed and waiting to be shown.
    pub fn ready(&self) -> usize {
        let mut state = self.state.lock();
        state.settle();
        state.ready()
    }

    /// The frames landed and waiting to be shown, with their slots. A
    /// slot's texture holds its frame until a later `present` replaces or
    /// drops it, so work the caller queues on the device before its next
    /// `present` (a copy to keep the frame) reads the frame.
    pub fn landed(&self) -> Vec<Presented> {
        let mut state = self.state.lock();
        state.settle();
        state
            .slots
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| match s {
                SlotState::Ready { frame, pts } => Some(Presented {
                    frame: *frame,
                    pts: *pts,
                    slot,
                }),
                _ => None,
            })
            .collect()
    }

    /// Waits until frame `frame` has landed or is on screen (or a later
    /// one has while `frame` is not on its way), for a player that shows
    /// every frame rather than dropping late ones. Wakes as soon as an upload ends, not on a polling period.
    ///
    /// Answers [`WaitReady::Failed`] if that frame's upload failed or was
    /// cancelled, [`WaitReady::Closed`] once the queue is closed and nothing
    /// at or after `frame` is still on its way, [`WaitReady::TimedOut`]
    /// after `timeout` (`Duration::MAX` waits with no deadline). Until the
    /// queue is closed, a frame never pushed is waited for.
    pub fn wait_ready(&self, frame: u64, timeout: Duration) -> WaitReady {
        self.wait_until(deadline(timeout), |state, timed_out| {
            let at_or_after = |f: Option<u64>| f.is_some_and(|f| f >= frame);
            // The frame itself in hand, or a later one while the frame is
            // not on its way (passed over, or never pushed: pushes come in
            // order). A later frame landing first is not enough while the
            // frame itself is still loading: a player showing every frame
            // would find nothing due.
            let itself = state.slots.iter().any(|s| s.in_hand() == Some(frame));
            let later = state.slots.iter().any(|s| at_or_after(s.in_hand()));
            let loading = state.slots.iter().any(|s| s.coming() == Some(frame));
            if itself || (later && !loading) {
                return Some(WaitReady::Ready);
            }
            if state.failed_frames.contains(&frame) {
                return Some(WaitReady::Failed);
            }
            let coming = state.slots.iter().any(|s| at_or_after(s.coming()));
            if self.is_closed() && !coming {
                return Some(WaitReady::Closed);
            }
            timed_out.then_some(WaitReady::TimedOut)
        })
    }

    /// Whether frame `frame` is on its way: pushed (or its slot reserved)
    /// and not yet landed.
    pub fn is_coming(&self, frame: u64) -> bool {
        let mut state = self.state.lock();
        state.settle();
        state.slots.iter().any(|s| s.coming() == Some(frame))
    }

    /// Ends playback: pushes from now on fail with [`UploadError::Released`]
    /// instead of waiting for a slot no one will free; frames pushed but
    /// never shown count as dropped, once their uploads have ended (it
    /// waits up to 30 s for them).
    pub fn finish(&self) -> FrameStats {
        self.close();
        let stats = self.wait_until(deadline(FINISH_WAIT), |state, timed_out| {
            let coming = state.slots.iter().any(|s| s.coming().is_some());
            if coming && !timed_out {
                return None;
            }
            for slot in &mut state.slots {
                if matches!(slot, SlotState::Ready { .. }) {
                    state.stats.dropped += 1;
                    *slot = SlotState::Free;
                }
            }
            Some(state.stats)
        });
        self.bell.ring();
        stats
    }

    /// Waits until `n` frames have landed and wait to be shown, or
    /// `timeout` passes (`Duration::MAX`: no deadline): a player's
    /// pre-roll, so the clock starts with frames in hand. Returns early,
    /// short of `n`, when no more frames can land before a `present`:
    /// nothing is on its way and no slot is free (or the queue is closed).
    /// Returns how many are ready.
    pub fn preroll(&self, n: usize, timeout: Duration) -> usize {
        self.wait_until(deadline(timeout), |state, timed_out| {
            let ready = state.ready();
            let coming = state.slots.iter().any(|s| s.coming().is_some());
            let room =
                !self.is_closed() && state.slots.iter().any(|s| matches!(s, SlotState::Free));
            (ready >= n || timed_out || !(coming || room)).then_some(ready)
        })
    }

    /// Lets go of every frame numbered below `frame`, landed or on its way,
    /// for a player that seeks: the frames pushed for where it was are
    /// never shown, and their slots come free for the frames of where it
    /// goes (a producer waiting for a slot wakes). They count as
    /// [`discarded`](FrameStats::discarded), not dropped. The frame on
    /// screen stays there until a newer one is presented, so the screen
    /// never shows a frame from before the seek after one from after it.
    /// A floor lower than one set before changes nothing.
    pub fn discard_before(&self, frame: u64) {
        {
            let mut state = self.state.lock();
            state.floor = state.floor.max(frame);
            state.failed_frames.retain(|&f| f >= frame);
            state.settle();
        }
        self.bell.ring();
    }

    /// Stops taking frames: a producer waiting for a slot gets
    /// [`UploadError::Released`] and should stop.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.bell.ring();
    }

    /// Its numbers so far.
    pub fn stats(&self) -> FrameStats {
        self.state.lock().stats
    }
}

impl<S: FrameSlot> std::fmt::Debug for FrameQueue<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameQueue")
            .field("depth", &self.targets.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
