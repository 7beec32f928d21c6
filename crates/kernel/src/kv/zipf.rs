//! YCSB's key choosers: zipfian (θ = 0.99 by default, YCSB's
//! `ZipfianGenerator`, scrambled as its `ScrambledZipfianGenerator` does so
//! the popular keys are spread over the key space) and uniform.
//!
//! The zipfian draw is Gray et al.'s inversion ("Quickly generating
//! billion-record synthetic databases", SIGMOD 1994, §7, the method YCSB
//! implements): with ζ(n, θ) = Σᵢ₌₁ⁿ 1/iᶿ computed once, a uniform u gives
//! rank 0 if uζ(n) < 1, rank 1 if uζ(n) < 1 + 0.5ᶿ, and otherwise
//! ⌊n (ηu − η + 1)^α⌋ with α = 1/(1 − θ) and
//! η = (1 − (2/n)^(1−θ)) / (1 − ζ(2, θ)/ζ(n)). It is exact for the two
//! first ranks and a close approximation of P(rank i) ∝ 1/(i+1)ᶿ beyond.
//! Scrambling maps rank r to FNV-1a(r) mod n, as YCSB does.

use rand::rngs::SmallRng;
use rand::RngExt;

/// YCSB's default zipfian constant.
pub const THETA: f64 = 0.99;

/// How keys are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDist {
    /// Scrambled zipfian, θ = [`THETA`].
    Zipfian,
    /// Every key equally likely.
    Uniform,
}

impl KeyDist {
    /// The CLI and stored name.
    pub fn name(self) -> &'static str {
        match self {
            KeyDist::Zipfian => "zipfian",
            KeyDist::Uniform => "uniform",
        }
    }

    /// The distribution a name stands for.
    pub fn from_name(s: &str) -> Option<Self> {
        [KeyDist::Zipfian, KeyDist::Uniform]
            .into_iter()
            .find(|d| d.name() == s)
    }
}

/// A chooser of key indices in `0..n`.
#[derive(Debug, Clone)]
pub struct Keys {
    n: u64,
    zipf: Option<Zipf>,
}

#[derive(Debug, Clone)]
struct Zipf {
    theta: f64,
    zetan: f64,
    alpha: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// FNV-1a over the eight bytes of `v` (YCSB's `fnvhash64`).
pub fn fnv1a(v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Keys {
    /// Keys `0..n` (n ≥ 1) drawn by `dist`.
    pub fn new(n: u64, dist: KeyDist) -> Self {
        Self::with_theta(n, dist, THETA)
    }

    /// Zipfian with a constant θ in (0, 1) other than YCSB's.
    pub fn with_theta(n: u64, dist: KeyDist, theta: f64) -> Self {
        let n = n.max(1);
        let zipf = (dist == KeyDist::Zipfian).then(|| {
            let zetan = zeta(n, theta);
            let zeta2 = zeta(2, theta);
            Zipf {
                theta,
                zetan,
                alpha: 1.0 / (1.0 - theta),
                eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            }
        });
        Keys { n, zipf }
    }

    /// The zipfian rank of a uniform `u` in [0, 1) (unscrambled).
    pub fn rank(&self, u: f64) -> u64 {
        let Some(z) = &self.zipf else {
            return ((u * self.n as f64) as u64).min(self.n - 1);
        };
        let uz = u * z.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(z.theta) {
            return 1.min(self.n - 1);
        }
        let r = self.n as f64 * (z.eta * u - z.eta + 1.0).powf(z.alpha);
        (r as u64).min(self.n - 1)
    }

    /// The next key index.
    #[inline]
    pub fn next(&self, rng: &mut SmallRng) -> u64 {
        match &self.zipf {
            None => rng.random_range(0..self.n),
            Some(_) => fnv1a(self.rank(rng.random::<f64>())) % self.n,
        }
    }

    /// The most likely key index (zipfian), or 0.
    pub fn hottest(&self) -> u64 {
        if self.zipf.is_some() {
            fnv1a(0) % self.n
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_hottest_key_gets_far_more_than_a_uniform_share() {
        let n = 1_000u64;
        let (draws, mut rng) = (200_000u64, SmallRng::seed_from_u64(3));
        for (dist, more) in [(KeyDist::Zipfian, true), (KeyDist::Uniform, false)] {
            let k = Keys::new(n, dist);
            let mut hist = vec![0u64; n as usize];
            for _ in 0..draws {
                hist[k.next(&mut rng) as usize] += 1;
            }
            let fair = draws / n;
            let top = *hist.iter().max().unwrap();
            if more {
                // P(rank 0) = 1/ζ(1000, 0.99) ≈ 0.13: over 100 × fair.
                assert!(top > 20 * fair, "zipfian top {top}, fair {fair}");
                assert_eq!(hist[k.hottest() as usize], top);
            } else {
                // Binomial(200 000, 1/1000): mean 200, sd ≈ 14; the max of
                // 1000 stays well under twice the mean.
                assert!(top < 2 * fair, "uniform top {top}, fair {fair}");
            }
        }
    }

    #[test]
    fn rank_zero_has_its_exact_probability() {
        let k = Keys::new(100, KeyDist::Zipfian);
        let z = zeta(100, THETA);
        // u below 1/ζ(n) is rank 0, just above it is not.
        assert_eq!(k.rank(0.999 / z), 0);
        assert_ne!(k.rank(1.001 / z), 0);
        assert!(k.rank(0.999_999) < 100);
    }
}
