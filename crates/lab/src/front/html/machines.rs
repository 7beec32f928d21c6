//! The report's "Machines side by side": where its runs come from more
//! than one machine, the machines' facts in one table, and each study that
//! several of them ran as one table of the points they share, every run's
//! throughput beside the first's with the ratio and its interval (as
//! `locklab compare` computes them), and, for each lock whose points span
//! several thread counts, a chart of its throughput against threads with
//! a line per run.

use std::fmt::Write as _;

use super::charts::PANEL;
use super::markup::{esc, inline_svg};
use crate::core::plot::threads::{reps_text, threads_svg};
use crate::core::report;
use crate::core::results::{Machine, Point, RunMeta};
use crate::core::stats::sig3;
use crate::front::compare::{compare, machine_warning};

/// Whether the runs come from more than one machine.
pub fn several(runs: &[(RunMeta, Vec<Point>)]) -> bool {
    runs.first()
        .is_some_and(|(a, _)| runs.iter().any(|(b, _)| machine_warning(a, b).is_some()))
}

fn machine_name(m: &Machine) -> String {
    m.name().to_string()
}

fn run_label(meta: &RunMeta) -> String {
    format!(
        "run {} ({})",
        meta.id.map_or_else(|| "unsaved".into(), |i| i.to_string()),
        machine_name(&meta.machine)
    )
}

/// A fact of a run's machine, as text.
type Fact = fn(&RunMeta) -> String;

