//! What each CLI command does: a study's command goes to its study; the
//! commands over the store and the lock registry are here.

use crate::core::error::{LabError, Result};
use crate::core::registry;
use crate::core::run::resolve;
use crate::core::store::Store;
use crate::core::study::{Ctx, Outcome, RunCommand, Stored};
use crate::core::{plot, report};
use crate::front::cli::{Cli, Cmd, Format};
use crate::front::show;
use crate::{noteln, outln};
use serde_json::json;

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli, argv: &[String]) -> Result<i32> {
    match &cli.cmd {
        Cmd::Study(study) => {
            let ctx = Ctx {
                db: cli.db.clone(),
                json: cli.json,
                quiet: cli.quiet,
                argv: argv.to_vec(),
            };
            match study.run(&ctx)? {
                Outcome::Exit(code) => Ok(code),
                Outcome::Stored(stored) => print_stored(&ctx, stored),
            }
        }
        Cmd::Locks { names, format } => {
            locks(names, cli.format(*format).map_err(LabError::input)?)?;
            Ok(0)
        }
        Cmd::Runs => {
            // Nothing stored yet is an empty list, and creates nothing.
            let runs = match Store::open_existing(&cli.db)? {
                Some(store) => store.runs()?,
                None => Vec::new(),
            };
            if cli.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "runs": runs })).expect("serialises")
                )?;
            } else {
                crate::core::out::print(&report::runs_text(&runs))?;
            }
            Ok(0)
        }
        Cmd::Compare {
            a,
            b,
            format,
            noise,
        } => crate::front::compare::command(&cli, a, b, *format, *noise),
        Cmd::Baseline { action } => crate::front::compare::baseline(&cli, action),
        Cmd::Push { runs, to } => {
            crate::front::share::command(&cli, crate::front::share::Direction::Push, runs, to)
        }
        Cmd::Pull { runs, from } => {
            crate::front::share::command(&cli, crate::front::share::Direction::Pull, runs, from)
        }
        Cmd::Machines => crate::front::share::machines_command(&cli),
        Cmd::History {
            bench,
            lock,
            threads,
            machine,
            format,
            noise,
            out,
        } => {
            let q = crate::front::history::Query {
                bench: bench.trim().to_string(),
                lock: lock.trim().to_string(),
                threads: *threads,
                machine: machine.as_ref().map(|m| m.trim().to_string()),
                noise: f64::from(*noise) / 100.0,
            };
            crate::front::history::command(&cli, &q, *format, out.as_deref())
        }
        Cmd::Report { runs, out } => crate::front::html::command(&cli, runs, out),
        Cmd::Show { run, format, reps } => crate::front::compare::show(&cli, *run, *format, *reps),
        Cmd::Plot {
            run,
            out,
            log,
            bench,
        } => {
            if cli.json {
                return Err(LabError::input(
                    "--json: plot writes an SVG file (--out) and prints no table; leave --json out",
                ));
            }
            plot::check_out(out, &cli.db, "plot", "plot.svg")?;
            let store = Store::open_read_only(&cli.db)?;
            let (meta, points) = store.load(resolve(&store, *run)?)?;
            crate::front::plot::plot_run(&meta, &points, bench.as_deref(), out, *log)?;
            noteln!("wrote {}", out.display());
            Ok(0)
        }
    }
}

/// Prints a run a study's command stored (its tables and verdict, in
/// short for a run of several studies, or its JSON) and says where it is;
/// the exit code: 0, or 130 if the run was interrupted.
fn print_stored(ctx: &Ctx, stored: Stored) -> Result<i32> {
    let Stored {
        id,
        complete,
        points,
        brief,
    } = stored;
    let (meta, all) = Store::open_read_only(&ctx.db)?.load(id)?;
    unclaimed_point(id, &all)?;
    if ctx.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&show::run_json(&meta, &all)).expect("serialises")
        )?;
    } else if brief {
        crate::core::out::print(&show::render_brief(&meta, &all))?;
    } else {
        crate::core::out::print(&show::render_text(&meta, &all))?;
    }
    if complete {
        noteln!("stored as run {id} in {}", ctx.db);
        Ok(0)
    } else {
        noteln!(
            "interrupted: {points} finished points kept in run {id} ({}), marked incomplete",
            ctx.db
        );
        Ok(crate::core::run::EXIT_INTERRUPTED)
    }
}

/// Refuses a run that holds a point no study of the catalog reads: its
/// study's [`crate::core::study::Study::name`] and the name its runner
/// stores points under differ, so `show` and `plot` would not find it.
/// Every test that runs a study goes through here.
fn unclaimed_point(id: i64, points: &[crate::core::results::Point]) -> Result<()> {
    match points
        .iter()
        .find(|p| crate::front::catalog::find(&p.bench).is_none())
    {
        Some(p) => Err(LabError::failed(format!(
            "run {id}: a point is stored under `{}`, which no study of the catalog reads \
             (a study's name and the name its runner stores points under differ)",
            p.bench
        ))),
        None => Ok(()),
    }
}

