//! The samples between the audio decoder and the sink: a bounded queue
//! of interleaved `f32` frames. The decoder waits when it is full; the
//! sink never waits (a real-time callback must not): what is missing
//! plays as silence and is counted.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;

/// A bounded queue of interleaved samples.
pub(crate) struct Ring {
    state: Mutex<State>,
    room: Condvar,
    /// Most samples held.
    capacity: usize,
}

#[derive(Default)]
struct State {
    samples: VecDeque<f32>,
    /// Set by the sink's owner: the decoder stops.
    closed: bool,
    /// Bumped by `clear`: a decoder that filled for an older generation
    /// drops what it has.
    generation: u64,
    /// No more samples will come (the stream ended).
    ended: bool,
}

impl Ring {
    pub fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            room: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Appends `samples` for `generation`, waiting for room; `false` once
    /// closed or when the generation is stale.
    pub fn push(&self, mut samples: &[f32], generation: u64) -> bool {
        let mut state = self.state.lock();
        while !samples.is_empty() {
            if state.closed || state.generation != generation {
                return false;
            }
            let room = self.capacity.saturating_sub(state.samples.len());
            if room == 0 {
                self.room.wait(&mut state);
                continue;
            }
            let n = room.min(samples.len());
            state.samples.extend(&samples[..n]);
            samples = &samples[n..];
        }
        true
    }

    /// Fills `out` with the next samples, silence for any missing; returns
    /// how many were missing (an underrun) unless the stream has ended.
    pub fn pop_into(&self, out: &mut [f32]) -> usize {
        let mut state = self.state.lock();
        let n = out.len().min(state.samples.len());
        for (o, s) in out.iter_mut().zip(state.samples.drain(..n)) {
            *o = s;
        }
        out[n..].fill(0.0);
        let missing = if state.ended { 0 } else { out.len() - n };
        drop(state);
        self.room.notify_all();
        missing
    }

    /// Empties the queue and starts a new generation (a seek).
    pub fn clear(&self) -> u64 {
        let mut state = self.state.lock();
        state.samples.clear();
        state.ended = false;
        state.generation += 1;
        let g = state.generation;
        drop(state);
        self.room.notify_all();
        g
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.state.lock().generation
    }

    /// The stream of `generation` has no more samples.
    pub fn end(&self, generation: u64) {
        let mut state = self.state.lock();
        if state.generation == generation {
            state.ended = true;
        }
    }

    /// Stops the decoder for good.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.room.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}
