//! Least-squares fit of the machine-repairman model to a measured curve.
//!
//! Seed 002 (section 5.1.2) measured total IPC throughput against the
//! number of hardware threads and fitted the repairman model to the first
//! 14 of 28 points (one socket) of its 2000-cycle-delay curve, finding
//! S = 358 and Z = 1999 cycles; it then predicted the other delays with
//! that S. This module does the
//! same: given points (N_i, X_i) it finds S and Z (or S alone, Z fixed)
//! minimising the sum of squared throughput residuals
//!
//! ```text
//! SS_res = Σ (X_i − X(N_i; S, Z))²
//! ```
//!
//! and reports R² = 1 − SS_res/SS_tot with SS_tot = Σ (X_i − mean X)².
//! When every measured throughput is the same, SS_tot = 0 and R² is
//! undefined: [`Fit::r2`] is `None` then.
//!
//! The optimiser is Levenberg–Marquardt (Marquardt, *J. SIAM* 11(2),
//! 1963) in the parameters' logarithms, which keeps S and Z positive and
//! makes the problem indifferent to the time unit. The Jacobian is
//! analytic: with B = P_0 = B(N, Z/S) (Erlang's loss formula, see
//! [`super::repairman`]) and L = N − Z·X the queue length,
//!
//! ```text
//! ∂X/∂ln Z = −B·L/S,    ∂X/∂ln S = −X + B·L/S
//! ```
//!
//! (the second because X(N; cS, cZ) = X(N; S, Z)/c). It starts from
//! points read off the data — S₀ = 1/max X (X ≤ 1/S, so no S above it
//! fits), Z₀ = N₁/X₁ − S₀ from the smallest core count (X ≤ N/(S + Z)) —
//! and from a few fixed multiples of them, and keeps the best converged
//! result. Everything is deterministic: the same points give the same fit.
//!
//! Points may come in any order and may repeat a core count (repeated
//! measurements); they are sorted by cores, repeats kept. `first` = K
//! keeps the points of the K smallest distinct core counts.
//!
//! Identifiability: S and Z are only both determined when the curve bends.
//! Perfectly linear data (no contention seen) drives S towards 0; a flat
//! curve (all contention) drives Z towards 0. The fit then reports the
//! limit it reached, with R² close to 1 — read it as "the data do not pin
//! this parameter down".
//!
//! Scale: the model is indifferent to the time unit (X(N; cS, cZ) =
//! X(N; S, Z)/c), so the optimiser works on the throughputs divided by
//! the largest of them and scales S and Z back at the end: a curve in
//! acquisitions per year fits as well as one per nanosecond. Throughputs
//! are allowed from [`MIN_THROUGHPUT`] to [`MAX_THROUGHPUT`], so that the
//! sums of squares reported (SS_res, SS_tot) are finite numbers too.
//!
//! No valid solution: the best fit is refused, rather than reported as a
//! model of data it does not describe, when
//!
//! - its S and Z are not a model — not finite numbers in the domain
//!   [`Repairman::new`] accepts (S > 0 with 1/S finite, Z ≥ 0 with Z/S
//!   finite): the optimiser ran a parameter off to a bound the numbers
//!   cannot hold ([`FitError::NoModel`]); or
//! - it is far from the data: the root mean square of the relative
//!   residuals (X_i − X(N_i))/X_i exceeds [`MAX_MISS`], i.e. the model
//!   misses a typical point by more than half of that point's own value
//!   ([`FitError::FarFromData`]). The repairman's throughput never falls
//!   as cores are added and never rises faster than linearly, so a
//!   collapsing, zig-zagging or superlinear curve lands here. Relative
//!   residuals measure each point on its own scale, so the criterion is
//!   the same for any unit and does not let the largest throughputs hide
//!   a miss at the smallest. A fit that misses by less is reported with
//!   its R² and residuals for the reader to judge (a curve over two
//!   sockets with two service times, for one, misses by about a quarter).

use super::error::{check_delay, num, sig6, ModelError, MAX_CORES};
use super::repairman::{erlang_b, Repairman};
use std::fmt;

/// The smallest throughput a point may have (its square, and a sum of
/// them, stay normal numbers).
pub const MIN_THROUGHPUT: f64 = 1e-150;

/// The largest throughput a point may have (the sum of squares of
/// millions of points stays finite).
pub const MAX_THROUGHPUT: f64 = 1e150;

/// The most a fit may miss the points by: the root mean square of the
/// relative residuals (measured − model)/measured. Beyond it the model
/// explains nothing about the data (see the module's "No valid solution").
pub const MAX_MISS: f64 = 0.5;

