//! `locklab profile` answers for the program it runs, as `locklab run`
//! does (`tests/run.rs`): scripts that fork, ignore SIGTERM and print a lot
//! (`tests/sh/`) are ended, group and all, at the timeout, on Ctrl-C and on
//! SIGTERM; what they leave running when they exit is ended and reported;
//! the profile's temporary directory (open to all users) is removed on
//! every way out, errors and interrupts included; and the lab's memory
//! does not grow with the program's output, even with `--hide-output`.
//! (In a file of its own: `tests/profile.rs` holds the counts to known
//! answers.)

mod common;
mod program;

use common::{compile_c, tmp};
use program::{left_in, script, Group, Lab};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `profile ARGS -- sh group.sh DIR TAG REST…`.
fn group_args(dir: &Path, tag: u32, head: &[&str], rest: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    v.push("--".into());
    v.push("sh".into());
    v.push(script("group.sh").to_str().unwrap().into());
    v.push(dir.to_str().unwrap().into());
    v.push(tag.to_string());
    v.extend(rest.iter().map(|s| s.to_string()));
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn the_timeout_ends_the_group_and_the_directory_goes() {
    let (d, db) = tmp();
    let g = Group::new(d.path(), 1047);
    let a = group_args(
        d.path(),
        1047,
        &["profile", "--hide-output", "--timeout", "1"],
        &["hang"],
    );
    let e = Lab::start(&db, d.path(), &strs(&a), &[]).wait(Duration::from_secs(30));
    // A killed program writes no counts: refused in one line.
    assert_eq!(e.code, Some(2), "{}", e.stderr);
    assert_eq!(e.stderr.trim_end().lines().count(), 1, "{}", e.stderr);
    assert!(e.stderr.contains("timed out after 1 s"), "{}", e.stderr);
    assert!(e.secs < 10.0, "{} s", e.secs);
    g.assert_gone();
    assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
}

#[test]
fn ctrl_c_and_sigterm_end_the_group_and_remove_the_directory() {
    for (sig, tag) in [(libc::SIGINT, 1049), (libc::SIGTERM, 1051)] {
        let (d, db) = tmp();
        let g = Group::new(d.path(), tag);
        let a = group_args(d.path(), tag, &["profile", "--hide-output"], &["hang"]);
        let lab = Lab::start(&db, d.path(), &strs(&a), &[]);
        g.wait_hanging(Duration::from_secs(30));
        assert_eq!(left_in(d.path(), "locklab-profile-").len(), 1);
        let t = Instant::now();
        lab.signal(sig);
        let e = lab.wait(Duration::from_secs(30));
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(e.code, Some(130), "signal {sig}: {}", e.stderr);
        assert!(e.stderr.contains("interrupted"), "{}", e.stderr);
        assert!(secs < 10.0, "signal {sig}: {secs} s after it");
        g.assert_gone();
        assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
    }
}

#[test]
fn a_child_left_behind_is_ended_and_reported() {
    let (d, db) = tmp();
    let g = Group::new(d.path(), 1053);
    // A program that takes a lock, so that there are counts to store.
    let prog = compile_c("run_prog");
    let a = group_args(
        d.path(),
        1053,
        &["profile", "--hide-output"],
        &["leave", prog.to_str().unwrap()],
    );
    let e = Lab::start(&db, d.path(), &strs(&a), &[]).wait(Duration::from_secs(30));
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    assert!(
        e.stderr
            .contains("left 1 process running after it exited; ended it"),
        "{}",
        e.stderr
    );
    assert!(e.secs < 15.0, "{} s", e.secs);
    g.assert_gone();
    assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
}

#[test]
fn a_child_that_leaves_the_group_is_not_waited_for() {
    // `setsid` takes it out of the group, out of the lab's reach (and the
    // lab says it does not chase it), but not its hold on the output.
    if Command::new("setsid").arg("true").status().is_err() {
        eprintln!("note: no setsid here (util-linux); skipped");
        return;
    }
    let (d, db) = tmp();
    let g = Group::new(d.path(), 1057);
    let prog = compile_c("run_prog");
    let a = group_args(
        d.path(),
        1057,
        &["profile", "--hide-output"],
        &["escape", prog.to_str().unwrap()],
    );
    let e = Lab::start(&db, d.path(), &strs(&a), &[]).wait(Duration::from_secs(30));
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    assert!(e.stderr.contains("outside its group"), "{}", e.stderr);
    assert!(e.secs < 10.0, "{} s", e.secs);
    assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
    // It still runs, as documented; the test ends it (`Group`'s drop).
    assert_eq!(g.running().len(), 1, "{:?}", g.pids());
}

#[test]
fn memory_does_not_grow_with_the_output_and_errors_leave_no_directory() {
    // 200 MB of output: a lab that kept it would hold 200 MB at least.
    let (d, db) = tmp();
    let prints = script("prints.sh");
    let prog = compile_c("run_prog");
    let a = [
        "profile",
        "--hide-output",
        "--",
        "sh",
        prints.to_str().unwrap(),
        "200000000",
        prog.to_str().unwrap(),
    ];
    let e = Lab::start(&db, d.path(), &a, &[]).wait(Duration::from_secs(120));
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    assert!(
        e.max_rss_kib < 80 * 1024,
        "the lab peaked at {} KiB for 200 MB of output",
        e.max_rss_kib
    );
    assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
    // A program that writes no profile is an error; its directory goes
    // all the same.
    let a = ["profile", "--", "env", "-u", "LD_PRELOAD", "true"];
    let e = Lab::start(&db, d.path(), &a, &[]).wait(Duration::from_secs(30));
    assert_eq!(e.code, Some(2), "{}", e.stderr);
    assert!(e.stderr.contains("wrote no profile"), "{}", e.stderr);
    assert_eq!(left_in(d.path(), "locklab-profile-"), Vec::<String>::new());
}
