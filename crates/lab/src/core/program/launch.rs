//! One run of the user's program: started with the environment that puts
//! it under a lock, in a process group of its own; its output read as it
//! comes, keeping a bounded tail; its end awaited with `wait4` (for the
//! kernel's account of its CPU time); its peak memory sampled; its whole
//! group ended at the timeout, on Ctrl-C and on SIGTERM.
//!
//! **The lab answers for what it starts.** The program is the leader of a
//! new process group (`setpgid`), so everything it starts that does not
//! leave the group on purpose can be found and ended: with SIGTERM (and
//! SIGCONT, for a stopped member), then SIGKILL after [`GRACE`]. The lab
//! stops waiting the moment the program itself exits, whatever its
//! children still hold open: what is left of its group then is ended the
//! same way and counted ([`Outcome::left`]), so no repetition leaks into
//! the next and the wall time is the program's own. A descendant that
//! calls `setsid` (a daemon) leaves the group and is not chased; if it
//! still holds the program's output open, the lab reads on for [`DRAIN`]
//! and then stops ([`Outcome::held`]).
//!
//! **Output is not kept whole.** Each stream keeps its last [`TAIL`] bytes
//! (for messages: the last line of stderr), and `--metric` reads the
//! output line by line as it streams ([`Lines`]), so the lab's memory does
//! not grow with what the program prints.

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the program's group has between SIGTERM and SIGKILL: long
/// enough for a program to act on SIGTERM, short enough that a timeout or
/// a Ctrl-C ends promptly.
pub const GRACE: Duration = Duration::from_secs(1);

/// How long the output is read after the program has exited and its group
/// has been ended, for what a process outside the group (one that called
/// `setsid`) may still hold open.
pub const DRAIN: Duration = Duration::from_millis(500);

/// Bytes kept of each of stdout and stderr: the last MiB.
pub const TAIL: usize = 1 << 20;

/// Longest line `--metric` looks at: a longer one is cut to its first
/// 64 KiB (a figure is printed on a short line).
const LINE_MAX: usize = 64 << 10;

/// How often the lab looks at the clock, the interrupt flag and the group
/// while it waits.
const POLL: Duration = Duration::from_millis(10);

/// How the program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past the timeout and its group was ended.
    TimedOut,
    /// The user stopped the lab (Ctrl-C, SIGTERM) and its group was ended.
    Interrupted,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => match signal_name(*s) {
                Some(n) => write!(f, "signal {s} ({n})"),
                None => write!(f, "signal {s}"),
            },
            Exit::TimedOut => write!(f, "timed out"),
            Exit::Interrupted => write!(f, "interrupted"),
        }
    }
}

/// The usual name of a signal that ends programs.
fn signal_name(s: i32) -> Option<&'static str> {
    Some(match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// One run's outcome.
#[derive(Debug)]
pub struct Outcome {
    /// Seconds from start to the program's own end (not its children's).
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
    /// The last [`TAIL`] bytes it wrote to stdout.
    pub stdout: Vec<u8>,
    /// The last [`TAIL`] bytes it wrote to stderr.
    pub stderr: Vec<u8>,
    /// The figure of [`Launch::metric`], if asked and found.
    pub metric: Option<f64>,
    /// Processes of its group still running when it exited by itself,
    /// which the lab then ended.
    pub left: usize,
    /// Whether its output was still held open [`DRAIN`] after it exited
    /// and its group was ended (by a process that left the group), so
    /// that the lab stopped reading it there.
    pub held: bool,
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
    /// A figure to read from its output as it streams: group 1 of the
    /// first line that matches, in stdout, else in stderr ([`Lines`]).
    pub metric: Option<regex_lite::Regex>,
}

/// The last [`TAIL`] bytes of a stream. It holds at most twice that, and
/// moves the kept part to the front once per [`TAIL`] bytes written, so
/// keeping it costs about one copy of the output.
#[derive(Default)]
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, b: &[u8]) {
        if b.len() >= TAIL {
            self.0.clear();
            self.0.extend_from_slice(&b[b.len() - TAIL..]);
            return;
        }
        self.0.extend_from_slice(b);
        if self.0.len() > 2 * TAIL {
            let cut = self.0.len() - TAIL;
            self.0.drain(..cut);
        }
    }

    fn into_vec(mut self) -> Vec<u8> {
        if self.0.len() > TAIL {
            let cut = self.0.len() - TAIL;
            self.0.drain(..cut);
        }
        self.0
    }
}

