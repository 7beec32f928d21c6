//! The `model` command: the queueing models of `locklab-model` at the
//! command line. `model predict` solves a model for a list of core counts;
//! `model fit` fits the machine-repairman model to measured points.
//!
//! Only `model fit --run` reads the results database (a stored `bench ipc`
//! run); otherwise a model is arithmetic on the arguments (and, for a fit,
//! on a CSV file).

pub mod args;

use crate::core::args::RunRef;
use crate::core::error::{LabError, Result};
use crate::core::results::Point;
use crate::core::store::Store;
use crate::core::study::Ctx;
use crate::outln;
use crate::studies::shared::ipc_points::{self, delay_ns, mode};
use args::{FitArgs, ModelArgs, ModelKind, ModelName, PredictArgs, MODEL_MAX_CORES};
use locklab_model::queueing::{
    fit, fit_family, Fit, FitError, FitOptions, Repairman, Solution, Ticket, MAX_THROUGHPUT,
    MIN_THROUGHPUT,
};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// Runs `model predict` or `model fit`; returns the exit code.
pub fn run(ctx: &Ctx, a: &ModelArgs) -> Result<i32> {
    match &a.kind {
        ModelKind::Predict(p) => predict(ctx.json, p),
        ModelKind::Fit(f) => fit_command(ctx, f),
    }
}

impl crate::core::study::RunCommand for ModelArgs {
    fn run(&self, ctx: &Ctx) -> Result<crate::core::study::Outcome> {
        run(ctx, self).map(crate::core::study::Outcome::Exit)
    }
}

fn model_error(e: locklab_model::queueing::ModelError) -> LabError {
    LabError::input(e.to_string())
}

fn predict(json_out: bool, a: &PredictArgs) -> Result<i32> {
    let rep = Repairman::new(a.service, a.delay).map_err(model_error)?;
    let ticket = match (a.model, a.handoff) {
        (ModelName::Repairman | ModelName::RepairmanConst, None) => None,
        (ModelName::Repairman | ModelName::RepairmanConst, Some(c)) => {
            return Err(LabError::input(format!(
                "--handoff {c} is for --model ticket; the repairman model has no hand-off cost"
            )))
        }
        (ModelName::Ticket, None) => {
            return Err(LabError::input(
                "--model ticket needs --handoff C, the hand-off cost each core at the lock adds (0 or more)",
            ))
        }
        (ModelName::Ticket, Some(c)) => {
            Some(Ticket::new(a.service, a.delay, c).map_err(model_error)?)
        }
    };
    let cores = &a.cores.0;
    let max = *cores.last().ok_or_else(|| {
        LabError::input("an empty list of cores: give counts like 1,2,4 or ranges like 1-28")
    })?;
    let constant = a.model == ModelName::RepairmanConst;
    let solve = |n: u32| match &ticket {
        Some(t) => t.solve(n),
        None if constant => rep.solve_constant(n),
        None => rep.solve(n),
    };
    let sols: Vec<Solution> = cores
        .iter()
        .map(|&n| solve(n))
        .collect::<std::result::Result<_, _>>()
        .map_err(model_error)?;
    let peak = match &ticket {
        Some(t) => Some(t.peak(max).map_err(model_error)?),
        None => None,
    };
    let s = a.service;
    if json_out {
        let points: Vec<Value> = sols
            .iter()
            .map(|p| {
                json!({
                    "cores": p.cores, "throughput": p.throughput, "queue_length": p.queue_length,
                    "utilization": p.utilization, "response": p.response,
                    "fraction_of_peak": p.throughput * s,
                })
            })
            .collect();
        let mut v = json!({
            "model": match a.model {
                ModelName::Repairman => "repairman",
                ModelName::RepairmanConst => "repairman-const",
                ModelName::Ticket => "ticket",
            },
            "service": s, "delay": a.delay, "knee": rep.knee(),
            "cores_95": if constant { rep.cores_95_constant() } else { rep.cores_95() },
            "points": points,
        });
        if let (Some(t), Some((n, x))) = (&ticket, peak) {
            v["handoff"] = json!(t.handoff());
            v["peak"] = json!({ "cores": n, "throughput": x, "searched_up_to": max });
        }
        outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"))?;
        return Ok(0);
    }
    let mut out = String::new();
    match &ticket {
        None => {
            let _ = writeln!(
                out,
                "machine-repairman model{}: S = {}, Z = {} (one time unit; throughput in acquisitions per unit)",
                if constant {
                    ", every acquisition holding the lock exactly S (M/D/1//N)"
                } else {
                    ""
                },
                num(s),
                num(a.delay)
            );
            let _ = writeln!(out, "{}", knee_line(&rep, constant));
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "ticket-lock model: S = {}, Z = {}, hand-off C = {} per core at the lock \
                 (one time unit; throughput in acquisitions per unit)",
                num(s),
                num(a.delay),
                num(t.handoff())
            );
            if let Some((n, x)) = peak {
                let _ = writeln!(
                    out,
                    "peak: {} at {n} cores ({} of 1/S) among 1 to {max} cores",
                    sig4(x),
                    pct(x * s)
                );
            }
            let _ = writeln!(out, "with C = 0 (repairman): {}", knee_line(&rep, false));
        }
    }
    let _ = writeln!(
        out,
        "{:>6} {:>12} {:>12} {:>12} {:>8}",
        "CORES", "THROUGHPUT", "QUEUE", "UTILIZATION", "X·S"
    );
    for p in &sols {
        let _ = writeln!(
            out,
            "{:>6} {:>12} {:>12} {:>12} {:>8}",
            p.cores,
            sig4(p.throughput),
            sig4(p.queue_length),
            sig4(p.utilization),
            format!("{:.3}", p.throughput * s),
        );
    }
    crate::core::out::print(&out)?;
    Ok(0)
}

