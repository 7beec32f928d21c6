//! `locklab compare A B` and `locklab baseline`: two stored runs side by
//! side, point by point, for a developer who changed a lock and ran again.
//!
//! At every point the two runs share (same study, lock, threads and
//! parameters) the figure compared is the throughput (operations per
//! second; higher is better). Its ratio B/A is the ratio of the two runs'
//! geometric means over their repetitions, with a 95 % bootstrap interval
//! ([`crate::core::stats::unpaired_ratio`]: the runs were measured at different
//! times, so nothing pairs their repetitions); the change is significant
//! when the interval excludes 1 and the ratio is beyond the noise
//! threshold (`--noise`, 5 % unless told): two runs of the same code
//! minutes apart differ by a few % that neither run's repetitions see
//! (docs/cli.md gives this machine's). A baseline is a name for a stored
//! run, so that `compare main last` compares the newest run with it.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::args::RunRef;
use crate::core::error::{LabError, Result};
use crate::core::report::{self, num};
use crate::core::results::{Machine, Point, RunMeta};
use crate::core::stats::{geomean, sig3, unpaired_ratio, Ratio};
use crate::core::store::Store;
use crate::core::table::{self, Column};
use crate::front::cli::{BaselineCmd, Cli, Format};
use crate::front::export::{self, Numbers, Table};
use crate::outln;

/// The figure compared, as the output names it.
pub const FIGURE: &str = "throughput_ops_s";

/// Longest baseline name.
pub const MAX_NAME: usize = 64;

/// Checks a baseline name: letters, digits, `-`, `_`, `.`, 1 to
/// [`MAX_NAME`] characters, not all digits (a run id) and not `last`.
pub fn check_name(name: &str) -> Result<()> {
    let allowed = "allowed letters, digits, '-', '_' and '.' (1 to 64 characters), \
                   not a number (that is a run id) and not `last`";
    let bad = |why: &str| {
        Err(LabError::input(format!(
            "'{name}' is not a baseline name ({why}): {allowed}"
        )))
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.chars().count() > MAX_NAME {
        return bad("too long");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return bad(&format!("it has {c:?}"));
    }
    if name.chars().all(|c| c.is_ascii_digit()) {
        return bad("all digits");
    }
    if name == "last" {
        return bad("`last` names the newest run");
    }
    Ok(())
}

/// A run named on `compare`'s command line, and how it was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The run's id.
    pub id: i64,
    /// The baseline's name, if it was named by one.
    pub baseline: Option<String>,
}

impl Named {
    /// `run 3`, or `run 3 (baseline main)`.
    pub fn label(&self) -> String {
        match &self.baseline {
            Some(b) => format!("run {} (baseline {b})", self.id),
            None => format!("run {}", self.id),
        }
    }
}

/// Resolves `compare`'s `A` or `B`: a run id, `last`, or a baseline's name.
pub fn resolve_named(store: &Store, s: &str) -> Result<Named> {
    let allowed = "allowed a run id (`locklab runs`), `last`, or a baseline's name \
                   (`locklab baseline list`)";
    if s == "last" {
        let id = crate::core::run::resolve(store, RunRef::Last)?;
        return Ok(Named { id, baseline: None });
    }
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        return match s.parse::<i64>() {
            Ok(id) if id >= 1 => Ok(Named { id, baseline: None }),
            _ => Err(LabError::input(format!(
                "'{s}' is not a run id (ids start at 1): {allowed}"
            ))),
        };
    }
    if check_name(s).is_err() {
        return Err(LabError::input(format!(
            "'{s}' is neither a run id nor a baseline name: {allowed}"
        )));
    }
    match store.baseline(s)? {
        Some(id) => Ok(Named {
            id,
            baseline: Some(s.to_string()),
        }),
        None => Err(LabError::input(format!(
            "'{s}': no baseline of that name in {}: {allowed}",
            store.location()
        ))),
    }
}

/// How a point changed from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// B's throughput is higher, the interval wholly above 1.
    Faster,
    /// B's throughput is lower, the interval wholly below 1.
    Slower,
    /// The interval holds 1.
    Unchanged,
    /// The interval excludes 1, but the change is smaller than the noise
    /// threshold.
    WithinNoise,
    /// No interval: fewer than two usable repetitions on a side.
    Unknown,
}

