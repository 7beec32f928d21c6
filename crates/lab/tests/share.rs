//! `locklab push`, `locklab pull` and `locklab machines` from the command
//! line: machines benchmarking into one store at once while another pushes
//! into it leave every run there exactly once; a run pushed again is not
//! stored again; pull brings runs back whole; the machines are told apart;
//! bad input is one line, exit 2, with both stores unchanged.

mod common;

use common::{assert_bad_input, locklab, ok, stderr, stdout, tmp, SHORT_BENCH as BENCH};
use locklab_lab::core::store::testing::TestDatabase;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// `locklab --db DB ARGS` on the machine named `machine`.
fn on(machine: &str, db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_locklab"));
    c.env("LOCKLAB_MACHINE_ID", machine)
        .arg("--db")
        .arg(db)
        .args(args);
    c
}

/// Every run of a store: identity → (machine, points, complete).
fn runs(db: &Path) -> HashMap<String, (String, u64, bool)> {
    let o = ok(locklab(db, &["runs", "--json"]));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let list = v["runs"].as_array().unwrap();
    let mut m = HashMap::new();
    for r in list {
        let uuid = r["meta"]["uuid"].as_str().expect("an identity").to_string();
        let machine = r["meta"]["machine"]["id"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let row = (
            machine,
            r["points"].as_u64().unwrap(),
            r["meta"]["complete"].as_bool().unwrap(),
        );
        assert!(m.insert(uuid.clone(), row).is_none(), "{uuid} stored twice");
    }
    assert_eq!(m.len(), list.len());
    m
}

#[test]
fn three_machines_benchmarking_and_a_fourth_pushing_leave_every_run_once() {
    let (d, shared) = tmp();
    three_machines_in(d.path(), &shared);
}

/// The same on a PostgreSQL server: the store a team shares.
#[test]
fn three_machines_and_a_push_into_one_server_leave_every_run_once() {
    let Some(db) = TestDatabase::create("three_machines_and_a_push_into_one_server") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    three_machines_in(d.path(), Path::new(db.url()));
}

/// Three machines benchmark into `shared` (a file, or a server's URL) at
/// once while a fourth pushes its file from `dir` into it twice; then
/// `machines` and `report` over the store.
fn three_machines_in(dir: &Path, shared: &Path) {
    let local = dir.join("local.db");
    for _ in 0..3 {
        ok(on("laptop", &local, &BENCH).output().unwrap());
    }
    let pushed = runs(&local);
    assert_eq!(pushed.len(), 3);

    // Three benchmarks of two runs each into the shared store, and two
    // pushes of the laptop's runs into it, all at once.
    let mut children = Vec::new();
    for m in ["m1", "m2", "m3"] {
        let shared = shared.to_path_buf();
        children.push(std::thread::spawn(move || {
            for _ in 0..2 {
                ok(on(m, &shared, &BENCH).output().unwrap());
            }
        }));
    }
    for _ in 0..2 {
        let (local, shared) = (local.clone(), shared.to_path_buf());
        children.push(std::thread::spawn(move || {
            ok(on("laptop", &local, &["push", "all", "--to"])
                .arg(&shared)
                .output()
                .unwrap());
        }));
    }
    for c in children {
        c.join().unwrap();
    }
    let all = runs(shared);
    assert_eq!(all.len(), 6 + 3, "{all:?}");
    for (uuid, row) in &pushed {
        assert_eq!(all.get(uuid), Some(row), "the laptop's run {uuid}");
    }
    let mut per_machine: HashMap<&str, usize> = HashMap::new();
    for (machine, points, complete) in all.values() {
        assert_eq!((*points, *complete), (2, true));
        *per_machine.entry(machine.as_str()).or_default() += 1;
    }
    assert_eq!(
        per_machine,
        HashMap::from([("m1", 2), ("m2", 2), ("m3", 2), ("laptop", 3)])
    );

    // Pushed again: nothing new.
    let o = ok(locklab(&local, &["push", "--to", shared.to_str().unwrap()]));
    let note = stderr(&o);
    assert!(note.contains("0 new, 0 updated, 3 already there"), "{note}");
    assert_eq!(runs(shared).len(), 9);

    // `machines` names the four, each with its runs.
    let o = ok(locklab(shared, &["machines", "--json"]));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut listed: Vec<(String, u64)> = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["runs"].as_u64().unwrap(),
            )
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [("laptop", 3), ("m1", 2), ("m2", 2), ("m3", 2)].map(|(m, n)| (m.to_string(), n))
    );
    let text = stdout(&ok(locklab(shared, &["machines"])));
    assert!(text.contains("laptop") && text.contains("m3"), "{text}");

    // The report puts two machines' runs of the study side by side.
    let ids: HashMap<String, i64> = {
        let o = ok(locklab(shared, &["runs", "--json"]));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["meta"]["machine"]["id"].as_str().unwrap().to_string(),
                    r["meta"]["id"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let page = dir.join("report.html");
    let (a, b) = (ids["m1"].to_string(), ids["laptop"].to_string());
    ok(locklab(
        shared,
        &["report", &a, &b, "--out", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("Machines side by side"),
        "no machines section"
    );
    assert!(
        html.contains(&format!("run {a} (m1)")) && html.contains(&format!("run {b} (laptop)")),
        "the runs are not named by machine"
    );
}

#[test]
fn pull_brings_runs_back_whole_and_only_those_named() {
    let (d, shared) = tmp();
    pull_in(d.path(), &shared);
}

#[test]
fn pull_from_a_server_brings_runs_back_whole() {
    let Some(db) = TestDatabase::create("pull_from_a_server") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    pull_in(d.path(), Path::new(db.url()));
}

/// Two machines' runs in `shared` (a file or a server), pulled into a
/// file in `dir`.
fn pull_in(dir: &Path, shared: &Path) {
    for m in ["a", "b"] {
        ok(on(m, shared, &BENCH).output().unwrap());
    }
    let mine = dir.join("mine.db");
    let o = ok(locklab(
        &mine,
        &["pull", "1", "--from", shared.to_str().unwrap()],
    ));
    assert!(stdout(&o).contains("new"), "{}", stdout(&o));
    let got = runs(&mine);
    assert_eq!(got.len(), 1);
    assert_eq!(got.values().next().unwrap().0, "a");
    // The copy shows as the original does.
    let show = |db: &Path, id: &str| {
        let o = ok(locklab(db, &["show", id, "--format", "csv"]));
        stdout(&o)
    };
    assert_eq!(show(&mine, "1"), show(shared, "1"));
    // `all` brings the other one, and the first is not stored again.
    ok(locklab(
        &mine,
        &["pull", "all", "--from", shared.to_str().unwrap()],
    ));
    assert_eq!(runs(&mine), runs(shared));
}

#[test]
fn bad_input_is_one_line_and_changes_no_store() {
    let (_d, db) = tmp();
    ok(on("a", &db, &BENCH).output().unwrap());
    let before = std::fs::read(&db).unwrap();
    let other = db.with_file_name("other.db");
    let o = locklab(&db, &["push", "--to", db.to_str().unwrap()]);
    assert_bad_input(&o, "that is the store itself");
    let o = locklab(&db, &["push", "7", "--to", other.to_str().unwrap()]);
    assert_bad_input(&o, "no run 7 in");
    assert!(!other.exists(), "a refused push made the other store");
    let o = locklab(&db, &["push", "seven", "--to", other.to_str().unwrap()]);
    assert_bad_input(
        &o,
        "'seven' is not a run: allowed a positive integer id, `last` or `all`",
    );
    let o = locklab(
        &other,
        &[
            "pull",
            "--from",
            db.with_file_name("none.db").to_str().unwrap(),
        ],
    );
    assert_bad_input(&o, "no such database");
    assert!(!other.exists(), "a refused pull made the store");
    // Another program's file is refused as a destination, and kept.
    let foreign = db.with_file_name("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE notes (x TEXT);").unwrap();
    }
    let theirs = std::fs::read(&foreign).unwrap();
    let o = locklab(&db, &["push", "--to", foreign.to_str().unwrap()]);
    assert_bad_input(&o, "not a locklab database");
    assert_eq!(std::fs::read(&foreign).unwrap(), theirs);
    assert_eq!(std::fs::read(&db).unwrap(), before, "the source changed");
}
