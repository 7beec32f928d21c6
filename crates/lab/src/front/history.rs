//! `locklab history`: one figure across the git revisions of the runs in a
//! store, for a team that tunes a lock over many commits.
//!
//! The figure is a point's throughput (one study, lock and thread count),
//! as `compare` has it. Its runs are split into series, one per machine
//! (by identity, as `locklab machines` groups them) and per set of the
//! point's parameters, since a figure moves with either. Within a series
//! the runs are grouped by the lab's git revision, in the order each
//! revision first ran; a revision's figure is the geometric mean of every
//! repetition of its runs, and each revision is compared with the one
//! before it as `compare` compares two runs: the ratio of the geometric
//! means with a 95 % bootstrap interval (unpaired, [`unpaired_ratio`]), a
//! change marked where the interval excludes 1 and the change exceeds the
//! noise threshold (`--noise`).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::error::{LabError, Result};
use crate::core::plot::steps::{steps_svg, Step};
use crate::core::report::{self, num};
use crate::core::results::{Machine, Point, RunMeta};
use crate::core::stats::{geomean, sig3, unpaired_ratio, Ratio};
use crate::core::store::Store;
use crate::core::table::{self, Column, Table};
use crate::front::cli::{Cli, Format};
use crate::front::compare::{Change, TRANSFER_RATIO};
use crate::front::html::markup::{esc, inline_svg};
use crate::outln;

/// What `history` is asked for.
#[derive(Debug, Clone)]
pub struct Query {
    /// The study whose points these are, as `show` names it.
    pub bench: String,
    /// The lock (or strategy) of the points.
    pub lock: String,
    /// Their thread count.
    pub threads: u32,
    /// Only runs of this machine: its identity (a derived one's first
    /// characters will do) or its host name.
    pub machine: Option<String>,
    /// Changes under this fraction are none.
    pub noise: f64,
}

/// One revision of a series.
#[derive(Debug, Clone)]
pub struct Revision {
    /// The lab's git revision, as the runs recorded it.
    pub rev: String,
    /// Its runs' ids, oldest first.
    pub runs: Vec<i64>,
    /// When the first of them started.
    pub first: String,
    /// Every repetition's throughput, ops/s.
    pub throughputs: Vec<f64>,
    /// Their geometric mean.
    pub value: f64,
    /// Against the revision before (none for the first).
    pub vs_previous: Option<(Ratio, Change)>,
}

/// The figure on one machine with one set of parameters.
#[derive(Debug, Clone)]
pub struct Series {
    /// The machine (its newest run's facts).
    pub machine: Machine,
    /// The point's parameters.
    pub params: Value,
    /// Its revisions, in the order each first ran.
    pub revisions: Vec<Revision>,
    /// The cache-line round trip each of its runs recorded, ns (runs that
    /// recorded none left out).
    pub round_trips: Vec<f64>,
}

impl Series {
    /// The throughput unit its figures are printed in (divisor, name).
    pub fn unit(&self) -> (f64, &'static str) {
        let top = self
            .revisions
            .iter()
            .map(|r| r.value)
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max);
        report::throughput_unit(top)
    }

    /// The least and most round trips its runs recorded, when they are
    /// more than [`TRANSFER_RATIO`] apart: the machine's CPUs were placed
    /// differently between its runs (see `compare::transfer_warning`).
    pub fn placements_differ(&self) -> Option<(f64, f64)> {
        let lo = self
            .round_trips
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let hi = self.round_trips.iter().copied().fold(0.0, f64::max);
        (lo > 0.0 && hi >= TRANSFER_RATIO * lo).then_some((lo, hi))
    }
}

/// Whether `m` is the machine `name` names.
fn machine_is(m: &Machine, name: &str) -> bool {
    match &m.id {
        Some(id) if id == name => true,
        Some(id) if name.len() >= 4 && uuid::Uuid::parse_str(id).is_ok() => id.starts_with(name),
        _ => m.hostname == name,
    }
}

