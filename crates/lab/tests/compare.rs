//! `locklab compare`, `locklab baseline` and `show --format csv|markdown`
//! from the command line: a planted change is found, two halves of one
//! run are not told apart, the CSV and Markdown parse, baselines round
//! trip, and bad input is one line, exit 2, with the store unchanged.

mod common;

use common::{assert_bad_input, locklab, stdout, tmp};
use locklab_lab::core::results::{Machine, Point, Rep, RunMeta};
use locklab_lab::core::store::Store;
use serde_json::{json, Value};
use std::path::Path;

fn meta(cpu: &str) -> RunMeta {
    RunMeta {
        id: None,
        uuid: None,
        kind: "bench spin".into(),
        command: "locklab bench spin".into(),
        params: json!({}),
        machine: Machine {
            cpu_model: cpu.into(),
            cores: 4,
            ..Machine::default()
        },
        started: "2026-01-01T00:00:00Z".into(),
        finished: None,
        complete: false,
    }
}

/// A deterministic noise of about ±5 %, different for each `i`.
fn noise(i: u32) -> f64 {
    let x = (i as f64 * 12.9898).sin() * 43758.5453;
    1.0 + 0.1 * (x - x.floor() - 0.5)
}

fn point(lock: &str, threads: u32, params: Value, tputs: &[f64]) -> Point {
    Point::of_throughputs("spin", lock, threads, params, tputs)
}

/// Stores a finished run of `points`; its id.
fn store_run(db: &Path, meta: &RunMeta, points: &[Point]) -> i64 {
    let mut store = Store::open(db).unwrap();
    let id = store.begin_run(meta).unwrap();
    for p in points {
        store.add_point(id, p).unwrap();
    }
    store.finish_run(id).unwrap();
    id
}

/// The points of one made-up run: three locks at two thread counts, each
/// with `reps` noisy repetitions around its own level times `factor`.
fn made_up(reps: u32, factor: f64) -> Vec<Point> {
    let mut v = Vec::new();
    for (k, lock) in ["tas", "mcs", "a-rather-long-lock-name"].iter().enumerate() {
        for threads in [1, 4] {
            let level = 1e6 * (k + 1) as f64 * f64::from(threads);
            let t: Vec<f64> = (0..reps)
                .map(|i| level * factor * noise(i + 17 * k as u32 + threads))
                .collect();
            v.push(point(lock, threads, json!({"cs_ns": 100}), &t));
        }
    }
    v
}

fn compare_json(db: &Path, a: &str, b: &str) -> Value {
    let o = locklab(db, &["compare", a, b, "--format", "json"]);
    assert!(o.status.success(), "{o:?}");
    serde_json::from_str(&stdout(&o)).expect("JSON")
}

