//! The scheduler: which queued upload a worker starts next. Data only, no
//! threads; the engine keeps it under one lock.
//!
//! The ordering model:
//! - Each upload waits in the lane of its resource's priority. A worker
//!   takes the oldest upload of the highest lane that has one; background
//!   uploads only while the frame's byte budget is open.
//! - A resource has one priority, so its uploads wait in one lane in the
//!   order they were made. One of them at a time is being filled: while a
//!   resource is busy its queued uploads keep their place (so a newer one
//!   can still supersede them) and workers take other resources' uploads.
//!   So each resource's uploads start, are submitted and land in the order
//!   they were made: the last upload to a region wins. (Each also takes a
//!   number in its resource's sequence and is submitted in that turn, which
//!   keeps the order should a resource ever be filled by two workers.) A
//!   large upload is still filled by several threads, in chunks. Different
//!   resources never wait for each other: a slow fill holds back only its
//!   own resource.
//! - Until it is taken, an upload can be removed: superseded by a newer one
//!   to the same region, cancelled, or released with its resource. Removed
//!   uploads leave the lane at once, so nothing waiting holds a released
//!   resource.

use super::UploadPriority;
use std::collections::VecDeque;

/// Lanes by priority and the background budget.
#[derive(Debug)]
pub(crate) struct Schedule<J> {
    lanes: [VecDeque<J>; 3],
    /// Bytes background uploads may start per frame; `None`: no cap.
    budget: Option<u64>,
    /// Bytes background uploads started since the last frame ended.
    spent: u64,
    closed: bool,
}

/// What a worker is told to do next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<J> {
    /// Start this upload.
    Start(J),
    /// Nothing may start now: wait for a push, a frame's end or closing.
    Wait,
    /// Closed and nothing is left: exit.
    Exit,
}

impl<J> Schedule<J> {
    pub fn new(budget: Option<u64>) -> Self {
        Self {
            lanes: Default::default(),
            budget,
            spent: 0,
            closed: false,
        }
    }

    /// Queues `job` at the back of its lane. Refused (given back) once
    /// closed.
    pub fn push(&mut self, priority: UploadPriority, job: J) -> Result<(), J> {
        if self.closed {
            return Err(job);
        }
        self.lanes[priority as usize].push_back(job);
        Ok(())
    }

    /// Whether background uploads may start now.
    fn background_open(&self) -> bool {
        self.budget.is_none_or(|budget| self.spent < budget)
    }

    /// The next upload to start, if any may: the oldest `ready` one of the
    /// highest lane allowed. `claim` takes a job for the worker (false: it
    /// ended while queued, and is dropped); `bytes` tells a job's size
    /// (charged to the budget when a background one starts). Jobs not
    /// ready (their resource is busy) keep their place.
    pub fn next(
        &mut self,
        bytes: impl Fn(&J) -> u64,
        ready: impl Fn(&J) -> bool,
        claim: impl Fn(&J) -> bool,
    ) -> Next<J> {
        let lanes = if self.background_open() { 3 } else { 2 };
        for lane in 0..lanes {
            while let Some(at) = self.lanes[lane].iter().position(&ready) {
                let job = self.lanes[lane].remove(at).expect("the job is there");
                if !claim(&job) {
                    continue;
                }
                if lane == UploadPriority::Background as usize {
                    self.spent = self.spent.saturating_add(bytes(&job));
                }
                return Next::Start(job);
            }
        }
        if self.closed && self.lanes.iter().all(VecDeque::is_empty) {
            Next::Exit
        } else {
            Next::Wait
        }
    }

    /// Ends a frame: background uploads may start another budget's worth.
    /// What they spent past it carries over, so they average to the budget.
    pub fn end_frame(&mut self) {
        if let Some(budget) = self.budget {
            self.spent = self.spent.saturating_sub(budget);
        }
    }

    /// Takes every queued job `matches` picks out of its lane.
    pub fn remove(&mut self, matches: impl Fn(&J) -> bool) -> Vec<J> {
        let mut removed = Vec::new();
        for lane in &mut self.lanes {
            let mut kept = VecDeque::with_capacity(lane.len());
            for job in lane.drain(..) {
                if matches(&job) {
                    removed.push(job);
                } else {
                    kept.push_back(job);
                }
            }
            *lane = kept;
        }
        removed
    }

    /// Closes the schedule: later pushes are refused. Returns every queued
    /// job, to be cancelled.
    pub fn close(&mut self) -> Vec<J> {
        self.closed = true;
        self.lanes.iter_mut().flat_map(|l| l.drain(..)).collect()
    }

