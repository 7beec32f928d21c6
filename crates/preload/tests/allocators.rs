//! The interposer beside a malloc that takes pthread mutexes itself.
//!
//! jemalloc takes pthread mutexes inside `malloc` and `free` (its arenas,
//! bins and background machinery) and in its fork handlers; tcmalloc's
//! full build reaches them through libunwind when it records a stack. With
//! both the allocator and `liblocklab_preload.so` preloaded, those mutexes
//! are locklab's locks: if anything on the interposer's path (setting up a
//! lock's cell, a lock's per-thread state) calls back into `malloc`, the
//! allocator is re-entered while it takes one of its own mutexes, and the
//! program hangs or crashes, usually before `main`. This is why lock cells
//! never come from `malloc` (`src/slot.rs`); these tests check the whole
//! path, not only the cells.
//!
//! What runs, each at most 60 s before it is killed and failed (with a
//! stack of every thread from gdb, when gdb is there), at most two at once:
//!
//! - `tests/c/alloc_threads.c`, compiled once per test process with the
//!   `cc` on PATH: threads that allocate and free blocks of many sizes
//!   (most freed by another thread) while they take pthread mutexes and
//!   signal condition variables, then a fork whose child allocates on two
//!   threads; exit 0 only if every check held. Under every mutex of the
//!   registry and `pthread` (pass-through), first with the interposer
//!   alone, then with each allocator found, preloaded before the
//!   interposer and after it.
//! - `sysbench threads`, a real program from the distribution, under a few
//!   mutexes with each allocator, both orders, when sysbench is installed.
//!
//! A pass must not come from a library that was silently not loaded: the
//! C program first checks that `malloc` and `pthread_mutex_lock` resolve
//! into the libraries it is told (and that the allocator accounts for the
//! blocks it allocates); for sysbench, the dynamic loader's own log
//! (`LD_DEBUG=files`) must show both libraries initialized. Two tests
//! check that the program does fail where either library is missing.
//!
//! The allocators are Debian's `libjemalloc2` (`libjemalloc.so.2`) and
//! `libgoogle-perftools4` (`libtcmalloc.so.4`, with its dependency
//! `libtcmalloc-minimal4`, `libtcmalloc_minimal.so.4`), looked up with
//! `ldconfig -p` and in the usual library directories. A missing one (or
//! sysbench) is skipped with a note, unless `LOCKLAB_REQUIRE_PROGRAMS=1`
//! (set by `.ci/run`, which installs them): then it fails the test.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

mod common;
use common::{drain, interposer, Slot, MUTEXES};

/// The longest one run may take before it is killed (a healthy run takes
/// well under a second).
const TIMEOUT: Duration = Duration::from_secs(60);

/// Variables the interposer, the allocators or the loader read, cleared
/// before every run so that the test's own environment cannot leak in.
const CLEARED_VARS: [&str; 8] = [
    "LD_PRELOAD",
    "LD_DEBUG",
    "LD_DEBUG_OUTPUT",
    "LOCKLAB_LOCK",
    "LOCKLAB_RWLOCK",
    "LOCKLAB_TEST_BROKEN",
    "LOCKLAB_PROFILE",
    "MALLOC_CONF",
];

/// Whether CI promised every library and program (a missing one fails).
fn required() -> bool {
    std::env::var_os("LOCKLAB_REQUIRE_PROGRAMS").is_some_and(|v| v == "1")
}

// ------------------------------------------------------------ the program

/// The compiled C program, built on first use (once per test process).
fn program() -> &'static Path {
    static PROGRAM: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| common::compile("alloc_threads", &["-ldl"])) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

// ------------------------------------------------------------ allocators

/// A malloc replacement, as Debian ships it.
#[derive(Clone, Copy)]
struct Allocator {
    /// The library's file name (its soname).
    soname: &'static str,
    /// The Debian package that installs it.
    package: &'static str,
    /// What the C program is told is serving malloc.
    family: &'static str,
}

