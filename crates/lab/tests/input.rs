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

/// Whether the command line `args` gets past clap with this value: `Ok`, or
/// an error that is not about a value (a missing required argument, a
/// conflict) once every value was taken.
fn value_taken(args: &[&str]) -> Result<(), clap::Error> {
    use clap::error::ErrorKind;
    let argv: Vec<std::ffi::OsString> = std::iter::once("locklab")
        .chain(args.iter().copied())
        .map(Into::into)
        .collect();
    match locklab_lab::front::cli::Cli::try_parse_args(&argv) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ValueValidation | ErrorKind::InvalidValue
            ) =>
        {
            Err(e)
        }
        Err(e) if e.kind() == ErrorKind::UnknownArgument => Err(e),
        Err(_) => Ok(()),
    }
}

/// Every option that takes a value, with the words of the subcommands that
/// lead to it: (`["bench", "spin"]`, `"--secs"`).
fn options(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, String)>) {
    for a in cmd.get_arguments() {
        if a.is_positional() || !a.get_action().takes_values() {
            continue;
        }
        if let Some(long) = a.get_long() {
            out.push((path.to_vec(), format!("--{long}")));
        }
    }
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut p = path.to_vec();
        p.push(sub.get_name().to_string());
        options(sub, &p, out);
    }
}

/// The options that take a number: a number gets past clap and a word
/// does not (found in the command tree, so that a new option is tested
/// without being listed here).
fn numeric_options() -> Vec<(Vec<String>, String)> {
    let mut all = Vec::new();
    options(&locklab_lab::front::cli::Cli::command_line(), &[], &mut all);
    all.into_iter()
        .filter(|(path, opt)| {
            let with = |v: &str| {
                let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
                args.extend([opt.as_str(), v]);
                value_taken(&args).is_ok()
            };
            (with("1") || with("0") || with("2")) && !with("zzz")
        })
        .collect()
}

#[test]
fn every_numeric_option_names_itself_and_its_range_for_any_value() {
    let numeric = numeric_options();
    // The count guards the discovery itself (it found 50 when written).
    assert!(numeric.len() >= 40, "{numeric:?}");
    let (_d, db) = tmp();
    let mut refused = 0;
    for (path, opt) in &numeric {
        for v in [
            "-1",
            "-inf",
            "NaN",
            "0",
            "1e999",
            "99999999999999999999999",
            "-0.5",
        ] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.extend([opt.as_str(), v]);
            match value_taken(&args) {
                Ok(()) => {
                    assert!(!v.starts_with('-'), "{args:?}: a negative value was taken");
                }
                Err(e) => {
                    let text = e.render().to_string();
                    assert!(text.contains(&format!("'{opt} ")), "{args:?}: {text}");
                    // The binary says it in one line, exit code 2, with
                    // the option, the value and what is allowed.
                    let o = locklab(&db, &args);
                    assert_bad_input(&o, &format!("'{v}' for '{opt} "));
                    assert!(stderr(&o).contains("allowed"), "{args:?}: {}", stderr(&o));
                    refused += 1;
                }
            }
        }
    }
    assert!(refused >= numeric.len() * 2, "{refused}");
    assert!(!db.exists());
}

#[test]
fn a_command_group_without_its_subcommand_is_one_line() {
    let root = locklab_lab::front::cli::Cli::command_line();
    let mut groups = 0;
    for group in root.get_subcommands() {
        if group.get_subcommands().next().is_none() || !group.is_subcommand_required_set() {
            continue;
        }
        groups += 1;
        let (_d, db) = tmp();
        let o = locklab(&db, &[group.get_name()]);
        assert_bad_input(
            &o,
            &format!("'locklab {}' requires a subcommand", group.get_name()),
        );
        for sub in group.get_subcommands() {
            assert!(stderr(&o).contains(sub.get_name()), "{}", stderr(&o));
        }
        assert!(!db.exists());
    }
    // model, sim and baseline at least (bench alone runs the quick suite).
    assert!(groups >= 3, "{groups}");
}

