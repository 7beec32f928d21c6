//! A table of text cells, written as CSV (RFC 4180) or as a Markdown pipe
//! table: what `show --format`, `compare --format` and `locks --format`
//! print.

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