/// What to fit and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Fix Z at this value and fit S alone; `None` fits both.
    pub delay: Option<f64>,
    /// Fit only the points of the K smallest distinct core counts.
    pub first: Option<usize>,
    /// Most Levenberg–Marquardt iterations from each starting point.
    pub max_iterations: u32,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            delay: None,
            first: None,
            max_iterations: 500,
        }
    }
}

/// A fitted repairman model and how well it explains the points.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The model with the fitted S and Z.
    pub model: Repairman,
    /// Whether Z was fixed by [`FitOptions::delay`] rather than fitted.
    pub delay_fixed: bool,
    /// [`FitOptions::first`], as given.
    pub first: Option<usize>,
    /// The points fitted, as (cores, measured throughput), sorted by cores
    /// (for [`fit_family`], by curve and then cores).
    pub points: Vec<(u32, f64)>,
    /// Each point's delay beyond the fitted Z: 0 for [`fit()`]; the
    /// curve's offset for [`fit_family`], whose point i has delay
    /// Z + `extra[i]`.
    pub extra: Vec<f64>,
    /// The fitted model's throughput at each point.
    pub predicted: Vec<f64>,
    /// Measured minus predicted throughput at each point.
    pub residuals: Vec<f64>,
    /// Σ residual².
    pub ss_res: f64,
    /// Σ (measured − mean measured)².
    pub ss_tot: f64,
    /// 1 − SS_res/SS_tot; `None` when SS_tot = 0 (all throughputs equal).
    pub r2: Option<f64>,
    /// Parameters fitted: 2 (S and Z) or 1 (S, Z fixed).
    pub parameters: usize,
    /// Iterations the winning start took.
    pub iterations: u32,
}

impl Fit {
    /// The fitted S.
    pub fn service(&self) -> f64 {
        self.model.service()
    }

    /// The fitted (or fixed) Z.
    pub fn delay(&self) -> f64 {
        self.model.delay()
    }
}

/// Why points could not be fitted. Point indices are 0-based positions in
/// the slice given to [`fit()`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FitError {
    /// A core count that is not a whole number from 1 to [`MAX_CORES`].
    Cores {
        /// The point's index.
        index: usize,
        /// Its core count.
        value: f64,
    },
    /// A throughput that is not a number from [`MIN_THROUGHPUT`] to
    /// [`MAX_THROUGHPUT`].
    Throughput {
        /// The point's index.
        index: usize,
        /// Its throughput.
        value: f64,
    },
    /// `first` = 0.
    FirstZero,
    /// `first` larger than the number of distinct core counts.
    FirstTooLarge {
        /// `first` as given.
        first: usize,
        /// Distinct core counts in the points.
        available: usize,
    },
    /// Fewer distinct core counts than parameters to fit.
    TooFewPoints {
        /// Distinct core counts fitted.
        core_counts: usize,
        /// Parameters to fit.
        parameters: usize,
    },
    /// The fixed delay is not allowed.
    Model(ModelError),
    /// No starting point converged within the iteration limit.
    NotConverged {
        /// The limit per start.
        iterations: u32,
    },
    /// A delay (fixed, or a curve's extra) times the largest throughput
    /// overflows: a delay no measured rate can go with, since the model's
    /// throughput at N cores is at most N/Z.
    DelayScale {
        /// The delay.
        delay: f64,
        /// The largest throughput.
        throughput: f64,
    },
    /// No valid solution: the best fit's S and Z are not a model (the
    /// error says which check they fail).
    NoModel(ModelError),
    /// No valid solution: the best fit misses the points by `miss` (root
    /// mean square of the relative residuals), more than [`MAX_MISS`].
    FarFromData {
        /// The best fit's S.
        service: f64,
        /// Its Z.
        delay: f64,
        /// Its miss.
        miss: f64,
    },
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cores { index, value } => write!(
                f,
                "point {}: {value} cores is not allowed: a whole number from 1 to {MAX_CORES}",
                index + 1
            ),
            Self::Throughput { index, value } => write!(
                f,
                "point {}: throughput {value} is not allowed: a number from {MIN_THROUGHPUT:e} \
                 to {MAX_THROUGHPUT:e}",
                index + 1
            ),
            Self::FirstZero => write!(f, "first 0 core counts: allowed 1 or more"),
            Self::FirstTooLarge { first, available } => write!(
                f,
                "first {first} core counts: the data have only {available} distinct core counts"
            ),
            Self::TooFewPoints {
                core_counts,
                parameters,
            } => write!(
                f,
                "{core_counts} distinct core count(s) cannot determine {parameters} parameters: \
                 need at least {parameters}"
            ),
            Self::Model(e) => e.fmt(f),
            Self::NotConverged { iterations } => write!(
                f,
                "the fit did not converge within {iterations} iterations from any starting point"
            ),
            Self::DelayScale { delay, throughput } => write!(
                f,
                "delay Z = {} with throughputs up to {}: Z × throughput overflows; allowed Z \
                 up to {:.3e} for these data",
                num(*delay),
                num(*throughput),
                f64::MAX / throughput
            ),
            Self::NoModel(e) => write!(f, "no valid fit: the best parameters are no model: {e}"),
            Self::FarFromData {
                service,
                delay,
                miss,
            } => write!(
                f,
                "no valid fit: the best repairman model (S = {}, Z = {}) misses the measured \
                 throughputs by {:.0} % (root mean square of residual/measured; allowed up to \
                 {:.0} %): these data are not a curve the model can follow (its throughput \
                 never falls as cores are added, nor rises faster than linearly)",
                sig6(*service),
                sig6(*delay),
                miss * 100.0,
                MAX_MISS * 100.0
            ),
        }
    }
}

