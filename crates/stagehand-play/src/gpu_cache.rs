//! The GPU tier of the frame cache (`--gpu-cache SIZE`): frames that have
//! landed stay on the device, copied into textures from a texture pool
//! under a byte budget, so a loop that fits plays with no upload at all.
//!
//! Three parts, each with one owner:
//! - [`GpuCache`], owned by the render thread: the textures, their bind
//!   groups, and the copy of a frame-queue slot into a new one;
//! - [`Residency`], shared: which sequence positions are on the device
//!   (the producer reads it to skip the upload);
//! - [`Handoff`], shared: the producer's word, tick by tick, on which ticks
//!   it left to the GPU tier, so the render thread draws those from it and
//!   everything else from the frame queue.
//!
//! The tier fills as frames are shown, up to its budget, and keeps what it
//! holds for the run: evicting would only trade one upload for another.

use crate::render::Renderer;
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use stagehand_gpu::Gpu;
use stagehand_gpu::backend::wgpu::{TextureBackend, TexturePool, texture_pool};
use stagehand_gpu::diag::Tracked;
use stagehand_gpu::pool::{PoolConfig, Pooled};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
}

/// Which sequence positions have a texture in the GPU tier.
#[derive(Debug)]
pub struct Residency {
    flags: Vec<AtomicBool>,
}

impl Residency {
    /// No position resident, of `len`.
    pub fn new(len: usize) -> Self {
        Self {
            flags: (0..len).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Whether `pos` is on the device.
    pub fn contains(&self, pos: usize) -> bool {
        self.flags
            .get(pos)
            .is_some_and(|f| f.load(Ordering::Acquire))
    }

    fn insert(&self, pos: usize) {
        if let Some(f) = self.flags.get(pos) {
            f.store(true, Ordering::Release);
        }
    }
}

struct HandoffState {
    /// Ticks below this one the producer has decided.
    decided: u64,
    /// Ticks it left to the GPU tier, in order, not yet drawn.
    resident: VecDeque<u64>,
    /// Ticks below this were left behind by a seek.
    floor: u64,
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
                decided: 0,
                resident: VecDeque::new(),
                floor: 0,
                discarded: 0,
                closed: false,
            }),
            changed: Condvar::new(),
            ahead: ahead.max(1),
        }
    }

    /// Producer: tick `tick` is the GPU tier's to show. Waits while the
    /// render loop is `ahead` such ticks behind; `false` once closed.
    pub fn leave_to_tier(&self, tick: u64) -> bool {
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
    pub fn decided(&self, next: u64) {
        self.state.lock().decided = next;
        self.changed.notify_all();
    }

    /// Render loop: waits until the producer has decided `tick` (or has
    /// stopped), or `deadline` passes; whether it has.
    pub fn wait_decided(&self, tick: u64, deadline: Option<std::time::Instant>) -> bool {
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
    pub fn take(&self, tick: u64) -> (bool, u64) {
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
    pub fn discard_before(&self, tick: u64) -> u64 {
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
        let mut state = self.state.lock();
        state.closed = true;
        let left = state.resident.len() as u64;
        state.resident.clear();
        drop(state);
        self.changed.notify_all();
        left
    }
}

/// One frame held on the device.
struct Entry {
    texture: Pooled<TextureBackend>,
    bind: Tracked<wgpu::BindGroup>,
}

/// The textures of the GPU tier; see the module documentation.
pub struct GpuCache {
    pool: TexturePool,
    desc: wgpu::TextureDescriptor<'static>,
    entries: HashMap<usize, Entry>,
    residency: Arc<Residency>,
    stats: GpuCacheStats,
    /// The budget is spent (or the device refused a texture): stop trying.
    full: bool,
}

impl GpuCache {
    /// A tier of frames like `desc` under `budget` bytes, for a sequence
    /// of `len` positions.
    pub fn new(
        gpu: &Arc<Gpu>,
        desc: &wgpu::TextureDescriptor<'static>,
        budget: u64,
        len: usize,
    ) -> Result<Self, crate::PlayError> {
        let config = PoolConfig {
            budget: Some(budget),
            ..PoolConfig::named("gpu frame cache")
        };
        let pool = texture_pool(Arc::clone(gpu), config)
            .map_err(|e| crate::PlayError::InvalidOption(format!("--gpu-cache: {e}")))?;
        Ok(Self {
            pool,
            desc: wgpu::TextureDescriptor {
                label: Some("gpu frame cache"),
                usage: desc.usage | wgpu::TextureUsages::COPY_DST,
                ..desc.clone()
            },
            entries: HashMap::new(),
            residency: Arc::new(Residency::new(len)),
            stats: GpuCacheStats {
                budget,
                ..GpuCacheStats::default()
            },
            full: false,
        })
    }

    /// The positions on the device, for the producer.
    pub fn residency(&self) -> &Arc<Residency> {
        &self.residency
    }

    /// The texture and bind group of `pos`, if it is held.
    pub fn get(&self, pos: usize) -> Option<(&wgpu::Texture, &wgpu::BindGroup)> {
        self.entries
            .get(&pos)
            .map(|e| (&**e.texture.block(), &*e.bind))
    }

    /// Counts a frame shown from the tier, and ticks passed over.
    pub fn count_shown(&mut self, shown: bool, passed_over: u64) {
        self.stats.shown += u64::from(shown);
        self.stats.passed_over += passed_over;
    }

    /// Keeps a copy of `from` (a frame-queue slot on screen, so nothing
    /// writes it until the next frame replaces it) as position `pos`, if
    /// the budget has room. The copy is queued on the device ahead of any
    /// later upload into the slot.
    pub fn store(
        &mut self,
        gpu: &Gpu,
        renderer: &Renderer,
        pos: usize,
        from: &wgpu::Texture,
    ) -> Result<(), stagehand_gpu::Error> {
        if self.full || self.entries.contains_key(&pos) {
            return Ok(());
        }
        let Ok(texture) = self.pool.take_texture(&self.desc) else {
            // Over budget, or the device is out of memory: the tier holds
            // what it has.
            self.full = true;
            return Ok(());
        };
        let mut encoder = gpu.device().create_command_encoder(&Default::default())?;
        encoder.copy_texture_to_texture(
            from.as_image_copy(),
            texture.block().as_image_copy(),
            from.size(),
        );
        gpu.queue().submit([encoder.finish()?])?;
        let bind = renderer.bind(gpu, texture.block())?;
        self.stats.frames += 1;
        self.stats.bytes = self.pool.stats().held;
        self.entries.insert(pos, Entry { texture, bind });
        self.residency.insert(pos);
        Ok(())
    }

    /// Its numbers so far.
    pub fn stats(&self) -> GpuCacheStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::Handoff;

    #[test]
    fn a_tick_left_to_the_tier_below_a_seek_is_discarded_not_passed_over() {
        let handoff = Handoff::new(4);
        assert!(handoff.leave_to_tier(3));
        assert_eq!(handoff.discard_before(10), 1);
        // The producer was already on its way with tick 4 of the old place.
        assert!(handoff.leave_to_tier(4));
        assert_eq!(handoff.take(10), (false, 0), "nothing passed over");
        assert_eq!(handoff.discarded(), 2);
    }
}
