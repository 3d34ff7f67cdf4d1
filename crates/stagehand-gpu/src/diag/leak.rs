//! Leak checks for tests: snapshot the counts, run a scenario, compare.

use super::kind::ObjectKind;
use super::tracker::{LiveObject, Snapshot, Tracker};
use serde::Serialize;
use std::fmt;
use std::sync::Arc;

/// A running leak check.
///
/// The protocol:
/// 1. [`LeakCheck::start`] snapshots the tracker's counts.
/// 2. The scenario creates and drops objects.
/// 3. [`LeakCheck::finish`] compares: every kind must be back at or below its
///    starting count, or the check fails with a [`Leaks`] naming what is left.
///
/// Objects alive before `start` are not blamed, even if the scenario keeps
/// them alive; objects created before `start` and dropped during it lower the
/// count and may hide as many new leaks of the same kind, so start from a quiet
/// point.
#[derive(Debug)]
pub struct LeakCheck {
    tracker: Arc<Tracker>,
    before: Snapshot,
}

impl LeakCheck {
    /// Snapshots the counts of `tracker`.
    pub fn start(tracker: &Arc<Tracker>) -> Self {
        Self {
            tracker: Arc::clone(tracker),
            before: tracker.snapshot(),
        }
    }

    /// Compares the counts now against the snapshot.
    pub fn finish(self) -> Result<(), Leaks> {
        let after = self.tracker.snapshot();
        let kinds: Vec<LeakedKind> = ObjectKind::ALL
            .iter()
            .filter_map(|&kind| {
                let (b, a) = (self.before.get(kind), after.get(kind));
                (a.count > b.count).then(|| LeakedKind {
                    kind,
                    count: a.count - b.count,
                    bytes: a.bytes.saturating_sub(b.bytes),
                })
            })
            .collect();
        if kinds.is_empty() {
            return Ok(());
        }
        let leaked: Vec<ObjectKind> = kinds.iter().map(|k| k.kind).collect();
        let labelled = self
            .tracker
            .live_labelled_since(self.before.next_id)
            .into_iter()
            .filter(|o| leaked.contains(&o.kind))
            .collect();
        Err(Leaks { kinds, labelled })
    }
}

/// Runs `scenario` and fails if it left objects alive in `tracker`.
///
/// ```no_run
/// # fn demo(gpu: &stagehand_gpu::Gpu) -> Result<(), stagehand_gpu::diag::Leaks> {
/// stagehand_gpu::diag::check_leaks(gpu.tracker(), || {
///     // create and drop GPU objects through `gpu`
/// })
/// # }
/// ```
pub fn check_leaks<R>(tracker: &Arc<Tracker>, scenario: impl FnOnce() -> R) -> Result<R, Leaks> {
    let check = LeakCheck::start(tracker);
    let out = scenario();
    check.finish().map(|()| out)
}

/// Like [`check_leaks`], but panics with the list of leaks: for tests.
#[track_caller]
pub fn assert_no_leaks<R>(tracker: &Arc<Tracker>, scenario: impl FnOnce() -> R) -> R {
    match check_leaks(tracker, scenario) {
        Ok(out) => out,
        Err(leaks) => panic!("{leaks}"),
    }
}

/// What a scenario left alive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct Leaks {
    /// Each kind with more objects alive than at the start.
    pub kinds: Vec<LeakedKind>,
    /// Labelled objects of those kinds created during the scenario and still alive.
    pub labelled: Vec<LiveObject>,
}

/// One kind that leaked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LeakedKind {
    /// The kind.
    pub kind: ObjectKind,
    /// How many more objects are alive than at the start.
    pub count: u64,
    /// How many more resource bytes they hold.
    pub bytes: u64,
}

impl fmt::Display for Leaks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GPU objects leaked:")?;
        for k in &self.kinds {
            write!(f, "\n  {}: {} alive", k.kind, k.count)?;
            if k.bytes > 0 {
                write!(f, " ({} bytes)", k.bytes)?;
            }
            let labels: Vec<String> = self
                .labelled
                .iter()
                .filter(|o| o.kind == k.kind)
                .map(|o| format!("{:?}", o.label))
                .collect();
            if !labels.is_empty() {
                write!(f, ", labelled {}", labels.join(", "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_scenario_passes_and_returns_its_value() {
        let t = Tracker::new();
        let out = check_leaks(&t, || {
            drop(t.register(ObjectKind::Buffer, 4, Some("temp")));
            7
        });
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn kept_object_is_named_by_kind_and_label() {
        let t = Tracker::new();
        let old = t.register(ObjectKind::Texture, 1, Some("before"));
        let mut kept = Vec::new();
        let err = check_leaks(&t, || {
            kept.push(t.register(ObjectKind::Texture, 64, Some("the-leak")));
            kept.push(t.register(ObjectKind::Sampler, 0, None));
        })
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("Texture: 1 alive (64 bytes), labelled \"the-leak\""),
            "{msg}"
        );
        assert!(msg.contains("Sampler: 1 alive"), "{msg}");
        assert!(
            !msg.contains("before"),
            "objects from before the check are not blamed: {msg}"
        );
        drop((old, kept));
    }
}