/// "knee N* = … cores; 95 % of 1/S from N cores", for the exponential
/// or (`constant`) the constant service time.
fn knee_line(m: &Repairman, constant: bool) -> String {
    let (c95, max) = if constant {
        (
            m.cores_95_constant(),
            locklab_model::queueing::MAX_CONSTANT_CORES,
        )
    } else {
        (m.cores_95(), locklab_model::queueing::MAX_CORES)
    };
    let c95 = match c95 {
        Some(n) => format!("from {n} cores"),
        None => format!("beyond {max} cores"),
    };
    format!(
        "knee N* = (S+Z)/S = {} cores; throughput reaches 95 % of the peak 1/S = {} {c95} (cores_95)",
        sig4(m.knee()),
        sig4(1.0 / m.service())
    )
}

fn fit_command(ctx: &Ctx, a: &FitArgs) -> Result<i32> {
    if let Some(run) = a.run {
        return fit_run(ctx, a, run);
    }
    let Some(path) = &a.csv else {
        return Err(LabError::input("model fit needs --csv FILE or --run ID"));
    };
    // What only a stored run has is refused rather than ignored.
    for (flag, given) in [
        ("--variant", a.variant.is_some()),
        ("--delay-ns", a.delay_ns.is_some()),
    ] {
        if given {
            return Err(LabError::input(format!(
                "{flag} is for --run (it picks a curve of a stored bench ipc run); \
                 --csv {} is one curve already",
                path.display()
            )));
        }
    }
    let csv = read_csv(path)?;
    let name = path.display().to_string();
    let f = fit_points(&csv.points, a.first, a.delay, &name, &|i| {
        format!("{name} line {}", csv.lines[i])
    })?;
    if ctx.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&fit_json(&f, &name)).expect("serialises")
        )?;
    } else {
        crate::core::out::print(&fit_text(&f, &name, distinct(&csv.points)))?;
    }
    Ok(0)
}

