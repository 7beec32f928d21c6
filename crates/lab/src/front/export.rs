//! A stored run as a table to take elsewhere: CSV (RFC 4180, for a
//! spreadsheet or a script) and a Markdown pipe table (to paste into an
//! issue), one row per point or, with `--reps`, one per repetition. Also
//! the [`Table`] that `compare` prints in the same formats.

use serde_json::Value;

use crate::core::report::cpu_ns_per_op;
use crate::core::results::{Point, Rep};

pub use crate::core::table::Table;

/// A number in full (round-trip) precision; empty for one that does not
/// exist (NaN, infinite).
pub fn full(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A number to three significant figures, for reading; empty for one that
/// does not exist.
pub fn short(x: f64) -> String {
    if x.is_finite() {
        crate::core::report::sig(x)
    } else {
        String::new()
    }
}

/// A point's parameter as a cell: strings unquoted, anything else as
/// compact JSON; empty where the point lacks it.
pub fn param_cell(params: &Value, key: &str) -> String {
    match params.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The parameter keys of `points`, sorted, each once (a point's params
/// that are not an object are shown under `params`).
pub fn param_keys<'a>(points: impl IntoIterator<Item = &'a Point>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for p in points {
        match &p.params {
            Value::Object(m) => keys.extend(m.keys().cloned()),
            Value::Null => {}
            _ => keys.push(String::new()),
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// The cells of a point's parameters, in the order of `keys`.
fn param_cells(p: &Point, keys: &[String]) -> Vec<String> {
    keys.iter()
        .map(|k| {
            if k.is_empty() {
                if p.params.is_object() {
                    String::new()
                } else {
                    p.params.to_string()
                }
            } else {
                param_cell(&p.params, k)
            }
        })
        .collect()
}

/// The header of the parameter columns: `param.<key>`.
fn param_header(keys: &[String]) -> Vec<String> {
    keys.iter()
        .map(|k| {
            if k.is_empty() {
                "params".to_string()
            } else {
                format!("param.{k}")
            }
        })
        .collect()
}

/// How the numbers of a table are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// In full precision (CSV).
    Full,
    /// Three significant figures (Markdown).
    Short,
}

impl Numbers {
    fn of(self, x: f64) -> String {
        match self {
            Numbers::Full => full(x),
            Numbers::Short => short(x),
        }
    }
}

/// The per-point columns after the parameters.
const POINT_COLUMNS: [&str; 13] = [
    "reps",
    "throughput_ops_s",
    "throughput_min",
    "throughput_max",
    "ns_per_op",
    "cpu_ns_per_op",
    "jain",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "censored",
    "longest_wait_ns",
];

/// The per-repetition columns after the parameters: the store's columns
/// of a repetition ([`crate::core::store::REP_COLUMNS`] without its keys), with
/// the CPU time per operation after `ns_per_op`.
fn rep_columns() -> Vec<String> {
    let mut columns: Vec<String> = crate::core::store::REP_COLUMNS
        .iter()
        .filter(|c| !matches!(**c, "id" | "point_id"))
        .map(|c| c.to_string())
        .collect();
    let at = columns
        .iter()
        .position(|c| c == "ns_per_op")
        .map_or(0, |i| i + 1);
    columns.insert(at, "cpu_ns_per_op".to_string());
    columns
}

/// A run's points as a table: bench, lock, threads, one `param.<key>`
/// column per parameter, then per point the repetitions and the medians
/// over them (throughput also its least and most).
pub fn points_table(points: &[Point], numbers: Numbers) -> Table {
    let keys = param_keys(points);
    let mut header: Vec<String> = vec!["bench".into(), "lock".into(), "threads".into()];
    header.extend(param_header(&keys));
    header.extend(POINT_COLUMNS.iter().map(|c| c.to_string()));
    let rows = points
        .iter()
        .map(|p| {
            let mut row = vec![p.bench.clone(), p.lock.clone(), p.threads.to_string()];
            row.extend(param_cells(p, &keys));
            let med = |f: &dyn Fn(&Rep) -> f64| numbers.of(p.stat(f).0);
            let (tput, lo, hi) = p.stat(|r| r.throughput_ops_s);
            row.push(p.reps.len().to_string());
            row.push(numbers.of(tput));
            row.push(numbers.of(lo));
            row.push(numbers.of(hi));
            row.push(med(&|r| r.ns_per_op));
            row.push(med(&cpu_ns_per_op));
            row.push(med(&|r| r.jain));
            row.push(med(&|r| r.p50_ns as f64));
            row.push(med(&|r| r.p99_ns as f64));
            row.push(med(&|r| r.p999_ns as f64));
            row.push(med(&|r| r.max_ns as f64));
            row.push(med(&|r| r.censored as f64));
            row.push(med(&|r| r.longest_wait_ns() as f64));
            row
        })
        .collect();
    Table { header, rows }
}

/// A run's repetitions as a table: the point's bench, lock, threads and
/// parameters, then the repetition's own fields as stored (per-thread
/// counts and a study's metrics as compact JSON).
pub fn reps_table(points: &[Point], numbers: Numbers) -> Table {
    let keys = param_keys(points);
    let mut header: Vec<String> = vec!["bench".into(), "lock".into(), "threads".into()];
    header.extend(param_header(&keys));
    header.extend(rep_columns());
    let mut rows = Vec::new();
    for p in points {
        for r in &p.reps {
            let mut row = vec![p.bench.clone(), p.lock.clone(), p.threads.to_string()];
            row.extend(param_cells(p, &keys));
            row.push(r.rep.to_string());
            row.push(numbers.of(r.wall_s));
            row.push(numbers.of(r.cpu_s));
            row.push(r.total_ops.to_string());
            row.push(numbers.of(r.throughput_ops_s));
            row.push(numbers.of(r.ns_per_op));
            row.push(numbers.of(cpu_ns_per_op(r)));
            row.push(numbers.of(r.jain));
            row.push(r.p50_ns.to_string());
            row.push(r.p99_ns.to_string());
            row.push(r.p999_ns.to_string());
            row.push(r.max_ns.to_string());
            row.push(r.censored.to_string());
            row.push(r.censored_ns.to_string());
            row.push(Value::from(r.thread_ops.clone()).to_string());
            row.push(if r.metrics.is_empty() {
                String::new()
            } else {
                Value::Object(r.metrics.clone()).to_string()
            });
            rows.push(row);
        }
    }
    Table { header, rows }
}

/// Which columns of a table are numbers (right-aligned in Markdown):
/// those whose every non-empty cell parses as one.
pub fn numeric_columns(t: &Table) -> Vec<bool> {
    (0..t.header.len())
        .map(|i| {
            let mut any = false;
            let all = t.rows.iter().all(|r| {
                let c = r[i].as_str();
                if c.is_empty() || c == "–" {
                    return true;
                }
                any = true;
                c.trim_end_matches(['×', '*']).parse::<f64>().is_ok()
            });
            any && all
        })
        .collect()
}

/// A run as CSV: a row per point, or per repetition with `reps`.
pub fn csv(points: &[Point], reps: bool) -> String {
    if reps {
        reps_table(points, Numbers::Full).csv()
    } else {
        points_table(points, Numbers::Full).csv()
    }
}

/// A run as a Markdown table (three significant figures): a row per
/// point, or per repetition with `reps` (without the per-thread counts
/// and metrics, which do not fit a table one reads).
pub fn markdown(points: &[Point], reps: bool) -> String {
    let table = if reps {
        let mut t = reps_table(points, Numbers::Short);
        let keep = t.header.len() - 2;
        t.header.truncate(keep);
        for r in &mut t.rows {
            r.truncate(keep);
        }
        t
    } else {
        points_table(points, Numbers::Short)
    };
    table.markdown(&numeric_columns(&table))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn point(lock: &str, params: Value, tputs: &[f64]) -> Point {
        Point::of_throughputs("demo", lock, 2, params, tputs)
    }

    /// Splits CSV text into records of fields (RFC 4180: quoted fields may
    /// hold commas, doubled quotes and line breaks).
    fn parse_csv(text: &str) -> Vec<Vec<String>> {
        let mut records = Vec::new();
        let (mut rec, mut field) = (Vec::new(), String::new());
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') => quoted = true,
                (false, ',') => rec.push(std::mem::take(&mut field)),
                (false, '\r') => {}
                (false, '\n') => {
                    rec.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut rec));
                }
                (false, c) => field.push(c),
            }
        }
        records
    }

    #[test]
    fn awkward_fields_are_quoted_and_read_back() {
        let t = Table {
            header: vec!["a".into(), "b,c".into()],
            rows: vec![
                vec!["say \"hi\"".into(), "x\ny".into()],
                vec!["".into(), "plain".into()],
            ],
        };
        let text = t.csv();
        assert!(text.starts_with("a,\"b,c\"\r\n"), "{text}");
        let parsed = parse_csv(&text);
        assert_eq!(parsed[0], t.header);
        assert_eq!(parsed[1..], t.rows[..]);
    }

    #[test]
    fn points_get_one_column_per_parameter_and_a_row_each() {
        let points = [
            point(
                "tas",
                json!({"cs_ns": 100, "dist": "exp"}),
                &[10.0, 30.0, 20.0],
            ),
            point("a,b|c", json!({"cs_ns": 200, "extra": [1, 2]}), &[5.0]),
        ];
        let parsed = parse_csv(&csv(&points, false));
        let h = &parsed[0];
        for col in [
            "param.cs_ns",
            "param.dist",
            "param.extra",
            "throughput_ops_s",
        ] {
            assert!(h.contains(&col.to_string()), "{col} not in {h:?}");
        }
        assert_eq!(parsed.len(), 3);
        assert!(parsed.iter().all(|r| r.len() == h.len()));
        let at = |row: usize, col: &str| &parsed[row][h.iter().position(|c| c == col).unwrap()];
        assert_eq!(at(1, "throughput_ops_s"), "20");
        assert_eq!(at(1, "throughput_min"), "10");
        assert_eq!(at(2, "lock"), "a,b|c");
        assert_eq!(at(2, "param.dist"), "");
        assert_eq!(at(2, "param.extra"), "[1,2]");

        let reps = parse_csv(&csv(&points, true));
        assert_eq!(reps.len(), 1 + 4);
        assert!(reps.iter().all(|r| r.len() == reps[0].len()));
    }

    #[test]
    fn markdown_rows_have_the_header_s_columns() {
        let points = [
            point("a|b", json!({"cs_ns": 100}), &[1e6, 2e6]),
            point("tas", json!({"cs_ns": 100}), &[f64::NAN]),
        ];
        for reps in [false, true] {
            let md = markdown(&points, reps);
            let cols = |l: &str| l.replace("\\|", "").matches('|').count();
            let lines: Vec<&str> = md.lines().collect();
            assert!(lines[1].contains("---:"), "{md}");
            assert!(lines.iter().all(|l| cols(l) == cols(lines[0])), "{md}");
        }
    }

    /// The repetition columns are the store's, in its order, with the CPU
    /// time per operation after `ns_per_op`; each cell is its column's.
    #[test]
    fn rep_columns_are_the_stores_and_each_cell_is_its_field() {
        let points = [point("tas", json!({}), &[5e6])];
        let t = reps_table(&points, Numbers::Full);
        assert_eq!(
            t.header[3..],
            [
                "rep",
                "wall_s",
                "cpu_s",
                "total_ops",
                "throughput_ops_s",
                "ns_per_op",
                "cpu_ns_per_op",
                "jain",
                "p50_ns",
                "p99_ns",
                "p999_ns",
                "max_ns",
                "censored",
                "censored_ns",
                "thread_ops",
                "metrics",
            ]
        );
        let r = &points[0].reps[0];
        let at = |col: &str| t.rows[0][t.header.iter().position(|c| c == col).unwrap()].clone();
        assert_eq!(at("total_ops"), r.total_ops.to_string());
        assert_eq!(at("wall_s"), full(r.wall_s));
        assert_eq!(at("cpu_ns_per_op"), full(cpu_ns_per_op(r)));
        assert_eq!(at("jain"), full(r.jain));
        assert_eq!(at("max_ns"), r.max_ns.to_string());
        assert_eq!(
            at("thread_ops"),
            Value::from(r.thread_ops.clone()).to_string()
        );
        assert_eq!(at("metrics"), "");
    }
}
