//! `locklab advise`: on a stated small workload it names a lock that
//! `locklab locks` lists, with evidence marked measured (and, with
//! `--cores-model`, a line labelled as the model's prediction; with `--vm`,
//! one labelled simulated); `--json` has the recommendation; the stored run
//! shows the same advice; bad input is one line and exit 2. Relations
//! only, never timings.

mod common;

use common::{assert_bad_input, locklab, stderr, stdout, tmp};
use serde_json::Value;

/// The small workload every test measures: two locks, short repetitions.
const SMALL: [&str; 12] = [
    "advise",
    "--threads",
    "2",
    "--cs-ns",
    "100",
    "--delay-ns",
    "200",
    "--secs",
    "0.02",
    "--reps",
    "2",
    "--locks",
];

fn args<'a>(locks: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = SMALL.to_vec();
    v.push(locks);
    v.extend_from_slice(more);
    v
}

/// The names `locklab locks` lists (the first column of its rows).
fn listed_locks(db: &std::path::Path) -> Vec<String> {
    let o = locklab(db, &["locks"]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The verdict's line for `question`, if printed.
fn verdict_line<'a>(text: &'a str, question: &str) -> Option<&'a str> {
    text.lines().find(|l| l.trim_start().starts_with(question))
}

/// The verdict line whose question is `question` with the lines its
/// evidence wraps onto (indented deeper than it), joined by spaces: where
/// the text wraps depends on the widths of the measured numbers.
fn verdict_block(text: &str, question: &str) -> Option<String> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(question));
    let first = lines.next()?;
    let mut block = first.trim().to_string();
    for l in lines.take_while(|l| !l.trim().is_empty() && indent(l) > indent(first)) {
        block.push(' ');
        block.push_str(l.trim());
    }
    Some(block)
}

