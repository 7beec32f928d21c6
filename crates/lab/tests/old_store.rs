//! A database written by an older locklab (schema 6, before the studies'
//! metrics moved into one column: `tests/data/schema6/`, made by `bench
//! hash`, `bench ipc`, `sim lhp` (latency, then fairness, whose metrics
//! hold nulls) and `bench uncontended` of that build) opens, migrates and
//! shows exactly what that build showed (`show N` and `show N --json`,
//! saved beside it), with only the verdict added since (the text's last
//! section, the JSON's `verdict`); the saved text has since been updated
//! once, where a single repetition's spread, printed as `x–x` by that
//! build, now says it is unknown.

mod common;

use common::{locklab, stdout, tmp};
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/schema6")
        .join(name)
}

#[test]
fn a_schema_6_database_shows_what_its_build_showed() {
    let (_dir, db) = tmp();
    std::fs::copy(fixture("locklab.db"), &db).expect("copy of the old database");
    for run in ["1", "2", "3", "4", "5"] {
        for json in [false, true] {
            let mut args = vec!["show", run];
            if json {
                args.push("--json");
            }
            let o = locklab(&db, &args);
            assert!(o.status.success(), "show {run}: {o:?}");
            let want = std::fs::read_to_string(fixture(&format!(
                "show{run}.{}",
                if json { "json" } else { "txt" }
            )))
            .expect("saved output");
            let got = stdout(&o);
            if json {
                let mut got: serde_json::Value = serde_json::from_str(&got).expect("JSON");
                let want: serde_json::Value = serde_json::from_str(&want).expect("saved JSON");
                // Every key the old build showed, with its value; keys a
                // newer build adds (a verdict, new counters) are allowed.
                keep_known(&mut got, &want);
                assert_eq!(got, want, "show {run} (json)");
            } else {
                let before = got.split("\nVERDICT\n").next().unwrap_or_default();
                assert_eq!(before, want, "show {run} (text)");
            }
        }
    }
    // The metrics kept their keys: the hash-table run's repetitions carry
    // theirs, and the file is at this build's schema now.
    let o = locklab(&db, &["show", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let rep = &v["points"][0]["repetitions"][0];
    assert!(rep["hash"]["lookups"].as_u64().unwrap() > 0, "{rep}");
    let o = locklab(&db, &["runs"]);
    assert_eq!(stdout(&o).lines().count(), 5);
}

/// Removes from `got` every object key that `want` lacks, at every depth
/// (arrays matched element by element).
fn keep_known(got: &mut serde_json::Value, want: &serde_json::Value) {
    use serde_json::Value;
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            g.retain(|k, _| w.contains_key(k));
            for (k, v) in g.iter_mut() {
                keep_known(v, &w[k]);
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            for (gv, wv) in g.iter_mut().zip(w) {
                keep_known(gv, wv);
            }
        }
        _ => {}
    }
}
