//! The machine-repairman model with a constant service time: M/D/1//N.
//!
//! [`super::repairman`] assumes the lock is held for an exponentially
//! distributed time of mean S. A big lock whose holding time is the same
//! every time is the finite-source queue with deterministic service,
//! M/D/1//N, whose throughput comes out a little higher near the knee
//! (less variance in the service, less queueing: up to 6 % in the cases
//! the tests try); its exact value is what
//! [`Repairman::throughput_constant`] computes, and what `locklab sim
//! spin`'s simulator is held to for a constant critical section.
//!
//! # The chain at departures
//!
//! Looked at just after each release, the system is a Markov chain on k,
//! the cores still holding or waiting (0 ≤ k ≤ N − 1). A core outside the
//! lock comes back after an exponential delay of mean Z, so during one
//! service of length S each of them arrives with probability
//! q = 1 − e^(−S/Z), independently:
//!
//! ```text
//! k ≥ 1:  k' = k − 1 + A,  A ~ Binomial(N − k, q)   (the next service starts at once)
//! k = 0:  k' = A,          A ~ Binomial(N − 1, q)   (the lock idles until one core comes,
//!                                                    then serves it)
//! ```
//!
//! (Kleinrock, *Queueing Systems* vol. 1, 1975, §5 for the embedded chain
//! of M/G/1, of which this is the finite-source case.) The chain never
//! moves down by more than one, so its balance across the cut between
//! n − 1 and n gives each probability from those below it:
//!
//! ```text
//! π_n · P(n → n − 1) = Σ_{i<n} π_i · P(i → ≥ n),   P(n → n − 1) = (1 − q)^(N − n)
//! ```
//!
//! a sum of positive terms (no cancellation). The lock is idle only after
//! a release that leaves k = 0, for the first of N exponential delays,
//! Z/N on average, so a release comes every S + π_0·Z/N and
//!
//! ```text
//! X(N) = 1 / (S + π_0 · Z / N).
//! ```
//!
//! Logarithms throughout (π_n spans hundreds of orders of magnitude when
//! S ≫ Z) keep every step finite; the cost is O(N²) time and O(N) space,
//! so N is limited to [`MAX_CONSTANT_CORES`].

use super::error::{check_cores, ModelError};
use super::repairman::Repairman;

/// Most cores [`Repairman::throughput_constant`] solves for: its O(N²)
/// steps take about a second at the limit.
pub const MAX_CONSTANT_CORES: u32 = 10_000;

impl Repairman {
    /// X(N) when every acquisition holds the lock for exactly S (delays
    /// still exponential of mean Z): the exact throughput of M/D/1//N
    /// (see [`super::constant`]).
    pub fn throughput_constant(&self, cores: u32) -> Result<f64, ModelError> {
        let n = check_cores(cores)?;
        if n > MAX_CONSTANT_CORES {
            return Err(ModelError::TooManyCoresConstant(n));
        }
        let (s, z) = (self.service(), self.delay());
        if z == 0.0 {
            // Every core is back at once: the lock never idles.
            return Ok(1.0 / s);
        }
        let n_us = n as usize;
        // ln(1 − q) = −S/Z and ln q, both exact in floating point terms.
        let ln_stay = -s / z;
        let ln_q = (-(-s / z).exp_m1()).ln();
        // ln π_n (unnormalised, π_0 = 1) and the log-sums of the flows
        // into each cut from below, accumulated as each π_i is known.
        let mut ln_pi = vec![f64::NEG_INFINITY; n_us];
        let mut inflow = vec![f64::NEG_INFINITY; n_us];
        ln_pi[0] = 0.0;
        for i in 0..n_us {
            if i > 0 {
                // P(i → i − 1) = (1 − q)^(N − i): no arrival at all.
                ln_pi[i] = inflow[i] - f64::from(n - i as u32) * ln_stay;
            }
            // From i, A ~ Binomial(m, q) with k' = A (i = 0) or
            // i − 1 + A; push π_i · P(i → ≥ c) into every cut c > i.
            let m = if i == 0 { n - 1 } else { n - i as u32 };
            let base = if i == 0 { 0 } else { i - 1 };
            let tail = binomial_ln_tail(m, ln_q, ln_stay);
            for (c, flow) in inflow.iter_mut().enumerate().skip(i + 1) {
                // k' ≥ c  ⟺  A ≥ c − base.
                let a = c - base;
                if a < tail.len() {
                    *flow = ln_add(*flow, ln_pi[i] + tail[a]);
                }
            }
        }
        let ln_total = ln_pi
            .iter()
            .fold(f64::NEG_INFINITY, |acc, &x| ln_add(acc, x));
        let pi0 = (-ln_total).exp();
        let x = 1.0 / (s + pi0 * (z / f64::from(n)));
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(ModelError::Unrepresentable {
                cores: n,
                service: s,
                delay: z,
            })
        }
    }
}

