//! The report, JSON and plot of runs made of several studies' points:
//! what `show`, `show --json` and `plot` make of them through [`super::Study`].

use crate::core::report::*;
use crate::core::results::{Machine, Point, Rep, RunMeta};
use crate::core::store::RunSummary;
use crate::front::show::{render_text, run_json};
use crate::studies::lhp::report::preemption_sensitivity;
use crate::studies::uncontended::report::ratio_to_floor;
use serde_json::{json, Value};

fn rep(i: u32, tput: f64, ns: f64) -> Rep {
    Rep {
        rep: i,
        wall_s: 1.0,
        cpu_s: 2.0,
        total_ops: tput as u64,
        throughput_ops_s: tput,
        ns_per_op: ns,
        thread_ops: vec![tput as u64 / 2; 2],
        jain: 0.5 + f64::from(i) * 0.1,
        p50_ns: 100 * u64::from(i + 1),
        p99_ns: 1_000 * u64::from(i + 1),
        p999_ns: 10_000 * u64::from(i + 1),
        max_ns: 99_999,
        censored: 0,
        censored_ns: 0,
        metrics: Default::default(),
    }
}

fn point(bench: &str, lock: &str, threads: u32, tputs: &[f64], ns: &[f64]) -> Point {
    Point {
        bench: bench.into(),
        lock: lock.into(),
        threads,
        params: json!({"cs_ns": 100, "secs": 0.5}),
        reps: tputs
            .iter()
            .zip(ns)
            .enumerate()
            .map(|(i, (&t, &n))| rep(i as u32, t, n))
            .collect(),
    }
}

#[test]
fn preemption_sensitivity_is_four_times_the_cores_over_the_cores() {
    // Two cores: 8 threads over 2 threads.
    let ps = [
        point("lhp", "ticket", 2, &[4e6, 5e6, 6e6], &[1.0; 3]),
        point("lhp", "ticket", 8, &[1e4, 5e4, 2e5], &[1.0; 3]),
        point("lhp", "mutex", 2, &[4e6, 4e6, 4e6], &[1.0; 3]),
        point("lhp", "mutex", 8, &[3e6, 3e6, 3e6], &[1.0; 3]),
        point("lhp", "tas", 2, &[4e6], &[1.0]),
    ];
    let refs: Vec<&Point> = ps.iter().collect();
    let s = preemption_sensitivity(&refs, 2);
    assert_eq!(s[0], ("ticket", Some(5e4 / 5e6)));
    assert_eq!(s[1], ("mutex", Some(0.75)));
    assert_eq!(s[2], ("tas", None), "no point at 4 × cores");
    let v = run_json(&meta(true), &ps);
    assert_eq!(v["preemption_sensitivity"]["mutex"], 0.75);
    assert_eq!(v["preemption_sensitivity"]["tas"], Value::Null);
    let text = render_text(&meta(true), &ps);
    assert!(text.contains("lhp: throughput"), "{text}");
    assert!(text.contains("preemption sensitivity"), "{text}");
    assert!(text.contains("0.750"), "{text}");
}

fn meta(complete: bool) -> RunMeta {
    RunMeta {
        id: Some(7),
        uuid: None,
        kind: "bench".into(),
        command: "locklab bench --reps 3".into(),
        params: json!({"reps": 3, "threads": [1, 2]}),
        machine: Machine {
            cpu_model: "Test CPU".into(),
            cores: 2,
            tsc_hz: Some(2_400_000_000),
            kernel: "Linux 6.1".into(),
            rustc: "rustc 1.85.0".into(),
            git_rev: "abc1234".into(),
            hostname: "box".into(),
            c2c_round_trip_ns: Some(480.0),
            id: Some("test-machine".to_string()),
            rtm: Some(false),
        },
        started: "2025-03-01T14:05:09Z".into(),
        finished: complete.then(|| "2025-03-01T14:09:40Z".into()),
        complete,
    }
}

