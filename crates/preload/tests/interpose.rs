//! The interposer under an unmodified C program.
//!
//! `tests/c/pthread_check.c` exercises every pthread function the library
//! replaces (mutexes of each type and static initializer, condition
//! variables, reader-writer locks, spin locks, process-shared and robust
//! mutexes, fork) and their POSIX error codes, and exits 0 only if every
//! check held. It is compiled once per test process with the `cc` on PATH
//! and run:
//!
//! - alone, against glibc: the program itself is right;
//! - under `LD_PRELOAD` with `pthread`/`pthread-rw`: passing through
//!   changes nothing;
//! - under every mutex (with `rw-fair`) and every reader-writer lock (with
//!   `mutex`): each one gives an unmodified program POSIX's semantics (a
//!   few locks at full length, the rest `quick`, with a tenth of the
//!   contended iterations: see `FULL_LENGTH`);
//! - under `broken`, a mutex that excludes nothing, run `quick`: the
//!   program notices, so the runs above passing means something;
//! - with a bad or missing name: the library stops the program at load
//!   with exit code 2 and one line saying what is wrong.
//!
//! At most two programs run at once (the machine the suite is sized for
//! has two cores); each run is killed and failed after 60 s. Nothing here
//! asserts speed: a run's duration is only printed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{drain, interposer, Slot, MUTEXES};

/// The longest one run of the program may take before it is killed.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What the library reads, cleared before every run so that the test's own
/// environment cannot leak into one.
const CONFIG_VARS: [&str; 5] = [
    "LD_PRELOAD",
    "LOCKLAB_LOCK",
    "LOCKLAB_RWLOCK",
    "LOCKLAB_TEST_BROKEN",
    "LOCKLAB_PROFILE",
];

// ------------------------------------------------------------ the program

/// The compiled C program, built on first use (once per test process).
fn program() -> &'static Path {
    static PROGRAM: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| common::compile("pthread_check", &[])) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

// ------------------------------------------------------------------ runs

/// How one run ended.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// What a run was: its environment, as written on a command line.
fn describe(env: &[(&str, &str)], group: &str) -> String {
    let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{} pthread_check {group}", vars.join(" "))
}

/// Runs the program on `group` with `env` (and the library preloaded if
/// `preload`), in one of the slots; kills it and panics after `TIMEOUT`.
fn run(env: &[(&str, &str)], preload: bool, group: &str) -> Outcome {
    let program = program();
    let mut cmd = Command::new(program);
    cmd.args(group.split(' '))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in CONFIG_VARS {
        cmd.env_remove(var);
    }
    let mut shown: Vec<(&str, &str)> = Vec::new();
    if preload {
        cmd.env("LD_PRELOAD", interposer());
        shown.push(("LD_PRELOAD", "liblocklab_preload.so"));
    }
    for &(k, v) in env {
        cmd.env(k, v);
        shown.push((k, v));
    }
    let what = describe(&shown, group);

    let _slot = Slot::take();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {}: {e}", program.display()));
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                // What it had said so far (a forked child still holding the
                // pipes open ends by its own watchdog; do not wait on it).
                let err = stderr
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default();
                panic!("{what}: still running after {TIMEOUT:?}, killed; stderr:\n{err}");
            }
            Err(e) => panic!("{what}: cannot wait for the program: {e}"),
        }
    };
    let elapsed = start.elapsed();
    let text =
        |rx: mpsc::Receiver<String>| rx.recv_timeout(Duration::from_secs(35)).unwrap_or_default();
    let outcome = Outcome {
        status,
        stdout: text(stdout),
        stderr: text(stderr),
    };
    eprintln!(
        "{what}: {} in {elapsed:.2?}: {}",
        outcome.status,
        outcome.stdout.trim_end()
    );
    outcome
}

/// The program must pass `group` (`all`, or `all quick`: its contended
/// loops at a tenth of the iterations): exit 0, its summary on stdout,
/// nothing on stderr. A failure names the run and shows what the program
/// said.
fn must_pass(env: &[(&str, &str)], preload: bool, group: &str) {
    let o = run(env, preload, group);
    assert!(
        o.status.success() && o.stdout.starts_with("ok: ") && o.stderr.is_empty(),
        "{}: {}\nstderr:\n{}\nstdout:\n{}",
        describe(env, group),
        o.status,
        o.stderr,
        o.stdout
    );
}

