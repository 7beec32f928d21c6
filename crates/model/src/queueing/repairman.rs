//! The machine-repairman model of a big lock.
//!
//! N machines break down independently and wait for one repairman; here N
//! cores each work outside the lock for a mean delay Z, then queue for one
//! lock that serves an acquisition in a mean service time S. This is the
//! finite-source single-server queue M/M/1//N (Kleinrock, *Queueing
//! Systems* vol. 1, 1975, §3.8), which seed 002 (Elphinstone et al., *An
//! Evaluation of Coarse-Grained Locking for Multicore Microkernels*, 2016,
//! section 4) uses for seL4's big kernel lock: S the time the kernel holds
//! the lock per system call, Z the user-level time between system calls.
//! Its state probabilities are seed 002's equation (1) (the formulas
//! themselves are lost in locklab's copy of the seed; these are the
//! model's textbook forms),
//!
//! ```text
//! P_k = P_0 · N!/(N − k)! · (S/Z)^k,    k = 0 … N,
//! ```
//!
//! its queue length L = Σ k·P_k equation (4) and its throughput
//! X = (1 − P_0)/S equation (5). [`super::chain`] solves it.
//!
//! Two closed forms help beyond that:
//!
//! - Counting the cores *outside* the lock instead, j = N − k, the
//!   distribution is a Poisson distribution of mean a = Z/S truncated to
//!   0 … N, so P_0 is Erlang's loss formula B(N, a), which the recurrence
//!   B(0) = 1, B(n) = a·B(n−1) / (n + a·B(n−1)) computes stably in O(N).
//!   [`Repairman::throughput`], [`Repairman::throughput_curve`] and
//!   [`Repairman::cores_95`] use it; the tests check it against the full
//!   solution.
//! - X(N) is bounded by min(N/(S + Z), 1/S): no core can go round faster
//!   than S + Z, and the lock cannot serve faster than 1/S. The two lines
//!   cross at the knee N* = (S + Z)/S (Lazowska, Zahorjan, Graham &
//!   Sevcik, *Quantitative System Performance*, 1984, ch. 5, asymptotic
//!   bounds), where contention starts to bite.
//!
//! Assumptions: the lock's service time does not depend on how many cores
//! wait (seed 002, section 4.2: true of a scalable queue lock such as
//! seL4's CLH lock and of a kernel that shares no other mutable state; not
//! of a ticket lock, see [`super::ticket`]); and, as any such Markov model
//! does, delays and service times are
//! exponentially distributed and independent; the cores are identical and
//! nothing but the lock limits them. X(N) then never decreases with N: a
//! big lock under this model plateaus, it does not collapse.

use super::chain::{self, Solution};
use super::error::{
    check_cores, check_delay, check_response, check_scale, check_service, ModelError, MAX_CORES,
};

/// A big lock with service time S and mean delay Z between a core's
/// acquisitions (in one time unit of the caller's choosing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Repairman {
    service: f64,
    delay: f64,
}

/// The share of the lock's peak throughput 1/S that [`Repairman::cores_95`] asks for.
const NEAR_PEAK: f64 = 0.95;

impl Repairman {
    /// The model with service time `service` (S > 0) and mean delay
    /// `delay` (Z ≥ 0), both finite, with 1/S and Z/S finite too (see
    /// [`super::error`]).
    pub fn new(service: f64, delay: f64) -> Result<Self, ModelError> {
        let (service, delay) = (check_service(service)?, check_delay(delay)?);
        check_scale(service, delay)?;
        Ok(Self { service, delay })
    }

    /// S.
    pub fn service(&self) -> f64 {
        self.service
    }

    /// Z.
    pub fn delay(&self) -> f64 {
        self.delay
    }

    /// The steady state of `cores` cores: state probabilities, queue
    /// length, utilisation, throughput and response time. N·S must be
    /// finite (the longest response time).
    pub fn solve(&self, cores: u32) -> Result<Solution, ModelError> {
        let cores = check_response(check_cores(cores)?, self.service, 0.0)?;
        let s = self.service;
        chain::finite(chain::solve(cores, self.delay, |_| s), s, self.delay)
    }

    /// X(N) alone, from Erlang's loss formula: O(N) time, no allocation.
    pub fn throughput(&self, cores: u32) -> Result<f64, ModelError> {
        let cores = check_cores(cores)?;
        let b = erlang_b(self.offered(), cores).last().unwrap_or(1.0);
        Ok((1.0 - b) / self.service)
    }

    /// X(1), X(2), …, X(`max_cores`) in one O(N) pass.
    pub fn throughput_curve(&self, max_cores: u32) -> Result<Vec<f64>, ModelError> {
        let max_cores = check_cores(max_cores)?;
        Ok(erlang_b(self.offered(), max_cores)
            .skip(1)
            .map(|b| (1.0 - b) / self.service)
            .collect())
    }

    /// The asymptotic bound min(N/(S + Z), 1/S) that X(N) stays under,
    /// as min(N, N*)/(N*·S) with the knee N* = 1 + Z/S, which is finite
    /// wherever the model is (S + Z itself may overflow).
    pub fn throughput_bound(&self, cores: u32) -> f64 {
        let knee = self.knee();
        f64::from(cores).min(knee) / knee / self.service
    }