fn points() -> Vec<Point> {
    vec![
        point(
            "uncontended",
            "floor",
            1,
            &[1e8, 1e8, 1e8],
            &[2.0, 1.0, 4.0],
        ),
        point(
            "uncontended",
            "ticket",
            1,
            &[5e7, 5e7, 5e7],
            &[5.0, 6.0, 9.0],
        ),
        point("spin", "tas", 1, &[1.0, 2.0, 9.0], &[1.0, 1.0, 1.0]),
        point("spin", "tas", 2, &[3e6, 3.1e6, 2.9e6], &[1.0, 1.0, 1.0]),
        point("spin", "mcs", 1, &[4e6, 4e6, 4e6], &[1.0, 1.0, 1.0]),
        point("spin", "mcs", 2, &[6e6, 6e6, 9e6], &[1.0, 1.0, 1.0]),
    ]
}

#[test]
fn json_has_medians_and_ratio_to_floor() {
    let v = run_json(&meta(true), &points());
    assert_eq!(v["run"]["id"], 7);
    assert_eq!(v["run"]["complete"], true);
    assert_eq!(v["run"]["machine"]["tsc_hz"], 2_400_000_000u64);
    for key in ["kind", "command", "params", "started", "finished"] {
        assert!(!v["run"][key].is_null(), "run.{key}");
    }
    let p = &v["points"];
    // tas at 1 thread: throughputs 1, 2, 9 → median 2.
    let tas1 = &p[2];
    assert_eq!(tas1["lock"], "tas");
    assert_eq!(tas1["reps"], 3);
    assert_eq!(tas1["throughput_ops_s"], 2.0);
    assert_eq!(tas1["throughput_min"], 1.0);
    assert_eq!(tas1["throughput_max"], 9.0);
    assert_eq!(tas1["jain"], 0.6);
    assert_eq!(tas1["p50_ns"], 200.0);
    assert_eq!(tas1["p99_ns"], 2000.0);
    assert_eq!(tas1["p999_ns"], 20000.0);
    assert_eq!(
        tas1["ratio_to_floor"],
        Value::Null,
        "only uncontended points"
    );
    assert_eq!(tas1["repetitions"].as_array().unwrap().len(), 3);
    assert_eq!(tas1["repetitions"][2]["throughput_ops_s"], 9.0);
    assert_eq!(tas1["params"], json!({"cs_ns": 100, "secs": 0.5}));
    // floor ns/op 2, 1, 4 → 2; ticket 5, 6, 9 → 6; ratio 3.
    assert_eq!(p[0]["ns_per_op"], 2.0);
    assert_eq!(p[0]["ratio_to_floor"], 1.0);
    assert_eq!(p[1]["ns_per_op"], 6.0);
    assert_eq!(p[1]["ratio_to_floor"], 3.0);
}

#[test]
fn json_without_floor_or_reps_has_nulls() {
    let mut ps = points();
    ps.remove(0);
    ps[0].reps.clear();
    let v = run_json(&meta(false), &ps);
    assert_eq!(v["points"][0]["ratio_to_floor"], Value::Null);
    assert_eq!(v["points"][0]["reps"], 0);
    assert_eq!(v["points"][0]["throughput_ops_s"], Value::Null);
    assert_eq!(v["run"]["finished"], Value::Null);
    assert_eq!(v["run"]["complete"], false);
    // Every value is valid JSON (no NaN sneaks through).
    serde_json::from_str::<Value>(&v.to_string()).unwrap();
}

#[test]
fn ratio_prefers_the_floor_with_the_same_params() {
    let mut ps = points();
    let mut other_floor = point("uncontended", "floor", 1, &[1.0], &[3.0]);
    other_floor.params = json!({"cs_ns": 0});
    ps.insert(0, other_floor);
    assert_eq!(ratio_to_floor(&ps[2], &ps), Some(3.0));
    let mut lonely = ps[2].clone();
    lonely.params = json!({"cs_ns": 5});
    assert_eq!(
        ratio_to_floor(&lonely, &ps),
        Some(2.0),
        "falls back to the first floor"
    );
}