/// The locks that run the whole program at full length; every other lock
/// runs it `quick` (each check, a tenth of the contended iterations),
/// which still catches a mutex that does not exclude
/// (`broken_mutex_is_caught` runs that way). One per kind of waiting: a
/// test-and-set spin lock, a queue lock, the sleeping default of each
/// kind.
const FULL_LENGTH: [&str; 4] = ["tas", "mcs", "mutex", "rwsem"];

/// `all`, or `all quick` for a lock not in [`FULL_LENGTH`].
fn length_for(name: &str) -> &'static str {
    if FULL_LENGTH.contains(&name) {
        "all"
    } else {
        "all quick"
    }
}

/// Every reader-writer lock the library offers.
const RWLOCKS: [&str; 5] = ["rw-reader", "rw-writer", "rw-fair", "brlock", "rwsem"];

/// The program under a mutex of the registry (and `rw-fair`).
fn under_mutex(name: &str) {
    assert!(MUTEXES.contains(&name), "{name} is not in MUTEXES");
    must_pass(
        &[("LOCKLAB_LOCK", name), ("LOCKLAB_RWLOCK", "rw-fair")],
        true,
        length_for(name),
    );
}

/// The program under a reader-writer lock of the registry (and `mutex`).
fn under_rwlock(name: &str) {
    assert!(RWLOCKS.contains(&name), "{name} is not in RWLOCKS");
    must_pass(
        &[("LOCKLAB_LOCK", "mutex"), ("LOCKLAB_RWLOCK", name)],
        true,
        length_for(name),
    );
}

// ----------------------------------------------------------------- tests

/// The program is right: glibc alone passes it.
#[test]
fn glibc_alone() {
    must_pass(&[], false, "all");
}

/// Preloaded but passing every call through to glibc: still passes.
#[test]
fn passthrough() {
    must_pass(
        &[
            ("LOCKLAB_LOCK", "pthread"),
            ("LOCKLAB_RWLOCK", "pthread-rw"),
        ],
        true,
        "all",
    );
}

/// One test per lock, so that a failure names its lock and one lock can be
/// run alone (`cargo test -p locklab-preload --test interpose mcs`).
macro_rules! lock_tests {
    ($under:ident: $($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                $under($name);
            }
        )*
    };
}

lock_tests! { under_mutex:
    mutex_tas => "tas",
    mutex_ttas => "ttas",
    mutex_backoff => "backoff",
    mutex_ticket => "ticket",
    mutex_ticket_backoff => "ticket-backoff",
    mutex_k42 => "k42",
    mutex_mcs => "mcs",
    mutex_clh => "clh",
    mutex_qspin => "qspin",
    mutex_mutex => "mutex",
    mutex_mutex_fixed => "mutex-fixed",
    mutex_futex3 => "futex3",
    mutex_c_bo_mcs => "c-bo-mcs",
    mutex_hmcs => "hmcs",
    mutex_cna => "cna",
    mutex_malthusian => "malthusian",
    mutex_mcs_tp => "mcs-tp",
    mutex_hemlock => "hemlock",
    mutex_twa => "twa",
    mutex_anderson => "anderson",
    mutex_spin_yield_ticket => "spin-yield(ticket)",
    mutex_spin_park_tas => "spin-park(tas)",
    mutex_spin_park_clh => "spin-park(clh)",
}

lock_tests! { under_rwlock:
    rwlock_rw_reader => "rw-reader",
    rwlock_rw_writer => "rw-writer",
    rwlock_rw_fair => "rw-fair",
    rwlock_brlock => "brlock",
    rwlock_rwsem => "rwsem",
}

