//! The `pool` section: bytes held, in use and idle per pool, hit rates, and
//! on request every class.

use crate::diag::report::{Block, Cell, Row, Section, Table, View};
use serde::Serialize;

/// The numbers of one or more pools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolSection {
    /// One entry per pool.
    pub pools: Vec<PoolStats>,
    /// Per-class numbers of the pools they were asked for.
    pub classes: Vec<PoolClasses>,
}

/// The classes of one pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolClasses {
    /// The pool's name.
    pub pool: String,
    /// Its classes, largest first.
    pub classes: Vec<ClassStats>,
}

impl PoolSection {
    /// A section listing `pools`.
    pub fn new(pools: Vec<PoolStats>) -> Self {
        Self {
            pools,
            classes: Vec::new(),
        }
    }

    /// Adds the per-class table of one pool.
    pub fn with_classes(mut self, pool: impl Into<String>, classes: Vec<ClassStats>) -> Self {
        self.classes.push(PoolClasses {
            pool: pool.into(),
            classes,
        });
        self
    }

    pub(crate) fn pools_table(&self) -> Table {
        let rows = self
            .pools
            .iter()
            .map(|p| {
                let cells = vec![
                    Cell::Bytes(p.held),
                    Cell::Bytes(p.peak_held),
                    Cell::Bytes(p.in_use),
                    Cell::Bytes(p.peak_in_use),
                    Cell::Bytes(p.idle),
                    p.budget.map_or(Cell::text("-"), Cell::Bytes),
                    Cell::int(p.hits),
                    Cell::int(p.misses),
                    Cell::int(p.allocations),
                    Cell::int(p.frees),
                    Cell::int(p.trims),
                    Cell::int(p.ooms),
                    Cell::int(p.evictions),
                ];
                Row::new(p.name.clone(), cells)
            })
            .collect();
        let columns = [
            "held", "peak", "in_use", "peak_use", "idle", "budget", "hits", "misses", "allocs",
            "frees", "trims", "ooms", "evicted",
        ];
        Table {
            title: None,
            columns: columns.map(String::from).to_vec(),
            rows,
            total: None,
        }
    }

    fn class_table(pool: &PoolClasses) -> Table {
        let rows = pool
            .classes
            .iter()
            .map(|c| {
                let label = format!("{} {}", c.key, crate::diag::human_bytes(c.capacity));
                Row::new(
                    label,
                    vec![
                        Cell::Bytes(c.capacity),
                        Cell::int(c.idle),
                        Cell::int(c.in_use),
                        Cell::int(c.takes),
                    ],
                )
            })
            .collect();
        let columns = ["capacity", "idle", "in_use", "takes"]
            .map(String::from)
            .to_vec();
        Table {
            title: Some(format!("classes of {}:", pool.pool)),
            columns,
            rows,
            total: None,
        }
    }
}

impl Section for PoolSection {
    fn name(&self) -> &str {
        "pool"
    }

    fn view(&self) -> View {
        let mut blocks = vec![Block::Table(self.pools_table())];
        blocks.extend(
            self.classes
                .iter()
                .map(|c| Block::Table(Self::class_table(c))),
        );
        View {
            blocks,
            footnotes: vec![
                "held = in_use + idle: bytes allocated from the device; idle bytes wait for reuse and go back on trim or end_batch.".into(),
                "peak and peak_use: highest held and in_use since creation or reset_peaks(); budget: cap on held ('-': none).".into(),
                "hits: requests served from a free list; allocs and frees: calls to the device; evicted: idle blocks freed to meet the budget.".into(),
            ],
        }
    }
}

/// A pool's numbers at one moment.
///
/// Invariants: `held == in_use + idle`, `peak_held >= held`,
/// `peak_in_use >= in_use`; with a budget, `held <= budget` unless the budget
/// was lowered below what is in use, in which case `idle == 0` until enough
/// handles come back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    /// The pool's name.
    pub name: String,
    /// Bytes allocated from the device and not yet freed.
    pub held: u64,
    /// Highest `held` since creation or the last reset.
    pub peak_held: u64,
    /// Bytes in handles that users hold.
    pub in_use: u64,
    /// Highest `in_use` since creation or the last reset.
    pub peak_in_use: u64,
    /// Bytes idle in free lists, ready for reuse or to be trimmed.
    pub idle: u64,
    /// The cap on `held`, if any.
    pub budget: Option<u64>,
    /// Requests served from a free list.
    pub hits: u64,
    /// Requests that had to allocate.
    pub misses: u64,
    /// Allocations from the device.
    pub allocations: u64,
    /// Blocks given back to the device.
    pub frees: u64,
    /// Calls to trim, including those made to retry after out-of-memory.
    pub trims: u64,
    /// Requests that failed for lack of memory.
    pub ooms: u64,
    /// Idle blocks freed to stay within the budget.
    pub evictions: u64,
    /// Returned blocks that could not be reused (freed instead).
    pub discarded: u64,
    /// Capacity classes (with their keys) that have a free list.
    pub classes: u64,
}

/// One capacity class of one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassStats {
    /// The key, as its `Debug` form.
    pub key: String,
    /// Capacity of each block, in bytes.
    pub capacity: u64,
    /// Blocks idle in the free list.
    pub idle: u64,
    /// Blocks out in handles.
    pub in_use: u64,
    /// Requests for this class since it was last emptied.
    pub takes: u64,
}
