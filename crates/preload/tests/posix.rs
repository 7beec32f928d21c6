//! The POSIX promises a conformance suite holds the interposer to, each a
//! case of `tests/c/posix_check.c`, run under every lock the interposer
//! accepts (as its own refusal of a bad name lists them, so that a lock
//! added to the registry is tested without a change here), and, as
//! references, against the C library alone and through the passthrough:
//!
//! - `misuse`: unlocking a default mutex one does not hold returns `EPERM`
//!   (and is counted in the profile) instead of crashing a queue lock;
//! - `cancel`: a thread cancelled in `pthread_cond_wait` or
//!   `pthread_cond_timedwait` acts on it, holding the mutex again when its
//!   first clean-up handler runs, and the condition variable still works;
//! - `destroy-cond`: a condition variable destroyed (its memory then
//!   reused) right after a broadcast does not strand the waiters it woke;
//! - `destroy-mutex`: a mutex destroyed and freed by the last unlocker of a
//!   reference-counted object;
//! - `binding`: a condition variable used with a second mutex once the
//!   waiters of the first were released;
//! - `enomem`: init with the address space exhausted returns `ENOMEM` (or
//!   works), and statically initialized objects still work;
//! - `rt-readers`: a `SCHED_FIFO` reader of higher priority than a waiting
//!   writer acquires (skipped, with a note, where `SCHED_FIFO` is not
//!   permitted).
//!
//! The mutex cases run under every mutex (with the C library's rwlock),
//! the rwlock cases under every rwlock (with `mutex`). Each run has the
//! program's own watchdog (20 s) and is killed after 60 s here; at most two
//! run at once. A test gathers every failing lock before it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{drain, interposer, Slot};

const TIMEOUT: Duration = Duration::from_secs(60);

/// What the library reads, cleared before every run.
const CONFIG_VARS: [&str; 6] = [
    "LD_PRELOAD",
    "LOCKLAB_LOCK",
    "LOCKLAB_RWLOCK",
    "LOCKLAB_TEST_BROKEN",
    "LOCKLAB_PROFILE",
    "LOCKLAB_MARK",
];

fn program() -> &'static Path {
    static PROGRAM: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| common::compile("posix_check", &[])) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// How one run ended: exit code (None: killed by a signal), stdout, stderr.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the program on `case` with `env`, preloaded if `preload`.
fn run(env: &[(&str, &str)], preload: bool, case: &str) -> Outcome {
    let mut cmd = Command::new(program());
    cmd.arg(case)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in CONFIG_VARS {
        cmd.env_remove(var);
    }
    if preload {
        cmd.env("LD_PRELOAD", interposer());
    }
    for &(k, v) in env {
        cmd.env(k, v);
    }
    let _slot = Slot::take();
    let start = Instant::now();
    let mut child = cmd.spawn().expect("the program starts");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let status = loop {
        match child.try_wait().expect("waiting for the program") {
            Some(s) => break s,
            None if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
            None => {
                let _ = child.kill();
                break child.wait().expect("waiting for the killed program");
            }
        }
    };
    let text = |rx: std::sync::mpsc::Receiver<String>| {
        rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default()
    };
    Outcome {
        code: status.code(),
        stdout: text(stdout),
        stderr: text(stderr),
    }
}

/// The names a variable accepts, as the interposer lists them when it
/// refuses a bad one (`… allowed a, b, c (see …)`), without the C
/// library's own.
fn accepted(var: &str, other: &[(&str, &str)], own: &str) -> Vec<String> {
    let mut env = other.to_vec();
    env.push((var, "no-such-lock"));
    let o = run(&env, true, "misuse");
    assert_eq!(o.code, Some(2), "a bad {var} was not refused: {}", o.stderr);
    let list = o
        .stderr
        .split_once("allowed ")
        .and_then(|(_, rest)| rest.split_once(" (see"))
        .unwrap_or_else(|| panic!("no list of names in: {}", o.stderr))
        .0;
    let names: Vec<String> = list
        .split(", ")
        .filter(|n| *n != own)
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 2, "too few names in: {}", o.stderr);
    names
}

fn mutexes() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| accepted("LOCKLAB_LOCK", &[], "pthread"))
}

fn rwlocks() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| accepted("LOCKLAB_RWLOCK", &[("LOCKLAB_LOCK", "mutex")], "pthread-rw"))
}

/// One configuration: a label, its environment, whether preloaded.
type Config = (String, Vec<(String, String)>, bool);

/// The references: the C library alone, and the passthrough.
fn references() -> Vec<Config> {
    vec![
        ("the C library".into(), vec![], false),
        (
            "LOCKLAB_LOCK=pthread".into(),
            vec![
                ("LOCKLAB_LOCK".into(), "pthread".into()),
                ("LOCKLAB_RWLOCK".into(), "pthread-rw".into()),
            ],
            true,
        ),
    ]
}

fn under_mutexes() -> Vec<Config> {
    let mut c = references();
    c.extend(mutexes().iter().map(|m| {
        (
            format!("LOCKLAB_LOCK={m}"),
            vec![("LOCKLAB_LOCK".into(), m.clone())],
            true,
        )
    }));
    c
}

fn under_rwlocks() -> Vec<Config> {
    let mut c = references();
    c.extend(rwlocks().iter().map(|r| {
        (
            format!("LOCKLAB_LOCK=mutex LOCKLAB_RWLOCK={r}"),
            vec![
                ("LOCKLAB_LOCK".into(), "mutex".into()),
                ("LOCKLAB_RWLOCK".into(), r.clone()),
            ],
            true,
        )
    }));
    c
}

