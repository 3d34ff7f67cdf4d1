//! [`FrameCache`]: decoded frames held in RAM under a byte budget, filled
//! ahead of the playhead by decode threads, with a read-behind kept for
//! stepping back, and the least useful frames evicted first.
//!
//! Positions are indices into a sequence (0 .. `len`). Usefulness is the
//! distance from the playhead in play order: frames just ahead are the
//! most useful, then frames just behind (within the read-behind), then
//! frames further ahead. With looping, "ahead" wraps past the end to the
//! start, and every frame that fits is kept: the next pass shows it again.
//! Without looping, a frame the playhead has passed by more than the
//! read-behind is let go at once: play will not come back to it unless a
//! seek does, and its buffer is the one the next frame decoded is written
//! into. Keeping it would cost more than the frame is worth on the pass
//! that made it: every frame kept is memory the process has never
//! touched, which the kernel faults in and clears page by page on the
//! decode threads (a third of the CPU of a 4K ProRes pass measured on a
//! two-core machine), while a frame let go comes back as a buffer already
//! touched. A longer read-behind keeps more of what was played.
//!
//! The GPU tier ([`gpu`]) keeps landed frames on the device as well, and
//! the frames' host memory comes from recycled buffers ([`buffers`]).
//!
//! The player and the decoders meet here:
//! - decoders [`claim`](FrameCache::claim) the most useful position that
//!   is neither held nor being decoded (waiting while there is none), and
//!   [`complete`](FrameCache::complete) it with the decoded frame or error;
//! - the player [`fetch`](FrameCache::fetch)es the frame it needs next
//!   (a hit when it is already decoded, a miss when it has to wait) and
//!   moves the playhead with [`set_playhead`](FrameCache::set_playhead).
//!
//! A frame that does not fit the budget (the budget is smaller than a
//! frame, or everything held is more useful) is still handed to the player
//! once: it is kept aside until fetched, never retained.

pub mod buffers;
pub mod gpu;

use crate::PlayError;
use crate::source::{Frame, Gaps};
use parking_lot::{Condvar, Mutex};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a fetch waits between asking whether the frame is still worth
/// waiting for.
const ASK_EVERY: Duration = Duration::from_millis(4);

/// How a frame cache is sized.
#[derive(Clone, Copy, Debug)]
pub struct CacheConfig {
    /// Bytes of decoded frames it may hold; 0 holds none (every frame is
    /// decoded when needed and dropped after its upload).
    pub budget: u64,
    /// Frames behind the playhead to keep for stepping back (without
    /// looping, frames further behind are let go).
    pub read_behind: usize,
    /// Whether play wraps from the last position to the first, at the
    /// start ([`FrameCache::set_looped`] changes it).
    pub looped: bool,
    /// Frames the decoders may run ahead when nothing is retained (budget
    /// too small): the hand-over room. At least 1.
    pub hand_over: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            budget: default_budget(),
            read_behind: 12,
            looped: false,
            hand_over: 2,
        }
    }
}

/// The default budget: the smaller of 4 GiB and a quarter of RAM.
pub fn default_budget() -> u64 {
    const CAP: u64 = 4 << 30;
    total_memory().map_or(CAP, |ram| CAP.min(ram / 4))
}

/// Total RAM in bytes, where the system says (Linux: `/proc/meminfo`).
pub fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What a frame cache has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Fetches that found their frame decoded.
    pub hits: u64,
    /// Fetches that had to wait for a decode.
    pub misses: u64,
    /// Frames decoded.
    pub decoded: u64,
    /// Frames evicted to make room.
    pub evicted: u64,
    /// Frames let go because play passed them by more than the read-behind
    /// (without looping): not for room.
    pub played_let_go: u64,
    /// Frames handed over without being retained (they did not fit).
    pub passed_through: u64,
    /// Bytes of decoded frames waiting to be handed over outside the
    /// budget: the next frame, when the budget is smaller than a frame or
    /// everything held is more useful.
    pub aside_bytes: u64,
    /// Most bytes held and set aside together.
    pub peak_total_bytes: u64,
    /// Frames held now.
    pub frames: u64,
    /// Bytes held now.
    pub bytes: u64,
    /// Most bytes held at once.
    pub peak_bytes: u64,
    /// The budget.
    pub budget: u64,
}

/// Where a position stands from the playhead, in play order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Ahead by this many positions (the playhead itself is ahead by 0).
    Ahead(usize),
    /// Behind by this many, within the read-behind.
    Behind(usize),
    /// Behind beyond the read-behind (not looping): needed again only
    /// after a seek, so never kept.
    Far(usize),
}

/// A decoded frame or why it could not be.
type Decoded = Result<Arc<Frame>, Arc<PlayError>>;

