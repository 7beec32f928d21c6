//! The `locklab` binary as a user meets it: bad input gets one line and exit
//! code 2 and never touches stored results; the main paths store and show.

mod common;

use common::{assert_bad_input, locklab, stderr, stdout, tmp};
use std::process::Command;

const QUICK: &[&str] = &["--secs", "0.05", "--reps", "1"];

#[test]
fn unknown_lock_lists_the_valid_names() {
    let (_d, db) = tmp();
    let o = locklab(&db, &["bench", "spin", "--locks", "tas,nosuch"]);
    assert_bad_input(&o, "'nosuch'");
    assert!(stderr(&o).contains("parking_lot"));
    assert_bad_input(&locklab(&db, &["torture", "--locks", "bogus"]), "'bogus'");
    assert!(
        !db.exists(),
        "a rejected command must not create the database"
    );
}

#[test]
fn bad_numbers_are_rejected_with_the_value_named() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (&["bench", "spin", "--threads", "0"][..], "0"),
        (&["bench", "spin", "--threads", "1,100000"][..], "100000"),
        (
            &["bench", "spin", "--cs-ns", "-5"][..],
            "'-5' is a negative duration: allowed",
        ),
        (
            &["bench", "spin", "--delay-ns", "-1"][..],
            "'-1' is a negative duration",
        ),
        (
            &["bench", "spin", "--secs", "-1"][..],
            "'-1' seconds is out of range: allowed",
        ),
        (
            &["bench", "spin", "--threads", "-2"][..],
            "'-2' is not a thread count: allowed",
        ),
        (
            &["torture", "--watchdog", "-3"][..],
            "'-3' seconds is out of range",
        ),
        (&["bench", "spin", "--delay-ns", "soon"][..], "soon"),
        (&["bench", "spin", "--secs", "0"][..], "0"),
        (&["bench", "spin", "--reps", "0"][..], "0"),
        (&["bench", "spin", "--delay-dist", "uniform"][..], "uniform"),
        (&["bench", "uncontended", "--reps", "0"][..], "0"),
        (&["torture", "--threads", "0"][..], "0"),
        (
            &["torture", "--read-pct", "101"][..],
            "101 % is out of range: allowed 0 to 100",
        ),
        (
            &["torture", "--read-pct", "most"][..],
            "'most' is not a percentage",
        ),
        (
            &["bench", "spin", "--locks", "tas,rwsem"][..],
            "'rwsem' is a reader-writer lock",
        ),
        (&["show", "abc"][..], "abc"),
        (
            &["torture", "--locks", "rcu"][..],
            "'rcu' is an RCU flavour, not a lock",
        ),
        (
            &["torture", "--rcu", "--locks", "rcu,tas"][..],
            "'tas' is a lock, not an RCU flavour",
        ),
        (
            &["torture", "--rcu", "--locks", "rcu-nosuch"][..],
            "unknown RCU flavour 'rcu-nosuch'; valid flavours: all, rcu,",
        ),
        (&["torture", "--rcu", "--read-pct", "50"][..], "--read-pct"),
        (&["torture", "--rcu", "--threads", "0"][..], "0"),
        (&["torture", "--rcu", "--secs", "-2"][..], "'-2' seconds"),
        (
            &["bench", "spin", "--stall-every", "-1"][..],
            "'-1' acquisitions between stalls: allowed",
        ),
        (
            &["bench", "lhp", "--stall-ns", "5000"][..],
            "--stall-ns needs --stall-every",
        ),
        (
            &["bench", "lhp", "--stall-every", "10", "--stall-ns", "-4"][..],
            "'-4' is a negative duration",
        ),
    ] {
        assert_bad_input(&locklab(&db, args), needle);
    }
    assert!(!db.exists());
}

#[test]
fn unwritable_database_path_is_an_input_error() {
    let d = tempfile::tempdir().unwrap();
    // A parent that is a regular file stops even root.
    let file = d.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let db = file.join("sub.db");
    assert_bad_input(
        &locklab(&db, &["bench", "uncontended", "--locks", "tas"]),
        "sub.db",
    );
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_alone() {
    let (_d, db) = tmp();
    let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&db, &junk).unwrap();
    for args in [
        &["runs"][..],
        &["show", "1"][..],
        &["bench", "uncontended", "--locks", "tas", "--secs", "0.01"][..],
    ] {
        assert_bad_input(&locklab(&db, args), "t.db");
    }
    assert_eq!(std::fs::read(&db).unwrap(), junk);
}

