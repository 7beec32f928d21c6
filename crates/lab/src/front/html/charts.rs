//! The report's own charts and tables of a study's points, chosen by what
//! the points are ([`own_chart`]), not by the study's name: for locks of
//! the registry, throughput against threads as small multiples, one panel
//! per lock family, or at one thread, ns per acquisition as bars; for
//! points over update fractions (the hash-table strategies), throughput
//! against the fraction with the RCU-style strategy's crossover of the
//! best lock-based one. Each returns HTML.

use std::fmt::Write as _;

use locklab::Family;
use serde_json::Value;

use super::svg::{self, esc, Axis, Line, Mark, Panel};
use crate::core::report::{cpu_ns_per_op, fmt_ns};
use crate::core::results::{Point, RunMeta};

/// The family of a lock by its registry name ("other" when the registry
/// does not know it).
pub fn family(lock: &str) -> &'static str {
    crate::core::registry::all()
        .iter()
        .map(|e| e.info)
        .chain(crate::core::registry::rw_all().iter().map(|e| e.info))
        .find(|i| i.name == lock)
        .map_or("other", |i| i.family.as_str())
}

/// The report's own chart of one study's points, if it has one for
/// them: over update fractions when every point has an `update_pct`
/// parameter; for registry locks (most points' locks known to the
/// registry) bars at one thread or small multiples over threads.
pub fn own_chart(meta: &RunMeta, points: &[&Point]) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    if points.iter().all(|p| update_pct(p).is_some()) {
        return Some(by_update(points));
    }
    let known = points.iter().filter(|p| family(&p.lock) != "other").count();
    if known * 2 <= points.len() {
        return None;
    }
    Some(if points.iter().all(|p| p.threads <= 1) {
        one_thread(points)
    } else {
        by_threads(meta, points)
    })
}

/// A point's update fraction in percent, from its parameters.
fn update_pct(p: &Point) -> Option<u32> {
    p.params.get("update_pct")?.as_u64().map(|x| x as u32)
}

/// Whether a strategy's readers take a lock: the global and per-bucket
/// locks, reference counting, big-reader locks and the sharded map.
fn lock_based(strategy: &str) -> bool {
    strategy.starts_with("global-")
        || strategy.starts_with("bucket-")
        || ["refcnt", "brlock", "dashmap"]
            .iter()
            .any(|s| strategy == *s || strategy.starts_with(&format!("{s}(")))
}

/// The order families are shown in.
const FAMILIES: [&str; 7] = [
    Family::Spin.as_str(),
    Family::Ticket.as_str(),
    Family::Queue.as_str(),
    Family::Blocking.as_str(),
    Family::ReaderWriter.as_str(),
    Family::Peer.as_str(),
    "other",
];

/// Groups `points` by parameter set, in stored order.
fn by_params<'a>(points: &[&'a Point]) -> Vec<(&'a Value, Vec<&'a Point>)> {
    let mut out: Vec<(&Value, Vec<&Point>)> = Vec::new();
    for p in points {
        match out.iter_mut().find(|(v, _)| **v == p.params) {
            Some((_, g)) => g.push(p),
            None => out.push((&p.params, vec![p])),
        }
    }
    out
}

/// `key=value` pairs of a parameter set.
pub fn params_text(v: &Value) -> String {
    match v {
        Value::Object(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                o => format!("{k}={o}"),
            })
            .collect::<Vec<_>>()
            .join("  "),
        Value::Object(_) | Value::Null => "no parameters".into(),
        o => o.to_string(),
    }
}

/// The distinct lock names of `points` in first-seen order.
fn names<'a>(points: &[&'a Point]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for p in points {
        if !out.contains(&p.lock.as_str()) {
            out.push(&p.lock);
        }
    }
    out
}