struct State {
    /// Retained frames (or decode errors), by position.
    held: HashMap<usize, Decoded>,
    /// Frames that did not fit, waiting for their one fetch.
    aside: HashMap<usize, Decoded>,
    /// Positions being decoded.
    claimed: HashSet<usize>,
    /// Positions a fetch is waiting for: decoded first, wherever the
    /// playhead is (a seek may have moved it away from them).
    fetching: HashSet<usize>,
    playhead: usize,
    /// The position the player last fetched: decoders do not decode it
    /// again for the same pass.
    consumed: Option<usize>,
    /// Positions the device holds (the GPU tier): their decoded copies
    /// were let go, and decoders do not decode them again unless a fetch
    /// asks.
    on_device: HashSet<usize>,
    stats: CacheStats,
    closed: bool,
}

impl State {
    /// Nothing held, claimed or asked for, under a budget of `budget`
    /// bytes, the playhead at 0.
    fn empty(budget: u64) -> Self {
        Self {
            held: HashMap::new(),
            aside: HashMap::new(),
            claimed: HashSet::new(),
            fetching: HashSet::new(),
            playhead: 0,
            consumed: None,
            on_device: HashSet::new(),
            stats: CacheStats {
                budget,
                ..CacheStats::default()
            },
            closed: false,
        }
    }

    /// Retains `frame`, of `need` bytes, at `pos`.
    fn hold(&mut self, pos: usize, frame: Decoded, need: u64) {
        self.stats.bytes += need;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.bytes);
        self.held.insert(pos, frame);
    }

    /// Sets `frame`, of `need` bytes, aside at `pos` for one fetch, in
    /// place of any set aside there before.
    fn set_aside(&mut self, pos: usize, frame: Decoded, need: u64) {
        self.stats.aside_bytes += need;
        if let Some(old) = self.aside.insert(pos, frame) {
            self.stats.aside_bytes -= FrameCache::bytes_of(&old);
        }
    }

    /// Whether the frame at `p` is held, set aside or being decoded.
    fn taken(&self, p: &usize) -> bool {
        self.held.contains_key(p) || self.aside.contains_key(p) || self.claimed.contains(p)
    }
}

/// Decoded frames under a byte budget; see the module documentation.
pub struct FrameCache {
    config: CacheConfig,
    /// Positions in the sequence.
    len: usize,
    /// Positions that are gaps: never decoded, never fetched.
    skip: Gaps,
    /// Bytes of one decoded frame (all frames of a sequence share a size).
    frame_bytes: u64,
    /// Whether play wraps from the last position to the first.
    looped: AtomicBool,
    /// The in and out points: the first position played and one past the
    /// last (0 and `len` unless set). Frames outside are the least useful.
    span: Mutex<(usize, usize)>,
    state: Mutex<State>,
    changed: Condvar,
}

/// Why a wait on the cache ended without a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closed {
    /// [`FrameCache::close`] was called.
    Closed,
    /// The caller stopped waiting ([`FrameCache::fetch_while`]).
    GaveUp,
}

impl FrameCache {
    /// A cache over `len` positions, `skip` of which are gaps, for frames
    /// of `frame_bytes` bytes each.
    pub fn new(config: CacheConfig, len: usize, skip: Gaps, frame_bytes: u64) -> Self {
        let config = CacheConfig {
            hand_over: config.hand_over.max(1),
            ..config
        };
        Self {
            config,
            len,
            skip,
            frame_bytes: frame_bytes.max(1),
            looped: AtomicBool::new(config.looped),
            span: Mutex::new((0, len)),
            state: Mutex::new(State::empty(config.budget)),
            changed: Condvar::new(),
        }
    }

    /// Frames the budget holds.
    pub fn capacity(&self) -> usize {
        usize::try_from(self.config.budget / self.frame_bytes).unwrap_or(usize::MAX)
    }

    fn looped(&self) -> bool {
        self.looped.load(Ordering::Relaxed)
    }

    /// The in and out points now (first, one past the last).
    fn span(&self) -> (usize, usize) {
        *self.span.lock()
    }

    /// Plays positions `first` to `end - 1` only (clamped to the
    /// sequence): loops wrap from the last to the first, decoding runs
    /// ahead inside them, and frames outside are the first let go.
    pub fn set_range(&self, first: usize, end: usize) {
        let end = end.clamp(1, self.len.max(1));
        *self.span.lock() = (first.min(end - 1), end);
        let mut state = self.state.lock();
        self.let_go_of_played(&mut state);
        drop(state);
        self.changed.notify_all();
    }

    /// Play wraps from the last position to the first (`true`), or stops
    /// there: without looping, frames behind the read-behind are let go.
    pub fn set_looped(&self, looped: bool) {
        self.looped.store(looped, Ordering::Relaxed);
        let mut state = self.state.lock();
        self.let_go_of_played(&mut state);
        drop(state);
        self.changed.notify_all();
    }

    /// Lets go of the frames held that the playhead has passed by more than
    /// the read-behind (none when looping).
    fn let_go_of_played(&self, state: &mut State) {
        if self.looped() {
            return;
        }
        let playhead = state.playhead;
        let played: Vec<usize> = state
            .held
            .keys()
            .copied()
            .filter(|&p| matches!(self.place(playhead, p), Place::Far(_)))
            .collect();
        for p in played {
            if let Some(frame) = state.held.remove(&p) {
                state.stats.bytes -= Self::bytes_of(&frame);
                state.stats.played_let_go += 1;
            }
        }
        state.stats.frames = state.held.len() as u64;
    }

