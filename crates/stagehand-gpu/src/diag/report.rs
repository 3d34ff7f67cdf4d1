//! The diagnostics report: sections of plain data, rendered as text or JSON.
//!
//! A section is any serialisable type that also says how it looks as text
//! (a [`View`]). The report keeps each section's JSON value and view side by
//! side, so the two forms always come from the same numbers, and new sections
//! (pool, uploads) plug in without the renderer knowing about them.

use super::table;
use serde::Serialize;
use std::fmt;

/// One part of the report.
pub trait Section: Serialize {
    /// The heading, also the key in the JSON form (`object_counts`).
    fn name(&self) -> &str;
    /// How the section looks in the text report.
    fn view(&self) -> View;
}

/// The text form of one section: blocks one after another, then footnotes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    /// Fields and tables, in order.
    pub blocks: Vec<Block>,
    /// Lines printed after the blocks, each marked with `*`.
    pub footnotes: Vec<String>,
}

/// A piece of a section's text form.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// `key: value` lines with the keys right-aligned.
    Fields(Vec<(String, Cell)>),
    /// A table with labelled rows.
    Table(Table),
}

/// A table: a header, labelled rows, and an optional total row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Printed above the table when present.
    pub title: Option<String>,
    /// Column headings, one per cell of each row.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Printed after a blank line when present.
    pub total: Option<Row>,
}

/// A labelled table row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Printed right-aligned before the cells.
    pub label: String,
    /// One per column.
    pub cells: Vec<Cell>,
}

impl Row {
    /// A row with the given label and cells.
    pub fn new(label: impl Into<String>, cells: Vec<Cell>) -> Self {
        Self {
            label: label.into(),
            cells,
        }
    }
}

/// One value in a field or table cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Printed as is.
    Text(String),
    /// A count, printed in full.
    Int(i64),
    /// A byte size, printed as `784`, `65.5K`, `1.2M`.
    Bytes(u64),
    /// Nothing: an unset or not applicable value.
    Empty,
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text(s.into())
    }

    /// A count cell from any integer that fits in `i64`; larger values saturate.
    pub fn int(n: impl TryInto<i64>) -> Self {
        Self::Int(n.try_into().unwrap_or(i64::MAX))
    }

    /// A byte size, or [`Cell::Empty`] when zero (for kinds without memory).
    pub fn bytes_or_empty(n: u64) -> Self {
        if n == 0 { Self::Empty } else { Self::Bytes(n) }
    }
}

/// A whole diagnostics report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    sections: Vec<Entry>,
}

#[derive(Clone, Debug)]
struct Entry {
    name: String,
    data: serde_json::Value,
    view: View,
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a section; a section with the same name is replaced in place.
    pub fn add<S: Section + ?Sized>(&mut self, section: &S) -> &mut Self {
        let data = serde_json::to_value(section)
            .unwrap_or_else(|e| serde_json::Value::String(format!("not serialisable: {e}")));
        let entry = Entry {
            name: section.name().to_owned(),
            data,
            view: section.view(),
        };
        match self.sections.iter_mut().find(|e| e.name == entry.name) {
            Some(old) => *old = entry,
            None => self.sections.push(entry),
        }
        self
    }

    /// Appends every section of `other` (replacing same-named ones in place).
    pub fn merge(&mut self, other: Report) -> &mut Self {
        for entry in other.sections {
            match self.sections.iter_mut().find(|e| e.name == entry.name) {
                Some(old) => *old = entry,
                None => self.sections.push(entry),
            }
        }
        self
    }

    /// Section names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sections.iter().map(|e| e.name.as_str())
    }

    /// One section's data, as JSON.
    pub fn section(&self, name: &str) -> Option<&serde_json::Value> {
        self.sections
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.data)
    }

    /// One section's text form.
    pub fn view(&self, name: &str) -> Option<&View> {
        self.sections
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.view)
    }

    /// The whole report as one JSON object, a key per section, in order.
    pub fn to_json(&self) -> serde_json::Value {
        let map = self
            .sections
            .iter()
            .map(|e| (e.name.clone(), e.data.clone()))
            .collect();
        serde_json::Value::Object(map)
    }

    /// The whole report as indented JSON text.
    pub fn to_json_string(&self) -> String {
        // Serialising a `Value` cannot fail: its map keys are strings.
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_default()
    }

    /// The whole report as text tables.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for e in &self.sections {
            table::render_section(&mut out, &e.name, &e.view);
        }
        out
    }

    /// Writes the text report to standard output and flushes it.
    ///
    /// Unlike `print!`, this does not panic when standard output cannot be
    /// written (a closed pipe, a full disk): it returns the error.
    pub fn print(&self) -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(self.to_text().as_bytes())?;
        out.flush()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}