/// Counting (`LOCKLAB_PROFILE`) changes nothing the program can see: it
/// passes as it does uncounted, saying on stderr only the one note that
/// its process-shared and robust mutexes are not counted, and its
/// processes leave their counts.
fn profiled(lock: &str, rwlock: &str) {
    let dir = std::env::temp_dir().join(format!(
        "locklab-interpose-profile-{}-{lock}-{rwlock}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let env = [
        ("LOCKLAB_LOCK", lock),
        ("LOCKLAB_RWLOCK", rwlock),
        ("LOCKLAB_PROFILE", d),
    ];
    // Quick: the profiler is under test here, not the locks.
    let o = run(&env, true, "all quick");
    let note = "locklab-preload: a process-shared, robust or priority-protocol lock is the C \
                library's own and is not profiled (noted once)";
    let stderr_ok = o.stderr.lines().all(|l| l == note);
    assert!(
        o.status.success() && o.stdout.starts_with("ok: ") && stderr_ok,
        "{}: {}\nstderr:\n{}\nstdout:\n{}",
        describe(&env, "all quick"),
        o.status,
        o.stderr,
        o.stdout
    );
    let written = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "prof"))
        .count();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        written >= 1,
        "{}: no profile written",
        describe(&env, "all quick")
    );
}

#[test]
fn profiled_passthrough() {
    profiled("pthread", "pthread-rw");
}

#[test]
fn profiled_mutex_rw_fair() {
    profiled("mutex", "rw-fair");
}

#[test]
fn profiled_mcs_brlock() {
    profiled("mcs", "brlock");
}

/// A spinning lock that also stands in for `pthread_spinlock_t`.
#[test]
fn profiled_ttas_rwsem() {
    profiled("ttas", "rwsem");
}

/// A mutex that does not exclude fails the program's mutex checks, with
/// the line of a failed check (exit 1, not a crash, a hang or a
/// configuration error): the passes above are evidence, not the program's
/// blindness.
#[test]
fn broken_mutex_is_caught() {
    let env = [("LOCKLAB_TEST_BROKEN", "1"), ("LOCKLAB_LOCK", "broken")];
    let o = run(&env, true, "mutex quick");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}: want exit 1 (a failed check), got {}\nstderr:\n{}",
        describe(&env, "mutex quick"),
        o.status,
        o.stderr
    );
    // Which mutex check catches it depends on the load: the contended
    // counter loses updates when its threads run on two cores at once;
    // otherwise the checks that another thread's lock, trylock and timed
    // locks are kept out while the mutex is held.
    assert!(
        o.stderr.starts_with("FAIL mutex") && o.stderr.lines().count() == 1,
        "want one FAIL line from a mutex check, got:\n{}",
        o.stderr
    );
}

/// The one line a configuration error must print, with exit code 2.
fn config_error(env: &[(&str, &str)]) -> String {
    let o = run(env, true, "all");
    let what = describe(env, "all");
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: want exit 2, got {}\nstderr:\n{}",
        o.status,
        o.stderr
    );
    assert!(
        o.stdout.is_empty(),
        "{what}: the program ran:\n{}",
        o.stdout
    );
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: want one line on stderr, got:\n{}",
        o.stderr
    );
    lines[0].to_string()
}

/// An unknown mutex stops the program at load, naming the bad value and
/// the valid names (each of the names tested above among them).
#[test]
fn unknown_mutex_exits_2() {
    let line = config_error(&[("LOCKLAB_LOCK", "nosuch")]);
    assert!(line.contains("nosuch") && line.contains("mcs"), "{line}");
    for name in MUTEXES {
        assert!(
            line.contains(name),
            "{name} is not among the valid names listed: {line}"
        );
    }
}

/// Likewise an unknown reader-writer lock.
#[test]
fn unknown_rwlock_exits_2() {
    let line = config_error(&[("LOCKLAB_LOCK", "mcs"), ("LOCKLAB_RWLOCK", "nosuch")]);
    assert!(
        line.contains("nosuch") && line.contains("rw-fair"),
        "{line}"
    );
}

/// Preloaded without a choice of mutex: the line names the variable.
#[test]
fn missing_mutex_exits_2() {
    let line = config_error(&[]);
    assert!(line.contains("LOCKLAB_LOCK"), "{line}");
}
