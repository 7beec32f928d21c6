//! The studies: each folder one study, with its arguments, its plan, its
//! runner, its report and its plot. The code they share (the store, the
//! machine facts, the lock registry, the measurement core, the table and
//! chart helpers, a run's way into the store) lives outside this folder
//! and names no study.
//!
//! A study whose points are stored implements [`Study`], and is listed in
//! [`all`]: that is how `show`, `show --json` and `plot` find what to do
//! with a run's points. Its command is one line in [`command`]: a variant
//! holding its arguments, which implement [`command::RunCommand`]. The
//! crate's README ("Adding a study") walks through it.

pub mod advise;
pub mod command;
pub mod costs;
pub mod hash;
pub mod interposed;
pub mod ipc;
pub mod kernel;
pub mod kv;
pub mod lhp;
pub mod locks;
pub mod model;
pub mod profile;
pub mod rcutorture;
pub mod sim_lhp;
pub mod spin;
pub mod suite;
pub mod torture;
pub mod uncontended;

#[cfg(test)]
mod plot_tests;
#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::results::{Point, RunMeta};
use serde_json::Value;
use std::path::Path;

pub use command::Command;

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
    ) -> Vec<crate::verdict::Section> {
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

/// Every study whose points are stored, in the order `plot` prefers them
/// when a run has several.
pub fn all() -> &'static [&'static dyn Study] {
    &[
        &uncontended::Uncontended,
        &spin::Spin,
        &lhp::Lhp,
        &hash::Hash,
        &ipc::Ipc,
        &kv::Kv,
        &sim_lhp::SimLhp,
        &interposed::Interposed,
        &profile::Profile,
        &advise::Advise,
        &costs::Costs,
    ]
}

/// The study whose points are stored under `name`.
pub fn find(name: &str) -> Option<&'static dyn Study> {
    all().iter().copied().find(|s| s.name() == name)
}

/// The names of the studies that plot, in order.
pub fn plottable() -> Vec<&'static str> {
    all()
        .iter()
        .filter(|s| s.plot().is_some())
        .map(|s| s.name())
        .collect()
}