/// `--metric` over a stream as it comes: each line (up to `LINE_MAX`
/// bytes of it) is matched on its own, and the first line whose match's
/// group 1 is a finite number gives the figure; the rest of the stream is
/// not looked at. The first occurrence counts, as it did when the whole
/// output was kept and searched; a line is the unit so that nothing but
/// the line being read has to be kept.
pub struct Lines {
    re: regex_lite::Regex,
    line: Vec<u8>,
    found: Option<f64>,
}

impl Lines {
    /// A reader of the figure that `re`'s group 1 matches.
    pub fn new(re: regex_lite::Regex) -> Self {
        Lines {
            re,
            line: Vec::new(),
            found: None,
        }
    }

    /// Reads the next bytes of the stream.
    pub fn push(&mut self, mut b: &[u8]) {
        while self.found.is_none() {
            match b.iter().position(|&c| c == b'\n') {
                Some(i) => {
                    self.take(&b[..i]);
                    self.end_line();
                    b = &b[i + 1..];
                }
                None => {
                    self.take(b);
                    return;
                }
            }
        }
    }

    fn take(&mut self, b: &[u8]) {
        let room = LINE_MAX - self.line.len();
        self.line.extend_from_slice(&b[..b.len().min(room)]);
    }

    fn end_line(&mut self) {
        let text = String::from_utf8_lossy(&self.line);
        self.found = self
            .re
            .captures(&text)
            .and_then(|c| c.get(1)?.as_str().trim().parse::<f64>().ok())
            .filter(|x| x.is_finite());
        self.line.clear();
    }

    /// The figure, once the stream has ended (its last line need not end
    /// with a newline).
    pub fn finish(mut self) -> Option<f64> {
        if self.found.is_none() && !self.line.is_empty() {
            self.end_line();
        }
        self.found
    }
}

/// One of the program's output streams, as the reader keeps it.
struct Stream<R> {
    pipe: Option<R>,
    tail: Tail,
    lines: Option<Lines>,
    echo: fn(&[u8]),
}

impl<R: Read + AsRawFd> Stream<R> {
    fn new(pipe: R, metric: Option<&regex_lite::Regex>, echo: fn(&[u8])) -> Self {
        Stream {
            pipe: Some(pipe),
            tail: Tail::default(),
            lines: metric.cloned().map(Lines::new),
            echo,
        }
    }

