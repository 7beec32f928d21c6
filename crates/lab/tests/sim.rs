//! `locklab sim lhp` as a user meets it: bad flags and bad scenario files
//! get one line naming the problem, exit code 2 and an untouched database;
//! a tiny run prints and stores its table, and `show`, `runs` and `plot`
//! read it back.
//!
//! The tests that run simulations (`a_tiny_run_*`, `a_scenario_file_runs`)
//! need the simulator's engine (`locklab_model::lhp::engine`).

mod common;

use common::{assert_rejected, locklab, stderr, stdout, tmp};
use serde_json::Value;
use std::path::Path;

fn sim(extra: &[&str]) -> Vec<String> {
    let mut a = vec!["sim".to_string(), "lhp".to_string()];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn bad_flags_are_refused_with_the_value_named() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (
            &["--experiment", "speed"][..],
            "'speed' is not an experiment",
        ),
        (&["--experiment", "speed"][..], "scalability"),
        (&["--policies", "itcs,bogus"][..], "'bogus' is not a policy"),
        (&["--policies", "itcs,,none"][..], "empty policy name"),
        (&["--pcpus", "0"][..], "0 pCPUs"),
        (&["--pcpus", "-2"][..], "'-2'"),
        (&["--vcpus", "0"][..], "0 vCPUs per VM"),
        (&["--secs", "0"][..], "'0' simulated seconds"),
        (&["--secs", "-1"][..], "'-1' simulated seconds"),
        (&["--secs", "nan"][..], "'nan' simulated seconds"),
        (&["--secs", "inf"][..], "'inf'"),
        (&["--warmup-secs", "-0.5"][..], "'-0.5'"),
        (
            &["--secs", "3000", "--warmup-secs", "700"][..],
            "one simulated hour",
        ),
        (&["--lock", "mcs"][..], "'mcs' is not a guest lock"),
        (&["--ple", "vmware"][..], "'vmware'"),
        (&["--max-vms", "0"][..], "0 VMs"),
        (
            &["--max-vms", "4"][..],
            "--max-vms is for --experiment scalability",
        ),
        (&["--reps", "0"][..], "repetitions"),
        (&["--threads", "0"][..], "thread count 0"),
        (&["--seed", "-1"][..], "'-1' is not a seed"),
        (
            &["--experiment", "fairness", "--config", "s.toml"][..],
            "cannot be used with",
        ),
        (
            &[
                "--experiment",
                "scalability",
                "--max-vms",
                "256",
                "--vcpus",
                "1024",
            ][..],
            "vCPUs in all is too many",
        ),
    ] {
        assert_rejected(&db, &refs(&sim(args)), needle);
    }
}

