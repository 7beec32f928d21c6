//! The report of `locklab run`: the locks ranked by their speed-up over
//! the baseline (the C library's own locks) in the compared figure (the
//! `--metric` figure, or the wall time), with the spread over repetitions;
//! failures apart.

use super::record::{RunMetrics, BENCH, GLIBC_ELISION};
use crate::core::error::{LabError, Result};
use crate::core::plot::{machine_line, write_svg, FONT, SIZE};
use crate::core::program::launch::Exit;
use crate::core::program::{BASELINE, PASSTHROUGH};
use crate::core::report::{fmt_ns, lock_width, sig};
use crate::core::results::{median, Point, Rep, RunMeta};
use plotters::prelude::*;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// What a point is compared by.
struct Figure {
    /// `--metric` set: the figure read from the output.
    metric: bool,
    /// Higher is better (a metric without --lower-is-better).
    higher_better: bool,
}

fn figure(p: &Point) -> Figure {
    let metric = p.params.get("metric").is_some_and(|m| !m.is_null());
    let lower = p
        .params
        .get("lower_is_better")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Figure {
        metric,
        higher_better: metric && !lower,
    }
}

/// A repetition's compared figure (NaN if its metric is missing).
fn value(f: &Figure, r: &Rep) -> f64 {
    if f.metric {
        r.metrics_of::<RunMetrics>()
            .and_then(|m| m.metric)
            .unwrap_or(f64::NAN)
    } else {
        r.wall_s
    }
}

/// One contender's standing against the baseline.
pub struct Standing {
    /// Speed-up over the baseline: median, least and most over the
    /// repetitions (more than 1 is better, whichever the figure's sense).
    pub speedup: (f64, f64, f64),
    /// Median CPU time over the baseline's.
    pub cpu_ratio: f64,
    /// Median of the compared figure.
    pub value: f64,
    /// Peak memory, median, KiB.
    pub rss_kib: f64,
    /// Why it is not ranked: it ended differently from the baseline, or
    /// its figure was missing.
    pub failure: Option<String>,
}

fn standing(p: &Point, base: Option<&Point>) -> Standing {
    let f = figure(p);
    let xs: Vec<f64> = p.reps.iter().map(|r| value(&f, r)).collect();
    let base_x = base.map_or(f64::NAN, |b| {
        median(&b.reps.iter().map(|r| value(&f, r)).collect::<Vec<_>>())
    });
    let speed = |x: f64| {
        if f.higher_better {
            x / base_x
        } else {
            base_x / x
        }
    };
    let ups: Vec<f64> = xs.iter().map(|&x| speed(x)).collect();
    let lo = ups.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ups.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let cpu = median(&p.reps.iter().map(|r| r.cpu_s).collect::<Vec<_>>());
    let base_cpu = base.map_or(f64::NAN, |b| {
        median(&b.reps.iter().map(|r| r.cpu_s).collect::<Vec<_>>())
    });
    let ms: Vec<RunMetrics> = p.reps.iter().filter_map(Rep::metrics_of).collect();
    let rss = median(&ms.iter().map(|m| m.max_rss_kib as f64).collect::<Vec<_>>());
    let base_exit = base
        .and_then(|b| b.reps.first())
        .and_then(|r| r.metrics_of::<RunMetrics>())
        .map_or(Exit::Code(0), |m| m.exit);
    let odd: Vec<Exit> = ms
        .iter()
        .map(|m| m.exit)
        .filter(|e| *e != base_exit)
        .collect();
    let failure = if let Some(e) = odd.first() {
        // A timeout says how long the program had.
        let e = match (e, p.params["timeout_s"].as_f64()) {
            (Exit::TimedOut, Some(t)) => format!("timed out after {t} s"),
            _ => e.to_string(),
        };
        Some(format!(
            "FAILED: {e} in {} of {} (baseline: {base_exit})",
            odd.len(),
            ms.len()
        ))
    } else if f.metric && xs.iter().any(|x| x.is_nan()) {
        let n = xs.iter().filter(|x| x.is_nan()).count();
        Some(format!(
            "FAILED: no figure in the output in {n} of {}",
            xs.len()
        ))
    } else {
        None
    };
    Standing {
        speedup: (median(&ups), lo, hi),
        cpu_ratio: cpu / base_cpu,
        value: median(&xs),
        rss_kib: rss,
        failure,
    }
}

/// The points in rank order with their standings: the ranked ones best
/// first, then the failures.
pub fn ranked<'a>(points: &[&'a Point]) -> Vec<(&'a Point, Standing)> {
    let base = points.iter().copied().find(|p| p.lock == BASELINE);
    let mut v: Vec<(&Point, Standing)> = points.iter().map(|p| (*p, standing(p, base))).collect();
    v.sort_by(|a, b| {
        (a.1.failure.is_some())
            .cmp(&b.1.failure.is_some())
            .then(b.1.speedup.0.total_cmp(&a.1.speedup.0))
    });
    v
}

