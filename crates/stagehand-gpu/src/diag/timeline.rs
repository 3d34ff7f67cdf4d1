//! A timeline of spans and counters that opens in a trace viewer (Chrome's
//! trace event format: Perfetto, `chrome://tracing`).
//!
//! Opt-in: parts that record take an `Option<Arc<Timeline>>`, so with none
//! the cost is one branch per place that would record.

use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Instant;

/// One recorded event.
#[derive(Clone, Debug)]
enum Event {
    Span {
        track: String,
        name: &'static str,
        start: Instant,
        end: Instant,
    },
    Counter {
        name: &'static str,
        at: Instant,
        values: Vec<(&'static str, f64)>,
    },
}

/// Spans on named tracks, and counters, from one start time.
#[derive(Debug)]
pub struct Timeline {
    start: Instant,
    events: Mutex<Vec<Event>>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// An empty timeline starting now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            events: Mutex::new(Vec::new()),
        }
    }

    /// Records a span from `start` to `end` on `track` (one row in the viewer).
    pub fn span(&self, track: impl Into<String>, name: &'static str, start: Instant, end: Instant) {
        self.events.lock().push(Event::Span {
            track: track.into(),
            name,
            start,
            end,
        });
    }

    /// Records counter values at `at`.
    pub fn counter(&self, name: &'static str, at: Instant, values: &[(&'static str, f64)]) {
        self.events.lock().push(Event::Counter {
            name,
            at,
            values: values.to_vec(),
        });
    }

    /// Events recorded so far.
    pub fn len(&self) -> usize {
        self.events.lock().len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn micros(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64() * 1e6
    }

    /// The timeline in Chrome's trace event format.
    pub fn to_chrome_json(&self) -> Value {
        let events = self.events.lock().clone();
        let mut tracks: BTreeMap<String, usize> = BTreeMap::new();
        let mut out = Vec::with_capacity(events.len() + 8);
        for event in &events {
            match event {
                Event::Span {
                    track,
                    name,
                    start,
                    end,
                } => {
                    let next = tracks.len() + 1;
                    let tid = *tracks.entry(track.clone()).or_insert(next);
                    let (ts, end) = (self.micros(*start), self.micros(*end));
                    out.push(json!({ "name": name, "ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": (end - ts).max(0.0) }));
                }
                Event::Counter { name, at, values } => {
                    let args: serde_json::Map<String, Value> = values
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), json!(v)))
                        .collect();
                    out.push(json!({ "name": name, "ph": "C", "pid": 1, "ts": self.micros(*at), "args": args }));
                }
            }
        }
        for (track, tid) in tracks {
            out.push(json!({ "name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": { "name": track } }));
        }
        json!({ "traceEvents": out, "displayTimeUnit": "ms" })
    }

    /// Writes the timeline to `path` as a Chrome trace.
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_chrome_json().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn spans_get_a_track_each_and_counters_their_values() {
        let t = Timeline::new();
        let a = t.start + Duration::from_millis(1);
        t.span("render", "draw", a, a + Duration::from_millis(2));
        t.span("decode 0", "decode", a, a + Duration::from_millis(5));
        t.span(
            "render",
            "draw",
            a + Duration::from_millis(3),
            a + Duration::from_millis(4),
        );
        t.counter("memory", a, &[("pool", 1024.0)]);
        let json = t.to_chrome_json();
        let events = json["traceEvents"].as_array().unwrap();
        let spans: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(spans.len(), 3);
        assert_eq!(spans[0]["tid"], spans[2]["tid"], "one track per name");
        assert_ne!(spans[0]["tid"], spans[1]["tid"]);
        assert_eq!(spans[1]["dur"].as_f64().unwrap().round(), 5000.0);
        let counter = events.iter().find(|e| e["ph"] == "C").unwrap();
        assert_eq!(counter["args"]["pool"], 1024.0);
        assert_eq!(events.iter().filter(|e| e["ph"] == "M").count(), 2);
    }
}
