//! The simulator's random numbers: xoshiro256++ (Blackman and Vigna,
//! *Scrambled linear pseudorandom number generators*, 2021) seeded through
//! SplitMix64, as its authors recommend. Written here rather than taken
//! from a crate so that a seed gives the same simulation on every version
//! of locklab's dependencies.

use super::config::Dist;

/// xoshiro256++.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n (n > 0), by multiply-shift (bias below 2^-32 for
    /// the n used here).
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// A length from `d`, rounded to whole ns.
    pub(crate) fn sample(&mut self, d: Dist) -> u64 {
        let x = match d {
            Dist::Const(x) => x,
            Dist::Exp(m) => -m * (1.0 - self.unit()).ln(),
        };
        x.round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_samples_have_their_mean() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| r.sample(Dist::Exp(1000.0))).sum();
        let mean = sum as f64 / n as f64;
        // Standard error 1000/√n ≈ 2.2; allow 5 of them.
        assert!((mean - 1000.0).abs() < 11.0, "mean {mean}");
    }

    #[test]
    fn below_stays_below_and_covers() {
        let mut r = Rng::new(3);
        let mut seen = [0u32; 5];
        for _ in 0..10_000 {
            seen[r.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 1_800 && c < 2_200), "{seen:?}");
    }
}