const JEMALLOC: Allocator = Allocator {
    soname: "libjemalloc.so.2",
    package: "libjemalloc2",
    family: "jemalloc",
};

/// tcmalloc with the heap profiler and libunwind.
const TCMALLOC: Allocator = Allocator {
    soname: "libtcmalloc.so.4",
    package: "libgoogle-perftools4",
    family: "tcmalloc",
};

/// tcmalloc without them (a dependency of `libgoogle-perftools4`).
const TCMALLOC_MINIMAL: Allocator = Allocator {
    soname: "libtcmalloc_minimal.so.4",
    package: "libtcmalloc-minimal4",
    family: "tcmalloc",
};

const ALLOCATORS: [Allocator; 3] = [JEMALLOC, TCMALLOC, TCMALLOC_MINIMAL];

/// The bytes of an ELF header that say which processes can load it: the
/// class (32 or 64 bit), the byte order and the machine.
fn elf_kind(path: &Path) -> Option<[u8; 4]> {
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (head[..4] == *b"\x7fELF").then_some([head[4], head[5], head[18], head[19]])
}

/// Where the dynamic loader's cache says `soname` is (every entry: a
/// multilib system lists one per architecture).
fn ldconfig_paths(soname: &str) -> Vec<PathBuf> {
    let listing = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|cmd| {
            let o = Command::new(cmd).arg("-p").output().ok()?;
            o.status.success().then_some(o.stdout)
        })
        .unwrap_or_default();
    // Lines read "\tlibjemalloc.so.2 (libc6,x86-64) => /usr/lib/.../libjemalloc.so.2".
    String::from_utf8_lossy(&listing)
        .lines()
        .filter_map(|line| {
            let (name, path) = line.trim().split_once(" => ")?;
            name.strip_prefix(soname)?
                .starts_with(" (")
                .then(|| PathBuf::from(path))
        })
        .collect()
}

/// The library `soname` for this machine: from the loader's cache, else
/// from the usual directories; one the interposer's processes can load.
fn find_library(soname: &str) -> Option<PathBuf> {
    let want = elf_kind(&interposer());
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    let dirs = [
        format!("/usr/lib/{multiarch}"),
        format!("/lib/{multiarch}"),
        "/usr/lib64".to_string(),
        "/lib64".to_string(),
        "/usr/lib".to_string(),
        "/lib".to_string(),
        "/usr/local/lib".to_string(),
    ];
    ldconfig_paths(soname)
        .into_iter()
        .chain(dirs.iter().map(|d| Path::new(d).join(soname)))
        .find(|p| p.is_file() && elf_kind(p) == want)
}

/// The allocator's library, or `None` after a note (once per process)
/// that it is missing; under `LOCKLAB_REQUIRE_PROGRAMS=1` a missing one
/// fails the test instead.
fn library(a: Allocator) -> Option<PathBuf> {
    static FOUND: OnceLock<Mutex<HashMap<&'static str, Option<PathBuf>>>> = OnceLock::new();
    let mut found = FOUND
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(path) = found.get(a.soname) {
        return path.clone();
    }
    let path = find_library(a.soname);
    found.insert(a.soname, path.clone());
    drop(found);
    if path.is_none() {
        assert!(
            !required(),
            "{} is not installed (package {}; .ci/run installs it)",
            a.soname,
            a.package
        );
        eprintln!(
            "note: {} is not installed; its runs are skipped (apt-get install {})",
            a.soname, a.package
        );
    }
    path
}

/// Whether `prog` is on PATH; if not, fails under CI and skips elsewhere.
fn have_program(prog: &str, package: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()));
    if !found {
        assert!(!required(), "{prog} is not installed (.ci/run installs it)");
        eprintln!("note: {prog} is not installed; skipped (apt-get install {package})");
    }
    found
}

// ------------------------------------------------------------------ runs

/// One run: what is preloaded, in order, the lock, and the command.
struct Run<'a> {
    preload: Vec<PathBuf>,
    lock: Option<&'a str>,
    cmd: Vec<String>,
    /// A file prefix for the loader's log (`LD_DEBUG=files`), if wanted.
    loader_log: Option<PathBuf>,
}

