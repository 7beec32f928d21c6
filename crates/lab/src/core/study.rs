//! What a study is to the rest of the lab: the [`Study`] trait (what the
//! front's `show`, `show --json`, `plot` and `report` ask of a study about
//! its stored points), the [`RunCommand`] trait of a study's arguments, and
//! the context [`Ctx`] a study runs in. The front's catalog lists every
//! study; nothing here names one.

use crate::core::error::Result;
use crate::core::results::{Point, RunMeta};
use serde_json::Value;
use std::path::Path;

/// Draws a run's points of a study to an SVG file (`log_y`: logarithmic
/// value axis).
pub type PlotFn = fn(&RunMeta, &[Point], &Path, bool) -> Result<()>;

/// What the shared report, JSON and plot code asks of a study about its
/// stored points. Only [`Study::name`] and [`Study::text`] are required.
pub trait Study: Sync {
    /// The name its points are stored under (`Point::bench`), which is
    /// also its `plot --bench` value.
    fn name(&self) -> &'static str;

    /// Writes the tables of its points of one run (`points`, in stored
    /// order; `all` is every point of the run).
    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], all: &[Point]);

    /// Its tables in short, for a run of several studies (the standard
    /// suite): the one table that matters most. By default all of
    /// [`Study::text`].
    fn brief(&self, out: &mut String, meta: &RunMeta, points: &[&Point], all: &[Point]) {
        self.text(out, meta, points, all)
    }

    /// Fields that one of its points adds to (or sets in) the JSON object
    /// every point has: an object, or `null` for none. `of_study` are its
    /// points of the run, `all` every point.
    fn point_json(
        &self,
        _meta: &RunMeta,
        _p: &Point,
        _of_study: &[&Point],
        _all: &[Point],
    ) -> Value {
        Value::Null
    }

    /// Keys it adds to the top level of every run's JSON object, from its
    /// points of the run (maybe none), so that the object's shape does not
    /// depend on what the run measured.
    fn run_keys(&self, _meta: &RunMeta, _points: &[&Point]) -> Vec<(&'static str, Value)> {
        Vec::new()
    }

    /// The whole JSON object of a run that is this study's own kind,
    /// instead of the common one; `None` for any other run.
    fn own_json(&self, _meta: &RunMeta, _points: &[Point]) -> Option<Value> {
        None
    }

    /// What its points of one run answer (`points`: its points, in stored
    /// order; `all`: every point of the run): the lines of the verdict
    /// printed last and kept as the JSON's `verdict`. None by default.
    fn verdict(
        &self,
        _meta: &RunMeta,
        _points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        Vec::new()
    }

    /// Its plot, if it has one.
    fn plot(&self) -> Option<PlotFn> {
        None
    }

    /// What its plot draws, for `plot --help` (`None`: throughput against
    /// threads, the plot's title says).
    fn plot_help(&self) -> Option<&'static str> {
        None
    }
}

/// What a study's command is given besides its arguments: the global
/// options of the command line, taken by the front.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The results store (`--db`).
    pub db: crate::core::store::Location,
    /// JSON on stdout instead of tables (`--json`).
    pub json: bool,
    /// No progress on stderr (`--quiet`).
    pub quiet: bool,
    /// The command line as typed, for the run's record.
    pub argv: Vec<String>,
}

impl Ctx {
    /// Whether progress stays off stderr: `--quiet`, or `--json` (whose
    /// callers read stdout and may log stderr).
    pub fn progress_quiet(&self) -> bool {
        self.json || self.quiet
    }
}

/// A run a command stored, for the front to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Its id in the store.
    pub id: i64,
    /// Whether every point was measured (not interrupted).
    pub complete: bool,
    /// How many points were stored.
    pub points: usize,
    /// Print it in short (each study's [`Study::brief`]): a run of
    /// several studies.
    pub brief: bool,
}

/// What a study's command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It stored a run, which the front prints, then exits 0 (or 130 if
    /// the run was interrupted).
    Stored(Stored),
    /// It printed what it had to say itself (a command that stores
    /// nothing) and ends with this exit code.
    Exit(i32),
}

/// What a study's arguments do when given: run the study and store what
/// it measured (the front prints it).
pub trait RunCommand {
    /// The study that reads the points this command stores (`None`: it
    /// stores none).
    const STUDY: Option<&'static dyn Study> = None;

    /// Runs the command with these arguments in `ctx`.
    fn run(&self, ctx: &Ctx) -> Result<Outcome>;

    /// Adds the studies of this command (its [`RunCommand::STUDY`], or a
    /// command group's) to `out`.
    fn studies(out: &mut Vec<&'static dyn Study>) {
        out.extend(Self::STUDY);
    }

    /// Adds the type names of the argument structs this command runs
    /// (its own, or a command group's) to `out`: where each command's
    /// code lives, for the check that every study folder is reached.
    fn arg_types(out: &mut Vec<&'static str>) {
        out.push(std::any::type_name::<Self>());
    }
}