/// The series of `q`'s figure over `runs` (each with its points, oldest
/// first), or why there is none.
pub fn history(runs: &[(RunMeta, Vec<Point>)], q: &Query, db: &str) -> Result<Vec<Series>> {
    let mut series: Vec<(String, String, Series)> = Vec::new();
    let mut of_machine = 0;
    for (meta, points) in runs {
        if let Some(name) = &q.machine {
            if !machine_is(&meta.machine, name) {
                continue;
            }
        }
        of_machine += 1;
        let id = meta.id.unwrap_or(0);
        for p in points
            .iter()
            .filter(|p| p.bench == q.bench && p.lock == q.lock && p.threads == q.threads)
        {
            let (mk, pk) = (meta.machine.key(), p.params.to_string());
            let i = match series.iter().position(|(m, k, _)| *m == mk && *k == pk) {
                Some(i) => i,
                None => {
                    series.push((
                        mk,
                        pk,
                        Series {
                            machine: meta.machine.clone(),
                            params: p.params.clone(),
                            revisions: Vec::new(),
                            round_trips: Vec::new(),
                        },
                    ));
                    series.len() - 1
                }
            };
            let s = &mut series[i].2;
            s.machine = meta.machine.clone();
            let rev = &meta.machine.git_rev;
            let r = match s.revisions.iter().position(|r| &r.rev == rev) {
                Some(r) => r,
                None => {
                    s.revisions.push(Revision {
                        rev: rev.clone(),
                        runs: Vec::new(),
                        first: meta.started.clone(),
                        throughputs: Vec::new(),
                        value: f64::NAN,
                        vs_previous: None,
                    });
                    s.revisions.len() - 1
                }
            };
            let r = &mut s.revisions[r];
            if !r.runs.contains(&id) {
                r.runs.push(id);
                s.round_trips
                    .extend(meta.machine.c2c_round_trip_ns.filter(|x| x.is_finite()));
            }
            r.throughputs
                .extend(p.reps.iter().map(|x| x.throughput_ops_s));
        }
    }
    if let Some(name) = &q.machine {
        if of_machine == 0 {
            return Err(LabError::input(format!(
                "--machine {name}: no run of that machine in {db} (an identity, the first \
                 characters of a derived one, or a host name; `locklab machines` lists them)"
            )));
        }
    }
    if series.is_empty() {
        return Err(LabError::input(format!(
            "no point of bench {} with lock {} at {} thread{} in {db}{}: `locklab runs` and \
             `locklab show` tell what is stored",
            q.bench,
            q.lock,
            q.threads,
            if q.threads == 1 { "" } else { "s" },
            if q.machine.is_some() {
                " on that machine"
            } else {
                ""
            }
        )));
    }
    let mut out: Vec<Series> = series.into_iter().map(|(_, _, s)| s).collect();
    for s in &mut out {
        let mut prev: Option<Vec<f64>> = None;
        for r in &mut s.revisions {
            let positive: Vec<f64> = r
                .throughputs
                .iter()
                .copied()
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            r.value = geomean(&positive);
            if let Some(p) = &prev {
                let ratio = unpaired_ratio(p, &r.throughputs);
                r.vs_previous = Some((ratio, Change::of(&ratio, q.noise)));
            }
            prev = Some(r.throughputs.clone());
        }
    }
    Ok(out)
}

/// The machine in a line.
fn machine_text(m: &Machine) -> String {
    format!(
        "machine {}: {}, {} cores, host {}",
        m.name(),
        m.cpu_model,
        m.cores,
        m.hostname
    )
}

