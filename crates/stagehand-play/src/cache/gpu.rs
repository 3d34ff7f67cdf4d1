//! The GPU tier of the frame cache (`PlayOptions::gpu_cache_bytes`): frames kept on
//! the device in textures of their own, under a byte budget, so a loop
//! that fits plays with no upload after its first pass.
//!
//! A frame gets into the tier by being uploaded into it: the tier's
//! textures are streamed textures of the upload engine, and the producer
//! uploads a frame the tier has room for straight into one of them (on a
//! transfer worker, like any upload) instead of into a frame-queue slot.
//! Nothing is copied on the render thread.
//!
//! Four parts, each with one owner:
//! - [`TierTextures`], shared: the textures, which position each holds and
//!   whether its upload has landed; the producer claims and fills them;
//! - [`GpuCache`], owned by the render thread: a bind group per texture
//!   shown, and what the tier showed;
//! - [`Residency`], shared: which positions have landed on the device
//!   (the producer leaves those to the tier; the cache bar shows them);
//! - [`Handoff`], shared: the producer's word, tick by tick, on which ticks
//!   it left to the GPU tier, so the render thread draws those from it and
//!   everything else from the frame queue.
//!
//! The tier fills up to its budget and keeps what it holds for the run:
//! evicting would only trade one upload for another.

use crate::render::Renderer;
use crate::transport::Tick;
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use stagehand_gpu::Gpu;
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::upload::{
    StagingPolicy, StreamOptions, StreamedTexture, Upload, UploadEngine, UploadError,
    UploadPriority, UploadStatus,
};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What the GPU tier did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GpuCacheStats {
    /// Its budget in bytes.
    pub budget: u64,
    /// Frames held on the device.
    pub frames: u64,
    /// Bytes of those frames' textures.
    pub bytes: u64,
    /// Frames shown straight from the tier: uploads saved.
    pub shown: u64,
    /// Ticks left to the tier that the render loop passed over (late).
    pub passed_over: u64,
    /// Frames uploaded into the tier: one per frame it holds, all in the
    /// first pass of a loop that fits.
    pub uploads: u64,
}

/// Which sequence positions have a texture in the GPU tier.
#[derive(Debug)]
pub struct Residency {
    flags: Vec<AtomicBool>,
    /// The resident positions, in the order they landed (at most the
    /// tier's textures): what the cache bar reads, without a pass over
    /// every position.
    landed: Mutex<Vec<usize>>,
}

impl Residency {
    /// No position resident, of `len`.
    pub fn new(len: usize) -> Self {
        Self {
            flags: (0..len).map(|_| AtomicBool::new(false)).collect(),
            landed: Mutex::new(Vec::new()),
        }
    }

    /// The positions on the device.
    pub fn positions(&self) -> Vec<usize> {
        self.landed.lock().clone()
    }

    /// Whether `pos` is on the device.
    pub fn contains(&self, pos: usize) -> bool {
        self.flags
            .get(pos)
            .is_some_and(|f| f.load(Ordering::Acquire))
    }

    fn insert(&self, pos: usize) {
        if let Some(f) = self.flags.get(pos)
            && !f.swap(true, Ordering::AcqRel)
        {
            self.landed.lock().push(pos);
        }
    }
}

struct HandoffState {
    /// Ticks below this one the producer has decided.
    decided: Tick,
    /// Ticks it left to the GPU tier, in order, not yet drawn.
    resident: VecDeque<Tick>,
    /// Ticks below this were left behind by a seek.
    floor: Tick,
    /// Tier ticks let go because a seek left them.
    discarded: u64,
    closed: bool,
}

/// The producer's word on which ticks the GPU tier shows.
pub struct Handoff {
    state: Mutex<HandoffState>,
    changed: Condvar,
    /// Most ticks the producer may leave to the tier ahead of the render
    /// loop (it has no queue slot to wait for on those).
    ahead: usize,
}

impl Handoff {
    /// A hand-off letting the producer run `ahead` tier ticks ahead.
    pub fn new(ahead: usize) -> Self {
        Self {
            state: Mutex::new(HandoffState {
                decided: Tick::ZERO,
                resident: VecDeque::new(),
                floor: Tick::ZERO,
                discarded: 0,
                closed: false,
            }),
            changed: Condvar::new(),
            ahead: ahead.max(1),
        }
    }

