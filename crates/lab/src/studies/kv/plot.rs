//! The plot of a `bench kv` run, after seed 000 Figs. 3 and 4 and seed 002
//! Fig. 7: throughput (solid, with min–max whiskers) and Xput, throughput
//! over the cores' mean utilisation (dashed), against cores, one colour
//! per kernel variant.

use std::path::Path;

use plotters::prelude::*;

use super::report::{throughput, xput, BENCH};
use crate::core::error::{LabError, Result};
use crate::core::plot::{chart_builder, draw_mesh, machine_line, write_svg, FONT, PALETTE, SIZE};
use crate::core::report::distinct;
use crate::core::results::{Point, RunMeta};
use crate::studies::shared::kernel::{self, rate_axis, RateAxis};

/// Writes the chart of the run's kv points to `out`.
pub fn plot(meta: &RunMeta, points: &[Point], out: &Path, log_y: bool) -> Result<()> {
    let run = meta.id_text();
    let pts: Vec<&Point> = points
        .iter()
        .filter(|p| p.bench == BENCH && !p.reps.is_empty())
        .collect();
    if pts.is_empty() {
        return Err(LabError::input(format!(
            "run {run} has no key-value points to plot (`locklab bench kv` measures them)"
        )));
    }
    let variants: Vec<&str> = distinct(pts.iter().map(|p| p.lock.as_str()));
    let x_max = pts.iter().map(|p| p.threads).max().unwrap_or(1);
    let shown = |y: f64| kernel::shown(y, log_y);
    let ys = pts.iter().flat_map(|p| {
        let (_, lo, hi) = p.stat(|r| r.throughput_ops_s);
        [lo, hi, xput(p)]
    });
    let Some(RateAxis {
        scale,
        unit,
        lo: y_lo,
        hi: y_hi,
    }) = rate_axis(ys, log_y, "req")
    else {
        return Err(LabError::input(format!(
            "run {run} has no key-value throughput to plot"
        )));
    };
    let first = pts[0];
    let p = |k: &str| {
        first
            .params
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let titles = [
        format!(
            "run {run}: key-value requests (YCSB {}, {} keys) vs cores (medians, whiskers min–max)",
            p("workload"),
            p("keys")
        ),
        "solid: throughput; dashed: Xput = throughput / mean utilisation of the cores (seed 000 Fig. 4)"
            .to_string(),
        machine_line(meta),
    ];
    let size = (SIZE.0 + 120, SIZE.1.max(140 + 24 * variants.len() as u32));
    let legend_width = 300;
    write_svg(out, &run, size, &titles, |body| {
        let (area, legend) = body.split_horizontally(size.0 - legend_width);
        let color =
            |v: &str| PALETTE[variants.iter().position(|&x| x == v).unwrap_or(0) % PALETTE.len()];
        let x = 0..(x_max as i32 + 1);
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                draw_mesh(
                    &mut chart,
                    "emulated cores (core 0: the network driver)",
                    &format!(
                        "requests ({unit}{})",
                        if log_y { ", log scale" } else { "" }
                    ),
                )?;
                let fit = |y: f64| (y / scale).max(y_lo);
                for v in &variants {
                    let mut mine: Vec<&&Point> = pts.iter().filter(|p| p.lock == *v).collect();
                    mine.sort_by_key(|p| p.threads);
                    let c = color(v);
                    let line: Vec<(i32, f64)> = mine
                        .iter()
                        .filter(|p| shown(throughput(p)))
                        .map(|p| (p.threads as i32, fit(throughput(p))))
                        .collect();
                    chart.draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?;
                    chart.draw_series(line.iter().map(|&at| Circle::new(at, 4, c.filled())))?;
                    for p in &mine {
                        let (_, lo, hi) = p.stat(|r| r.throughput_ops_s);
                        if shown(lo) && shown(hi) {
                            chart.draw_series(std::iter::once(PathElement::new(
                                vec![(p.threads as i32, fit(lo)), (p.threads as i32, fit(hi))],
                                c.stroke_width(2),
                            )))?;
                        }
                    }
                    let xl: Vec<(i32, f64)> = mine
                        .iter()
                        .filter(|p| shown(xput(p)))
                        .map(|p| (p.threads as i32, fit(xput(p))))
                        .collect();
                    chart.draw_series(DashedLineSeries::new(xl, 8, 5, c.stroke_width(2).into()))?;
                }
            }};
        }
        let mut builder = chart_builder(&area);
        if log_y {
            body!(builder.build_cartesian_2d(x, (y_lo..y_hi).log_scale())?);
        } else {
            body!(builder.build_cartesian_2d(x, y_lo..y_hi)?);
        }
        let style = (FONT, 15).into_font().color(&BLACK);
        let grey = (FONT, 15).into_font().color(&RGBColor(70, 70, 70));
        let mut y = 12;
        legend.draw_text("kernel variant", &grey, (14, y))?;
        for v in &variants {
            y += 24;
            legend.draw(&PathElement::new(
                vec![(10, y + 8), (44, y + 8)],
                color(v).stroke_width(3),
            ))?;
            legend.draw_text(v, &style, (54, y))?;
        }
        Ok(())
    })
}
