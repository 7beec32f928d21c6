//! The plot of a `sim lhp` run, after seed 004's Fig. 5–8: normalized
//! throughput per host policy as bars (medians, whiskers min–max over the
//! repetitions, each bar labelled with its speed-up over `none`), a dashed
//! line at 1 where a VM runs as fast as alone on the host; for `latency` a
//! second panel with the request VM's response times; for `scalability` one
//! line per policy across the VM counts.

use std::path::Path;

use plotters::prelude::*;

use super::metrics::{SimMetrics, BENCH};
use super::report::{experiment, row_stat, RowStat};
use crate::core::error::{LabError, Result};
use crate::core::plot::{
    chart_builder, draw_legend, machine_line, tick, write_svg, Area, Decor, DrawResult, Series,
    FONT, PALETTE, SIZE,
};
use crate::core::report::distinct;
use crate::core::results::{Point, RunMeta};

/// The mesh every panel here draws: light horizontal lines only, the
/// axis descriptions, `x_fmt` for the x labels and [`tick`] for the y
/// labels. A macro, not a function: the charts' coordinate types differ.
macro_rules! mesh {
    ($chart:expr, $x_desc:expr, $y_desc:expr, $x_fmt:expr) => {
        $chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc($x_desc)
            .y_desc($y_desc)
            .axis_desc_style((FONT, 18))
            .label_style((FONT, 15))
            .x_label_formatter($x_fmt)
            .y_label_formatter(&|v| tick(*v))
            .y_max_light_lines(1)
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()?
    };
}

/// Writes the chart of the run's first sim experiment to `out`.
pub fn plot(meta: &RunMeta, points: &[Point], out: &Path, log_y: bool) -> Result<()> {
    let run = meta.id_text();
    let sims: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.bench == BENCH
                && p.reps
                    .iter()
                    .any(|r| r.metrics_of::<SimMetrics>().is_some())
        })
        .collect();
    let Some(first) = sims.first() else {
        return Err(LabError::input(format!(
            "run {run} has no {BENCH} points to plot (`locklab sim lhp` makes them)"
        )));
    };
    let name = experiment(first);
    let rows: Vec<RowStat> = sims
        .iter()
        .filter(|p| experiment(p) == name)
        .map(|p| row_stat(p))
        .collect();
    let grouped = distinct(rows.iter().map(|r| r.vms)).len() > 1;
    let shown = |y: f64| y.is_finite() && (!log_y || y > 0.0);
    if !rows.iter().any(|r| shown(r.throughput_norm().0)) {
        return Err(LabError::input(format!(
            "run {run} has no normalized throughput to plot{}",
            if log_y {
                " on a log axis (none above zero)"
            } else {
                ""
            }
        )));
    }
    let reps = {
        let mut n = distinct(rows.iter().map(|r| r.reps));
        n.sort_unstable();
        match n.as_slice() {
            [1] => "one repetition".to_string(),
            [one] => format!("median of {one} repetitions, whiskers min–max"),
            [a, .., b] => format!("median of {a}–{b} repetitions, whiskers min–max"),
            [] => String::new(),
        }
    };
    let latency = rows.iter().any(|r| r.median.response_p50_us.is_some());
    let titles = [
        format!(
            "run {run}: sim lhp {name}, normalized throughput {} ({reps})",
            if grouped { "by VMs and policy" } else { "per host policy" }
        ),
        format!(
            "normalized: each VM's throughput over the same VM alone on the host (none); dashed: 1, as \
             fast as alone{}",
            if grouped { "" } else { "; labels: × none" }
        ),
        machine_line(meta),
    ];
    let size = (SIZE.0 + if latency { 300 } else { 0 }, SIZE.1);
    write_svg(out, &run, size, &titles, |body| {
        if grouped {
            scalability(body, &rows, log_y)?;
        } else if latency {
            let (left, right) = body.split_horizontally(size.0 * 3 / 5);
            bars(&left, &rows, log_y)?;
            responses(&right, &rows)?;
        } else {
            bars(body, &rows, log_y)?;
        }
        Ok(())
    })
}