impl Change {
    /// The change `r` shows, with changes under `noise` (a fraction)
    /// counted as none.
    pub fn of(r: &Ratio, noise: f64) -> Change {
        if !r.spread_known() {
            return Change::Unknown;
        }
        match r.separated() {
            Some(std::cmp::Ordering::Greater) if r.ratio > 1.0 + noise => Change::Faster,
            Some(std::cmp::Ordering::Less) if r.ratio < 1.0 / (1.0 + noise) => Change::Slower,
            Some(_) => Change::WithinNoise,
            None => Change::Unchanged,
        }
    }

    /// Whether it is a change: faster or slower.
    pub fn significant(self) -> bool {
        matches!(self, Change::Faster | Change::Slower)
    }

    /// The word the outputs use.
    pub fn word(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "slower",
            Change::Unchanged => "unchanged",
            Change::WithinNoise => "within noise",
            Change::Unknown => "unknown",
        }
    }
}

/// One point both runs have.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// A's point.
    pub a: &'a Point,
    /// B's point.
    pub b: &'a Point,
    /// Geometric mean of A's throughputs.
    pub a_value: f64,
    /// Geometric mean of B's throughputs.
    pub b_value: f64,
    /// B/A with its interval.
    pub ratio: Ratio,
    /// What the interval says.
    pub change: Change,
}

/// One study's points, summed up.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The study.
    pub bench: String,
    /// Points compared.
    pub points: usize,
    /// Points faster in B.
    pub faster: usize,
    /// Points slower in B.
    pub slower: usize,
    /// Points whose interval holds 1 or whose change is within noise.
    pub unchanged: usize,
    /// Points without an interval.
    pub unknown: usize,
    /// Geometric mean of the ratios (NaN if none is finite).
    pub geomean: f64,
}

/// Two runs compared.
#[derive(Debug, Clone)]
pub struct Comparison<'a> {
    /// The shared points, in A's order.
    pub rows: Vec<Row<'a>>,
    /// Points of A that B lacks.
    pub only_a: usize,
    /// Points of B that A lacks.
    pub only_b: usize,
    /// Per study, in the order the studies first come in A.
    pub summary: Vec<Summary>,
    /// The noise threshold, a fraction (0.05 for 5 %).
    pub noise: f64,
}

fn throughputs(p: &Point) -> Vec<f64> {
    p.reps.iter().map(|r| r.throughput_ops_s).collect()
}

fn same_point(x: &Point, y: &Point) -> bool {
    x.bench == y.bench && x.lock == y.lock && x.threads == y.threads && x.params == y.params
}

/// Compares the points of two runs.
/// `noise` is the threshold under which a change is none (a fraction).
pub fn compare<'a>(a: &'a [Point], b: &'a [Point], noise: f64) -> Comparison<'a> {
    let mut rows = Vec::new();
    let mut used = vec![false; b.len()];
    let mut only_a = 0;
    for pa in a {
        let found = b
            .iter()
            .enumerate()
            .find(|(i, pb)| !used[*i] && same_point(pa, pb));
        let Some((i, pb)) = found else {
            only_a += 1;
            continue;
        };
        used[i] = true;
        let (xa, xb) = (throughputs(pa), throughputs(pb));
        let ratio = unpaired_ratio(&xa, &xb);
        let positive = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .copied()
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect()
        };
        rows.push(Row {
            a: pa,
            b: pb,
            a_value: geomean(&positive(&xa)),
            b_value: geomean(&positive(&xb)),
            change: Change::of(&ratio, noise),
            ratio,
        });
    }
    let only_b = used.iter().filter(|u| !**u).count();
    let mut summary: Vec<Summary> = Vec::new();
    for r in &rows {
        if !summary.iter().any(|s| s.bench == r.a.bench) {
            let of: Vec<&Row> = rows.iter().filter(|x| x.a.bench == r.a.bench).collect();
            let count = |c: Change| of.iter().filter(|x| x.change == c).count();
            let ratios: Vec<f64> = of
                .iter()
                .map(|x| x.ratio.ratio)
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            summary.push(Summary {
                bench: r.a.bench.clone(),
                points: of.len(),
                faster: count(Change::Faster),
                slower: count(Change::Slower),
                unchanged: count(Change::Unchanged) + count(Change::WithinNoise),
                unknown: count(Change::Unknown),
                geomean: geomean(&ratios),
            });
        }
    }
    Comparison {
        rows,
        only_a,
        only_b,
        summary,
        noise,
    }
}