#[test]
fn a_planted_20_percent_change_is_found() {
    let (_d, db) = tmp();
    let a = store_run(&db, &meta("cpu"), &made_up(5, 1.0));
    let b = store_run(&db, &meta("cpu"), &made_up(5, 1.2));
    let v = compare_json(&db, &a.to_string(), &b.to_string());
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    for p in points {
        let r = p["ratio"].as_f64().unwrap();
        assert!((r - 1.2).abs() < 1e-9, "{p}");
        assert!(p["lo"].as_f64().unwrap() > 1.0, "{p}");
        assert!(p["hi"].as_f64().unwrap() >= r, "{p}");
        assert_eq!(p["significant"], true, "{p}");
        assert!(p["b"].as_f64().unwrap() > p["a"].as_f64().unwrap());
    }
    let s = &v["summary"][0];
    assert_eq!(
        (s["faster"].as_u64(), s["slower"].as_u64()),
        (Some(6), Some(0))
    );
    assert!((s["geomean_ratio"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    // And the other way round it is slower.
    let v = compare_json(&db, &b.to_string(), &a.to_string());
    assert_eq!(v["summary"][0]["slower"], 6);

    let text = stdout(&locklab(&db, &["compare", "1", "2"]));
    assert!(text.contains("higher is better"), "{text}");
    assert!(
        text.contains("6 points: 6 faster, 0 slower, 0 unchanged"),
        "{text}"
    );
    assert!(!text.contains("warning"), "{text}");
}

#[test]
fn two_halves_of_one_run_do_not_differ() {
    let (_d, db) = tmp();
    let whole = made_up(10, 1.0);
    let half = |parity: u32| -> Vec<Point> {
        whole
            .iter()
            .map(|p| Point {
                reps: p
                    .reps
                    .iter()
                    .filter(|r| r.rep % 2 == parity)
                    .cloned()
                    .collect(),
                ..p.clone()
            })
            .collect()
    };
    store_run(&db, &meta("cpu"), &half(0));
    store_run(&db, &meta("cpu"), &half(1));
    let v = compare_json(&db, "1", "last");
    assert_eq!(v["points"].as_array().unwrap().len(), 6);
    for p in v["points"].as_array().unwrap() {
        assert_eq!(p["significant"], false, "{p}");
        assert!(p["lo"].as_f64().unwrap() <= 1.0 && 1.0 <= p["hi"].as_f64().unwrap());
    }
    assert_eq!(v["summary"][0]["unchanged"], 6);
}

/// A real quick run, and a copy of it with every throughput × 1.2 stored
/// through the store: every shared point's ratio is 1.2, and none is
/// called slower.
#[test]
fn a_real_run_and_its_faster_copy() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "-q",
            "bench",
            "uncontended",
            "--locks",
            "tas",
            "--reps",
            "5",
            "--secs",
            "0.01",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let (m, points) = {
        let store = Store::open(&db).unwrap();
        store.load(1).unwrap()
    };
    let faster: Vec<Point> = points
        .iter()
        .map(|p| Point {
            reps: p
                .reps
                .iter()
                .map(|r| Rep {
                    throughput_ops_s: r.throughput_ops_s * 1.2,
                    ..r.clone()
                })
                .collect(),
            ..p.clone()
        })
        .collect();
    // Another run (another identity) with the same facts.
    store_run(&db, &RunMeta { uuid: None, ..m }, &faster);
    let v = compare_json(&db, "1", "2");
    let shared = v["points"].as_array().unwrap();
    assert_eq!(shared.len(), points.len());
    for p in shared {
        assert!((p["ratio"].as_f64().unwrap() - 1.2).abs() < 1e-6, "{p}");
        assert_ne!(p["change"], "slower", "{p}");
    }
    assert_eq!(
        (v["only_in_a"].as_u64(), v["only_in_b"].as_u64()),
        (Some(0), Some(0))
    );
}

#[test]
fn points_only_in_one_run_are_counted_and_other_machines_warned_of() {
    let (_d, db) = tmp();
    let a = made_up(3, 1.0);
    let mut b = made_up(3, 1.0);
    b.remove(0);
    b.push(point("extra", 8, json!({"cs_ns": 100}), &[1.0, 2.0]));
    b.push(point("extra", 16, json!({"cs_ns": 100}), &[1.0, 2.0]));
    store_run(&db, &meta("cpu one"), &a);
    store_run(&db, &meta("cpu two"), &b);
    let o = locklab(&db, &["compare", "1", "2"]);
    assert!(o.status.success(), "{o:?}");
    let text = stdout(&o);
    assert!(
        text.contains("1 point only in A, 2 points only in B"),
        "{text}"
    );
    assert!(
        text.contains("warning") && text.contains("cpu two"),
        "{text}"
    );
    let v = compare_json(&db, "1", "2");
    assert_eq!(v["points"].as_array().unwrap().len(), 5);
    assert_eq!(v["warnings"].as_array().unwrap().len(), 1);
}

/// Splits CSV text into records of fields, as RFC 4180 has it.
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
    assert!(field.is_empty() && rec.is_empty(), "unterminated record");
    records
}

/// Cells of a Markdown table row (escaped pipes kept in their cell).
fn md_cells(line: &str) -> usize {
    line.replace("\\|", "").matches('|').count() - 1
}

fn awkward_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let (d, db) = tmp();
    let mut points = made_up(3, 1.0);
    points.push(point(
        "odd, \"quoted\" | lock",
        2,
        json!({"cs_ns": 100, "note": "a,b \"c\""}),
        &[5.0, 6.0, 7.0],
    ));
    store_run(&db, &meta("cpu"), &points);
    store_run(&db, &meta("cpu"), &points);
    (d, db)
}

