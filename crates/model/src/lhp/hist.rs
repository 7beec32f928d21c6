//! A log-bucketed histogram of response times: 32 buckets per doubling
//! (about 2 % relative resolution), exact count and mean.

use super::result::Percentiles;

const PER_OCTAVE: f64 = 32.0;
const BUCKETS: usize = 64 * 32;

#[derive(Debug, Clone)]
pub(crate) struct Hist {
    counts: Vec<u64>,
    n: u64,
    sum: f64,
}

impl Hist {
    pub(crate) fn new() -> Hist {
        Hist {
            counts: Vec::new(),
            n: 0,
            sum: 0.0,
        }
    }

    fn bucket(x: u64) -> usize {
        let v = (x.max(1) as f64).log2() * PER_OCTAVE;
        (v as usize).min(BUCKETS - 1)
    }

    pub(crate) fn record(&mut self, x: u64) {
        let b = Self::bucket(x);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.n += 1;
        self.sum += x as f64;
    }

    /// The value below which a share `q` of the samples lie (the bucket's
    /// geometric middle).
    fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let rank = (q * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return ((b as f64 + 0.5) / PER_OCTAVE).exp2();
            }
        }
        unreachable!("rank is at most the count")
    }

    pub(crate) fn percentiles(&self) -> Percentiles {
        Percentiles {
            count: self.n,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            mean_ns: if self.n == 0 {
                f64::NAN
            } else {
                self.sum / self.n as f64
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_the_bucket_resolution() {
        let mut h = Hist::new();
        for x in 1..=10_000u64 {
            h.record(x * 100);
        }
        let p = h.percentiles();
        assert_eq!(p.count, 10_000);
        assert!((p.p50_ns / 500_000.0 - 1.0).abs() < 0.025, "{p:?}");
        assert!((p.p99_ns / 990_000.0 - 1.0).abs() < 0.025, "{p:?}");
        assert!((p.mean_ns - 500_050.0).abs() < 1e-6);
        assert!(Hist::new().percentiles().p50_ns.is_nan());
    }
}