#[test]
fn a_database_from_a_newer_schema_is_refused_and_left_alone() {
    let (_d, db) = tmp();
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        // A locklab file (our application id) from a future schema.
        let id = locklab_lab::store::APPLICATION_ID;
        c.execute_batch(&format!(
            "CREATE TABLE future(x); PRAGMA application_id = {id}; PRAGMA user_version = 999;"
        ))
        .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    assert_bad_input(&locklab(&db, &["runs"]), "newer");
    assert_bad_input(
        &locklab(&db, &["bench", "uncontended", "--locks", "tas"]),
        "newer",
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn unknown_run_id_is_an_input_error() {
    let (_d, db) = tmp();
    assert_eq!(locklab(&db, &["runs"]).status.code(), Some(0));
    assert_bad_input(&locklab(&db, &["show", "42"]), "42");
    assert_bad_input(&locklab(&db, &["plot", "42", "--out", "x.svg"]), "42");
    assert_bad_input(&locklab(&db, &["show", "last"]), "no runs");
}

#[test]
fn bench_stores_a_run_that_show_plot_and_json_read_back() {
    let (d, db) = tmp();
    let mut args = vec![
        "bench",
        "spin",
        "--locks",
        "tas,parking_lot",
        "--threads",
        "1,2",
        "--json",
    ];
    args.extend_from_slice(QUICK);
    let o = locklab(&db, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("bench --json prints JSON");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        for key in [
            "lock",
            "threads",
            "throughput_ops_s",
            "jain",
            "p99_ns",
            "cpu_ns_per_op",
            "reps",
        ] {
            assert!(!p[key].is_null(), "{key} missing in {p}");
        }
        assert_eq!(p["reps"], 1);
    }
    assert_eq!(v["run"]["complete"], true);
    let id = v["run"]["id"].as_i64().unwrap();

    let runs = locklab(&db, &["runs"]);
    assert!(stdout(&runs).contains("bench spin"), "{}", stdout(&runs));
    let shown = locklab(&db, &["show", &id.to_string(), "--json"]);
    let again: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(
        again["points"], v["points"],
        "show must print what bench stored"
    );
    let text = stdout(&locklab(&db, &["show", "last"]));
    assert!(
        text.contains("tas") && text.contains("parking_lot"),
        "{text}"
    );

    let svg = d.path().join("p.svg");
    let o = locklab(
        &db,
        &["plot", "last", "--out", svg.to_str().unwrap(), "--log"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg") && s.contains("parking_lot"));
}

/// A stalled holder blocks inside its critical section: the lock
/// serialises the stalls, so however fast the machine, the throughput
/// cannot exceed `every` acquisitions per stall time. (A bound that
/// follows from sleep never returning early, not a timing assertion.)
#[test]
fn stalls_happen_inside_the_critical_section_and_are_stored() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "spin",
            "--locks",
            "mutex,mutex-fixed",
            "--threads",
            "2",
            "--stall-every",
            "4",
            "--stall-ns",
            "200000",
            "--json",
            "--secs",
            "0.1",
            "--reps",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for p in v["points"].as_array().unwrap() {
        assert_eq!(p["params"]["stall_every"], 4, "{p}");
        assert_eq!(p["params"]["stall_ns"], 200_000, "{p}");
        let bound = 4.0 / 200e-6;
        let tput = p["throughput_ops_s"].as_f64().unwrap();
        assert!(
            tput <= bound * 1.01,
            "{tput} ops/s with a 200 µs stall every 4: {p}"
        );
        assert!(p["cpu_ns_per_op"].as_f64().unwrap() > 0.0);
    }
    let text = stdout(&locklab(&db, &["show", "last"]));
    assert!(text.contains("CPU time per acquisition"), "{text}");
    assert!(text.contains("stall_every=4"), "{text}");
}

#[test]
fn uncontended_measures_both_references_beside_the_locks() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "uncontended",
            "--locks",
            "k42",
            "--json",
            "--secs",
            "0.01",
            "--reps",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let points = v["points"].as_array().unwrap();
    let names: Vec<&str> = points.iter().map(|p| p["lock"].as_str().unwrap()).collect();
    assert_eq!(names, ["floor", "floor-2rmw", "k42"]);
    assert_eq!(points[0]["ratio_to_floor"], 1.0);
    for p in points {
        assert_eq!(p["reps"], 2, "{p}");
        assert!(p["ratio_to_floor"].as_f64().unwrap() > 0.0, "{p}");
    }
}

#[test]
fn lhp_sweeps_multiples_of_the_cores_and_plots() {
    let (d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "lhp",
            "--locks",
            "tas,mutex",
            "--multiples",
            "1,2",
            "--secs",
            "0.05",
            "--reps",
            "1",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let cores = v["run"]["machine"]["cores"].as_u64().unwrap();
    let points = v["points"].as_array().unwrap();
    // One thread (the baseline), then 1 and 2 × cores (one fewer point
    // where 1 × cores is one thread).
    let counts = if cores == 1 { 2 } else { 3 };
    assert_eq!(points.len(), 2 * counts);
    for p in points {
        assert_eq!(p["bench"], "lhp");
        let t = p["threads"].as_u64().unwrap();
        assert!(t == 1 || t == cores || t == 2 * cores, "{p}");
        for key in ["throughput_ops_s", "jain", "p99_ns"] {
            assert!(!p[key].is_null(), "{key} missing in {p}");
        }
    }
    // No point at 4 × cores: the sensitivity is there, and unknown.
    assert!(v["preemption_sensitivity"]["mutex"].is_null(), "{v}");
    let svg = d.path().join("lhp.svg");
    let o = locklab(
        &db,
        &[
            "plot",
            "last",
            "--bench",
            "lhp",
            "--out",
            svg.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg)
        .unwrap()
        .contains("lhp throughput"));
    assert_bad_input(
        &locklab(
            &db,
            &[
                "plot",
                "last",
                "--bench",
                "spin",
                "--out",
                svg.to_str().unwrap(),
            ],
        ),
        "no spin points",
    );
    assert_bad_input(
        &locklab(&db, &["bench", "lhp", "--multiples", "0"]),
        "'0' is not a multiple of the cores",
    );
    assert_bad_input(
        &locklab(&db, &["bench", "lhp", "--multiples", "2,65"]),
        "'65' is not a multiple of the cores: allowed 1 to 64",
    );
}

#[test]
fn locks_lists_every_lock_with_peers_marked() {
    let (_d, db) = tmp();
    let o = locklab(&db, &["locks", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let locks = v["locks"].as_array().unwrap();
    let names: Vec<&str> = locks.iter().map(|l| l["name"].as_str().unwrap()).collect();
    for n in ["tas", "std", "parking_lot", "pthread", "rwsem", "std-rw"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let peers = [
        "std",
        "parking_lot",
        "pthread",
        "std-rw",
        "parking_lot-rw",
        "pthread-rw",
    ];
    for l in locks {
        let name = l["name"].as_str().unwrap();
        assert_eq!(l["peer"], peers.contains(&name), "{l}");
        let rw = locklab_lab::registry::rw_all()
            .iter()
            .any(|e| e.info.name == name);
        assert_eq!(l["kind"], if rw { "rwlock" } else { "mutex" }, "{l}");
    }
}

#[test]
fn ctrl_c_keeps_finished_points_and_marks_the_run_incomplete() {
    let (_d, db) = tmp();
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(&db)
        .args([
            "bench",
            "spin",
            "--locks",
            "tas",
            "--threads",
            "1,2",
            "--secs",
            "3",
            "--reps",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first point (1 thread) is stored: the second takes
    // three more seconds. Polling the store, not a fixed sleep, so a slow
    // start on a loaded machine does not interrupt before the first point.
    let stored = |db: &std::path::Path| -> usize {
        let o = locklab(db, &["show", "last", "--json"]);
        serde_json::from_str::<serde_json::Value>(&stdout(&o))
            .ok()
            .and_then(|v| v["points"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    let t = std::time::Instant::now();
    while stored(&db) == 0 {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(120),
            "no point stored in two minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&locklab(&db, &["show", "last", "--json"]))).unwrap();
    assert_eq!(v["run"]["complete"], false);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 1, "{v}");
    assert_eq!(pts[0]["threads"], 1);
}

#[test]
fn bench_hash_rejects_bad_input_with_the_value_named() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (&["--threads", "0"][..], "thread count 0 is out of range"),
        (
            &["--strategies", "none,nosuch"][..],
            "unknown strategy 'nosuch'",
        ),
        (&["--strategies", "bucket-rw(tas)"][..], "'tas' is a mutex"),
        (
            &["--update-pct", "0,101"][..],
            "101 % is out of range: allowed 0 to 100",
        ),
        (&["--update-pct", "-5"][..], "'-5' is not a percentage"),
        (&["--buckets", "0"][..], "0 buckets is out of range"),
        (&["--secs", "soon"][..], "'soon' is not a number of seconds"),
        (&["--secs", "0"][..], "'0' seconds is out of range"),
        (&["--reps", "0"][..], "'0' repetitions"),
        (
            &["--buckets", "8", "--keys", "20", "--chain", "2"][..],
            "--keys 20 disagrees with --buckets 8 × --chain 2 = 16",
        ),
        (
            &["--buckets", "4194304", "--chain", "2"][..],
            "= 8388608 keys: allowed up to 4194304",
        ),
        (
            &["--strategies", "none", "--update-pct", "10,50"][..],
            "nothing to measure",
        ),
    ] {
        let mut all = vec!["bench", "hash"];
        all.extend_from_slice(args);
        assert_bad_input(&locklab(&db, &all), needle);
    }
    assert!(
        !db.exists(),
        "a rejected command must not create the database"
    );
}

/// A tiny study: the JSON has the promised keys per point, `none` runs at
/// 0 % updates only, and `show` and `plot` read the run back.
#[test]
fn bench_hash_stores_points_that_json_show_and_plot_read_back() {
    let (d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "hash",
            "--strategies",
            "none,bucket-spin,bucket-rw,seqlock",
            "--threads",
            "1,2",
            "--update-pct",
            "50,0",
            "--buckets",
            "16",
            "--chain",
            "2",
            "--secs",
            "0.03",
            "--reps",
            "2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("none is unsynchronized"),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let points = v["points"].as_array().unwrap();
    // 2 thread counts × (4 strategies at 0 %, 3 at 50 %).
    assert_eq!(points.len(), 14);
    for p in points {
        assert_eq!(p["bench"], "hash");
        for key in [
            "strategy",
            "threads",
            "update_pct",
            "lookups_s",
            "updates_s",
            "reps",
            "p50_ns",
            "p99_ns",
            "backlog_peak_bytes",
        ] {
            assert!(!p[key].is_null(), "{key} missing in {p}");
        }
        assert_eq!(p["reps"], 2);
        assert_eq!(p["params"]["keys"], 32);
        let pct = p["update_pct"].as_u64().unwrap();
        assert!(pct == 0 || p["strategy"] != "none", "{p}");
        assert_eq!(p["updates_s"].as_f64().unwrap() > 0.0, pct > 0, "{p}");
        assert!(p["lookups_s"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_eq!(
        points[0]["update_pct"], 0,
        "fractions run in ascending order"
    );
    let names: Vec<&str> = points
        .iter()
        .map(|p| p["strategy"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"bucket-rw(rw-fair)"), "{names:?}");
    let cross = &v["hash_crossover"][0];
    assert_eq!(cross["baseline"], "bucket-rw(rw-fair)");
    assert!(
        cross["strategies"]["seqlock"]["verdict"].is_string(),
        "{cross}"
    );

    let text = stdout(&locklab(&db, &["show", "last"]));
    for needle in [
        "0 % updates",
        "50 % updates",
        "× b-rw",
        "crossover at 2 threads",
        "seqlock",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let svg = d.path().join("hash.svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg") && s.contains("updates (% of operations)"));
    assert!(s.lines().any(|l| l.trim() == "bucket-rw(rw-fair)"));
}

/// Where CI promises liburcu (`LOCKLAB_REQUIRE_LIBURCU=1`), the built lab
/// must have both liburcu strategies and run them.
#[test]
fn liburcu_strategies_are_built_where_required() {
    if std::env::var_os("LOCKLAB_REQUIRE_LIBURCU").is_none_or(|v| v != "1") {
        return;
    }
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "hash",
            "--strategies",
            "liburcu,liburcu-qsbr",
            "--threads",
            "2",
            "--update-pct",
            "0,50",
            "--secs",
            "0.03",
            "--reps",
            "1",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 4);
}