    /// Where `pos` stands from the playhead, counted inside the in and
    /// out points (outside them: far).
    fn place(&self, playhead: usize, pos: usize) -> Place {
        let (first, end) = self.span();
        if !(first..end).contains(&pos) {
            return Place::Far(self.len);
        }
        let len = end - first;
        let (playhead, pos) = (playhead.clamp(first, end - 1) - first, pos - first);
        let (ahead, behind) = if self.looped() {
            (
                Some((pos + len - playhead) % len),
                Some((playhead + len - pos) % len),
            )
        } else if pos >= playhead {
            (Some(pos - playhead), None)
        } else {
            (None, Some(playhead - pos))
        };
        match (ahead, behind) {
            (Some(a), Some(b)) if b <= self.config.read_behind && b < a => Place::Behind(b),
            (Some(a), _) => Place::Ahead(a),
            (None, Some(b)) if b <= self.config.read_behind => Place::Behind(b),
            (None, Some(b)) => Place::Far(b),
            (None, None) => Place::Far(usize::MAX),
        }
    }

    /// Usefulness of `pos`: lower is more useful. Ahead by `d` ranks `2d`,
    /// behind by `b` within the read-behind `2b + 1`, and frames behind
    /// beyond it after all of those, farthest last.
    fn rank(&self, playhead: usize, pos: usize) -> u64 {
        match self.place(playhead, pos) {
            Place::Ahead(d) => 2 * d as u64,
            Place::Behind(b) => 2 * b as u64 + 1,
            Place::Far(b) => (1 << 62) + b as u64,
        }
    }