fn kib(k: f64) -> String {
    if !k.is_finite() {
        "–".into()
    } else if k >= 1024.0 * 1024.0 {
        format!("{} GiB", sig(k / 1024.0 / 1024.0))
    } else if k >= 1024.0 {
        format!("{} MiB", sig(k / 1024.0))
    } else {
        format!("{} KiB", sig(k))
    }
}

/// The ranking as a table.
pub fn table(out: &mut String, points: &[&Point]) {
    let Some(first) = points.first() else { return };
    let f = figure(first);
    let command = first
        .params
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let what = if f.metric {
        format!(
            "the --metric figure ({} is better)",
            if f.higher_better { "higher" } else { "lower" }
        )
    } else {
        "wall time".to_string()
    };
    let reps = points.iter().map(|p| p.reps.len()).max().unwrap_or(0);
    let _ = writeln!(out, "\nrun: {command}");
    let _ = writeln!(
        out,
        "  {reps} repetitions per lock, interleaved; ranked by speed-up over {BASELINE} (the C library's own locks) in {what}: median (min–max)"
    );
    let lw = lock_width(points).max(8);
    let _ = writeln!(
        out,
        "  {:<lw$}{:<22}{:>12}{:>10}{:>12}  STATUS",
        "LOCK",
        "SPEED-UP",
        if f.metric { "FIGURE" } else { "WALL" },
        "CPU ×",
        "PEAK RSS"
    );
    for (p, s) in ranked(points) {
        let (m, lo, hi) = s.speedup;
        let up = if m.is_finite() {
            format!(
                "{m:.3} {}",
                crate::core::report::spread(p.reps.len(), &format!("{lo:.3}"), &format!("{hi:.3}"))
            )
        } else {
            "–".into()
        };
        let value = if f.metric {
            sig(s.value)
        } else {
            fmt_ns(s.value * 1e9)
        };
        let cpu = if s.cpu_ratio.is_finite() {
            format!("{:.3}", s.cpu_ratio)
        } else {
            "–".into()
        };
        let status = s.failure.clone().unwrap_or_else(|| {
            if p.lock == BASELINE {
                "baseline".into()
            } else {
                "ok".into()
            }
        });
        let _ = writeln!(
            out,
            "  {:<lw$}{up:<22}{value:>12}{cpu:>10}{:>12}  {status}",
            p.lock,
            kib(s.rss_kib)
        );
    }
}

/// The verdict of a `locklab run`: the fastest way to run the program
/// (paired over the interleaved repetitions), the one using the least CPU,
/// the best of locklab's locks against the C library's own, and the
/// failures.
pub fn verdict(points: &[&Point]) -> Vec<crate::core::verdict::Section> {
    use crate::core::verdict::{decisive, pick, Entrant, Line, Section};
    let Some(first) = points.first() else {
        return Vec::new();
    };
    let f = figure(first);
    let standings = ranked(points);
    let ok: Vec<&Point> = standings
        .iter()
        .filter(|(_, s)| s.failure.is_none())
        .map(|(p, _)| *p)
        .collect();
    let entrants = |g: fn(&Figure, &Rep) -> f64| -> Vec<Entrant> {
        ok.iter()
            .map(|p| Entrant {
                name: p.lock.clone(),
                values: p.reps.iter().map(|r| g(&f, r)).collect(),
            })
            .collect()
    };
    let what = if f.metric { "the figure" } else { "wall time" };
    let mut lines = Vec::new();
    if let Some(p) = pick(&entrants(value), !f.higher_better) {
        lines.push(Line {
            group: String::new(),
            question: format!("best {what}"),
            answer: p.answer(),
            evidence: p.evidence("over"),
            json: json!({"question": "fastest", "pick": p.json()}),
        });
    }
    if let Some(p) = pick(&entrants(|_, r| r.cpu_s), true) {
        lines.push(Line {
            group: String::new(),
            question: "least CPU time".into(),
            answer: p.answer(),
            evidence: p.evidence("over"),
            json: json!({"question": "least_cpu", "pick": p.json()}),
        });
    }
    // locklab's best lock against the baseline.
    let base = ok.iter().copied().find(|p| p.lock == BASELINE);
    let own: Vec<Entrant> = entrants(value)
        .into_iter()
        .filter(|e| e.name != BASELINE && e.name != PASSTHROUGH && e.name != GLIBC_ELISION)
        .collect();
    if let (Some(base), Some(best)) = (base, pick(&own, !f.higher_better)) {
        let b = ok
            .iter()
            .find(|p| p.lock == best.winner)
            .expect("an entrant");
        let bv: Vec<f64> = base.reps.iter().map(|r| value(&f, r)).collect();
        let wv: Vec<f64> = b.reps.iter().map(|r| value(&f, r)).collect();
        let r = crate::core::stats::paired_ratio(&bv, &wv);
        let r = if f.higher_better { r } else { r.inverse() };
        let answer = if decisive(&r) {
            format!("{} beats it", best.winner)
        } else if decisive(&r.inverse()) {
            format!("none beats it ({} best)", best.winner)
        } else {
            format!("tie ({} best of locklab's)", best.winner)
        };
        lines.push(Line {
            group: String::new(),
            question: format!("locklab vs {BASELINE}"),
            answer,
            evidence: format!("speed-up over {BASELINE}: {}", r.text()),
            json: json!({"question": "vs_baseline", "lock": best.winner, "ratio": r.json()}),
        });
    }
    let failed: Vec<&str> = standings
        .iter()
        .filter(|(_, s)| s.failure.is_some())
        .map(|(p, _)| p.lock.as_str())
        .collect();
    if !failed.is_empty() {
        lines.push(Line {
            group: String::new(),
            question: "failed".into(),
            answer: failed.join(", "),
            evidence: "ended differently from the baseline, or gave no figure: not ranked".into(),
            json: json!({"question": "failed", "locks": failed}),
        });
    }
    let command = first
        .params
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("?");
    vec![Section {
        study: BENCH.into(),
        title: command.to_string(),
        lines,
    }]
}

