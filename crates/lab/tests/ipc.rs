//! `locklab bench ipc` as a user meets it: the emulated kernel's variants
//! are measured, checked and stored; bad input gets one line and exit 2.

mod common;

use common::{assert_rejected, erlang_x, locklab, rel, stderr, stdout, tmp};
use std::path::Path;

#[test]
fn bench_ipc_rejects_bad_input_with_the_value_named() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (&["--variants", "bkl,nosuch"][..], "'nosuch'"),
        (&["--variants", "bkl(nosuch)"][..], "'nosuch'"),
        (&["--variants", "bkl(std)"][..], "std"),
        (&["--variants", "elide-adaptive(nosuch)"][..], "'nosuch'"),
        (&["--variants", "elide-adaptive(std)"][..], "std"),
        (&["--variants", "fine(clh)"][..], "takes no lock"),
        (&["--variants", "bkl(rw-fair)"][..], "reader-writer"),
        (&["--variants", "none,,fine"][..], "empty name"),
        (&["--variants", "bkl("][..], "parentheses"),
        (&["--modes", "sideways"][..], "'sideways'"),
        (&["--cores", "0"][..], "0 cores"),
        (&["--cores", "1,1000"][..], "1000 cores"),
        (&["--delay-ns", "-5"][..], "'-5'"),
        (&["--delay-ns", "1,soon"][..], "soon"),
        (&["--switch-ns", "2000000000"][..], "too long"),
        (&["--secs", "0"][..], "out of range"),
        (&["--reps", "0"][..], "repetitions"),
        (
            &["--variants", "none", "--modes", "shared"][..],
            "nothing to measure",
        ),
    ] {
        let mut a = vec!["bench", "ipc"];
        a.extend_from_slice(args);
        assert_rejected(&db, &a, needle);
    }
    // Elision needs RTM unless its fall-back path is asked for (with RTM
    // it runs: `elide_with_rtm_runs_transactions_and_counts_every_entry`).
    if !locklab_rtm() {
        assert_rejected(&db, &["bench", "ipc", "--variants", "elide"], "RTM");
        assert_rejected(
            &db,
            &["bench", "ipc", "--variants", "elide-adaptive(clh)"],
            "RTM",
        );
    }
}