    /// Moves the playhead: the position the player fetches next.
    pub fn set_playhead(&self, pos: usize) {
        let mut state = self.state.lock();
        state.playhead = pos.min(self.len.saturating_sub(1));
        self.let_go_of_played(&mut state);
        // Frames set aside for positions now behind (or, looping, a whole
        // pass away) will not be fetched soon: let them go.
        let near = self.window(&state) + self.config.hand_over;
        let stale: Vec<usize> = state
            .aside
            .keys()
            .copied()
            .filter(|&p| !matches!(self.place(state.playhead, p), Place::Ahead(d) if d <= near))
            .collect();
        for p in stale {
            if let Some(frame) = state.aside.remove(&p) {
                state.stats.aside_bytes -= Self::bytes_of(&frame);
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The next position a decoder should decode, marked as claimed;
    /// waits while every useful position is held or claimed. `None` once
    /// the cache is closed.
    pub fn claim(&self) -> Option<usize> {
        let mut state = self.state.lock();
        loop {
            if state.closed {
                return None;
            }
            if let Some(pos) = self.wanted(&state) {
                state.claimed.insert(pos);
                return Some(pos);
            }
            self.changed.wait(&mut state);
        }
    }

    /// How many frames ahead of the playhead decoding may run: the
    /// frames the budget holds less the read-behind frames it keeps, or the
    /// hand-over room when the budget holds less than that.
    fn window(&self, state: &State) -> usize {
        let behind_held = state
            .held
            .keys()
            .filter(|&&p| matches!(self.place(state.playhead, p), Place::Behind(_)))
            .count();
        let room = self.capacity().saturating_sub(behind_held);
        if self.capacity() == 0 {
            self.config.hand_over
        } else {
            room.max(1)
        }
    }

    /// The most useful position neither held, set aside nor claimed, among
    /// the next [`window`](Self::window) frames ahead (gaps not counted).
    /// The frame the player needs next is always wanted; a frame after it
    /// only if it would be retained, or, when the budget holds no frame,
    /// while the hand-over has room.
    fn wanted(&self, state: &State) -> Option<usize> {
        if let Some(&p) = state
            .fetching
            .iter()
            .find(|&p| !state.taken(p) && !self.skip.contains(*p))
        {
            return Some(p);
        }
        let start = usize::from(state.consumed == Some(state.playhead));
        let (p, frames) = self.next_to_decode(state, start, self.window(state))?;
        let aside_room = self.capacity() == 0 && state.aside.len() < self.config.hand_over;
        let next = frames == 1;
        (next || aside_room || self.fits(state, p)).then_some(p)
    }

    /// The first position from `start` ahead of the playhead (in play
    /// order) neither taken nor on the device, within `window` frames
    /// (gaps not counted), with the frames counted to it, itself
    /// included.
    fn next_to_decode(&self, state: &State, start: usize, window: usize) -> Option<(usize, usize)> {
        let (first, end) = self.span();
        let playhead = state.playhead.clamp(first, end - 1);
        let mut frames = 0;
        let mut d = start;
        while d < end - first {
            let p = if self.looped() {
                first + (playhead - first + d) % (end - first)
            } else {
                playhead + d
            };
            if p >= end || frames >= window {
                return None;
            }
            // A run of gaps is passed in one step, however long.
            if let Some(run) = self.skip.run_at(p) {
                d += run.end - p;
                continue;
            }
            d += 1;
            frames += 1;
            if !(state.taken(&p) || state.on_device.contains(&p)) {
                return Some((p, frames));
            }
        }
        None
    }

    /// Whether a frame at `pos` would be retained (room now, or less
    /// useful frames to evict for it).
    fn fits(&self, state: &State, pos: usize) -> bool {
        let need = self.frame_bytes;
        let played = matches!(self.place(state.playhead, pos), Place::Far(_));
        if need > self.config.budget || played {
            return false;
        }
        let free = self.config.budget - state.stats.bytes;
        if free >= need {
            return true;
        }
        let rank = self.rank(state.playhead, pos);
        let evictable: u64 = state
            .held
            .iter()
            .filter(|&(&p, _)| self.rank(state.playhead, p) > rank)
            .map(|(_, f)| Self::bytes_of(f))
            .sum();
        free + evictable >= need
    }

    fn bytes_of(frame: &Decoded) -> u64 {
        frame.as_ref().map_or(0, |f| f.info.bytes() as u64)
    }

    /// Hands in a decoded frame (or its error) for a claimed position:
    /// retained if it fits (evicting less useful frames), else set aside
    /// for one fetch.
    pub fn complete(&self, pos: usize, frame: Result<Frame, PlayError>) {
        let frame: Decoded = frame.map(Arc::new).map_err(Arc::new);
        let mut state = self.state.lock();
        state.claimed.remove(&pos);
        if frame.is_ok() {
            state.stats.decoded += 1;
        }
        self.insert(&mut state, pos, frame);
        drop(state);
        self.changed.notify_all();
    }

    /// Puts a frame in at `pos` without a claim (a user's own decoder, or
    /// a test's script). Returns whether it was retained.
    pub fn insert_frame(&self, pos: usize, frame: Frame) -> bool {
        let mut state = self.state.lock();
        state.stats.decoded += 1;
        let kept = self.insert(&mut state, pos, Ok(Arc::new(frame)));
        drop(state);
        self.changed.notify_all();
        kept
    }

    /// Puts a decoded frame in at `pos`: retained if it fits (evicting
    /// less useful frames), else set aside for one fetch. Returns whether
    /// it was retained.
    fn insert(&self, state: &mut State, pos: usize, frame: Decoded) -> bool {
        if pos >= self.len || state.closed {
            return false;
        }
        let need = Self::bytes_of(&frame);
        if state.held.contains_key(&pos) {
            return true;
        }
        let played = matches!(self.place(state.playhead, pos), Place::Far(_));
        if !played {
            self.evict_for(state, self.rank(state.playhead, pos), need);
        }
        let kept = !played && state.stats.bytes + need <= self.config.budget;
        if kept {
            state.hold(pos, frame, need);
        } else {
            state.set_aside(pos, frame, need);
        }
        let total = state.stats.bytes + state.stats.aside_bytes;
        state.stats.peak_total_bytes = state.stats.peak_total_bytes.max(total);
        state.stats.frames = state.held.len() as u64;
        kept
    }

    /// Evicts the least useful frames while they are less useful than a
    /// frame of rank `rank` and `need` bytes, and it does not fit.
    fn evict_for(&self, state: &mut State, rank: u64, need: u64) {
        while state.stats.bytes + need > self.config.budget {
            let victim = state
                .held
                .keys()
                .copied()
                .map(|p| (self.rank(state.playhead, p), p))
                .filter(|&(r, _)| r > rank)
                .max();
            let Some((_, victim)) = victim else { break };
            if let Some(old) = state.held.remove(&victim) {
                state.stats.bytes -= Self::bytes_of(&old);
                state.stats.evicted += 1;
            }
        }
    }

    /// The frame at `pos` if it is decoded, counting a hit or a miss;
    /// does not wait.
    pub fn get(&self, pos: usize) -> Option<Result<Arc<Frame>, Arc<PlayError>>> {
        let mut state = self.state.lock();
        let found = Self::take(&mut state, pos);
        if found.is_some() {
            state.stats.hits += 1;
        } else {
            state.stats.misses += 1;
        }
        drop(state);
        // Room in the hand-over, or the next position, may now be wanted.
        self.changed.notify_all();
        found
    }

    /// Hands out the frame at `pos`, marking it consumed.
    fn take(state: &mut State, pos: usize) -> Option<Decoded> {
        let found = match state.held.get(&pos) {
            Some(f) => Some(f.clone()),
            None => {
                let f = state.aside.remove(&pos)?;
                state.stats.aside_bytes -= Self::bytes_of(&f);
                state.stats.passed_through += 1;
                Some(f)
            }
        };
        state.consumed = Some(pos);
        found
    }

    /// The frame at `pos`, waiting for its decode: a hit if it was already
    /// decoded, a miss if not. Errs with the decode's error, or `Closed`.
    pub fn fetch(&self, pos: usize) -> Result<Result<Arc<Frame>, Arc<PlayError>>, Closed> {
        self.fetch_while(pos, || true)
    }

    /// As [`fetch`](Self::fetch), asking `worth_waiting` (with the cache
    /// unlocked, so it may ask the cache) every few milliseconds while the
    /// frame is not there: once it says no, errs
    /// with [`Closed::GaveUp`] (a realtime player whose frame's time has
    /// passed). The frame is still decoded, for whoever asks next.
    pub fn fetch_while(
        &self,
        pos: usize,
        mut worth_waiting: impl FnMut() -> bool,
    ) -> Result<Result<Arc<Frame>, Arc<PlayError>>, Closed> {
        let mut state = self.state.lock();
        let mut missed = false;
        loop {
            if state.closed {
                state.fetching.remove(&pos);
                return Err(Closed::Closed);
            }
            if let Some(found) = Self::take(&mut state, pos) {
                Self::end_fetch(&mut state, pos, missed);
                drop(state);
                self.changed.notify_all();
                return Ok(found);
            }
            // Asked with the lock let go: it may look at the cache itself.
            if missed && !parking_lot::MutexGuard::unlocked(&mut state, &mut worth_waiting) {
                Self::end_fetch(&mut state, pos, true);
                return Err(Closed::GaveUp);
            }
            missed = true;
            self.wait_for_decode(&mut state, pos);
        }
    }

    /// Ends a fetch of `pos`, counting it a miss where it had to wait
    /// (`missed`), else a hit.
    fn end_fetch(state: &mut State, pos: usize, missed: bool) {
        state.fetching.remove(&pos);
        if missed {
            state.stats.misses += 1;
        } else {
            state.stats.hits += 1;
        }
    }

    /// Asks the decoders for `pos` first, where no fetch has yet, and waits
    /// for a change, or for [`ASK_EVERY`] at most.
    fn wait_for_decode(&self, state: &mut parking_lot::MutexGuard<'_, State>, pos: usize) {
        if state.fetching.insert(pos) {
            // Decoders decode it first, wherever the playhead went.
            self.changed.notify_all();
        }
        self.changed.wait_for(state, ASK_EVERY);
    }

    /// The device now holds the frame at `pos` (the GPU tier's upload of
    /// it landed): its decoded copy is let go, so its buffer goes back for
    /// the next frame decoded instead of the cache growing into memory
    /// never touched, and decoders leave `pos` alone from now on (a fetch
    /// of it still decodes it again).
    pub fn moved_to_device(&self, pos: usize) {
        let mut state = self.state.lock();
        if let Some(frame) = state.held.remove(&pos) {
            state.stats.bytes -= Self::bytes_of(&frame);
            state.stats.frames = state.held.len() as u64;
        }
        state.on_device.insert(pos);
        drop(state);
        self.changed.notify_all();
    }

    /// Calls `each` with every position held (decoded, or failed), under
    /// one look at the cache: for a cache bar.
    pub fn held_positions(&self, mut each: impl FnMut(usize)) {
        let state = self.state.lock();
        for &pos in state.held.keys() {
            each(pos);
        }
    }

    /// Calls `each` with every position whose frame went to the device
    /// (the GPU tier) and left RAM.
    pub fn device_positions(&self, mut each: impl FnMut(usize)) {
        let state = self.state.lock();
        for &pos in &state.on_device {
            each(pos);
        }
    }

    /// Whether `pos` is decoded and held.
    pub fn contains(&self, pos: usize) -> bool {
        self.state.lock().held.contains_key(&pos)
    }

    /// Whether `pos` is decoded (held or set aside for its fetch), or a
    /// decoder is on it now.
    pub fn decoded_or_decoding(&self, pos: usize) -> bool {
        let state = self.state.lock();
        state.held.contains_key(&pos)
            || state.aside.contains_key(&pos)
            || state.claimed.contains(&pos)
    }

    /// Waits until `n` frames are held or nothing more will be decoded
    /// (everything wanted is held, or the cache is closed), or `timeout`
    /// passes. Returns how many are held.
    pub fn wait_filled(&self, n: usize, timeout: Duration) -> usize {
        let deadline = std::time::Instant::now().checked_add(timeout);
        let mut state = self.state.lock();
        loop {
            let held = state.held.len();
            let idle = state.claimed.is_empty() && self.wanted(&state).is_none();
            if held >= n || state.closed || idle {
                return held;
            }
            match deadline {
                Some(d) => {
                    if self.changed.wait_until(&mut state, d).timed_out() {
                        return state.held.len();
                    }
                }
                None => self.changed.wait(&mut state),
            }
        }
    }

    /// Whether nothing more will be decoded until the playhead moves (or
    /// the cache is closed): what [`wait_filled`](Self::wait_filled) ends on
    /// short of its count.
    pub fn idle(&self) -> bool {
        let state = self.state.lock();
        state.closed || (state.claimed.is_empty() && self.wanted(&state).is_none())
    }

    /// Stops the cache: decoders waiting in [`claim`](Self::claim) get
    /// `None`, fetches get `Closed`, and every frame is let go.
    pub fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.held.clear();
        state.aside.clear();
        state.stats.bytes = 0;
        state.stats.aside_bytes = 0;
        state.stats.frames = 0;
        drop(state);
        self.changed.notify_all();
    }

    /// Its numbers so far.
    pub fn stats(&self) -> CacheStats {
        self.state.lock().stats
    }
}

impl std::fmt::Debug for FrameCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameCache")
            .field("len", &self.len)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::buffers::FrameBuffers;
    use crate::source::{FrameInfo, SampleType};
    use bytes::Bytes;

    fn frame(tag: u8) -> Frame {
        Frame {
            info: FrameInfo {
                width: 4,
                height: 1,
                channels: 1,
                sample: SampleType::U8,
                yuv: None,
            },
            data: Bytes::from(vec![tag; 4]).into(),
        }
    }

    fn cache(budget_frames: u64, looped: bool, len: usize) -> FrameCache {
        let config = CacheConfig {
            budget: budget_frames * 4,
            read_behind: 1,
            looped,
            hand_over: 1,
        };
        FrameCache::new(config, len, Gaps::none(), 4)
    }

    #[test]
    fn a_looped_range_decodes_only_between_its_in_and_out_points_wrapping_at_the_out_point() {
        // Ten positions, a budget of four, play looping 6 to 8 from 7.
        let c = cache(4, true, 10);
        c.set_range(6, 9);
        c.set_playhead(7);
        let mut claimed = Vec::new();
        while let Some(p) = (!c.idle()).then(|| c.claim()).flatten() {
            claimed.push(p);
            c.complete(p, Ok(frame(p as u8)));
            assert!(claimed.len() <= 3, "decoded outside the range: {claimed:?}");
        }
        assert_eq!(claimed, [7, 8, 6], "inside the range, from the playhead on");
        // A frame outside the range is the first to go for one inside.
        let outside = cache(2, true, 10);
        outside.insert_frame(0, frame(0));
        outside.insert_frame(1, frame(1));
        outside.set_range(1, 3);
        outside.set_playhead(1);
        assert!(outside.insert_frame(2, frame(2)));
        assert!(!outside.contains(0) && outside.contains(1) && outside.contains(2));
    }

    #[test]
    fn a_frame_moved_to_the_device_leaves_ram_and_is_not_decoded_again() {
        // A looped sequence of four that the budget holds: with 0, 2 and 3
        // held and 1 on the device, there is nothing left to decode.
        let c = cache(4, true, 4);
        for p in [0, 1, 2, 3] {
            assert!(c.insert_frame(p, frame(p as u8)));
        }
        c.moved_to_device(1);
        assert!(!c.contains(1), "the RAM copy was let go");
        let stats = c.stats();
        assert_eq!((stats.frames, stats.bytes, stats.evicted), (3, 12, 0));
        assert!(c.idle(), "a decoder would decode the device's frame again");
        // A fetch of it (a step that wants its bytes) still gets it decoded.
        c.state.lock().fetching.insert(1);
        assert_eq!(c.claim(), Some(1));
    }

    #[test]
    fn a_fetch_outside_the_decode_window_is_decoded_first() {
        // A seek moved the playhead to 0 while the producer still fetches
        // 6, far outside the window: a decoder must still decode 6, or the
        // producer waits for ever.
        let c = std::sync::Arc::new(cache(2, false, 10));
        c.set_playhead(0);
        let fetching = {
            let c = std::sync::Arc::clone(&c);
            std::thread::spawn(move || c.fetch(6).map(|f| f.is_ok()))
        };
        let started = std::time::Instant::now();
        let claimed = loop {
            // The fetch registers itself when it starts waiting.
            if c.state.lock().fetching.contains(&6) {
                break c.claim();
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the fetch never waited"
            );
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(
            claimed,
            Some(6),
            "the position the producer waits for comes first"
        );
        c.complete(6, Ok(frame(6)));
        assert_eq!(fetching.join().unwrap(), Ok(true));
        assert_eq!(c.claim(), Some(0), "then the window ahead of the playhead");
    }

    #[test]
    fn a_fetch_given_up_returns_at_once_and_its_frame_is_still_decoded() {
        // A realtime producer whose frame's time passed while it waited:
        // it stops waiting, and the frame, decoded later, is there for
        // whoever asks next.
        let c = cache(4, false, 10);
        c.set_playhead(3);
        let mut asked = 0;
        let started = std::time::Instant::now();
        let got = c.fetch_while(3, || {
            asked += 1;
            asked < 3
        });
        assert_eq!(got.map(|f| f.is_ok()), Err(Closed::GaveUp));
        assert_eq!(asked, 3, "asked until it said no");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(c.state.lock().fetching.len(), 0, "no longer fetching 3");
        assert_eq!(c.claim(), Some(3), "3 is still the first to decode");
        c.complete(3, Ok(frame(3)));
        assert!(matches!(c.fetch_while(3, || false), Ok(Ok(_))), "a hit");
        c.close();
        assert_eq!(c.fetch_while(4, || true).map(|_| ()), Err(Closed::Closed));
    }

    #[test]
    fn a_scripted_play_order_counts_hits_and_misses_exactly() {
        let c = cache(3, false, 10);
        for p in 0..3 {
            assert!(c.insert_frame(p, frame(p as u8)));
        }
        // 0, 1, 2 held: three hits. Without looping, a frame the playhead
        // passed by more than the read-behind of 1 is let go: at 2, frame 0.
        for p in 0..3 {
            c.set_playhead(p);
            assert!(c.get(p).is_some());
        }
        assert!(!c.contains(0), "0 is two behind: let go");
        c.set_playhead(3);
        assert!(!c.contains(1), "1 is two behind: let go");
        assert!(c.get(3).is_none(), "3 was never decoded");
        assert!(c.insert_frame(3, frame(3)), "room without evicting");
        assert!(
            c.contains(2),
            "the frame just behind is kept for stepping back"
        );
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.decoded), (3, 1, 4));
        assert_eq!((s.evicted, s.played_let_go), (0, 2), "none for room");
        assert_eq!((s.frames, s.bytes), (2, 8));
    }