impl std::error::Error for FitError {}

impl From<ModelError> for FitError {
    fn from(e: ModelError) -> Self {
        Self::Model(e)
    }
}

/// Fits the repairman model to `points` = (cores, throughput): S and Z,
/// or S alone with `options.delay` fixed. Throughput is in acquisitions
/// per time unit; S and Z come out in that unit. Cost: O(largest core
/// count) per iteration.
pub fn fit(points: &[(f64, f64)], options: &FitOptions) -> Result<Fit, FitError> {
    let (pts, counts) = prepare(points, 0, 0.0, options.first)?;
    solve_points(pts, counts, options)
}

/// Fits one repairman model to a family of curves measured at different
/// known extra delays: curve c = (e_c, points) is modelled with delay
/// Z + e_c, sharing S and Z. Seed 002 fitted one delay's curve and
/// predicted the others with its S; fitting them together uses every
/// point, which is what makes the fit determined on a machine with few
/// cores (two cores give each curve two points). `first` applies to each
/// curve; point indices in errors count through the curves in order.
pub fn fit_family(
    curves: &[(f64, Vec<(f64, f64)>)],
    options: &FitOptions,
) -> Result<Fit, FitError> {
    let mut pts = Vec::new();
    let mut counts = 0;
    let mut base = 0;
    for (e, points) in curves {
        check_delay(*e)?;
        let (p, c) = prepare(points, base, *e, options.first)?;
        pts.extend(p);
        counts += c;
        base += points.len();
    }
    solve_points(pts, counts, options)
}

/// A point as fitted: (cores, throughput, extra delay).
type Tagged = (u32, f64, f64);

/// Validates one curve's points (indices in errors offset by `base`),
/// sorts them by cores, keeps the `first` smallest core counts, and tags
/// them with `extra`; returns them and their number of distinct core counts.
fn prepare(
    points: &[(f64, f64)],
    base: usize,
    extra: f64,
    first: Option<usize>,
) -> Result<(Vec<Tagged>, usize), FitError> {
    let mut pts = Vec::with_capacity(points.len());
    for (i, &(n, x)) in points.iter().enumerate() {
        let index = base + i;
        if !(n.is_finite() && n.fract() == 0.0 && (1.0..=f64::from(MAX_CORES)).contains(&n)) {
            return Err(FitError::Cores { index, value: n });
        }
        if !(MIN_THROUGHPUT..=MAX_THROUGHPUT).contains(&x) {
            return Err(FitError::Throughput { index, value: x });
        }
        pts.push((n as u32, x, extra));
    }
    pts.sort_by_key(|&(n, _, _)| n); // stable: repeats keep their order
    let mut counts: Vec<u32> = pts.iter().map(|&(n, _, _)| n).collect();
    counts.dedup();
    if let Some(k) = first {
        if k == 0 {
            return Err(FitError::FirstZero);
        }
        if k > counts.len() {
            return Err(FitError::FirstTooLarge {
                first: k,
                available: counts.len(),
            });
        }
        let last = counts[k - 1];
        pts.retain(|&(n, _, _)| n <= last);
        counts.truncate(k);
    }
    Ok((pts, counts.len()))
}