/// The warning line when the runs were measured on different machines
/// (another identity, CPU model or core count), naming every fact that
/// differs (identity, CPU, cores, kernel, RTM); else `None`.
pub fn machine_warning(a: &RunMeta, b: &RunMeta) -> Option<String> {
    let (ma, mb) = (&a.machine, &b.machine);
    let other = (ma.id.is_some() && mb.id.is_some() && ma.id != mb.id)
        || ma.cpu_model != mb.cpu_model
        || ma.cores != mb.cores;
    if !other {
        return None;
    }
    let mut differ = Vec::new();
    let mut fact = |what: &str, x: String, y: String| {
        if x != y {
            differ.push(format!("{what} {x} against {y}"));
        }
    };
    let id = |m: &Machine| m.name().to_string();
    let rtm = |m: &Machine| m.rtm_word("not recorded").to_string();
    fact("machine", id(ma), id(mb));
    fact("CPU", ma.cpu_model.clone(), mb.cpu_model.clone());
    fact("cores", ma.cores.to_string(), mb.cores.to_string());
    fact("kernel", ma.kernel.clone(), mb.kernel.clone());
    fact("RTM", rtm(ma), rtm(mb));
    Some(format!(
        "warning: the runs were measured on different machines (A against B: {}): a change \
         may be the machine's; compared anyway",
        differ.join("; ")
    ))
}

/// A round trip this many times the other's is another placement of the
/// machine's CPUs, not noise: within one placement the lab's guest
/// measured 67–97 ns, and a host that moves its two CPUs near or far
/// changes it about 6× (docs/cli.md, *Held to this machine*).
pub const TRANSFER_RATIO: f64 = 2.0;

/// The warning line when one machine recorded cache-line round trips
/// more than [`TRANSFER_RATIO`] apart in the two runs (a virtual
/// machine whose CPUs the host placed differently); else `None`, and
/// `None` for two machines, which [`machine_warning`] covers.
pub fn transfer_warning(a: &RunMeta, b: &RunMeta) -> Option<String> {
    if machine_warning(a, b).is_some() {
        return None;
    }
    let (x, y) = (a.machine.c2c_round_trip_ns?, b.machine.c2c_round_trip_ns?);
    if !(x > 0.0 && y > 0.0) || x.max(y) < TRANSFER_RATIO * x.min(y) {
        return None;
    }
    Some(format!(
        "warning: the machine's cache-line round trip differed (A {} against B {}): its CPUs \
         were placed differently, and what hands lines between cores may differ for that; \
         compared anyway",
        crate::core::report::fmt_ns(x),
        crate::core::report::fmt_ns(y)
    ))
}

/// Every warning about the two runs' machines, in the order to print.
pub fn warnings(a: &RunMeta, b: &RunMeta) -> Vec<String> {
    machine_warning(a, b)
        .into_iter()
        .chain(transfer_warning(a, b))
        .collect()
}

/// `n point(s)`.
fn points_word(n: usize) -> String {
    format!("{n} point{}", if n == 1 { "" } else { "s" })
}

/// The parameters that differ among the rows of one study, as `k=v`.
fn varying_params(rows: &[Row]) -> Vec<String> {
    let keys = export::param_keys(rows.iter().map(|r| r.a));
    keys.into_iter()
        .filter(|k| {
            let first = export::param_cell(&rows[0].a.params, k);
            rows.iter()
                .any(|r| export::param_cell(&r.a.params, k) != first)
        })
        .collect()
}