    /// Jobs queued, over all lanes.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lanes.iter().map(VecDeque::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A job: its id, resource, priority and bytes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct J {
        id: u32,
        resource: u8,
        lane: UploadPriority,
        bytes: u64,
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push { resource: u8, bytes: u64 },
        Start,
        EndFrame,
        Remove(u32),
        Release(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..6, 1u64..100).prop_map(|(resource, bytes)| Op::Push { resource, bytes }),
            4 => Just(Op::Start),
            1 => Just(Op::EndFrame),
            1 => (0u32..40).prop_map(Op::Remove),
            1 => (0u8..6).prop_map(Op::Release),
        ]
    }

    /// Resources 0-1 are high, 2-3 normal, 4-5 background.
    fn lane_of(resource: u8) -> UploadPriority {
        match resource {
            0 | 1 => UploadPriority::High,
            2 | 3 => UploadPriority::Normal,
            _ => UploadPriority::Background,
        }
    }

    proptest! {
        /// Against a reference: a flat list in push order, from which the
        /// oldest job of the best lane allowed is started.
        #[test]
        fn matches_a_reference_model(ops in prop::collection::vec(op(), 1..200), budget in prop::option::of(1u64..300)) {
            let mut schedule = Schedule::new(budget);
            let mut reference: Vec<J> = Vec::new();
            let mut spent = 0u64;
            let mut next_id = 0u32;
            let mut started: Vec<J> = Vec::new();
            for op in ops {
                match op {
                    Op::Push { resource, bytes } => {
                        let job = J { id: next_id, resource, lane: lane_of(resource), bytes };
                        next_id += 1;
                        prop_assert!(schedule.push(job.lane, job).is_ok());
                        reference.push(job);
                    }
                    Op::Start => {
                        let open = budget.is_none_or(|b| spent < b);
                        let expected = reference
                            .iter()
                            .enumerate()
                            .filter(|(_, j)| open || j.lane != UploadPriority::Background)
                            .min_by_key(|(i, j)| (j.lane as usize, *i))
                            .map(|(i, _)| i);
                        match (schedule.next(|j| j.bytes, |_| true, |_| true), expected) {
                            (Next::Start(job), Some(i)) => {
                                let want = reference.remove(i);
                                prop_assert_eq!(job, want);
                                if job.lane == UploadPriority::Background {
                                    spent += job.bytes;
                                }
                                started.push(job);
                            }
                            (Next::Wait, None) => {}
                            (got, want) => prop_assert!(false, "got {:?}, the model says {:?}", got, want),
                        }
                    }
                    Op::EndFrame => {
                        schedule.end_frame();
                        if let Some(b) = budget {
                            spent = spent.saturating_sub(b);
                        }
                    }
                    Op::Remove(id) => {
                        let removed = schedule.remove(|j| j.id == id);
                        let before = reference.len();
                        reference.retain(|j| j.id != id);
                        prop_assert_eq!(removed.len(), before - reference.len());
                    }
                    Op::Release(resource) => {
                        let removed = schedule.remove(|j| j.resource == resource);
                        prop_assert!(removed.iter().all(|j| j.resource == resource));
                        let before = reference.len();
                        reference.retain(|j| j.resource != resource);
                        prop_assert_eq!(removed.len(), before - reference.len());
                    }
                }
                prop_assert_eq!(schedule.len(), reference.len());
            }
            // Each resource's jobs started in the order they were pushed.
            for r in 0..6u8 {
                let ids: Vec<u32> = started.iter().filter(|j| j.resource == r).map(|j| j.id).collect();
                prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "resource {} out of order: {:?}", r, ids);
            }
            // Closing hands back what is left and refuses more.
            let left = schedule.close();
            prop_assert_eq!(left.len(), reference.len());
            let late = J { id: 0, resource: 0, lane: UploadPriority::Normal, bytes: 1 };
            let refused = schedule.push(UploadPriority::Normal, late).is_err();
            prop_assert!(refused);
            prop_assert_eq!(schedule.next(|j| j.bytes, |_| true, |_| true), Next::Exit);
        }
    }

    #[test]
    fn a_busy_resources_uploads_keep_their_place_and_others_go_by() {
        // Jobs are (resource, id); resource 1 is busy.
        let mut s = Schedule::new(None);
        for job in [(1, 0), (1, 1), (2, 2)] {
            s.push(UploadPriority::Normal, job).unwrap();
        }
        let ready = |j: &(u8, u8)| j.0 != 1;
        assert_eq!(s.next(|_| 0, ready, |_| true), Next::Start((2, 2)));
        assert_eq!(s.next(|_| 0, ready, |_| true), Next::Wait);
        // Free again: its uploads start in the order they were made.
        assert_eq!(s.next(|_| 0, |_| true, |_| true), Next::Start((1, 0)));
        assert_eq!(s.next(|_| 0, |_| true, |_| true), Next::Start((1, 1)));
    }

    #[test]
    fn over_budget_background_waits_for_the_frame() {
        let mut s = Schedule::new(Some(10));
        s.push(UploadPriority::Background, 8u64).unwrap();
        s.push(UploadPriority::Background, 8u64).unwrap();
        assert_eq!(s.next(|b| *b, |_| true, |_| true), Next::Start(8));
        // 8 < 10: one more may start, taking it past the budget.
        assert_eq!(s.next(|b| *b, |_| true, |_| true), Next::Start(8));
        s.push(UploadPriority::Background, 8u64).unwrap();
        assert_eq!(s.next(|b| *b, |_| true, |_| true), Next::Wait);
        s.push(UploadPriority::Normal, 1u64).unwrap();
        assert_eq!(s.next(|b| *b, |_| true, |_| true), Next::Start(1));
        s.end_frame();
        // 16 - 10 = 6 carried over: still open.
        assert_eq!(s.next(|b| *b, |_| true, |_| true), Next::Start(8));
    }
}
