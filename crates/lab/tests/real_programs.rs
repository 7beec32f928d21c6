//! Real programs from the distribution under locklab's locks through the
//! interposer, with `locklab run`: `sysbench threads` and `sysbench mutex`,
//! and memcached on 127.0.0.1 driven by memcaslap (`tests/sh/memcached.sh`,
//! a bounded run on loopback). Each must run under every lock given,
//! without a failure, and give its figure.
//!
//! `.ci/run` installs the programs and sets `LOCKLAB_REQUIRE_PROGRAMS=1`,
//! under which a missing one fails; elsewhere a missing one is skipped with
//! a note.

mod common;

use common::tmp;
use std::path::Path;
use std::process::Command;

/// Whether `prog` is on PATH; if not, fails under CI and skips elsewhere.
fn have(prog: &str) -> bool {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var_os("LOCKLAB_REQUIRE_PROGRAMS").is_none(),
            "{prog} is not installed (.ci/run installs it)"
        );
        eprintln!("note: {prog} is not installed; skipped (apt-get install sysbench memcached libmemcached-tools)");
    }
    found
}

/// Runs `locklab --json run ARGS -- CMD` and checks every contender ran
/// without failing and gave a positive figure; returns the JSON.
fn ranks(db: &Path, args: &[&str], cmd: &[&str]) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(db)
        .arg("--json")
        .arg("run")
        .args(args)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let points = v["points"].as_array().unwrap();
    assert!(points.len() >= 3, "{v}");
    for p in points {
        assert_eq!(p["failed"], false, "{}: {}", p["lock"], p["failure"]);
        assert!(p["figure"].as_f64().unwrap() > 0.0, "{p}");
    }
    v
}

#[test]
fn sysbench_threads_runs_under_locklabs_locks() {
    if !have("sysbench") {
        return;
    }
    let (_d, db) = tmp();
    ranks(
        &db,
        &[
            "--locks",
            "mutex,mcs,futex3",
            "--reps",
            "1",
            "--metric",
            "total number of events: *([0-9]+)",
        ],
        &["sysbench", "threads", "--threads=2", "--time=1", "run"],
    );
}

#[test]
fn sysbench_mutex_runs_under_locklabs_locks() {
    if !have("sysbench") {
        return;
    }
    let (_d, db) = tmp();
    ranks(
        &db,
        &[
            "--locks",
            "mutex,spin-park(ticket),tas",
            "--reps",
            "1",
            "--metric",
            "total time: *([0-9.]+)s",
            "--lower-is-better",
        ],
        &[
            "sysbench",
            "mutex",
            "--threads=2",
            "--mutex-num=64",
            "--mutex-locks=20000",
            "--mutex-loops=100",
            "run",
        ],
    );
}

#[test]
fn memcached_runs_under_locklabs_locks() {
    if !have("memcached") || !have("memcaslap") || !have("memcstat") {
        return;
    }
    let (_d, db) = tmp();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sh/memcached.sh");
    ranks(
        &db,
        &[
            "--locks",
            "mutex,mcs",
            "--reps",
            "1",
            "--metric",
            "TPS: *([0-9]+)",
        ],
        &[script.to_str().unwrap()],
    );
}