/// `model fit --run`: the repairman model fitted to one multi ping-pong
/// curve of a stored `bench ipc` run.
fn fit_run(ctx: &Ctx, a: &FitArgs, run: RunRef) -> Result<i32> {
    let store = Store::open_read_only(&ctx.db)?;
    let id = crate::core::run::resolve(&store, run)?;
    let (meta, points) = store.load(id)?;
    let multi: Vec<&Point> = points
        .iter()
        .filter(|p| p.bench == ipc_points::BENCH && mode(p) == "multi")
        .collect();
    if multi.is_empty() {
        return Err(LabError::input(format!(
            "run {id} has no multi ping-pong points to fit (`locklab bench ipc --modes multi` measures them)"
        )));
    }
    let mut variants: Vec<&str> = multi.iter().map(|p| p.lock.as_str()).collect();
    variants.dedup();
    variants.sort_unstable();
    variants.dedup();
    let variant = match &a.variant {
        Some(v) if variants.contains(&v.as_str()) => v.clone(),
        Some(v) => {
            return Err(LabError::input(format!(
                "--variant '{v}': run {id} measured {}",
                variants.join(", ")
            )))
        }
        None => variants
            .iter()
            .find(|v| v.starts_with("bkl("))
            .map(|v| v.to_string())
            .ok_or_else(|| {
                LabError::input(format!(
                    "run {id} has no bkl variant; choose one with --variant ({})",
                    variants.join(", ")
                ))
            })?,
    };
    let mut delays: Vec<u64> = multi
        .iter()
        .filter(|p| p.lock == variant)
        .map(|p| delay_ns(p))
        .collect();
    delays.sort_unstable();
    delays.dedup();
    let list = || {
        delays
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let delay = match a.delay_ns {
        Some(d) if delays.contains(&d) => d,
        Some(d) => {
            return Err(LabError::input(format!(
                "--delay-ns {d}: run {id} measured {variant} at {} ns",
                list()
            )))
        }
        None if delays.len() == 1 => delays[0],
        None => return fit_run_family(ctx, a, id, &meta, &points, &variant, &delays),
    };
    let curve = ipc_points::curve(&points, &variant, delay);
    let name = format!("run {id} {variant} at {delay} ns delay (IPCs per ns)");
    let f = fit_points(&curve, a.first, a.delay, &name, &|i| {
        format!("{name}, {} cores", curve[i].0)
    })?;
    let cycles_per_ns = meta.machine.tsc_hz.map(|hz| hz as f64 / 1e9);
    if ctx.json {
        let mut v = fit_json(&f, &name);
        v["variant"] = variant.as_str().into();
        v["delay_ns"] = delay.into();
        v["unit"] = "ns".into();
        if let Some(c) = cycles_per_ns {
            v["service_cycles"] = (f.service() * c).into();
            v["delay_cycles"] = (f.delay() * c).into();
        }
        outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"))?;
    } else {
        crate::core::out::print(&fit_text(&f, &name, distinct(&curve)))?;
        if let Some(c) = cycles_per_ns {
            outln!(
                "in TSC cycles: S = {} and Z = {}",
                sig4(f.service() * c),
                sig4(f.delay() * c)
            )?;
        }
        if f.points.len() == f.parameters {
            outln!(
                "note: {} points for {} parameters: any curve the model can follow is fitted \
                 exactly, so R² says little; without --delay-ns every delay's curve is fitted \
                 at once",
                f.points.len(),
                f.parameters
            )?;
        }
    }
    Ok(0)
}

/// Fits the repairman model to `points` (cores, throughput), as `model
/// fit` does for any source: `source` names the data in messages,
/// `point(i)` names the i-th point (a CSV line, a stored point). Bad
/// points, `first`, too few points and data with no valid fit (the best
/// fit is no model, or misses the points by more than
/// [`locklab_model::queueing::MAX_MISS`]: see the fit's module) are input
/// errors (exit 2); a fit that does not converge is exit 1.
pub fn fit_points(
    points: &[(f64, f64)],
    first: Option<usize>,
    delay: Option<f64>,
    source: &str,
    point: &dyn Fn(usize) -> String,
) -> Result<Fit> {
    if let Some(i) = points.iter().position(|p| p.0 > f64::from(MODEL_MAX_CORES)) {
        return Err(LabError::input(format!(
            "{}: {} cores: allowed a whole number from 1 to {MODEL_MAX_CORES}",
            point(i),
            points[i].0
        )));
    }
    let options = FitOptions {
        delay,
        first,
        ..FitOptions::default()
    };
    fit(points, &options).map_err(|e| match e {
        FitError::Cores { index, value } => LabError::input(format!(
            "{}: {value} cores: allowed a whole number from 1 to {MODEL_MAX_CORES}",
            point(index)
        )),
        FitError::Throughput { index, value } => LabError::input(format!(
            "{}: throughput {value}: allowed a number from {MIN_THROUGHPUT:e} to {MAX_THROUGHPUT:e}",
            point(index)
        )),
        FitError::FirstZero => LabError::input("--first 0: allowed 1 or more core counts"),
        FitError::FirstTooLarge { first, available } => LabError::input(format!(
            "--first {first}: {source} has only {available} distinct core counts"
        )),
        FitError::TooFewPoints {
            core_counts,
            parameters,
        } => LabError::input(format!(
            "{source}: {core_counts} distinct core count(s) cannot determine {parameters} \
             parameter(s){}; need at least {parameters}{}",
            if parameters == 2 {
                " (S and Z)"
            } else {
                " (S)"
            },
            if parameters == 2 {
                ", or fix Z with --delay"
            } else {
                ""
            }
        )),
        FitError::Model(m) => LabError::input(format!("--delay: {m}")),
        FitError::NotConverged { .. } => LabError::failed(format!("{source}: {e}")),
        FitError::DelayScale { .. } => LabError::input(format!("--delay: {e}")),
        FitError::NoModel(_) | FitError::FarFromData { .. } => {
            LabError::input(format!("{source}: {e}"))
        }
    })
}

/// Measured points read from a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvPoints {
    /// (cores, throughput), in file order.
    pub points: Vec<(f64, f64)>,
    /// The 1-based line of each point.
    pub lines: Vec<usize>,
}

