//! A study's run from the command line to the store: the store opened
//! before anything is measured, the run recorded, each point stored in its
//! own transaction as it finishes; and stored runs named on the command
//! line. Printing the stored run is the front's job.

use crate::core::args::RunRef;
use crate::core::error::{LabError, Result};
use crate::core::machine;
use crate::core::progress::Progress;
use crate::core::results::{Point, RunMeta};
use crate::core::store::Store;
use crate::core::study::{Ctx, Outcome, Stored};

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
            .ok_or_else(|| LabError::input(format!("{}: no runs stored yet", store.location()))),
    }
}

/// Opens the store, records the run, runs `body` with a sink that stores
/// each point in its own transaction, marks the run complete if `body`
/// says so (`Ok(false)`: interrupted), and clears `progress`. What was
/// stored is returned for the front to print.
pub fn stored_run(
    ctx: &Ctx,
    kind: &str,
    params: serde_json::Value,
    progress: &Progress,
    body: impl FnOnce(&mut dyn FnMut(Point) -> Result<()>) -> Result<bool>,
) -> Result<Outcome> {
    stored_run_as(ctx, kind, params, progress, false, body)
}

/// [`stored_run`], to be printed in short ([`Stored::brief`]) if `brief`:
/// for a run of several studies.
pub fn stored_run_as(
    ctx: &Ctx,
    kind: &str,
    params: serde_json::Value,
    progress: &Progress,
    brief: bool,
    body: impl FnOnce(&mut dyn FnMut(Point) -> Result<()>) -> Result<bool>,
) -> Result<Outcome> {
    // Open (and validate) the database before measuring anything.
    let mut store = Store::open(&ctx.db)?;
    crate::core::interrupt::install();
    let meta = RunMeta {
        id: None,
        uuid: None,
        kind: kind.into(),
        // The program as the user knows it, not the path cargo built it at;
        // each argument quoted as a shell needs, so that the command can be
        // pasted back; a server's password is not kept.
        command: crate::core::store::redact_urls(&crate::core::out::shell_command(
            std::iter::once("locklab").chain(ctx.argv.iter().skip(1).map(String::as_str)),
        )),
        params,
        machine: machine::detect(),
        started: machine::now_rfc3339(),
        finished: None,
        complete: false,
    };
    let id = store.begin_run(&meta)?;
    // Under way: the notes held back while the input could still be
    // refused go out now, before the measurement's progress.
    crate::core::out::release_notes();
    let mut points = 0usize;
    let complete = {
        let mut sink = |p: Point| -> Result<()> {
            store
                .add_point(id, &p)
                .map_err(|e| kept(e, id, points, &ctx.db))?;
            points += 1;
            Ok(())
        };
        body(&mut sink)?
    };
    if complete {
        store
            .finish_run(id)
            .map_err(|e| kept(e, id, points, &ctx.db))?;
    }
    // The bar goes before the report, so that it does not cut into it.
    progress.finish();
    Ok(Outcome::Stored(Stored {
        id,
        complete,
        points,
        brief,
    }))
}

/// A failure to store (a full disk, a server's connection lost) that says
/// what of the run is kept: each point stored before is committed whole.
fn kept(e: LabError, id: i64, points: usize, db: &crate::core::store::Location) -> LabError {
    let what = match points {
        0 => "no point".to_string(),
        1 => "the 1 point".to_string(),
        n => format!("the {n} points"),
    };
    LabError {
        msg: format!(
            "{}; run {id} in {db} keeps {what} stored before it, unfinished (`locklab show {id}`)",
            e.msg
        ),
        ..e
    }
}
