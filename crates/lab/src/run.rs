//! A study's run from the command line to the store: the store opened
//! before anything is measured, the run recorded, each point stored in its
//! own transaction as it finishes, the stored run printed; and stored runs
//! named on the command line.

use crate::cli::{Cli, RunRef};
use crate::error::{LabError, Result};
use crate::progress::Progress;
use crate::results::{Point, RunMeta};
use crate::store::Store;
use crate::{machine, noteln, outln, report};

/// Exit code when the user interrupted a run (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// The id of a run named on the command line (`last`: the newest).
pub fn resolve(store: &Store, run: RunRef) -> Result<i64> {
    match run {
        RunRef::Id(id) => Ok(id),
        RunRef::Last => store
            .runs()?
            .first()
            .and_then(|r| r.meta.id)
            .ok_or_else(|| {
                LabError::input(format!("{}: no runs stored yet", store.path().display()))
            }),
    }
}

/// Whether progress stays off stderr: `--quiet`, or `--json` (whose
/// callers read stdout and may log stderr).
pub fn progress_quiet(cli: &Cli) -> bool {
    cli.json || cli.quiet
}

/// Opens the store, records the run, runs `body` with a sink that stores
/// each point in its own transaction, then clears `progress` and prints the
/// stored run.
pub fn stored_run(
    cli: &Cli,
    argv: &[String],
    kind: &str,
    params: serde_json::Value,
    progress: &Progress,
    body: impl FnOnce(&mut dyn FnMut(Point) -> Result<()>) -> Result<bool>,
) -> Result<i32> {
    stored_run_as(cli, argv, kind, params, progress, false, body)
}

/// [`stored_run`], printing the run in short ([`report::render_brief`])
/// if `brief`: for a run of several studies.
pub fn stored_run_as(
    cli: &Cli,
    argv: &[String],
    kind: &str,
    params: serde_json::Value,
    progress: &Progress,
    brief: bool,
    body: impl FnOnce(&mut dyn FnMut(Point) -> Result<()>) -> Result<bool>,
) -> Result<i32> {
    // Open (and validate) the database before measuring anything.
    let mut store = Store::open(&cli.db)?;
    crate::interrupt::install();
    let meta = RunMeta {
        id: None,
        kind: kind.into(),
        // The program as the user knows it, not the path cargo built it at;
        // each argument quoted as a shell needs, so that the command can be
        // pasted back.
        command: crate::out::shell_command(
            std::iter::once("locklab").chain(argv.iter().skip(1).map(String::as_str)),
        ),
        params,
        machine: machine::detect(),
        started: machine::now_rfc3339(),
        finished: None,
        complete: false,
    };
    let id = store.begin_run(&meta)?;
    // Under way: the notes held back while the input could still be
    // refused go out now, before the measurement's progress.
    crate::out::release_notes();
    let mut stored = 0usize;
    let complete = {
        let mut sink = |p: Point| -> Result<()> {
            store.add_point(id, &p)?;
            stored += 1;
            Ok(())
        };
        body(&mut sink)?
    };
    if complete {
        store.finish_run(id)?;
    }
    // The bar goes before the report, so that it does not cut into it.
    progress.finish();
    let (meta, points) = store.load(id)?;
    if cli.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report::run_json(&meta, &points)).expect("serialises")
        )?;
    } else if brief {
        crate::out::print(&report::render_brief(&meta, &points))?;
    } else {
        crate::out::print(&report::render_text(&meta, &points))?;
    }
    if complete {
        noteln!("stored as run {id} in {}", cli.db.display());
        Ok(0)
    } else {
        noteln!(
            "interrupted: {stored} finished points kept in run {id} ({}), marked incomplete",
            cli.db.display()
        );
        Ok(EXIT_INTERRUPTED)
    }
}