    #[test]
    fn a_looped_cache_evicts_the_frame_play_reaches_last() {
        let c = cache(3, true, 10);
        for p in 0..3 {
            assert!(c.insert_frame(p, frame(p as u8)));
        }
        c.set_playhead(3);
        assert!(
            c.contains(0) && c.contains(1),
            "looping keeps what was played"
        );
        // From 3, play reaches 0 in seven frames and 1 in eight; 2 is just
        // behind (kept for stepping back). 3 is worth more than any, and 1
        // goes for it.
        assert!(c.insert_frame(3, frame(3)));
        assert!(!c.contains(1), "1 is the last play reaches");
        assert!(c.contains(0) && c.contains(2));
        assert_eq!(c.stats().evicted, 1);
    }

    #[test]
    fn a_pass_without_looping_lets_played_frames_go_and_their_buffers_are_reused() {
        // A budget that would hold the whole sequence: without looping, the
        // frames played are still let go, so the decoders write into
        // recycled buffers and the memory held stays at the read-behind and
        // the frames ahead.
        let buffers = FrameBuffers::new();
        let c = cache(10, false, 10);
        for p in 0..10 {
            let mut buffer = buffers.take(4).unwrap();
            buffer.as_mut_slice().fill(p as u8);
            let frame = Frame {
                data: buffer.freeze().into(),
                ..frame(0)
            };
            assert!(c.insert_frame(p, frame), "{p} is the playhead's");
            c.set_playhead(p);
            let shown = c.get(p).and_then(|f| f.ok()).map(|f| f.data[0]);
            assert_eq!(shown, Some(p as u8));
            assert!(c.stats().frames <= 2, "at most {p} and the one behind");
        }
        let s = buffers.stats();
        assert!(s.misses <= 3, "buffers allocated: {s:?}");
        assert!(s.hits >= 7, "buffers reused: {s:?}");
    }

