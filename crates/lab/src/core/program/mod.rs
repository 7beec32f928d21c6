//! A user's unmodified program under the interposer
//! (`liblocklab_preload.so`, `LD_PRELOAD`): finding the interposer,
//! checking the program and the lock names before anything runs, and
//! launching it ([`launch`]). Shared by the studies that run programs.

pub mod launch;

use crate::core::error::{LabError, Result};
use crate::noteln;
use launch::{Exit, Outcome};
use std::cell::Cell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The baseline's name: the C library's own locks.
pub const BASELINE: &str = "pthread";

/// `--locks pthread`: the C library's locks reached through the interposer
/// (`LOCKLAB_LOCK=pthread`), beside the baseline without it: what the
/// interposer itself costs.
pub const PASSTHROUGH: &str = "preload(pthread)";

/// What the interposer reads: removed from the program's environment, so
/// that only what the lab sets for a run reaches it.
pub const VARS: [&str; 5] = [
    "LD_PRELOAD",
    "LOCKLAB_LOCK",
    "LOCKLAB_RWLOCK",
    "LOCKLAB_PROFILE",
    "LOCKLAB_MARK",
];

/// The interposer: `LOCKLAB_PRELOAD`, or beside the `locklab` binary.
pub fn preload() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("LOCKLAB_PRELOAD") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(LabError::input(format!(
            "LOCKLAB_PRELOAD={}: no such file (the interposer, liblocklab_preload.so)",
            p.display()
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| LabError::input(format!("cannot find the locklab binary: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Beside the binary (`cargo build`), or in deps/ there (`cargo test`
    // builds it only there): the newer of the two.
    let newest = [
        dir.join("liblocklab_preload.so"),
        dir.join("deps/liblocklab_preload.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max_by_key(|(t, _)| *t);
    if let Some((_, p)) = newest {
        return Ok(p);
    }
    Err(LabError::input(format!(
        "liblocklab_preload.so is not beside the locklab binary ({}): `cargo build --release` builds both \
         (or set LOCKLAB_PRELOAD to its path)",
        dir.display()
    )))
}

/// Refuses a program that cannot be started.
pub fn check_program(cmd: &OsString) -> Result<()> {
    let p = Path::new(cmd);
    let found = if p.components().count() > 1 {
        p.is_file()
    } else {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
            .unwrap_or(false)
    };
    if found {
        Ok(())
    } else {
        Err(LabError::input(format!(
            "'{}': no such program (not a file, nor found in PATH)",
            p.display()
        )))
    }
}

/// The mutexes to run under: `--locks`, or locklab's own without the
/// adapters. Peers cannot be put under a program; `pthread` named here is the
/// passthrough ([`PASSTHROUGH`]). Nor can a delegation lock: a program
/// calls lock and unlock, and it has neither.
pub fn chosen_locks(list: Option<&str>) -> Result<Vec<&'static str>> {
    let entries = match list {
        Some(l) => crate::core::locks::parse_list(l)?,
        None => crate::core::registry::all()
            .iter()
            .filter(|e| !e.peer && !e.delegates && !e.info.name.contains('('))
            .collect(),
    };
    if let Some(p) = entries.iter().find(|e| e.peer && e.info.name != BASELINE) {
        return Err(LabError::input(format!(
            "--locks {}: {} is not one of locklab's locks, so it cannot be put under a program \
             (pthread, the C library's own, is the baseline and always runs; named in --locks, it \
             runs through the interposer too, as {PASSTHROUGH}: the interposer's own cost)",
            list.unwrap_or_default(),
            p.info.name
        )));
    }
    if let Some(d) = entries.iter().find(|e| e.delegates) {
        let allowed: Vec<&str> = crate::core::registry::all()
            .iter()
            .filter(|e| (!e.peer || e.info.name == BASELINE) && !e.delegates)
            .map(|e| e.info.name)
            .collect();
        return Err(LabError::input(format!(
            "--locks {}: {} is a delegation lock: it runs closures its callers hand it, and a \
             program's pthread_mutex_lock and unlock hand it none, so it cannot be put under a \
             program (the benchmarks that time a critical section measure it); allowed: {}",
            list.unwrap_or_default(),
            d.info.name,
            allowed.join(", ")
        )));
    }
    Ok(entries.iter().map(|e| e.info.name).collect())
}

/// `--rwlock`: one of locklab's reader-writer locks, or `pthread-rw`.
pub fn chosen_rwlock(name: &str) -> Result<String> {
    // Trimmed, as every name is (`crate::core::args::name_items`).
    let name = name.trim();
    let own: Vec<&str> = crate::core::registry::rw_all()
        .iter()
        .filter(|e| !e.peer)
        .map(|e| e.info.name)
        .collect();
    if name == "pthread-rw" || own.contains(&name) {
        return Ok(name.to_string());
    }
    Err(LabError::input(format!(
        "--rwlock {name}: not an interposable reader-writer lock; allowed pthread-rw, {}",
        own.join(", ")
    )))
}

/// The command as a person would type it, for messages and the stored
/// parameters: each argument shell-quoted where it needs it, so that it
/// can be pasted back ([`crate::core::out::shell_command`]).
pub fn shown(command: &[OsString]) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    crate::core::out::shell_command(words.iter().map(String::as_str))
}

/// A temporary directory every user may write in, as /tmp is (mode 1777):
/// a server that drops its privileges (memcached as `nobody`) writes the
/// interposer's files there too. Removed when dropped, so on every path
/// out of a command, an error or an interrupt included.
pub fn shared_tempdir(prefix: &str, what: &str) -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| LabError::failed(format!("cannot make a directory for {what}: {e}")))?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).map_err(|e| {
        LabError::failed(format!("cannot open the directory for {what} to all: {e}"))
    })?;
    Ok(dir)
}

/// How a run of the program ended, as a message says it after its name.
pub fn ended(exit: Exit, timeout: Duration) -> String {
    match exit {
        Exit::Code(c) => format!("ends with exit {c}"),
        Exit::Signal(_) => format!("was ended by {exit}"),
        Exit::TimedOut => format!(
            "timed out after {} s (its process group was ended)",
            timeout.as_secs_f64()
        ),
        Exit::Interrupted => "was interrupted".into(),
    }
}

/// The line for a command the user stopped while the program ran.
pub fn interrupted(shown: &str) -> String {
    format!("interrupted: `{shown}` and its process group were ended; nothing stored")
}

/// The notes about what a program left behind when it exited, each said
/// once per command (every run ends what it left the same way).
#[derive(Default)]
pub struct Leftovers {
    left: Cell<bool>,
    held: Cell<bool>,
}

impl Leftovers {
    /// Notes what `o` left behind, if this command has not said it yet.
    pub fn note(&self, shown: &str, o: &Outcome) {
        if o.left > 0 && !self.left.replace(true) {
            noteln!(
                "note: `{shown}` left {} process{} running after it exited; ended {} (and so after every run)",
                o.left,
                if o.left == 1 { "" } else { "es" },
                if o.left == 1 { "it" } else { "them" }
            );
        }
        if o.held && !self.held.replace(true) {
            noteln!(
                "note: `{shown}` left its output open in a process outside its group (one that called setsid), \
                 not ended by the lab; its output was read up to {} s after it exited",
                launch::DRAIN.as_secs_f64()
            );
        }
    }
}
