//! The one text-table layouter: rows of cells in columns, two spaces in
//! from the left, each line's trailing spaces trimmed. Widths are counted
//! in characters (`µ`, `–` and `×` are one each).

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
