//! The corners of input a user reaches by accident: a path that names a
//! FIFO or a device, a disk that fills while a file is written, a negative
//! or infinite number, a command group without its subcommand, spaces
//! around names, and a stored command pasted back into a shell. Each gets
//! one line and exit code 2 (or a whole file), never a hang, a panic or a
//! half-written file.

mod common;

use common::{assert_bad_input, locklab, stderr, tmp};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A tiny stored run (a simulation of a few simulated milliseconds).
const TINY_SIM: &[&str] = &[
    "sim",
    "lhp",
    "--experiment",
    "performance",
    "--policies",
    "none",
    "--secs",
    "0.001",
    "--warmup-secs",
    "0",
];

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Runs `locklab --db DB ARGS`, killing it if it takes longer than
/// `limit` (a hang is a failure, not a stuck test).
fn within(limit: Duration, db: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{args:?} with --db {}: still running after {limit:?}",
                db.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn a_fifo_or_a_device_as_db_is_refused_in_one_line() {
    let (d, _) = tmp();
    let fifo = d.path().join("pipe.db");
    mkfifo(&fifo);
    for db in [
        fifo.as_path(),
        Path::new("/dev/null"),
        Path::new("/dev/zero"),
    ] {
        for args in [&["runs"][..], &["show", "last"], TINY_SIM] {
            let o = within(LIMIT, db, args);
            assert_bad_input(&o, &format!("--db {}", db.display()));
            assert!(
                stderr(&o).contains("allowed a regular file"),
                "{}",
                stderr(&o)
            );
        }
    }
    let o = within(LIMIT, d.path(), &["runs"]);
    assert_bad_input(&o, "a directory; allowed a regular file");
}

#[test]
fn a_fifo_or_a_device_as_out_is_refused_and_left_alone() {
    let (d, db) = tmp();
    assert_eq!(locklab(&db, TINY_SIM).status.code(), Some(0));
    let fifo = d.path().join("pipe.out");
    mkfifo(&fifo);
    for out in [fifo.as_path(), Path::new("/dev/null")] {
        let o = out.to_str().unwrap();
        for (args, example) in [
            (&["report", "--out", o][..], "report.html"),
            (&["plot", "last", "--out", o], "plot.svg"),
        ] {
            let r = within(LIMIT, &db, args);
            assert_bad_input(&r, &format!("--out {o}"));
            assert!(stderr(&r).contains(example), "{}", stderr(&r));
        }
    }
    // Still a FIFO and a device: nothing was renamed over them.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_fifo_or_an_endless_file_as_an_input_file_is_refused() {
    let (d, db) = tmp();
    let fifo = d.path().join("pipe.toml");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    for (args, needle) in [
        (
            &["sim", "lhp", "--config", f][..],
            format!("--config {f}: a FIFO"),
        ),
        (
            &["sim", "lhp", "--config", "/dev/zero"],
            "--config /dev/zero: a character device".to_string(),
        ),
        (&["model", "fit", "--csv", f], format!("--csv {f}: a FIFO")),
        (
            &["model", "fit", "--csv", "/dev/zero"],
            "--csv /dev/zero: a character device".to_string(),
        ),
    ] {
        assert_bad_input(&within(LIMIT, &db, args), &needle);
    }
    // A regular file past the bound: refused without reading it all.
    let big = d.path().join("big.toml");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(17 << 20).unwrap();
    assert_bad_input(
        &within(
            LIMIT,
            &db,
            &["sim", "lhp", "--config", big.to_str().unwrap()],
        ),
        "longer than 16 MiB",
    );
    assert!(!db.exists());
}

/// Runs `locklab --db DB ARGS` with files limited to `max_bytes`
/// (RLIMIT_FSIZE, inherited by the child): a write past it fails with
/// EFBIG, as on a full disk, and SIGXFSZ is ignored so that the write
/// returns the error instead of ending the process.
fn with_file_limit(max_bytes: u64, db: &Path, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
    cmd.arg("--db").arg(db).args(args);
    // SAFETY: between fork and exec only async-signal-safe calls
    // (signal, setrlimit), on no shared state.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let lim = libc::rlimit {
                rlim_cur: max_bytes,
                rlim_max: max_bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_report_or_plot_that_cannot_be_written_whole_leaves_the_old_file() {
    let store = tempfile::tempdir().unwrap();
    let db = store.path().join("t.db");
    assert_eq!(locklab(&db, TINY_SIM).status.code(), Some(0));
    let d = tempfile::tempdir().unwrap();
    for (cmd, name) in [(&["report"][..], "r.html"), (&["plot", "last"], "p.svg")] {
        let out = d.path().join(name);
        let old = b"the good file that was here".repeat(10);
        std::fs::write(&out, &old).unwrap();
        let mut args = cmd.to_vec();
        args.extend(["--out", out.to_str().unwrap()]);
        // Both outputs are several KiB, so 1 KiB stops them part way.
        let o = with_file_limit(1024, &db, &args);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("--out {}", out.display())), "{err}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            old,
            "{args:?} changed the file"
        );
        assert_eq!(names(d.path()), vec![name.to_string()], "{args:?}: {err}");
        // Without the limit it is written whole.
        let o = locklab(&db, &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.trim_end().ends_with(if name.ends_with("html") {
            "</html>"
        } else {
            "</svg>"
        }));
        assert_eq!(names(d.path()), vec![name.to_string()]);
        std::fs::remove_file(&out).unwrap();
    }
}

#[test]
fn a_new_database_that_cannot_be_written_whole_is_not_left_behind() {
    let (d, db) = tmp();
    let o = with_file_limit(2048, &db, TINY_SIM);
    assert_bad_input(&o, "t.db");
    assert_eq!(names(d.path()), Vec::<String>::new(), "{}", stderr(&o));
    // An existing database is left byte for byte when a run cannot be
    // stored (SQLite's journal cannot be written either).
    assert_eq!(locklab(&db, TINY_SIM).status.code(), Some(0));
    let before = std::fs::read(&db).unwrap();
    let o = with_file_limit(512, &db, TINY_SIM);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(names(d.path()), vec!["t.db".to_string()]);
}