/// Reads `cores,throughput` lines: blank lines and `#` comments are
/// skipped, and a first line of names (fields with letters, none a
/// number) is a header; every other line must be two fields, a whole
/// number of cores from 1 to [`MODEL_MAX_CORES`] and a throughput from
/// [`MIN_THROUGHPUT`] to [`MAX_THROUGHPUT`] (so that the fit's sums of
/// squares are numbers).
pub fn read_csv(path: &Path) -> Result<CsvPoints> {
    let name = path.display();
    // A FIFO or a device is refused, and a file read up to a bound far
    // above any curve of measured points.
    let text = crate::core::files::read_input(
        "--csv",
        path,
        16 << 20,
        "a CSV file of cores,throughput lines (a regular file)",
    )?;
    let mut points = Vec::new();
    let mut lines = Vec::new();
    let mut first = true;
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let line = raw.trim_start_matches('\u{feff}').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if std::mem::take(&mut first) && is_header(&fields) {
            continue;
        }
        if fields.len() != 2 {
            return Err(LabError::input(format!(
                "{name} line {no}: expected two fields `cores,throughput`, found {}: '{line}'",
                fields.len()
            )));
        }
        let cores = match fields[0].parse::<u64>() {
            Ok(n) if (1..=u64::from(MODEL_MAX_CORES)).contains(&n) => n as f64,
            _ => {
                return Err(LabError::input(format!(
                "{name} line {no}: '{}' cores: allowed a whole number from 1 to {MODEL_MAX_CORES}",
                fields[0]
            )))
            }
        };
        let x = match fields[1].parse::<f64>() {
            Ok(x) if (MIN_THROUGHPUT..=MAX_THROUGHPUT).contains(&x) => x,
            _ => {
                return Err(LabError::input(format!(
                    "{name} line {no}: '{}' throughput: allowed a number from \
                     {MIN_THROUGHPUT:e} to {MAX_THROUGHPUT:e}",
                    fields[1]
                )))
            }
        };
        points.push((cores, x));
        lines.push(no);
    }
    if points.is_empty() {
        return Err(LabError::input(format!(
            "--csv {name}: no data lines; expected one `cores,throughput` per line (a header line is allowed)"
        )));
    }
    Ok(CsvPoints { points, lines })
}

/// A header names columns: some field has a letter and none is a number.
fn is_header(fields: &[&str]) -> bool {
    fields.iter().any(|f| f.chars().any(|c| c.is_alphabetic()))
        && fields.iter().all(|f| f.parse::<f64>().is_err())
}

fn distinct(points: &[(f64, f64)]) -> usize {
    let mut c: Vec<u64> = points.iter().map(|p| p.0 as u64).collect();
    c.sort_unstable();
    c.dedup();
    c.len()
}

