//! Records, at build time, the two facts about the lab that a run cannot learn
//! at run time: the compiler that built it (`LOCKLAB_RUSTC`) and the source
//! revision (`LOCKLAB_GIT_REV`, with `-dirty` when the tree had changes).
//! Either is "unknown" when the tool is missing; the build never fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));

    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let rustc_version =
        output(Command::new(rustc).arg("--version")).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LOCKLAB_RUSTC={rustc_version}");
    println!("cargo:rerun-if-env-changed=RUSTC");

    println!("cargo:rustc-env=LOCKLAB_GIT_REV={}", git_rev(&manifest_dir));
    for path in watched_paths(&manifest_dir) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `git rev-parse --short HEAD`, plus `-dirty` when `git status --porcelain`
/// lists anything; "unknown" outside a repository or without git.
fn git_rev(dir: &Path) -> String {
    let Some(rev) = output(git(dir).args(["rev-parse", "--short", "HEAD"])) else {
        return "unknown".to_string();
    };
    match output(git(dir).args(["status", "--porcelain"])) {
        Some(status) if !status.is_empty() => format!("{rev}-dirty"),
        Some(_) => rev,
        // Revision known but status not: say so rather than claim clean.
        None => format!("{rev}-unknown-status"),
    }
}

/// What must trigger a rerun so the revision stays fresh: HEAD (switching
/// branch), the branch's ref and packed-refs (committing), the index
/// (staging), and the workspace's sources and manifests (editing, which
/// flips `-dirty`). Git paths come from `git rev-parse --git-path`, which also
/// resolves worktrees, whose HEAD lives outside the work tree. Only existing
/// files are named: Cargo reruns every build for a missing one.
fn watched_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let git_path = |name: &str| -> Option<PathBuf> {
        let p = PathBuf::from(output(git(dir).args(["rev-parse", "--git-path", name]))?);
        Some(if p.is_absolute() { p } else { dir.join(p) })
    };
    let mut names = vec![
        "HEAD".to_string(),
        "packed-refs".to_string(),
        "index".to_string(),
    ];
    if let Some(head_ref) = output(git(dir).args(["symbolic-ref", "-q", "HEAD"])) {
        names.push(head_ref);
    }
    for name in &names {
        if let Some(p) = git_path(name) {
            paths.push(p);
        }
    }
    if let Some(top) = output(git(dir).args(["rev-parse", "--show-toplevel"])) {
        let top = PathBuf::from(top);
        // Not the whole top level: `target/` changes on every build.
        for name in ["crates", "Cargo.toml", "Cargo.lock"] {
            paths.push(top.join(name));
        }
    }
    paths.push(dir.join("build.rs"));
    paths.retain(|p| p.exists());
    paths
}

fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir);
    cmd
}

/// The command's trimmed stdout if it ran and succeeded.
fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
