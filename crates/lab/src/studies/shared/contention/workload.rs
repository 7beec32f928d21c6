//! The work a benchmark thread does around its lock: busy work inside the
//! critical section that writes a number of shared cache lines, and a delay
//! between acquisitions that is constant or exponentially distributed (the
//! "exponential delay" of the multicore ping-pong in seed 002).

use crate::core::clock::{ns_to_ticks, spin_ticks};
use crossbeam_utils::CachePadded;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::Exp1;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// How the delay outside the critical section is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DelayDist {
    /// Always exactly the mean.
    Const,
    /// Exponentially distributed with the given mean (a Poisson arrival
    /// process per thread).
    Exp,
}

impl DelayDist {
    /// The CLI/JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            DelayDist::Const => "const",
            DelayDist::Exp => "exp",
        }
    }
}

/// Cache lines the critical section writes: shared by all threads, so each
/// acquisition migrates them to the new holder, as real shared data would.
pub struct SharedLines(Vec<CachePadded<AtomicU64>>);

impl SharedLines {
    /// `n` lines (0 = none).
    pub fn new(n: usize) -> Self {
        SharedLines(
            (0..n)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        )
    }

    /// Reads and writes every line. Relaxed loads and stores (plain moves on
    /// x86): the lock provides the ordering, and no read-modify-write is used
    /// so the work is what a plain data update costs.
    #[inline(always)]
    pub fn touch(&self) {
        for l in &self.0 {
            l.store(l.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }

    /// How many times each line was touched, as it reads now (after the
    /// threads that touched it were joined). Each touch is a load and a
    /// store, not one atomic increment: two critical sections that overlap
    /// can lose one, so under a lock that excludes every line counts every
    /// critical section exactly.
    pub fn counts(&self) -> Vec<u64> {
        self.0.iter().map(|l| l.load(Ordering::Relaxed)).collect()
    }
}

/// The busy work inside the critical section, as a value: it travels to
/// whichever thread runs the section (a delegation lock's combiner) and
/// costs there what it costs on the caller's thread.
#[derive(Debug, Clone, Copy)]
pub struct Inside {
    ticks: u64,
}

impl Inside {
    /// Busy-waits the section's time.
    #[inline(always)]
    pub fn run(self) {
        spin_ticks(self.ticks);
    }
}

/// One thread's work generator, in time-stamp ticks.
pub struct Work {
    inside: Inside,
    delay_ticks: f64,
    dist: DelayDist,
    rng: SmallRng,
}

impl Work {
    /// Work of `cs_ns` inside and a mean of `delay_ns` outside, seeded per thread.
    pub fn new(cs_ns: u64, delay_ns: u64, dist: DelayDist, seed: u64) -> Self {
        Work {
            inside: Inside {
                ticks: ns_to_ticks(cs_ns),
            },
            delay_ticks: ns_to_ticks(delay_ns) as f64,
            dist,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The busy work inside the critical section.
    #[inline(always)]
    pub fn inside(&self) -> Inside {
        self.inside
    }

    /// The delay before the next acquisition.
    #[inline]
    pub fn outside(&mut self) {
        if self.delay_ticks == 0.0 {
            return;
        }
        let t = match self.dist {
            DelayDist::Const => self.delay_ticks,
            DelayDist::Exp => {
                let e: f64 = self.rng.sample(Exp1);
                e * self.delay_ticks
            }
        };
        spin_ticks(t as u64);
    }

    /// Draws one delay without waiting (for tests of the distribution).
    pub fn draw_delay_ticks(&mut self) -> f64 {
        match self.dist {
            DelayDist::Const => self.delay_ticks,
            DelayDist::Exp => self.rng.sample::<f64, _>(Exp1) * self.delay_ticks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_delays_have_the_requested_mean_and_spread() {
        let mut w = Work::new(0, 10_000, DelayDist::Exp, 7);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| w.draw_delay_ticks()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let target = ns_to_ticks(10_000) as f64;
        assert!(
            (mean / target - 1.0).abs() < 0.02,
            "mean {mean} vs {target}"
        );
        // Exponential: standard deviation equals the mean.
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03);
        let mut c = Work::new(0, 10_000, DelayDist::Const, 7);
        assert_eq!(c.draw_delay_ticks(), target);
    }

    #[test]
    fn touching_writes_every_line() {
        let s = SharedLines::new(3);
        s.touch();
        s.touch();
        assert_eq!(s.counts(), [2, 2, 2]);
    }
}
