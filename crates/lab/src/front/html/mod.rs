//! `locklab report`: stored runs as one self-contained HTML file. The
//! verdicts come first; then, where the runs come from several machines,
//! the machines side by side ([`machines`]); then per run the machine it ran on, the exact
//! command, and every study of the run with its charts (inline SVG drawn
//! by the lab's one chart engine, [`crate::core::plot`]: one chart per
//! lock family where the points are locks of the registry, see
//! [`charts::own_chart`]; the study's own plot, as `locklab plot` draws
//! it, otherwise), its tables, and the fits and predictions of queueing
//! models its points carry. Nothing is fetched: no script, no font, no
//! image from elsewhere.

pub mod charts;
pub mod machines;
pub mod markup;

use markup::{esc, inline_svg};

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::core::args::RunRef;
use crate::core::error::{LabError, Result};
use crate::core::results::{Point, RunMeta};
use crate::core::run::resolve;
use crate::core::store::Store;
use crate::core::verdict::Section;
use crate::front::cli::Cli;

/// `locklab report RUN… --out FILE.html`: writes the report of the runs
/// (the newest when none is named) to `out`; returns the exit code.
pub fn command(cli: &Cli, runs: &[RunRef], out: &Path) -> Result<i32> {
    if cli.json {
        return Err(LabError::input(
            "--json: report writes an HTML file (--out) and prints no table; leave --json out",
        ));
    }
    crate::core::plot::check_out(out, &cli.db, "report", "report.html")?;
    let store = Store::open_read_only(&cli.db)?;
    let refs: Vec<RunRef> = if runs.is_empty() {
        vec![RunRef::Last]
    } else {
        runs.to_vec()
    };
    let mut loaded = Vec::new();
    for r in refs {
        let id = resolve(&store, r)?;
        if loaded
            .iter()
            .any(|(m, _): &(RunMeta, Vec<Point>)| m.id == Some(id))
        {
            continue;
        }
        loaded.push(store.load(id)?);
    }
    let html = page(&loaded);
    crate::core::files::write_whole("--out", out, "report", html.as_bytes())?;
    crate::noteln!("wrote {}", out.display());
    Ok(0)
}

