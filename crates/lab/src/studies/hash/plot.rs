//! The plot of a `bench hash` run: two charts in one SVG, one above the
//! other. Above, lookups per second against threads at 0 % updates, one
//! line per strategy (seed 003's Figures 1 and 4); below, total throughput
//! (lookups + updates) against the update fraction at the largest thread
//! count (Figure 5). Medians with min–max whiskers, as in every plot.

use std::path::Path;

use plotters::prelude::*;

use crate::core::error::{LabError, Result};
use crate::core::plot::{
    chart, draw_chart, draw_legend, machine_line, param_text, series, write_svg, Area, Chart,
    DrawResult, FONT, SIZE,
};
use crate::core::results::{Point, Rep, RunMeta};
use crate::studies::shared::hashtable::point::update_pct;
use crate::studies::shared::hashtable::runner::HashMetrics;

/// Lookups per second in one repetition (NaN without hash metrics).
fn lookups_s(r: &Rep) -> f64 {
    match &r.metrics_of::<HashMetrics>() {
        Some(h) if r.wall_s > 0.0 => h.lookups as f64 / r.wall_s,
        _ => f64::NAN,
    }
}

fn draw(
    area: &Area<'_>,
    c: &Chart,
    x_desc: &str,
    legend_width: u32,
    log_y: bool,
) -> DrawResult<()> {
    let mut xs: Vec<i32> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_unstable();
    xs.dedup();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    // One thread of room each side; a few percent on the fraction axis.
    let pad = if x_desc == "threads" { 1 } else { 4 };
    let x = ((x0 - pad)..(x1 + pad)).with_key_points(xs);
    let (width, _) = area.dim_in_pixel();
    let (chart_area, legend) = area.split_horizontally(width.saturating_sub(legend_width));
    if log_y {
        draw_chart(
            &chart_area,
            x,
            (c.y_lo..c.y_hi).log_scale(),
            &c.series,
            x_desc,
            &c.y_desc,
        )?;
    } else {
        draw_chart(&chart_area, x, c.y_lo..c.y_hi, &c.series, x_desc, &c.y_desc)?;
    }
    draw_legend(&legend, "strategy", &c.series)
}

/// The parameters of a point without its update fraction.
fn shape(p: &Point) -> serde_json::Value {
    let mut v = p.params.clone();
    if let serde_json::Value::Object(m) = &mut v {
        m.remove("update_pct");
    }
    v
}

/// Writes the two charts of the run's first table shape to `out`.
pub fn plot(meta: &RunMeta, points: &[Point], out: &Path, log_y: bool) -> Result<()> {
    let run = meta.id_text();
    let hash: Vec<&Point> = points.iter().filter(|p| p.bench == "hash").collect();
    let Some(first) = hash.first() else {
        return Err(LabError::input(format!(
            "run {run} has no hash points to plot"
        )));
    };
    // One table shape (the first), as the other plots show one parameter set.
    let first_shape = shape(first);
    let chosen: Vec<&Point> = hash
        .into_iter()
        .filter(|p| shape(p) == first_shape)
        .collect();
    let max_threads = chosen.iter().map(|p| p.threads).max().unwrap_or(1);

    let upper = series(
        &chosen,
        |p| update_pct(p) == Some(0),
        |p| i32::try_from(p.threads).unwrap_or(i32::MAX - 1),
        lookups_s,
    );
    let lower = series(
        &chosen,
        |p| p.threads == max_threads,
        |p| update_pct(p).map_or(0, |u| u as i32),
        |r| r.throughput_ops_s,
    );
    let upper = chart(&upper, log_y, "lookups");
    let Some(lower) = chart(&lower, log_y, "lookups + updates") else {
        return Err(LabError::input(format!(
            "run {run} has no hash throughput to plot{}",
            if log_y {
                " on a log axis (none above zero)"
            } else {
                ""
            }
        )));
    };

    let titles = [
        format!(
            "run {run}: hash table, lookups vs threads at 0 % updates (top), \
             throughput vs update fraction at {max_threads} threads (bottom)"
        ),
        format!("{}   (medians, whiskers min–max)", param_text(&first_shape)),
        machine_line(meta),
    ];
    let lines = upper
        .as_ref()
        .map_or(0, |c| c.series.len())
        .max(lower.series.len()) as u32;
    let chart_h = (SIZE.1 - 100).max(120 + 26 * lines);
    let size = (SIZE.0, 110 + 2 * chart_h);
    let longest = chosen
        .iter()
        .map(|p| p.lock.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_width = (70 + 9 * longest).clamp(150, 360);

    write_svg(out, &run, size, &titles, |body| {
        let (top, bottom) = body.split_vertically(chart_h);
        match &upper {
            Some(c) => draw(&top, c, "threads", legend_width, log_y)?,
            None => top.draw_text(
                "no points at 0 % updates: no lookup scaling to draw",
                &(FONT, 18).into_font().color(&BLACK),
                (40, 40),
            )?,
        }
        draw(
            &bottom,
            &lower,
            "updates (% of operations)",
            legend_width,
            log_y,
        )?;
        Ok(())
    })
}
