//! The report's own charts of a study's points, chosen by what the points
//! are ([`own_chart`]), not by the study's name: for locks of the
//! registry, throughput against threads with one chart per lock family,
//! or at one thread, ns per acquisition as bars. Both are drawn by the
//! lab's one chart engine, [`crate::core::plot`], as `locklab plot` draws
//! them. Each returns HTML.

use std::fmt::Write as _;

use super::markup::{esc, inline_svg};
use crate::core::plot::bars::bars_svg;
use crate::core::plot::param_text;
use crate::core::plot::threads::{reps_text, threads_svg};
use crate::core::registry::{family_of, FAMILIES};
use crate::core::report::{by_params, cpu_ns_per_op, fmt_ns, short};
use crate::core::results::{Point, RunMeta};

/// The family of a lock by its registry name ("other" when the registry
/// does not know it).
fn family(lock: &str) -> &'static str {
    family_of(lock).map_or("other", |f| f.as_str())
}

/// Where a family sorts: the registry's order, then "other".
fn family_rank(lock: &str) -> usize {
    let f = family(lock);
    FAMILIES
        .iter()
        .position(|x| x.as_str() == f)
        .unwrap_or(FAMILIES.len())
}

/// The size of one family's chart: two fit side by side in the page.
pub(super) const PANEL: (u32, u32) = (570, 400);

/// The report's own chart of one study's points, if it has one for
/// them: for registry locks (most points' locks known to the registry)
/// bars at one thread or one chart per family over threads.
pub fn own_chart(meta: &RunMeta, points: &[&Point]) -> Option<String> {
    if points.is_empty() {
        return None;
    }
    // A sweep of update fractions is of a table's strategies, some named
    // as registry locks are (`brlock`, `combining`): the study's own plot
    // draws it, against the fraction.
    if points.iter().any(|p| p.params.get("update_pct").is_some()) {
        return None;
    }
    let known = points
        .iter()
        .filter(|p| family_of(&p.lock).is_some())
        .count();
    if known * 2 <= points.len() {
        return None;
    }
    Some(if points.iter().all(|p| p.threads <= 1) {
        one_thread(meta, points)
    } else {
        by_threads(meta, points)
    })
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

/// A chart the engine could not draw, as a note saying why.
fn no_chart(s: &mut String, why: &str) {
    let _ = write!(s, "<p class=\"note\">no chart: {}</p>", esc(why));
}

/// Throughput against threads, one chart per lock family and parameter
/// set, the core count marked; then the table of the medians.
pub fn by_threads(meta: &RunMeta, points: &[&Point]) -> String {
    let mut s = String::new();
    for (params, group) in by_params(points) {
        let group: Vec<&Point> = group.into_iter().filter(|p| !p.reps.is_empty()).collect();
        if group.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "<h4>{}</h4><p class=\"note\">Median throughput of each lock against threads, \
             whiskers min–max over the repetitions; one chart per lock family, one \
             throughput axis for all of them.</p>\
             <div class=\"multiples\">",
            esc(&param_text(params))
        );
        let locks = names(&group);
        let families: Vec<&str> = FAMILIES
            .iter()
            .map(|f| f.as_str())
            .chain(["other"])
            .collect();
        for fam in families {
            let mine: Vec<&Point> = group
                .iter()
                .copied()
                .filter(|p| family(&p.lock) == fam)
                .collect();
            let n = locks.iter().filter(|l| family(l) == fam).count();
            if n == 0 {
                continue;
            }
            let titles = [
                format!("{fam} ({n} lock{})", if n == 1 { "" } else { "s" }),
                format!("{}, whiskers min–max", reps_text(&mine)),
            ];
            match threads_svg(meta, &mine, &group, &titles, true, PANEL) {
                Ok(Some(svg)) => {
                    let _ = write!(s, "<figure class=\"panel\">{}</figure>", inline_svg(&svg));
                }
                Ok(None) => no_chart(&mut s, &format!("{fam}: no throughput above zero")),
                Err(e) => no_chart(&mut s, &e.to_string()),
            }
        }
        s.push_str("</div>");
        s.push_str(&threads_table(&group));
    }
    s
}

/// The medians of each point: one row per lock and thread count.
fn threads_table(points: &[&Point]) -> String {
    let mut rows: Vec<&Point> = points.to_vec();
    rows.sort_by(|a, b| {
        (family_rank(&a.lock), a.threads)
            .cmp(&(family_rank(&b.lock), b.threads))
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
            short(m),
            short(lo),
            short(hi),
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
/// fastest first, for each parameter set.
pub fn one_thread(meta: &RunMeta, points: &[&Point]) -> String {
    let mut s = String::new();
    for (params, group) in by_params(points) {
        let titles = [format!(
            "{}: ns per acquire–release pair at one thread (bar to the median, whisker min–max)",
            param_text(params)
        )];
        match bars_svg(meta, &group, &titles, false, 1100) {
            Ok(Some(svg)) => {
                let _ = write!(s, "<div class=\"embedded\">{}</div>", inline_svg(&svg));
            }
            Ok(None) => no_chart(&mut s, "no time per pair above zero"),
            Err(e) => no_chart(&mut s, &e.to_string()),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_come_from_the_registry() {
        assert_eq!(family("mcs"), "queue");
        assert_eq!(family("pthread"), "peer");
        assert_eq!(family("no-such-lock"), "other");
    }
}