    /// Reads what the pipe has (it polled ready); drops the pipe at its end.
    fn read(&mut self, buf: &mut [u8]) {
        let Some(p) = &mut self.pipe else { return };
        match p.read(buf) {
            Ok(0) => self.pipe = None,
            Ok(n) => {
                (self.echo)(&buf[..n]);
                self.tail.push(&buf[..n]);
                if let Some(l) = &mut self.lines {
                    l.push(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => self.pipe = None,
        }
    }

    fn fd(&self) -> i32 {
        self.pipe.as_ref().map_or(-1, |p| p.as_raw_fd())
    }
}

/// What the reader gives back: both tails, the figure, and whether a pipe
/// was still open when it stopped.
type Read2 = (Vec<u8>, Vec<u8>, Option<f64>, bool);

/// Reads both pipes in one thread (`poll`), until both end or, once the
/// program has exited and its group has been ended, until `stop` (set
/// then to the instant to give up) passes. Dropping a pipe closes the
/// lab's end, so a process still writing to it gets EPIPE, not a lab
/// that waits for it.
fn reader(
    out: ChildStdout,
    err: ChildStderr,
    show: bool,
    metric: Option<&regex_lite::Regex>,
    stop: Arc<Mutex<Option<Instant>>>,
) -> std::thread::JoinHandle<Read2> {
    let quiet: fn(&[u8]) = |_| {};
    let to_out: fn(&[u8]) = |b| {
        let _ = std::io::stdout().write_all(b);
    };
    let to_err: fn(&[u8]) = |b| {
        let _ = std::io::stderr().write_all(b);
    };
    let mut o = Stream::new(out, metric, if show { to_out } else { quiet });
    let mut e = Stream::new(err, metric, if show { to_err } else { quiet });
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        while o.pipe.is_some() || e.pipe.is_some() {
            let until = *stop.lock().unwrap_or_else(|p| p.into_inner());
            let wait = match until {
                Some(t) => match t.checked_duration_since(Instant::now()) {
                    Some(d) if !d.is_zero() => d.min(Duration::from_millis(50)),
                    _ => break,
                },
                None => Duration::from_millis(50),
            };
            let mut fds = [
                libc::pollfd {
                    fd: o.fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: e.fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two live pollfd structs; a negative fd is skipped.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, wait.as_millis() as i32) };
            if n <= 0 {
                continue;
            }
            if fds[0].revents != 0 {
                o.read(&mut buf);
            }
            if fds[1].revents != 0 {
                e.read(&mut buf);
            }
        }
        let held = o.pipe.is_some() || e.pipe.is_some();
        let figure = [o.lines.take(), e.lines.take()]
            .into_iter()
            .find_map(|l| l.and_then(Lines::finish));
        (o.tail.into_vec(), e.tail.into_vec(), figure, held)
    })
}

/// Runs the program once. `Err` if it cannot be started.
pub fn run_once(l: &Launch<'_>) -> std::io::Result<Outcome> {
    let mut cmd = Command::new(&l.command[0]);
    cmd.args(&l.command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own: the lab can end it and all it started, and
        // the terminal's Ctrl-C reaches the lab alone, which ends it.
        .process_group(0);
    for v in l.remove {
        cmd.env_remove(v);
    }
    for (k, v) in &l.set {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    crate::core::interrupt::set_group(pid);
    // The program's peak memory, sampled while it runs (see
    // `Outcome::max_rss_kib`), from its start: a short program may end
    // within milliseconds.
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        // Until the child has replaced itself with the program, its memory
        // is the lab's (it is started by vfork): those samples, which bear
        // the lab's name, do not count.
        let ours = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            let mut peak = 0u64;
            while !done.load(Ordering::Relaxed) {
                if let Some(k) = vm_hwm_kib(&path, ours.trim()) {
                    peak = peak.max(k);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let stop = Arc::new(Mutex::new(None));
    let read = reader(
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
        l.show_output,
        l.metric.as_ref(),
        stop.clone(),
    );
    // The end, from a thread of its own, so the wall time is read the
    // moment the kernel reports it.
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
        let err = std::io::Error::last_os_error();
        let _ = tx.send((r, err, status, usage, start.elapsed()));
    });
    // Wait for the program, the timeout or the user, whichever comes
    // first; on the latter two, end its group (the waiter then reports the
    // program's end).
    let deadline = start.checked_add(l.timeout);
    let mut cut: Option<Exit> = None;
    let (r, err, status, usage, wall) = loop {
        match rx.recv_timeout(POLL) {
            Ok(v) => break v,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // The waiter sends before it ends; were it gone, the
                // program's end could never be known: end it.
                end_group(pid);
                crate::core::interrupt::set_group(0);
                done.store(true, Ordering::Relaxed);
                *stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                return Err(std::io::Error::other("lost track of the program"));
            }
        }
        if cut.is_none() {
            if crate::core::interrupt::requested() {
                cut = Some(Exit::Interrupted);
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                cut = Some(Exit::TimedOut);
            }
            if cut.is_some() {
                end_group(pid);
            }
        }
    };
    // Reaped: its pid may be anyone's from here on.
    done.store(true, Ordering::Relaxed);
    // The program has exited: what is left of its group is ended now, so
    // that nothing it started runs on into the next repetition.
    let left = match cut.map_or_else(|| members(pid), |_| Some(0)) {
        Some(0) => 0,
        Some(n) => {
            end_group(pid);
            n
        }
        // No /proc: the kernel says whether the group still has a member,
        // not how many.
        None if running(pid) => {
            end_group(pid);
            1
        }
        None => 0,
    };
    crate::core::interrupt::set_group(0);
    *stop.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + DRAIN);
    let (stdout, stderr, metric, held) = read.join().unwrap_or_default();
    let peak_kib = sampler.join().unwrap_or(0);
    // `wait4` reaped it: the `Child` must not wait again.
    drop(child);
    if r == -1 {
        return Err(err);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let exit = if let Some(c) = cut {
        c
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
        stdout,
        stderr,
        metric,
        left,
        held,
    })
}

/// Ends process group `pgid`: SIGTERM (and SIGCONT, so that a stopped
/// member sees it), then SIGKILL to whatever still runs after [`GRACE`];
/// returns once none runs (or, for a member the kernel cannot end at once,
/// after a bounded wait).
pub fn end_group(pgid: libc::pid_t) {
    // SAFETY: signals to a process group the lab created; a group that is
    // already gone gives ESRCH, which is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
        libc::kill(-pgid, libc::SIGCONT);
    }
    if wait_gone(pgid, GRACE) {
        return;
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    wait_gone(pgid, Duration::from_secs(2));
}

/// Waits up to `limit` for group `pgid` to have no running member;
/// whether it has none.
fn wait_gone(pgid: libc::pid_t, limit: Duration) -> bool {
    let t = Instant::now();
    loop {
        if !running(pgid) {
            return true;
        }
        if t.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Whether group `pgid` has a member that is not a zombie.
fn running(pgid: libc::pid_t) -> bool {
    match members(pgid) {
        Some(n) => n > 0,
        // No /proc to read: whether the kernel still finds the group (a
        // zombie counts, so this waits for the group's members to be
        // reaped).
        // SAFETY: signal 0 only checks.
        None => (unsafe { libc::kill(-pgid, 0) }) == 0,
    }
}

/// How many processes of group `pgid` are still running (zombies, which
/// are dead and wait only for their parent, do not count); `None` if
/// `/proc` cannot be read.
pub fn members(pgid: libc::pid_t) -> Option<usize> {
    let mut n = 0;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        // A process that ended since the listing has no stat: skipped.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp …": the name may hold anything, so
        // the fields are read after its closing parenthesis.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().unwrap_or("Z");
        let pgrp = f.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
        if pgrp == Some(pgid) && state != "Z" && state != "X" {
            n += 1;
        }
    }
    Some(n)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_bytes_and_no_more_than_twice_them() {
        let mut t = Tail::default();
        let mut all = Vec::new();
        for i in 0..5000u32 {
            let chunk: Vec<u8> = (0..1000).map(|j| ((i * 7 + j) % 251) as u8).collect();
            t.push(&chunk);
            all.extend_from_slice(&chunk);
            assert!(t.0.len() <= 2 * TAIL);
        }
        assert_eq!(t.into_vec(), all[all.len() - TAIL..]);
        let mut t = Tail::default();
        t.push(b"short");
        t.push(&vec![b'x'; TAIL + 3]);
        assert_eq!(t.into_vec(), vec![b'x'; TAIL]);
    }

    #[test]
    fn the_first_matching_line_gives_the_figure_however_it_is_cut() {
        let re = regex_lite::Regex::new(r"ops/s: *([0-9.]+)").unwrap();
        let text = b"start\nops/s: .\nops/s: 12.5 first\nops/s: 99\n";
        for cut in 1..text.len() {
            let mut l = Lines::new(re.clone());
            l.push(&text[..cut]);
            l.push(&text[cut..]);
            assert_eq!(l.finish(), Some(12.5), "cut at {cut}");
        }
        // The last line needs no newline, and a long line is cut, not
        // kept whole.
        let mut l = Lines::new(re.clone());
        l.push(&vec![b'z'; 10 * LINE_MAX]);
        assert!(l.line.len() <= LINE_MAX);
        l.push(b"\nops/s: 3");
        assert_eq!(l.finish(), Some(3.0));
        let mut l = Lines::new(re);
        l.push(b"nothing here\n");
        assert_eq!(l.finish(), None);
    }
}