    /// Producer: tick `tick` is the GPU tier's to show. Waits while the
    /// render loop is `ahead` such ticks behind; `false` once closed.
    pub fn leave_to_tier(&self, tick: Tick) -> bool {
        let mut state = self.state.lock();
        while state.resident.len() >= self.ahead && !state.closed {
            self.changed.wait(&mut state);
        }
        if state.closed {
            return false;
        }
        if tick < state.floor {
            // A seek left this tick behind while the producer was on its way.
            state.discarded += 1;
            return true;
        }
        state.resident.push_back(tick);
        drop(state);
        self.changed.notify_all();
        true
    }

    /// Producer: every tick below `next` is decided.
    pub fn decided(&self, next: Tick) {
        self.state.lock().decided = next;
        self.changed.notify_all();
    }

    /// Render loop: waits until the producer has decided `tick` (or has
    /// stopped), or `deadline` passes; whether it has.
    pub fn wait_decided(&self, tick: Tick, deadline: Option<std::time::Instant>) -> bool {
        let mut state = self.state.lock();
        while state.decided <= tick && !state.closed {
            match deadline {
                None => self.changed.wait(&mut state),
                Some(d) => {
                    if self.changed.wait_until(&mut state, d).timed_out() {
                        break;
                    }
                }
            }
        }
        state.decided > tick || state.closed
    }

    /// Render loop: whether `tick` is the tier's to show. Tier ticks
    /// before it (the loop was late) are passed over: their count returns.
    pub fn take(&self, tick: Tick) -> (bool, u64) {
        let mut state = self.state.lock();
        let mut passed = 0;
        while state.resident.front().is_some_and(|&t| t < tick) {
            state.resident.pop_front();
            passed += 1;
        }
        let mine = state.resident.front() == Some(&tick);
        if mine {
            state.resident.pop_front();
        }
        drop(state);
        self.changed.notify_all();
        (mine, passed)
    }

    /// Render loop: lets go of the tier ticks before `tick` (a seek left
    /// them) and returns how many; they are neither shown nor passed over.
    pub fn discard_before(&self, tick: Tick) -> u64 {
        let mut state = self.state.lock();
        state.floor = state.floor.max(tick);
        let before = state.resident.len();
        state.resident.retain(|&t| t >= tick);
        let gone = (before - state.resident.len()) as u64;
        state.discarded += gone;
        drop(state);
        self.changed.notify_all();
        gone
    }

    /// Tier ticks let go because a seek left them, so far.
    pub fn discarded(&self) -> u64 {
        self.state.lock().discarded
    }

    /// Stops the hand-off: waits on either side end. Returns the tier
    /// ticks never drawn.
    pub fn close(&self) -> u64 {
        let left = {
            let mut state = self.state.lock();
            state.closed = true;
            std::mem::take(&mut state.resident).len() as u64
        };
        self.changed.notify_all();
        left
    }
}

/// Where a position stands in the tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// It has a texture (landed, or its upload on the way): leave it to
    /// the tier.
    Held,
    /// It has none, and the tier has room for it.
    Room,
    /// It has none, and the tier is full.
    Full,
}

/// A texture of the tier claimed for a position, its upload not yet sent.
#[derive(Debug)]
pub struct Claimed {
    index: usize,
    pos: usize,
}

/// A texture's upload.
enum Fill {
    /// On the way.
    Pending(Upload),
    /// Landed: the texture holds the frame.
    Landed,
    /// Failed: the texture holds nothing shown.
    Failed,
}

struct TierState {
    /// Texture index by position.
    by_pos: HashMap<usize, usize>,
    /// Each claimed texture's upload, by texture index.
    fills: Vec<Fill>,
}

/// The tier's textures, shared by the producer (which fills them) and the
/// render loop (which shows them); see the module documentation.
pub struct TierTextures {
    textures: Vec<StreamedTexture>,
    state: Mutex<TierState>,
    residency: Arc<Residency>,
    uploads: AtomicU64,
    budget: u64,
    texture_bytes: u64,
}