/// The style of the lab's HTML pages.
pub(crate) const STYLE: &str = "
body{font-family:system-ui,'DejaVu Sans',Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#1b1b1b;padding:0 16px;line-height:1.4}
h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;border-bottom:2px solid #ccc;padding-bottom:4px;margin-top:36px}
h3{font-size:18px;margin:26px 0 6px;color:#223}h4{font-size:14px;margin:14px 0 4px;font-weight:600;color:#444;font-family:ui-monospace,'DejaVu Sans Mono',monospace}
.note{color:#555;font-size:13px;margin:2px 0 8px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f6}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.verdict td.a{font-weight:600}table.verdict{width:100%}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13px;margin:8px 0}
dl.facts dt{color:#555}dl.facts dd{margin:0}
pre{background:#f7f7f9;border:1px solid #e2e2e8;padding:8px;overflow-x:auto;font-size:12px;line-height:1.3}
code.cmd{display:block;background:#1e1e24;color:#f2f2f2;padding:8px 10px;white-space:pre-wrap;word-break:break-all;font-size:13px}
.multiples{display:flex;flex-wrap:wrap;gap:10px}
figure.panel{margin:0;border:1px solid #e3e3e8;background:#fff;flex:1 1 520px;max-width:580px}
figure.panel svg,.embedded svg{display:block;max-width:100%;height:auto}
.embedded svg{border:1px solid #e3e3e8}
td.n{font-variant-numeric:tabular-nums}
details>summary{cursor:pointer;color:#235;font-size:13px;margin:6px 0}
.warn{color:#a00}
";

/// The noise threshold of the report's comparisons: `compare`'s default.
const DEFAULT_NOISE: f64 = 0.05;

/// The whole page of `runs`.
pub fn page(runs: &[(RunMeta, Vec<Point>)]) -> String {
    let ids: Vec<String> = runs.iter().map(|(m, _)| run_name(m)).collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>locklab report: {}</title><style>{STYLE}</style></head><body>\
         <h1>locklab report</h1><p class=\"note\">{}; written by locklab {}.</p>",
        esc(&ids.join(", ")),
        esc(&ids.join(", ")),
        esc(env!("CARGO_PKG_VERSION"))
    );
    s.push_str("<h2 id=\"verdicts\">Verdicts</h2>");
    for (meta, points) in runs {
        verdict_html(
            &mut s,
            meta,
            &crate::front::show::verdicts(meta, points),
            runs.len() > 1,
        );
    }
    machines::section(&mut s, runs, DEFAULT_NOISE);
    for (meta, points) in runs {
        run_html(&mut s, meta, points);
    }
    s.push_str("</body></html>\n");
    s
}

fn run_name(meta: &RunMeta) -> String {
    meta.id
        .map_or_else(|| "run (unsaved)".to_string(), |id| format!("run {id}"))
}

fn verdict_html(s: &mut String, meta: &RunMeta, sections: &[Section], named: bool) {
    if named {
        let _ = write!(s, "<h3>{} ({})</h3>", esc(&run_name(meta)), esc(&meta.kind));
    }
    if sections.is_empty() {
        s.push_str("<p class=\"note\">This run's studies give no verdict.</p>");
        return;
    }
    s.push_str(
        "<table class=\"verdict\"><thead><tr><th>study</th><th>workload</th><th>for</th>\
         <th>question</th><th>answer</th><th>evidence</th></tr></thead><tbody>",
    );
    for sec in sections {
        let mut last_group: Option<&str> = None;
        for (i, l) in sec.lines.iter().enumerate() {
            // A group is shown once for consecutive lines of it.
            let group = if last_group == Some(l.group.as_str()) {
                ""
            } else {
                l.group.as_str()
            };
            last_group = Some(&l.group);
            let head = if i == 0 {
                format!(
                    "<td rowspan=\"{}\">{}</td><td rowspan=\"{}\">{}</td>",
                    sec.lines.len(),
                    esc(&sec.study),
                    sec.lines.len(),
                    esc(&sec.title)
                )
            } else {
                String::new()
            };
            let _ = write!(
                s,
                "<tr>{head}<td>{}</td><td>{}</td><td class=\"a\">{}</td><td>{}</td></tr>",
                esc(group),
                esc(&l.question),
                esc(&l.answer),
                esc(&l.evidence)
            );
        }
    }
    s.push_str("</tbody></table>");
}

/// The machine's facts and the run's command, status and parameters.
fn facts(s: &mut String, meta: &RunMeta) {
    let m = &meta.machine;
    let status = match (&meta.finished, meta.complete) {
        (Some(f), true) => format!("finished {f}"),
        (Some(f), false) => format!("INCOMPLETE (stopped {f})"),
        (None, _) => "INCOMPLETE (interrupted or still running)".into(),
    };
    let opt = |v: &str| {
        if v.is_empty() {
            "unknown".to_string()
        } else {
            v.to_string()
        }
    };
    let rows = [
        ("started", meta.started.clone()),
        ("status", status),
        ("CPU", opt(&m.cpu_model)),
        ("cores", m.cores.to_string()),
        (
            "TSC",
            m.tsc_hz
                .map_or("unknown".into(), |hz| format!("{:.3} GHz", hz as f64 / 1e9)),
        ),
        ("kernel", opt(&m.kernel)),
        ("rustc", opt(&m.rustc)),
        ("git revision", opt(&m.git_rev)),
        ("host", opt(&m.hostname)),
        (
            "cache-line round trip",
            m.c2c_round_trip_ns
                .map_or("not measured".into(), crate::core::report::fmt_ns),
        ),
        ("parameters", crate::core::plot::param_text(&meta.params)),
    ];
    s.push_str("<dl class=\"facts\">");
    for (k, v) in rows {
        let _ = write!(s, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    s.push_str("</dl>");
    let _ = write!(
        s,
        "<p class=\"note\">The exact command:</p><code class=\"cmd\">{}</code>",
        esc(&meta.command)
    );
}

fn run_html(s: &mut String, meta: &RunMeta, points: &[Point]) {
    let anchor = meta.id.map_or_else(|| "unsaved".into(), |i| i.to_string());
    let _ = write!(
        s,
        "<h2 id=\"run-{}\">{}: {}</h2>",
        esc(&anchor),
        esc(&run_name(meta)),
        esc(&meta.kind)
    );
    facts(s, meta);
    if points.is_empty() {
        s.push_str("<p class=\"warn\">No points stored for this run.</p>");
        return;
    }
    let mut benches: Vec<&str> = Vec::new();
    for p in points {
        if !benches.contains(&p.bench.as_str()) {
            benches.push(&p.bench);
        }
    }
    let json = crate::front::show::run_json(meta, points);
    for bench in benches {
        let of: Vec<&Point> = points.iter().filter(|p| p.bench == bench).collect();
        let study = crate::front::catalog::find(bench);
        let _ = write!(
            s,
            "<h3 id=\"run-{}-{}\">Study: {}</h3><p class=\"note\">{} point{}.</p>",
            esc(&anchor),
            esc(bench),
            esc(bench),
            of.len(),
            if of.len() == 1 { "" } else { "s" }
        );
        // The chart comes from what the points are, not from the study's
        // name: a sweep of update fractions, locks of the registry at one
        // thread or over thread counts; else the study's own plot.
        let own = charts::own_chart(meta, &of);
        let has_own = own.is_some();
        match (own, study.and_then(|st| st.plot())) {
            (Some(html), _) => s.push_str(&html),
            (None, Some(plot)) => match embedded_plot(plot, meta, points) {
                Ok(svg) => {
                    let _ = write!(s, "<div class=\"embedded\">{svg}</div>");
                }
                Err(e) => {
                    let _ = write!(s, "<p class=\"note\">no chart: {}</p>", esc(&e.to_string()));
                }
            },
            (None, None) => s.push_str("<p class=\"note\">no chart for these points</p>"),
        }
        model_html(s, &json, bench);
        if let Some(st) = study {
            let mut text = String::new();
            st.text(&mut text, meta, &of, points);
            let _ = write!(
                s,
                "<details{}><summary>The study's tables (as `locklab show` prints them)</summary>\
                 <pre>{}</pre></details>",
                if has_own { "" } else { " open" },
                esc(text.trim_matches('\n'))
            );
        }
    }
}

/// Whether a JSON key names a fit or a prediction of a queueing model:
/// one of its `_`-separated words says so.
fn model_key(k: &str) -> bool {
    k.to_ascii_lowercase().split('_').any(|w| {
        matches!(
            w,
            "fit"
                | "fitted"
                | "fits"
                | "predict"
                | "predicted"
                | "prediction"
                | "predictions"
                | "repairman"
                | "queueing"
        )
    })
}

/// The model fields of `bench`'s points and of the run (from the run's
/// JSON), where there are any.
fn model_html(s: &mut String, json: &Value, bench: &str) {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    if let Some(points) = json.get("points").and_then(Value::as_array) {
        for p in points
            .iter()
            .filter(|p| p.get("bench").and_then(Value::as_str) == Some(bench))
        {
            let Some(obj) = p.as_object() else { continue };
            for (k, v) in obj.iter().filter(|(k, v)| model_key(k) && !v.is_null()) {
                let who = format!(
                    "{} at {} threads",
                    obj.get("lock").and_then(Value::as_str).unwrap_or("?"),
                    obj.get("threads").map_or("?".into(), Value::to_string)
                );
                rows.push((who, k.clone(), compact(v)));
            }
        }
    }
    if let Some(top) = json.as_object() {
        for (k, v) in top.iter().filter(|(k, v)| {
            model_key(k) && !v.is_null() && k.as_str() != "points" && k.as_str() != "run"
        }) {
            rows.push(("the run".into(), k.clone(), compact(v)));
        }
    }
    if rows.is_empty() {
        return;
    }
    s.push_str(
        "<h4>Model fits and predictions</h4><table class=\"data\"><thead><tr><th>of</th>\
         <th>field</th><th>value</th></tr></thead><tbody>",
    );
    for (who, k, v) in rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&who),
            esc(&k),
            esc(&v)
        );
    }
    s.push_str("</tbody></table>");
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or(n.to_string(), crate::core::report::sig),
        o => o.to_string(),
    }
}

/// A study's own plot of the run, drawn to a temporary file and returned
/// as inline `<svg>` (the XML prelude stripped, a viewBox added so that
/// it scales).
fn embedded_plot(
    plot: crate::core::study::PlotFn,
    meta: &RunMeta,
    points: &[Point],
) -> Result<String> {
    let dir = tempfile::tempdir()
        .map_err(|e| LabError::input(format!("cannot make a temporary directory: {e}")))?;
    let path = dir.path().join("plot.svg");
    plot(meta, points, &path, false)?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| LabError::input(format!("cannot read the plot back: {e}")))?;
    Ok(inline_svg(&text))
}
