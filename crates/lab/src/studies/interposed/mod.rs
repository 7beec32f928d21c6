//! `locklab run`: an unmodified program under the C library's own locks
//! (the baseline) and under each chosen lock of the registry, put there by
//! the interposer (`liblocklab_preload.so`, `LD_PRELOAD`), repetitions
//! interleaved. Per repetition: wall time, user and system CPU time, peak
//! memory, how it ended, and optionally a figure read from its output. A
//! lock under which the program ends differently from the baseline is a
//! failure, not a rank. Where the CPU has RTM and the C library still
//! elides (glibc up to 2.42, `GLIBC_TUNABLES=glibc.elision.enable=1`),
//! `glibc-elision` runs beside them.

pub mod args;
pub mod record;
pub mod report;

use crate::core::error::{LabError, Result};
use crate::core::program::launch::{run_once, Exit, Launch};
use crate::core::program::{
    check_program, chosen_locks, chosen_rwlock, ended, interrupted, preload, shared_tempdir, shown,
    Leftovers, VARS,
};
pub use crate::core::program::{BASELINE, PASSTHROUGH};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::run::stored_run;
use crate::core::run::EXIT_INTERRUPTED;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::core::sweep::{Group, RepRun};
use crate::noteln;
use args::RunArgs;
pub use record::{RunMetrics, BENCH, GLIBC_ELISION};

use serde_json::{json, Value};
use std::ffi::OsString;
use std::time::Duration;

/// One way to run the program.
struct Contender {
    name: String,
    set: Vec<(&'static str, OsString)>,
}

/// Whether the C library can elide its locks here: RTM, and glibc up to
/// 2.42 (2.43 dropped elision).
fn glibc_elides() -> bool {
    if !locklab::rtm_available() {
        return false;
    }
    // SAFETY: returns a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let v = v.to_string_lossy();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) <= (2, 42)
}

extern "C" {
    fn gnu_get_libc_version() -> *const std::ffi::c_char;
}

/// The last non-empty line of some output, for a message.
fn last_line(b: &[u8]) -> String {
    let text = String::from_utf8_lossy(b);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(200).collect())
        .unwrap_or_default()
}

/// Whether a lock of the interposer takes effect in the program, from one
/// unmeasured run under the first of locklab's locks (or, if only the
/// passthrough is chosen, under it) with `LOCKLAB_MARK` set
/// (`crates/preload/src/mark.rs`): the interposer must have loaded, and
/// under a lock of locklab's it must have set up a lock object. `Err`
/// (one line, nothing ranked) if not; `Ok(Some(code))` if the user
/// stopped it; `Ok(None)` if it took effect or nothing is interposed.
fn took_effect<'a>(
    contenders: &[Contender],
    launch: impl Fn(&Contender) -> Launch<'a>,
    shown: &str,
    timeout: Duration,
    leftovers: &Leftovers,
) -> Result<Option<i32>> {
    let interposed = |c: &&Contender| c.set.iter().any(|(k, _)| *k == "LD_PRELOAD");
    let Some(c) = contenders
        .iter()
        .filter(interposed)
        .find(|c| c.name != PASSTHROUGH)
        .or_else(|| contenders.iter().find(interposed))
    else {
        return Ok(None);
    };
    let marks = shared_tempdir("locklab-run-", "the interposer's marks")?;
    let mut l = launch(c);
    l.set
        .push(("LOCKLAB_MARK", marks.path().as_os_str().to_owned()));
    let o = run_once(&l).map_err(|e| LabError::input(format!("cannot start `{shown}`: {e}")))?;
    leftovers.note(shown, &o);
    if o.exit == Exit::Interrupted {
        noteln!("{}", interrupted(shown));
        return Ok(Some(EXIT_INTERRUPTED));
    }
    if !marks.path().join("loaded").exists() {
        return Err(LabError::input(format!(
            "`{shown}`: the interposer did not load in it (it is statically linked, or replaces LD_PRELOAD \
             before it starts its program), so no lock of locklab's can take effect; nothing ranked"
        )));
    }
    // Under the passthrough only the load can be seen (its calls go
    // straight to the C library); and a run that failed may have ended
    // before its first lock: the measured runs report that failure.
    if c.name != PASSTHROUGH && o.exit == Exit::Code(0) && !marks.path().join("used").exists() {
        return Err(LabError::input(format!(
            "`{shown}`: the interposer loaded but {} never took effect: no process of the program took a \
             pthread mutex, reader-writer lock or spin lock through it (it takes none, or only ones the C library keeps, \
             or it runs its work with LD_PRELOAD removed); nothing ranked",
            c.name
        )));
    }
    if o.exit != Exit::Code(0) {
        noteln!(
            "note: `{shown}` {} under {} in the unmeasured run that checks the interposer",
            ended(o.exit, timeout),
            c.name
        );
    }
    Ok(None)
}