    #[test]
    fn a_pass_with_looping_keeps_every_frame_that_fits() {
        let c = cache(10, true, 10);
        for p in 0..10 {
            assert!(c.insert_frame(p, frame(p as u8)));
            c.set_playhead(p);
        }
        c.set_playhead(0);
        assert_eq!(c.stats().frames, 10, "the next pass is all hits");
        for p in 0..10 {
            c.set_playhead(p);
            assert!(c.get(p).is_some(), "{p} was kept");
        }
        assert_eq!(c.stats().evicted, 0);
    }

    #[test]
    fn looping_turned_off_mid_play_lets_played_frames_go_and_on_again_keeps_them() {
        let c = cache(10, true, 10);
        for p in 0..6 {
            assert!(c.insert_frame(p, frame(p as u8)));
        }
        c.set_playhead(5);
        c.set_looped(false);
        assert!(
            (0..4).all(|p| !c.contains(p)),
            "frames more than one behind went"
        );
        assert!(c.contains(4) && c.contains(5));
        assert!(
            !c.insert_frame(1, frame(1)),
            "a played frame is not kept without looping"
        );
        c.set_looped(true);
        assert!(
            c.insert_frame(1, frame(1)),
            "with looping it is ahead again"
        );
        c.set_playhead(9);
        assert!(c.contains(1) && c.contains(4), "and it stays");
    }