/// ln P(A ≥ a) for a = 0 … m, A ~ Binomial(m, q), from ln q and ln(1 − q):
/// each point's probability in logarithms, summed from the top down.
fn binomial_ln_tail(m: u32, ln_q: f64, ln_stay: f64) -> Vec<f64> {
    let mut ln_pmf = Vec::with_capacity(m as usize + 1);
    // ln C(m, a), built up one factor (m − a + 1)/a at a time.
    let mut ln_c = 0.0;
    for a in 0..=m {
        if a > 0 {
            ln_c += (f64::from(m - a + 1) / f64::from(a)).ln();
        }
        ln_pmf.push(ln_c + f64::from(a) * ln_q + f64::from(m - a) * ln_stay);
    }
    let mut tail = vec![f64::NEG_INFINITY; m as usize + 1];
    let mut acc = f64::NEG_INFINITY;
    for a in (0..=m as usize).rev() {
        acc = ln_add(acc, ln_pmf[a]);
        tail[a] = acc;
    }
    tail
}

/// ln(eˣ + eʸ), exact where one of them is −∞.
fn ln_add(x: f64, y: f64) -> f64 {
    let (hi, lo) = if x >= y { (x, y) } else { (y, x) };
    if lo == f64::NEG_INFINITY {
        hi
    } else {
        hi + (lo - hi).exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One core: X = 1/(S + Z), whatever the service distribution.
    #[test]
    fn one_core_goes_round_in_s_plus_z() {
        let m = Repairman::new(3.0, 5.0).unwrap();
        assert!((m.throughput_constant(1).unwrap() * 8.0 - 1.0).abs() < 1e-12);
    }

    /// Two cores by hand: from k = 0 the other core arrives during the
    /// service with probability q, from k = 1 (one waiting, one out) too;
    /// so π_1/π_0 = q/(1 − q) and X = 1/(S + π_0·Z/2).
    #[test]
    fn two_cores_match_the_chain_solved_by_hand() {
        let (s, z): (f64, f64) = (1.0, 2.0);
        let q = 1.0 - (-s / z).exp();
        let pi0 = 1.0 / (1.0 + q / (1.0 - q));
        let want = 1.0 / (s + pi0 * z / 2.0);
        let got = Repairman::new(s, z)
            .unwrap()
            .throughput_constant(2)
            .unwrap();
        assert!((got / want - 1.0).abs() < 1e-12, "{got} against {want}");
    }

    /// Against the full N × N transition matrix of the chain at releases,
    /// solved by power iteration outside locklab (binomial probabilities
    /// summed per row, iterated to 1e-15): releases per 10⁹ time units.
    #[test]
    fn it_matches_the_full_chain_solved_independently() {
        let cases = [
            (2000.0, 2, 622_459.0),
            (2000.0, 3, 836_553.0),
            (2000.0, 4, 953_145.0),
            (2000.0, 6, 999_269.0),
            (6000.0, 4, 546_262.0),
            (6000.0, 8, 923_569.0),
        ];
        for (z, n, want) in cases {
            let got = Repairman::new(1000.0, z)
                .unwrap()
                .throughput_constant(n)
                .unwrap()
                * 1e9;
            assert!(
                (got - want).abs() <= 0.5,
                "Z {z}, N {n}: {got} against {want}"
            );
        }
    }

    /// The bounds hold, X rises with N to the lock's 1/S, and a constant
    /// service queues less than an exponential one of the same mean.
    #[test]
    fn it_stays_under_the_bounds_and_above_the_exponential_model() {
        for (s, z) in [(1.0, 0.5), (1.0, 2.0), (1.0, 6.0), (358.0, 4000.0)] {
            let m = Repairman::new(s, z).unwrap();
            let mut last = 0.0;
            for n in 1..=64 {
                let x = m.throughput_constant(n).unwrap();
                assert!(x <= m.throughput_bound(n) * (1.0 + 1e-12), "{s} {z} {n}");
                assert!(x >= m.throughput(n).unwrap() * (1.0 - 1e-12), "{s} {z} {n}");
                assert!(x >= last * (1.0 - 1e-12), "{s} {z} {n}");
                last = x;
            }
            assert!((last * s - 1.0).abs() < 0.01, "{s} {z}: {last}");
        }
    }

    /// No delay: the lock never idles. A delay far longer than S: the
    /// cores rarely meet, X ≈ N/(S + Z). Extremes stay finite.
    #[test]
    fn extremes_are_finite_and_right() {
        let m = Repairman::new(2.0, 0.0).unwrap();
        assert_eq!(m.throughput_constant(7).unwrap(), 0.5);
        let m = Repairman::new(1.0, 1e6).unwrap();
        let x = m.throughput_constant(10).unwrap();
        assert!((x * (1e6 + 1.0) / 10.0 - 1.0).abs() < 1e-4, "{x}");
        // S ≫ Z: (1 − q)^N underflows an f64 many times over.
        let m = Repairman::new(1e4, 1.0).unwrap();
        let x = m.throughput_constant(2000).unwrap();
        assert!((x * 1e4 - 1.0).abs() < 1e-12, "{x}");
    }

    #[test]
    fn too_many_cores_are_refused_with_the_limit() {
        let m = Repairman::new(1.0, 1.0).unwrap();
        let e = m.throughput_constant(MAX_CONSTANT_CORES + 1).unwrap_err();
        assert_eq!(e, ModelError::TooManyCoresConstant(MAX_CONSTANT_CORES + 1));
        assert!(e.to_string().contains("allowed 1 to 10000"), "{e}");
        assert_eq!(m.throughput_constant(0), Err(ModelError::NoCores));
    }
}
