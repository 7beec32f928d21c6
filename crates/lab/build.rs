//! Records, at build time, the two facts about the lab that a run cannot learn
//! at run time: the compiler that built it (`LOCKLAB_RUSTC`) and the source
//! revision (`LOCKLAB_GIT_REV`, with `-dirty` when the tree had changes).
//! Either is "unknown" when the tool is missing; the build never fails here.
//!
//! With the `liburcu` feature (on by default) it also compiles the C shim
//! of the liburcu peers of `bench hash` (`csrc/`), if liburcu's memb and
//! QSBR flavours are installed (found by pkg-config, or else by compiling
//! against their headers), and sets `cfg(locklab_liburcu)`. Without them it
//! warns and builds the lab without those two strategies.

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

    println!("cargo::rustc-check-cfg=cfg(locklab_liburcu)");
    if std::env::var_os("CARGO_FEATURE_LIBURCU").is_some() {
        liburcu(&manifest_dir);
    }
}

/// The liburcu flavours the shim uses, as pkg-config names them.
const URCU_PACKAGES: [&str; 2] = ["liburcu-memb", "liburcu-qsbr"];

/// Compiles and links the liburcu shim if liburcu is there; warns if not.
fn liburcu(dir: &Path) {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let csrc = dir.join("csrc");
    let (includes, libs) = match pkg_config() {
        Some(found) => found,
        None => {
            // No pkg-config, or no .pc files: the headers and libraries may
            // still be in the default paths.
            let probe = cc::Build::new()
                .file(csrc.join("urcu_probe.c"))
                .cargo_warnings(false)
                .try_compile("locklab_urcu_probe");
            if probe.is_err() {
                println!(
                    "cargo:warning=liburcu not found (pkg-config {}, or urcu/urcu-memb.h and \
                     urcu/urcu-qsbr.h): `bench hash` is built without the liburcu and \
                     liburcu-qsbr strategies; install liburcu-dev and rebuild",
                    URCU_PACKAGES.join(", ")
                );
                return;
            }
            (
                Vec::new(),
                ["urcu-memb", "urcu-qsbr", "urcu-common"]
                    .map(String::from)
                    .to_vec(),
            )
        }
    };
    let mut build = cc::Build::new();
    build
        .file(csrc.join("urcu_hash_memb.c"))
        .file(csrc.join("urcu_hash_qsbr.c"))
        .opt_level(2)
        .warnings(true)
        .extra_warnings(true);
    for inc in &includes {
        build.include(inc);
    }
    build.compile("locklab_urcu_hash");
    for lib in &libs {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
    println!("cargo:rustc-link-lib=dylib=pthread");
    println!("cargo:rustc-cfg=locklab_liburcu");
}

/// Include directories and libraries of the liburcu flavours, from
/// pkg-config; `None` if pkg-config or the packages are missing.
fn pkg_config() -> Option<(Vec<String>, Vec<String>)> {
    let query = |flag: &str| output(Command::new("pkg-config").arg(flag).args(URCU_PACKAGES));
    let cflags = query("--cflags")?;
    let libs = query("--libs")?;
    let includes = cflags
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(String::from)
        .collect();
    let mut names: Vec<String> = Vec::new();
    for l in libs.split_whitespace() {
        if let Some(dir) = l.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(name) = l.strip_prefix("-l") {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    Some((includes, names))
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
    paths.push(dir.join("csrc"));
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
