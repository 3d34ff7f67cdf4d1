//! [`FrameQueue`]: a few GPU textures holding uploaded frames with their
//! presentation times, so a player shows the right frame at the right time.

use super::error::UploadError;
use super::future::{Upload, UploadStatus};
use super::region::{CopyLayout, TextureRegion};
use super::resource::{StagingPolicy, StreamedTexture};
use super::{StreamOptions, UploadEngine};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use std::time::Duration;

/// How a frame queue is built. Defaults are starting points, not tuned values.
#[derive(Clone, Copy, Debug)]
pub struct FrameQueueConfig {
    /// Textures in the ring: one on screen, the rest filling or ready. At
    /// least 2; default 3.
    pub depth: usize,
    /// Staging buffers per slot; default 1 (each slot fills one frame at a time).
    pub staging_buffers: usize,
    /// Rows per copy submission. Slots are never on screen while they fill,
    /// so splitting is safe here; default 128 rows.
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
    /// Frames replaced by a newer one before they were shown.
    pub dropped: u64,
    /// Frames put on screen later than their time plus a frame duration.
    pub late: u64,
    /// Frames whose upload failed or was cancelled.
    pub failed: u64,
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

/// One slot's state; each moves Free -> Reserved -> Loading -> Ready ->
/// Shown -> Free (or back to Free from Reserved or Loading on failure).
enum Slot {
    /// Holds nothing anyone needs.
    Free,
    /// Claimed by a producer that is sending its upload.
    Reserved,
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

struct State {
    slots: Vec<Slot>,
    stats: FrameStats,
}

/// A ring of frame textures fed by the upload engine.
///
/// The protocol:
/// 1. the producer [`push`](Self::push)es frames in order with their
///    presentation times (it waits while every slot is busy);
/// 2. the render loop calls [`present`](Self::present) with the current
///    time and draws [`texture`](Self::texture) of the returned slot;
/// 3. [`finish`](Self::finish) closes the queue (a producer still waiting
///    is told to stop) and counts frames never shown as dropped, so
///    `shown + dropped + failed == pushed`.
pub struct FrameQueue {
    textures: Vec<StreamedTexture>,
    state: Mutex<State>,
    freed: Condvar,
    frame_duration: Duration,
    /// Set by `close`: pushes fail instead of waiting for a slot.
    closed: std::sync::atomic::AtomicBool,
}

impl FrameQueue {
    /// A queue of `config.depth` textures like `desc` on `engine`.
    pub fn new(
        engine: &UploadEngine,
        desc: &wgpu::TextureDescriptor<'_>,
        config: FrameQueueConfig,
    ) -> Result<Self, UploadError> {
        if config.depth < 2 {
            return Err(UploadError::InvalidConfig(
                "a frame queue needs at least 2 slots".into(),
            ));
        }
        let options = StreamOptions {
            priority: super::UploadPriority::Normal,
            policy: StagingPolicy::Ring(config.staging_buffers),
            rows_per_submit: config.rows_per_submit,
        };
        let textures = (0..config.depth)
            .map(|_| engine.create_texture_with(desc, options))
            .collect::<Result<Vec<_>, _>>()?;
        let slots = (0..config.depth).map(|_| Slot::Free).collect();
        Ok(Self {
            textures,
            state: Mutex::new(State {
                slots,
                stats: FrameStats::default(),
            }),
            freed: Condvar::new(),
            frame_duration: config.frame_duration,
            closed: Default::default(),
        })
    }

    /// The texture of a slot.
    pub fn texture(&self, slot: usize) -> &wgpu::Texture {
        self.textures[slot].texture()
    }

    /// Slots in the ring.
    pub fn depth(&self) -> usize {
        self.textures.len()
    }

    /// Pushes a frame of tightly packed bytes, waiting for a free slot.
    pub fn push(&self, frame: u64, pts: Duration, data: Bytes) -> Result<Upload, UploadError> {
        self.push_into(frame, pts, |t| t.upload_frame(data))
    }

    /// Pushes a frame generated in place into staging memory.
    pub fn push_with(
        &self,
        frame: u64,
        pts: Duration,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &CopyLayout) + Send + 'static,
    ) -> Result<Upload, UploadError> {
        self.push_into(frame, pts, |t| {
            t.upload_with(TextureRegion::frame(t.texture().size()), fill, true)
        })
    }

    fn push_into(
        &self,
        frame: u64,
        pts: Duration,
        send: impl FnOnce(&StreamedTexture) -> Result<Upload, UploadError>,
    ) -> Result<Upload, UploadError> {
        let slot = self.free_slot()?;
        let upload = match send(&self.textures[slot]) {
            Ok(upload) => upload,
            Err(e) => {
                self.state.lock().slots[slot] = Slot::Free;
                self.freed.notify_all();
                return Err(e);
            }
        };
        let mut state = self.state.lock();
        state.slots[slot] = Slot::Loading {
            frame,
            pts,
            upload: upload.clone(),
        };
        state.stats.pushed += 1;
        Ok(upload)
    }