impl TierTextures {
    /// As many textures like `desc` as `budget` bytes hold, at most one
    /// per position of a sequence of `len`, streamed by `engine`.
    pub fn new(
        engine: &UploadEngine,
        desc: &wgpu::TextureDescriptor<'static>,
        budget: u64,
        len: usize,
    ) -> Result<Arc<Self>, crate::PlayError> {
        let texture_bytes = texture_bytes(desc).max(1);
        let count = usize::try_from(budget / texture_bytes)
            .unwrap_or(usize::MAX)
            .min(len);
        let textures = Self::create_textures(engine, desc, count)?;
        Ok(Arc::new(Self {
            textures,
            state: Mutex::new(TierState {
                by_pos: HashMap::new(),
                fills: Vec::new(),
            }),
            residency: Arc::new(Residency::new(len)),
            uploads: AtomicU64::new(0),
            budget,
            texture_bytes,
        }))
    }

    /// `count` textures like `desc`, each streamed by `engine` with a
    /// staging buffer of its own per upload.
    fn create_textures(
        engine: &UploadEngine,
        desc: &wgpu::TextureDescriptor<'static>,
        count: usize,
    ) -> Result<Vec<StreamedTexture>, crate::PlayError> {
        let options = StreamOptions {
            // A staging buffer from the engine's pool for each upload,
            // given back when it lands: the tier's textures are filled
            // once each, so they keep no ring.
            policy: StagingPolicy::PerUpload(1),
            priority: UploadPriority::Normal,
            rows_per_submit: None,
        };
        let desc = wgpu::TextureDescriptor {
            label: Some("gpu frame cache"),
            ..desc.clone()
        };
        (0..count)
            .map(|_| engine.create_texture_with(&desc, options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| crate::PlayError::BadOption {
                field: crate::error::Field::GpuCache,
                message: format!("cannot be had: {e}"),
            })
    }

    /// The positions on the device.
    pub fn residency(&self) -> &Arc<Residency> {
        &self.residency
    }

    /// Where `pos` stands.
    pub fn place(&self, pos: usize) -> Place {
        let state = self.state.lock();
        if state.by_pos.contains_key(&pos) {
            Place::Held
        } else if state.fills.len() < self.textures.len() {
            Place::Room
        } else {
            Place::Full
        }
    }

    /// Producer: claims a texture of its own for `pos`; `None` when the
    /// tier is full (or `pos` has one already): the frame goes through
    /// the frame queue instead.
    pub fn claim(&self, pos: usize) -> Option<Claimed> {
        let mut state = self.state.lock();
        if state.by_pos.contains_key(&pos) || state.fills.len() >= self.textures.len() {
            return None;
        }
        let index = state.fills.len();
        state.by_pos.insert(pos, index);
        // Until its upload is sent, a claimed texture shows nothing.
        state.fills.push(Fill::Failed);
        Some(Claimed { index, pos })
    }

    /// Producer: uploads the frame of a claimed texture, `fill` writing
    /// its texels into staging on a transfer worker. On an error the
    /// texture stays claimed and is never shown.
    pub fn upload(
        self: &Arc<Self>,
        claimed: Claimed,
        fill: impl FnOnce(wgpu::WriteOnly<'_, [u8]>, &stagehand_gpu::upload::CopyLayout)
        + Send
        + 'static,
    ) -> Result<Upload, UploadError> {
        let Claimed { index, pos } = claimed;
        let texture = &self.textures[index];
        let region = stagehand_gpu::upload::TextureRegion::frame(texture.texture().size());
        let upload = texture.upload_with(region, fill, stagehand_gpu::upload::IfFull::Wait)?;
        self.uploads.fetch_add(1, Ordering::Relaxed);
        self.state.lock().fills[index] = Fill::Pending(upload.clone());
        let tier = Arc::clone(self);
        upload.on_complete(move |outcome| {
            tier.settle(index, pos, outcome.status == UploadStatus::Done);
        });
        Ok(upload)
    }

    fn settle(&self, index: usize, pos: usize, landed: bool) {
        let mut state = self.state.lock();
        state.fills[index] = if landed { Fill::Landed } else { Fill::Failed };
        drop(state);
        if landed {
            self.residency.insert(pos);
        }
    }

    /// Render loop: the texture of `pos` once its upload has landed,
    /// waiting up to `wait` for one on the way. `None`: not in the tier,
    /// failed, or still on the way.
    pub fn landed(&self, pos: usize, wait: Duration) -> Option<(usize, &wgpu::Texture)> {
        let (index, pending) = {
            let state = self.state.lock();
            let &index = state.by_pos.get(&pos)?;
            match &state.fills[index] {
                Fill::Landed => return Some((index, self.textures[index].texture())),
                Fill::Failed => return None,
                Fill::Pending(upload) => (index, upload.clone()),
            }
        };
        // Its completion callback settles the state soon after the upload
        // ends; the outcome says at once.
        let outcome = if wait.is_zero() {
            pending.outcome()
        } else {
            pending.wait_timeout(wait)
        }?;
        (outcome.status == UploadStatus::Done).then(|| (index, self.textures[index].texture()))
    }

    /// Whether `pos` has a texture whose upload is still on the way.
    pub fn pending(&self, pos: usize) -> bool {
        let state = self.state.lock();
        state
            .by_pos
            .get(&pos)
            .is_some_and(|&i| matches!(state.fills[i], Fill::Pending(_)))
    }

    /// Frames landed, uploads sent, bytes of the textures landed.
    fn counts(&self) -> (u64, u64, u64) {
        let state = self.state.lock();
        let landed = state
            .fills
            .iter()
            .filter(|f| matches!(f, Fill::Landed))
            .count() as u64;
        (
            landed,
            self.uploads.load(Ordering::Relaxed),
            landed * self.texture_bytes,
        )
    }
}

/// Bytes of one texture like `desc` (one layer, mip 0).
fn texture_bytes(desc: &wgpu::TextureDescriptor<'_>) -> u64 {
    let texel = crate::convert::format::texel_bytes(desc.format) as u64;
    u64::from(desc.size.width) * u64::from(desc.size.height) * texel
}

/// The render thread's side of the GPU tier: bind groups for the textures
/// it shows, and what it showed.
pub struct GpuCache {
    textures: Arc<TierTextures>,
    binds: HashMap<usize, Tracked<wgpu::BindGroup>>,
    shown: u64,
    passed_over: u64,
}

impl GpuCache {
    /// The render side of `textures`.
    pub fn new(textures: &Arc<TierTextures>) -> Self {
        Self {
            textures: Arc::clone(textures),
            binds: HashMap::new(),
            shown: 0,
            passed_over: 0,
        }
    }

    /// The shared textures.
    pub fn textures(&self) -> &Arc<TierTextures> {
        &self.textures
    }

    /// Makes ready to draw `pos` from the tier, waiting up to `wait` for
    /// its upload to land; whether it can be.
    pub fn prepare(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        pos: usize,
        wait: Duration,
    ) -> Result<bool, stagehand_gpu::Error> {
        let Some((index, texture)) = self.textures.landed(pos, wait) else {
            return Ok(false);
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = self.binds.entry(index) {
            slot.insert(renderer.bind(gpu, texture)?);
        }
        Ok(true)
    }

    /// The texture and bind group of `pos`, if it was prepared.
    pub fn get(&self, pos: usize) -> Option<(&wgpu::Texture, &wgpu::BindGroup)> {
        let (index, texture) = self.textures.landed(pos, Duration::ZERO)?;
        Some((texture, &**self.binds.get(&index)?))
    }

    /// Counts a frame shown from the tier, and ticks passed over.
    pub fn count_shown(&mut self, shown: bool, passed_over: u64) {
        self.shown += u64::from(shown);
        self.passed_over += passed_over;
    }

    /// Its numbers so far.
    pub fn stats(&self) -> GpuCacheStats {
        let (frames, uploads, bytes) = self.textures.counts();
        GpuCacheStats {
            budget: self.textures.budget,
            frames,
            bytes,
            shown: self.shown,
            passed_over: self.passed_over,
            uploads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Handoff;
    use crate::transport::Tick;

    #[test]
    fn a_tick_left_to_the_tier_below_a_seek_is_discarded_not_passed_over() {
        let handoff = Handoff::new(4);
        assert!(handoff.leave_to_tier(Tick(3)));
        assert_eq!(handoff.discard_before(Tick(10)), 1);
        // The producer was already on its way with tick 4 of the old place.
        assert!(handoff.leave_to_tier(Tick(4)));
        assert_eq!(handoff.take(Tick(10)), (false, 0), "nothing passed over");
        assert_eq!(handoff.discarded(), 2);
    }
}