/// `locklab run`: checks everything it can before anything is stored (the
/// program, the names, the interposer, the regular expression, one
/// unmeasured run under the baseline, which must succeed, and one under
/// the interposer, in which a lock must take effect: `took_effect`),
/// then runs and stores; returns the exit code (130 if the user stopped
/// it: the program's group is ended first).
pub fn command(ctx: &Ctx, a: &RunArgs) -> Result<Outcome> {
    // Ctrl-C and SIGTERM reach the lab, which ends the program's group.
    crate::core::interrupt::install_with_term();
    check_program(&a.command[0])?;
    let locks = chosen_locks(a.locks.as_deref())?;
    let rwlock = chosen_rwlock(&a.rwlock)?;
    let so = preload()?;
    let metric = match &a.metric {
        Some(m) => Some(regex_lite::Regex::new(m).map_err(|e| {
            LabError::input(format!(
                "--metric '{m}': not a regular expression: {}",
                crate::core::error::one_line(&e.to_string())
            ))
        })?),
        None => None,
    };
    if let Some(re) = &metric {
        if re.captures_len() < 2 {
            return Err(LabError::input(format!(
                "--metric '{}': it needs a group, like 'ops/s: ([0-9.]+)': group 1 is the figure",
                re.as_str()
            )));
        }
    }
    let timeout = Duration::from_secs_f64(a.timeout);
    let shown = shown(&a.command);

    let mut contenders = vec![Contender {
        name: BASELINE.into(),
        set: Vec::new(),
    }];
    if glibc_elides() {
        let tunables = match std::env::var_os("GLIBC_TUNABLES") {
            Some(t) if !t.is_empty() => {
                let mut t = t;
                t.push(":glibc.elision.enable=1");
                t
            }
            _ => OsString::from("glibc.elision.enable=1"),
        };
        contenders.push(Contender {
            name: GLIBC_ELISION.into(),
            set: vec![("GLIBC_TUNABLES", tunables)],
        });
    }
    for l in &locks {
        contenders.push(Contender {
            name: if *l == BASELINE {
                PASSTHROUGH.to_string()
            } else {
                (*l).to_string()
            },
            set: vec![
                ("LD_PRELOAD", so.clone().into_os_string()),
                ("LOCKLAB_LOCK", OsString::from(*l)),
                ("LOCKLAB_RWLOCK", OsString::from(&rwlock)),
            ],
        });
    }
    let launch = |c: &Contender| Launch {
        command: &a.command,
        set: c.set.clone(),
        remove: &VARS,
        timeout,
        show_output: a.show_output,
        metric: metric.clone(),
    };
    let leftovers = Leftovers::default();

    // The probe: one unmeasured run under the baseline.
    let probe = run_once(&launch(&contenders[0]))
        .map_err(|e| LabError::input(format!("cannot start `{shown}`: {e}")))?;
    leftovers.note(&shown, &probe);
    if probe.exit == Exit::Interrupted {
        noteln!("{}", interrupted(&shown));
        return Ok(Outcome::Exit(EXIT_INTERRUPTED));
    }
    if probe.exit != Exit::Code(0) {
        return Err(LabError::input(format!(
            "`{shown}` {} under the C library's own locks (the baseline); locklab run compares \
             locks on a program that succeeds{}",
            ended(probe.exit, timeout),
            match last_line(&probe.stderr) {
                l if l.is_empty() => String::new(),
                l => format!(" (its stderr ends: {l})"),
            }
        )));
    }
    if metric.is_some() && probe.metric.is_none() {
        return Err(LabError::input(format!(
            "--metric '{}' matches no number in the program's output (group 1 must be one)",
            a.metric.as_deref().unwrap_or_default()
        )));
    }
    // The second probe: one unmeasured run under the interposer, which
    // marks whether it loaded and whether a lock of locklab's was set up.
    if let Some(code) = took_effect(&contenders, launch, &shown, timeout, &leftovers)? {
        return Ok(Outcome::Exit(code));
    }

    let params = json!({
        "command": shown, "locks": locks, "rwlock": rwlock, "reps": a.reps,
        "metric": a.metric, "lower_is_better": a.lower_is_better, "timeout_s": a.timeout,
        "contenders": contenders.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
    });
    let units = contenders.len() as u64 * u64::from(a.reps);
    let progress = Progress::counting(units, ctx.progress_quiet(), "runs");
    let r = stored_run(ctx, "run", params.clone(), &progress, |sink| {
        let group = Group {
            bench: BENCH,
            threads: 1,
            params: params.clone(),
            reps: a.reps,
            contenders: contenders
                .iter()
                .map(|c| {
                    let l = launch(c);
                    let (leftovers, shown) = (&leftovers, &shown);
                    let run: RepRun<'_> = Box::new(move || {
                        let o =
                            run_once(&l).map_err(|e| format!("cannot start the program: {e}"))?;
                        leftovers.note(shown, &o);
                        let m = RunMetrics {
                            user_s: o.user_s,
                            sys_s: o.sys_s,
                            max_rss_kib: o.max_rss_kib,
                            exit: o.exit,
                            metric: o.metric,
                        };
                        let mut rep = Rep::one_thread(0, o.wall_s, m.user_s + m.sys_s, 1);
                        rep.set_metrics(&m);
                        Ok(rep)
                    });
                    (c.name.clone(), run)
                })
                .collect(),
        };
        group.run(
            &progress,
            |name, rep| format!("run: {name}, rep {rep}"),
            |name, e| LabError::failed(format!("run: {name}: {e}")),
            sink,
        )
    });
    progress.finish();
    if a.show_output {
        noteln!("(the program's output above was captured too; `locklab show` has the figures)");
    }
    r
}

/// The study's reports: the locks ranked against the baseline.
pub struct Interposed;

impl Study for Interposed {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::table(out, points);
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, of_study: &[&Point], _all: &[Point]) -> Value {
        report::point_json(p, of_study)
    }

    fn verdict(
        &self,
        _meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        report::verdict(points)
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(report::plot)
    }

    fn plot_help(&self) -> Option<&'static str> {
        Some("`run` draws each lock's ratio to the baseline for a `locklab run`")
    }
}

impl crate::core::study::RunCommand for RunArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Interposed);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}
