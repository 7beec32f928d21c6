//! The finite-source birth–death chain both lock models share.
//!
//! N cores; state k (0 ≤ k ≤ N) is the number of cores holding or waiting
//! for the lock. A core outside the lock asks for it after an
//! exponentially distributed delay of mean Z, so in state k requests
//! arrive at rate (N − k)/Z. The lock serves one core at a time; in state
//! k ≥ 1 one acquisition keeps it busy for an exponentially distributed
//! time of mean S_k, so departures happen at rate 1/S_k. In steady state
//! the flow across each cut between k and k + 1 balances:
//!
//! ```text
//! P_k · (N − k)/Z = P_{k+1} / S_{k+1}
//! P_{k+1} = P_k · (N − k) · S_{k+1} / Z
//! ```
//!
//! so P_k ∝ N!/(N − k)! · Π_{i=1..k} S_i / Z^k. For constant S_k = S that
//! is seed 002's equation (1), the machine-repairman distribution; the
//! ticket model puts S_k = S + C·k.
//!
//! Numerics: the unnormalised weights over- or underflow long before the
//! range this module promises (N up to 10⁷, S/Z from 10⁻⁶ to 10⁶ and
//! beyond), so they are accumulated as logarithms, shifted by their
//! maximum and only then exponentiated and normalised. Utilisation is
//! summed over k ≥ 1 rather than taken as 1 − P_0, which would cancel to
//! nothing when the lock is almost always free. Z = 0 is exact: every core
//! is always at the lock, all mass is on k = N.

use super::error::ModelError;

/// The steady state of N cores on one lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// N.
    pub cores: u32,
    /// P_0 … P_N: the probability that k cores hold or wait for the lock.
    pub probabilities: Vec<f64>,
    /// L = Σ k·P_k: mean number of cores holding or waiting for the lock.
    pub queue_length: f64,
    /// U = 1 − P_0: fraction of time the lock is busy.
    pub utilization: f64,
    /// X = Σ_{k≥1} P_k / S_k: acquisitions per time unit.
    pub throughput: f64,
    /// R = L / X: mean time from asking for the lock to releasing it.
    pub response: f64,
}

/// Solves the chain for `cores` ≥ 1 cores with mean delay `delay` ≥ 0 and
/// busy time `service(k)` > 0 in state k (called for k = 1 ..= cores).
/// Callers validate the parameters.
pub(crate) fn solve(cores: u32, delay: f64, service: impl Fn(u32) -> f64) -> Solution {
    let n = cores as usize;
    let mut p = vec![0.0; n + 1];
    if delay == 0.0 {
        p[n] = 1.0;
        let s = service(cores);
        return Solution {
            cores,
            probabilities: p,
            queue_length: f64::from(cores),
            utilization: 1.0,
            throughput: 1.0 / s,
            response: f64::from(cores) * s,
        };
    }
    // Log-weights: ln w_0 = 0, ln w_{k+1} = ln w_k + ln(N − k) + ln S_{k+1} − ln Z.
    let ln_z = delay.ln();
    let mut lw = 0.0f64;
    let mut max = 0.0f64;
    for k in 0..n {
        lw += ((n - k) as f64).ln() + service(k as u32 + 1).ln() - ln_z;
        p[k + 1] = lw;
        max = max.max(lw);
    }
    let mut total = 0.0;
    // p[0] already holds ln w_0 = 0.
    for w in p.iter_mut() {
        *w = (*w - max).exp();
        total += *w;
    }
    let (mut busy, mut queue, mut rate) = (0.0, 0.0, 0.0);
    for (k, w) in p.iter_mut().enumerate() {
        *w /= total;
        if k >= 1 {
            busy += *w;
            queue += k as f64 * *w;
            rate += *w / service(k as u32);
        }
    }
    Solution {
        cores,
        probabilities: p,
        queue_length: queue,
        utilization: busy,
        throughput: rate,
        response: queue / rate,
    }
}

/// `sol`, if every number in it is finite; else the guard's error. The
/// models' domain checks should leave nothing for it to catch: it is here
/// so that no parameters, whatever a future change misses, can make a
/// solution with NaN or an infinity in it.
pub(crate) fn finite(sol: Solution, service: f64, delay: f64) -> Result<Solution, ModelError> {
    let ok = [
        sol.queue_length,
        sol.utilization,
        sol.throughput,
        sol.response,
    ]
    .iter()
    .chain(&sol.probabilities)
    .all(|x| x.is_finite());
    if ok {
        Ok(sol)
    } else {
        Err(ModelError::Unrepresentable {
            cores: sol.cores,
            service,
            delay,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cores_match_the_hand_solved_chain() {
        // S = Z = 1, N = 2: weights 1, 2·1, 2·1·1 → 1/5, 2/5, 2/5.
        let s = solve(2, 1.0, |_| 1.0);
        let want = [0.2, 0.4, 0.4];
        for (p, w) in s.probabilities.iter().zip(want) {
            assert!((p - w).abs() < 1e-15, "{:?}", s.probabilities);
        }
        assert!((s.queue_length - 1.2).abs() < 1e-15);
        assert!((s.utilization - 0.8).abs() < 1e-15);
        assert!((s.throughput - 0.8).abs() < 1e-15);
        assert!((s.response - 1.5).abs() < 1e-15);
    }

    #[test]
    fn state_dependent_service_enters_at_the_state_it_names() {
        // N = 2, Z = 1, S_1 = 1, S_2 = 3: weights 1, 2·1, 2·1·1·3 = 6 → 1/9, 2/9, 6/9;
        // X = (2/9)/1 + (6/9)/3 = 4/9.
        let s = solve(2, 1.0, |k| if k == 1 { 1.0 } else { 3.0 });
        let want = [1.0 / 9.0, 2.0 / 9.0, 6.0 / 9.0];
        for (p, w) in s.probabilities.iter().zip(want) {
            assert!((p - w).abs() < 1e-15, "{:?}", s.probabilities);
        }
        assert!((s.throughput - 4.0 / 9.0).abs() < 1e-15);
    }

    #[test]
    fn zero_delay_puts_every_core_at_the_lock() {
        let s = solve(5, 0.0, |_| 2.0);
        assert_eq!(s.probabilities, vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        assert_eq!(s.queue_length, 5.0);
        assert_eq!(s.utilization, 1.0);
        assert_eq!(s.throughput, 0.5);
        assert_eq!(s.response, 10.0);
    }

    #[test]
    fn extreme_ratios_stay_finite() {
        for (s, z) in [(1e-6, 1.0), (1e6, 1.0), (1.0, 1e-300), (1e300, 1e-300)] {
            let sol = solve(10_000, z, |_| s);
            assert!(sol.probabilities.iter().all(|p| p.is_finite() && *p >= 0.0));
            assert!(sol.throughput.is_finite() && sol.throughput > 0.0);
            assert!(sol.response.is_finite());
        }
    }
}
