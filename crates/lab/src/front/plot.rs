//! `locklab plot`: a stored run's chart, drawn by the study it belongs to
//! (the [`catalog`] says which studies plot).

use std::path::Path;

use crate::core::error::{LabError, Result};
use crate::core::results::{Point, RunMeta};
use crate::front::catalog;

/// Plots a run's points of the study named `bench` (by default the first
/// study that plots and that the run has points of) to `out`.
pub fn plot_run(
    meta: &RunMeta,
    points: &[Point],
    bench: Option<&str>,
    out: &Path,
    log_y: bool,
) -> Result<()> {
    let plottable = catalog::plottable();
    let has = |b: &str| points.iter().any(|p| p.bench == b);
    if bench.is_none() && !points.is_empty() && !plottable.iter().any(|b| has(b)) {
        let mut studies: Vec<&str> = points.iter().map(|p| p.bench.as_str()).collect();
        studies.dedup();
        return Err(LabError::input(format!(
            "run {} has nothing to plot: {} has no chart (`locklab show` has its tables); \
             charts are drawn for {}",
            meta.id.unwrap_or_default(),
            studies.join(", "),
            plottable.join(", ")
        )));
    }
    let bench = bench.unwrap_or_else(|| {
        plottable
            .iter()
            .copied()
            .find(|b| has(b))
            .or_else(|| plottable.first().copied())
            .unwrap_or_default()
    });
    let Some(plot) = catalog::find(bench).and_then(|s| s.plot()) else {
        return Err(LabError::input(format!(
            "--bench {bench}: allowed {}",
            plottable.join(", ")
        )));
    };
    plot(meta, points, out, log_y)
}
