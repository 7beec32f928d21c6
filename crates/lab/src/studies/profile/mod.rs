//! `locklab profile`: which of an unmodified program's locks it waits on.
//! The program runs once under the interposer with counting on
//! (`LOCKLAB_PROFILE`, `crates/preload/src/profile.rs`), under the C
//! library's locks or one of locklab's; every process it starts that
//! exits normally writes its counts per lock object; this study reads
//! them, names each lock's first contended caller from the program's
//! symbols, stores one point per lock object, and prints the most
//! waited-on locks, with a `bench spin` command that reproduces the worst
//! one's pattern.

pub mod args;
pub mod report;
pub mod symbols;

use crate::core::error::{LabError, Result};
use crate::core::program::launch::{run_once, Exit, Launch};
use crate::core::program::{
    check_program, chosen_locks, chosen_rwlock, ended, interrupted, preload, shared_tempdir, shown,
    Leftovers, VARS,
};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::run::stored_run;
use crate::core::run::EXIT_INTERRUPTED;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::noteln;
use crate::studies::shared::lock_profile::{self as parse, Counts, Process, BENCH};
use args::ProfileArgs;
use report::KEEP;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::time::Duration;

/// `--lock`: one mutex the interposer can put under a program.
fn chosen_lock(name: &str) -> Result<&'static str> {
    if name.contains(',') || name == "all" {
        return Err(LabError::input(format!(
            "--lock {name}: one lock only (the program runs once); `locklab run --locks` compares several"
        )));
    }
    // The list's parser names its option `--locks`; here it is `--lock`.
    let mut v = chosen_locks(Some(name)).map_err(|e| LabError {
        msg: e.msg.replacen("--locks ", "--lock ", 1),
        ..e
    })?;
    Ok(v.remove(0))
}

/// The stored points of one process: its objects, most waited-on first,
/// the first [`KEEP`] apart and the rest summed in one.
fn points_of(p: &Process, resolver: &mut symbols::Resolver) -> Vec<Point> {
    let mut objs: Vec<_> = p.objects.iter().collect();
    objs.sort_by(|a, b| {
        (b.counts.wait_ns(), b.counts.acquisitions + b.counts.reads)
            .cmp(&(a.counts.wait_ns(), a.counts.acquisitions + a.counts.reads))
    });
    let process = json!({
        "pid": p.pid, "ppid": p.ppid, "exe": p.exe, "elapsed_ns": p.elapsed_ns,
        "threads": p.threads, "objects": p.objects.len(), "overflow": p.overflow,
        "glibc_only_calls": p.glibc_only, "rwlock": p.rwlock, "misuse": p.misuse,
    });
    let point = |object: String, kind: &str, caller: Value, c: &Counts| {
        let mut rep = Rep::one_thread(0, p.elapsed_ns as f64 * 1e-9, 0.0, c.acquisitions + c.reads);
        rep.set_metrics(c);
        Point {
            bench: BENCH.into(),
            lock: p.lock.clone(),
            threads: c.threads,
            params: json!({
                "object": object, "kind": kind, "caller": caller, "process": process,
            }),
            reps: vec![rep],
        }
    };
    let mut out: Vec<Point> = objs
        .iter()
        .take(KEEP)
        .map(|o| {
            let caller = match &o.caller {
                Some(c) => Value::String(resolver.describe(c, &p.exe)),
                None => Value::Null,
            };
            point(format!("{:#x}", o.addr), o.kind, caller, &o.counts)
        })
        .collect();
    if objs.len() > KEEP {
        let mut sum = Counts::default();
        for o in &objs[KEEP..] {
            sum.add(&o.counts);
        }
        out.push(point(
            format!("{} others", objs.len() - KEEP),
            "-",
            Value::Null,
            &sum,
        ));
    }
    out
}

/// `locklab profile`: checks the names, the program and the interposer,
/// runs the program once with counting on, then stores and prints.
pub fn command(ctx: &Ctx, a: &ProfileArgs) -> Result<Outcome> {
    // Ctrl-C and SIGTERM reach the lab, which ends the program's group
    // and removes the profile's directory.
    crate::core::interrupt::install_with_term();
    check_program(&a.command[0])?;
    let lock = chosen_lock(&a.lock)?;
    let rwlock = chosen_rwlock(&a.rwlock)?;
    let so = preload()?;
    // Removed when it goes out of scope: on every return below, errors and
    // interrupts included.
    let dir = shared_tempdir("locklab-profile-", "the profile")?;
    let shown = shown(&a.command);
    let timeout = Duration::from_secs_f64(a.timeout);
    let launch = Launch {
        command: &a.command,
        set: vec![
            ("LD_PRELOAD", so.into_os_string()),
            ("LOCKLAB_LOCK", OsString::from(lock)),
            ("LOCKLAB_RWLOCK", OsString::from(&rwlock)),
            ("LOCKLAB_PROFILE", dir.path().as_os_str().to_owned()),
        ],
        remove: &VARS,
        timeout,
        show_output: !a.hide_output,
        metric: None,
    };
    let o =
        run_once(&launch).map_err(|e| LabError::input(format!("cannot start `{shown}`: {e}")))?;
    Leftovers::default().note(&shown, &o);
    if o.exit == Exit::Interrupted {
        noteln!("{}", interrupted(&shown));
        return Ok(Outcome::Exit(EXIT_INTERRUPTED));
    }
    let processes = parse::read_dir(dir.path())
        .map_err(|e| LabError::failed(format!("cannot read the profile: {e}")))?;
    if processes.is_empty() {
        let why = match o.exit {
            Exit::Code(_) => {
                "it may be statically linked, or not call the C library's lock functions \
                              through the dynamic linker, or end with _exit"
                    .to_string()
            }
            e => format!(
                "it {}, and only a process that exits writes its counts",
                ended(e, timeout)
            ),
        };
        return Err(LabError::input(format!(
            "`{shown}` wrote no profile: {why}"
        )));
    }
    if o.exit != Exit::Code(0) {
        noteln!(
            "note: `{shown}` {}; the counts of the processes that exited follow",
            ended(o.exit, timeout)
        );
    }
    let mut resolver = symbols::Resolver::default();
    let points: Vec<Point> = processes
        .iter()
        .flat_map(|p| points_of(p, &mut resolver))
        .collect();
    let lockless = processes.iter().filter(|p| p.objects.is_empty()).count();
    if points.is_empty() {
        noteln!(
            "`{shown}`: {} process{} wrote counts, and none took a lock through the C library's functions",
            processes.len(),
            if processes.len() == 1 { "" } else { "es" }
        );
    }
    let params = json!({
        "command": shown, "lock": lock, "rwlock": rwlock, "top": a.top,
        "wall_s": o.wall_s, "exit": o.exit.to_string(),
        "processes": processes.len(), "processes_without_locks": lockless,
    });
    let progress = Progress::counting(points.len() as u64, ctx.progress_quiet(), "lock objects");
    stored_run(ctx, BENCH, params, &progress, |sink| {
        for p in points {
            sink(p)?;
        }
        Ok(true)
    })
}

/// The study's report: the most waited-on locks of each process.
pub struct Profile;

impl Study for Profile {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::table(out, meta, points);
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, _of: &[&Point], _all: &[Point]) -> Value {
        report::point_json(p)
    }
}

impl crate::core::study::RunCommand for ProfileArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Profile);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}