/// A legend: swatch and name per series.
fn legend(items: &[(usize, String)]) -> String {
    let mut s = String::from("<ul class=\"legend\">");
    for (i, name) in items {
        let _ = write!(s, "<li>{}{}</li>", svg::swatch(*i), esc(name));
    }
    s.push_str("</ul>");
    s
}

/// Throughput against threads (log₂), one panel per lock family, a shared
/// log₁₀ throughput axis within each parameter set, the core count
/// dashed; then the table of the medians.
pub fn by_threads(meta: &RunMeta, points: &[&Point]) -> String {
    let mut s = String::new();
    let cores = meta.machine.cores;
    for (params, group) in by_params(points) {
        let group: Vec<&Point> = group.into_iter().filter(|p| !p.reps.is_empty()).collect();
        if group.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "<h4>{}</h4><p class=\"note\">Median throughput of each lock against threads \
             (log₂), whiskers min–max over the repetitions; one panel per lock family, one \
             throughput axis (log₁₀) for all panels.</p>",
            esc(&params_text(params))
        );
        let y = Axis::fit_y(
            group.iter().flat_map(|p| {
                let (m, lo, hi) = p.stat(|r| r.throughput_ops_s);
                [m, lo, hi]
            }),
            true,
        );
        let tmin = group.iter().map(|p| p.threads).min().unwrap_or(1).max(1) as f64;
        let mut tmax = group.iter().map(|p| p.threads).max().unwrap_or(1).max(1) as f64;
        if cores > 0 && (cores as f64) > tmax && (cores as f64) <= tmax * 4.0 {
            tmax = cores as f64;
        }
        let (xlo, xhi) = if tmax > tmin {
            (tmin / 1.25, tmax * 1.25)
        } else {
            (tmin / 2.0, tmax * 2.0)
        };
        let x = Axis {
            lo: xlo,
            hi: xhi,
            log: true,
        };
        let marks = if cores > 0 {
            vec![Mark {
                x: cores as f64,
                label: format!("{cores} cores"),
                colour: "#b22222",
            }]
        } else {
            Vec::new()
        };
        if let Some(y) = y {
            s.push_str("<div class=\"multiples\">");
            let locks = names(&group);
            for fam in FAMILIES {
                let mine: Vec<&str> = locks.iter().copied().filter(|l| family(l) == fam).collect();
                if mine.is_empty() {
                    continue;
                }
                let lines: Vec<Line> = mine
                    .iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let mut pts: Vec<(f64, f64, f64, f64)> = group
                            .iter()
                            .filter(|p| p.lock == *l)
                            .map(|p| {
                                let (m, lo, hi) = p.stat(|r| r.throughput_ops_s);
                                (p.threads.max(1) as f64, m, lo, hi)
                            })
                            .filter(|q| q.1.is_finite() && q.1 > 0.0)
                            .collect();
                        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                        Line {
                            style: i,
                            points: pts,
                            reference: false,
                        }
                    })
                    .collect();
                // A family of many locks gets a panel twice as wide.
                let big = mine.len() > 6;
                let title = format!(
                    "{fam} ({} lock{})",
                    mine.len(),
                    if mine.len() == 1 { "" } else { "s" }
                );
                let chart = svg::panel(&Panel {
                    title: &title,
                    x,
                    y,
                    x_label: "threads",
                    y_label: "throughput (ops/s)",
                    lines: &lines,
                    marks: &marks,
                    size: if big { (740.0, 340.0) } else { (360.0, 260.0) },
                });
                let items: Vec<(usize, String)> = mine
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i, l.to_string()))
                    .collect();
                let _ = write!(
                    s,
                    "<figure class=\"panel{}\">{chart}{}</figure>",
                    if big { " big" } else { "" },
                    legend(&items)
                );
            }
            s.push_str("</div>");
        } else {
            s.push_str("<p class=\"note\">no throughput above zero to chart</p>");
        }
        s.push_str(&threads_table(&group));
    }
    s
}