#[test]
fn names_are_trimmed_alike_and_an_empty_one_is_refused_by_every_option() {
    let (_d, db) = tmp();
    // Each of these names is taken as it is without the spaces: the
    // command gets as far as the database, which /dev/null is not.
    let null = Path::new("/dev/null");
    for args in [
        &["bench", "spin", "--locks", " mcs, ticket "][..],
        &["bench", "uncontended", "--locks", " tas"],
        &["bench", "lhp", "--locks", "tas "],
        &["advise", "--locks", " tas, ticket"],
        &["bench", "hash", "--strategies", " rcu, none"],
        &[
            "bench",
            "ipc",
            "--variants",
            " none, fine",
            "--modes",
            " single, multi",
        ],
        &[
            "bench",
            "kv",
            "--variants",
            " none",
            "--workload",
            " c",
            "--keys",
            " uniform",
        ],
        &[
            "sim",
            "lhp",
            "--policies",
            " itcs , none",
            "--experiment",
            " latency",
            "--lock",
            " tas",
            "--ple",
            " kvm ",
        ],
        &["bench", "spin", "--delay-dist", " exp ", "--delay-ns", "10"],
        &[
            "bench",
            "spin",
            "--secs",
            " 1",
            "--reps",
            "1 ",
            "--cs-ns",
            " 5",
            "--threads",
            " 1, 2",
        ],
        &["show", "1", "--format", " json"],
        &["plot", " 1", "--out", "x.svg", "--bench", " spin"],
        &["profile", "--lock", " tas", "--", "true"],
    ] {
        let o = within(LIMIT, null, args);
        assert_bad_input(&o, "--db /dev/null");
    }
    assert_eq!(
        locklab_lab::core::program::chosen_rwlock(" rw-fair ").unwrap(),
        "rw-fair"
    );
    // An empty item is refused by each list, in one line.
    for (args, needle) in [
        (&["bench", "spin", "--locks", "mcs, "][..], "empty name"),
        (&["advise", "--locks", ",tas"], "empty name"),
        (
            &["bench", "hash", "--strategies", "rcu,,none"],
            "empty name",
        ),
        (&["bench", "ipc", "--variants", "none,"], "empty name"),
        (
            &["bench", "ipc", "--modes", "single,"],
            "empty measurement name",
        ),
        (
            &["sim", "lhp", "--policies", " , itcs"],
            "empty policy name",
        ),
        (
            &["bench", "spin", "--threads", "1,,2"],
            "not a thread count",
        ),
    ] {
        assert_bad_input(&locklab(&db, args), needle);
    }
    assert!(!db.exists());
}

#[test]
fn a_stored_command_is_shell_quoted_and_reads_back_through_sh() {
    let d = tempfile::tempdir().unwrap();
    // A database path a shell would split, expand and choke on.
    let db = d.path().join("it's a $HOME `x` \"db\".db");
    let mut args: Vec<&str> = TINY_SIM.to_vec();
    args.extend(["--seed", " 3"]);
    let o = locklab(&db, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&common::stdout(&locklab(&db, &["show", "last", "--json"]))).unwrap();
    let stored = v["run"]["command"].as_str().unwrap().to_string();
    let back = Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {stored}"))
        .output()
        .unwrap();
    let words: Vec<String> = String::from_utf8(back.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    let mut typed = vec![
        "locklab".to_string(),
        "--db".into(),
        db.display().to_string(),
    ];
    typed.extend(args.iter().map(|a| a.to_string()));
    assert_eq!(words, typed, "stored: {stored}");
}

#[test]
fn messages_name_the_option_and_the_output_given() {
    let (d, db) = tmp();
    // profile's --lock shares run's --locks parser, and said --locks.
    for (args, needle) in [
        (
            &["profile", "--lock", "", "--", "true"][..],
            "--lock '': empty name",
        ),
        (
            &["profile", "--lock", "std", "--", "true"],
            "--lock std: std is not one",
        ),
    ] {
        let o = locklab(&db, args);
        assert_bad_input(&o, needle);
        assert!(
            !stderr(&o).starts_with("locklab: --locks"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!db.exists());
    // report --out naming the database says the report would destroy it
    // (it said "plot" and suggested plot.svg).
    assert_eq!(locklab(&db, TINY_SIM).status.code(), Some(0));
    let before = std::fs::read(&db).unwrap();
    let o = locklab(&db, &["report", "--out", db.to_str().unwrap()]);
    assert_bad_input(&o, "writing the report there");
    assert!(stderr(&o).contains("report.html") && !stderr(&o).contains("plot"));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    drop(d);
}