fn locks(names: &[String], format: Format) -> Result<()> {
    let mutexes: Vec<_> = registry::all().iter().map(|e| (e.info, e.peer)).collect();
    let rwlocks: Vec<_> = registry::rw_all()
        .iter()
        .map(|e| (e.info, e.peer))
        .collect();
    if !names.is_empty() {
        for n in names {
            let known = |l: &[(locklab::LockInfo, bool)]| l.iter().any(|(i, _)| i.name == n);
            if !known(&mutexes) && !known(&rwlocks) {
                let valid: Vec<_> = mutexes
                    .iter()
                    .chain(&rwlocks)
                    .map(|(i, _)| i.name)
                    .collect();
                return Err(LabError::input(format!(
                    "unknown lock '{n}'; valid locks: {}",
                    valid.join(", ")
                )));
            }
        }
    }
    match format {
        Format::Csv | Format::Markdown if !names.is_empty() => {
            return Err(LabError::input(
                "--format csv and markdown list every lock: give no NAME, or use text or json",
            ))
        }
        Format::Csv => return crate::core::out::print(&registry::table().csv()),
        Format::Markdown => return crate::core::out::print(&registry::markdown()),
        Format::Text | Format::Json => {}
    }
    if format == Format::Json {
        let row = |kind: &str, (i, peer): &(locklab::LockInfo, bool)| {
            json!({
                "name": i.name, "kind": kind, "family": i.family.as_str(), "fair": i.fair,
                "blocking": i.blocking, "numa_aware": i.numa_aware, "peer": peer, "source": i.source,
                "summary": i.summary,
            })
        };
        let v: Vec<_> = mutexes
            .iter()
            .map(|e| row("mutex", e))
            .chain(rwlocks.iter().map(|e| row("rwlock", e)))
            .filter(|r| names.is_empty() || names.iter().any(|n| r["name"] == n.as_str()))
            .collect();
        return outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "locks": v })).expect("serialises")
        );
    }
    if !names.is_empty() {
        // The long form, every field with the source, in the order given.
        let mut shown: Vec<&str> = Vec::new();
        for n in names {
            if shown.contains(&n.as_str()) {
                continue;
            }
            let (kind, (i, peer)) = match mutexes.iter().find(|(i, _)| i.name == n) {
                Some(m) => ("mutex", m),
                None => (
                    "reader-writer lock",
                    rwlocks
                        .iter()
                        .find(|(i, _)| i.name == n)
                        .expect("checked above"),
                ),
            };
            if !shown.is_empty() {
                outln!()?;
            }
            shown.push(n);
            let yes = |b: bool| if b { "yes" } else { "no" };
            outln!("{}", i.name)?;
            outln!("  kind      {kind}{}", if *peer { " (peer)" } else { "" })?;
            outln!("  family    {}", i.family.as_str())?;
            outln!("  fair      {}", yes(i.fair))?;
            outln!("  blocking  {}", yes(i.blocking))?;
            outln!("  NUMA      {}", yes(i.numa_aware))?;
            outln!("  what      {}", i.summary)?;
            outln!("  source    {}", i.source)?;
        }
        return Ok(());
    }
    let w = mutexes
        .iter()
        .chain(&rwlocks)
        .map(|(i, _)| i.name.len())
        .max()
        .unwrap_or(4);
    for (title, list) in [("MUTEX", &mutexes), ("READER-WRITER LOCK", &rwlocks)] {
        if title != "MUTEX" {
            outln!()?;
        }
        outln!(
            "{:<w$} {:<10} {:<5} {:<9} {:<5} WHAT",
            title,
            "FAMILY",
            "FAIR",
            "BLOCKING",
            "NUMA"
        )?;
        for (i, peer) in list.iter() {
            let kind = if *peer { " (peer)" } else { "" };
            outln!(
                "{:<w$} {:<10} {:<5} {:<9} {:<5} {}{kind}",
                i.name,
                i.family.as_str(),
                if i.fair { "yes" } else { "no" },
                if i.blocking { "yes" } else { "no" },
                if i.numa_aware { "yes" } else { "no" },
                i.summary,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::{Point, Rep};

    fn point(bench: &str) -> Point {
        Point {
            bench: bench.into(),
            lock: "tas".into(),
            threads: 1,
            params: serde_json::Value::Null,
            reps: vec![Rep::one_thread(0, 1.0, 1.0, 1)],
        }
    }

    #[test]
    fn a_point_no_study_reads_is_refused() {
        let all = crate::front::catalog::all();
        let (a, b) = (all[0].name(), all[1].name());
        assert!(unclaimed_point(1, &[point(a), point(b)]).is_ok());
        let stray = format!("{a}x");
        let e = unclaimed_point(7, &[point(a), point(&stray)]).unwrap_err();
        assert!(
            e.msg.contains("run 7") && e.msg.contains(&format!("`{stray}`")),
            "{}",
            e.msg
        );
    }

    #[test]
    fn every_study_is_found_under_its_own_name_once() {
        let all = crate::front::catalog::all();
        assert!(all.len() >= 11, "studies: {}", all.len());
        for s in all {
            let same: Vec<_> = all.iter().filter(|t| t.name() == s.name()).collect();
            assert_eq!(same.len(), 1, "two studies named {}", s.name());
            assert_eq!(
                crate::front::catalog::find(s.name()).unwrap().name(),
                s.name()
            );
        }
    }
}
