//! What a scenario reports: tables and notes for people, one JSON document
//! for machines.

use serde_json::Value;

/// A table with aligned columns.
#[derive(Clone, Debug)]
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table.
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Table {
        Table {
            title: title.into(),
            headers: headers.iter().map(|header| (*header).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (one cell per header).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (index, cell) in row.iter().enumerate().take(columns) {
                widths[index] = widths[index].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(index, cell)| {
                    let pad = widths[index].saturating_sub(cell.chars().count());
                    if index == 0 {
                        format!("{cell}{}", " ".repeat(pad))
                    } else {
                        format!("{}{cell}", " ".repeat(pad))
                    }
                })
                .collect();
            padded.join("  ").trim_end().to_owned()
        };
        let mut out = format!("{}\n{}\n", self.title, line(&self.headers));
        let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }
}

/// A scenario's results.
#[derive(Debug)]
pub struct Report {
    /// Tables and notes, in order.
    parts: Vec<Part>,
    /// The machine-readable results.
    pub json: Value,
}

#[derive(Debug)]
enum Part {
    Table(Table),
    Note(String),
}

impl Report {
    /// A report whose machine-readable form is `json`.
    pub fn new(json: Value) -> Report {
        Report {
            parts: Vec::new(),
            json,
        }
    }

    /// Adds a table.
    pub fn table(&mut self, table: Table) {
        self.parts.push(Part::Table(table));
    }

    /// Adds a line of text.
    pub fn note(&mut self, note: impl Into<String>) {
        self.parts.push(Part::Note(note.into()));
    }

    /// The human-readable form.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Table(table) => {
                    out.push('\n');
                    out.push_str(&table.render());
                }
                Part::Note(note) => {
                    out.push_str(note);
                    out.push('\n');
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let mut table = Table::new("t", &["name", "value"]);
        table.row(vec!["a".into(), "1.0".into()]);
        table.row(vec!["longer".into(), "10.0".into()]);
        assert_eq!(
            table.render(),
            "t\nname    value\n------  -----\na         1.0\nlonger   10.0\n"
        );
    }
}
