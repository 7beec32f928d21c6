//! A stored run as the front prints it: the JSON of `--json`, the text
//! summary with every study's tables and verdict, and the short summary
//! of a run of several studies. Each study's part comes from its
//! [`Study`] in the [`catalog`].

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::report::{by_params, cpu_ns_per_op, header, num, other_table, run_meta_json};
use crate::core::results::{Point, RunMeta};
use crate::core::study::Study;
use crate::front::catalog;

/// The run and its points as one JSON object: run metadata, and per point
/// the medians over repetitions (`"reps"` is the number of repetitions; the
/// repetitions themselves are under `"repetitions"`), with the fields its
/// study adds; each study's run-level keys. Numbers that do not exist (a
/// median of no repetitions, a ratio without a reference) are `null`.
///
/// A study may give a run of its own kind an object of its own instead
/// ([`Study::own_json`]).
pub fn run_json(meta: &RunMeta, points: &[Point]) -> Value {
    let studies = catalog::all();
    if let Some(v) = studies.iter().find_map(|s| s.own_json(meta, points)) {
        return v;
    }
    let of =
        |s: &dyn Study| -> Vec<&Point> { points.iter().filter(|p| p.bench == s.name()).collect() };
    let mut top = serde_json::Map::new();
    for s in studies {
        top.extend(
            s.run_keys(meta, &of(*s))
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
        );
    }
    let json_points: Vec<Value> = points
        .iter()
        .map(|p| {
            let (tput, tput_min, tput_max) = p.stat(|r| r.throughput_ops_s);
            let mut v = json!({
                "bench": p.bench,
                "lock": p.lock,
                "threads": p.threads,
                "params": p.params,
                "reps": p.reps.len(),
                "throughput_ops_s": num(tput),
                "jain": num(p.stat(|r| r.jain).0),
                "p50_ns": num(p.stat(|r| r.p50_ns as f64).0),
                "p99_ns": num(p.stat(|r| r.p99_ns as f64).0),
                "p999_ns": num(p.stat(|r| r.p999_ns as f64).0),
                "max_ns": num(p.stat(|r| r.max_ns as f64).0),
                "censored": num(p.stat(|r| r.censored as f64).0),
                "longest_wait_ns": num(p.stat(|r| r.longest_wait_ns() as f64).0),
                "ns_per_op": num(p.stat(|r| r.ns_per_op).0),
                "cpu_ns_per_op": num(p.stat(cpu_ns_per_op).0),
                "throughput_min": num(tput_min),
                "throughput_max": num(tput_max),
                // A ratio to the study's reference, where its study sets one.
                "ratio_to_floor": Value::Null,
                "repetitions": serde_json::to_value(&p.reps).unwrap_or(Value::Null),
            });
            if let Some(s) = catalog::find(&p.bench) {
                if let (Value::Object(v), Value::Object(extra)) =
                    (&mut v, s.point_json(meta, p, &of(s), points))
                {
                    v.extend(extra);
                }
            }
            v
        })
        .collect();
    top.insert("run".into(), run_meta_json(meta));
    top.insert("points".into(), Value::Array(json_points));
    top.insert(
        "verdict".into(),
        crate::core::verdict::json(&verdicts(meta, points)),
    );
    Value::Object(top)
}

/// Every study's verdict on a run's points, in the order the studies come
/// in the run.
pub fn verdicts(meta: &RunMeta, points: &[Point]) -> Vec<crate::core::verdict::Section> {
    let mut benches: Vec<&str> = Vec::new();
    for p in points {
        if !benches.contains(&p.bench.as_str()) {
            benches.push(&p.bench);
        }
    }
    benches
        .into_iter()
        .filter_map(catalog::find)
        .flat_map(|s| {
            let of: Vec<&Point> = points.iter().filter(|p| p.bench == s.name()).collect();
            s.verdict(meta, &of, points)
        })
        .collect()
}

/// A human summary of a run: header, then per study its tables (a study
/// the lab no longer has gets a plain table per parameter set), then the
/// verdict.
pub fn render_text(meta: &RunMeta, points: &[Point]) -> String {
    render(meta, points, false)
}

/// The short summary of a run of several studies (the standard suite):
/// header, one table per study ([`Study::brief`]), the verdict last, and
/// where the rest is.
pub fn render_brief(meta: &RunMeta, points: &[Point]) -> String {
    let mut out = render(meta, points, true);
    if let Some(id) = meta.id {
        let _ = writeln!(
            out,
            "every table: locklab show {id}; charts and all in one page: locklab report {id} --out report.html"
        );
    }
    out
}

fn render(meta: &RunMeta, points: &[Point], brief: bool) -> String {
    let mut out = String::new();
    header(&mut out, meta);
    if points.is_empty() {
        out.push_str("\nno points stored for this run\n");
        return out;
    }
    let mut benches: Vec<&str> = Vec::new();
    for p in points {
        if !benches.contains(&p.bench.as_str()) {
            benches.push(&p.bench);
        }
    }
    for bench in benches {
        let of_bench: Vec<&Point> = points.iter().filter(|p| p.bench == bench).collect();
        match catalog::find(bench) {
            Some(s) if brief => s.brief(&mut out, meta, &of_bench, points),
            Some(s) => s.text(&mut out, meta, &of_bench, points),
            None => {
                for (params, group) in by_params(&of_bench) {
                    out.push('\n');
                    other_table(&mut out, bench, params, &group);
                }
            }
        }
    }
    crate::core::verdict::text(&mut out, &verdicts(meta, points));
    out
}