/// `model fit --json`: the fitted values, R² (null when all throughputs
/// are equal), and the points with model values and residuals.
pub fn fit_json(f: &Fit, source: &str) -> Value {
    let points: Vec<Value> = f
        .points
        .iter()
        .zip(&f.predicted)
        .zip(&f.residuals)
        .map(|(((n, x), m), r)| json!({ "cores": n, "throughput": x, "model": m, "residual": r }))
        .collect();
    json!({
        "model": "repairman",
        "source": source,
        "service": f.service(),
        "delay": f.delay(),
        "delay_fixed": f.delay_fixed,
        "r2": f.r2,
        "ss_res": f.ss_res,
        "ss_tot": f.ss_tot,
        "first": f.first,
        "n": f.points.len(),
        "parameters": f.parameters,
        "iterations": f.iterations,
        "knee": f.model.knee(),
        "cores_95": f.model.cores_95(),
        "points": points,
        "residuals": f.residuals,
    })
}

/// `model fit`'s tables: the fitted values, R², then measured against
/// model per point.
pub fn fit_text(f: &Fit, source: &str, core_counts: usize) -> String {
    let mut out = String::new();
    let which = match f.first {
        Some(k) => format!("the first {k} of {core_counts} core counts"),
        None => format!("{core_counts} core counts"),
    };
    let params = if f.delay_fixed {
        "1 parameter (S; Z fixed)"
    } else {
        "2 parameters (S and Z)"
    };
    let _ = writeln!(
        out,
        "machine-repairman fit to {source}: {} points ({which}), {params}",
        f.points.len()
    );
    let _ = writeln!(
        out,
        "S = {}  Z = {}{}  (in the time unit the throughput is per)",
        sig6(f.service()),
        sig6(f.delay()),
        if f.delay_fixed { " (fixed)" } else { "" }
    );
    match f.r2 {
        // Six decimals, and how far from 1 when they would round to it.
        Some(r2) if (0.9999995..1.0).contains(&r2) => {
            let _ = writeln!(out, "R² = {r2:.6} (1 − {})", sig4(1.0 - r2));
        }
        Some(r2) => {
            let _ = writeln!(out, "R² = {r2:.6}");
        }
        None => {
            let _ = writeln!(
                out,
                "R² undefined: every measured throughput is the same (nothing to explain)"
            );
        }
    }
    let _ = writeln!(out, "{}", knee_line(&f.model, false));
    let _ = writeln!(
        out,
        "{:>6} {:>12} {:>12} {:>12} {:>9}",
        "CORES", "MEASURED", "MODEL", "RESIDUAL", "RESID %"
    );
    for (((n, x), m), r) in f.points.iter().zip(&f.predicted).zip(&f.residuals) {
        let _ = writeln!(
            out,
            "{:>6} {:>12} {:>12} {:>12} {:>9}",
            n,
            sig4(*x),
            sig4(*m),
            sig4(*r),
            format!("{:+.2}", 100.0 * r / x)
        );
    }
    out
}

/// `digits` significant digits: plain decimals from 0.0001 up to a
/// million, else scientific ("2.793e-7").
fn sig(x: f64, digits: i32) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let a = x.abs();
    if (1e-4..1e6).contains(&a) {
        let decimals = (digits - 1 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.*e}", (digits - 1) as usize)
    }
}

/// A parameter as given, without 300 zeros (`1e-320`).
fn num(x: f64) -> String {
    locklab_model::queueing::error::num(x)
}

fn sig4(x: f64) -> String {
    sig(x, 4)
}

fn sig6(x: f64) -> String {
    sig(x, 6)
}

fn pct(fraction: f64) -> String {
    format!("{:.1} %", 100.0 * fraction)
}