/// The history as text: per series a header and a row per revision.
pub fn text(q: &Query, series: &[Series]) -> String {
    let mut out = format!(
        "history: {}, lock {}, {} thread{}: throughput, geometric mean of every repetition of \
         a revision's runs\n",
        q.bench,
        q.lock,
        q.threads,
        if q.threads == 1 { "" } else { "s" }
    );
    let mut unknown = false;
    for s in series {
        let _ = writeln!(out, "\n{}", machine_text(&s.machine));
        let _ = writeln!(out, "  {}", crate::core::plot::param_text(&s.params));
        let unit = s.unit();
        let mut rows = vec![[
            "revision".to_string(),
            "runs".into(),
            "reps".into(),
            "first run".into(),
            unit.1.into(),
            "vs previous".into(),
            "95 % interval".into(),
            String::new(),
            "change".into(),
        ]
        .to_vec()];
        for r in &s.revisions {
            let runs: Vec<String> = r.runs.iter().map(|id| format!("#{id}")).collect();
            let mut cells = vec![
                r.rev.clone(),
                runs.join(" "),
                r.throughputs.len().to_string(),
                r.first.clone(),
                report::sig(r.value / unit.0),
            ];
            match &r.vs_previous {
                Some((ratio, change)) => {
                    let interval = if ratio.spread_known() {
                        format!("{}–{}", sig3(ratio.lo), sig3(ratio.hi))
                    } else {
                        unknown = true;
                        "–".to_string()
                    };
                    cells.extend([
                        format!("{}×", sig3(ratio.ratio)),
                        interval,
                        if change.significant() { "*" } else { "" }.to_string(),
                        change.word().to_string(),
                    ]);
                }
                None => cells.extend(["".to_string(), "".into(), "".into(), "".into()]),
            }
            rows.push(cells);
        }
        let right = [false, false, true, false, true, true, true, false, false];
        let align: Vec<Column> = right.iter().map(|&r| Column::fit(r)).collect();
        table::layout(&mut out, &rows, &align, 2);
        if let Some((lo, hi)) = s.placements_differ() {
            let _ = writeln!(
                out,
                "  warning: its runs recorded cache-line round trips from {} to {}: the \
                 machine's CPUs were placed differently between them, and a change may be that",
                report::fmt_ns(lo),
                report::fmt_ns(hi)
            );
        }
    }
    if unknown {
        let _ = writeln!(
            out,
            "\n– : no interval: a revision has fewer than two repetitions, so its spread is \
             unknown"
        );
    }
    let marked: usize = series
        .iter()
        .flat_map(|s| &s.revisions)
        .filter(|r| r.vs_previous.is_some_and(|(_, c)| c.significant()))
        .count();
    let _ = writeln!(
        out,
        "\n* : a change between neighbouring revisions (interval excludes 1, change over {}%): \
         {marked} marked",
        (q.noise * 100.0).round()
    );
    out
}

/// The history as one JSON object.
pub fn json(q: &Query, series: &[Series]) -> Value {
    let series: Vec<Value> = series
        .iter()
        .map(|s| {
            let revisions: Vec<Value> = s
                .revisions
                .iter()
                .map(|r| {
                    let vs = r.vs_previous.map(|(ratio, change)| {
                        json!({
                            "ratio": num(ratio.ratio),
                            "lo": num(ratio.lo),
                            "hi": num(ratio.hi),
                            "significant": change.significant(),
                            "change": change.word(),
                        })
                    });
                    json!({
                        "revision": r.rev,
                        "runs": r.runs,
                        "reps": r.throughputs.len(),
                        "first": r.first,
                        "throughput_ops_s": num(r.value),
                        "vs_previous": vs,
                    })
                })
                .collect();
            let placements = s.placements_differ().map(
                |(lo, hi)| json!({ "round_trip_ns_min": num(lo), "round_trip_ns_max": num(hi) }),
            );
            json!({
                "machine": s.machine,
                "params": s.params,
                "revisions": revisions,
                "placements_differ": placements,
            })
        })
        .collect();
    json!({
        "bench": q.bench,
        "lock": q.lock,
        "threads": q.threads,
        "noise": q.noise,
        "series": series,
    })
}

/// The history as a table: one row per revision of each series.
pub fn table(series: &[Series]) -> Table {
    let header = [
        "machine",
        "params",
        "revision",
        "runs",
        "reps",
        "first",
        "throughput_ops_s",
        "ratio",
        "lo",
        "hi",
        "change",
    ]
    .map(str::to_string)
    .to_vec();
    let mut rows = Vec::new();
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x}")
        } else {
            String::new()
        }
    };
    for s in series {
        for r in &s.revisions {
            let (ratio, lo, hi, change) = match r.vs_previous {
                Some((x, c)) => (f(x.ratio), f(x.lo), f(x.hi), c.word().to_string()),
                None => Default::default(),
            };
            rows.push(vec![
                s.machine.id.clone().unwrap_or_default(),
                crate::core::plot::param_text(&s.params),
                r.rev.clone(),
                r.runs
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                r.throughputs.len().to_string(),
                r.first.clone(),
                f(r.value),
                ratio,
                lo,
                hi,
                change,
            ]);
        }
    }
    Table { header, rows }
}

