//! `locklab run`: an unmodified C program under the baseline and under
//! locks, through the interposer (built by `cargo test --workspace` beside
//! the binary). Known answers: a program that exits differently under one
//! lock is a failure, not a rank; a program that touches 64 MiB peaks at
//! 64 MiB or more and one that allocates nothing at a few MiB (not at the
//! lab's own size, which the kernel's `ru_maxrss` would report); the figure
//! of `--metric` is read from the output. And bad input: one line, exit 2.

mod common;

use common::{assert_bad_input, compile_c, locklab, stdout, tmp};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The test program, compiled once.
fn program() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| compile_c("run_prog"))
}

fn run_json(db: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
    cmd.arg("--db")
        .arg(db)
        .arg("--json")
        .arg("run")
        .args(args)
        .arg("--")
        .arg(program());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

fn point<'a>(v: &'a serde_json::Value, lock: &str) -> &'a serde_json::Value {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["lock"] == lock)
        .unwrap_or_else(|| panic!("no {lock} point in {v}"))
}

#[test]
fn a_lock_the_program_fails_under_is_a_failure_and_the_figure_is_read() {
    let (_d, db) = tmp();
    let v = run_json(
        &db,
        &[("FAIL_UNDER", "ttas")],
        &[
            "--locks",
            "mutex,ttas,pthread",
            "--reps",
            "2",
            "--metric",
            "ops/s: ([0-9.]+)",
        ],
    );
    let base = point(&v, "pthread");
    assert_eq!(base["failed"], false, "{base}");
    assert!(
        (base["speedup"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{base}"
    );
    let mutex = point(&v, "mutex");
    assert_eq!(mutex["failed"], false, "{mutex}");
    assert!(mutex["figure"].as_f64().unwrap() > 0.0, "{mutex}");
    let reps = mutex["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 2);
    assert!(reps
        .iter()
        .all(|r| r["run"]["metric"].as_f64().unwrap() > 0.0));
    // `pthread` in --locks: the interposer in passthrough, beside the
    // baseline without it.
    let pass = point(&v, "preload(pthread)");
    assert_eq!(pass["failed"], false, "{pass}");
    let ttas = point(&v, "ttas");
    assert_eq!(ttas["failed"], true, "{ttas}");
    assert!(
        ttas["failure"].as_str().unwrap().contains("exit 3"),
        "{ttas}"
    );
    // The text ranks it apart.
    let o = locklab(&db, &["show", "last"]);
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("ttas"))
        .unwrap();
    assert!(line.contains("FAILED"), "{text}");
    // And the plot draws the ranked ones.
    let svg = db.with_extension("svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{o:?}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("mutex") && s.contains("1 failed"), "{s}");
}

#[test]
fn peak_memory_is_the_programs_own() {
    let (_d, db) = tmp();
    let small = run_json(&db, &[], &["--locks", "mutex", "--reps", "1"]);
    let big = run_json(
        &db,
        &[("ALLOC_MIB", "64")],
        &["--locks", "mutex", "--reps", "1"],
    );
    for lock in ["pthread", "mutex"] {
        let s = point(&small, lock)["peak_rss_kib"].as_f64().unwrap();
        let b = point(&big, lock)["peak_rss_kib"].as_f64().unwrap();
        assert!(b >= 64.0 * 1024.0, "{lock}: {b} KiB with 64 MiB touched");
        // A small C program: about 2 MiB, with or without the
        // interposer; the lab that starts it holds several times that.
        assert!(s < 4.0 * 1024.0, "{lock}: {s} KiB with nothing allocated");
        assert!(s > 0.0, "{lock}: no sample");
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let (_d, db) = tmp();
    let prog = program().to_str().unwrap().to_string();
    for (args, needle) in [
        (vec!["run", "--locks", "nosuch", "--", &prog], "nosuch"),
        (vec!["run", "--locks", "std", "--", &prog], "std"),
        (vec!["run", "--rwlock", "nosuch", "--", &prog], "nosuch"),
        (vec!["run", "--", "/no/such/program"], "/no/such/program"),
        (
            vec!["run", "--", "locklab-no-such-program"],
            "locklab-no-such-program",
        ),
        (vec!["run", "--", "false"], "exit 1"),
        (vec!["run", "--reps", "0", "--", &prog], "'0'"),
        (
            vec![
                "run",
                "--metric",
                "nothing like this: ([0-9]+)",
                "--",
                &prog,
            ],
            "matches no number",
        ),
        (vec!["run", "--metric", "ops/s", "--", &prog], "group"),
        (
            vec!["run", "--metric", "(", "--", &prog],
            "not a regular expression",
        ),
    ] {
        let o = locklab(&db, &args);
        assert_bad_input(&o, needle);
    }
    // Nothing was stored.
    let o = locklab(&db, &["runs"]);
    assert!(stdout(&o).contains("no runs"), "{}", stdout(&o));
}