/// The section, or nothing where the runs are of one machine.
pub fn section(s: &mut String, runs: &[(RunMeta, Vec<Point>)], noise: f64) {
    if !several(runs) {
        return;
    }
    s.push_str(
        "<h2 id=\"machines\">Machines side by side</h2><p class=\"note\">The runs come from \
         more than one machine. A figure moves with the machine: the ratios below say how much \
         of a lock's standing is this machine's.</p>",
    );
    let facts: [(&str, Fact); 7] = [
        ("machine", |m| machine_name(&m.machine)),
        ("host", |m| m.machine.hostname.clone()),
        ("CPU", |m| m.machine.cpu_model.clone()),
        ("cores", |m| m.machine.cores.to_string()),
        ("kernel", |m| m.machine.kernel.clone()),
        ("RTM", |m| m.machine.rtm_word("not recorded").to_string()),
        ("git revision", |m| m.machine.git_rev.clone()),
    ];
    s.push_str("<table class=\"data\"><thead><tr><th></th>");
    for (m, _) in runs {
        let _ = write!(s, "<th>{}</th>", esc(&run_label(m)));
    }
    s.push_str("</tr></thead><tbody>");
    for (name, f) in facts {
        let values: Vec<String> = runs.iter().map(|(m, _)| f(m)).collect();
        let differ = values.iter().any(|v| *v != values[0]);
        let _ = write!(
            s,
            "<tr><td>{}</td>{}</tr>",
            esc(name),
            values
                .iter()
                .map(|v| format!(
                    "<td{}>{}</td>",
                    if differ { " class=\"warn\"" } else { "" },
                    esc(v)
                ))
                .collect::<String>()
        );
    }
    s.push_str("</tbody></table>");

    let (first, first_points) = &runs[0];
    let mut benches: Vec<&str> = Vec::new();
    for p in first_points {
        if !benches.contains(&p.bench.as_str()) {
            benches.push(&p.bench);
        }
    }
    for bench in benches {
        let a: Vec<Point> = first_points
            .iter()
            .filter(|p| p.bench == bench)
            .cloned()
            .collect();
        let others: Vec<(&RunMeta, Vec<Point>)> = runs[1..]
            .iter()
            .map(|(m, ps)| (m, ps.iter().filter(|p| p.bench == bench).cloned().collect()))
            .filter(|(_, ps): &(&RunMeta, Vec<Point>)| !ps.is_empty())
            .collect();
        if others.is_empty() {
            continue;
        }
        let comparisons: Vec<_> = others.iter().map(|(_, b)| compare(&a, b, noise)).collect();
        let shared: Vec<&Point> = a
            .iter()
            .filter(|p| {
                comparisons
                    .iter()
                    .any(|c| c.rows.iter().any(|r| std::ptr::eq(r.a, *p)))
            })
            .collect();
        if shared.is_empty() {
            let _ = write!(
                s,
                "<h3>{}</h3><p class=\"note\">No point of this study is in more than one of \
                 the runs.</p>",
                esc(bench)
            );
            continue;
        }
        let top = comparisons
            .iter()
            .flat_map(|c| c.rows.iter().flat_map(|r| [r.a_value, r.b_value]))
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max);
        let unit = report::throughput_unit(top);
        let _ = write!(
            s,
            "<h3>{}</h3><p class=\"note\">Throughput in {} (geometric mean of the repetitions); \
             each other run against {} (its B/A with a 95 % interval, unpaired; * where the \
             interval excludes 1 and the change exceeds {} %).</p>",
            esc(bench),
            esc(unit.1),
            esc(&run_label(first)),
            (noise * 100.0).round()
        );
        s.push_str("<table class=\"data\"><thead><tr><th>lock</th><th>threads</th>");
        let _ = write!(s, "<th>{}</th>", esc(&run_label(first)));
        for (m, _) in &others {
            let _ = write!(s, "<th>{}</th><th>B/A</th>", esc(&run_label(m)));
        }
        s.push_str("</tr></thead><tbody>");
        for &p in &shared {
            let a_value = comparisons
                .iter()
                .find_map(|c| c.rows.iter().find(|r| std::ptr::eq(r.a, p)))
                .map_or(f64::NAN, |r| r.a_value);
            let _ = write!(
                s,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                esc(&p.lock),
                p.threads,
                esc(&report::sig(a_value / unit.0))
            );
            for c in &comparisons {
                match c.rows.iter().find(|r| std::ptr::eq(r.a, p)) {
                    Some(r) => {
                        let interval = if r.ratio.spread_known() {
                            format!(" ({}–{})", sig3(r.ratio.lo), sig3(r.ratio.hi))
                        } else {
                            String::new()
                        };
                        let _ = write!(
                            s,
                            "<td class=\"n\">{}</td><td class=\"n\">{}×{interval}{}</td>",
                            esc(&report::sig(r.b_value / unit.0)),
                            sig3(r.ratio.ratio),
                            if r.change.significant() { " *" } else { "" }
                        );
                    }
                    None => s.push_str("<td class=\"n\">–</td><td></td>"),
                }
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        let runs_of_bench: Vec<(&RunMeta, &[Point])> = std::iter::once((first, a.as_slice()))
            .chain(others.iter().map(|(m, ps)| (*m, ps.as_slice())))
            .collect();
        lock_charts(s, &runs_of_bench, &shared);
    }
}

/// At most this many charts a study: one a lock.
const MAX_CHARTS: usize = 12;

/// For each lock of the `shared` points (in their order) whose points
/// span several thread counts: its throughput against threads, a line per
/// run of `runs` (named by its machine), over the points with the shared
/// point's parameters.
fn lock_charts(s: &mut String, runs: &[(&RunMeta, &[Point])], shared: &[&Point]) {
    let mut charts = Vec::new();
    let mut locks: Vec<&Point> = Vec::new();
    for p in shared {
        if !locks.iter().any(|q| q.lock == p.lock) {
            locks.push(p);
        }
    }
    for key in &locks {
        let lines: Vec<Point> = runs
            .iter()
            .flat_map(|(meta, points)| {
                points
                    .iter()
                    .filter(|p| p.lock == key.lock && p.params == key.params && !p.reps.is_empty())
                    .map(|p| Point {
                        lock: run_label(meta),
                        ..p.clone()
                    })
            })
            .collect();
        let mut threads: Vec<u32> = lines.iter().map(|p| p.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        if threads.len() > 1 {
            charts.push((key.lock.as_str(), lines));
        }
    }
    if charts.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<p class=\"note\">Each lock's median throughput against threads, a line per run, \
         whiskers min–max over its repetitions{}.</p><div class=\"multiples\">",
        if charts.len() > MAX_CHARTS {
            format!("; the first {MAX_CHARTS} locks of {}", charts.len())
        } else {
            String::new()
        }
    );
    // The machines' core counts differ: no one of them is marked.
    let (first, _) = runs[0];
    let meta = RunMeta {
        machine: Machine {
            cores: 0,
            ..first.machine.clone()
        },
        ..first.clone()
    };
    for (lock, lines) in charts.iter().take(MAX_CHARTS) {
        let refs: Vec<&Point> = lines.iter().collect();
        let titles = [
            format!("{lock}: a line per run"),
            format!("{}, whiskers min–max", reps_text(&refs)),
        ];
        match threads_svg(&meta, &refs, &refs, &titles, true, PANEL) {
            Ok(Some(svg)) => {
                let _ = write!(s, "<figure class=\"panel\">{}</figure>", inline_svg(&svg));
            }
            Ok(None) => {
                let _ = write!(
                    s,
                    "<p class=\"note\">no chart: {}: no throughput above zero</p>",
                    esc(lock)
                );
            }
            Err(e) => {
                let _ = write!(s, "<p class=\"note\">no chart: {}</p>", esc(&e.to_string()));
            }
        }
    }
    s.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(id: i64, machine: &str, cpu: &str, level: f64) -> (RunMeta, Vec<Point>) {
        let meta = RunMeta {
            id: Some(id),
            uuid: None,
            kind: "bench demo".into(),
            command: "locklab bench demo".into(),
            params: json!({}),
            machine: Machine {
                id: Some(machine.into()),
                cpu_model: cpu.into(),
                cores: 2,
                ..Machine::default()
            },
            started: "t".into(),
            finished: None,
            complete: true,
        };
        let t = |x: f64| [x * 0.99, x, x * 1.01];
        let points = vec![
            Point::of_throughputs("demo", "tas", 2, json!({}), &t(level)),
            Point::of_throughputs("demo", "mcs", 2, json!({}), &t(2.0 * level)),
            Point::of_throughputs("demo", "mcs", 4, json!({}), &t(1.5 * level)),
        ];
        (meta, points)
    }

    #[test]
    fn two_machines_share_a_table_with_ratios_and_one_machine_gets_none() {
        let one = [
            run(1, "amd", "AMD EPYC", 1e6),
            run(2, "amd", "AMD EPYC", 1e6),
        ];
        let mut s = String::new();
        section(&mut s, &one, 0.05);
        assert!(s.is_empty(), "{s}");

        let two = [
            run(1, "amd", "AMD EPYC", 1e6),
            run(2, "xeon", "Intel Xeon", 1.5e6),
        ];
        section(&mut s, &two, 0.05);
        assert!(s.contains("Machines side by side"), "{s}");
        assert!(
            s.contains("run 1 (amd)") && s.contains("run 2 (xeon)"),
            "{s}"
        );
        assert!(s.contains("<td class=\"warn\">Intel Xeon</td>"), "{s}");
        // Every point, each 1.5× on the second machine, marked.
        assert_eq!(s.matches("1.50× (").count(), 3, "{s}");
        assert_eq!(s.matches(" *</td>").count(), 3, "{s}");
        // A chart for mcs, which spans two thread counts, with a line per
        // run; none for tas, at one.
        assert_eq!(s.matches("<figure class=\"panel\"><svg").count(), 1, "{s}");
        assert!(s.contains("mcs: a line per run"), "{s}");
        let svg = &s[s.find("<svg").unwrap()..];
        assert!(
            svg.contains("run 1 (amd)") && svg.contains("run 2 (xeon)"),
            "{svg}"
        );
    }
}
