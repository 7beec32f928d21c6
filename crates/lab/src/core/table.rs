//! Text tables. [`layout`] is the one layouter of the tables the lab
//! prints: rows of cells in columns, two spaces in from the left, each
//! line's trailing spaces trimmed, widths counted in characters (`µ`, `–`
//! and `×` are one each). [`Table`] is a table of text cells written as
//! CSV (RFC 4180) or as a Markdown pipe table: what `show --format`,
//! `compare --format` and `locks --format` print.

use std::fmt::Write as _;

/// How one column lays out its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Right-aligned (numbers) rather than left-aligned.
    pub right: bool,
    /// Every cell padded to this many characters (a longer cell overflows,
    /// on its own line only); `None`: as wide as the column's widest cell.
    pub width: Option<usize>,
}

impl Column {
    /// Left-aligned, as wide as its widest cell.
    pub const LEFT: Column = Column {
        right: false,
        width: None,
    };

    /// Right-aligned, as wide as its widest cell.
    pub const RIGHT: Column = Column {
        right: true,
        width: None,
    };

    /// Right-aligned if `right`, as wide as its widest cell.
    pub const fn fit(right: bool) -> Column {
        Column { right, width: None }
    }

    /// Right-aligned if `right`, each cell padded to `width`.
    pub const fn fixed(right: bool, width: usize) -> Column {
        Column {
            right,
            width: Some(width),
        }
    }
}

/// Lays out `rows` (the head, if any, is a row like the others) after two
/// spaces, column `i` as `columns[i]` says (left-aligned and as wide as its
/// widest cell where `columns` has no entry), with `gap` spaces between
/// columns. A row may have fewer cells than others.
pub fn layout(out: &mut String, rows: &[Vec<String>], columns: &[Column], gap: usize) {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let column = |i: usize| columns.get(i).copied().unwrap_or(Column::LEFT);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            column(i).width.unwrap_or_else(|| {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
        })
        .collect();
    for r in rows {
        let mut line = String::from("  ");
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str(&" ".repeat(gap));
            }
            let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
            if column(i).right {
                line.push_str(&pad);
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&pad);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// A table of text cells: a header row of named columns and rows of the
/// same length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// One row per item; each as long as `header`.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table as CSV: the header row, then every row, each line ended by
    /// CRLF as RFC 4180 has it; a field with a comma, a quote or a line
    /// break is quoted, its quotes doubled.
    pub fn csv(&self) -> String {
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
            out.push_str(&fields.join(","));
            out.push_str("\r\n");
        }
        out
    }

    /// The table as a GitHub-flavoured Markdown pipe table; `numeric`
    /// columns are right-aligned. A `|` in a cell is escaped, a line break
    /// becomes a space, and an empty cell is `–`.
    pub fn markdown(&self, numeric: &[bool]) -> String {
        let cell = |s: &str| {
            if s.is_empty() {
                "–".to_string()
            } else {
                s.replace('|', "\\|").replace(['\r', '\n'], " ")
            }
        };
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut out = line(self.header.iter().map(|h| cell(h)).collect());
        out.push_str(&line(
            (0..self.header.len())
                .map(|i| {
                    if numeric.get(i).copied().unwrap_or(false) {
                        "---:".to_string()
                    } else {
                        "---".to_string()
                    }
                })
                .collect(),
        ));
        for row in &self.rows {
            out.push_str(&line(row.iter().map(|c| cell(c)).collect()));
        }
        out
    }
}

/// One CSV field, quoted when it must be.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn fitted_columns_align_on_their_widest_cell() {
        let mut out = String::new();
        let rows = [row(&["policy", "× none"]), row(&["itcs", "2.50"]), row(&[])];
        layout(&mut out, &rows, &[Column::LEFT, Column::RIGHT], 2);
        assert_eq!(out, "  policy  × none\n  itcs      2.50\n\n");
    }

    #[test]
    fn fixed_columns_pad_and_let_a_long_cell_overflow() {
        let mut out = String::new();
        let rows = [row(&["lock", "1 thr"]), row(&["tas", "123456789"])];
        layout(
            &mut out,
            &rows,
            &[Column::fixed(false, 6), Column::fixed(true, 7)],
            0,
        );
        assert_eq!(out, "  lock    1 thr\n  tas   123456789\n");
    }
}
