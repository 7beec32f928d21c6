//! One run of the user's program: started with the environment that puts
//! it under a lock, its output captured, its end awaited with `wait4` (for
//! the kernel's account of its CPU time), its peak memory sampled, killed
//! at the timeout.

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How the program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past the timeout and was killed.
    TimedOut,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "signal {s}"),
            Exit::TimedOut => write!(f, "timed out"),
        }
    }
}

/// One run's outcome.
#[derive(Debug)]
pub struct Outcome {
    /// Seconds from start to end.
    pub wall_s: f64,
    /// User CPU seconds of the program.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident memory of the program, KiB, as `/proc/PID/status`
    /// (`VmHWM`) showed it last, sampled every few milliseconds while it
    /// ran (0 if it ended before the first sample). Not the kernel's
    /// `ru_maxrss`, which counts the memory of the process the program was
    /// started from (the lab) as the program's.
    pub max_rss_kib: u64,
    /// How it ended.
    pub exit: Exit,
    /// What it wrote to stdout.
    pub stdout: Vec<u8>,
    /// What it wrote to stderr.
    pub stderr: Vec<u8>,
}

/// How to start the program.
pub struct Launch<'a> {
    /// The program and its arguments.
    pub command: &'a [OsString],
    /// Variables to set.
    pub set: Vec<(&'static str, OsString)>,
    /// Variables to remove.
    pub remove: &'a [&'static str],
    /// Longest run.
    pub timeout: Duration,
    /// Echo its output as it comes.
    pub show_output: bool,
}

/// Reads a pipe to its end, echoing it if asked.
fn drain(
    mut r: impl Read + Send + 'static,
    echo: Option<fn(&[u8])>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(e) = echo {
                        e(&buf[..n]);
                    }
                    all.extend_from_slice(&buf[..n]);
                }
            }
        }
        all
    })
}

/// Runs the program once. `Err` if it cannot be started.
pub fn run_once(l: &Launch<'_>) -> std::io::Result<Outcome> {
    let mut cmd = Command::new(&l.command[0]);
    cmd.args(&l.command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in l.remove {
        cmd.env_remove(v);
    }
    for (k, v) in &l.set {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let out = drain(
        child.stdout.take().expect("piped"),
        l.show_output.then_some(|b: &[u8]| {
            let _ = std::io::stdout().write_all(b);
        }),
    );
    let err = drain(
        child.stderr.take().expect("piped"),
        l.show_output.then_some(|b: &[u8]| {
            let _ = std::io::stderr().write_all(b);
        }),
    );
    // The end, from a thread of its own, so the wall time is read the
    // moment the kernel reports it and the timeout is a plain wait.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: a zeroed rusage is valid for the kernel to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = loop {
            // SAFETY: waits for our own child, writing to live locals.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            break r;
        };
        let _ = tx.send((r, status, usage, start.elapsed()));
    });
    // The program's peak memory, sampled while it runs (see
    // `Outcome::max_rss_kib`).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        // Until the child has replaced itself with the program, its memory
        // is the lab's (it is started by vfork): those samples, which bear
        // the lab's name, do not count.
        let ours = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            let mut peak = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(k) = vm_hwm_kib(&path, ours.trim()) {
                    peak = peak.max(k);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let mut timed_out = false;
    let (r, status, usage, wall) = match rx.recv_timeout(l.timeout) {
        Ok(v) => v,
        Err(_) => {
            timed_out = true;
            // SAFETY: our child, not yet reaped (the waiter has not
            // returned), so the pid is still its.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            rx.recv().expect("the waiter reports")
        }
    };
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak_kib = sampler.join().unwrap_or(0);
    // `wait4` reaped it: the `Child` must not wait again.
    drop(child);
    if r == -1 {
        return Err(std::io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let exit = if timed_out {
        Exit::TimedOut
    } else if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else {
        Exit::Signal(libc::WTERMSIG(status))
    };
    Ok(Outcome {
        wall_s: wall.as_secs_f64(),
        user_s: tv(usage.ru_utime),
        sys_s: tv(usage.ru_stime),
        max_rss_kib: peak_kib,
        exit,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// `VmHWM` of a `/proc/PID/status` file, KiB (`None` once the process is
/// gone or has no memory left, a zombie, or while it still bears the
/// name `not_yet`).
fn vm_hwm_kib(path: &str, not_yet: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let name = text.lines().find_map(|l| l.strip_prefix("Name:"))?.trim();
    if name == not_yet {
        return None;
    }
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