    /// The knee N* = (S + Z)/S, where the two asymptotes of X(N) cross,
    /// computed as 1 + Z/S (finite for every model [`Repairman::new`]
    /// accepts, even where S + Z is not).
    pub fn knee(&self) -> f64 {
        1.0 + self.delay / self.service
    }

    /// The fewest cores N whose throughput X(N) reaches 95 % of the
    /// lock's peak 1/S; `None` if that takes more than [`MAX_CORES`]
    /// (Z/S beyond about 10⁷).
    pub fn cores_95(&self) -> Option<u32> {
        // U(N) = 1 − B(N) ≥ 0.95, and B falls with N.
        erlang_b(self.offered(), MAX_CORES)
            .position(|b| 1.0 - b >= NEAR_PEAK)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n >= 1)
    }

    /// Erlang's offered load a = Z/S: the mean number of cores outside
    /// the lock if it never made anyone wait.
    fn offered(&self) -> f64 {
        self.delay / self.service
    }
}

/// B(0, a), B(1, a), …, B(max, a): Erlang's loss formula for offered load
/// `a`, which is the repairman's P_0 for each N. Every step divides
/// positive numbers, so the recurrence neither cancels nor overflows
/// (a·B ≤ a).
pub(crate) fn erlang_b(a: f64, max: u32) -> ErlangB {
    ErlangB {
        a,
        n: 0,
        max,
        b: 1.0,
    }
}

/// The iterator of [`erlang_b`]; forward only, since each term needs the
/// one before.
pub(crate) struct ErlangB {
    a: f64,
    n: u32,
    max: u32,
    b: f64,
}

impl Iterator for ErlangB {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        if self.n > self.max {
            return None;
        }
        if self.n > 0 {
            let ab = self.a * self.b;
            self.b = ab / (f64::from(self.n) + ab);
        }
        self.n += 1;
        Some(self.b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_b_matches_the_textbook_values() {
        // B(1, a) = a/(1 + a); B(2, 1) = (1/2)/(1 + 1 + 1/2) = 1/5.
        let b: Vec<f64> = erlang_b(1.0, 2).collect();
        assert_eq!(b[0], 1.0);
        assert!((b[1] - 0.5).abs() < 1e-15);
        assert!((b[2] - 0.2).abs() < 1e-15);
    }

    #[test]
    fn knee_and_cores_95_of_simple_cases() {
        let m = Repairman::new(1.0, 0.0).unwrap();
        assert_eq!(m.knee(), 1.0);
        assert_eq!(m.cores_95(), Some(1));
        // Z = S: X(1) = 1/(2S) is 50 %; X(2) = U/S with U = 1 − 1/5 = 80 %;
        // X(3): B(3, 1) = (1/5)/(3 + 1/5) = 1/16, U = 93.75 %; X(4): B = 1/65.
        let m = Repairman::new(1.0, 1.0).unwrap();
        assert_eq!(m.knee(), 2.0);
        assert_eq!(m.cores_95(), Some(4));
    }

    #[test]
    fn cores_95_is_none_beyond_the_limit() {
        let m = Repairman::new(1.0, 1e9).unwrap();
        assert_eq!(m.cores_95(), None);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert_eq!(Repairman::new(0.0, 1.0), Err(ModelError::Service(0.0)));
        assert_eq!(Repairman::new(1.0, -1.0), Err(ModelError::Delay(-1.0)));
        assert!(Repairman::new(f64::NAN, 1.0).is_err());
        assert!(Repairman::new(1.0, f64::INFINITY).is_err());
        let m = Repairman::new(1.0, 1.0).unwrap();
        assert_eq!(m.solve(0), Err(ModelError::NoCores));
        assert_eq!(m.throughput(0), Err(ModelError::NoCores));
        assert_eq!(m.throughput_curve(0), Err(ModelError::NoCores));
        assert!(m.solve(MAX_CORES + 1).is_err());
    }

    /// Parameters each finite but whose results are not are refused, by
    /// the construction or the core count; extreme ones whose results are
    /// finite are solved, and exactly.
    #[test]
    fn results_that_overflow_are_refused_and_extremes_that_do_not_are_exact() {
        assert_eq!(
            Repairman::new(1e-320, 1.0),
            Err(ModelError::PeakOverflow(1e-320))
        );
        assert!(matches!(
            Repairman::new(1e-10, 1e300),
            Err(ModelError::RatioOverflow { .. })
        ));
        let big = Repairman::new(1e308, 1e308).unwrap();
        assert_eq!(big.knee(), 2.0);
        assert!(matches!(
            big.solve(2),
            Err(ModelError::ResponseOverflow { cores: 2, .. })
        ));
        // One core: X = 1/(S + Z) = 5e-309, which is a number.
        let one = big.solve(1).unwrap();
        assert!((one.throughput / 5e-309 - 1.0).abs() < 1e-12, "{one:?}");
        assert_eq!(big.throughput_bound(1), 0.5 / 1e308);
        // The lock almost always free: X ≈ N/Z, U ≈ N·S/Z and R ≈ S.
        let free = Repairman::new(1e-300, 1e7).unwrap();
        let sol = free.solve(10).unwrap();
        assert!((sol.throughput / 1e-6 - 1.0).abs() < 1e-9, "{sol:?}");
        assert!((sol.response / 1e-300 - 1.0).abs() < 1e-9, "{sol:?}");
    }
}