/// Runs `case` under every configuration (two at a time) and fails with
/// the list of those where it failed; `check` may ask more of a passing
/// run's output (an error names what is missing). Returns the outputs.
fn case(
    case: &str,
    configs: Vec<Config>,
    check: impl Fn(&str, &str) -> Result<(), String> + Sync,
) -> Vec<(String, String)> {
    let next = Mutex::new(configs.into_iter());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..common::PARALLEL {
            s.spawn(|| loop {
                let Some((label, env, preload)) = next.lock().unwrap().next() else {
                    break;
                };
                let env: Vec<(&str, &str)> =
                    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let start = Instant::now();
                let o = run(&env, preload, case);
                let verdict = match o.code {
                    Some(0) if o.stderr.is_empty() && o.stdout.starts_with("skip: ") => Ok(()),
                    Some(0) if o.stderr.is_empty() && o.stdout.starts_with("ok: ") => {
                        check(&label, &o.stdout)
                    }
                    code => Err(format!(
                        "exit {code:?}: {}{}",
                        o.stderr.trim_end(),
                        o.stdout.trim_end()
                    )),
                };
                eprintln!(
                    "{case} under {label}: {:.2?}: {}",
                    start.elapsed(),
                    match &verdict {
                        Ok(()) => o.stdout.trim_end().to_string(),
                        Err(e) => format!("FAILED: {e}"),
                    }
                );
                results.lock().unwrap().push((label, o.stdout, verdict));
            });
        }
    });
    let results = results.into_inner().unwrap();
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(label, _, v)| v.as_ref().err().map(|e| format!("  {label}: {e}")))
        .collect();
    assert!(
        failed.is_empty(),
        "posix_check {case} failed under {} of {} configurations:\n{}",
        failed.len(),
        results.len(),
        failed.join("\n")
    );
    results.into_iter().map(|(l, out, _)| (l, out)).collect()
}

fn any(_: &str, _: &str) -> Result<(), String> {
    Ok(())
}

/// Misuse of a default mutex: `EPERM` under every mutex of locklab's.
#[test]
fn misuse_of_a_default_mutex() {
    case("misuse", under_mutexes(), |label, out| {
        if label.starts_with("LOCKLAB_LOCK=") && !label.contains("=pthread") && !out.contains("(6 ")
        {
            return Err(format!("want 6 unlocks refused: {out}"));
        }
        Ok(())
    });
}

/// The refused unlocks are counted in the profile, as `misuse N`.
#[test]
fn misuse_is_counted_in_the_profile() {
    let dir = std::env::temp_dir().join(format!("locklab-posix-misuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = run(
        &[
            ("LOCKLAB_LOCK", "mcs"),
            ("LOCKLAB_PROFILE", dir.to_str().unwrap()),
        ],
        true,
        "misuse",
    );
    assert_eq!(o.code, Some(0), "{}{}", o.stderr, o.stdout);
    let profiles: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(profiles.len(), 1, "want one profile");
    assert!(
        profiles[0].lines().any(|l| l == "misuse 6"),
        "no `misuse 6` in the profile:\n{}",
        profiles[0]
    );
}

#[test]
fn cancellation_in_a_condition_wait() {
    case("cancel", under_mutexes(), any);
}

#[test]
fn condvar_destroyed_after_broadcast() {
    case("destroy-cond", under_mutexes(), any);
}

#[test]
fn mutex_destroyed_by_the_last_unlocker() {
    case("destroy-mutex", under_mutexes(), any);
}

#[test]
fn condvar_binding_ends_with_the_released_waiters() {
    case("binding", under_mutexes(), any);
}

/// `ENOMEM` from init once the address space is exhausted; under a lock
/// whose cell lives beside the object (mcs, brlock) the limit must have
/// been reached (else the case proved nothing), and condition variables,
/// whose state lives beside theirs under every lock, likewise.
///
/// Not under CLH and its adapters: a fresh CLH lock takes a queue node
/// from the library's node pool when it is first acquired, and the pool
/// ends the process when it cannot grow (docs/programs.md).
#[test]
fn init_with_the_address_space_exhausted() {
    let mut configs = under_mutexes();
    configs.retain(|(label, _, _)| !label.contains("clh"));
    configs.extend(under_rwlocks().into_iter().skip(2));
    let outs = case("enomem", configs, |label, out| {
        let nomem = |what: &str| {
            out.split_once(what)
                .and_then(|(_, r)| r.split(" ok ").nth(1))
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let ours = !label.contains("pthread") && label.starts_with("LOCKLAB");
        if ours && nomem("cond_init") == 0 {
            return Err(format!("no cond_init returned ENOMEM: {out}"));
        }
        if label == "LOCKLAB_LOCK=mcs" && nomem("mutex_init") == 0 {
            return Err(format!("no mutex_init returned ENOMEM: {out}"));
        }
        if label.ends_with("LOCKLAB_RWLOCK=brlock") && nomem("rwlock_init") == 0 {
            return Err(format!("no rwlock_init returned ENOMEM: {out}"));
        }
        Ok(())
    });
    assert!(outs.len() > 7);
}

/// Not under `brlock`, whose writer takes each CPU's lock in turn and so
/// cannot be passed (its module documentation, and docs/programs.md).
#[test]
fn realtime_readers_pass_a_waiting_writer_of_lower_priority() {
    let mut configs = under_rwlocks();
    configs.retain(|(label, _, _)| !label.ends_with("=brlock"));
    case("rt-readers", configs, any);
}