/// `model fit --run` over every delay at once: one S and one z₀.
fn fit_run_family(
    ctx: &Ctx,
    a: &FitArgs,
    id: i64,
    meta: &crate::core::results::RunMeta,
    points: &[Point],
    variant: &str,
    delays: &[u64],
) -> Result<i32> {
    let fam = ipc_points::family(points, variant, delays);
    let name = format!("run {id} {variant} at every delay (IPCs per ns)");
    let options = FitOptions {
        delay: a.delay,
        first: a.first,
        ..FitOptions::default()
    };
    let flat: Vec<(u64, f64)> = fam
        .iter()
        .flat_map(|(e, c)| c.iter().map(move |p| ((2.0 * e) as u64, p.0)))
        .collect();
    let f = fit_family(&fam, &options).map_err(|e| match e {
        FitError::NotConverged { .. } => LabError::failed(format!("{name}: {e}")),
        FitError::Cores { index, .. } | FitError::Throughput { index, .. } => {
            LabError::input(format!(
                "{name}: the point at {} ns, {} cores: {e}",
                flat[index].0, flat[index].1
            ))
        }
        _ => LabError::input(format!("{name}: {e}")),
    })?;
    let cycles = meta.machine.tsc_hz.map(|hz| hz as f64 / 1e9);
    if ctx.json {
        let mut v = fit_json(&f, &name);
        v["variant"] = variant.into();
        v["joint"] = true.into();
        v["delays_ns"] = delays.into();
        v["delay_rule"] = "Z = delay + delay_ns / 2 per one-way IPC".into();
        v["unit"] = "ns".into();
        if let Value::Array(pts) = &mut v["points"] {
            for (p, e) in pts.iter_mut().zip(&f.extra) {
                p["delay_ns"] = ((2.0 * e).round() as u64).into();
            }
        }
        if let Some(c) = cycles {
            v["service_cycles"] = (f.service() * c).into();
            v["delay_cycles"] = (f.delay() * c).into();
        }
        outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"))?;
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "machine-repairman fit to {name}: {} points at {} delays, {}; each curve's Z is z₀ + delay/2 \
         (a round trip is two system calls and one server delay)",
        f.points.len(),
        delays.len(),
        if f.delay_fixed {
            "1 parameter (S; z₀ fixed)"
        } else {
            "2 parameters (S and z₀)"
        }
    );
    // A z₀ the optimiser drove towards 0 is "too small to see", not a
    // number with a meaningful exponent.
    let z0 = if f.delay() < 1e-6 * f.service() {
        "≈ 0 (too small for these points to resolve)".to_string()
    } else {
        format!("= {} ns", sig6(f.delay()))
    };
    let _ = writeln!(
        out,
        "S = {} ns  z₀ {z0}{}",
        sig6(f.service()),
        cycles.map_or_else(String::new, |c| format!(
            "  (S = {} TSC cycles)",
            sig4(f.service() * c)
        ))
    );
    let _ = writeln!(
        out,
        "R² = {}",
        f.r2.map_or_else(
            || "undefined (all throughputs equal)".into(),
            |r| format!("{r:.6}")
        )
    );
    let _ = writeln!(
        out,
        "{:>9} {:>6} {:>12} {:>12} {:>9}",
        "DELAY NS", "CORES", "MEASURED", "MODEL", "RESID %"
    );
    for (((n, x), m), e) in f.points.iter().zip(&f.predicted).zip(&f.extra) {
        let _ = writeln!(
            out,
            "{:>9} {:>6} {:>12} {:>12} {:>9}",
            (2.0 * e).round() as u64,
            n,
            sig4(*x),
            sig4(*m),
            format!("{:+.2}", 100.0 * (x - m) / x)
        );
    }
    crate::core::out::print(&out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(sig4(0.002793), "0.002793");
        assert_eq!(sig4(358.0), "358.0");
        assert_eq!(sig4(2.7931e-7), "2.793e-7");
        assert_eq!(sig4(4.2409e-4), "0.0004241");
        assert_eq!(sig4(12345678.0), "1.235e7");
        assert_eq!(sig4(0.0), "0");
        assert_eq!(sig4(-0.5), "-0.5000");
        assert_eq!(sig4(f64::NAN), "–");
    }

    #[test]
    fn headers_are_names_not_numbers() {
        assert!(is_header(&["cores", "throughput"]));
        assert!(is_header(&["N", "X (per cycle)"]));
        assert!(!is_header(&["1", "0.5"]));
        assert!(!is_header(&["1;0.5"]));
        assert!(!is_header(&["cores", "7"]));
    }
}
