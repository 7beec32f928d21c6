//! A database written by an older locklab (schema 6, before the studies'
//! metrics moved into one column: `tests/data/schema6/`, made by `bench
//! hash`, `bench ipc`, `sim lhp` (latency, then fairness, whose metrics
//! hold nulls) and `bench uncontended` of that build) is read as it is,
//! the file left unchanged until a command stores into it and migrates
//! it, and shows exactly what that build showed (`show N` and `show N --json`,
//! saved beside it), with only the verdict added since (the text's last
//! section, the JSON's `verdict`); the saved text has since been updated
//! once, where a single repetition's spread, printed as `x–x` by that
//! build, now says it is unknown.

mod common;

use common::{locklab, stderr, stdout, tmp};
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
    // theirs.
    let o = locklab(&db, &["show", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let rep = &v["points"][0]["repetitions"][0];
    assert!(rep["hash"]["lookups"].as_u64().unwrap() > 0, "{rep}");
    let o = locklab(&db, &["runs"]);
    assert_eq!(stdout(&o).lines().count(), 5);
}

/// The schema of a database file, as SQLite's header says.
fn schema_of(db: &Path) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open");
    c.pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("user_version")
}

/// Every command that only reads reads the schema 6 file as it is: it
/// succeeds, and the file keeps its bytes, its modification time and its
/// schema, with nothing created beside it. The first command that stores
/// (`baseline save`) migrates it, and it then shows what it showed.
#[test]
fn reading_an_older_database_leaves_it_as_it_was_and_storing_migrates_it() {
    let (dir, db) = tmp();
    std::fs::copy(fixture("locklab.db"), &db).expect("copy of the old database");
    let before = std::fs::read(&db).unwrap();
    let mtime = std::fs::metadata(&db).unwrap().modified().unwrap();
    assert_eq!(schema_of(&db), 6);
    let outs = tempfile::tempdir().unwrap();
    let svg = outs.path().join("p.svg");
    let html = outs.path().join("r.html");
    let listing = || {
        let mut v: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let files = listing();
    let mut shown = String::new();
    for args in [
        &["runs"][..],
        &["runs", "--json"][..],
        &["show", "1"][..],
        &["show", "2", "--json"][..],
        &["show", "3", "--format", "csv"][..],
        &["show", "1", "--format", "markdown", "--reps"][..],
        &["compare", "1", "1"][..],
        &["baseline", "list"][..],
        &["baseline", "list", "--json"][..],
        &["plot", "2", "--out", svg.to_str().unwrap()][..],
        &["report", "1", "2", "--out", html.to_str().unwrap()][..],
        &["model", "fit", "--run", "2"][..],
    ] {
        let o = locklab(&db, args);
        // A run without a curve the model can fit is refused as input;
        // what matters is that the file is read, not written.
        let fit = args[0] == "model";
        assert!(
            o.status.success() || (fit && o.status.code() == Some(2)),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("schema"), "{args:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(&db).unwrap(), before, "{args:?} wrote to it");
        assert_eq!(std::fs::metadata(&db).unwrap().modified().unwrap(), mtime);
        assert_eq!(listing(), files, "{args:?} created a file beside it");
        assert_eq!(schema_of(&db), 6, "{args:?}");
        if args == ["show", "1"] {
            shown = stdout(&o);
        }
    }
    assert!(shown.contains("hash"), "{shown}");
    assert!(svg.exists() && html.exists());

    let o = locklab(&db, &["baseline", "save", "old", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        schema_of(&db),
        locklab_lab::core::store::SCHEMA_VERSION as i64
    );
    let o = locklab(&db, &["show", "1"]);
    assert_eq!(
        stdout(&o),
        shown,
        "the migrated file shows what the old one did"
    );
    let o = locklab(&db, &["baseline", "list"]);
    assert!(stdout(&o).contains("old"), "{}", stdout(&o));
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