/// The medians of each point: one row per lock and thread count.
fn threads_table(points: &[&Point]) -> String {
    let mut rows: Vec<&Point> = points.to_vec();
    let fam_rank = |l: &str| FAMILIES.iter().position(|f| *f == family(l)).unwrap_or(99);
    rows.sort_by(|a, b| {
        (fam_rank(&a.lock), a.threads)
            .cmp(&(fam_rank(&b.lock), b.threads))
            .then(
                b.stat(|r| r.throughput_ops_s)
                    .0
                    .total_cmp(&a.stat(|r| r.throughput_ops_s).0),
            )
    });
    let mut s = String::from(
        "<details><summary>Table: medians per lock and thread count</summary>\
         <table class=\"data\"><thead><tr><th>family</th><th>lock</th><th>threads</th>\
         <th>throughput/s</th><th>min–max</th><th>Jain</th><th>p50 wait</th>\
         <th>p99 wait</th><th>CPU/acq</th><th>reps</th></tr></thead><tbody>",
    );
    for p in rows {
        let (m, lo, hi) = p.stat(|r| r.throughput_ops_s);
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}–{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            family(&p.lock),
            esc(&p.lock),
            p.threads,
            svg::short(m),
            svg::short(lo),
            svg::short(hi),
            crate::core::report::jain_text(p.stat(|r| r.jain).0),
            esc(&fmt_ns(p.stat(|r| r.p50_ns as f64).0)),
            esc(&fmt_ns(p.stat(|r| r.p99_ns as f64).0)),
            esc(&fmt_ns(p.stat(cpu_ns_per_op).0)),
            p.reps.len()
        );
    }
    s.push_str("</tbody></table></details>");
    s
}

/// ns per acquire–release pair, one bar per lock, grouped by family and
/// fastest first, the min–max beside it.
pub fn one_thread(points: &[&Point]) -> String {
    let mut s = String::new();
    for (params, group) in by_params(points) {
        let mut rows: Vec<(&Point, f64, f64, f64)> = group
            .iter()
            .filter(|p| !p.reps.is_empty())
            .map(|p| {
                let (m, lo, hi) = p.stat(|r| r.ns_per_op);
                (*p, m, lo, hi)
            })
            .filter(|r| r.1.is_finite())
            .collect();
        let fam_rank = |l: &str| FAMILIES.iter().position(|f| *f == family(l)).unwrap_or(99);
        rows.sort_by(|a, b| {
            fam_rank(&a.0.lock)
                .cmp(&fam_rank(&b.0.lock))
                .then(a.1.total_cmp(&b.1))
        });
        let top = rows.iter().map(|r| r.3.max(r.1)).fold(0.0, f64::max);
        let _ = write!(
            s,
            "<h4>{}</h4><p class=\"note\">ns per acquire–release pair, one thread (median; \
             bar to the median, thin line to the max).</p><table class=\"data bars\"><thead><tr>\
             <th>family</th><th>lock</th><th>ns/pair</th><th>min–max</th><th></th></tr></thead><tbody>",
            esc(&params_text(params))
        );
        for (p, m, lo, hi) in rows {
            let w = |v: f64| if top > 0.0 { 100.0 * v / top } else { 0.0 };
            let fam = if p.lock.starts_with("floor") {
                "reference"
            } else {
                family(&p.lock)
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}–{:.2}</td>\
                 <td class=\"barcell\"><span class=\"bar\" style=\"width:{:.1}%\"></span>\
                 <span class=\"whisk\" style=\"width:{:.1}%\"></span></td></tr>",
                fam,
                esc(&p.lock),
                m,
                lo,
                hi,
                w(m),
                w(hi)
            );
        }
        s.push_str("</tbody></table>");
    }
    s
}

/// Whether a hash-table strategy is RCU-style (readers take no lock and wait
/// for nothing): the lab's RCU flavours and liburcu's.
fn rcu_style(strategy: &str) -> bool {
    strategy.starts_with("rcu") || strategy.starts_with("liburcu")
}

