//! Diagnostics: live counts and bytes per object kind, peaks, a report for
//! people and programs, and leak checks for tests.
//!
//! The [`Tracker`] counts; [`Tracked`] handles carry the counts; the report's
//! [`sections`] turn numbers into plain data; [`Report`] renders it.

mod kind;
mod leak;
mod report;
pub mod sections;
mod table;
mod timeline;
mod tracked;
mod tracker;
mod units;

pub use kind::ObjectKind;
pub use leak::{LeakCheck, LeakedKind, Leaks, assert_no_leaks, check_leaks};
pub use report::{Block, Cell, Report, Row, Section, Table, View};
pub use timeline::Timeline;
pub use tracked::Tracked;
pub use tracker::{KindStats, LiveObject, Snapshot, Token, Tracker};
pub use units::human_bytes;