fn params_text(p: &Point, keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("{k}={}", export::param_cell(&p.params, k)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lays out rows of cells in columns as wide as their widest cell
/// (counted in characters); `right` columns are right-aligned.
fn columns(out: &mut String, rows: &[Vec<String>], right: &[bool]) {
    let align: Vec<Column> = right.iter().map(|&r| Column::fit(r)).collect();
    table::layout(out, rows, &align, 2);
}

/// A fraction as a percentage without trailing zeros.
fn pct(x: f64) -> String {
    let s = format!("{:.2}", x * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn run_line(meta: &RunMeta) -> String {
    format!("{}, started {}", meta.kind, meta.started)
}

/// The comparison for a person: which runs, a table per study, a summary
/// line per study, and the points only one run has.
pub fn text(a: (&Named, &RunMeta), b: (&Named, &RunMeta), c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}: {}", a.0.label(), run_line(a.1));
    let _ = writeln!(out, "B: {}: {}", b.0.label(), run_line(b.1));
    for w in warnings(a.1, b.1) {
        let _ = writeln!(out, "{w}");
    }
    let _ = writeln!(
        out,
        "B/A of throughput (ops/s, geometric mean over the repetitions; higher is better), \
         with its 95 % interval; * where the interval excludes 1 and the change exceeds the \
         noise threshold of {} % (--noise)",
        pct(c.noise)
    );
    if c.rows.is_empty() {
        let _ = writeln!(out, "\nno point is in both runs");
    }
    let mut unknown = false;
    for s in &c.summary {
        let rows: Vec<Row> = c
            .rows
            .iter()
            .filter(|r| r.a.bench == s.bench)
            .cloned()
            .collect();
        let keys = varying_params(&rows);
        let unit = report::throughput_unit(
            rows.iter()
                .flat_map(|r| [r.a_value, r.b_value])
                .filter(|x| x.is_finite())
                .fold(0.0, f64::max),
        );
        let _ = writeln!(out, "\n{}", s.bench);
        let mut head = vec!["lock".to_string(), "threads".to_string()];
        if !keys.is_empty() {
            head.push("params".into());
        }
        head.extend([
            format!("A {}", unit.1),
            format!("B {}", unit.1),
            "B/A".into(),
            "95 % interval".into(),
            "".into(),
            "change".into(),
        ]);
        let mut right = vec![false, true];
        if !keys.is_empty() {
            right.push(false);
        }
        right.extend([true, true, true, true, false, false]);
        let mut table = vec![head];
        for r in &rows {
            let mut cells = vec![r.a.lock.clone(), r.a.threads.to_string()];
            if !keys.is_empty() {
                cells.push(params_text(r.a, &keys));
            }
            let interval = if r.ratio.spread_known() {
                format!("{}–{}", sig3(r.ratio.lo), sig3(r.ratio.hi))
            } else {
                unknown = true;
                "–".to_string()
            };
            cells.extend([
                report::sig(r.a_value / unit.0),
                report::sig(r.b_value / unit.0),
                format!("{}×", sig3(r.ratio.ratio)),
                interval,
                if r.change.significant() { "*" } else { "" }.to_string(),
                r.change.word().to_string(),
            ]);
            table.push(cells);
        }
        columns(&mut out, &table, &right);
    }
    if unknown {
        let _ = writeln!(
            out,
            "\n– : no interval: A or B has fewer than two repetitions at that point, so its \
             spread is unknown"
        );
    }
    if !c.summary.is_empty() {
        let _ = writeln!(out);
    }
    for s in &c.summary {
        let mut line = format!(
            "{}: {}: {} faster, {} slower, {} unchanged",
            s.bench,
            points_word(s.points),
            s.faster,
            s.slower,
            s.unchanged
        );
        if s.unknown > 0 {
            let _ = write!(line, ", {} unknown", s.unknown);
        }
        let _ = write!(line, "; geometric mean B/A {}×", sig3(s.geomean));
        let _ = writeln!(out, "{line}");
    }
    if c.only_a > 0 || c.only_b > 0 {
        let _ = writeln!(
            out,
            "{} only in A, {} only in B (not compared)",
            points_word(c.only_a),
            points_word(c.only_b)
        );
    }
    out
}

/// The comparison as one JSON object: `a` and `b` (the runs' metadata,
/// and the baseline's name if named by one), `figure`, `points`, `summary`,
/// `only_in_a`, `only_in_b`, and `warnings`.
pub fn json(a: (&Named, &RunMeta), b: (&Named, &RunMeta), c: &Comparison) -> Value {
    let side = |(n, m): (&Named, &RunMeta)| {
        let mut v = report::run_meta_json(m);
        if let Value::Object(o) = &mut v {
            o.insert("baseline".into(), json!(n.baseline));
        }
        v
    };
    let points: Vec<Value> = c
        .rows
        .iter()
        .map(|r| {
            json!({
                "bench": r.a.bench,
                "lock": r.a.lock,
                "threads": r.a.threads,
                "params": r.a.params,
                "a": num(r.a_value),
                "b": num(r.b_value),
                "a_reps": r.a.reps.len(),
                "b_reps": r.b.reps.len(),
                "ratio": num(r.ratio.ratio),
                "lo": num(r.ratio.lo),
                "hi": num(r.ratio.hi),
                "significant": r.change.significant(),
                "change": r.change.word(),
            })
        })
        .collect();
    let summary: Vec<Value> = c
        .summary
        .iter()
        .map(|s| {
            json!({
                "bench": s.bench,
                "points": s.points,
                "faster": s.faster,
                "slower": s.slower,
                "unchanged": s.unchanged,
                "unknown": s.unknown,
                "geomean_ratio": num(s.geomean),
            })
        })
        .collect();
    let warnings = warnings(a.1, b.1);
    json!({
        "a": side(a),
        "b": side(b),
        "figure": {
            "name": FIGURE,
            "better": "higher",
            "a_b": "geometric mean over the repetitions",
            "interval": crate::core::stats::LEVEL,
            "noise_pct": c.noise * 100.0,
        },
        "points": points,
        "summary": summary,
        "only_in_a": c.only_a,
        "only_in_b": c.only_b,
        "warnings": warnings,
    })
}

/// The comparison as a table: a row per shared point, its parameters in
/// `param.<key>` columns.
pub fn table(c: &Comparison, numbers: Numbers) -> Table {
    let keys = export::param_keys(c.rows.iter().map(|r| r.a));
    let mut header: Vec<String> = vec!["bench".into(), "lock".into(), "threads".into()];
    header.extend(keys.iter().map(|k| {
        if k.is_empty() {
            "params".to_string()
        } else {
            format!("param.{k}")
        }
    }));
    header.extend(
        [
            "a_reps",
            "b_reps",
            "a_throughput_ops_s",
            "b_throughput_ops_s",
            "ratio",
            "lo",
            "hi",
            "significant",
            "change",
        ]
        .map(String::from),
    );
    let of = |x: f64| match numbers {
        Numbers::Full => export::full(x),
        Numbers::Short => export::short(x),
    };
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.a.bench.clone(), r.a.lock.clone(), r.a.threads.to_string()];
            row.extend(keys.iter().map(|k| {
                if k.is_empty() {
                    r.a.params.to_string()
                } else {
                    export::param_cell(&r.a.params, k)
                }
            }));
            row.extend([
                r.a.reps.len().to_string(),
                r.b.reps.len().to_string(),
                of(r.a_value),
                of(r.b_value),
                of(r.ratio.ratio),
                of(r.ratio.lo),
                of(r.ratio.hi),
                match numbers {
                    Numbers::Full => r.change.significant().to_string(),
                    Numbers::Short => if r.change.significant() { "yes" } else { "no" }.to_string(),
                },
                r.change.word().to_string(),
            ]);
            row
        })
        .collect();
    Table { header, rows }
}