impl Run<'_> {
    /// The run as a shell command line, with file names for paths.
    fn describe(&self) -> String {
        let mut words = Vec::new();
        if !self.preload.is_empty() {
            let names: Vec<String> = self
                .preload
                .iter()
                .map(|p| {
                    p.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            words.push(format!("LD_PRELOAD=\"{}\"", names.join(" ")));
        }
        if let Some(lock) = self.lock {
            words.push(format!("LOCKLAB_LOCK='{lock}'"));
        }
        let mut cmd = self.cmd.clone();
        if let Some(first) = cmd.first_mut() {
            if let Some(name) = Path::new(first).file_name() {
                // The compiled program's name ends in a hash of its source.
                let name = name.to_string_lossy();
                *first = match name.split_once('-') {
                    Some((base, _)) if name.starts_with("alloc_threads-") => base.to_string(),
                    _ => name.into_owned(),
                };
            }
        }
        words.extend(cmd);
        words.join(" ")
    }
}

/// How a run ended.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// The child's process id (names the loader's log).
    pid: u32,
}

/// Every thread's stack in process `pid`, from gdb if it is installed and
/// may attach (what a hang report needs); otherwise a line saying why not.
fn stacks(pid: u32) -> String {
    let gdb = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "thread apply all bt 40", "-p"])
        .arg(pid.to_string())
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut gdb) = gdb else {
        return "(no gdb to show the stacks)".to_string();
    };
    let out = drain(gdb.stdout.take().expect("piped stdout"));
    let start = Instant::now();
    while gdb.try_wait().ok().flatten().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = gdb.kill();
            let _ = gdb.wait();
            return "(gdb did not finish within 30 s)".to_string();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = out.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    let frames: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("Thread "))
        .collect();
    if frames.is_empty() {
        format!("(gdb showed no stacks: may it attach?)\n{text}")
    } else {
        frames.join("\n")
    }
}

/// Runs `run` in one of the slots; a run still going after `TIMEOUT` is
/// killed and its failure returned (with its stacks).
fn execute(run: &Run) -> Result<Outcome, String> {
    let what = run.describe();
    let mut cmd = Command::new(&run.cmd[0]);
    cmd.args(&run.cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in CLEARED_VARS {
        cmd.env_remove(var);
    }
    if !run.preload.is_empty() {
        let paths: Vec<String> = run
            .preload
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        cmd.env("LD_PRELOAD", paths.join(" "));
    }
    if let Some(lock) = run.lock {
        cmd.env("LOCKLAB_LOCK", lock);
    }
    if let Some(log) = &run.loader_log {
        cmd.env("LD_DEBUG", "files").env("LD_DEBUG_OUTPUT", log);
    }

    let _slot = Slot::take();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    let pid = child.id();
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let stacks = stacks(pid);
                let _ = child.kill();
                let _ = child.wait();
                let err = stderr
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default();
                return Err(format!(
                    "{what}: still running after {TIMEOUT:?}, killed\nstderr:\n{err}\nstacks:\n{stacks}"
                ));
            }
            Err(e) => return Err(format!("{what}: cannot wait for it: {e}")),
        }
    };
    let elapsed = start.elapsed();
    let text =
        |rx: mpsc::Receiver<String>| rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    let outcome = Outcome {
        status,
        stdout: text(stdout),
        stderr: text(stderr),
        pid,
    };
    let summary = outcome.stdout.lines().last().unwrap_or("").trim();
    eprintln!("{what}: {status} in {elapsed:.2?}: {summary}");
    Ok(outcome)
}

/// A run of the C program preloading `preload` (in order) under `lock`,
/// told which allocator and whether the interposer must be there.
fn program_run<'a>(preload: &[&Path], lock: Option<&'a str>, family: &str, mode: &str) -> Run<'a> {
    Run {
        preload: preload.iter().map(|p| p.to_path_buf()).collect(),
        lock,
        cmd: vec![
            program().to_string_lossy().into_owned(),
            family.to_string(),
            mode.to_string(),
        ],
        loader_log: None,
    }
}