/// `locklab history`, and its page written to `out` if given.
pub fn command(
    cli: &Cli,
    q: &Query,
    format: Option<Format>,
    out: Option<&std::path::Path>,
) -> Result<i32> {
    let format = cli.format(format).map_err(LabError::input)?;
    if let Some(out) = out {
        crate::core::plot::check_out(out, &cli.db, "history", "history.html")?;
    }
    let store = Store::open_read_only(&cli.db)?;
    let mut runs = Vec::new();
    for r in store.runs()?.iter().rev().filter(|r| r.problem.is_none()) {
        if let Some(id) = r.meta.id {
            runs.push(store.load(id)?);
        }
    }
    let series = history(&runs, q, &cli.db.to_string())?;
    if let Some(out) = out {
        let page = page(q, &series);
        crate::core::files::write_whole("--out", out, "history", page.as_bytes())?;
        crate::noteln!("wrote {}", out.display());
    }
    match format {
        Format::Text => crate::core::out::print(&text(q, &series))?,
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&json(q, &series)).expect("serialises")
        )?,
        Format::Csv => crate::core::out::print(&table(&series).csv())?,
        Format::Markdown => {
            let numeric = [
                false, false, false, false, true, false, true, true, true, true, false,
            ];
            crate::core::out::print(&table(&series).markdown(&numeric))?
        }
    }
    Ok(0)
}

