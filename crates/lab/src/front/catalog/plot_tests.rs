//! The plots of runs through the studies (`plot` and its choice of study).

use crate::core::error::EXIT_INPUT;
use crate::core::plot::*;
use crate::core::results::{Machine, Rep};
use crate::core::results::{Point, RunMeta};
use crate::front::plot::plot_run;
use serde_json::json;
use std::path::Path;

fn rep(i: u32, tput: f64) -> Rep {
    Rep {
        throughput_ops_s: tput,
        ns_per_op: 1e9 / tput,
        ..Rep::one_thread(i, 1.0, 1.0, tput as u64)
    }
}

fn run(locks: &[&str], cs: &[u64]) -> (RunMeta, Vec<Point>) {
    let meta = RunMeta {
        id: Some(4),
        uuid: None,
        kind: "bench spin".into(),
        command: "locklab bench spin".into(),
        params: json!({}),
        machine: Machine {
            cpu_model: "Test CPU".into(),
            cores: 2,
            ..Machine::default()
        },
        started: "2025-03-01T14:05:09Z".into(),
        finished: None,
        complete: false,
    };
    let mut points = Vec::new();
    for &c in cs {
        for (k, lock) in locks.iter().enumerate() {
            for t in [1u32, 2, 4, 8] {
                let base = 2e7 / (1.0 + k as f64) / f64::from(t);
                points.push(Point {
                    bench: "spin".into(),
                    lock: lock.to_string(),
                    threads: t,
                    params: json!({"cs_ns": c, "delay_ns": 0}),
                    reps: (0..3)
                        .map(|i| rep(i, base * (1.0 + 0.05 * f64::from(i))))
                        .collect(),
                });
            }
        }
    }
    (meta, points)
}

fn check_svg(path: &Path, locks: &[&str]) -> String {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(
        svg.trim_start().starts_with("<svg"),
        "{}",
        &svg[..80.min(svg.len())]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    for lock in locks {
        // plotters writes each `<text>` element's content on a line of
        // its own.
        assert!(svg.lines().any(|l| l.trim() == *lock), "no label {lock}");
    }
    svg
}

#[test]
fn writes_an_svg_with_every_lock() {
    let dir = tempfile::tempdir().unwrap();
    let locks = ["tas", "ticket", "mcs"];
    let (meta, points) = run(&locks, &[100]);
    let out = dir.path().join("spin.svg");
    plot_run(&meta, &points, None, &out, false).unwrap();
    let svg = check_svg(&out, &locks);
    assert!(svg.contains("run 4"));
    assert!(svg.contains("Mops/s"));
    assert!(!svg.contains("parameter set 1 of"));
}

#[test]
fn log_axis_and_several_parameter_sets() {
    let dir = tempfile::tempdir().unwrap();
    let locks = ["tas", "clh"];
    let (meta, points) = run(&locks, &[100, 1000]);
    let out = dir.path().join("spin-log.svg");
    plot_run(&meta, &points, None, &out, true).unwrap();
    let svg = check_svg(&out, &locks);
    assert!(svg.contains("log scale"));
    assert!(svg.contains("parameter set 1 of 2"));
    assert!(svg.contains("cs_ns=100"));
    assert_eq!(param_sets(&points, "spin").len(), 2);
}

#[test]
fn no_spin_points_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let (meta, mut points) = run(&["tas"], &[100]);
    for p in &mut points {
        p.bench = "costs".into();
    }
    let out = dir.path().join("none.svg");
    let e = plot_run(&meta, &points, None, &out, false).unwrap_err();
    assert_eq!(e.code, EXIT_INPUT);
    assert!(
        e.msg
            .starts_with("run 4 has nothing to plot: costs has no chart"),
        "{}",
        e.msg
    );
    let e = plot_run(&meta, &[], None, &out, true).unwrap_err();
    assert_eq!(e.code, EXIT_INPUT);
    assert!(!out.exists());
}

#[test]
fn unwritable_output_is_an_input_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (meta, points) = run(&["tas"], &[100]);
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let out = file.join("spin.svg");
    let e = plot_run(&meta, &points, None, &out, false).unwrap_err();
    assert_eq!(e.code, EXIT_INPUT);
    assert!(e.msg.contains(&out.display().to_string()), "{}", e.msg);
}

#[test]
fn zero_and_missing_throughput_still_plot() {
    let dir = tempfile::tempdir().unwrap();
    let (meta, mut points) = run(&["tas", "ticket"], &[100]);
    for r in &mut points[0].reps {
        r.throughput_ops_s = 0.0;
    }
    points[1].reps.clear();
    let out = dir.path().join("zero.svg");
    plot_run(&meta, &points, None, &out, true).unwrap();
    check_svg(&out, &["tas", "ticket"]);
    for p in &mut points {
        for r in &mut p.reps {
            r.throughput_ops_s = 0.0;
        }
    }
    plot_run(&meta, &points, None, &out, false).unwrap();
    let e = plot_run(&meta, &points, None, &out, true).unwrap_err();
    assert_eq!(e.code, EXIT_INPUT);
    assert!(e.msg.contains("none above zero"), "{}", e.msg);
}

#[test]
fn the_database_is_no_output_however_it_is_spelled() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("x")).unwrap();
    let db = d.join("locklab.db");
    std::fs::write(&db, b"runs").unwrap();
    std::os::unix::fs::symlink(&db, d.join("link.svg")).unwrap();
    std::fs::hard_link(&db, d.join("hard.svg")).unwrap();
    for out in [
        db.clone(),
        d.join("x/../locklab.db"),
        d.join("./locklab.db"),
        d.join("link.svg"),
        d.join("hard.svg"),
        d.join("locklab.db-wal"),
    ] {
        let e = check_out(&out, &(&db).into(), "plot", "plot.svg").unwrap_err();
        assert_eq!(e.code, EXIT_INPUT);
        assert!(e.msg.contains("stored runs"), "{}", e.msg);
        assert!(!e.msg.contains('\n'));
    }
    // The database named through a link, the output by its real name.
    assert!(check_out(&db, &d.join("link.svg").into(), "plot", "plot.svg").is_err());
    for fine in [
        d.join("plot.svg"),
        d.join("x/locklab.db"),
        d.join("locklab.db.svg"),
    ] {
        check_out(&fine, &(&db).into(), "plot", "plot.svg").unwrap();
    }
    assert_eq!(std::fs::read(&db).unwrap(), b"runs");
}

#[test]
fn tick_labels_are_short() {
    assert_eq!(tick(0.0), "0");
    assert_eq!(tick(2.5), "2.5");
    assert_eq!(tick(10.000000001), "10");
    assert_eq!(tick(0.0001), "1.0e-4");
}