#[test]
fn bench_ipc_measures_checks_and_stores_every_mode() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "--json",
            "bench",
            "ipc",
            "--variants",
            "none,bkl(ticket),fine",
            "--cores",
            "1,2",
            "--delay-ns",
            "0,500",
            "--secs",
            "0.05",
            "--reps",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let pts = v["points"].as_array().unwrap();
    let find = |mode: &str, lock: &str, cores: u64, delay: u64| {
        pts.iter()
            .find(|p| {
                p["mode"] == mode
                    && p["lock"] == lock
                    && p["cores"] == cores
                    && p["delay_ns"] == delay
            })
            .unwrap_or_else(|| panic!("no {mode} {lock} {cores} {delay}"))
    };
    // single: the cost of a one-way IPC, with overheads over none.
    let none = find("single", "none", 1, 0);
    assert!(none["ns_per_ipc"].as_f64().unwrap() > 0.0);
    assert!(none["cycles_per_ipc"].as_f64().unwrap() > 0.0);
    assert!(none["overhead_vs_none"].is_null());
    for lock in ["bkl(ticket)", "fine"] {
        let p = find("single", lock, 1, 0);
        assert!(p["overhead_vs_none"].as_f64().is_some(), "{p}");
        assert_eq!(p["reps"], 2);
    }
    // multi: every variant at every core count and delay. A lone core
    // has no one to wait for and must make progress in its window; with
    // two, a big spin lock whose next holder lost its CPU on a busy
    // two-CPU machine may stall a whole short window (0 IPCs measured,
    // still a measurement), so there only a number is required.
    let ipcs_s = |p: &serde_json::Value| {
        let x = p["ipcs_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("no ipcs_s: {p}"));
        assert!(x.is_finite() && x >= 0.0, "{p}");
        x
    };
    for lock in ["none", "bkl(ticket)", "fine"] {
        for cores in [1, 2] {
            for delay in [0, 500] {
                let p = find("multi", lock, cores, delay);
                let x = ipcs_s(p);
                if cores == 1 || lock != "bkl(ticket)" {
                    assert!(x > 0.0, "{p}");
                }
            }
        }
    }
    // Whether a curve of the big lock has a point without an IPC, which
    // the fit must refuse (a throughput of 0 is no repairman curve).
    let stalled = |delays: &[u64]| {
        delays
            .iter()
            .any(|&d| ipcs_s(find("multi", "bkl(ticket)", 2, d)) == 0.0)
    };
    // shared: none cannot protect a shared endpoint and is left out.
    assert!(pts
        .iter()
        .all(|p| !(p["mode"] == "shared" && p["lock"] == "none")));
    find("shared", "fine", 2, 0);
    // hold: critical sections were timed (on one core: with two, a spinning
    // big lock on a busy two-CPU machine may stall a whole short window).
    let h = find("hold", "bkl(ticket)", 1, 0);
    assert!(h["hold_cycles"].as_f64().unwrap() > 0.0, "{h}");
    assert!(find("multi", "fine", 1, 0)["hold_cycles"].is_null());

    // The model reads the stored curve back and fits it. What S and Z come
    // out depends on how fast this machine measured (a big lock much slower
    // at two cores than at one has no valid fit), so only their presence
    // is checked here; `model_fit_of_a_stored_run_recovers_a_known_curve`
    // checks the answer on a curve whose S and Z are known.
    // A curve the repairman cannot follow: the big lock slower at two
    // cores than at one (a collapse, as a short window on a busy two-CPU
    // machine may measure), or more than twice as fast.
    let unfollowable = |delays: &[u64]| {
        delays.iter().any(|&d| {
            let (one, two) = (
                ipcs_s(find("multi", "bkl(ticket)", 1, d)),
                ipcs_s(find("multi", "bkl(ticket)", 2, d)),
            );
            two < one || two > 2.0 * one
        })
    };
    let fit = |args: &[&str], delays: &[u64]| {
        let o = locklab(&db, args);
        let err = stderr(&o);
        if stalled(delays) {
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("throughput 0"), "{args:?}: {err}");
            return None;
        }
        // Refused only where the data gave it no valid solution.
        if o.status.code() == Some(2) && err.contains("no valid fit") {
            assert!(unfollowable(delays), "{args:?}: {err}");
            return None;
        }
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(f["variant"], "bkl(ticket)");
        for k in ["service", "delay", "service_cycles"] {
            let x = f[k].as_f64().unwrap_or_else(|| panic!("{k}: {f}"));
            assert!(x.is_finite() && x >= 0.0, "{k}: {f}");
        }
        Some(f)
    };
    let args = ["--json", "model", "fit", "--run", "last", "--delay-ns", "0"];
    if let Some(f) = fit(&args, &[0]) {
        assert_eq!(f["n"], 2, "{f}");
    }
    // Without --delay-ns every delay's curve is fitted at once.
    let args = ["--json", "model", "fit", "--run", "last"];
    if let Some(f) = fit(&args, &[0, 500]) {
        assert_eq!(
            (f["joint"].as_bool(), f["n"].as_u64()),
            (Some(true), Some(4))
        );
        assert_eq!(f["delays_ns"], serde_json::json!([0, 500]));
        assert!(f["points"][3]["delay_ns"] == 500, "{f}");
    }
    let svg = db.with_extension("svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("multicore ping-pong"), "not the ipc plot");

    // The text report reads the same run back.
    let o = locklab(&db, &["show", "last"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0));
    for needle in [
        "ipc single",
        "over none",
        "ipc multi",
        "ipc shared",
        "ipc hold",
    ] {
        assert!(out.contains(needle), "{needle:?} not in:\n{out}");
    }
}