/// The y range of normalized throughputs: from 0 (or below the lowest on a
/// log axis) to above the highest and 1.
fn y_range(ys: impl Iterator<Item = f64>, log_y: bool) -> (f64, f64) {
    let ys: Vec<f64> = ys
        .filter(|y| y.is_finite() && (!log_y || *y > 0.0))
        .collect();
    let hi = ys.iter().copied().fold(1.0f64, f64::max);
    if log_y {
        let lo = ys.iter().copied().fold(1.0f64, f64::min);
        (lo / 1.6, hi * 1.6)
    } else {
        (0.0, hi * 1.15)
    }
}

/// Hundredths of a bar slot: the x axis is whole numbers, each policy's
/// slot `STEP` wide, centred on a multiple of it.
const STEP: i32 = 100;

/// The x axis of one slot per policy, and its labels: the policy names at
/// the slots' centres.
fn policy_axis(
    rows: &[RowStat],
) -> (
    plotters::coord::combinators::WithKeyPoints<plotters::coord::types::RangedCoordi32>,
    impl Fn(i32) -> String + '_,
) {
    let n = rows.len() as i32;
    let x = (-STEP * 6 / 10..(n * STEP - STEP * 4 / 10))
        .with_key_points((0..n).map(|i| i * STEP).collect());
    let name = move |x: i32| -> String {
        if x % STEP == 0 && x >= 0 {
            rows.get((x / STEP) as usize)
                .map_or_else(String::new, |r| r.policy.clone())
        } else {
            String::new()
        }
    };
    (x, name)
}

/// A position within policy `i`'s slot, `dx` slots from its centre.
fn at(i: usize, dx: f64) -> i32 {
    i as i32 * STEP + (dx * f64::from(STEP)).round() as i32
}

/// Whether a min–max range is wide enough to draw (not equal values
/// that differ in their last bits).
fn spread(min: f64, max: f64) -> bool {
    min.is_finite() && max.is_finite() && max - min > 1e-6 * max.abs().max(min.abs())
}

/// Bars of normalized throughput, one per policy.
fn bars(area: &Area<'_>, rows: &[RowStat], log_y: bool) -> DrawResult<()> {
    let n = rows.len();
    let (y_lo, y_hi) = y_range(
        rows.iter().flat_map(|r| {
            [
                r.throughput_norm().0,
                r.throughput_norm().1,
                r.throughput_norm().2,
            ]
        }),
        log_y,
    );
    let (x, name) = policy_axis(rows);
    let y_desc = format!(
        "normalized throughput{}",
        if log_y { " (log scale)" } else { "" }
    );
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            mesh!(chart, "host policy", y_desc.as_str(), &|x| name(*x));
            let fit = |y: f64| if y.is_finite() { y.max(y_lo) } else { y_lo };
            for (i, r) in rows.iter().enumerate() {
                let (med, min, max) = r.throughput_norm();
                let color = PALETTE[i % PALETTE.len()];
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(at(i, -0.35), y_lo), (at(i, 0.35), fit(med))],
                    color.mix(0.85).filled(),
                )))?;
                if spread(min, max) {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(at(i, 0.0), fit(min)), (at(i, 0.0), fit(max))],
                        BLACK.stroke_width(2),
                    )))?;
                    for y in [min, max] {
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(at(i, -0.08), fit(y)), (at(i, 0.08), fit(y))],
                            BLACK.stroke_width(2),
                        )))?;
                    }
                }
                let label = if r.speedup().0.is_finite() {
                    format!("×{:.2}", r.speedup().0)
                } else {
                    "–".to_string()
                };
                let top = if max.is_finite() { max.max(med) } else { med };
                // Centred a few pixels above the bar or its whisker.
                let width = 8 * label.chars().count() as i32;
                chart.draw_series(std::iter::once(
                    EmptyElement::at((at(i, 0.0), fit(top)))
                        + Text::new(
                            label,
                            (-width / 2, -22),
                            (FONT, 15).into_font().color(&BLACK),
                        ),
                ))?;
            }
            chart.draw_series(DashedLineSeries::new(
                [(at(0, -0.6), 1.0), (at(n, -0.4), 1.0)],
                8,
                5,
                RGBColor(90, 90, 90).stroke_width(2).into(),
            ))?;
        }};
    }
    let mut builder = chart_builder(area);
    builder.margin_top(24);
    if log_y {
        body!(builder.build_cartesian_2d(x, (y_lo..y_hi).log_scale())?);
    } else {
        body!(builder.build_cartesian_2d(x, y_lo..y_hi)?);
    }
    Ok(())
}