/// The program's run must pass: exit 0, its summary on stdout, nothing on
/// stderr. Returns what went wrong otherwise.
fn check_pass(
    preload: &[&Path],
    lock: Option<&str>,
    family: &str,
    mode: &str,
) -> Result<(), String> {
    let run = program_run(preload, lock, family, mode);
    let o = execute(&run)?;
    if o.status.success() && o.stdout.starts_with("ok: ") && o.stderr.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: {}\nstderr:\n{}stdout:\n{}",
        run.describe(),
        o.status,
        o.stderr,
        o.stdout
    ))
}

/// Panics with every failure, if there were any.
fn report(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} run(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The program under `lock`: with the interposer alone (so that a failure
/// below is the allocator's doing), then with each allocator preloaded
/// before the interposer and after it. All runs are made; the test fails
/// with every failure.
fn under_lock(lock: &str) {
    assert!(
        lock == "pthread" || MUTEXES.contains(&lock),
        "{lock} is neither pthread nor in MUTEXES"
    );
    let ours = interposer();
    let mut failures = Vec::new();
    if let Err(e) = check_pass(&[&ours], Some(lock), "glibc", "interposed") {
        failures.push(e);
    }
    for a in ALLOCATORS {
        let Some(lib) = library(a) else { continue };
        for order in [[&*lib, &*ours], [&*ours, &*lib]] {
            if let Err(e) = check_pass(&order, Some(lock), a.family, "interposed") {
                failures.push(e);
            }
        }
    }
    report(&failures);
}

// ----------------------------------------------------------------- tests

/// The program is right: glibc alone, nothing preloaded, passes it.
#[test]
fn glibc_alone() {
    if let Err(e) = check_pass(&[], None, "glibc", "plain") {
        panic!("{e}");
    }
}

/// One test per lock, so that a failure names its lock and one lock can be
/// run alone (`cargo test -p locklab-preload --test allocators mcs`).
macro_rules! lock_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                under_lock($name);
            }
        )*
    };
}

lock_tests! {
    lock_tas => "tas",
    lock_ttas => "ttas",
    lock_backoff => "backoff",
    lock_ticket => "ticket",
    lock_ticket_backoff => "ticket-backoff",
    lock_k42 => "k42",
    lock_mcs => "mcs",
    lock_clh => "clh",
    lock_qspin => "qspin",
    lock_mutex => "mutex",
    lock_mutex_fixed => "mutex-fixed",
    lock_futex3 => "futex3",
    lock_c_bo_mcs => "c-bo-mcs",
    lock_hmcs => "hmcs",
    lock_cna => "cna",
    lock_malthusian => "malthusian",
    lock_mcs_tp => "mcs-tp",
    lock_hemlock => "hemlock",
    lock_twa => "twa",
    lock_anderson => "anderson",
    lock_spin_yield_ticket => "spin-yield(ticket)",
    lock_spin_park_tas => "spin-park(tas)",
    lock_spin_park_clh => "spin-park(clh)",
    lock_pthread => "pthread",
}

/// `MUTEXES` covers every mutex of the registry but the adapters over the
/// others (`spin-park(mcs)` and the like): the names an unknown
/// `LOCKLAB_LOCK` makes the interposer list are all there.
#[test]
fn every_mutex_is_covered() {
    let run = program_run(&[&interposer()], Some("nosuch"), "glibc", "interposed");
    let o = execute(&run).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.status.code(), Some(2), "{}: {}", run.describe(), o.stderr);
    let names = o
        .stderr
        .split_once("allowed ")
        .and_then(|(_, rest)| rest.split_once(" (see"))
        .map(|(names, _)| names)
        .unwrap_or_else(|| panic!("no list of names in: {}", o.stderr));
    let missing: Vec<&str> = names
        .split(", ")
        .filter(|name| *name != "pthread" && !name.contains('(') && !MUTEXES.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "MUTEXES lacks {missing:?} (the interposer offers: {names})"
    );
}