/// The fit itself, over validated points with `counts` distinct (curve,
/// cores) pairs: on the throughputs divided by the largest, `top` (see
/// the module's "Scale"), then scaled back and checked for a valid
/// solution.
fn solve_points(pts: Vec<Tagged>, counts: usize, options: &FitOptions) -> Result<Fit, FitError> {
    let fixed = options.delay.map(check_delay).transpose()?;
    let parameters = if fixed.is_some() { 1 } else { 2 };
    if counts < parameters {
        return Err(FitError::TooFewPoints {
            core_counts: counts,
            parameters,
        });
    }
    let top = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    // Times scale the other way: a delay d in the data's unit is d·top in
    // the unit where the largest throughput is 1. One too long to be a
    // number there is too long for any throughput measured: the model's
    // throughput at N cores is at most N/Z.
    let to_unit = |d: f64| {
        let scaled = d * top;
        if scaled.is_finite() {
            Ok(scaled)
        } else {
            Err(FitError::DelayScale {
                delay: d,
                throughput: top,
            })
        }
    };
    let scaled: Vec<Tagged> = pts
        .iter()
        .map(|&(n, x, e)| Ok((n, x / top, to_unit(e)?)))
        .collect::<Result<_, FitError>>()?;
    let fixed_scaled = fixed.map(to_unit).transpose()?;
    let problem = Problem {
        pts: &scaled,
        fixed: fixed_scaled,
    };
    let (theta, iterations) = problem.best(options.max_iterations)?;
    let (s1, z1) = problem.params(&theta);
    let predicted1 = problem
        .eval(&theta, false)
        .ok_or(FitError::NotConverged {
            iterations: options.max_iterations,
        })?
        .0;
    // Back in the data's unit; a fixed delay exactly as given.
    let (s, z) = (s1 / top, fixed.unwrap_or(z1 / top));
    let model = Repairman::new(s, z).map_err(FitError::NoModel)?;
    // The relative residuals, the same in either unit.
    let miss = (scaled
        .iter()
        .zip(&predicted1)
        .map(|(p, f)| ((p.1 - f) / p.1).powi(2))
        .sum::<f64>()
        / scaled.len() as f64)
        .sqrt();
    // NaN (a residual that is not a number) misses as much as anything.
    if miss.is_nan() || miss > MAX_MISS {
        return Err(FitError::FarFromData {
            service: s,
            delay: z,
            miss,
        });
    }
    let predicted: Vec<f64> = predicted1.iter().map(|f| f * top).collect();
    let residuals: Vec<f64> = pts.iter().zip(&predicted).map(|(p, f)| p.1 - f).collect();
    // Sums of squares in the unit where they cannot overflow or underflow
    // before they are scaled back; R² is the same in either.
    let residuals1: Vec<f64> = scaled
        .iter()
        .zip(&predicted1)
        .map(|(p, f)| p.1 - f)
        .collect();
    let ss_res1: f64 = residuals1.iter().map(|r| r * r).sum();
    let mean1 = scaled.iter().map(|p| p.1).sum::<f64>() / scaled.len() as f64;
    let ss_tot1: f64 = scaled.iter().map(|p| (p.1 - mean1).powi(2)).sum();
    let (ss_res, ss_tot) = (ss_res1 * top * top, ss_tot1 * top * top);
    let all_equal = pts.iter().all(|p| p.1 == pts[0].1);
    Ok(Fit {
        model,
        delay_fixed: fixed.is_some(),
        first: options.first,
        points: pts.iter().map(|p| (p.0, p.1)).collect(),
        extra: pts.iter().map(|p| p.2).collect(),
        predicted,
        residuals,
        ss_res,
        ss_tot,
        r2: (!all_equal).then(|| 1.0 - ss_res1 / ss_tot1),
        parameters,
        iterations,
    })
}

/// The validated points — (cores, throughput, extra delay), each curve's
/// sorted by cores — and what is fixed. The parameter vector θ is (ln S)
/// with Z fixed, or (ln S, ln Z); a point's delay is Z + its extra.
struct Problem<'a> {
    pts: &'a [Tagged],
    fixed: Option<f64>,
}

/// Model values at the points, and their derivatives by each θ_j.
type Eval = (Vec<f64>, Vec<[f64; 2]>);