#[test]
fn csv_has_a_header_and_a_row_per_point_or_repetition() {
    let (_d, db) = awkward_db();
    let o = locklab(&db, &["show", "1", "--format", "csv"]);
    assert!(o.status.success(), "{o:?}");
    let recs = parse_csv(&stdout(&o));
    let h = &recs[0];
    assert_eq!(recs.len(), 1 + 7);
    assert!(recs.iter().all(|r| r.len() == h.len()), "{recs:?}");
    for col in [
        "bench",
        "lock",
        "threads",
        "param.cs_ns",
        "param.note",
        "reps",
        "throughput_ops_s",
        "ns_per_op",
        "cpu_ns_per_op",
        "jain",
        "p99_ns",
    ] {
        assert!(h.iter().any(|c| c == col), "{col} not in {h:?}");
    }
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    assert_eq!(recs[7][col("lock")], "odd, \"quoted\" | lock");
    assert_eq!(recs[7][col("param.note")], "a,b \"c\"");
    assert_eq!(recs[7][col("throughput_ops_s")], "6");

    let o = locklab(&db, &["show", "1", "--format", "csv", "--reps"]);
    let recs = parse_csv(&stdout(&o));
    assert_eq!(recs.len(), 1 + 7 * 3);
    assert!(recs.iter().all(|r| r.len() == recs[0].len()));
    assert!(recs[0].iter().any(|c| c == "rep"));

    let o = locklab(&db, &["compare", "1", "2", "--format", "csv"]);
    let recs = parse_csv(&stdout(&o));
    assert_eq!(recs.len(), 1 + 7);
    assert!(recs.iter().all(|r| r.len() == recs[0].len()));
    for col in ["ratio", "lo", "hi", "significant"] {
        assert!(recs[0].iter().any(|c| c == col), "{col}");
    }
}

#[test]
fn markdown_rows_have_the_header_s_column_count() {
    let (_d, db) = awkward_db();
    for args in [
        &["show", "1", "--format", "markdown"][..],
        &["show", "1", "--format", "markdown", "--reps"][..],
        &["compare", "1", "2", "--format", "markdown"][..],
    ] {
        let o = locklab(&db, args);
        assert!(o.status.success(), "{args:?}: {o:?}");
        let text = stdout(&o);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
        assert!(rows.len() >= 2 + 7, "{args:?}: {text}");
        assert!(rows[1].contains("---"), "{text}");
        let n = md_cells(rows[0]);
        assert!(rows.iter().all(|r| md_cells(r) == n), "{args:?}: {text}");
    }
}

