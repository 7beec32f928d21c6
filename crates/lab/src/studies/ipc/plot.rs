//! The plot of a `bench ipc` run, after seed 002 Fig. 4: total IPC
//! throughput of the multicore ping-pong against cores, one colour per
//! server delay and one marker per kernel variant (medians, whiskers
//! min–max), with the machine-repairman model fitted to all of a big lock's
//! curves at once (one S, and locklab's Z = z₀ + delay/2) drawn dashed for each delay and
//! carried past the measured cores — the prediction of how far the big lock
//! would scale on a machine with more of them.

use std::path::Path;

use plotters::prelude::*;

use crate::core::error::{LabError, Result};
use crate::core::plot::{
    chart_builder, draw_mesh, machine_line, marker_shape, write_svg, FONT, PALETTE, SIZE,
};
use crate::core::report::distinct;
use crate::core::results::{Point, RunMeta};
use crate::studies::shared::ipc_points::{delay_ns, family, mode, BENCH};
use crate::studies::shared::kernel::{self, rate_axis, RateAxis};
use locklab_model::queueing::{fit_family, FitOptions, Repairman};

/// Most cores a model line is carried to.
const MAX_X: u32 = 64;

/// A model line: its delay and the throughput (IPC/s) at 1..=x cores.
struct ModelLine {
    delay: u64,
    values: Vec<(u32, f64)>,
}

/// A big lock's fit over all its delays.
struct FamilyFit {
    variant: String,
    s_ns: f64,
    z0_ns: f64,
    r2: Option<f64>,
}

