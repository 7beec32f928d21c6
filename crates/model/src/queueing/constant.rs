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

use super::chain::{self, Solution};
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
        let n = check_constant_cores(cores)?;
        let (s, z) = (self.service(), self.delay());
        if z == 0.0 {
            // Every core is back at once: the lock never idles.
            return Ok(1.0 / s);
        }
        let x = throughput_of(s, z, n, &self.chain_at_releases(n));
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

    /// The steady state of `cores` cores when every acquisition holds the
    /// lock for exactly S: the throughput of
    /// [`throughput_constant`](Self::throughput_constant) and the share of
    /// time with k cores at the lock. An arrival finds k cores there as
    /// often as a release leaves k behind (each count is crossed as often
    /// up as down), and arrivals in state k come at rate (N − k)/Z, so
    /// P_k = X·Z·π_k/(N − k) for k < N, and P_N is the rest; the queue
    /// length, utilisation (X·S = 1 − P_0) and response time follow.
    pub fn solve_constant(&self, cores: u32) -> Result<Solution, ModelError> {
        let n = check_constant_cores(cores)?;
        let (s, z) = (self.service(), self.delay());
        let x = self.throughput_constant(n)?;
        let mut p = vec![0.0; n as usize + 1];
        if z == 0.0 {
            p[n as usize] = 1.0;
        } else {
            let ln_pi = self.chain_at_releases(n);
            let ln_total = ln_sum(&ln_pi);
            let mut below = 0.0;
            for (k, &l) in ln_pi.iter().enumerate() {
                p[k] = x * z * (l - ln_total).exp() / f64::from(n - k as u32);
                below += p[k];
            }
            p[n as usize] = (1.0 - below).max(0.0);
        }
        let queue: f64 = p.iter().enumerate().map(|(k, w)| k as f64 * w).sum();
        chain::finite(
            Solution {
                cores: n,
                utilization: 1.0 - p[0],
                probabilities: p,
                queue_length: queue,
                throughput: x,
                response: queue / x,
            },
            s,
            z,
        )
    }

    /// The fewest cores whose constant-service throughput reaches 95 % of
    /// the lock's peak 1/S; `None` if that takes more than
    /// [`MAX_CONSTANT_CORES`]. No N below 0.95·N* can reach it (X stays
    /// under N/(S + Z), whatever the service time's distribution), and X
    /// rises with N (the tests hold it to that), so doubling from there
    /// and then halving finds it in O(log N) solutions.
    pub fn cores_95_constant(&self) -> Option<u32> {
        let reaches = |n: u32| {
            self.throughput_constant(n)
                .is_ok_and(|x| x * self.service() >= 0.95)
        };
        let first = (0.95 * self.knee()).ceil().max(1.0);
        if first > f64::from(MAX_CONSTANT_CORES) {
            return None;
        }
        let mut hi = first as u32;
        let mut lo = hi - 1; // cannot reach (or 0)
        while !reaches(hi) {
            if hi == MAX_CONSTANT_CORES {
                return None;
            }
            lo = hi;
            hi = (hi * 2).min(MAX_CONSTANT_CORES);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if reaches(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }

    /// ln π_0 … ln π_(N−1), unnormalised (π_0 = 1): the chain at releases
    /// of N ≥ 1 cores, Z > 0 (module documentation).
    fn chain_at_releases(&self, n: u32) -> Vec<f64> {
        let (s, z) = (self.service(), self.delay());
        let n_us = n as usize;
        // ln(1 − q) = −S/Z and ln q, both exact in floating point terms.
        let ln_stay = -s / z;
        let ln_q = (-(-s / z).exp_m1()).ln();
        // ln π_n and the log-sums of the flows into each cut from below,
        // accumulated as each π_i is known.
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
        ln_pi
    }
}

/// N checked for the constant-service model.
fn check_constant_cores(cores: u32) -> Result<u32, ModelError> {
    let n = check_cores(cores)?;
    if n > MAX_CONSTANT_CORES {
        return Err(ModelError::TooManyCoresConstant(n));
    }
    Ok(n)
}

/// X = 1/(S + π_0·Z/N) from the chain's unnormalised logarithms.
fn throughput_of(s: f64, z: f64, n: u32, ln_pi: &[f64]) -> f64 {
    let pi0 = (-ln_sum(ln_pi)).exp();
    1.0 / (s + pi0 * (z / f64::from(n)))
}

/// ln Σ eˣ over `xs`.
fn ln_sum(xs: &[f64]) -> f64 {
    xs.iter().fold(f64::NEG_INFINITY, |acc, &x| ln_add(acc, x))
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

    /// The state distribution against a simulation of M/D/1//N written
    /// outside locklab (Python, an event loop over 4·10⁶ time units,
    /// exponential delays, constant service: the share of time with k
    /// cores at the lock, good to about ±0.001); one core is out
    /// Z/(S + Z) of the time; every distribution sums to 1 with
    /// utilisation X·S.
    #[test]
    fn the_state_distribution_matches_an_independent_simulation() {
        let cases: [(u32, f64, &[f64]); 2] = [
            (3, 2.0, &[0.1635, 0.4212, 0.3401, 0.0752]),
            (5, 6.0, &[0.3346, 0.3962, 0.2045, 0.0564, 0.0079, 0.0004]),
        ];
        for (n, z, want) in cases {
            let sol = Repairman::new(1.0, z).unwrap().solve_constant(n).unwrap();
            for (k, (p, w)) in sol.probabilities.iter().zip(want).enumerate() {
                assert!((p - w).abs() < 0.002, "N {n} Z {z}, P_{k}: {p} against {w}");
            }
        }
        let one = Repairman::new(3.0, 5.0).unwrap().solve_constant(1).unwrap();
        assert!((one.probabilities[0] - 5.0 / 8.0).abs() < 1e-12, "{one:?}");
        for (s, z) in [(1.0, 2.0), (358.0, 4000.0), (2.0, 0.0)] {
            for n in [1, 2, 8, 20] {
                let sol = Repairman::new(s, z).unwrap().solve_constant(n).unwrap();
                let total: f64 = sol.probabilities.iter().sum();
                assert!((total - 1.0).abs() < 1e-9, "{s} {z} {n}: {sol:?}");
                assert!(
                    (sol.utilization - sol.throughput * s).abs() < 1e-9,
                    "{sol:?}"
                );
            }
        }
    }

    /// cores_95 by its definition: the first N whose X·S reaches 0.95.
    #[test]
    fn cores_95_is_the_first_count_at_95_percent() {
        for (s, z) in [(1.0, 0.0), (1.0, 2.0), (1.0, 6.0), (358.0, 4000.0)] {
            let m = Repairman::new(s, z).unwrap();
            let first = (1..=200)
                .find(|&n| m.throughput_constant(n).unwrap() * s >= 0.95)
                .unwrap();
            assert_eq!(m.cores_95_constant(), Some(first), "{s} {z}");
        }
        assert_eq!(Repairman::new(1.0, 1e6).unwrap().cores_95_constant(), None);
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