/// The request VM's response times per policy: p50 and p99 side by side.
fn responses(area: &Area<'_>, rows: &[RowStat]) -> DrawResult<()> {
    let hi = rows
        .iter()
        .flat_map(|r| [r.median.response_p50_us, r.median.response_p99_us])
        .flatten()
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let y_hi = if hi > 0.0 { hi * 1.12 } else { 1.0 };
    let (x, name) = policy_axis(rows);
    let mut chart = chart_builder(area)
        .margin_top(24)
        .y_label_area_size(70)
        .caption("request VM's response time", (FONT, 17))
        .build_cartesian_2d(x, 0.0..y_hi)?;
    mesh!(chart, "host policy", "response time (µs)", &|x| name(*x));
    type Kind = (&'static str, f64, fn(&RowStat) -> Option<f64>);
    let kinds: [Kind; 2] = [
        ("p50", -0.2, |r| r.median.response_p50_us),
        ("p99", 0.2, |r| r.median.response_p99_us),
    ];
    for (k, (label, dx, get)) in kinds.into_iter().enumerate() {
        let color = PALETTE[k];
        chart
            .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
                let y = get(r).filter(|y| y.is_finite())?;
                Some(Rectangle::new(
                    [(at(i, dx - 0.18), 0.0), (at(i, dx + 0.18), y)],
                    color.mix(0.85).filled(),
                ))
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(200, 200, 200))
        .draw()?;
    Ok(())
}

/// Grouped bars: one group per VM count, one bar per policy in it, with a
/// legend beside them.
fn scalability(area: &Area<'_>, rows: &[RowStat], log_y: bool) -> DrawResult<()> {
    let policies = distinct(rows.iter().map(|r| r.policy.as_str()));
    let series: Vec<Series> = policies
        .iter()
        .map(|p| {
            let mut points: Vec<(i32, f64, f64, f64)> = rows
                .iter()
                .filter(|r| r.policy == *p)
                .map(|r| {
                    let (m, lo, hi) = r.throughput_norm();
                    (r.vms as i32, m, lo, hi)
                })
                .collect();
            points.sort_by_key(|x| x.0);
            Series {
                lock: p.to_string(),
                points,
            }
        })
        .collect();
    let (y_lo, y_hi) = y_range(
        series
            .iter()
            .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2, p.3])),
        log_y,
    );
    let mut counts = distinct(rows.iter().map(|r| r.vms as i32));
    counts.sort_unstable();
    let slots = counts.len() as i32;
    let (chart_area, legend) = area.split_horizontally(area.dim_in_pixel().0 - 200);
    // One slot per VM count, one bar per policy within it.
    let x = (-STEP * 6 / 10..(slots * STEP - STEP * 4 / 10))
        .with_key_points((0..slots).map(|i| i * STEP).collect());
    let count_label = |x: i32| -> String {
        if x % STEP == 0 && x >= 0 {
            counts
                .get((x / STEP) as usize)
                .map_or_else(String::new, |c| c.to_string())
        } else {
            String::new()
        }
    };
    let slot = |vms: i32| counts.iter().position(|&c| c == vms).unwrap_or(0);
    let np = series.len().max(1) as f64;
    let width = 0.84 / np;
    let y_desc = format!(
        "normalized throughput, mean over the VMs{}",
        if log_y { " (log scale)" } else { "" }
    );
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            mesh!(chart, "VMs on the host", y_desc.as_str(), &|t| count_label(
                *t
            ));
            let fit = |y: f64| if y.is_finite() { y.max(y_lo) } else { y_lo };
            chart.draw_series(DashedLineSeries::new(
                [(-STEP * 6 / 10, 1.0), (slots * STEP - STEP * 4 / 10, 1.0)],
                8,
                5,
                RGBColor(90, 90, 90).stroke_width(2).into(),
            ))?;
            for (i, s) in series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                let dx = (i as f64 - (np - 1.0) / 2.0) * width;
                chart.draw_series(s.points.iter().map(|&(t, m, _, _)| {
                    let k = slot(t);
                    Rectangle::new(
                        [
                            (at(k, dx - width * 0.45), fit(y_lo)),
                            (at(k, dx + width * 0.45), fit(m)),
                        ],
                        color.mix(0.85).filled(),
                    )
                }))?;
                for &(t, _, min, max) in &s.points {
                    if spread(min, max) {
                        let c = at(slot(t), dx);
                        chart.draw_series(std::iter::once(PathElement::new(
                            vec![(c, fit(min)), (c, fit(max))],
                            BLACK.mix(0.6).stroke_width(1),
                        )))?;
                    }
                }
            }
        }};
    }
    let mut builder = chart_builder(&chart_area);
    if log_y {
        body!(builder.build_cartesian_2d(x, (y_lo..y_hi).log_scale())?);
    } else {
        body!(builder.build_cartesian_2d(x, y_lo..y_hi)?);
    }
    draw_legend(&legend, "policy", &series, &Decor::default())
}