/// Writes the chart of the run's multi ping-pong points to `out`.
pub fn plot(meta: &RunMeta, points: &[Point], out: &Path, log_y: bool) -> Result<()> {
    let run = meta.id_text();
    let multi: Vec<&Point> = points
        .iter()
        .filter(|p| p.bench == BENCH && mode(p) == "multi" && !p.reps.is_empty())
        .collect();
    if multi.is_empty() {
        return Err(LabError::input(format!(
            "run {run} has no multi ping-pong points to plot (`locklab bench ipc --modes multi` measures them)"
        )));
    }
    let mut delays: Vec<u64> = distinct(multi.iter().map(|p| delay_ns(p)));
    delays.sort_unstable();
    let variants: Vec<&str> = distinct(multi.iter().map(|p| p.lock.as_str()));
    let measured_max = multi.iter().map(|p| p.threads).max().unwrap_or(1);
    let x_max = (4 * measured_max).clamp(8, MAX_X).max(measured_max);

    // One fit per big lock over all its delays (one S, Z = z₀ + d/2). The
    // one S is seed 002's (it predicted every delay from the S of one
    // curve, fitted with Z ≈ d); Z = z₀ + d/2 is locklab's rule for its own
    // ping-pong. A line per delay.
    let mut fits: Vec<FamilyFit> = Vec::new();
    let mut lines: Vec<ModelLine> = Vec::new();
    for v in variants.iter().filter(|v| v.starts_with("bkl(")) {
        let Ok(f) = fit_family(&family(points, v, &delays), &FitOptions::default()) else {
            continue;
        };
        fits.push(FamilyFit {
            variant: v.to_string(),
            s_ns: f.service(),
            z0_ns: f.delay(),
            r2: f.r2,
        });
        for &d in &delays {
            let Ok(m) = Repairman::new(f.service(), f.delay() + d as f64 / 2.0) else {
                continue;
            };
            if let Ok(values) = (1..=x_max)
                .map(|n| m.throughput(n).map(|x| (n, x * 1e9)))
                .collect::<std::result::Result<Vec<_>, _>>()
            {
                lines.push(ModelLine { delay: d, values });
            }
        }
    }

    let shown = |y: f64| kernel::shown(y, log_y);
    let ys = multi
        .iter()
        .flat_map(|p| {
            let (a, b, c) = p.stat(|r| r.throughput_ops_s);
            [a, b, c]
        })
        .chain(lines.iter().flat_map(|l| l.values.iter().map(|v| v.1)));
    let Some(RateAxis {
        scale,
        unit,
        lo: y_lo,
        hi: y_hi,
    }) = rate_axis(ys, log_y, "IPC")
    else {
        return Err(LabError::input(format!(
            "run {run} has no IPC throughput to plot"
        )));
    };

    let titles = [
        format!(
            "run {run}: multicore ping-pong, total IPC throughput vs cores (medians, whiskers min–max)"
        ),
        "colour: server delay; marker: kernel variant; dashed: the repairman model fitted to all of \
         a big lock's curves at once, carried past the measured cores"
            .to_string(),
        machine_line(meta),
    ];
    let legend_lines = delays.len() + variants.len() + fits.len() + 3;
    let size = (SIZE.0 + 120, SIZE.1.max(120 + 24 * legend_lines as u32));
    let legend_width = 430;
    write_svg(out, &run, size, &titles, |body| {
        let (area, legend) = body.split_horizontally(size.0 - legend_width);
        let color =
            |d: u64| PALETTE[delays.iter().position(|&x| x == d).unwrap_or(0) % PALETTE.len()];
        let marker = |v: &str| marker_shape(variants.iter().position(|&x| x == v).unwrap_or(0));
        let x = (0..(x_max as i32 + 1)).with_key_points(
            [1, 2, 4, 8, 16, 32, 64]
                .into_iter()
                .filter(|&k| k <= x_max as i32)
                .chain(std::iter::once(measured_max as i32))
                .collect::<Vec<_>>(),
        );
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                draw_mesh(
                    &mut chart,
                    "cores",
                    &format!(
                        "total IPC throughput ({unit}{})",
                        if log_y { ", log scale" } else { "" }
                    ),
                )?;
                let fit_y = |y: f64| (y / scale).max(y_lo);
                for l in &lines {
                    chart.draw_series(DashedLineSeries::new(
                        l.values.iter().map(|&(n, x)| (n as i32, fit_y(x))),
                        8,
                        5,
                        color(l.delay).stroke_width(2).into(),
                    ))?;
                }
                for p in &multi {
                    let (med, min, max) = p.stat(|r| r.throughput_ops_s);
                    if !shown(med) {
                        continue;
                    }
                    let c = color(delay_ns(p));
                    let at = (p.threads as i32, fit_y(med));
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(at.0, fit_y(min)), (at.0, fit_y(max))],
                        c.stroke_width(2),
                    )))?;
                    chart.draw_series(std::iter::once(
                        EmptyElement::at(at) + Polygon::new(marker(&p.lock), c.filled()),
                    ))?;
                }
                // Measured curves joined thinly, so a variant's shape
                // reads at a glance.
                for v in &variants {
                    for &d in &delays {
                        let mut pts: Vec<(i32, f64)> = multi
                            .iter()
                            .filter(|p| p.lock == *v && delay_ns(p) == d)
                            .map(|p| (p.threads as i32, fit_y(p.stat(|r| r.throughput_ops_s).0)))
                            .collect();
                        pts.sort_by_key(|p| p.0);
                        chart
                            .draw_series(LineSeries::new(pts, color(d).mix(0.6).stroke_width(1)))?;
                    }
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
        legend.draw_text("server delay", &grey, (14, y))?;
        for &d in &delays {
            y += 24;
            legend.draw(&PathElement::new(
                vec![(10, y + 8), (44, y + 8)],
                color(d).stroke_width(3),
            ))?;
            legend.draw_text(&format!("{d} ns"), &style, (54, y))?;
        }
        y += 34;
        legend.draw_text("kernel variant", &grey, (14, y))?;
        for v in &variants {
            y += 24;
            legend
                .draw(&(EmptyElement::at((27, y + 8)) + Polygon::new(marker(v), BLACK.filled())))?;
            legend.draw_text(v, &style, (54, y))?;
        }
        if !fits.is_empty() {
            y += 34;
            legend.draw_text("model: one S per big lock, Z = z₀ + d/2", &grey, (14, y))?;
            for f in &fits {
                y += 24;
                legend.draw(&PathElement::new(
                    vec![(10, y + 8), (44, y + 8)],
                    BLACK.stroke_width(2),
                ))?;
                legend.draw_text(
                    &format!(
                        "{}: S {:.0} ns, z₀ {:.0} ns, R² {}",
                        f.variant,
                        f.s_ns,
                        f.z0_ns,
                        f.r2.map_or_else(|| "–".into(), |r| format!("{r:.3}"))
                    ),
                    &style,
                    (54, y),
                )?;
            }
        }
        Ok(())
    })
}