/// The fields a point of `run` adds to its JSON object.
pub fn point_json(p: &Point, of_study: &[&Point]) -> Value {
    let base = of_study.iter().copied().find(|q| q.lock == BASELINE);
    let s = standing(p, base);
    json!({
        "speedup": s.speedup.0, "speedup_min": s.speedup.1, "speedup_max": s.speedup.2,
        "cpu_ratio": s.cpu_ratio, "figure": s.value, "peak_rss_kib": s.rss_kib,
        "failed": s.failure.is_some(), "failure": s.failure,
    })
}

/// Bars of each ranked lock's speed-up over the baseline, with min–max
/// whiskers; the failures are left out (the title says how many).
pub fn plot(meta: &RunMeta, points: &[Point], out: &Path, log_y: bool) -> Result<()> {
    let run = meta.id_text();
    let mine: Vec<&Point> = points.iter().filter(|p| p.bench == BENCH).collect();
    if mine.is_empty() {
        return Err(LabError::input(format!(
            "run {run} has no run points to plot (`locklab run` makes them)"
        )));
    }
    let all = ranked(&mine);
    let failed = all.iter().filter(|(_, s)| s.failure.is_some()).count();
    let bars: Vec<(&str, (f64, f64, f64))> = all
        .iter()
        .filter(|(_, s)| s.failure.is_none() && s.speedup.0.is_finite() && s.speedup.0 > 0.0)
        .map(|(p, s)| (p.lock.as_str(), s.speedup))
        .collect();
    if bars.is_empty() {
        return Err(LabError::input(format!(
            "run {run} has no lock that ran without failing"
        )));
    }
    let hi = bars.iter().map(|b| b.1 .2).fold(1.0f64, f64::max) * 1.1;
    let lo = bars.iter().map(|b| b.1 .1).fold(1.0f64, f64::min) / 1.1;
    let command = mine[0]
        .params
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let titles = [
        format!("run {run}: speed-up over {BASELINE} (median, whiskers min–max)"),
        format!(
            "{command}{}",
            if failed > 0 {
                format!("   [{failed} failed, not drawn]")
            } else {
                String::new()
            }
        ),
        machine_line(meta),
    ];
    write_svg(out, &run, SIZE, &titles, |body| {
        let n = bars.len() as i32;
        let labels: Vec<String> = bars.iter().map(|b| b.0.to_string()).collect();
        let mut chart = ChartBuilder::on(body)
            .margin(20)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .build_cartesian_2d(0..n, if log_y { lo..hi } else { 0.0..hi })?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len())
            .x_label_formatter(&|i| labels.get(*i as usize).cloned().unwrap_or_default())
            .y_desc(format!("speed-up over {BASELINE}"))
            .label_style((FONT, 14))
            .draw()?;
        for (i, (_, (m, l, h))) in bars.iter().enumerate() {
            let i = i as i32;
            let color = if *m >= 1.0 {
                RGBColor(44, 160, 44)
            } else {
                RGBColor(214, 39, 40)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(i, if log_y { lo } else { 0.0 }), (i + 1, *m)],
                color.mix(0.6).filled(),
            )))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(i, *l), (i, *h)],
                BLACK,
            )))?;
        }
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0, 1.0), (n, 1.0)],
            BLACK.stroke_width(1),
        )))?;
        Ok(())
    })
}
