//! Known answers of the hand-over count by NUMA node (`bench spin` on a
//! topology of more than one node; the NUMA-aware locks are judged by it).
//! The topology is virtual (`LOCKLAB_TOPOLOGY`), so the answers are known
//! on any machine:
//!
//! - every CPU on node 0 of two nodes: every hand-over stays within a node;
//! - two nodes of one CPU each, two threads pinned one per CPU: every
//!   hand-over crosses (on a machine of at least two CPUs);
//! - one node: nothing is counted and the run's parameters do not name a
//!   topology (so such runs compare with runs stored before the count);
//! - the delegation lock (`combining`) counts a hand-over where the thread
//!   that runs the critical sections changes, by that thread's node: the
//!   same answers on both topologies above.

mod common;
use common::{locklab, stderr, stdout, tmp};
use std::process::{Command, Output};

/// `bench spin` of the ticket lock at 2 threads under `topology`, and the
/// stored run's JSON.
fn run(topology: Option<&str>, pin: bool) -> serde_json::Value {
    run_lock("ticket", topology, pin)
}

/// `bench spin` of `lock` at 2 threads under `topology`, and the stored
/// run's JSON.
fn run_lock(lock: &str, topology: Option<&str>, pin: bool) -> serde_json::Value {
    let (_d, db) = tmp();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
    cmd.arg("--db").arg(&db).args([
        "bench",
        "spin",
        "--locks",
        lock,
        "--threads",
        "2",
        "--secs",
        "0.1",
        "--reps",
        "2",
        "--quiet",
    ]);
    if pin {
        cmd.arg("--pin");
    }
    match topology {
        Some(t) => cmd.env("LOCKLAB_TOPOLOGY", t),
        None => cmd.env_remove("LOCKLAB_TOPOLOGY"),
    };
    let o: Output = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = locklab(&db, &["show", "last", "--json"]);
    serde_json::from_str(&stdout(&shown)).unwrap()
}

/// Each repetition's (same-node, cross-node) hand-overs.
fn counts(v: &serde_json::Value) -> Vec<(u64, u64)> {
    let p = &v["points"][0];
    p["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let h = &r["handovers"];
            assert!(!h.is_null(), "no hand-over count in {r}");
            (
                h["same_node"].as_u64().unwrap(),
                h["cross_node"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_cpu_on_one_node_of_two_keeps_every_hand_over_within_it() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 1022 {
        eprintln!("note: skipped: this machine has CPU 1022, which the topology below names");
        return;
    }
    // Node 1 holds only CPU 1022, which this machine lacks; every CPU it
    // has is on node 0.
    let v = run(Some("1023:1022"), false);
    let params = v["run"]["params"]["spin"]["topology"].as_str().unwrap();
    assert!(params.starts_with("2 nodes (virtual)"), "{params}");
    for (same, cross) in counts(&v) {
        assert_eq!(cross, 0, "a hand-over crossed to a node no thread runs on");
        assert!(same > 0, "two threads on a ticket lock handed nothing over");
    }
}

#[test]
fn two_threads_pinned_to_two_nodes_cross_on_every_hand_over() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("note: skipped: one CPU cannot hold two nodes of one CPU each");
        return;
    }
    let v = run(Some("2x1"), true);
    for (same, cross) in counts(&v) {
        assert_eq!(
            same, 0,
            "two threads on different nodes handed over within one"
        );
        assert!(
            cross > 0,
            "two threads on a ticket lock handed nothing over"
        );
    }
}

#[test]
fn one_node_counts_nothing_and_names_no_topology() {
    if locklab::topology::node_count() > 1 {
        eprintln!("note: skipped: this machine has more than one NUMA node");
        return;
    }
    let v = run(Some("system"), false);
    assert!(v["run"]["params"]["spin"]["topology"].is_null());
    for r in v["points"][0]["repetitions"].as_array().unwrap() {
        assert!(r["handovers"].is_null(), "{r}");
    }
}

/// Under `combining` the hand-overs are the combiner's: on one node of
/// two, none crosses; with the two threads pinned to two nodes, every one
/// does, and there are some (each thread takes its turn as the combiner).
/// A runner that did not say who ran a section would count none.
#[test]
fn the_combining_mutex_hands_over_where_its_combiner_changes() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !(2..1022).contains(&cpus) {
        eprintln!("note: skipped: needs two CPUs and no CPU 1022");
        return;
    }
    for (same, cross) in counts(&run_lock("combining", Some("1023:1022"), false)) {
        assert_eq!(cross, 0, "a hand-over crossed to a node no thread runs on");
        assert!(same > 0, "two threads on combining handed nothing over");
    }
    for (same, cross) in counts(&run_lock("combining", Some("2x1"), true)) {
        assert_eq!(
            same, 0,
            "two combiners on different nodes handed over within one"
        );
        assert!(cross > 0, "two threads on combining handed nothing over");
    }
}
