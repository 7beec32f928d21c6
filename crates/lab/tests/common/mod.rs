//! What every CLI test file needs: running the `locklab` binary against a
//! database of its own, reading its output, and the bad-input check.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `locklab --db DB ARGS`.
pub fn locklab(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("running locklab")
}

/// `o`, after checking that the command succeeded (its output if not).
pub fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
    o
}

/// A short benchmark that stores one run of two points.
pub const SHORT_BENCH: [&str; 11] = [
    "bench",
    "spin",
    "--locks",
    "tas",
    "--threads",
    "1,2",
    "--secs",
    "0.02",
    "--reps",
    "1",
    "-q",
];

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit code 2, no panic, and one line naming `needle`.
pub fn assert_bad_input(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

/// Runs `locklab --db DB ARGS` and asserts [`assert_bad_input`], and that
/// the rejected command left no database behind (`db` did not exist).
pub fn assert_rejected(db: &Path, args: &[&str], needle: &str) {
    assert_bad_input(&locklab(db, args), needle);
    assert!(
        !db.exists(),
        "{args:?}: a rejected command made the database"
    );
}

/// A temporary directory and a database path in it (not created).
pub fn tmp() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("t.db");
    (d, db)
}

/// Relative difference of `a` from `b`.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// The repairman's throughput from Erlang's loss formula, written out
/// here independently of the model crate: X(N) = (1 − B(N, Z/S))/S.
pub fn erlang_x(s: f64, z: f64, n: u32) -> f64 {
    let a = z / s;
    let mut b = 1.0;
    for k in 1..=n {
        b = a * b / (f64::from(k) + a * b);
    }
    (1.0 - b) / s
}

/// Compiles `tests/c/<name>.c` (warnings are errors) with the `cc` on PATH
/// into a directory of this test process's own; panics with the
/// compiler's message if it fails.
pub fn compile_c(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static BUILDS: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("locklab-{name}-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(name);
    // Tests of one binary run side by side and may compile the same
    // program: each writes its own file and renames it into place, so no
    // test ever runs a binary another is still writing.
    let tmp = dir.join(format!(
        "{name}.{}.tmp",
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let o = std::process::Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .expect("a C compiler, `cc`, on PATH");
    assert!(
        o.status.success(),
        "cc failed on {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::rename(&tmp, &bin).unwrap();
    bin
}
