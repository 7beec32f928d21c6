//! `locklab sim spin` from the command line: a run stored like a
//! benchmark's (show, plot and report read it), seed 001's shape on two
//! simulated 15-core sockets, a costs file, and bad input one line, exit
//! 2, nothing stored.

mod common;

use common::{assert_rejected, locklab, ok, stdout, tmp};
use serde_json::Value;

/// `locklab --json sim spin ARGS` into `db`: the stored run's JSON.
fn sim_json(db: &std::path::Path, args: &[&str]) -> Value {
    let all: Vec<&str> = ["--json", "sim", "spin"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    serde_json::from_str(&stdout(&ok(locklab(db, &all)))).unwrap()
}

/// The median throughput of `lock` at `threads` in a run's JSON.
fn tput(v: &Value, lock: &str, threads: u64) -> f64 {
    let p = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["lock"] == lock && p["threads"] == threads)
        .unwrap_or_else(|| panic!("no point {lock} at {threads}"));
    let mut xs: Vec<f64> = p["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["throughput_ops_s"].as_f64().unwrap())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[test]
fn seed_001s_shape_on_two_simulated_sockets_stored_like_a_benchmark() {
    let (d, db) = tmp();
    let v = sim_json(
        &db,
        &[
            "--locks",
            "ticket,mcs",
            "--threads",
            "1,2,15,30",
            "--sim-ms",
            "0.5",
            "--reps",
            "2",
        ],
    );

    assert_eq!(v["points"].as_array().unwrap().len(), 8);
    // The ticket lock's rate per core collapses within a socket and
    // further across; MCS keeps most of its total.
    let (t2, t15, t30) = (
        tput(&v, "ticket", 2),
        tput(&v, "ticket", 15),
        tput(&v, "ticket", 30),
    );
    assert!(
        t15 / 15.0 < 0.1 * t2 / 2.0,
        "ticket per core: {t2} at 2, {t15} at 15"
    );
    assert!(
        t30 < t15,
        "ticket: {t15} at 15 (one socket), {t30} at 30 (two)"
    );
    let (m2, m30) = (tput(&v, "mcs", 2), tput(&v, "mcs", 30));
    assert!(
        m30 > 0.5 * m2 && m30 > 5.0 * t30,
        "mcs {m2} at 2, {m30} at 30"
    );
    // Hand-overs across sockets only where the threads span two.
    let across = |threads: u64| {
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["lock"] == "mcs" && p["threads"] == threads)
            .unwrap()["repetitions"][0]["sim-spin"]["across_sockets"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(across(15), 0);
    assert!(across(30) > 0);
    // The verdict names the simulated machine's groups.
    let verdict = v["verdict"].to_string();
    assert!(
        verdict.contains("2+ sockets") && verdict.contains("mcs"),
        "{verdict}"
    );

    // show, plot and report read it.
    let text = stdout(&ok(locklab(&db, &["show", "last"])));
    assert!(text.contains("SIMULATED on 2x15 cores"), "{text}");
    // Each thread's share: MCS, FIFO, shares evenly at every count (its
    // Jain index 1.00, with the least and most threads' shares beside it).
    let shares = text
        .split("per-thread shares")
        .nth(1)
        .and_then(|t| t.split("hand-overs across").next())
        .expect("a per-thread shares table");
    let mcs: Vec<&str> = shares
        .lines()
        .find(|l| l.trim_start().starts_with("mcs "))
        .expect("an mcs row")
        .split_whitespace()
        .collect();
    assert_eq!(mcs.len(), 1 + 2 * 4, "{shares}");
    for cell in mcs[1..].chunks(2) {
        assert_eq!(cell[0], "1.00", "{shares}");
        assert!(cell[1].ends_with('%'), "{shares}");
    }
    let svg = d.path().join("sim.svg");
    ok(locklab(
        &db,
        &["plot", "last", "--out", svg.to_str().unwrap()],
    ));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let html = d.path().join("sim.html");
    ok(locklab(
        &db,
        &["report", "last", "--out", html.to_str().unwrap()],
    ));
    assert!(std::fs::read_to_string(&html).unwrap().contains("sim-spin"));
}

#[test]
fn a_costs_file_changes_what_crossing_sockets_costs() {
    let (d, db) = tmp();
    let flat = d.path().join("flat.toml");
    // Crossing sockets costs what staying does.
    std::fs::write(&flat, "other_socket = 115.0\nmemory_remote = 185.0\n").unwrap();
    let run = |costs: &str| {
        let v = sim_json(
            &db,
            &[
                "--locks",
                "mcs",
                "--topology",
                "2x4",
                "--threads",
                "8",
                "--placement",
                "round-robin",
                "--sim-ms",
                "0.5",
                "--reps",
                "1",
                "--costs",
                costs,
            ],
        );

        tput(&v, "mcs", 8)
    };
    let seed = run("seed002");
    let flat_rate = run(flat.to_str().unwrap());
    assert!(
        flat_rate > 1.1 * seed,
        "flat {flat_rate} against seed 002's {seed}"
    );
}

#[test]
fn bad_input_is_one_line_and_stores_nothing() {
    let (d, db) = tmp();
    let cases: [(&[&str], &str); 8] = [
        (
            &["--locks", "nope"],
            "'nope' is not a simulated lock: allowed tas, ttas, ticket, mcs, clh, hemlock, qspin, c-bo-mcs, hmcs, cna",
        ),
        (
            &["--topology", "0x4"],
            "'0x4' is not a topology: allowed SOCKETSxCORES",
        ),
        (&["--topology", "2x"], "is not a topology"),
        (
            &["--topology", "2x4", "--threads", "9"],
            "9 threads on a 2x4 machine: allowed 1 to 8",
        ),
        (&["--placement", "diagonal"], "allowed fill or round-robin"),
        (
            &["--costs", "missing.toml"],
            "--costs missing.toml: cannot read it",
        ),
        (&["--sim-ms", "0"], "allowed 0.01 to 10000"),
        (&["--lock-socket", "2"], "--lock-socket 2: allowed 0 to 1 on a 2x15 machine"),
    ];
    for (args, needle) in cases {
        let all: Vec<&str> = ["sim", "spin"].iter().chain(args).copied().collect();
        assert_rejected(&db, &all, needle);
    }
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "hit = 4\nwarp = 9\n").unwrap();
    assert_rejected(
        &db,
        &["sim", "spin", "--costs", bad.to_str().unwrap()],
        "unknown field `warp`",
    );
    std::fs::write(&bad, "hit = 0.0\n").unwrap();
    assert_rejected(
        &db,
        &["sim", "spin", "--costs", bad.to_str().unwrap()],
        "cost hit = 0: allowed a finite number above 0",
    );
}

/// `--costs here` measures this machine: the costs land in the run's
/// parameters, in ns (a 1 GHz clock), a transfer dearer than a hit.
#[test]
fn costs_measured_here_are_recorded_with_the_run() {
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "--json",
            "sim",
            "spin",
            "--locks",
            "ticket",
            "--topology",
            "1x2",
            "--threads",
            "1,2",
            "--sim-ms",
            "0.2",
            "--reps",
            "1",
            "--costs",
            "here",
        ],
    );
    if o.status.code() == Some(2) && common::stderr(&o).contains("this machine has one CPU") {
        return;
    }
    let v: Value = serde_json::from_str(&stdout(&ok(o))).unwrap();
    let c = &v["points"][0]["params"]["cost_cycles"];
    assert_eq!(v["points"][0]["params"]["costs"], "here");
    assert_eq!(c["ghz"], 1.0);
    let (hit, same) = (
        c["hit"].as_f64().unwrap(),
        c["same_socket"].as_f64().unwrap(),
    );
    assert!(hit > 0.0 && same > hit, "{c}");
}

/// Seed 001's lock in remote memory, with `--home-snoop`: one socket's
/// threads run slower on a lock homed on the other socket.
#[test]
fn a_lock_in_remote_memory_is_slower_through_its_home() {
    let (_d, db) = tmp();
    let run = |socket: &str| {
        let v = sim_json(
            &db,
            &[
                "--locks",
                "ticket",
                "--threads",
                "8",
                "--sim-ms",
                "0.5",
                "--reps",
                "1",
                "--home-snoop",
                "--lock-socket",
                socket,
            ],
        );

        assert_eq!(v["points"][0]["params"]["cost_cycles"]["home_snoop"], true);
        tput(&v, "ticket", 8)
    };
    let (local, remote) = (run("0"), run("1"));
    assert!(
        remote < 0.8 * local,
        "remote {remote} against local {local}"
    );
}
