//! Live counts and bytes per object kind, with peaks.
//!
//! Every object stagehand creates carries a [`Token`]; creating it adds to its
//! kind's counters and dropping it subtracts. Counters are relaxed atomics: a
//! snapshot taken while other threads create objects is a consistent view of
//! each counter, not of all counters together.

use super::kind::ObjectKind;
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counters for one object kind.
#[derive(Default)]
struct KindCounters {
    /// Objects alive now.
    count: AtomicU64,
    /// Resource bytes of the objects alive now.
    bytes: AtomicU64,
    /// Highest `count` since start or the last reset; never below `count`.
    peak_count: AtomicU64,
    /// Highest `bytes` since start or the last reset; never below `bytes`.
    peak_bytes: AtomicU64,
    /// Objects ever created; only grows.
    created: AtomicU64,
}

impl KindCounters {
    fn add(&self, bytes: u64) {
        let count = self.count.fetch_add(1, Relaxed) + 1;
        raise(&self.peak_count, count);
        self.created.fetch_add(1, Relaxed);
        if bytes > 0 {
            let now = self.bytes.fetch_add(bytes, Relaxed) + bytes;
            raise(&self.peak_bytes, now);
        }
    }

    fn sub(&self, bytes: u64) {
        let before = self.count.fetch_sub(1, Relaxed);
        debug_assert!(before > 0, "released more objects than were created");
        if bytes > 0 {
            let before = self.bytes.fetch_sub(bytes, Relaxed);
            debug_assert!(before >= bytes, "released more bytes than were counted");
        }
    }

    fn reset_peaks(&self) {
        self.peak_count.store(self.count.load(Relaxed), Relaxed);
        self.peak_bytes.store(self.bytes.load(Relaxed), Relaxed);
    }
}

/// Raises `peak` to `now` if `now` is higher. The plain load first keeps the
/// common case (peak already above) free of a read-modify-write.
fn raise(peak: &AtomicU64, now: u64) {
    if now > peak.load(Relaxed) {
        peak.fetch_max(now, Relaxed);
    }
}

/// An object that was given a label, kept so that a leak can be named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiveObject {
    /// The object's kind.
    pub kind: ObjectKind,
    /// The label it was created with.
    pub label: String,
    /// Creation order among labelled objects of its tracker, from 1; later
    /// objects have larger ids.
    pub id: u64,
}

/// Counts and bytes of every object kind created through one GPU context.
///
/// Shared by every handle the context creates; cheap to clone through `Arc`.
pub struct Tracker {
    /// One set of counters per [`ObjectKind`], indexed by [`ObjectKind::index`].
    kinds: [KindCounters; ObjectKind::COUNT],
    /// Source of object ids; the next id to hand out.
    next_id: AtomicU64,
    /// Labelled objects alive now, by id. Unlabelled objects are not listed,
    /// which keeps their creation to a handful of atomic operations.
    labelled: Mutex<HashMap<u64, LiveObject>>,
    /// Errors the backend raised outside any error scope stagehand opened.
    uncaptured_errors: AtomicU64,
    /// The latest of those errors, for the report.
    last_uncaptured: Mutex<Option<String>>,
}

impl Tracker {
    /// A tracker with every counter at zero.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            kinds: Default::default(),
            next_id: AtomicU64::new(1),
            labelled: Mutex::new(HashMap::new()),
            uncaptured_errors: AtomicU64::new(0),
            last_uncaptured: Mutex::new(None),
        })
    }

    /// Counts a new object of `kind` owning `bytes`, returning the token whose
    /// drop un-counts it.
    pub fn register(self: &Arc<Self>, kind: ObjectKind, bytes: u64, label: Option<&str>) -> Token {
        self.kinds[kind.index()].add(bytes);
        // Only labelled objects need an id (to be named by a leak check), so
        // unlabelled ones skip both the counter and the lock.
        let id = match label {
            Some(label) => {
                let id = self.next_id.fetch_add(1, Relaxed);
                let live = LiveObject {
                    kind,
                    label: label.to_owned(),
                    id,
                };
                self.labelled.lock().insert(id, live);
                id
            }
            None => 0,
        };
        Token {
            tracker: Arc::clone(self),
            kind,
            bytes,
            id,
        }
    }

    fn release(&self, token: &Token) {
        if token.id != 0 {
            self.labelled.lock().remove(&token.id);
        }
        self.kinds[token.kind.index()].sub(token.bytes);
    }

    /// Current and peak numbers of one kind.
    pub fn stats(&self, kind: ObjectKind) -> KindStats {
        let c = &self.kinds[kind.index()];
        KindStats {
            kind,
            count: c.count.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            peak_count: c.peak_count.load(Relaxed),
            peak_bytes: c.peak_bytes.load(Relaxed),
            created: c.created.load(Relaxed),
        }
    }

    /// Current and peak numbers of every kind, in [`ObjectKind::ALL`] order.
    pub fn snapshot(&self) -> Snapshot {
        let kinds: Vec<KindStats> = ObjectKind::ALL.iter().map(|&k| self.stats(k)).collect();
        Snapshot {
            total_bytes: kinds.iter().map(|k| k.bytes).sum(),
            kinds,
            next_id: self.next_id.load(Relaxed),
        }
    }

    /// Lowers every peak to the current value, so later peaks measure from now.
    pub fn reset_peaks(&self) {
        for c in &self.kinds {
            c.reset_peaks();
        }
    }

    /// Labelled objects alive now whose id is at least `since`, oldest first.
    pub fn live_labelled_since(&self, since: u64) -> Vec<LiveObject> {
        let mut live: Vec<_> = self
            .labelled
            .lock()
            .values()
            .filter(|o| o.id >= since)
            .cloned()
            .collect();
        live.sort_by_key(|o| o.id);
        live
    }

    /// Records an error the backend raised outside any error scope.
    pub fn record_uncaptured_error(&self, message: String) {
        self.uncaptured_errors.fetch_add(1, Relaxed);
        *self.last_uncaptured.lock() = Some(message);
    }

    /// How many errors the backend raised outside stagehand's error scopes,
    /// and the latest one.
    pub fn uncaptured_errors(&self) -> (u64, Option<String>) {
        (
            self.uncaptured_errors.load(Relaxed),
            self.last_uncaptured.lock().clone(),
        )
    }
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live: u64 = self.kinds.iter().map(|c| c.count.load(Relaxed)).sum();
        f.debug_struct("Tracker")
            .field("live_objects", &live)
            .field("total_bytes", &self.snapshot().total_bytes)
            .finish_non_exhaustive()
    }
}

