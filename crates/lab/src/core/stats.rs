//! How sure a ratio is: the statistics behind every verdict and
//! comparison the lab prints.
//!
//! Two kinds of question, two procedures:
//!
//! - **Paired** ([`paired_ratio`]): two contenders measured in the same
//!   run, their repetitions interleaved (repetition *i* of each ran one
//!   after the other, so a disturbance of the machine during that minute
//!   touches both). The ratio of repetition *i* of B to repetition *i* of
//!   A cancels what they shared; the estimate is the geometric mean of
//!   those per-repetition ratios, and its 95 % interval comes from a
//!   bootstrap over the repetitions (resampling whole pairs). This is the
//!   paired design hyperfine and criterion do not have, since they time
//!   one command after another.
//! - **Unpaired** ([`unpaired_ratio`]): two runs made at different times
//!   (`locklab compare`): nothing is shared, so each run's repetitions are
//!   resampled on their own and the interval is that of the ratio of their
//!   geometric means.
//!
//! Either way the two are **separated** when the whole interval lies on
//! one side of 1, and **tied** otherwise; with one repetition (or two
//! values that are all the same) the spread is unknown, said as such, and
//! nothing is separated. The bootstrap is seeded, so a stored run gives
//! the same verdict every time it is shown.
//!
//! Percentile bootstrap intervals are too narrow for very few
//! repetitions (with three, the interval is close to the range of the
//! three ratios); a separation with three repetitions says "all three
//! agreed", no more, and the verdict shows the count.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// How many bootstrap resamples an interval takes.
const RESAMPLES: usize = 2000;

/// The interval's coverage.
pub const LEVEL: f64 = 0.95;

/// A ratio B/A with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// The estimate (geometric mean of the ratios, or ratio of geometric
    /// means).
    pub ratio: f64,
    /// Lower end of the 95 % interval (NaN when the spread is unknown).
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Repetitions behind it (pairs, or the smaller run's count).
    pub n: usize,
}

impl Ratio {
    /// Whether the interval is known (two or more repetitions).
    pub fn spread_known(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// Whether the interval lies wholly above 1 (B larger) or below it (B
    /// smaller); `None` if it holds 1 or is unknown.
    pub fn separated(&self) -> Option<std::cmp::Ordering> {
        if !self.spread_known() {
            None
        } else if self.lo > 1.0 {
            Some(std::cmp::Ordering::Greater)
        } else if self.hi < 1.0 {
            Some(std::cmp::Ordering::Less)
        } else {
            None
        }
    }

    /// The reciprocal ratio, A/B, with its interval.
    pub fn inverse(&self) -> Ratio {
        Ratio {
            ratio: 1.0 / self.ratio,
            lo: 1.0 / self.hi,
            hi: 1.0 / self.lo,
            n: self.n,
        }
    }

    /// `1.23× (1.10–1.31)`, or `1.23× (spread unknown: 1 repetition)`.
    pub fn text(&self) -> String {
        if self.spread_known() {
            format!(
                "{}× ({}–{})",
                sig3(self.ratio),
                sig3(self.lo),
                sig3(self.hi)
            )
        } else {
            format!(
                "{}× (spread unknown: {} repetition{})",
                sig3(self.ratio),
                self.n,
                if self.n == 1 { "" } else { "s" }
            )
        }
    }

    /// As JSON: `{"ratio", "lo", "hi", "n", "separated"}` (NaN as null).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ratio": finite(self.ratio),
            "lo": finite(self.lo),
            "hi": finite(self.hi),
            "n": self.n,
            "separated": self.separated().is_some(),
        })
    }
}

fn finite(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::Value::from(x)
    } else {
        serde_json::Value::Null
    }
}

/// Three significant figures, for ratios.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a >= 1e-3 {
        // Three significant figures however small: a collapse to a
        // ten-thousandth is not "0.000".
        let decimals = (2 - a.log10().floor() as i32).max(3) as usize;
        format!("{x:.decimals$}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{x:.2e}")
    }
}

/// Geometric mean of positive values (NaN if any is not positive and
/// finite, or there are none).
pub fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() || xs.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The `q` quantile (0–1) of sorted values, linearly interpolated.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, f) = (pos.floor() as usize, pos.fract());
    if i + 1 < sorted.len() {
        sorted[i] * (1.0 - f) + sorted[i + 1] * f
    } else {
        sorted[i]
    }
}

