//! Median throughput against threads, one line per lock with min–max
//! whiskers: the plot of the thread-sweeping studies ([`by_threads`]) and,
//! one chart per lock family, the report's chart of locks of the registry
//! (`threads_svg`).

use std::path::Path;

use super::{
    chart, draw_chart_and_legend, first_param_set, machine_line, param_text, render_svg, series,
    Decor, Mark, MACHINE_MARK, SIZE,
};
use crate::core::error::{LabError, Result};
use crate::core::results::{Point, RunMeta};

/// Writes an SVG of median throughput against threads for the run's first
/// parameter set of `bench`, one line per lock with min–max whiskers;
/// `log_y` makes the throughput axis logarithmic.
pub fn by_threads(
    meta: &RunMeta,
    points: &[Point],
    bench: &str,
    out: &Path,
    log_y: bool,
) -> Result<()> {
    let run = meta.id_text();
    let (chosen, params, set_note) = first_param_set(meta, points, bench)?;
    let titles = [
        format!(
            "run {run}: {bench} throughput vs threads ({}, whiskers min–max)",
            reps_text(&chosen)
        ),
        format!("{}{set_note}", param_text(params)),
        machine_line(meta),
    ];
    let Some(svg) = threads_svg(meta, &chosen, &chosen, &titles, log_y, SIZE)? else {
        return Err(LabError::input(format!(
            "run {run} has no {bench} throughput to plot{}",
            if log_y {
                " on a log axis (none above zero)"
            } else {
                ""
            }
        )));
    };
    crate::core::files::write_whole("--out", out, "plot", svg.as_bytes())
}

/// "median of 3 reps" or "median of 2–5 reps": how many repetitions the
/// medians of `points` are over.
pub(crate) fn reps_text(points: &[&Point]) -> String {
    let mut n: Vec<usize> = points.iter().map(|p| p.reps.len()).collect();
    n.sort_unstable();
    n.dedup();
    match n.as_slice() {
        [one] => format!("median of {one} reps"),
        [a, .., b] => format!("median of {a}–{b} reps"),
        [] => String::new(),
    }
}

/// The SVG of median throughput against threads of `points`, one line per
/// lock, under `titles`, at least `size` pixels (taller when the legend
/// needs it); `None` if they have no throughput the axis can show.
/// Threads are whole numbers: an integer axis ticked at the
/// counts measured, one thread of room each side; the machine's core count
/// is marked where it falls inside that axis.
///
/// The throughput axis spans the points of `axis_of` (a superset of
/// `points`), so that charts of parts of one run share one axis.
pub(crate) fn threads_svg(
    meta: &RunMeta,
    points: &[&Point],
    axis_of: &[&Point],
    titles: &[String],
    log_y: bool,
    size: (u32, u32),
) -> Result<Option<String>> {
    let series = series(
        axis_of,
        |_| true,
        |p| i32::try_from(p.threads).unwrap_or(i32::MAX - 1),
        |r| r.throughput_ops_s,
    );
    let Some(mut c) = chart(&series, log_y, "throughput") else {
        return Ok(None);
    };
    // The throughput axis is that of `axis_of`; the lines are those of
    // `points`.
    c.series
        .retain(|s| points.iter().any(|p| p.lock == s.lock) && !s.points.is_empty());
    if c.series.is_empty() {
        return Ok(None);
    }
    let cores = meta.machine.cores;
    let decor = Decor {
        marks: if cores > 0 {
            vec![Mark {
                x: cores as f64,
                label: format!("{cores} core{}", if cores == 1 { "" } else { "s" }),
                color: MACHINE_MARK,
            }]
        } else {
            Vec::new()
        },
        reference: None,
    };

    // Wide enough for the longest lock name (the SVG text is ~9 px a
    // character at this size).
    let longest = c
        .series
        .iter()
        .map(|s| s.lock.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_width = (70 + 9 * longest).clamp(150, 360);
    // Tall enough for the legend (title lines, then 26 px a lock).
    let size = (size.0, size.1.max(160 + 26 * c.series.len() as u32));
    let run = meta.id_text();
    render_svg(&run, size, titles, |body| {
        draw_chart_and_legend(body, &c, 1, "threads", "lock", legend_width, log_y, &decor)
    })
    .map(Some)
}