    #[test]
    fn a_frame_less_useful_than_everything_held_is_set_aside_once() {
        let c = cache(2, false, 10);
        assert!(c.insert_frame(0, frame(0)));
        assert!(c.insert_frame(1, frame(1)));
        assert!(
            !c.insert_frame(5, frame(5)),
            "5 is farther ahead than 0 and 1"
        );
        assert!(c.get(5).is_some(), "but the player still gets it once");
        assert!(c.get(5).is_none(), "and only once");
        assert!(c.contains(0) && c.contains(1));
    }

    #[test]
    fn looping_ranks_the_start_as_ahead_of_the_end() {
        let c = cache(2, true, 4);
        c.set_playhead(3);
        assert!(c.insert_frame(3, frame(3)));
        assert!(
            c.insert_frame(0, frame(0)),
            "0 comes right after 3 when looping"
        );
        assert!(
            !c.insert_frame(2, frame(2)),
            "2 is just behind: less useful than the two frames ahead"
        );
    }

    #[test]
    fn a_budget_below_one_frame_retains_nothing() {
        let c = cache(0, false, 3);
        assert!(!c.insert_frame(0, frame(0)));
        assert_eq!(c.stats().bytes, 0);
        assert!(c.get(0).is_some());
    }

    #[test]
    fn decoders_claim_in_play_order_and_stop_on_close() {
        let c = Arc::new(cache(2, false, 5));
        assert_eq!(c.claim(), Some(0));
        assert_eq!(c.claim(), Some(1));
        c.complete(0, Ok(frame(0)));
        c.complete(1, Ok(frame(1)));
        let waiter = {
            let c = Arc::clone(&c);
            std::thread::spawn(move || c.claim())
        };
        std::thread::sleep(Duration::from_millis(50));
        c.set_playhead(1);
        // 0 is now just behind and kept, so the budget has room for one
        // frame ahead, 1, which is held: the decoder waits until closed.
        c.close();
        assert_eq!(waiter.join().unwrap(), None);
        assert_eq!(c.stats().bytes, 0, "close lets every frame go");
    }

