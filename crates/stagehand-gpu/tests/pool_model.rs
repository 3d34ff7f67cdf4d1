//! The pool against a model, on the fault-injecting backend.
//!
//! Random sequences of take, drop, trim, end_batch, budget changes and
//! injected failures. After every step:
//! - `held == in_use + idle`, and `held` equals the bytes the backend has live;
//! - `in_use` equals the capacities of the handles the model holds;
//! - peaks never fall below current values;
//! - no block is in two handles at once;
//! - with a budget, `held <= budget` or nothing is idle (a budget lowered
//!   below what is in use waits for handles to come back);
//! - a take of a class with idle blocks is a hit: the backend allocates nothing.
//!
//! At the end every block was freed exactly once.

use proptest::prelude::*;
use stagehand_gpu::backend::fault::FaultBackend;
use stagehand_gpu::pool::size_class::class_of;
use stagehand_gpu::pool::{Pool, PoolConfig, PoolError, Pooled};
use std::collections::HashSet;

#[derive(Clone, Debug)]
enum Op {
    Take { key: u8, len: u64 },
    Drop { index: usize },
    Trim,
    EndBatch,
    SetBudget(Option<u64>),
    FailNext,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // A few sizes recur (and 1000/1020 share a class), so hits happen.
        6 => (0u8..3, prop_oneof![Just(1000u64), Just(1020), Just(4096), 1u64..64, 1u64..3000])
            .prop_map(|(key, len)| Op::Take { key, len }),
        4 => any::<usize>().prop_map(|index| Op::Drop { index }),
        1 => Just(Op::Trim),
        1 => Just(Op::EndBatch),
        1 => proptest::option::of(1u64..40_000).prop_map(Op::SetBudget),
        1 => Just(Op::FailNext),
    ]
}

struct Model {
    pool: Pool<FaultBackend>,
    handles: Vec<Pooled<FaultBackend>>,
}

impl Model {
    fn check(&self) {
        let s = self.pool.stats();
        let backend = self.pool.backend().counts();
        assert_eq!(s.held, s.in_use + s.idle);
        assert_eq!(
            s.held, backend.live_bytes,
            "held equals the backend's live bytes"
        );
        assert_eq!(
            s.in_use,
            self.handles.iter().map(|h| h.capacity()).sum::<u64>()
        );
        assert!(s.peak_held >= s.held && s.peak_in_use >= s.in_use);
        let ids: HashSet<u64> = self.handles.iter().map(|h| h.id).collect();
        assert_eq!(ids.len(), self.handles.len(), "a block is in two handles");
        if let Some(budget) = s.budget {
            assert!(
                s.held <= budget || s.idle == 0,
                "over budget with idle blocks: {s:?}"
            );
        }
        assert_eq!(backend.bad_frees, 0);
    }

    fn take(&mut self, key: u8, len: u64) {
        let cap = class_of(len);
        let idle_before = self
            .pool
            .class_stats()
            .iter()
            .any(|c| c.key == format!("{key:?}") && c.capacity == cap && c.idle > 0);
        let allocs_before = self.pool.backend().counts().allocations;
        match self.pool.take(key, len) {
            Ok(h) => {
                assert_eq!(h.capacity(), cap);
                assert!(h.capacity() >= len && h.size == cap);
                if idle_before {
                    assert_eq!(
                        self.pool.backend().counts().allocations,
                        allocs_before,
                        "idle block in class: must be a hit"
                    );
                }
                self.handles.push(h);
            }
            Err(PoolError::OutOfMemory {
                requested, in_use, ..
            }) => {
                assert!(!idle_before, "OOM while the class had an idle block");
                assert_eq!(requested, cap);
                assert_eq!(
                    in_use,
                    self.handles.iter().map(|h| h.capacity()).sum::<u64>()
                );
            }
            Err(other) => panic!("unexpected error {other}"),
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Take { key, len } => self.take(key, len),
            Op::Drop { index } if !self.handles.is_empty() => {
                let i = index % self.handles.len();
                self.handles.swap_remove(i);
            }
            Op::Drop { .. } => {}
            Op::Trim => {
                self.pool.trim();
                assert_eq!(self.pool.stats().idle, 0);
            }
            Op::EndBatch => self.pool.end_batch(),
            Op::SetBudget(b) => self.pool.set_budget(b).unwrap(),
            Op::FailNext => self.pool.backend().fail_in(1),
        }
        self.check();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pool_keeps_its_invariants(ops in proptest::collection::vec(op(), 1..120)) {
        let backend = FaultBackend::new(Some(60_000));
        let mut model = Model { pool: Pool::new(backend, PoolConfig::named("model")).unwrap(), handles: Vec::new() };
        for op in ops {
            model.apply(op);
        }
        model.handles.clear();
        model.pool.trim();
        let s = model.pool.stats();
        let c = model.pool.backend().counts();
        prop_assert_eq!((s.held, s.in_use), (0, 0));
        prop_assert_eq!(c.allocations, c.frees, "every block freed exactly once");
        prop_assert_eq!((c.live_bytes, c.bad_frees), (0, 0));
        prop_assert_eq!(s.allocations, c.allocations);
        prop_assert_eq!(s.frees, c.frees);
    }
}