/// `locklab compare A B`.
pub fn command(cli: &Cli, a: &str, b: &str, format: Option<Format>, noise_pct: u32) -> Result<i32> {
    let format = cli.format(format).map_err(LabError::input)?;
    let store = Store::open_read_only(&cli.db)?;
    let (na, nb) = (resolve_named(&store, a)?, resolve_named(&store, b)?);
    let (ma, pa) = store.load(na.id)?;
    let (mb, pb) = store.load(nb.id)?;
    let c = compare(&pa, &pb, f64::from(noise_pct) / 100.0);
    let (sa, sb) = ((&na, &ma), (&nb, &mb));
    match format {
        Format::Text => crate::core::out::print(&text(sa, sb, &c))?,
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&json(sa, sb, &c)).expect("serialises")
        )?,
        Format::Csv => crate::core::out::print(&table(&c, Numbers::Full).csv())?,
        Format::Markdown => {
            let t = table(&c, Numbers::Short);
            let mut md = format!(
                "B/A of throughput (ops/s, higher is better): A = {}, B = {}; significant: the \
                 95 % interval excludes 1 and the change exceeds {} %\n\n",
                na.label(),
                nb.label(),
                pct(c.noise)
            );
            for w in warnings(&ma, &mb).iter().rev() {
                md = format!("**{w}**\n\n{md}");
            }
            md.push_str(&t.markdown(&export::numeric_columns(&t)));
            if c.only_a > 0 || c.only_b > 0 {
                let _ = writeln!(
                    md,
                    "\n{} only in A, {} only in B (not compared)",
                    points_word(c.only_a),
                    points_word(c.only_b)
                );
            }
            crate::core::out::print(&md)?
        }
    }
    // CSV has no room for the warning; it goes to stderr.
    if format == Format::Csv {
        for w in warnings(&ma, &mb) {
            crate::noteln!("{w}");
        }
    }
    Ok(0)
}