    /// Claims a free slot (marking it loading with a placeholder), waiting
    /// for one. Ready frames wait their turn: only `present` frees slots.
    fn free_slot(&self) -> Result<usize, UploadError> {
        let mut state = self.state.lock();
        loop {
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(UploadError::Released);
            }
            Self::settle(&mut state);
            if let Some(i) = state.slots.iter().position(|s| matches!(s, Slot::Free)) {
                state.slots[i] = Slot::Reserved;
                return Ok(i);
            }
            self.freed.wait_for(&mut state, Duration::from_millis(5));
        }
    }

    /// Moves landed uploads to ready and failed ones to free.
    fn settle(state: &mut State) {
        for slot in &mut state.slots {
            if let Slot::Loading { frame, pts, upload } = slot {
                match upload.outcome().map(|o| o.status) {
                    None => {}
                    Some(UploadStatus::Done) => {
                        *slot = Slot::Ready {
                            frame: *frame,
                            pts: *pts,
                        }
                    }
                    Some(_) => {
                        state.stats.failed += 1;
                        *slot = Slot::Free;
                    }
                }
            }
        }
    }

    /// The frame to have on screen at time `t`: the newest landed frame
    /// whose time has come. Older ready frames it passes over are dropped.
    /// `None` until the first frame is due and landed.
    pub fn present(&self, t: Duration) -> Option<Presented> {
        let mut state = self.state.lock();
        Self::settle(&mut state);
        let due = |s: &Slot| matches!(s, Slot::Ready { pts, .. } if *pts <= t);
        let newest = (0..state.slots.len())
            .filter(|&i| due(&state.slots[i]))
            .max_by_key(|&i| match state.slots[i] {
                Slot::Ready { pts, .. } => pts,
                _ => Duration::ZERO,
            });
        if let Some(next) = newest {
            self.show(&mut state, next, t);
        }
        state
            .slots
            .iter()
            .enumerate()
            .find_map(|(slot, s)| match s {
                Slot::Shown { frame, pts } => Some(Presented {
                    frame: *frame,
                    pts: *pts,
                    slot,
                }),
                _ => None,
            })
    }

    fn show(&self, state: &mut State, next: usize, t: Duration) {
        let Slot::Ready { frame, pts } = state.slots[next] else {
            return;
        };
        for (i, slot) in state.slots.iter_mut().enumerate() {
            let passed_over = matches!(slot, Slot::Ready { pts: p, .. } if *p < pts);
            if matches!(slot, Slot::Shown { .. }) || (i != next && passed_over) {
                if passed_over {
                    state.stats.dropped += 1;
                }
                *slot = Slot::Free;
            }
        }
        state.slots[next] = Slot::Shown { frame, pts };
        state.stats.shown += 1;
        if t > pts + self.frame_duration {
            state.stats.late += 1;
        }
        self.freed.notify_all();
    }

    /// Ends playback: pushes from now on fail with [`UploadError::Released`]
    /// instead of waiting for a slot no one will free; frames pushed but
    /// never shown count as dropped, once their uploads have ended.
    pub fn finish(&self) -> FrameStats {
        self.close();
        let loading: Vec<Upload> = self
            .state
            .lock()
            .slots
            .iter()
            .filter_map(|s| match s {
                Slot::Loading { upload, .. } => Some(upload.clone()),
                _ => None,
            })
            .collect();
        for upload in loading {
            upload.wait_timeout(Duration::from_secs(30));
        }
        let mut state = self.state.lock();
        Self::settle(&mut state);
        let unshown = state
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Ready { .. }))
            .count() as u64;
        state.stats.dropped += unshown;
        for slot in &mut state.slots {
            if matches!(slot, Slot::Ready { .. }) {
                *slot = Slot::Free;
            }
        }
        state.stats
    }

    /// Waits until `n` frames have landed and wait to be shown (or
    /// `timeout` passes): a player's pre-roll, so the clock starts with
    /// frames in hand. Returns how many are ready.
    pub fn preroll(&self, n: usize, timeout: Duration) -> usize {
        let deadline = std::time::Instant::now() + timeout;
        let mut state = self.state.lock();
        loop {
            Self::settle(&mut state);
            let ready = state
                .slots
                .iter()
                .filter(|s| matches!(s, Slot::Ready { .. }))
                .count();
            if ready >= n || std::time::Instant::now() >= deadline {
                return ready;
            }
            self.freed.wait_for(&mut state, Duration::from_millis(2));
        }
    }

    /// Stops taking frames: a producer waiting for a slot gets
    /// [`UploadError::Released`] and should stop.
    pub fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        self.freed.notify_all();
    }

    /// Its numbers so far.
    pub fn stats(&self) -> FrameStats {
        self.state.lock().stats
    }
}

impl std::fmt::Debug for FrameQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameQueue")
            .field("depth", &self.textures.len())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