impl Problem<'_> {
    fn params(&self, theta: &[f64]) -> (f64, f64) {
        let s = theta[0].exp();
        (s, self.fixed.unwrap_or_else(|| theta[1].exp()))
    }

    /// X(N_i) at θ, with the Jacobian if asked; `None` if anything is not
    /// finite (a step too far). Each run of points with one extra delay
    /// (one curve) is evaluated along one Erlang-B recurrence.
    fn eval(&self, theta: &[f64], jacobian: bool) -> Option<Eval> {
        let (s, z) = self.params(theta);
        if !(s.is_finite() && s > 0.0 && z.is_finite()) {
            return None;
        }
        let mut f = Vec::with_capacity(self.pts.len());
        let mut jac = Vec::with_capacity(if jacobian { self.pts.len() } else { 0 });
        let mut start = 0;
        while start < self.pts.len() {
            let extra = self.pts[start].2;
            let len = self.pts[start..]
                .iter()
                .take_while(|p| p.2 == extra)
                .count();
            let curve = &self.pts[start..start + len];
            let zc = z + extra;
            let max = curve.last().map_or(1, |p| p.0);
            let mut pts = curve.iter().peekable();
            for (n, b) in erlang_b(zc / s, max).enumerate() {
                while let Some(&&(pn, _, _)) = pts.peek() {
                    if pn as usize != n {
                        break;
                    }
                    pts.next();
                    let x = (1.0 - b) / s;
                    f.push(x);
                    if jacobian {
                        let l = n as f64 - zc * x;
                        // By ln of this curve's delay; ln Z moves it by
                        // the share Z/(Z + extra).
                        let dzc = -b * l / s;
                        let share = if zc > 0.0 { z / zc } else { 1.0 };
                        jac.push([-x - dzc, dzc * share]);
                    }
                }
            }
            start += len;
        }
        let finite = f.iter().all(|v| v.is_finite()) && jac.iter().flatten().all(|v| v.is_finite());
        finite.then_some((f, jac))
    }

    fn ss(&self, f: &[f64]) -> f64 {
        self.pts.iter().zip(f).map(|(p, v)| (p.1 - v).powi(2)).sum()
    }

    /// Deterministic starting points: read off the data, then multiples.
    fn starts(&self) -> Vec<Vec<f64>> {
        let peak = self.pts.iter().map(|p| p.1).fold(0.0, f64::max);
        let s0 = 1.0 / peak;
        let (n1, e1) = (self.pts[0].0, self.pts[0].2);
        let first: Vec<f64> = self
            .pts
            .iter()
            .filter(|p| p.0 == n1 && p.2 == e1)
            .map(|p| p.1)
            .collect();
        let x1 = first.iter().sum::<f64>() / first.len() as f64;
        let z0 = (f64::from(n1) / x1 - s0 - e1).max(1e-3 * s0);
        match self.fixed {
            Some(_) => [1.0, 0.5, 2.0, 0.1, 10.0]
                .iter()
                .map(|m| vec![(s0 * m).ln()])
                .collect(),
            None => [
                (1.0, 1.0),
                (0.5, 1.0),
                (0.5, 2.0),
                (0.25, 4.0),
                (1.0, 0.25),
                (2.0, 1.0),
            ]
            .iter()
            .map(|(ms, mz)| vec![(s0 * ms).ln(), (z0 * mz).ln()])
            .collect(),
        }
    }

    /// The best converged result over all starts: (θ, iterations).
    fn best(&self, max_iterations: u32) -> Result<(Vec<f64>, u32), FitError> {
        let mut best: Option<(f64, Vec<f64>, u32)> = None;
        for start in self.starts() {
            if let Some((ss, theta, it)) = self.levenberg_marquardt(start, max_iterations) {
                if best.as_ref().is_none_or(|b| ss < b.0) {
                    best = Some((ss, theta, it));
                }
            }
        }
        best.map(|(_, theta, it)| (theta, it))
            .ok_or(FitError::NotConverged {
                iterations: max_iterations,
            })
    }

    /// One Levenberg–Marquardt descent from `theta`: (SS_res, θ,
    /// iterations) if it converged within `max_iterations`.
    fn levenberg_marquardt(
        &self,
        mut theta: Vec<f64>,
        max_iterations: u32,
    ) -> Option<(f64, Vec<f64>, u32)> {
        let p = theta.len();
        let scale: f64 = self.pts.iter().map(|q| q.1 * q.1).sum();
        let (mut f, mut jac) = self.eval(&theta, true)?;
        let mut ss = self.ss(&f);
        let mut lambda = 1e-3;
        for it in 1..=max_iterations {
            if ss <= 1e-30 * scale {
                return Some((ss, theta, it - 1)); // exact fit
            }
            // Normal equations: A = JᵀJ, g = Jᵀr with r = X_i − f_i.
            let mut a = [[0.0f64; 2]; 2];
            let mut g = [0.0f64; 2];
            for ((q, fi), ji) in self.pts.iter().zip(&f).zip(&jac) {
                let r = q.1 - fi;
                for j in 0..p {
                    g[j] += ji[j] * r;
                    for k in 0..p {
                        a[j][k] += ji[j] * ji[k];
                    }
                }
            }
            let top = (0..p).map(|j| a[j][j]).fold(0.0, f64::max);
            if top == 0.0 {
                return Some((ss, theta, it)); // flat: nothing moves the model
            }
            // Marquardt's scaling by the diagonal, floored so that a
            // parameter the data barely see still gets damped.
            let d: Vec<f64> = (0..p).map(|j| a[j][j].max(1e-12 * top)).collect();
            loop {
                let step = solve(&a, &g, &d, lambda, p);
                let trial: Option<Vec<f64>> = step
                    .as_ref()
                    .map(|st| theta.iter().zip(st).map(|(t, s)| t + s).collect());
                let accepted = trial
                    .as_ref()
                    .and_then(|tr| self.eval(tr, true))
                    .map(|(tf, tj)| (self.ss(&tf), tf, tj))
                    .filter(|(tss, _, _)| *tss < ss);
                match accepted {
                    Some((tss, tf, tj)) => {
                        let small_step = step.iter().flatten().all(|s| s.abs() < 1e-12);
                        let small_gain = ss - tss <= 1e-15 * ss;
                        theta = trial.unwrap_or(theta);
                        f = tf;
                        jac = tj;
                        ss = tss;
                        lambda = (lambda / 10.0).max(1e-15);
                        if small_step || small_gain {
                            return Some((ss, theta, it));
                        }
                        break;
                    }
                    None => {
                        lambda *= 10.0;
                        if lambda > 1e20 {
                            // No step downhill at all: a minimum to
                            // machine precision.
                            return Some((ss, theta, it));
                        }
                    }
                }
            }
        }
        None
    }
}