/// Proof that one object is counted; dropping it un-counts the object.
pub struct Token {
    tracker: Arc<Tracker>,
    kind: ObjectKind,
    bytes: u64,
    /// Key in the tracker's labelled map; 0 for an unlabelled object.
    id: u64,
}

impl Token {
    /// The tracker this token counts in.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// The kind it counts.
    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    /// The resource bytes it counts.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.tracker.release(self);
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("kind", &self.kind)
            .field("bytes", &self.bytes)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Numbers for one kind at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KindStats {
    /// The kind counted.
    pub kind: ObjectKind,
    /// Objects alive.
    pub count: u64,
    /// Resource bytes of the objects alive.
    pub bytes: u64,
    /// Highest `count` since start or the last reset.
    pub peak_count: u64,
    /// Highest `bytes` since start or the last reset.
    pub peak_bytes: u64,
    /// Objects ever created.
    pub created: u64,
}

/// Numbers for every kind at one moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// One entry per kind, in [`ObjectKind::ALL`] order.
    pub kinds: Vec<KindStats>,
    /// Resource bytes of all kinds.
    pub total_bytes: u64,
    /// The id the next labelled object will get; labelled objects created
    /// after this snapshot have ids at least this.
    pub next_id: u64,
}

impl Snapshot {
    /// The numbers for one kind.
    pub fn get(&self, kind: ObjectKind) -> KindStats {
        self.kinds[kind.index()]
    }

    /// Objects alive, all kinds together.
    pub fn total_count(&self) -> u64 {
        self.kinds.iter().map(|k| k.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_and_drop_return_counts_to_zero() {
        let t = Tracker::new();
        let a = t.register(ObjectKind::Buffer, 100, None);
        let b = t.register(ObjectKind::Buffer, 28, Some("b"));
        let s = t.stats(ObjectKind::Buffer);
        assert_eq!((s.count, s.bytes), (2, 128));
        drop(a);
        drop(b);
        let s = t.stats(ObjectKind::Buffer);
        assert_eq!(
            (s.count, s.bytes, s.peak_count, s.peak_bytes),
            (0, 0, 2, 128)
        );
        assert!(t.live_labelled_since(0).is_empty());
    }

    #[test]
    fn reset_peaks_lowers_peaks_to_current() {
        let t = Tracker::new();
        let keep = t.register(ObjectKind::Texture, 10, None);
        drop(t.register(ObjectKind::Texture, 90, None));
        assert_eq!(t.stats(ObjectKind::Texture).peak_bytes, 100);
        t.reset_peaks();
        let s = t.stats(ObjectKind::Texture);
        assert_eq!((s.peak_count, s.peak_bytes), (1, 10));
        drop(keep);
    }

    #[test]
    fn counting_from_eight_threads_loses_nothing() {
        let t = Tracker::new();
        std::thread::scope(|s| {
            for i in 0..8 {
                let t = &t;
                s.spawn(move || {
                    let mut held = Vec::new();
                    for j in 0..10_000u64 {
                        let label = (j % 7 == 0).then(|| format!("t{i}-{j}"));
                        held.push(t.register(ObjectKind::Buffer, j % 5, label.as_deref()));
                        if j % 3 == 0 {
                            held.pop();
                        }
                    }
                    drop(held);
                });
            }
        });
        let s = t.stats(ObjectKind::Buffer);
        assert_eq!((s.count, s.bytes, s.created), (0, 0, 80_000));
        assert!(s.peak_count > 0 && s.peak_count <= 8 * 10_000);
        assert!(t.live_labelled_since(0).is_empty());
    }
}