#[test]
fn elide_without_rtm_runs_its_fall_back_path_only_when_allowed_and_says_so() {
    let (_d, db) = tmp();
    if locklab_rtm() {
        // This machine elides for real; the refusal does not apply
        // (`.ci/run` runs this test again with LOCKLAB_RTM=off).
        eprintln!("note: skipped: this CPU has RTM; LOCKLAB_RTM=off runs this test");
        return;
    }
    let args = [
        "bench",
        "ipc",
        "--variants",
        "elide(ticket)",
        "--modes",
        "single",
        "--secs",
        "0.05",
        "--reps",
        "1",
        "--allow-fallback",
    ];
    let o = locklab(&db, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("no RTM"), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("fall-back path"), "{out}");
    // Left out of the default set, with a note.
    let o = locklab(
        &db,
        &[
            "bench", "ipc", "--modes", "single", "--secs", "0.05", "--reps", "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("elide left out"));
    assert!(!stdout(&o).contains("elide("));
}

/// `bench ipc --json` of `variants` (elision variants) in single and
/// multi at one core, no server delay, two short repetitions.
fn elide_run(db: &Path, variants: &str) -> std::process::Output {
    locklab(
        db,
        &[
            "--json",
            "bench",
            "ipc",
            "--variants",
            variants,
            "--modes",
            "single,multi",
            "--cores",
            "1",
            "--delay-ns",
            "0",
            "--secs",
            "0.05",
            "--reps",
            "2",
        ],
    )
}

/// The count under key `k` of a JSON object (a point, a repetition, its
/// metrics).
fn count(x: &serde_json::Value, k: &str) -> u64 {
    x[k].as_u64()
        .unwrap_or_else(|| panic!("{k} not a count in {x}"))
}

/// Whether this CPU has RTM, as the lab sees it: the test process and the
/// lab it starts read the same CPU and the same `LOCKLAB_RTM`.
fn locklab_rtm() -> bool {
    locklab_kernel::cc::rtm_available()
}

#[test]
fn elide_with_rtm_runs_transactions_and_counts_every_entry() {
    if !locklab_rtm() {
        // Refused without RTM: see the tests above.
        eprintln!("note: skipped: this CPU has no RTM (or LOCKLAB_RTM=off), so nothing is elided");
        return;
    }
    let (_d, db) = tmp();
    let o = elide_run(&db, "elide(ticket)");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("no RTM"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["run"]["params"]["rtm"], true, "{}", v["run"]);
    let pts = v["points"].as_array().unwrap();
    let modes: Vec<&str> = pts.iter().map(|p| p["mode"].as_str().unwrap()).collect();
    assert_eq!(modes.len(), 2, "{modes:?}");
    assert!(
        modes.contains(&"single") && modes.contains(&"multi"),
        "{modes:?}"
    );
    let mut elided = 0;
    for p in pts {
        assert_eq!(p["lock"], "elide(ticket)");
        let reps = p["repetitions"].as_array().unwrap();
        assert_eq!(reps.len(), 2, "{p}");
        for r in reps {
            let m = &r["ipc"];
            // Every kernel entry (a system call, an idle core scheduling, a
            // timer preemption) ran as a transaction or on the fall-back
            // lock, and each fall-back came after the threshold's aborts.
            assert_eq!(
                count(m, "elided") + count(m, "fallbacks"),
                count(r, "total_ops") + count(m, "idle_entries") + count(m, "preemptions"),
                "{r}"
            );
            assert!(
                count(m, "aborts")
                    >= u64::from(locklab::elide::DEFAULT_THRESHOLD) * count(m, "fallbacks"),
                "{r}"
            );
            elided += count(m, "elided");
        }
        // The point sums its repetitions.
        let sum = |k: &str| reps.iter().map(|r| count(&r["ipc"], k)).sum::<u64>();
        for k in ["elided", "fallbacks", "aborts"] {
            assert_eq!(count(p, k), sum(k), "{k}: {p}");
        }
    }
    // With RTM, kernel entries do run as transactions.
    assert!(elided > 0, "RTM, yet no transaction committed: {pts:?}");

    // In the default set, with no note, and reported as transactions.
    let o = locklab(
        &db,
        &[
            "bench", "ipc", "--modes", "single", "--secs", "0.05", "--reps", "1",
        ],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("elide left out"), "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("elide(") && l.contains("kernel entries ran as transactions"))
        .unwrap_or_else(|| panic!("no elision line in:\n{out}"));
    assert!(!line.contains("fall-back path only"), "{line}");
}

#[test]
fn both_elide_variants_tally_aborts_by_cause_and_adaptive_skips() {
    if !locklab_rtm() {
        // Refused without RTM: see the tests above.
        eprintln!("note: skipped: this CPU has no RTM (or LOCKLAB_RTM=off), so nothing is elided");
        return;
    }
    let (_d, db) = tmp();
    let variants = ["elide(ticket)", "elide-adaptive(ticket)"];
    let o = elide_run(&db, &variants.join(","));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4, "two variants, two modes");
    const CAUSES: [&str; 5] = ["conflict", "capacity", "lock_busy", "retry_clear", "other"];
    for p in pts {
        let lock = p["lock"].as_str().unwrap();
        assert!(variants.contains(&lock), "{lock}");
        let reps = p["repetitions"].as_array().unwrap();
        for r in reps {
            let m = &r["ipc"];
            assert_eq!(
                count(m, "elided") + count(m, "fallbacks"),
                count(r, "total_ops") + count(m, "idle_entries") + count(m, "preemptions"),
                "{r}"
            );
            // Each abort has one cause.
            let by_cause: u64 = CAUSES.iter().map(|c| count(m, &format!("abort_{c}"))).sum();
            assert_eq!(by_cause, count(m, "aborts"), "{m}");
            // Skipped entries took the lock; only the adaptive policy skips.
            assert!(count(m, "skipped") <= count(m, "fallbacks"), "{m}");
            if lock == "elide(ticket)" {
                assert_eq!(count(m, "skipped"), 0, "{m}");
            }
        }
        // The point sums its repetitions.
        let sum = |k: &str| reps.iter().map(|r| count(&r["ipc"], k)).sum::<u64>();
        assert_eq!(count(p, "skipped"), sum("skipped"), "{p}");
        for c in CAUSES {
            assert_eq!(
                count(&p["abort_causes"], c),
                sum(&format!("abort_{c}")),
                "{c}: {p}"
            );
        }
    }
    // The report says it in words.
    let o = locklab(&db, &["show", "last"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for v in variants {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{v}:")))
            .unwrap_or_else(|| panic!("no elision line for {v} in:\n{out}"));
        assert!(
            line.contains("kernel entries ran as transactions"),
            "{line}"
        );
        assert_eq!(
            line.contains("without attempting"),
            v.starts_with("elide-adaptive"),
            "{line}"
        );
    }
}

/// Stores a finished `bench ipc` run of `bkl(ticket)`'s multi ping-pong
/// at 0 and 500 ns server delay and 1 to 4 cores, three repetitions each
/// at `ipcs_per_ns(delay, cores)`, on a machine with a 2 GHz TSC.
fn store_ipc_run(db: &Path, ipcs_per_ns: impl Fn(u64, u32) -> f64) {
    use locklab_lab::core::results::{Machine, Point, Rep, RunMeta};
    use locklab_lab::studies::ipc::runner::IpcMetrics;
    let mut store = locklab_lab::core::store::Store::open(db).expect("database");
    let meta = RunMeta {
        id: None,
        uuid: None,
        kind: "bench ipc".into(),
        command: "locklab bench ipc (synthetic)".into(),
        params: serde_json::json!({ "variants": ["bkl(ticket)"], "modes": ["multi"] }),
        machine: Machine {
            tsc_hz: Some(2_000_000_000),
            cores: 4,
            ..Machine::default()
        },
        started: "2024-01-01T00:00:00Z".into(),
        finished: None,
        complete: false,
    };
    let run = store.begin_run(&meta).expect("run stored");
    for delay in [0u64, 500] {
        for cores in 1..=4u32 {
            let x = ipcs_per_ns(delay, cores);
            let p = Point {
                bench: "ipc".into(),
                lock: "bkl(ticket)".into(),
                threads: cores,
                params: serde_json::json!({ "mode": "multi", "delay_ns": delay }),
                reps: (0..3)
                    .map(|rep| {
                        let mut r = Rep {
                            throughput_ops_s: x * 1e9,
                            ..Rep::one_thread(rep, 1.0, 1.0, 1)
                        };
                        r.set_metrics(&IpcMetrics::default());
                        r
                    })
                    .collect(),
            };
            store.add_point(run, &p).expect("point stored");
        }
    }
    store.finish_run(run).expect("run finished");
}

#[test]
fn model_fit_of_a_stored_run_recovers_a_known_curve() {
    // A run whose curves follow the repairman model exactly: S = 300 ns,
    // z₀ = 1000 ns, and at server delay d, Z = z₀ + d/2 (what `model fit
    // --run` assumes); its TSC runs at 2 cycles per ns.
    let (s, z0) = (300.0, 1000.0);
    let (_d, db) = tmp();
    store_ipc_run(&db, |delay, cores| {
        erlang_x(s, z0 + delay as f64 / 2.0, cores)
    });

    // One delay's curve: S and Z = z₀ + d/2, in ns and TSC cycles.
    for (delay, z) in [("0", z0), ("500", z0 + 250.0)] {
        let o = locklab(
            &db,
            &[
                "--json",
                "model",
                "fit",
                "--run",
                "last",
                "--delay-ns",
                delay,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k}: {f}"));
        assert_eq!(f["variant"], "bkl(ticket)");
        assert_eq!(f["n"], 4);
        assert!(rel(num("service"), s) < 1e-6, "{f}");
        assert!(rel(num("delay"), z) < 1e-6, "{f}");
        assert!(rel(num("service_cycles"), 2.0 * s) < 1e-6, "{f}");
        assert!(rel(num("delay_cycles"), 2.0 * z) < 1e-6, "{f}");
    }
    // Two cores per curve, as on a two-CPU machine: still determined.
    let o = locklab(
        &db,
        &[
            "--json",
            "model",
            "fit",
            "--run",
            "last",
            "--delay-ns",
            "0",
            "--first",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(f["n"], 2, "{f}");
    assert!(rel(f["service"].as_f64().unwrap(), s) < 1e-6, "{f}");
    assert!(rel(f["delay"].as_f64().unwrap(), z0) < 1e-6, "{f}");

    // Every delay at once: one S and one z₀.
    let o = locklab(&db, &["--json", "model", "fit", "--run", "last"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(f["joint"], true, "{f}");
    assert_eq!(f["n"], 8, "{f}");
    assert!(rel(f["service"].as_f64().unwrap(), s) < 1e-6, "{f}");
    assert!(rel(f["delay"].as_f64().unwrap(), z0) < 1e-6, "{f}");

    // The plot draws the big lock's fit with the same S and z₀.
    let svg = db.with_extension("svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("one S per big lock"), "no model lines");
    assert!(
        drawn.contains("bkl(ticket): S 300 ns, z₀ 1000 ns"),
        "not the known fit:\n{drawn}"
    );

    // A curve with a point where no IPC was measured (a stalled window) is
    // no repairman curve: the fit refuses it, naming the point, and the
    // plot draws the points without a model line.
    let (_d, db) = tmp();
    store_ipc_run(&db, |delay, cores| {
        if cores == 2 {
            0.0
        } else {
            erlang_x(s, z0 + delay as f64 / 2.0, cores)
        }
    });
    for args in [
        &["model", "fit", "--run", "last", "--delay-ns", "0"][..],
        &["model", "fit", "--run", "last"][..],
    ] {
        let o = locklab(&db, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("2 cores") && err.contains("throughput 0"),
            "{args:?}: {err}"
        );
    }
    let svg = db.with_extension("svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("multicore ping-pong"), "not the ipc plot");
    assert!(
        !drawn.contains("one S per big lock"),
        "a fit of a stalled curve"
    );
}

#[test]
fn model_fit_of_a_stored_run_says_what_is_missing() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "ipc",
            "--variants",
            "none,fine",
            "--modes",
            "multi,single",
            "--cores",
            "1,2",
            "--delay-ns",
            "0,100",
            "--secs",
            "0.02",
            "--reps",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for (args, needle) in [
        (&["model", "fit", "--run", "last"][..], "no bkl variant"),
        (
            &["model", "fit", "--run", "last", "--variant", "bkl(clh)"][..],
            "measured fine, none",
        ),
        (
            &[
                "model",
                "fit",
                "--run",
                "last",
                "--variant",
                "fine",
                "--delay-ns",
                "7",
            ][..],
            "--delay-ns 7",
        ),
        (&["model", "fit", "--run", "99"][..], "99"),
    ] {
        let o = locklab(&db, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    }
    let o = locklab(
        &db,
        &[
            "model",
            "fit",
            "--run",
            "last",
            "--variant",
            "fine",
            "--delay-ns",
            "100",
        ],
    );
    // Found and fitted: a model, or (a curve a short window on a busy
    // machine made fall with cores) no valid one, said as such.
    let err = stderr(&o);
    if o.status.code() == Some(2) {
        assert!(err.contains("no valid fit"), "{err}");
    } else {
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(stdout(&o).contains("in TSC cycles"));
    }
}

/// Runs `locklab --db DB ARGS` with `LOCKLAB_RTM` set to `rtm`.
fn locklab_rtm_as(rtm: &str, db: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_locklab"))
        .env("LOCKLAB_RTM", rtm)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("running locklab")
}

#[test]
fn a_refusal_is_one_line_whatever_the_cpu_decided_first() {
    // On a CPU without RTM (and with LOCKLAB_RTM=off on one with it) the
    // kernel studies leave elision out with a note; a refusal decided
    // after that must still be its one line, on any CPU.
    let (d, db) = tmp();
    let no_dir = d.path().join("no/such/dir/t.db");
    for rtm in ["off", "auto"] {
        for (db, args, needle) in [
            (
                &db,
                &[
                    "bench",
                    "ipc",
                    "--variants",
                    "none,fine",
                    "--allow-fallback",
                ][..],
                "--allow-fallback is for the elide variants",
            ),
            (
                &no_dir,
                &[
                    "bench", "kv", "--cores", "1", "--secs", "0.05", "--reps", "1",
                ][..],
                "no/such/dir",
            ),
            (
                &no_dir,
                &[
                    "bench", "ipc", "--modes", "single", "--secs", "0.05", "--reps", "1",
                ][..],
                "no/such/dir",
            ),
        ] {
            let o = locklab_rtm_as(rtm, db, args);
            let err = stderr(&o);
            assert_eq!(
                o.status.code(),
                Some(2),
                "LOCKLAB_RTM={rtm} {args:?}: {err}"
            );
            assert_eq!(
                err.trim_end().lines().count(),
                1,
                "LOCKLAB_RTM={rtm} {args:?}: not one line: {err}"
            );
            assert!(err.contains(needle), "{needle:?} not in: {err}");
        }
    }
    assert!(!db.exists(), "a refused command made the database");
}

#[test]
fn locklab_rtm_off_leaves_elision_out_and_another_value_is_refused() {
    let (_d, db) = tmp();
    let o = locklab_rtm_as("sometimes", &db, &["bench", "ipc", "--variants", "elide"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("LOCKLAB_RTM=sometimes") && err.contains("off"),
        "{err}"
    );
    // Switched off, elision is refused as on a CPU without RTM, whatever
    // this CPU has.
    let o = locklab_rtm_as("off", &db, &["bench", "ipc", "--variants", "elide"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no RTM"), "{err}");
    assert!(!db.exists(), "a refused command made the database");
}

#[test]
fn the_default_core_counts_follow_the_cpus_this_process_may_use() {
    // The core count is what the lab reads from the machine through the
    // affinity mask: a test (or a user, with `taskset`) sets it, and every
    // default follows. On one CPU, `bench ipc` sweeps 1 core only.
    use std::os::unix::process::CommandExt;
    let (_d, db) = tmp();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_locklab"));
    cmd.arg("--db").arg(&db).args([
        "--json",
        "bench",
        "ipc",
        "--variants",
        "bkl",
        "--modes",
        "multi",
        "--delay-ns",
        "0",
        "--secs",
        "0.02",
        "--reps",
        "1",
    ]);
    // SAFETY: between fork and exec only sched_setaffinity runs, which is
    // async-signal-safe; the set is a local of the child.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().expect("running locklab");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let cores: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cores"].as_u64().expect("cores"))
        .collect();
    assert_eq!(cores, [1], "{}", v["points"]);
    assert_eq!(
        v["run"]["machine"]["cores"].as_u64(),
        Some(1),
        "{}",
        v["run"]["machine"]
    );
}