/// A seed from the values themselves, so that the same data always gives
/// the same interval.
fn seed_of(a: &[f64], b: &[f64]) -> u64 {
    a.iter().chain(b).fold(0x9e37_79b9_7f4a_7c15u64, |h, x| {
        (h ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The percentile interval of `stat` over `RESAMPLES` resamples.
fn interval(mut stat: impl FnMut(&mut SmallRng) -> f64, seed: u64) -> (f64, f64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut s: Vec<f64> = (0..RESAMPLES).map(|_| stat(&mut rng)).collect();
    s.retain(|x| x.is_finite());
    if s.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    s.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    (quantile(&s, tail), quantile(&s, 1.0 - tail))
}

/// B/A paired by repetition: `a[i]` and `b[i]` were measured side by side.
/// Pairs where either value is not positive and finite are left out.
pub fn paired_ratio(a: &[f64], b: &[f64]) -> Ratio {
    let logs: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.is_finite() && y.is_finite() && **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (y / x).ln())
        .collect();
    let n = logs.len();
    if n == 0 {
        return Ratio {
            ratio: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n,
        };
    }
    let ratio = (logs.iter().sum::<f64>() / n as f64).exp();
    if n < 2 {
        return Ratio {
            ratio,
            lo: f64::NAN,
            hi: f64::NAN,
            n,
        };
    }
    let (lo, hi) = interval(
        |rng| {
            let s: f64 = (0..n).map(|_| logs[rng.random_range(0..n)]).sum();
            (s / n as f64).exp()
        },
        seed_of(a, b),
    );
    Ratio { ratio, lo, hi, n }
}

/// B/A for two independent samples: the ratio of geometric means, each
/// sample resampled on its own.
pub fn unpaired_ratio(a: &[f64], b: &[f64]) -> Ratio {
    let pos = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .copied()
            .filter(|x| x.is_finite() && *x > 0.0)
            .map(f64::ln)
            .collect()
    };
    let (la, lb) = (pos(a), pos(b));
    let n = la.len().min(lb.len());
    if n == 0 {
        return Ratio {
            ratio: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
            n,
        };
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ratio = (mean(&lb) - mean(&la)).exp();
    if n < 2 {
        return Ratio {
            ratio,
            lo: f64::NAN,
            hi: f64::NAN,
            n,
        };
    }
    let draw = |rng: &mut SmallRng, v: &[f64]| -> f64 {
        (0..v.len())
            .map(|_| v[rng.random_range(0..v.len())])
            .sum::<f64>()
            / v.len() as f64
    };
    let (lo, hi) = interval(
        |rng| {
            let ma = draw(rng, &la);
            let mb = draw(rng, &lb);
            (mb - ma).exp()
        },
        seed_of(a, b),
    );
    Ratio { ratio, lo, hi, n }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_figures_at_every_scale() {
        assert_eq!(sig3(1234.0), "1234");
        assert_eq!(sig3(12.34), "12.3");
        assert_eq!(sig3(1.234), "1.23");
        assert_eq!(sig3(0.5), "0.500");
        assert_eq!(sig3(0.0123), "0.0123");
        assert_eq!(sig3(0.00123), "0.00123");
        assert_eq!(sig3(0.000123), "1.23e-4");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(1.5e-9), "1.50e-9");
        assert_eq!(sig3(f64::NAN), "–");
    }

    #[test]
    fn a_clear_paired_difference_is_separated() {
        let a = [100.0, 103.0, 98.0, 101.0, 99.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let r = paired_ratio(&a, &b);
        assert!((r.ratio - 1.5).abs() < 1e-9);
        assert_eq!(r.separated(), Some(std::cmp::Ordering::Greater));
        assert_eq!(r.inverse().separated(), Some(std::cmp::Ordering::Less));
    }

    #[test]
    fn pairing_cancels_a_shared_drift() {
        // The machine slows down over the run; B is 10 % faster in every
        // repetition. Unpaired, the drift swamps the difference; paired,
        // it does not.
        let a = [100.0, 80.0, 60.0, 40.0, 120.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        assert!(paired_ratio(&a, &b).separated().is_some());
        assert!(unpaired_ratio(&a, &b).separated().is_none());
    }

    #[test]
    fn noise_without_a_difference_is_a_tie() {
        let a = [100.0, 104.0, 97.0, 102.0, 99.0];
        let b = [101.0, 98.0, 103.0, 99.0, 102.0];
        assert!(paired_ratio(&a, &b).separated().is_none());
        assert!(unpaired_ratio(&a, &b).separated().is_none());
    }

    #[test]
    fn one_repetition_has_no_spread() {
        let r = paired_ratio(&[1.0], &[2.0]);
        assert_eq!(r.ratio, 2.0);
        assert!(!r.spread_known());
        assert!(r.separated().is_none());
        assert!(r.text().contains("spread unknown: 1 repetition"));
    }

    #[test]
    fn unpaired_finds_a_planted_change() {
        let a = [10.0, 10.4, 9.8, 10.1, 9.9];
        let b = [12.0, 12.3, 11.9, 12.2, 11.8];
        let r = unpaired_ratio(&a, &b);
        assert!((r.ratio - 1.2).abs() < 0.02);
        assert_eq!(r.separated(), Some(std::cmp::Ordering::Greater));
        assert!(r.lo < r.ratio && r.ratio < r.hi);
    }

    #[test]
    fn bad_values_are_left_out_and_the_interval_is_stable() {
        let a = [1.0, f64::NAN, 2.0, 0.0];
        let b = [2.0, 3.0, 4.0, 5.0];
        let r = paired_ratio(&a, &b);
        assert_eq!(r.n, 2);
        assert_eq!(paired_ratio(&a, &b), r);
    }
}
