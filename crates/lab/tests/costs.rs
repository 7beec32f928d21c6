//! `bench costs`: seed 003's Table 1 rows and the primitives' in one run,
//! checked by relations that hold on any machine — a load that misses
//! every cache costs more than one that hits L2; independent adds go no
//! slower than dependent ones; an atomic read-modify-write costs more than
//! a clock; a QSBR read side, which does nothing, costs less than a
//! reader-writer lock's read side, which writes a shared word — and the
//! JSON, verdict and bad input.

mod common;

use common::{assert_bad_input, locklab, stderr, stdout, tmp};
use serde_json::Value;

#[test]
fn table_1_and_the_primitives_in_one_run() {
    let (_d, db) = tmp();
    let o = locklab(&db, &["bench", "costs", "--secs", "0.03", "--reps", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("VERDICT"), "{text}");
    assert!(text.contains("read side"), "{text}");

    let j = locklab(&db, &["show", "last", "--json"]);
    assert!(j.status.success(), "{}", stderr(&j));
    let v: Value = serde_json::from_str(&stdout(&j)).expect("JSON");
    let points = v["points"].as_array().expect("points");
    let ns = |name: &str| -> f64 {
        points
            .iter()
            .find(|p| p["lock"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))["ns"]
            .as_f64()
            .unwrap_or_else(|| panic!("row {name} has no ns"))
    };
    for row in [
        "empty loop",
        "L2 hit",
        "atomic increment",
        "cmpxchg increment",
        "main memory",
        "CPU-local lock",
        "spin ticket",
        "rwlock read",
        "brlock write",
        "seqlock read",
        "rcu read",
        "rcu-qsbr read",
        "rcu synchronize",
        "rcu call",
    ] {
        let x = ns(row);
        assert!(x.is_finite() && x > 0.0, "{row}: {x}");
    }
    assert!(
        ns("main memory") > ns("L2 hit"),
        "memory {} ≤ L2 {}",
        ns("main memory"),
        ns("L2 hit")
    );
    assert!(ns("rcu-qsbr read") < ns("rwlock read"));
    // The loop alone costs less than a loop with an atomic in it: in an
    // optimized lab. The test profile builds the lab unoptimized (the
    // workspace's Cargo.toml says why), and there the loop's calls cost
    // about what a `lock xadd` does (12.4 against 11.9 ns on the lab's AMD
    // EPYC guest). The rows timed inside `asm!` do not depend on it.
    if !cfg!(debug_assertions) {
        assert!(ns("empty loop") < ns("atomic increment"));
    }
    if cfg!(target_arch = "x86_64") {
        assert!(ns("instruction") <= ns("clock cycle") * 1.1);
        assert!(ns("atomic increment") > ns("clock cycle"));
    }
    // Table 1's rows carry the seed's figure; the primitives' do not.
    let seed =
        |name: &str| points.iter().find(|p| p["lock"] == name).unwrap()["seed003_ns"].clone();
    assert_eq!(seed("atomic increment"), serde_json::json!([58.2, 58.2]));
    assert_eq!(seed("cache transfer"), serde_json::json!([170.4, 360.9]));
    assert!(seed("rcu read").is_null());
}

#[test]
fn bad_input_is_one_line() {
    let (_d, db) = tmp();
    assert_bad_input(&locklab(&db, &["bench", "costs", "--reps", "0"]), "0");
    assert_bad_input(&locklab(&db, &["bench", "costs", "--secs", "-1"]), "-1");
}
