//! A condition variable's hand-off under spin locks: `tests/c/cond_handoff.c`
//! (two threads pass a turn back and forth through a pthread condition
//! variable, signalling with the mutex held) runs under the sleeping
//! `mutex` and under the spin locks `ticket`, `mcs` and `tas`, rounds
//! interleaved, and each spin lock's median rate of hand-offs must be at
//! least a fifth of `mutex`'s in the same run.
//!
//! Why this can fail: a waiter woken while its signaller still holds a spin
//! lock spins for it, and where it woke on the signaller's CPU (a woken
//! thread may preempt the one that woke it) it spins while the holder it
//! waits for cannot run, until the scheduler's tick. On a loaded machine
//! that made every hand-off under a spin lock cost milliseconds, 100 to 500
//! times slower than under `mutex` (issue 32). The interposer now defers a
//! signal made under the mutex to the mutex's release (`src/cond.rs`), and
//! the rates are within a few tens of percent of each other.
//!
//! The bound is a relation that holds on any machine with the defect fixed
//! (nothing spins on a held lock in this program), not a timing: on an idle
//! machine with many cores the defect itself may not show (the waiter
//! wakes on a CPU of its own and spins a microsecond), so passing there
//! proves less. The rates are printed (`--nocapture`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{drain, interposer};

/// The window of one run, in ms.
const WINDOW_MS: u32 = 300;
/// Runs of each lock, interleaved.
const ROUNDS: usize = 5;
/// The spin locks held to the bound.
const SPIN: [&str; 3] = ["ticket", "mcs", "tas"];
/// A spin lock's median rate over `mutex`'s must be at least this.
const BOUND: f64 = 0.2;
/// The longest one run may take.
const TIMEOUT: Duration = Duration::from_secs(60);

fn program() -> &'static Path {
    static PROGRAM: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| common::compile("cond_handoff", &[])) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// One measurement at a time in this process: two programs side by side
/// would measure each other.
static MEASURING: Mutex<()> = Mutex::new(());

/// Hand-offs per second of one run in `mode` under `lock` (`None`: the C
/// library alone).
fn rate(lock: Option<&str>, mode: &str) -> f64 {
    let mut cmd = Command::new(program());
    cmd.args([mode, &WINDOW_MS.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "LD_PRELOAD",
        "LOCKLAB_LOCK",
        "LOCKLAB_RWLOCK",
        "LOCKLAB_PROFILE",
    ] {
        cmd.env_remove(var);
    }
    if let Some(l) = lock {
        cmd.env("LD_PRELOAD", interposer()).env("LOCKLAB_LOCK", l);
    }
    let what = format!(
        "cond_handoff {mode} under {}",
        lock.unwrap_or("the C library")
    );
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let (out, err) = (
        drain(child.stdout.take().expect("piped")),
        drain(child.stderr.take().expect("piped")),
    );
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after {TIMEOUT:?}, killed");
            }
            Err(e) => panic!("{what}: {e}"),
        }
    };
    let (out, err) = (
        out.recv_timeout(TIMEOUT).unwrap_or_default(),
        err.recv_timeout(TIMEOUT).unwrap_or_default(),
    );
    assert!(status.success(), "{what}: {status}\n{out}{err}");
    out.lines()
        .find_map(|l| l.strip_prefix("handoffs/s: "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("{what}: no rate in its output:\n{out}{err}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `mode`'s rates under `mutex` and the spin locks, rounds interleaved;
/// every spin lock within [`BOUND`] of `mutex`.
fn spin_locks_hand_off_near_mutex(mode: &str) {
    let _one = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let locks: Vec<&str> = std::iter::once("mutex").chain(SPIN).collect();
    let mut rates = vec![Vec::new(); locks.len()];
    let mut glibc = Vec::new();
    for _ in 0..ROUNDS {
        glibc.push(rate(None, mode));
        for (i, l) in locks.iter().enumerate() {
            rates[i].push(rate(Some(l), mode));
        }
    }
    let base = median(rates[0].clone());
    eprintln!(
        "{mode}: C library alone {:.0}/s (median of {ROUNDS})",
        median(glibc)
    );
    let mut slow = Vec::new();
    for (l, r) in locks.iter().zip(&rates) {
        let m = median(r.clone());
        eprintln!(
            "{mode}: {l:<6} {m:>9.0} hand-offs/s, {:.2}x mutex (runs: {r:.0?})",
            m / base
        );
        if m < BOUND * base {
            slow.push(format!("{l} {:.3}x", m / base));
        }
    }
    assert!(
        slow.is_empty(),
        "{mode}: hand-offs under spin locks slower than {BOUND}x those under mutex: {}",
        slow.join(", ")
    );
}

/// `pthread_cond_signal` with the mutex held.
#[test]
fn signal_under_the_mutex() {
    spin_locks_hand_off_near_mutex("signal");
}

/// `pthread_cond_broadcast` with the mutex held.
#[test]
fn broadcast_under_the_mutex() {
    spin_locks_hand_off_near_mutex("broadcast");
}