/// Where the ratio `a / b` passes through 1 between consecutive x
/// measured for both, interpolated linearly in the ratio (as the
/// strategies' verdict does): (x, `b` there, whether `a` gets ahead there).
pub fn crossings(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64, bool)> {
    let common: Vec<(f64, f64, f64)> = a
        .iter()
        .filter_map(|&(x, ya)| {
            b.iter()
                .find(|(xb, _)| *xb == x)
                .map(|&(_, yb)| (x, ya, yb))
        })
        .collect();
    let mut out = Vec::new();
    for w in common.windows(2) {
        let (x0, a0, b0) = w[0];
        let (x1, a1, b1) = w[1];
        let (r0, r1) = (a0 / b0, a1 / b1);
        if !r0.is_finite() || !r1.is_finite() || (r0 > 1.0) == (r1 > 1.0) {
            continue;
        }
        let t = (r0 - 1.0) / (r0 - r1);
        out.push((x0 + t * (x1 - x0), b0 + t * (b1 - b0), r1 > 1.0));
    }
    out
}

/// Throughput against the update fraction, one panel per thread count
/// of each table shape, one line per strategy, the best lock-based
/// strategy's envelope dotted and the RCU-style strategy's crossings of
/// it marked.
pub fn by_update(points: &[&Point]) -> String {
    let mut s = String::new();
    // Shapes: the parameters without the update fraction.
    let shape = |p: &Point| {
        let mut v = p.params.clone();
        if let Value::Object(m) = &mut v {
            m.remove("update_pct");
        }
        v
    };
    let mut shapes: Vec<Value> = Vec::new();
    for p in points {
        let v = shape(p);
        if !shapes.contains(&v) {
            shapes.push(v);
        }
    }
    for sh in &shapes {
        let group: Vec<&Point> = points
            .iter()
            .copied()
            .filter(|p| shape(p) == *sh && update_pct(p).is_some() && !p.reps.is_empty())
            .collect();
        if group.is_empty() {
            continue;
        }
        let strategies = names(&group);
        let mut threads: Vec<u32> = group.iter().map(|p| p.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let pmax = group
            .iter()
            .filter_map(|p| update_pct(p))
            .max()
            .unwrap_or(100);
        let x = Axis {
            lo: 0.0,
            hi: f64::from(pmax.max(1)),
            log: false,
        };
        let _ = write!(
            s,
            "<h4>{}</h4><p class=\"note\">Total throughput (lookups + updates) against the \
             update fraction, median with min–max whiskers; the dotted grey line is the best \
             lock-based strategy at each fraction, the dashed lines mark where the RCU-style \
             strategy crosses it.</p><div class=\"multiples\">",
            esc(&params_text(sh))
        );
        let mut notes: Vec<String> = Vec::new();
        for &t in &threads {
            let at: Vec<&Point> = group.iter().copied().filter(|p| p.threads == t).collect();
            let curve = |name: &str| -> Vec<(f64, f64, f64, f64)> {
                let mut v: Vec<(f64, f64, f64, f64)> = at
                    .iter()
                    .filter(|p| p.lock == name)
                    .filter_map(|p| {
                        let (m, lo, hi) = p.stat(|r| r.throughput_ops_s);
                        m.is_finite()
                            .then(|| (f64::from(update_pct(p).unwrap_or(0)), m, lo, hi))
                    })
                    .collect();
                v.sort_by(|a, b| a.0.total_cmp(&b.0));
                v
            };
            let mut lines: Vec<Line> = strategies
                .iter()
                .enumerate()
                .map(|(i, n)| Line {
                    style: i,
                    points: curve(n),
                    reference: false,
                })
                .collect();
            // The best lock-based strategy at each fraction.
            let mut envelope: Vec<(f64, f64, &str)> = Vec::new();
            for n in strategies.iter().filter(|n| lock_based(n)) {
                for (x, m, _, _) in curve(n) {
                    match envelope.iter_mut().find(|e| e.0 == x) {
                        Some(e) if e.1 < m => *e = (x, m, n),
                        Some(_) => {}
                        None => envelope.push((x, m, n)),
                    }
                }
            }
            envelope.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut marks = Vec::new();
            let rcu = strategies
                .iter()
                .copied()
                .find(|n| *n == "rcu")
                .or_else(|| strategies.iter().copied().find(|n| rcu_style(n)));
            if envelope.len() > 1 {
                lines.push(Line {
                    style: 0,
                    points: envelope.iter().map(|&(x, m, _)| (x, m, m, m)).collect(),
                    reference: true,
                });
                if let Some(r) = rcu {
                    let rc: Vec<(f64, f64)> = curve(r).iter().map(|q| (q.0, q.1)).collect();
                    let env: Vec<(f64, f64)> = envelope.iter().map(|e| (e.0, e.1)).collect();
                    let cross = crossings(&rc, &env);
                    for (cx, _, ahead) in &cross {
                        marks.push(Mark {
                            x: *cx,
                            label: format!("{r} × lock-based {cx:.0} %"),
                            colour: "#333",
                        });
                        notes.push(format!(
                            "{t} thread{}: {r} {} the best lock-based strategy at ≈ {cx:.1} % updates",
                            if t == 1 { "" } else { "s" },
                            if *ahead { "gets ahead of" } else { "falls behind" }
                        ));
                    }
                    if cross.is_empty() && !rc.is_empty() {
                        let above = rc
                            .iter()
                            .filter(|(x, y)| env.iter().any(|e| e.0 == *x && *y > e.1))
                            .count();
                        notes.push(format!(
                            "{t} thread{}: no crossover between {r} and the best lock-based \
                             strategy; {r} is {} over the fractions measured",
                            if t == 1 { "" } else { "s" },
                            if above * 2 > rc.len() {
                                "ahead"
                            } else {
                                "behind"
                            }
                        ));
                    }
                }
            }
            let y = Axis::fit_y(
                lines
                    .iter()
                    .flat_map(|l| l.points.iter().flat_map(|q| [q.1, q.3])),
                false,
            );
            let Some(y) = y else { continue };
            let title = format!("{t} thread{}", if t == 1 { "" } else { "s" });
            s.push_str("<figure class=\"panel wide\">");
            s.push_str(&svg::panel(&Panel {
                title: &title,
                x,
                y,
                x_label: "updates (%)",
                y_label: "throughput (ops/s)",
                lines: &lines,
                marks: &marks,
                size: (560.0, 330.0),
            }));
            s.push_str("</figure>");
        }
        s.push_str("</div>");
        let items: Vec<(usize, String)> = strategies
            .iter()
            .enumerate()
            .map(|(i, n)| (i, n.to_string()))
            .collect();
        s.push_str(&legend(&items));
        if !notes.is_empty() {
            s.push_str("<ul class=\"cross\">");
            for n in notes {
                let _ = write!(s, "<li>{}</li>", esc(&n));
            }
            s.push_str("</ul>");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crossing_is_interpolated_between_the_fractions() {
        let a = [(0.0, 10.0), (50.0, 2.0)];
        let b = [(0.0, 4.0), (50.0, 4.0)];
        let c = crossings(&a, &b);
        assert_eq!(c.len(), 1);
        assert!((c[0].0 - 37.5).abs() < 1e-9, "{c:?}");
        assert!(!c[0].2, "a falls behind");
        assert!(crossings(&b, &b).is_empty());
    }

    #[test]
    fn families_come_from_the_registry() {
        assert_eq!(family("mcs"), "queue");
        assert_eq!(family("pthread"), "peer");
        assert_eq!(family("no-such-lock"), "other");
    }
}