#[test]
fn text_shows_locks_tables_and_state() {
    let text = render_text(&meta(true), &points());
    for needle in [
        "run 7",
        "finished 2025-03-01T14:09:40Z",
        "floor",
        "ticket",
        "tas",
        "mcs",
        "3.00",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(!text.contains("INCOMPLETE"));
    assert!(text.contains("Mops/s"));
    assert!(text.contains("1 thr") && text.contains("2 thr"));
    assert!(text.contains("1.00µs") || text.contains("2.00µs"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
    }
    let incomplete = render_text(&meta(false), &points());
    assert!(incomplete.contains("INCOMPLETE"), "{incomplete}");
    assert!(render_text(&meta(false), &[]).contains("no points"));
}

#[test]
fn many_thread_counts_wrap_within_the_width() {
    let ps: Vec<Point> = (1..=64)
        .map(|t| {
            point(
                "spin",
                "a-rather-long-lock-name",
                t,
                &[1e6 * f64::from(t)],
                &[1.0],
            )
        })
        .collect();
    let text = render_text(&meta(true), &ps);
    for line in text.lines() {
        assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
    }
    assert!(text.contains("64 thr"));
}

#[test]
fn units() {
    assert_eq!(fmt_ns(850.0), "850ns");
    assert_eq!(fmt_ns(1_200.0), "1.20µs");
    assert_eq!(fmt_ns(35_000_000.0), "35.0ms");
    assert_eq!(fmt_ns(2.5e9), "2.50s");
    assert_eq!(throughput_unit(5e5), (1e3, "kops/s"));
    assert_eq!(sig(12345.6), "12346");
    assert_eq!(sig(0.0123), "0.012");
    // A collapsed lock's rate in Mops/s is not "0.000".
    assert_eq!(sig(3.1e-5), "3.10e-5");
    assert_eq!(sig(0.0), "0");
    assert_eq!(sig(f64::NAN), "–");
}

#[test]
fn runs_listing_one_line_each() {
    let runs = vec![
        RunSummary {
            meta: meta(false),
            points: 1,
            problem: None,
        },
        RunSummary {
            meta: RunMeta {
                id: Some(12),
                uuid: None,
                ..meta(true)
            },
            points: 24,
            problem: None,
        },
    ];
    let text = runs_text(&runs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("#7") && lines[0].contains("INCOMPLETE"));
    assert!(lines[0].contains("1 point ") && lines[0].contains("locklab bench --reps 3"));
    assert!(
        lines[1].contains("#12") && lines[1].contains("complete") && lines[1].contains("24 points")
    );
    assert!(lines[1].contains("2025-03-01T14:05:09Z"));
    assert_eq!(runs_text(&[]), "no runs stored yet\n");

    // One machine: no machine column. Two (a shared store): each line
    // names its run's machine, and the columns stay aligned.
    let on = |id: Option<&str>, run: i64| {
        let mut m = meta(true);
        m.id = Some(run);
        m.machine.id = id.map(str::to_string);
        RunSummary {
            meta: m,
            points: 2,
            problem: None,
        }
    };
    let uuid = "0b7c2f4e-9d1a-5e3b-8c6f-2a4d6e8f0a1b";
    let one = runs_text(&[on(Some(uuid), 1), on(Some(uuid), 2)]);
    assert!(!one.contains("0b7c2f4e"), "{one}");
    let two = runs_text(&[on(Some(uuid), 1), on(Some("lab-box"), 2), on(None, 3)]);
    let lines: Vec<&str> = two.lines().collect();
    assert!(
        lines[0].contains("  0b7c2f4e  ") && !lines[0].contains(uuid),
        "{two}"
    );
    assert!(lines[1].contains("  lab-box  "), "{two}");
    assert!(lines[2].contains("  (not recorded)  "), "{two}");
    let kind_at: Vec<usize> = lines.iter().map(|l| l.find("bench").unwrap()).collect();
    assert!(kind_at.windows(2).all(|w| w[0] == w[1]), "{two}");
}

/// A contention sweep at 2 threads on 2 cores: `ticket` took no lock in
/// any repetition, `mcs` shared 600 to 400 (locks of the registry, so
/// that the HTML report draws its chart and table).
fn zero_and_some() -> (RunMeta, Vec<Point>) {
    let meta = RunMeta {
        id: Some(7),
        uuid: None,
        kind: "bench spin".into(),
        command: "locklab bench spin".into(),
        params: Value::Null,
        machine: Machine {
            cores: 2,
            ..Machine::default()
        },
        started: "2026-01-01T00:00:00Z".into(),
        finished: Some("2026-01-01T00:00:01Z".into()),
        complete: true,
    };
    let point = |lock: &str, ops: &[u64]| Point {
        bench: "spin".into(),
        lock: lock.into(),
        threads: 2,
        params: json!({"cs_ns": 100, "cs_lines": 1, "delay_ns": 0, "delay_dist": "exp"}),
        reps: (0..3)
            .map(|i| Rep {
                rep: i,
                ..Rep::counted(1.0, 2.0, ops.to_vec())
            })
            .collect(),
    };
    (
        meta,
        vec![point("ticket", &[0, 0]), point("mcs", &[600, 400])],
    )
}

/// No acquisition has no fairness wherever a run is shown: "n/a" in
/// the text and the HTML report, `null` in JSON, an empty cell in an
/// export, and never a number (1.00) nor NaN; and no verdict names it.
#[test]
fn no_acquisitions_show_an_undefined_fairness_everywhere() {
    let (meta, points) = zero_and_some();
    let text = render_text(&meta, &points);
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    let row = text
        .lines()
        .skip_while(|l| !l.contains("fairness: Jain"))
        .find(|l| l.trim_start().starts_with("ticket"))
        .unwrap_or_else(|| panic!("no fairness row for ticket in {text}"));
    assert!(row.contains("n/a"), "{row}");
    for l in text.lines().filter(|l| l.contains("fairest")) {
        assert!(l.contains("mcs") && !l.contains("ticket"), "{l}");
    }

    let v = run_json(&meta, &points);
    let idle = &v["points"][0];
    assert_eq!(idle["lock"], "ticket");
    assert!(idle["jain"].is_null(), "{idle}");
    assert!(idle["repetitions"][0]["jain"].is_null(), "{idle}");
    let busy = 1e6 / (2.0 * (600.0 * 600.0 + 400.0 * 400.0));
    assert!((v["points"][1]["jain"].as_f64().unwrap() - busy).abs() < 1e-9);
    let verdict = v["verdict"].to_string();
    assert!(!verdict.contains("ticket"), "{verdict}");

    let html = crate::front::html::page(&[(meta.clone(), points.clone())]);
    assert!(!html.contains("NaN"), "NaN in the HTML report");
    assert!(html.contains("<td class=\"n\">n/a</td>"));

    let jain_col =
        |t: &crate::front::export::Table| t.header.iter().position(|h| h == "jain").unwrap();
    for t in [
        crate::front::export::points_table(&points, crate::front::export::Numbers::Full),
        crate::front::export::reps_table(&points, crate::front::export::Numbers::Short),
    ] {
        let c = jain_col(&t);
        assert_eq!(t.rows[0][c], "", "{:?}", t.rows[0]);
        let cell: f64 = t.rows.last().unwrap()[c].parse().unwrap();
        assert!((cell - busy).abs() < 1e-3, "{cell}");
    }
}

#[test]
fn every_study_folder_is_reached_by_a_line_of_the_catalog() {
    // A study is a folder of `src/studies/` (declared in its `mod.rs`) and
    // a line here. A folder whose line is missing, or left undeclared, is
    // code no command runs: every folder but `shared` must be where one of
    // the catalog's commands lives.
    use crate::core::study::RunCommand;
    let mut types = Vec::new();
    super::Command::arg_types(&mut types);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/studies");
    let mut folders: Vec<String> = std::fs::read_dir(&dir)
        .expect("src/studies")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|f| f != "shared")
        .collect();
    folders.sort();
    assert!(folders.len() >= 10, "{folders:?}");
    let unreached: Vec<&String> = folders
        .iter()
        .filter(|f| {
            !types
                .iter()
                .any(|t| t.contains(&format!("::studies::{f}::")))
        })
        .collect();
    assert!(
        unreached.is_empty(),
        "study folders no command of the catalog runs: {unreached:?} (commands: {types:?})"
    );
}