/// The history as a self-contained HTML page in the report's style: per
/// machine and parameter set, its revisions with their figure and the
/// change from the revision before, a change beyond the noise in red.
pub fn page(q: &Query, series: &[Series]) -> String {
    let title = format!(
        "{}, lock {}, {} thread{}",
        q.bench,
        q.lock,
        q.threads,
        if q.threads == 1 { "" } else { "s" }
    );
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>locklab history: {t}</title><style>{}</style></head><body>\
         <h1>locklab history</h1><p class=\"note\">{t}: throughput, the geometric mean of every \
         repetition of a revision's runs; each revision against the one before it (B/A with a \
         95 % bootstrap interval, unpaired), * where the interval excludes 1 and the change \
         exceeds {} %. Written by locklab {}.</p>",
        crate::front::html::STYLE,
        (q.noise * 100.0).round(),
        esc(env!("CARGO_PKG_VERSION")),
        t = esc(&title),
    );
    for ser in series {
        let m = &ser.machine;
        let id = m.name().to_string();
        let _ = write!(
            s,
            "<h2>machine {}</h2><p class=\"note\">{}, {} cores, host {}; {}</p>",
            esc(&id),
            esc(&m.cpu_model),
            m.cores,
            esc(&m.hostname),
            esc(&crate::core::plot::param_text(&ser.params))
        );
        let unit = ser.unit();
        s.push_str(&chart(q, ser, unit));
        let _ = write!(
            s,
            "<table class=\"data\"><thead><tr><th>revision</th><th>runs</th><th>reps</th>\
             <th>first run</th><th>{}</th><th>vs previous</th><th>95 % interval</th>\
             <th>change</th></tr></thead><tbody>",
            esc(unit.1)
        );
        for r in &ser.revisions {
            let runs: Vec<String> = r.runs.iter().map(|i| format!("#{i}")).collect();
            let (ratio, interval, change, marked) = match &r.vs_previous {
                Some((x, c)) => (
                    format!("{}×", sig3(x.ratio)),
                    if x.spread_known() {
                        format!("{}–{}", sig3(x.lo), sig3(x.hi))
                    } else {
                        "–".into()
                    },
                    format!("{}{}", if c.significant() { "* " } else { "" }, c.word()),
                    c.significant(),
                ),
                None => Default::default(),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td{}>{}</td></tr>",
                esc(&r.rev),
                esc(&runs.join(" ")),
                r.throughputs.len(),
                esc(&r.first),
                esc(&report::sig(r.value / unit.0)),
                esc(&ratio),
                esc(&interval),
                if marked { " class=\"warn\"" } else { "" },
                esc(&change)
            );
        }
        s.push_str("</tbody></table>");
        if let Some((lo, hi)) = ser.placements_differ() {
            let _ = write!(
                s,
                "<p class=\"warn\">Its runs recorded cache-line round trips from {} to {}: the \
                 machine's CPUs were placed differently between them, and a change may be \
                 that.</p>",
                esc(&report::fmt_ns(lo)),
                esc(&report::fmt_ns(hi))
            );
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// The series' chart for the page: a figure per revision with its
/// repetitions' range, a marked change in red; empty when there is nothing
/// to draw (the table says so).
fn chart(q: &Query, ser: &Series, unit: (f64, &'static str)) -> String {
    let steps: Vec<Step> = ser
        .revisions
        .iter()
        .map(|r| {
            let (lo, hi) = r
                .throughputs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                    (lo.min(x), hi.max(x))
                });
            Step {
                label: r.rev.clone(),
                value: r.value / unit.0,
                lo: lo / unit.0,
                hi: hi / unit.0,
                marked: r.vs_previous.as_ref().is_some_and(|(_, c)| c.significant()),
            }
        })
        .collect();
    let titles = [
        format!(
            "{}, lock {}, {} threads: each revision's geometric mean, whisker min–max of its repetitions",
            q.bench, q.lock, q.threads
        ),
        format!(
            "machine {}; red: a change beyond the noise from the revision before",
            ser.machine.name()
        ),
    ];
    match steps_svg(&q.lock, &titles, "revision", unit.1, &steps, (1000, 460)) {
        Ok(Some(svg)) => format!("<div class=\"embedded\">{}</div>", inline_svg(&svg)),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of revision `rev` on machine `machine` with one point of
    /// `demo`, `mutex`, 8 threads: five repetitions around `level`.
    fn run(id: i64, machine: &str, rev: &str, level: f64, cs_ns: u32) -> (RunMeta, Vec<Point>) {
        let meta = RunMeta {
            id: Some(id),
            uuid: Some(format!("u{id}")),
            kind: "bench demo".into(),
            command: "locklab bench demo".into(),
            params: json!({}),
            machine: Machine {
                id: Some(machine.into()),
                git_rev: rev.into(),
                hostname: format!("host-{machine}"),
                ..Machine::default()
            },
            started: format!("2026-01-{:02}T00:00:00Z", id),
            finished: None,
            complete: true,
        };
        // ±2 %, different in every run.
        let t: Vec<f64> = (0..5)
            .map(|i| level * (1.0 + 0.02 * (((i * 7 + id as usize * 3) % 5) as f64 - 2.0) / 2.0))
            .collect();
        let points = vec![
            Point::of_throughputs("demo", "mutex", 8, json!({ "cs_ns": cs_ns }), &t),
            Point::of_throughputs("demo", "mcs", 8, json!({ "cs_ns": cs_ns }), &t),
        ];
        (meta, points)
    }

    fn query(machine: Option<&str>) -> Query {
        Query {
            bench: "demo".into(),
            lock: "mutex".into(),
            threads: 8,
            machine: machine.map(str::to_string),
            noise: 0.05,
        }
    }

    fn changes(s: &Series) -> Vec<(&str, Option<Change>)> {
        s.revisions
            .iter()
            .map(|r| (r.rev.as_str(), r.vs_previous.map(|(_, c)| c)))
            .collect()
    }

    #[test]
    fn a_planted_regression_is_marked_and_runs_of_one_revision_are_one_figure() {
        let runs = [
            run(1, "amd", "aaa", 3.0e6, 100),
            run(2, "amd", "aaa", 3.0e6, 100),
            run(3, "amd", "bbb", 2.4e6, 100),
            run(4, "amd", "ccc", 2.4e6, 100),
        ];
        let s = history(&runs, &query(None), "db").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(
            changes(&s[0]),
            [
                ("aaa", None),
                ("bbb", Some(Change::Slower)),
                ("ccc", Some(Change::Unchanged))
            ]
        );
        let aaa = &s[0].revisions[0];
        assert_eq!(
            (aaa.runs.as_slice(), aaa.throughputs.len()),
            (&[1, 2][..], 10)
        );
        let (ratio, _) = s[0].revisions[1].vs_previous.unwrap();
        assert!((ratio.ratio - 0.8).abs() < 0.01, "{ratio:?}");
        let t = text(&query(None), &s);
        assert!(
            t.contains("bbb") && t.contains("slower") && t.contains("1 marked"),
            "{t}"
        );
        // The page draws the series: every revision on x, and the one
        // marked change (bbb's mark and whisker) in red.
        let html = page(&query(None), &s);
        let svg = &html[html.find("<svg").expect("a chart")..html.find("</svg>").unwrap()];
        assert!(
            ["aaa", "bbb", "ccc"].iter().all(|r| svg.contains(r)),
            "{svg}"
        );
        assert_eq!(svg.matches("#D62728").count(), 2, "{svg}");
    }

    /// Runs of one machine whose recorded round trips are 6× apart (a
    /// guest whose CPUs were placed near, then far) are warned of in the
    /// text, the JSON and the page; 1.3× apart, or unrecorded, they are not.
    #[test]
    fn a_series_whose_runs_saw_other_placements_is_warned_of() {
        let with_rt = |id, rev, rt: Option<f64>| {
            let (mut m, p) = run(id, "guest", rev, 3.0e6, 100);
            m.machine.c2c_round_trip_ns = rt;
            (m, p)
        };
        let moved = [
            with_rt(1, "aaa", Some(76.0)),
            with_rt(2, "bbb", Some(480.0)),
        ];
        let s = history(&moved, &query(None), "db").unwrap();
        assert_eq!(s[0].placements_differ(), Some((76.0, 480.0)));
        let t = text(&query(None), &s);
        assert!(t.contains("round trips from 76ns to 480ns"), "{t}");
        assert_eq!(
            json(&query(None), &s)["series"][0]["placements_differ"]["round_trip_ns_max"],
            480.0
        );
        assert!(page(&query(None), &s).contains("round trips from 76ns to 480ns"));
        for rt in [Some(100.0), None] {
            let steady = [with_rt(1, "aaa", Some(76.0)), with_rt(2, "bbb", rt)];
            let s = history(&steady, &query(None), "db").unwrap();
            assert_eq!(s[0].placements_differ(), None);
            assert!(!text(&query(None), &s).contains("round trips"));
        }
    }

    #[test]
    fn machines_and_parameters_are_separate_series() {
        let runs = [
            run(1, "amd", "aaa", 3.0e6, 100),
            run(2, "xeon", "aaa", 1.0e6, 100),
            run(3, "amd", "bbb", 3.0e6, 100),
            run(4, "amd", "bbb", 1.0e6, 200),
        ];
        let s = history(&runs, &query(None), "db").unwrap();
        let keys: Vec<(Option<&str>, String, usize)> = s
            .iter()
            .map(|x| {
                (
                    x.machine.id.as_deref(),
                    x.params.to_string(),
                    x.revisions.len(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                (Some("amd"), r#"{"cs_ns":100}"#.to_string(), 2),
                (Some("xeon"), r#"{"cs_ns":100}"#.to_string(), 1),
                (Some("amd"), r#"{"cs_ns":200}"#.to_string(), 1),
            ]
        );
        // No change across machines: each series is compared with itself.
        assert_eq!(
            changes(&s[0]),
            [("aaa", None), ("bbb", Some(Change::Unchanged))]
        );
        let only = history(&runs, &query(Some("host-xeon")), "db").unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].machine.id.as_deref(), Some("xeon"));
        let csv = table(&s).csv();
        assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    }

    #[test]
    fn nothing_to_show_is_an_input_error_naming_what_was_asked() {
        let runs = [run(1, "amd", "aaa", 3.0e6, 100)];
        let e = history(&runs, &query(Some("nowhere")), "x.db").unwrap_err();
        assert!(
            e.msg
                .contains("--machine nowhere: no run of that machine in x.db"),
            "{}",
            e.msg
        );
        let q = Query {
            threads: 4,
            ..query(None)
        };
        let e = history(&runs, &q, "x.db").unwrap_err();
        assert!(
            e.msg
                .contains("no point of bench demo with lock mutex at 4 threads in x.db"),
            "{}",
            e.msg
        );
    }
}