/// The program's one failure line, from a run that must fail its checks
/// (exit 1, not a crash or a hang).
fn must_fail(preload: &[&Path], lock: Option<&str>, family: &str, mode: &str) -> String {
    let run = program_run(preload, lock, family, mode);
    let o = execute(&run).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}: want exit 1 (a failed check), got {}\nstderr:\n{}",
        run.describe(),
        o.status,
        o.stderr
    );
    assert_eq!(o.stderr.lines().count(), 1, "want one line:\n{}", o.stderr);
    o.stderr.trim_end().to_string()
}

/// Told the interposer is there when it is not, the program fails: its
/// passes above mean the interposer was loaded.
#[test]
fn a_missing_interposer_is_caught() {
    let line = must_fail(&[], None, "glibc", "interposed");
    assert!(line.starts_with("FAIL interposer: "), "{line}");
}

/// Told an allocator serves malloc when glibc does, the program fails:
/// its passes above mean the allocator was loaded and used.
#[test]
fn a_missing_allocator_is_caught() {
    let ours = interposer();
    for family in ["jemalloc", "tcmalloc"] {
        let line = must_fail(&[&ours], Some("tas"), family, "interposed");
        assert!(line.starts_with("FAIL allocator: "), "{line}");
    }
}

/// The mutexes `sysbench threads` runs under with each allocator.
const SYSBENCH_LOCKS: [&str; 5] = ["mutex", "mcs", "tas", "ticket", "pthread"];

/// `sysbench threads` (its threads take and release pthread mutexes in a
/// loop; sysbench allocates throughout) with allocator `a` and the
/// interposer preloaded, in both orders, under each of `SYSBENCH_LOCKS`:
/// each run must finish its events, and the loader's log must show both
/// libraries initialized.
fn sysbench_with(a: Allocator) {
    if !have_program("sysbench", "sysbench") {
        return;
    }
    let Some(lib) = library(a) else { return };
    let ours = interposer();
    let logs = tempdir("sysbench");
    let mut failures = Vec::new();
    for lock in SYSBENCH_LOCKS {
        for order in [[&lib, &ours], [&ours, &lib]] {
            let log = logs.join("ld");
            let run = Run {
                preload: order.iter().map(|p| p.to_path_buf()).collect(),
                lock: Some(lock),
                cmd: [
                    "sysbench",
                    "threads",
                    "--threads=2",
                    "--time=0",
                    "--events=1000",
                    "--thread-yields=100",
                    "--thread-locks=4",
                    "run",
                ]
                .map(String::from)
                .to_vec(),
                loader_log: Some(log.clone()),
            };
            let what = run.describe();
            let o = match execute(&run) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            let loaded =
                std::fs::read_to_string(log.with_extension(o.pid.to_string())).unwrap_or_default();
            let initialized = |p: &Path| {
                loaded
                    .lines()
                    .any(|l| l.contains("calling init: ") && l.ends_with(&*p.to_string_lossy()))
            };
            if !o.status.success() || !o.stdout.contains("total number of events:") {
                failures.push(format!(
                    "{what}: {}\nstderr:\n{}stdout:\n{}",
                    o.status, o.stderr, o.stdout
                ));
            } else if !initialized(&lib) || !initialized(&ours) {
                let inits: Vec<&str> = loaded
                    .lines()
                    .filter(|l| l.contains("calling init: "))
                    .collect();
                failures.push(format!(
                    "{what}: the loader's log does not show both libraries initialized:\n{}",
                    inits.join("\n")
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&logs);
    report(&failures);
}

/// A fresh directory of this process's own under the target's temporary
/// directory.
fn tempdir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "locklab-preload/{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

#[test]
fn sysbench_with_jemalloc() {
    sysbench_with(JEMALLOC);
}

#[test]
fn sysbench_with_tcmalloc() {
    sysbench_with(TCMALLOC);
}
