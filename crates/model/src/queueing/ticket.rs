//! The ticket-lock collapse model: the repairman chain with a hand-off
//! time that grows with the number of waiters.
//!
//! Source: Boyd-Wickizer, Kaashoek, Morris & Zeldovich, *Non-scalable
//! locks are dangerous*, Ottawa Linux Symposium 2012. They explain why
//! Linux's ticket spin locks made whole applications collapse when a few
//! more cores were added: every waiter of a ticket lock spins on the same
//! cache line (the "now serving" counter), so each release invalidates
//! every waiter's copy and all of them read the line again; the line's
//! home serves those reads one after another, and the next holder's read
//! is only one of them. Passing the lock on therefore costs a cache-line
//! transfer per waiter, and the more cores wait the longer each hand-off
//! takes — which makes more cores wait.
//!
//! The model here is their Markov chain in this crate's terms
//! ([`super::chain`]): state k is the number of cores holding or waiting
//! for the lock, requests arrive at rate (N − k)/Z, and one acquisition
//! keeps the lock busy for
//!
//! ```text
//! S_k = S + C·k
//! ```
//!
//! where S is the critical section plus a contention-free hand-off and C
//! the extra hand-off cost each core at the lock adds (whatever share of a
//! cache-line transfer that is on average for the protocol at hand). C = 0
//! is the machine-repairman model ([`super::repairman`]).
//!
//! Assumptions: exponentially distributed, independent delays and busy
//! times; identical cores; a hand-off cost exactly linear in the number of
//! cores at the lock (real interconnects are not, and Boyd-Wickizer et al.
//! measured a collapse sharper than their model's); nothing but the lock
//! limits throughput. Under these assumptions throughput X(N) rises while
//! the lock is mostly free, peaks, and then falls towards 1/(S + C·N) as
//! more cores pile up: the collapse that a scalable queue lock (MCS, CLH),
//! whose hand-off touches one waiter's line only, avoids.

use super::chain::{self, Solution};
use super::error::{
    check_cores, check_delay, check_handoff, check_response, check_scale, check_service, ModelError,
};

/// A ticket lock: service time S, mean delay Z, hand-off cost C per core
/// at the lock (one time unit of the caller's choosing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticket {
    service: f64,
    delay: f64,
    handoff: f64,
}

impl Ticket {
    /// The model with service time `service` (S > 0), mean delay `delay`
    /// (Z ≥ 0) and hand-off cost per core at the lock `handoff` (C ≥ 0),
    /// all finite, with 1/S and Z/S finite too (see [`super::error`]).
    pub fn new(service: f64, delay: f64, handoff: f64) -> Result<Self, ModelError> {
        let (service, delay) = (check_service(service)?, check_delay(delay)?);
        let handoff = check_handoff(handoff)?;
        check_scale(service, delay)?;
        Ok(Self {
            service,
            delay,
            handoff,
        })
    }

    /// S.
    pub fn service(&self) -> f64 {
        self.service
    }

    /// Z.
    pub fn delay(&self) -> f64 {
        self.delay
    }

    /// C.
    pub fn handoff(&self) -> f64 {
        self.handoff
    }

    /// S_k = S + C·k, the lock's busy time per acquisition with k cores at it.
    pub fn service_at(&self, k: u32) -> f64 {
        self.service + self.handoff * f64::from(k)
    }

    /// The steady state of `cores` cores. N·(S + C·N) must be finite
    /// (the longest response time; it bounds every S_k too).
    pub fn solve(&self, cores: u32) -> Result<Solution, ModelError> {
        let cores = check_response(check_cores(cores)?, self.service, self.handoff)?;
        chain::finite(
            chain::solve(cores, self.delay, |k| self.service_at(k)),
            self.service,
            self.delay,
        )
    }

    /// X(N), acquisitions per time unit.
    pub fn throughput(&self, cores: u32) -> Result<f64, ModelError> {
        Ok(self.solve(cores)?.throughput)
    }

    /// The core count in 1 ..= `max_cores` with the highest throughput
    /// (the fewest such cores on a tie), and that throughput. O(N²): each
    /// N is a separate chain.
    pub fn peak(&self, max_cores: u32) -> Result<(u32, f64), ModelError> {
        let max_cores = check_cores(max_cores)?;
        let mut best = (1, self.throughput(1)?);
        for n in 2..=max_cores {
            let x = self.throughput(n)?;
            if x > best.1 {
                best = (n, x);
            }
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_errors() {
        assert_eq!(Ticket::new(1.0, 1.0, -0.5), Err(ModelError::Handoff(-0.5)));
        assert_eq!(Ticket::new(-1.0, 1.0, 0.0), Err(ModelError::Service(-1.0)));
        assert_eq!(Ticket::new(1.0, -1.0, 0.0), Err(ModelError::Delay(-1.0)));
        let t = Ticket::new(1.0, 1.0, 1.0).unwrap();
        assert_eq!(t.solve(0), Err(ModelError::NoCores));
        assert_eq!(t.peak(0), Err(ModelError::NoCores));
    }

    /// A hand-off cost whose S + C·N overflows is refused at that N (it
    /// once gave NaN rows), and the largest N that fits is solved.
    #[test]
    fn a_handoff_that_overflows_is_refused_at_that_core_count() {
        let t = Ticket::new(1.0, 1.0, 1e300).unwrap();
        let k = super::super::error::most_cores(1.0, 1e300);
        assert!(matches!(
            t.solve(k + 1),
            Err(ModelError::ResponseOverflow { .. })
        ));
        assert!(t.peak(k + 1).is_err());
        let sol = t.solve(k).unwrap();
        assert!(sol.throughput.is_finite() && sol.response.is_finite());
        assert!(Ticket::new(1.0, 1.0, 1e308).unwrap().solve(2).is_err());
    }

    #[test]
    fn one_core_never_waits_but_pays_its_own_handoff() {
        // N = 1: P_1 = S_1/(S_1 + Z), X = P_1/S_1 = 1/(S + C + Z).
        let t = Ticket::new(3.0, 5.0, 2.0).unwrap();
        let x = t.throughput(1).unwrap();
        assert!((x - 1.0 / 10.0).abs() < 1e-15);
    }
}