#[test]
fn a_stated_workload_names_a_listed_lock_with_measured_evidence() {
    let (_d, db) = tmp();
    let o = locklab(&db, &args("ticket,mutex,pthread", &["--cores-model", "16"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let rec = verdict_line(&text, "recommended").expect("a recommended line");
    let lock = rec
        .split_whitespace()
        .nth(1)
        .expect("a lock after `recommended`");
    assert!(
        listed_locks(&db).iter().any(|l| l == lock),
        "{lock} not listed"
    );
    assert!(
        ["ticket", "mutex", "pthread"].contains(&lock),
        "{lock}: not a candidate"
    );
    let runner = verdict_line(&text, "runner-up").expect("a runner-up line");
    assert!(
        !runner.contains(&format!(" {lock} ")),
        "runner-up is the recommendation: {runner}"
    );
    let tput = verdict_block(&text, "throughput").expect("a throughput line");
    assert!(tput.contains("measured"), "{tput}");
    assert!(tput.contains('×'), "no ratio: {tput}");
    assert!(verdict_line(&text, "CPU per acquisition").is_some_and(|l| l.contains("measured")));
    // --cores-model: labelled a model's prediction, never measured.
    let model = verdict_line(&text, "at 16 cores").expect("a model line");
    assert!(model.contains("model prediction (assumes"), "{model}");
    // Its kind column says model (the claim may mention what was measured).
    assert_eq!(model.split_whitespace().nth(3), Some("model"), "{model}");
    // Every candidate has a row in the measured table.
    for l in ["ticket", "mutex", "pthread"] {
        assert!(
            text.lines()
                .any(|t| t.trim_start().starts_with(&format!("{l} "))),
            "{l}: no row"
        );
    }
    // The stored run shows the same recommendation.
    let s = locklab(&db, &["show", "last"]);
    assert!(s.status.success(), "{}", stderr(&s));
    let shown = stdout(&s);
    assert_eq!(
        verdict_line(&shown, "recommended").and_then(|l| l.split_whitespace().nth(1)),
        Some(lock)
    );
}

#[test]
fn without_locks_it_measures_the_locks_that_fit_an_oversubscribed_workload() {
    let (_d, db) = tmp();
    let threads = (locklab_lab::core::machine::cpus() + 1).to_string();
    let o = locklab(
        &db,
        &[
            "advise",
            "--json",
            "--threads",
            &threads,
            "--cs-ns",
            "100",
            "--delay-ns",
            "200",
            "--secs",
            "0.02",
            "--reps",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let measured: Vec<&str> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["lock"].as_str().unwrap())
        .collect();
    for l in ["mutex", "mcs", "malthusian", "mcs-tp"] {
        assert!(measured.contains(&l), "{l} not measured: {measured:?}");
    }
    let verdict = v["verdict"].to_string();
    for l in ["malthusian", "mcs-tp"] {
        assert!(
            verdict.contains(&format!("{l} was measured because {threads} threads on")),
            "no note on {l}: {verdict}"
        );
    }
}

#[test]
fn json_has_the_recommendation_and_its_evidence_kinds() {
    let (_d, db) = tmp();
    let mut a = vec!["--json"];
    a.extend(args(
        "ttas,futex3",
        &["--vm", "--cores-model", "8", "--read-pct", "90"],
    ));
    let o = locklab(&db, &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let r = &v["recommendation"];
    let lock = r["lock"].as_str().expect("recommendation.lock");
    let runner = r["runner_up"].as_str().expect("recommendation.runner_up");
    assert!(["ttas", "futex3"].contains(&lock) && ["ttas", "futex3"].contains(&runner));
    assert_ne!(lock, runner);
    let kinds: Vec<&str> = r["evidence"]
        .as_array()
        .expect("evidence list")
        .iter()
        .map(|e| e["kind"].as_str().expect("a kind"))
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| ["measured", "model", "simulated"].contains(k)),
        "{kinds:?}"
    );
    for k in ["measured", "model", "simulated"] {
        assert!(kinds.contains(&k), "no {k} evidence: {kinds:?}");
    }
    assert_eq!(v["workload"]["threads"], 2);
    assert_eq!(v["points"].as_array().map(Vec::len), Some(2));
    // The read fraction is measured: the read-mostly mechanisms over one
    // table at 10 % updates, each a point, the best named with measured
    // evidence.
    let mostly: Vec<&str> = v["read_mostly_points"]
        .as_array()
        .expect("read_mostly_points")
        .iter()
        .map(|p| p["strategy"].as_str().expect("a strategy"))
        .collect();
    let expected = [
        "global-spin",
        "global-rw(rw-fair)",
        "brlock",
        "seqlock",
        "rcu",
    ];
    assert_eq!(mostly, expected, "{}", v["read_mostly_points"]);
    let best = r["read_mostly"]
        .as_str()
        .expect("recommendation.read_mostly");
    assert!(
        expected.iter().any(|s| best.contains(s)),
        "{best}: not a measured mechanism"
    );
    let line = r["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["topic"] == "read-mostly")
        .expect("read-mostly evidence");
    assert_eq!(line["kind"], "measured");
    assert!(
        line["claim"].as_str().unwrap().contains("10 % updates"),
        "{line}"
    );
    // The simulated evidence says it is simulated.
    let sim = r["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "simulated")
        .unwrap();
    assert!(sim["claim"].as_str().unwrap().starts_with("simulated"));
}

/// `--cores N --sockets M` (`--cores` is `--cores-model`'s alias): the
/// candidates the spin-lock simulator knows, on the machine named, as
/// simulated evidence with each lock's rate; the others are left out of
/// it.
#[test]
fn a_named_machine_is_simulated_for_the_spin_locks_among_the_candidates() {
    let (_d, db) = tmp();
    let mut a = vec!["--json"];
    a.extend(args(
        "ticket,mcs,mutex",
        &["--cores", "16", "--sockets", "2"],
    ));
    let o = locklab(&db, &a);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let e = v["recommendation"]["evidence"]
        .as_array()
        .expect("evidence list")
        .iter()
        .find(|e| e["topic"] == "on 16 cores, 2 sockets")
        .unwrap_or_else(|| panic!("no simulated machine: {}", v["recommendation"]));
    assert_eq!(e["kind"], "simulated");
    let locks: Vec<&str> = e["data"]["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lock"].as_str().unwrap())
        .collect();
    // Fastest first; mutex is no spin lock of the simulator's.
    assert_eq!(locks, ["mcs", "ticket"]);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let (_d, db) = tmp();
    assert_bad_input(
        &locklab(&db, &["advise", "--sockets", "2"]),
        "--cores-model",
    );
    assert_bad_input(
        &locklab(&db, &["advise", "--cores-model", "4", "--sockets", "17"]),
        "allowed 1 to 16",
    );
    assert_bad_input(
        &locklab(&db, &["advise", "--cores-model", "2", "--sockets", "4"]),
        "4 sockets for 2 cores: allowed 1 to 2",
    );
    assert_bad_input(&locklab(&db, &["advise", "--read-pct", "101"]), "101");
    assert_bad_input(&locklab(&db, &["advise", "--threads", "0"]), "0");
    assert_bad_input(&locklab(&db, &["advise", "--cores-model", "0"]), "'0'");
    assert_bad_input(&locklab(&db, &["advise", "--locks", "nosuch"]), "'nosuch'");
    assert_bad_input(
        &locklab(&db, &["advise", "--locks", "rw-fair"]),
        "reader-writer",
    );
    assert_bad_input(&locklab(&db, &["advise", "--secs", "0"]), "'0'");
    // No database yet: nothing to take a profile from.
    assert_bad_input(
        &locklab(&db, &["advise", "--profile", "last"]),
        "no such database",
    );
    // A stored run that is not a profile.
    let o = locklab(&db, &args("tas", &[]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_bad_input(
        &locklab(&db, &["advise", "--profile", "last"]),
        "not a `locklab profile` run",
    );
}
