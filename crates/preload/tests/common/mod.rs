//! What the interposer's integration tests share: compiling a C program of
//! `tests/c/`, finding the interposer cargo built, a bound on how many
//! programs run at once, and reading a child's pipes.
//!
//! Each test file includes this module (`mod common;`), so each test
//! process has its own program slots.

#![allow(dead_code)] // each test file uses its own part

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

/// How many programs run at once (the machine the suite is sized for has
/// two cores).
pub const PARALLEL: usize = 2;

/// Compiles `tests/c/<name>.c` (strict C11, `-O2 -pthread`, then `libs`)
/// with the `cc` on PATH into the target's temporary directory, under a
/// name made from a hash of the source: written to a file of this
/// process's own first and renamed into place, so that test processes side
/// by side never run a half-written executable and the directory keeps one
/// program per version of the source.
pub fn compile(name: &str, libs: &[&str]) -> Result<PathBuf, String> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let text = std::fs::read(&src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
    let mut hash = DefaultHasher::new();
    text.hash(&mut hash);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("locklab-preload");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Own to this call: threads of one test process may compile at once.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let partial = dir.join(format!(
        "{name}.{}.{}.partial",
        std::process::id(),
        BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let exe = dir.join(format!("{name}-{:016x}", hash.finish()));
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-pthread"])
        .arg("-o")
        .arg(&partial)
        .arg(&src)
        .args(libs)
        .env_remove("LD_PRELOAD")
        .output();
    match out {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "no `cc` on PATH: this test compiles {} with the system C compiler \
                 (install one, e.g. `apt-get install gcc`)",
                src.display()
            ))
        }
        Err(e) => return Err(format!("cannot run `cc`: {e}")),
        Ok(o) if !o.status.success() => {
            return Err(format!(
                "`cc` failed to compile {} ({}):\n{}",
                src.display(),
                o.status,
                String::from_utf8_lossy(&o.stderr)
            ))
        }
        Ok(_) => {}
    }
    std::fs::rename(&partial, &exe)
        .map_err(|e| format!("cannot move the program into place: {e}"))?;
    Ok(exe)
}

/// The interposer: the cdylib cargo builds beside the test executable
/// (`target/<profile>/deps/`, and `cargo build` puts one in
/// `target/<profile>/`), whichever is newer.
pub fn interposer() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's directory");
    let candidates = [
        deps.join("liblocklab_preload.so"),
        deps.parent().unwrap_or(deps).join("liblocklab_preload.so"),
    ];
    candidates
        .iter()
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .max_by_key(|&(modified, _)| modified)
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| {
            panic!(
                "liblocklab_preload.so is at neither {} nor {} (cargo builds it when it tests the crate)",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}

/// The program slots, shared by the tests the harness runs in parallel.
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

static GATE: Gate = Gate {
    free: Mutex::new(PARALLEL),
    freed: Condvar::new(),
};

/// A taken program slot; dropping it frees it.
pub struct Slot;

impl Slot {
    /// Waits for a free slot and takes it.
    pub fn take() -> Slot {
        let mut free = GATE.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = GATE.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *GATE.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        GATE.freed.notify_one();
    }
}

/// Reads a pipe to its end on a thread of its own, so that neither pipe
/// fills while the program runs; the text arrives on the channel.
pub fn drain(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// Every mutex the library offers, as `locklab locks` names them; for the
/// adapters, a spinning and a sleeping one over a FIFO and an unfair lock.
pub const MUTEXES: [&str; 23] = [
    "tas",
    "ttas",
    "backoff",
    "ticket",
    "ticket-backoff",
    "k42",
    "mcs",
    "clh",
    "qspin",
    "mutex",
    "mutex-fixed",
    "futex3",
    "c-bo-mcs",
    "hmcs",
    "cna",
    "malthusian",
    "mcs-tp",
    "hemlock",
    "twa",
    "anderson",
    "spin-yield(ticket)",
    "spin-park(tas)",
    "spin-park(clh)",
];