#[test]
fn baselines_round_trip() {
    let (_d, db) = tmp();
    store_run(&db, &meta("cpu"), &made_up(3, 1.0));
    store_run(&db, &meta("cpu"), &made_up(3, 1.2));
    let list = |db: &Path| stdout(&locklab(db, &["baseline", "list"]));
    assert!(list(&db).contains("no baselines"));

    let o = locklab(&db, &["baseline", "save", "main", "1"]);
    assert!(o.status.success(), "{o:?}");
    assert!(list(&db).contains("main"));
    let v = compare_json(&db, "main", "last");
    assert_eq!(v["a"]["id"], 1);
    assert_eq!(v["a"]["baseline"], "main");
    assert_eq!(v["b"]["id"], 2);

    // Saving again under the name replaces it.
    let o = locklab(&db, &["baseline", "save", "main", "last"]);
    assert!(stdout(&o).contains("was run 1"), "{o:?}");
    assert_eq!(compare_json(&db, "main", "1")["a"]["id"], 2);
    let o = locklab(&db, &["--json", "baseline", "list"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["baselines"][0]["run_id"], 2);

    let o = locklab(&db, &["baseline", "delete", "main"]);
    assert!(o.status.success(), "{o:?}");
    assert!(list(&db).contains("no baselines"));
    // The runs stay.
    assert_eq!(stdout(&locklab(&db, &["runs"])).lines().count(), 2);
    assert_bad_input(&locklab(&db, &["compare", "main", "1"]), "'main'");
}

#[test]
fn bad_input_is_one_line_and_changes_nothing() {
    let (_d, db) = tmp();
    store_run(&db, &meta("cpu"), &made_up(3, 1.0));
    let o = locklab(&db, &["baseline", "save", "keep", "1"]);
    assert!(o.status.success());
    let before = std::fs::read(&db).unwrap();
    for (args, needle) in [
        (&["baseline", "save", "123", "1"][..], "'123'"),
        (&["baseline", "save", "last", "1"][..], "'last'"),
        (&["baseline", "save", "a b", "1"][..], "'a b'"),
        (&["baseline", "save", "a/b", "1"][..], "'a/b'"),
        (&["baseline", "save", "fine", "99"][..], "99"),
        (&["baseline", "delete", "nosuch"][..], "nosuch"),
        (&["compare", "nosuch", "1"][..], "'nosuch'"),
        (&["compare", "1", "no such"][..], "'no such'"),
        (&["compare", "1", "77"][..], "77"),
        (&["show", "1", "--reps"][..], "--reps"),
        (&["show", "1", "--format", "json", "--reps"][..], "--reps"),
        (&["--json", "show", "1", "--format", "csv"][..], "--json"),
        (
            &["--json", "compare", "1", "1", "--format", "markdown"][..],
            "--json",
        ),
    ] {
        assert_bad_input(&locklab(&db, args), needle);
        assert_eq!(
            std::fs::read(&db).unwrap(),
            before,
            "{args:?} changed the store"
        );
    }
    // A baseline saved where there is no database creates none.
    let (_d2, none) = tmp();
    assert_bad_input(
        &locklab(&none, &["baseline", "save", "x", "1"]),
        "no such database",
    );
    assert!(!none.exists());
    // `--json` alone still works for show, and is --format json.
    let o = locklab(&db, &["--json", "show", "1"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["points"].as_array().unwrap().len(), 6);
}

/// `locklab history` over runs of three revisions: the regression planted
/// at the second is marked, and two runs of one revision make one figure.
#[test]
fn history_marks_a_planted_regression_and_not_the_runs_of_one_revision() {
    let (_d, db) = tmp();
    let at = |rev: &str| RunMeta {
        machine: Machine {
            git_rev: rev.into(),
            ..meta("cpu").machine
        },
        ..meta("cpu")
    };
    store_run(&db, &at("r1"), &made_up(5, 1.0));
    store_run(&db, &at("r1"), &made_up(5, 1.0));
    store_run(&db, &at("r2"), &made_up(5, 0.8));
    store_run(&db, &at("r3"), &made_up(5, 0.8));
    let args = [
        "history",
        "--bench",
        "spin",
        "--lock",
        "mcs",
        "--threads",
        "4",
    ];
    let o = locklab(&db, &[&args[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let revs = v["series"][0]["revisions"].as_array().unwrap();
    let seen: Vec<(&str, Value, &str)> = revs
        .iter()
        .map(|r| {
            (
                r["revision"].as_str().unwrap(),
                r["runs"].clone(),
                r["vs_previous"]["change"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("r1", json!([1, 2]), "-"),
            ("r2", json!([3]), "slower"),
            ("r3", json!([4]), "unchanged"),
        ]
    );
    let page = db.with_file_name("history.html");
    let o = locklab(
        &db,
        &[&args[..], &["--out", page.to_str().unwrap()]].concat(),
    );
    let text = stdout(&o);
    assert!(text.contains("1 marked"), "{text}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<td>r2</td>") && html.contains("<td class=\"warn\">* slower</td>"),
        "{html}"
    );
    // Self-contained: nothing fetched (an inline SVG's `xmlns` names its
    // namespace with a URL, which is not a fetch), and its chart drawn.
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"),
        "not self-contained"
    );
    assert!(
        html.contains("<svg") && html.contains(">r2<"),
        "no chart: {html}"
    );
    // Not over the store itself.
    assert_bad_input(
        &locklab(&db, &[&args[..], &["--out", db.to_str().unwrap()]].concat()),
        "would destroy the stored runs",
    );
    let csv = stdout(&locklab(&db, &[&args[..], &["--format", "csv"]].concat()));
    assert_eq!(parse_csv(&csv).len(), 4, "{csv}");
    assert_bad_input(
        &locklab(
            &db,
            &[
                "history",
                "--bench",
                "spin",
                "--lock",
                "nope",
                "--threads",
                "4",
            ],
        ),
        "no point of bench spin with lock nope at 4 threads",
    );
    assert_bad_input(
        &locklab(
            &db,
            &[
                "history",
                "--bench",
                "spin",
                "--lock",
                "mcs",
                "--threads",
                "0",
            ],
        ),
        "thread count 0 is out of range",
    );
}
