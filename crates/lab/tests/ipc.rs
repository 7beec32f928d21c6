//! `locklab bench ipc` as a user meets it: the emulated kernel's variants
//! are measured, checked and stored; bad input gets one line and exit 2.

mod common;

use common::{locklab, tmp};
use std::path::Path;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Bad input (see `common::assert_bad_input`), and no database made.
fn assert_bad_input(db: &Path, args: &[&str], needle: &str) {
    common::assert_bad_input(&locklab(db, args), needle);
    assert!(
        !db.exists(),
        "{args:?}: a rejected command made the database"
    );
}

#[test]
fn bench_ipc_rejects_bad_input_with_the_value_named() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (&["--variants", "bkl,nosuch"][..], "'nosuch'"),
        (&["--variants", "bkl(nosuch)"][..], "'nosuch'"),
        (&["--variants", "bkl(std)"][..], "std"),
        (&["--variants", "fine(clh)"][..], "takes no lock"),
        (&["--variants", "bkl(rw-fair)"][..], "reader-writer"),
        (&["--variants", "none,,fine"][..], "empty name"),
        (&["--variants", "bkl("][..], "parentheses"),
        (&["--variants", "elide"][..], "RTM"),
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
        assert_bad_input(&db, &a, needle);
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
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
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
    // multi: every variant at every core count and delay.
    for lock in ["none", "bkl(ticket)", "fine"] {
        for cores in [1, 2] {
            for delay in [0, 500] {
                let p = find("multi", lock, cores, delay);
                assert!(p["ipcs_s"].as_f64().unwrap() > 0.0, "{p}");
            }
        }
    }
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

    // The model fits a stored curve (S and Z in ns and cycles) and the plot
    // draws it with the model lines.
    let o = locklab(
        &db,
        &["--json", "model", "fit", "--run", "last", "--delay-ns", "0"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(f["variant"], "bkl(ticket)");
    assert_eq!(f["n"], 2);
    for k in ["service", "delay", "service_cycles"] {
        assert!(f[k].as_f64().unwrap() > 0.0, "{k}: {f}");
    }
    let svg = db.with_extension("svg");
    let o = locklab(&db, &["plot", "last", "--out", svg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains("multicore ping-pong") && drawn.contains("one S per big lock"),
        "no model lines"
    );
    assert!(
        drawn.contains("bkl(ticket): S"),
        "no fit of the big lock's curves"
    );

    // Without --delay-ns every delay's curve is fitted at once.
    let o = locklab(&db, &["--json", "model", "fit", "--run", "last"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let f: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(
        (f["joint"].as_bool(), f["n"].as_u64()),
        (Some(true), Some(4))
    );
    assert_eq!(f["delays_ns"], serde_json::json!([0, 500]));
    assert!(f["points"][3]["delay_ns"] == 500, "{f}");

    // The text report reads the same run back.
    let o = locklab(&db, &["show", "last"]);
    let out = text(&o.stdout);
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
        return; // This machine elides for real; the refusal does not apply.
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
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no RTM"), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("fall-back path"), "{out}");
    // Left out of the default set, with a note.
    let o = locklab(
        &db,
        &[
            "bench", "ipc", "--modes", "single", "--secs", "0.05", "--reps", "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("elide left out"));
    assert!(!text(&o.stdout).contains("elide("));
}

/// Whether this CPU has RTM, as the lab sees it.
fn locklab_rtm() -> bool {
    locklab_kernel::cc::rtm_available()
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
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
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
        let err = text(&o.stderr);
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
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("in TSC cycles"));
}