/// Writes `text` to a scenario file in `dir`.
fn scenario(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn bad_scenario_files_name_the_file_and_the_field() {
    let (d, db) = tmp();
    let vm = "[[vm]]\nworkload = \"oltp\"\n";
    let cases = [
        (
            "syntax.toml",
            "[[vm]\nworkload = \"oltp\"\n".to_string(),
            "line 1",
        ),
        (
            "unknown.toml",
            format!("{vm}vcpu = 8\n"),
            "unknown field `vcpu`",
        ),
        (
            "type.toml",
            format!("{vm}vcpus = \"eight\"\n"),
            "line 3, column 9",
        ),
        (
            "zero.toml",
            format!("{vm}[[vm]]\nworkload = \"pi\"\nvcpus = 0\n"),
            "vm[1].vcpus: a VM with no vCPUs is not allowed: at least 1",
        ),
        (
            "negative.toml",
            format!("{vm}hold = \"exp:-1000\"\n"),
            "vm[0].hold: -1000 ns",
        ),
        (
            "workload.toml",
            "[[vm]]\nworkload = \"oltpx\"\n".to_string(),
            "'oltpx' is not a workload: allowed hackbench, oltp, pi, latency",
        ),
        (
            "policy.toml",
            format!("policies = [\"itcs\", \"fast\"]\n{vm}"),
            "'fast' is not a policy: allowed all, none",
        ),
        (
            "lock.toml",
            format!("{vm}lock = \"mcs\"\n"),
            "vm[0].lock: 'mcs' is not a guest lock",
        ),
        (
            "novm.toml",
            "seed = 3\n".to_string(),
            "vm: a scenario needs at least one VM",
        ),
        (
            "tick.toml",
            format!("[host]\ntick_us = 1\n{vm}"),
            "host.tick_us",
        ),
        // Phases too short for simulated time to advance: each of these
        // simulated for good (a fixed 0.4 ns rounds to no time at all) or
        // for hours.
        (
            "subns.toml",
            "[[vm]]\nworkload = \"pi\"\nuser = 0.4\n".to_string(),
            "vm[0].user: const:0.4 is shorter than the simulator's step of 1 ns",
        ),
        (
            "tiny.toml",
            format!("{vm}user = 1\nkernel = 1\nhold = 1\n"),
            "vm[0]: a cycle of the workload (user + sections × (kernel + hold) + think) lasts 5 ns",
        ),
    ];
    for (name, text, needle) in cases {
        let path = scenario(d.path(), name, &text);
        let args = sim(&["--config", &path]);
        assert_rejected(&db, &refs(&args), needle);
        assert_rejected(&db, &refs(&args), name);
    }
    let missing = d.path().join("missing.toml").display().to_string();
    assert_rejected(
        &db,
        &refs(&sim(&["--config", &missing])),
        "missing.toml: cannot read it",
    );
    let ok = scenario(d.path(), "ok.toml", vm);
    assert_rejected(
        &db,
        &refs(&sim(&["--config", &ok, "--vcpus", "4"])),
        "--vcpus is for --experiment",
    );
}

#[test]
fn a_rejected_command_leaves_an_existing_database_unchanged() {
    let (d, db) = tmp();
    drop(locklab_lab::core::store::Store::open(&db).unwrap());
    let before = std::fs::read(&db).unwrap();
    let path = scenario(
        d.path(),
        "bad.toml",
        "[[vm]]\nworkload = \"oltp\"\nvcpus = 0\n",
    );
    for args in [
        sim(&["--config", &path]),
        sim(&["--pcpus", "0"]),
        sim(&["--experiment", "nope"]),
    ] {
        common::assert_bad_input(&locklab(&db, &refs(&args)), "");
        assert_eq!(
            std::fs::read(&db).unwrap(),
            before,
            "{args:?} changed the database"
        );
    }
}

fn ok(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    stdout(o)
}

/// Needs the engine.
#[test]
fn a_tiny_run_prints_json_stores_and_shows_and_plots() {
    let (d, db) = tmp();
    let args = sim(&[
        "--experiment",
        "performance",
        "--pcpus",
        "2",
        "--vcpus",
        "2",
        "--secs",
        "0.01",
        "--warmup-secs",
        "0",
        "--policies",
        "none,itcs",
        "--reps",
        "2",
        "--threads",
        "2",
    ]);
    let mut with_json = vec!["--json"];
    with_json.extend(refs(&args));
    let out = ok(&locklab(&db, &with_json));
    let v: Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["experiment"], "performance");
    let id = v["run_id"].as_i64().expect("a run id");
    assert!(v["events_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["events"].as_u64().unwrap() > 0);
    let rows = v["rows"].as_array().unwrap();
    let policies: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["none", "itcs"]);
    for r in rows {
        assert_eq!(r["vms"], 4);
        assert_eq!(r["reps"], 2);
        for key in [
            "throughput_norm",
            "speedup",
            "util_variance",
            "spin_share",
            "ple_exits_s",
            "switches_s",
        ] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
        for key in [
            "lock_speedup",
            "response_p50_us",
            "response_p99_us",
            "response_change",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    assert_eq!(rows[0]["speedup"], 1.0);
    assert_eq!(rows[1]["response_p50_us"], Value::Null);

    // Stored: listed, shown (the same table as text and JSON), plotted.
    let listing = ok(&locklab(&db, &["runs"]));
    assert!(
        listing.contains("sim lhp") && listing.contains("2 points"),
        "{listing}"
    );
    let shown: Value =
        serde_json::from_str(&ok(&locklab(&db, &["--json", "show", &id.to_string()]))).unwrap();
    assert_eq!(shown["rows"], v["rows"]);
    let text = ok(&locklab(&db, &["show", "last"]));
    for needle in [
        "sim lhp, experiment performance",
        "norm tput",
        "× none",
        "PLE exits/s",
        "seed 004 measured",
        "3.41×",
        "events/s per thread",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let svg = d.path().join("sim.svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("itcs") && s.contains("normalized throughput"));
    let o = locklab(
        &db,
        &[
            "plot",
            "last",
            "--bench",
            "sim-lhp",
            "--out",
            svg.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Needs the engine.
#[test]
fn a_tiny_run_of_each_experiment_has_its_columns() {
    let (_d, db) = tmp();
    for (exp, extra, needle) in [
        ("fairness", &[][..], "hackbench ×"),
        ("latency", &[][..], "p50 µs"),
        ("scalability", &["--max-vms", "2"][..], "2 VMs"),
    ] {
        let mut a = vec![
            "--experiment",
            exp,
            "--pcpus",
            "2",
            "--vcpus",
            "2",
            "--secs",
            "0.01",
            "--warmup-secs",
            "0",
            "--policies",
            "none,sitcs",
        ];
        a.extend_from_slice(extra);
        let text = ok(&locklab(&db, &refs(&sim(&a))));
        assert!(text.contains(needle), "{exp}: {needle:?} not in\n{text}");
    }
    let o = locklab(&db, &["--json", "show", "last"]);
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(v["experiment"], "scalability");
    assert_eq!(
        v["rows"].as_array().unwrap().len(),
        4,
        "2 policies × 2 VM counts"
    );
}

/// Needs the engine.
#[test]
fn a_scenario_file_runs() {
    let (d, db) = tmp();
    let path = scenario(
        d.path(),
        "two.toml",
        "name = \"two-hackbench\"\npolicies = [\"dtcs\"]\nduration_ms = 10\nwarmup_ms = 0\n\
         [host]\npcpus = 2\n[[vm]]\nworkload = \"hackbench\"\ncount = 2\nvcpus = 2\n",
    );
    let v: Value = serde_json::from_str(&ok(&locklab(
        &db,
        &["--json", "sim", "lhp", "--config", &path],
    )))
    .unwrap();
    assert_eq!(v["experiment"], "two-hackbench");
    let policies: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, ["none", "dtcs"]);
    assert_eq!(v["params"]["scenario"]["host"]["pcpus"], 2);
    assert_eq!(v["seed_004"], Value::Array(vec![]));
}

/// One Ctrl-C stops a simulation in progress (one that would run for
/// hours) promptly; the run stays stored, marked incomplete.
#[test]
fn one_ctrl_c_stops_a_running_simulation() {
    use std::time::{Duration, Instant};
    let (_d, db) = tmp();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(&db)
        .args(refs(&sim(&[
            "--experiment",
            "performance",
            "--policies",
            "none",
            "--secs",
            "3000",
            "--threads",
            "1",
        ])))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run is stored before the first simulation starts; a moment more
    // and a worker is inside one.
    let t = Instant::now();
    while !stdout(&locklab(&db, &["runs", "--json"])).contains("sim lhp") {
        assert!(t.elapsed() < Duration::from_secs(120), "no run stored");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    // Simulating 3000 s takes hours; a stop that waits for the simulation
    // to end would not come within a minute.
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Ctrl-C did not stop the simulation within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&ok(&locklab(&db, &["show", "last", "--json"]))).unwrap();
    assert_eq!(v["run"]["complete"], false, "{v}");
}
