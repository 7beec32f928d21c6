//! What the tests of `locklab run` and `locklab profile` need to hold the
//! lab to its promise about the programs it runs: the lab started with its
//! output in files (so the test can wait for it with `wait4`, which also
//! gives its peak memory), waited for with a bound (a lab that waits on a
//! program's children must fail the test, not hang it), signalled, and the
//! processes of `tests/sh/group.sh` found by the pid files it writes,
//! checked, and killed if the lab left them.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A script of `tests/sh/`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/sh/{name}"))
}

/// A `locklab` started by a test, with its output in files.
pub struct Lab {
    pub pid: i32,
    pub started: Instant,
    out: PathBuf,
    err: PathBuf,
    reaped: bool,
}

/// How a [`Lab`] ended.
pub struct Ended {
    /// Its exit code (`None`: a signal ended it).
    pub code: Option<i32>,
    /// Seconds from its start to its end.
    pub secs: f64,
    /// Its peak resident memory, KiB (the kernel's `ru_maxrss`, which
    /// also covers the processes it waited for).
    pub max_rss_kib: i64,
    pub stdout: String,
    pub stderr: String,
}

impl Lab {
    /// Starts `locklab --db DB ARGS` with `TMPDIR` set to `tmp` (where
    /// `profile` makes its directory) and its output in files there.
    pub fn start(db: &Path, tmp: &Path, args: &[&str], env: &[(&str, &str)]) -> Lab {
        let out = tmp.join("lab.stdout");
        let err = tmp.join("lab.stderr");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
        cmd.arg("--db")
            .arg(db)
            .args(args)
            .env("TMPDIR", tmp)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // Reaped by `wait4` in `wait` (or in `drop`), which also gives its
        // peak memory: `Child::wait` cannot.
        #[allow(clippy::zombie_processes)]
        let child = cmd.spawn().expect("running locklab");
        Lab {
            pid: child.id() as i32,
            started: Instant::now(),
            out,
            err,
            reaped: false,
        }
        // The `Child` is dropped without waiting: `wait` below reaps it.
    }

    /// Sends `sig` to the lab alone.
    pub fn signal(&self, sig: i32) {
        // SAFETY: our own child, not yet reaped.
        unsafe { libc::kill(self.pid, sig) };
    }

    /// Waits up to `limit` for the lab to end; if it has not by then, kills
    /// it and fails the test with what it printed.
    pub fn wait(mut self, limit: Duration) -> Ended {
        loop {
            let mut status = 0;
            // SAFETY: a zeroed rusage is valid for the kernel to fill.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waits for our own child, writing to live locals.
            let r = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == self.pid {
                self.reaped = true;
                let secs = self.started.elapsed().as_secs_f64();
                return Ended {
                    code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                    secs,
                    max_rss_kib: ru.ru_maxrss,
                    stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
                    stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
                };
            }
            assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
            if self.started.elapsed() > limit {
                self.signal(libc::SIGKILL);
                // SAFETY: reaps our own child.
                unsafe { libc::waitpid(self.pid, &mut status, 0) };
                self.reaped = true;
                panic!(
                    "locklab still ran after {limit:?}; stderr: {}",
                    std::fs::read_to_string(&self.err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lab {
    /// A test that failed before it waited leaves no lab running.
    fn drop(&mut self) {
        if !self.reaped {
            self.signal(libc::SIGKILL);
            let mut status = 0;
            // SAFETY: reaps our own child.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

/// The processes of one run of `group.sh` with tag `tag`, found by their
/// pid files in `dir`; those still alive when it is dropped are killed,
/// so that a failing test leaves nothing behind either.
pub struct Group {
    pub dir: PathBuf,
    pub tag: u32,
}

impl Group {
    pub fn new(dir: &Path, tag: u32) -> Group {
        Group {
            dir: dir.to_path_buf(),
            tag,
        }
    }

    /// The pids its files name (some may not be written yet), each with
    /// what its command line holds: the tag (the script and `sleep TAG`),
    /// or the tag plus one (the foreground `sleep`).
    fn named(&self) -> Vec<(i32, String)> {
        [("main", 0), ("child", 0), ("fg", 1)]
            .iter()
            .filter_map(|(k, plus)| {
                let pid = std::fs::read_to_string(self.dir.join(format!("{}.{k}", self.tag)))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()?;
                Some((pid, (self.tag + plus).to_string()))
            })
            .collect()
    }

    /// The pids its files name (some may not be written yet).
    pub fn pids(&self) -> Vec<i32> {
        self.named().into_iter().map(|(p, _)| p).collect()
    }

    /// Waits until the script has written its pids (it is hanging), up to
    /// `limit`.
    pub fn wait_hanging(&self, limit: Duration) {
        let t = Instant::now();
        while !self.dir.join(format!("{}.fg", self.tag)).exists() {
            assert!(
                t.elapsed() < limit,
                "group.sh did not start within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Its processes still running: each pid whose command line still
    /// holds what it did (so not a reused pid) and that is not a zombie.
    pub fn running(&self) -> Vec<i32> {
        self.named()
            .into_iter()
            .filter(|(p, needle)| alive_with(*p, needle))
            .map(|(p, _)| p)
            .collect()
    }

    /// Members of the process group the script led (its main pid), not
    /// zombies.
    pub fn group_members(&self) -> usize {
        let Some(pgid) = std::fs::read_to_string(self.dir.join(format!("{}.main", self.tag)))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        else {
            return 0;
        };
        let mut n = 0;
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" {
                n += 1;
            }
        }
        n
    }

    /// Asserts nothing of it runs, nor of its group, nor (where `pgrep`
    /// exists) any `sleep` with its tag.
    pub fn assert_gone(&self) {
        assert!(!self.pids().is_empty(), "group.sh wrote no pids");
        assert_eq!(self.running(), Vec::<i32>::new(), "left running");
        assert_eq!(
            self.group_members(),
            0,
            "its process group still has members"
        );
        if let Ok(o) = Command::new("pgrep")
            .args(["-f", &format!("sleep ({}|{})$", self.tag, self.tag + 1)])
            .output()
        {
            assert!(
                o.stdout.is_empty(),
                "pgrep finds: {}",
                String::from_utf8_lossy(&o.stdout)
            );
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for p in self.running() {
            // SAFETY: a process this test started (its pid file and its
            // command line name the test's tag).
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
}

/// Whether process `pid` runs (not a zombie) with `needle` in its command
/// line.
fn alive_with(pid: i32, needle: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let zombie = stat
        .rfind(')')
        .map(|i| stat[i + 1..].trim_start().starts_with('Z'))
        .unwrap_or(true);
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !zombie && String::from_utf8_lossy(&cmd).contains(needle)
}

/// Entries of `dir` whose names begin with `prefix`.
pub fn left_in(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}