/// `locklab show RUN --format …`: the run in the format asked for; `reps`
/// (a row per repetition) only with CSV and Markdown.
pub fn show(cli: &Cli, run: RunRef, format: Option<Format>, reps: bool) -> Result<i32> {
    let format = cli.format(format).map_err(LabError::input)?;
    if reps && matches!(format, Format::Text | Format::Json) {
        return Err(LabError::input(format!(
            "--reps with {} output: a row per repetition is for --format csv or markdown \
             (JSON has every repetition under \"repetitions\")",
            if format == Format::Json {
                "JSON"
            } else {
                "text"
            }
        )));
    }
    let store = Store::open_read_only(&cli.db)?;
    let (meta, points) = store.load(crate::core::run::resolve(&store, run)?)?;
    match format {
        Format::Text => crate::core::out::print(&crate::front::show::render_text(&meta, &points))?,
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&crate::front::show::run_json(&meta, &points))
                .expect("serialises")
        )?,
        Format::Csv => crate::core::out::print(&export::csv(&points, reps))?,
        Format::Markdown => crate::core::out::print(&export::markdown(&points, reps))?,
    }
    Ok(0)
}

/// `locklab baseline …`.
pub fn baseline(cli: &Cli, action: &BaselineCmd) -> Result<i32> {
    match action {
        BaselineCmd::Save { name, run } => {
            check_name(name)?;
            // The database must exist and hold the run; only then is it
            // opened to write (which never changes a stored run).
            let id = {
                let store = Store::open_read_only(&cli.db)?;
                let id = crate::core::run::resolve(&store, *run)?;
                if !store.has_run(id)? {
                    return Err(LabError::input(format!(
                        "no run {id} in {}; `locklab runs` lists them",
                        cli.db
                    )));
                }
                id
            };
            let mut store = Store::open(&cli.db)?;
            let before = store.save_baseline(name, id)?;
            if cli.json {
                outln!(
                    "{}",
                    json!({ "name": name, "run_id": id, "replaced_run_id": before })
                )?;
            } else {
                match before {
                    Some(old) if old != id => {
                        outln!("baseline {name} is run {id} (was run {old})")?
                    }
                    _ => outln!("baseline {name} is run {id}")?,
                }
            }
            Ok(0)
        }
        BaselineCmd::List => {
            // Nothing stored yet is an empty list, and creates nothing.
            let (list, runs) = match Store::open_existing(&cli.db)? {
                Some(store) => (store.baselines()?, store.runs()?),
                None => (Vec::new(), Vec::new()),
            };
            if cli.json {
                return outln!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "baselines": list }))
                        .expect("serialises")
                )
                .map(|()| 0);
            }
            if list.is_empty() {
                outln!("no baselines saved (`locklab baseline save NAME RUN` saves one)")?;
                return Ok(0);
            }
            let mut table = vec![["name", "run", "saved", "the run"]
                .map(String::from)
                .to_vec()];
            for b in &list {
                let what = runs
                    .iter()
                    .find(|r| r.meta.id == Some(b.run_id))
                    .map_or_else(|| "?".to_string(), |r| run_line(&r.meta));
                table.push(vec![
                    b.name.clone(),
                    format!("#{}", b.run_id),
                    b.saved.clone(),
                    what,
                ]);
            }
            let mut out = String::new();
            columns(&mut out, &table, &[false, true, false, false]);
            crate::core::out::print(&out)?;
            Ok(0)
        }
        BaselineCmd::Delete { name } => {
            check_name(name)?;
            let missing = || {
                LabError::input(format!(
                    "no baseline named '{name}' in {}; `locklab baseline list` lists them",
                    cli.db
                ))
            };
            {
                let store = Store::open_read_only(&cli.db)?;
                if store.baseline(name)?.is_none() {
                    return Err(missing());
                }
            }
            let mut store = Store::open(&cli.db)?;
            if !store.delete_baseline(name)? {
                return Err(missing());
            }
            if cli.json {
                outln!("{}", json!({ "deleted": name }))?;
            } else {
                outln!("baseline {name} deleted (its run stays)")?;
            }
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(lock: &str, threads: u32, tputs: &[f64]) -> Point {
        Point::of_throughputs("demo", lock, threads, json!({"cs_ns": 100}), tputs)
    }

    /// A run of `bench demo` on `machine`.
    fn run_on(machine: crate::core::results::Machine) -> RunMeta {
        RunMeta {
            id: Some(1),
            uuid: None,
            kind: "bench demo".into(),
            command: "locklab bench demo".into(),
            params: json!({}),
            machine,
            started: "t".into(),
            finished: None,
            complete: true,
        }
    }

    #[test]
    fn two_machines_are_warned_of_with_every_fact_that_differs() {
        use crate::core::results::Machine;
        let on = |id: Option<&str>, cpu: &str, kernel: &str, rtm: Option<bool>| {
            run_on(Machine {
                id: id.map(str::to_string),
                cpu_model: cpu.into(),
                cores: 2,
                kernel: kernel.into(),
                rtm,
                ..Machine::default()
            })
        };
        let a = on(Some("ci-amd"), "AMD EPYC", "Linux 6.1", Some(false));
        assert_eq!(machine_warning(&a, &a), None);
        // Another kernel on the same machine is no other machine.
        assert_eq!(
            machine_warning(
                &a,
                &on(Some("ci-amd"), "AMD EPYC", "Linux 6.2", Some(false))
            ),
            None
        );
        let b = on(Some("xeon-1"), "Intel Xeon", "Linux 6.2", Some(true));
        let w = machine_warning(&a, &b).unwrap();
        for fact in [
            "machine ci-amd against xeon-1",
            "CPU AMD EPYC against Intel Xeon",
            "kernel Linux 6.1 against Linux 6.2",
            "RTM no against yes",
        ] {
            assert!(w.contains(fact), "{fact:?} not in {w}");
        }
        assert!(!w.contains("cores"), "{w}");
        // Two machines alike but for their identity are two machines.
        let twin = on(Some("amd-2"), "AMD EPYC", "Linux 6.1", Some(false));
        assert!(machine_warning(&a, &twin)
            .unwrap()
            .contains("machine ci-amd against amd-2"));
    }

    /// One machine whose round trip moved 6× between runs (the lab's
    /// guest, its CPUs placed near and then far) is warned of; within 2×,
    /// or unrecorded, or on two machines (warned of as such), it is not.
    #[test]
    fn a_moved_transfer_cost_is_warned_of_on_one_machine() {
        use crate::core::results::Machine;
        let on = |id: &str, rt: Option<f64>| {
            run_on(Machine {
                id: Some(id.into()),
                cpu_model: "AMD EPYC".into(),
                cores: 2,
                c2c_round_trip_ns: rt,
                ..Machine::default()
            })
        };
        let near = on("guest", Some(76.0));
        let far = on("guest", Some(480.0));
        let w = warnings(&near, &far);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("round trip differed (A 76"), "{}", w[0]);
        assert!(w[0].contains("against B 480"), "{}", w[0]);
        assert!(warnings(&near, &on("guest", Some(140.0))).is_empty());
        assert!(warnings(&near, &on("guest", None)).is_empty());
        let other = warnings(&near, &on("other", Some(480.0)));
        assert_eq!(other.len(), 1, "{other:?}");
        assert!(other[0].contains("different machines"), "{}", other[0]);
    }

    #[test]
    fn names_are_checked() {
        for good in ["main", "v1.2", "before_fix", "a-b", "2x", "last2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "123", "last", "a b", "a/b", "é", &"x".repeat(65)] {
            let e = check_name(bad).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(!e.msg.contains('\n'));
            assert!(e.msg.contains(&format!("'{bad}'")), "{}", e.msg);
        }
    }

    #[test]
    fn a_planted_change_is_found_and_counted() {
        let base = [100.0, 104.0, 97.0, 102.0, 99.0];
        let up: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let a = [
            point("tas", 1, &base),
            point("mcs", 1, &base),
            point("ticket", 1, &base),
        ];
        let b = [
            point("tas", 1, &up),
            point("mcs", 1, &[101.0, 98.0, 103.0, 99.0, 102.0]),
            point("clh", 1, &base),
            point("ticket", 1, &[100.0]),
        ];
        let c = compare(&a, &b, 0.05);
        assert_eq!(c.rows.len(), 3);
        assert_eq!((c.only_a, c.only_b), (0, 1));
        assert_eq!(c.rows[0].change, Change::Faster);
        assert!((c.rows[0].ratio.ratio - 1.2).abs() < 1e-9);
        assert_eq!(c.rows[1].change, Change::Unchanged);
        assert_eq!(c.rows[2].change, Change::Unknown);
        let s = &c.summary[0];
        assert_eq!(
            (s.points, s.faster, s.slower, s.unchanged, s.unknown),
            (3, 1, 0, 1, 1)
        );
        assert!(s.geomean > 1.0);
    }

    /// A steady 3 % change: outside its interval, yet within a 5 % noise
    /// threshold (not marked); marked with the threshold at 0 or 2 %.
    #[test]
    fn a_small_steady_change_is_within_noise_unless_the_threshold_is_lower() {
        let base = [100.0, 100.5, 99.5, 100.2, 99.8];
        let up: Vec<f64> = base.iter().map(|x| x * 1.03).collect();
        let (a, b) = ([point("tas", 1, &base)], [point("tas", 1, &up)]);
        let c = compare(&a, &b, 0.05);
        assert!(c.rows[0].ratio.separated().is_some());
        assert_eq!(c.rows[0].change, Change::WithinNoise);
        assert!(!c.rows[0].change.significant());
        assert_eq!(c.summary[0].unchanged, 1);
        for noise in [0.0, 0.02] {
            assert_eq!(compare(&a, &b, noise).rows[0].change, Change::Faster);
        }
        let down = [point("tas", 1, &base)];
        assert_eq!(compare(&b, &down, 0.02).rows[0].change, Change::Slower);
        assert_eq!(compare(&b, &down, 0.05).rows[0].change, Change::WithinNoise);
    }

    #[test]
    fn text_columns_line_up_whatever_the_lock_names() {
        let base = [100.0, 104.0, 97.0];
        let a = [
            point("a-very-long-lock-name-indeed", 1, &base),
            point("x", 2, &base),
        ];
        let meta = RunMeta {
            id: Some(1),
            uuid: None,
            kind: "bench demo".into(),
            command: "locklab bench demo".into(),
            params: json!({}),
            machine: Default::default(),
            started: "t".into(),
            finished: None,
            complete: true,
        };
        let n = Named {
            id: 1,
            baseline: None,
        };
        let c = compare(&a, &a, 0.05);
        let t = text((&n, &meta), (&n, &meta), &c);
        let lines: Vec<&str> = t
            .lines()
            .skip_while(|l| *l != "demo")
            .skip(1)
            .take(3)
            .collect();
        // The ratio column ends at the same character on every line.
        let ends: Vec<usize> = lines
            .iter()
            .map(|l| {
                let at = l.find(['×']).unwrap_or_else(|| l.find("B/A").unwrap() + 2);
                l[..at].chars().count()
            })
            .collect();
        assert!(ends.windows(2).all(|w| w[0] == w[1]), "{t}");
        assert!(
            t.contains("2 points: 0 faster, 0 slower, 2 unchanged"),
            "{t}"
        );
    }
}
