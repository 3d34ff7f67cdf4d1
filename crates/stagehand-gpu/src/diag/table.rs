//! Renders a section's [`View`] as text: a heading, right-aligned columns,
//! sizes in short units, a total row, footnotes.

use super::report::{Block, Cell, Row, Table, View};
use super::units::human_bytes;
use std::fmt::Write;

/// Appends one section to `out`.
pub(crate) fn render_section(out: &mut String, name: &str, view: &View) {
    let _ = writeln!(out, "\u{2588}\u{2588} {name}:\n");
    for block in &view.blocks {
        match block {
            Block::Fields(fields) => render_fields(out, fields),
            Block::Table(table) => render_table(out, table),
        }
        out.push('\n');
    }
    for note in &view.footnotes {
        let _ = writeln!(out, "    * {note}");
    }
    if !view.footnotes.is_empty() {
        out.push('\n');
    }
}

fn cell_text(cell: &Cell) -> String {
    match cell {
        Cell::Text(s) => s.clone(),
        Cell::Int(n) => n.to_string(),
        Cell::Bytes(b) => human_bytes(*b),
        Cell::Empty => String::new(),
    }
}

fn render_fields(out: &mut String, fields: &[(String, Cell)]) {
    let width = fields
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (key, value) in fields {
        let _ = writeln!(out, "{key:>width$}:  {}", cell_text(value));
    }
}

fn render_table(out: &mut String, table: &Table) {
    if let Some(title) = &table.title {
        let _ = writeln!(out, "{title}\n");
    }
    let rows: Vec<(&str, Vec<String>)> = table
        .rows
        .iter()
        .chain(table.total.as_ref())
        .map(|r: &Row| (r.label.as_str(), r.cells.iter().map(cell_text).collect()))
        .collect();
    let label_w = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let cells = rows
                .iter()
                .filter_map(|(_, cs)| cs.get(i))
                .map(|s| s.chars().count());
            cells.chain([c.chars().count()]).max().unwrap_or(0)
        })
        .collect();
    let header: Vec<String> = table.columns.iter().map(String::clone).collect();
    write_line(out, &" ".repeat(label_w + 1), &header, &widths);
    out.push('\n');
    let body = table.rows.len();
    for (i, (label, cells)) in rows.iter().enumerate() {
        if i == body {
            out.push('\n');
        }
        write_line(out, &format!("{label:>label_w$}:"), cells, &widths);
    }
}

fn write_line(out: &mut String, label: &str, cells: &[String], widths: &[usize]) {
    let mut line = label.to_owned();
    for (cell, &w) in cells.iter().zip(widths) {
        let _ = write!(line, "  {cell:>w$}");
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_right_aligns_and_prints_total_after_a_blank_line() {
        let view = View {
            blocks: vec![Block::Table(Table {
                title: None,
                columns: vec!["count".into(), "resource_mem".into()],
                rows: vec![
                    Row::new("Buffer", vec![Cell::Int(3), Cell::Bytes(784)]),
                    Row::new("Texture", vec![Cell::Int(1), Cell::Bytes(65_536)]),
                ],
                total: Some(Row::new("total", vec![Cell::Int(4), Cell::Bytes(66_320)])),
            })],
            footnotes: vec!["a note".into()],
        };
        let mut out = String::new();
        render_section(&mut out, "object_counts", &view);
        let want = "\u{2588}\u{2588} object_counts:\n\n\
                    \x20         count  resource_mem\n\
                    \n\
                    \x20Buffer:      3           784\n\
                    Texture:      1         65.5K\n\
                    \n\
                    \x20 total:      4         66.3K\n\
                    \n\
                    \x20   * a note\n\n";
        assert_eq!(out, want, "\n{out}");
    }

    #[test]
    fn fields_right_align_keys() {
        let mut out = String::new();
        render_fields(
            &mut out,
            &[
                ("os".into(), Cell::text("linux")),
                ("cpus".into(), Cell::Int(2)),
            ],
        );
        assert_eq!(out, "  os:  linux\ncpus:  2\n");
    }
}
