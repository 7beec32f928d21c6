//! Nanoseconds per acquire–release pair at one thread, one horizontal bar
//! per lock: grouped by family in the registry's family order, fastest
//! first within a family, the bar to the median and a whisker over the
//! repetitions' min–max. The plot of a study of locks at one thread, and
//! the report's chart of any study's one-thread points of registry locks.

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::{
    chart_builder, first_param_set, machine_line, param_text, render_svg, tick, Area, DrawResult,
    FONT, PALETTE, SIZE,
};
use crate::core::error::{LabError, Result};
use crate::core::registry::{family_of, FAMILIES};
use crate::core::results::{Point, RunMeta};

/// One bar: the lock, its group (its family, or "reference" for a floor
/// the ratios refer to) and the median, min and max ns per pair.
struct Bar {
    lock: String,
    group: &'static str,
    med: f64,
    min: f64,
    max: f64,
}

/// Where a group sorts: the registry's families in order, then the
/// references, then locks the registry does not know.
fn rank(group: &str) -> usize {
    FAMILIES
        .iter()
        .position(|f| f.as_str() == group)
        .unwrap_or(if group == "reference" {
            FAMILIES.len()
        } else {
            FAMILIES.len() + 1
        })
}

fn bars(points: &[&Point]) -> Vec<Bar> {
    let mut out: Vec<Bar> = points
        .iter()
        .filter(|p| !p.reps.is_empty())
        .filter_map(|p| {
            let (med, min, max) = p.stat(|r| r.ns_per_op);
            let group = match family_of(&p.lock) {
                Some(f) => f.as_str(),
                None if p.lock.starts_with("floor") => "reference",
                None => "other",
            };
            (med.is_finite() && med > 0.0).then(|| Bar {
                lock: p.lock.clone(),
                group,
                med,
                min,
                max,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        rank(a.group)
            .cmp(&rank(b.group))
            .then(a.med.total_cmp(&b.med))
    });
    out
}

/// Writes the bar chart of the run's first parameter set of `bench` to
/// `out`; `log_x` makes the nanoseconds axis logarithmic.
pub fn by_lock(
    meta: &RunMeta,
    points: &[Point],
    bench: &str,
    out: &Path,
    log_x: bool,
) -> Result<()> {
    let run = meta.id_text();
    let (chosen, params, set_note) = first_param_set(meta, points, bench)?;
    let titles = [
        format!("run {run}: {bench}, ns per acquire–release pair at one thread"),
        format!(
            "{}{set_note}   (bar to the median, whisker min–max)",
            param_text(params)
        ),
        machine_line(meta),
    ];
    let Some(svg) = bars_svg(meta, &chosen, &titles, log_x, SIZE.0)? else {
        return Err(LabError::input(format!(
            "run {run} has no {bench} time per pair to plot"
        )));
    };
    crate::core::files::write_whole("--out", out, "plot", svg.as_bytes())
}

/// The SVG of the bars of `points` under `titles`, `width` pixels wide
/// and as tall as the bars need; `None` if no point has a time per pair.
pub(crate) fn bars_svg(
    meta: &RunMeta,
    points: &[&Point],
    titles: &[String],
    log_x: bool,
    width: u32,
) -> Result<Option<String>> {
    let bars = bars(points);
    if bars.is_empty() {
        return Ok(None);
    }
    let lo = bars
        .iter()
        .map(|b| b.min.min(b.med))
        .fold(f64::MAX, f64::min);
    let hi = bars.iter().map(|b| b.max.max(b.med)).fold(0.0, f64::max);
    let height = 130 + 24 * titles.len() as u32 + 26 * bars.len() as u32;
    let label = bars
        .iter()
        .map(|b| b.lock.chars().count() + b.group.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let label_width = 30 + 9 * label;
    render_svg(&meta.id_text(), (width, height), titles, |body| {
        if log_x {
            draw(
                body,
                &bars,
                ((lo / 1.6)..(hi * 1.6)).log_scale(),
                label_width,
            )
        } else {
            draw(body, &bars, 0.0..hi * 1.12, label_width)
        }
    })
    .map(Some)
}

/// The bars on `area` with `x` as the nanoseconds axis: row 0 at the top.
/// Rows are whole numbers on y, so the bars' thickness and the whiskers'
/// caps are pixel offsets from their row.
fn draw<X>(area: &Area<'_>, bars: &[Bar], x: X, label_width: u32) -> DrawResult<()>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let n = bars.len() as i32;
    let y = (-1..n).with_key_points((0..n).collect());
    let mut chart = chart_builder(area)
        .y_label_area_size(label_width)
        .build_cartesian_2d(x, y)?;
    let x_floor = chart.x_range().start;
    // Row 0 (the first bar) at the top.
    let row = |i: usize| n - 1 - i as i32;
    let label = |y: i32| {
        usize::try_from(n - 1 - y)
            .ok()
            .and_then(|i| bars.get(i))
            .map_or(String::new(), |b| format!("{}  {}", b.group, b.lock))
    };
    chart
        .configure_mesh()
        .x_desc("ns per acquire–release pair")
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 15))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|y| label(*y))
        .disable_y_mesh()
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()?;
    let half = {
        let (_, a) = chart.backend_coord(&(x_floor, 0));
        let (_, b) = chart.backend_coord(&(x_floor, 1));
        ((a - b).abs() * 32 / 100).max(2)
    };
    let px = |chart: &ChartContext<'_, _, _>, v: f64| chart.backend_coord(&(v, 0)).0;
    for (i, b) in bars.iter().enumerate() {
        let color = PALETTE[rank(b.group) % PALETTE.len()];
        let y = row(i);
        let at = |v: f64| px(&chart, v) - px(&chart, x_floor);
        let (med, min, max) = (at(b.med), at(b.min), at(b.max));
        let whisker = BLACK.stroke_width(1);
        let cap = half * 6 / 10;
        chart.draw_series(std::iter::once(
            EmptyElement::at((x_floor, y))
                + Rectangle::new([(0, -half), (med, half)], color.mix(0.8).filled())
                + PathElement::new(vec![(min, 0), (max, 0)], whisker)
                + PathElement::new(vec![(min, -cap), (min, cap)], whisker)
                + PathElement::new(vec![(max, -cap), (max, cap)], whisker)
                + Text::new(
                    format!("{:.2}", b.med),
                    (med.max(max) + 6, -7),
                    (FONT, 14).into_font().color(&RGBColor(60, 60, 60)),
                ),
        ))?;
    }
    Ok(())
}