/// Solves (A + λ·diag(d)) δ = g for p = 1 or 2; `None` if singular.
fn solve(a: &[[f64; 2]; 2], g: &[f64; 2], d: &[f64], lambda: f64, p: usize) -> Option<Vec<f64>> {
    let a00 = a[0][0] + lambda * d[0];
    if p == 1 {
        return (a00 > 0.0).then(|| vec![g[0] / a00]);
    }
    let a11 = a[1][1] + lambda * d[1];
    let det = a00 * a11 - a[0][1] * a[1][0];
    (det > 0.0 && det.is_finite()).then(|| {
        vec![
            (g[0] * a11 - a[0][1] * g[1]) / det,
            (a00 * g[1] - a[1][0] * g[0]) / det,
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobian_matches_finite_differences() {
        // One curve, and a family of three with extra delays.
        let one: Vec<(u32, f64, f64)> = (1..=20).map(|n| (n, 1.0, 0.0)).collect();
        let family: Vec<(u32, f64, f64)> = [0.0, 250.0, 4000.0]
            .iter()
            .flat_map(|&e| (1..=8).map(move |n| (n, 1.0, e)))
            .collect();
        for (pts, fixed) in [
            (&one, None),
            (&one, Some(900.0)),
            (&family, None),
            (&family, Some(900.0)),
        ] {
            let pr = Problem { pts, fixed };
            let theta: Vec<f64> = match fixed {
                None => vec![300f64.ln(), 1500f64.ln()],
                Some(_) => vec![300f64.ln()],
            };
            let (_, jac) = pr.eval(&theta, true).unwrap();
            for j in 0..theta.len() {
                let h = 1e-6;
                let mut up = theta.clone();
                up[j] += h;
                let mut down = theta.clone();
                down[j] -= h;
                let fu = pr.eval(&up, false).unwrap().0;
                let fd = pr.eval(&down, false).unwrap().0;
                let (f, _) = pr.eval(&theta, false).unwrap();
                for i in 0..pts.len() {
                    let numeric = (fu[i] - fd[i]) / (2.0 * h);
                    let analytic = jac[i][j];
                    // Rounding in the difference is about ε·X/h, so allow
                    // a little of X besides a relative error.
                    assert!(
                        (numeric - analytic).abs() <= 1e-6 * numeric.abs() + 1e-9 * f[i],
                        "point {i}, θ{j}: {numeric} vs {analytic}"
                    );
                }
            }
        }
    }
}
