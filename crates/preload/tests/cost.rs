//! `interposer-cost` (src/bin/interposer-cost.rs), held to its known
//! answers: without the interposer, the C library's pair reached through
//! the program's symbol and through the C library's own gives a ratio of
//! 1, and two pairs counted as one give 2. Those are what its figures for
//! the interposer stand on (a difference or ratio of two sides measured in
//! one process, repetition by repetition); a harness that counted pairs
//! or time wrongly for one side would miss them. The interposer's own
//! figures are printed, never asserted (they are timings). Bad arguments
//! get one line and exit code 2.

use std::process::Command;

mod common;
use common::interposer;

fn cost() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_interposer-cost"));
    for var in [
        "LD_PRELOAD",
        "LOCKLAB_LOCK",
        "LOCKLAB_PRELOAD",
        "LOCKLAB_PROFILE",
    ] {
        c.env_remove(var);
    }
    c
}

/// The value after `key` on the `result` line.
fn field(out: &str, key: &str) -> f64 {
    let line = out
        .lines()
        .find(|l| l.starts_with("result "))
        .unwrap_or_else(|| panic!("no result line in:\n{out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == key)
        .unwrap_or_else(|| panic!("no {key} in '{line}'"));
    words[at + 1]
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number in '{line}'"))
}

#[test]
fn the_harness_gives_its_known_answers() {
    let out = cost()
        .args([
            "--reps",
            "41",
            "--pairs",
            "20000",
            "--procs",
            "1",
            "--preload",
        ])
        .arg(interposer())
        .output()
        .expect("interposer-cost runs");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "interposer-cost failed: {}",
        out.status
    );
    let same = field(&text, "same");
    assert!(
        (0.9..=1.1).contains(&same),
        "the same pair measured twice gave a ratio of {same}, not 1"
    );
    let twice = field(&text, "twice");
    assert!(
        (1.8..=2.2).contains(&twice),
        "two pairs counted as one gave a ratio of {twice}, not 2"
    );
    // The interposer's figures exist (their values are the machine's).
    assert!(field(&text, "passthrough_ns").is_finite());
    assert!(field(&text, "mutex_ratio") > 0.0);
}

#[test]
fn bad_arguments_get_one_line_and_exit_code_2() {
    for (args, names) in [
        (&["--reps", "0"][..], &["--reps", "'0'", "1 to 1000"][..]),
        (&["--pairs", "ten"], &["--pairs", "'ten'"]),
        (&["--procs"], &["--procs needs a value"]),
        (&["--frobnicate"], &["'--frobnicate' is not an argument"]),
    ] {
        let out = cost().args(args).output().expect("interposer-cost runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for n in names {
            assert!(err.contains(n), "{args:?}: '{err}' does not say {n}");
        }
    }
    let out = cost()
        .args(["--preload", "/nonexistent/liblocklab_preload.so"])
        .output()
        .expect("interposer-cost runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no such file"), "{err}");
}
