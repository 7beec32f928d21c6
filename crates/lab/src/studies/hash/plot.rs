//! The plot of a `bench hash` run: two charts in one SVG, one above the
//! other. Above, lookups per second against threads at 0 % updates, one
//! line per strategy (seed 003's Figures 1 and 4); below, total throughput
//! (lookups + updates) against the update fraction at the largest thread
//! count (Figure 5), with the best lock-based strategy at each fraction
//! dotted and the RCU strategy's crossings of it marked (as the verdict
//! finds them). Medians with min–max whiskers, as in every plot.

use std::path::Path;

use plotters::prelude::*;

use super::report::{crossover, Crossover};
use super::verdict::{lock_based, NONE};
use crate::core::error::{LabError, Result};
use crate::core::plot::{
    chart, draw_chart_and_legend, machine_line, param_text, series, write_svg, Chart, Decor, Mark,
    Series, FONT, REFERENCE, SIZE,
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

/// The best lock-based strategy's median at each update fraction of `c`
/// (where any was measured), as a reference line; `None` with fewer than
/// two fractions.
fn envelope(c: &Chart) -> Option<Series> {
    let mut best: Vec<(i32, f64)> = Vec::new();
    for s in c.series.iter().filter(|s| lock_based(&s.lock)) {
        for &(x, med, _, _) in &s.points {
            match best.iter_mut().find(|b| b.0 == x) {
                Some(b) if b.1 < med => b.1 = med,
                Some(_) => {}
                None => best.push((x, med)),
            }
        }
    }
    best.sort_by_key(|b| b.0);
    (best.len() > 1).then(|| Series {
        lock: "best lock-based".into(),
        points: best.iter().map(|&(x, m)| (x, m, m, m)).collect(),
    })
}

/// The envelope of `c` and, marked, where the RCU strategy (`rcu`, else
/// the first that takes no lock) crosses it.
fn update_decor(c: &Chart) -> Decor {
    let Some(env) = envelope(c) else {
        return Decor::default();
    };
    let rcu = c.series.iter().find(|s| s.lock == "rcu").or_else(|| {
        c.series
            .iter()
            .find(|s| !lock_based(&s.lock) && s.lock != NONE)
    });
    let mut marks = Vec::new();
    if let Some(r) = rcu {
        let ratios: Vec<(u32, f64)> = r
            .points
            .iter()
            .filter_map(|&(x, med, _, _)| {
                let best = env.points.iter().find(|e| e.0 == x)?.1;
                Some((u32::try_from(x).ok()?, med / best))
            })
            .collect();
        if let Crossover::Crosses(list) = crossover(&ratios) {
            marks = list
                .iter()
                .map(|k| Mark {
                    x: k.pct,
                    label: format!(
                        "{} {} {:.0} %",
                        r.lock,
                        if k.ahead {
                            "gets ahead at"
                        } else {
                            "falls behind at"
                        },
                        k.pct
                    ),
                    color: REFERENCE,
                })
                .collect();
        }
    }
    Decor {
        marks,
        reference: Some(env),
    }
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
            Some(c) => draw_chart_and_legend(
                &top,
                c,
                1,
                "threads",
                "strategy",
                legend_width,
                log_y,
                &Decor::default(),
            )?,
            None => top.draw_text(
                "no points at 0 % updates: no lookup scaling to draw",
                &(FONT, 18).into_font().color(&BLACK),
                (40, 40),
            )?,
        }
        // A few percent of room on the fraction axis.
        draw_chart_and_legend(
            &bottom,
            &lower,
            4,
            "updates (% of operations)",
            "strategy",
            legend_width,
            log_y,
            &update_decor(&lower),
        )?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, pts: &[(i32, f64)]) -> Series {
        Series {
            lock: name.into(),
            points: pts.iter().map(|&(x, y)| (x, y, y, y)).collect(),
        }
    }

    #[test]
    fn the_envelope_is_the_best_lock_based_and_rcu_crossing_it_is_marked() {
        // rcu 10 → 2, the lock-based best 4 at both ends (bucket-rw, then
        // global-spin): the ratio 2.5 → 0.5 passes 1 at 37.5 %.
        let c = Chart {
            series: vec![
                line("bucket-rw", &[(0, 4.0), (50, 1.0)]),
                line("global-spin", &[(0, 3.0), (50, 4.0)]),
                line("rcu", &[(0, 10.0), (50, 2.0)]),
            ],
            y_lo: 0.0,
            y_hi: 11.0,
            y_desc: String::new(),
        };
        let d = update_decor(&c);
        let env = d.reference.expect("an envelope");
        assert_eq!(env.points, vec![(0, 4.0, 4.0, 4.0), (50, 4.0, 4.0, 4.0)]);
        assert_eq!(d.marks.len(), 1);
        assert!((d.marks[0].x - 37.5).abs() < 1e-9, "{}", d.marks[0].x);
        assert_eq!(d.marks[0].label, "rcu falls behind at 38 %");
        // One fraction: no envelope to draw.
        let one = Chart {
            series: vec![line("bucket-rw", &[(0, 4.0)]), line("rcu", &[(0, 1.0)])],
            ..c
        };
        assert!(update_decor(&one).reference.is_none());
    }
}