#[cfg(test)]
mod tests {
    use super::super::report::tests::{meta, point};
    use super::*;

    fn svg_of(points: &[Point], log_y: bool) -> String {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sim.svg");
        plot(&meta(), points, &out, log_y).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        svg
    }

    #[test]
    fn bars_per_policy_with_speedups() {
        let ps = [
            point("performance", "none", 4, &[1.0, 1.0]),
            point("performance", "itcs", 4, &[2.0, 3.0]),
            point("performance", "kvm-dy", 4, &[1.5, 1.5]),
        ];
        let svg = svg_of(&ps, false);
        for label in [
            "none",
            "itcs",
            "kvm-dy",
            "×2.50",
            "×1.00",
            "run 3: sim lhp performance",
        ] {
            assert!(svg.contains(label), "no {label}");
        }
        assert!(!svg.contains("response time"));
        svg_of(&ps, true);
    }

    #[test]
    fn latency_has_a_response_panel_and_scalability_grouped_bars() {
        let ps = [
            point("latency", "none", 8, &[1.0]),
            point("latency", "sitcs", 8, &[1.4]),
        ];
        let svg = svg_of(&ps, false);
        assert!(
            svg.contains("response time") && svg.contains("p99"),
            "second panel"
        );
        let mut ps = Vec::new();
        for n in 1..=3 {
            ps.push(point("scalability", "none", n, &[1.0, 1.1]));
            ps.push(point("scalability", "dtcs", n, &[1.0 + f64::from(n)]));
        }
        let svg = svg_of(&ps, false);
        assert!(svg.contains("VMs") && svg.contains("dtcs"));
    }

    #[test]
    fn nothing_to_plot_is_an_input_error() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.svg");
        let e = plot(&meta(), &[], &out, false).unwrap_err();
        assert_eq!(e.code, crate::core::error::EXIT_INPUT);
        assert!(e.msg.contains("no sim-lhp points"), "{}", e.msg);
        let mut p = point("performance", "none", 4, &[1.0]);
        let mut m = p.reps[0].metrics_of::<SimMetrics>().unwrap();
        m.row.throughput_norm = 0.0;
        p.reps[0].set_metrics(&m);
        let e = plot(&meta(), &[p], &out, true).unwrap_err();
        assert!(e.msg.contains("none above zero"), "{}", e.msg);
        assert!(!out.exists());
    }
}
