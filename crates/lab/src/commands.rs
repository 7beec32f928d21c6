//! What each CLI command does: a study's command goes to its study; the
//! commands over the store and the lock registry are here.

use crate::cli::{Cli, Cmd, Format};
use crate::error::{LabError, Result};
use crate::registry;
use crate::run::resolve;
use crate::store::Store;
use crate::studies::command::RunCommand;
use crate::{noteln, outln, plot, report};
use serde_json::json;

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli, argv: &[String]) -> Result<i32> {
    match &cli.cmd {
        Cmd::Study(study) => study.run(&cli, argv),
        Cmd::Locks { format } => {
            locks(cli.format(*format).map_err(LabError::input)?)?;
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
                crate::out::print(&report::runs_text(&runs))?;
            }
            Ok(0)
        }
        Cmd::Compare {
            a,
            b,
            format,
            noise,
        } => crate::compare::command(&cli, a, b, *format, *noise),
        Cmd::Baseline { action } => crate::compare::baseline(&cli, action),
        Cmd::Report { runs, out } => crate::html::command(&cli, runs, out),
        Cmd::Show { run, format, reps } => crate::compare::show(&cli, *run, *format, *reps),
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
            plot::plot_run(&meta, &points, bench.as_deref(), out, *log)?;
            noteln!("wrote {}", out.display());
            Ok(0)
        }
    }
}

fn locks(format: Format) -> Result<()> {
    match format {
        Format::Csv => return crate::out::print(&registry::table().csv()),
        Format::Markdown => return crate::out::print(&registry::markdown()),
        Format::Text | Format::Json => {}
    }
    let mutexes: Vec<_> = registry::all().iter().map(|e| (e.info, e.peer)).collect();
    let rwlocks: Vec<_> = registry::rw_all()
        .iter()
        .map(|e| (e.info, e.peer))
        .collect();
    if format == Format::Json {
        let row = |kind: &str, (i, peer): &(locklab::LockInfo, bool)| {
            json!({
                "name": i.name, "kind": kind, "family": i.family.as_str(), "fair": i.fair,
                "blocking": i.blocking, "peer": peer, "source": i.source,
                "summary": i.summary,
            })
        };
        let v: Vec<_> = mutexes
            .iter()
            .map(|e| row("mutex", e))
            .chain(rwlocks.iter().map(|e| row("rwlock", e)))
            .collect();
        return outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "locks": v })).expect("serialises")
        );
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
            "{:<w$} {:<9} {:<5} {:<9} WHAT",
            title,
            "FAMILY",
            "FAIR",
            "BLOCKING"
        )?;
        for (i, peer) in list.iter() {
            let kind = if *peer { " (peer)" } else { "" };
            outln!(
                "{:<w$} {:<9} {:<5} {:<9} {}{kind}",
                i.name,
                i.family.as_str(),
                if i.fair { "yes" } else { "no" },
                if i.blocking { "yes" } else { "no" },
                i.summary,
            )?;
        }
    }
    Ok(())
}