    /// Decoders and a player over `cache` for `ticks` ticks of `len`
    /// positions, looping; returns the fetches done within 10 s.
    fn play_through(cache: Arc<FrameCache>, len: usize, ticks: usize) -> usize {
        let decoders: Vec<_> = (0..2)
            .map(|_| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    while let Some(pos) = cache.claim() {
                        cache.complete(pos, Ok(frame(pos as u8)));
                    }
                })
            })
            .collect();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let player = {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                for k in 0..ticks {
                    cache.set_playhead(k % len);
                    if cache.fetch(k % len).is_err() {
                        return;
                    }
                    let _ = done_tx.send(());
                }
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut fetched = 0;
        while fetched < ticks {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
            fetched += 1;
        }
        cache.close();
        player.join().unwrap();
        for d in decoders {
            d.join().unwrap();
        }
        fetched
    }

    #[test]
    fn a_cache_smaller_than_a_frame_loops_without_stalling_or_decoding_twice() {
        let config = CacheConfig {
            budget: 0,
            read_behind: 0,
            looped: true,
            hand_over: 3,
        };
        let cache = Arc::new(FrameCache::new(config, 100, Gaps::none(), 4));
        let fetched = play_through(Arc::clone(&cache), 100, 300);
        assert_eq!(
            fetched,
            300,
            "the player got every frame: {:?}",
            cache.stats()
        );
        let s = cache.stats();
        assert!(s.decoded <= 300 + 3, "each fetch decoded about once: {s:?}");
        assert_eq!(s.peak_bytes, 0, "nothing retained");
        assert!(
            s.peak_total_bytes <= 3 * 4,
            "the hand-over stays bounded: {s:?}"
        );
    }

    #[test]
    fn a_cache_that_holds_the_loop_decodes_each_frame_once() {
        let config = CacheConfig {
            budget: 10 * 4,
            read_behind: 0,
            looped: true,
            hand_over: 3,
        };
        let cache = Arc::new(FrameCache::new(config, 10, Gaps::none(), 4));
        assert_eq!(play_through(Arc::clone(&cache), 10, 100), 100);
        let s = cache.stats();
        assert_eq!(s.decoded, 10, "{s:?}");
        assert!(
            s.peak_total_bytes <= s.budget + 4,
            "within a frame of the budget: {s:?}"
        );
    }

    #[test]
    fn two_frames_ten_million_positions_apart_are_found_at_once() {
        // Frames 0 and 9999999, everything between a gap: looking for the
        // next frame to decode passes the run in one step.
        let len = 10_000_000;
        let cache = cache_with_gaps(Gaps::between([0, len - 1], len), len);
        // (Position by position, each of these looks took ten million
        // steps under the cache's lock.)
        cache.set_playhead(1);
        for _ in 0..100 {
            let state = cache.state.lock();
            assert_eq!(cache.wanted(&state), Some(len - 1));
        }
        assert_eq!(cache.claim(), Some(len - 1));
    }

    fn cache_with_gaps(gaps: Gaps, len: usize) -> FrameCache {
        let config = CacheConfig {
            budget: 2 * 4,
            read_behind: 0,
            looped: false,
            hand_over: 1,
        };
        FrameCache::new(config, len, gaps, 4)
    }

    #[test]
    fn gaps_do_not_shrink_how_far_ahead_decoding_runs() {
        // 20 positions on twos: 10 frames, and a budget for all of them.
        let gaps = Gaps::between((0..20).filter(|p| p % 2 == 0), 20);
        let config = CacheConfig {
            budget: 10 * 4,
            read_behind: 0,
            looped: false,
            hand_over: 3,
        };
        let cache = Arc::new(FrameCache::new(config, 20, gaps, 4));
        let decoder = {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                while let Some(pos) = cache.claim() {
                    cache.complete(pos, Ok(frame(pos as u8)));
                }
            })
        };
        assert_eq!(
            cache.wait_filled(10, Duration::from_secs(10)),
            10,
            "{:?}",
            cache.stats()
        );
        cache.close();
        decoder.join().unwrap();
    }
}
