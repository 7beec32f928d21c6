//! The map the RCU torture checks ([`super::map`]): its four key ranges
//! (stable, grow, shrink, churn), the values that say which key they
//! belong to, and the map with the order in which the updater grows and
//! shrinks it.

use locklab::rcu::{Flavor, RcuHashMap};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

pub(super) const STABLE: u64 = 64;
pub(super) const GROW_BASE: u64 = 1 << 20;
pub(super) const GROW: usize = 8192;
pub(super) const SHRINK_BASE: u64 = 2 << 20;
pub(super) const SHRINK: usize = 8192;
pub(super) const CHURN_BASE: u64 = 3 << 20;
pub(super) const CHURN: u64 = 64;
pub(super) const BUCKETS: usize = 256;

/// A value that says which key it belongs to.
pub(super) fn tag(key: u64, version: u32) -> u64 {
    (key << 32) | version as u64
}

/// The map and the order in which the updater grows and shrinks it.
pub struct Fixture<F: Flavor> {
    pub map: RcuHashMap<u64, u64, F>,
    pub(super) grow_order: Vec<u64>,
    pub(super) shrink_order: Vec<u64>,
}

impl<F: Flavor> Fixture<F> {
    /// Stable and shrink keys inserted; grow keys in a shuffled order.
    pub fn new(domain: &locklab::rcu::Domain<F>, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let map = RcuHashMap::with_buckets(domain, BUCKETS);
        let mut grow_order: Vec<u64> = (0..GROW as u64).map(|i| GROW_BASE + i).collect();
        let mut shrink_order: Vec<u64> = (0..SHRINK as u64).map(|i| SHRINK_BASE + i).collect();
        grow_order.shuffle(&mut rng);
        shrink_order.shuffle(&mut rng);
        for k in (0..STABLE).chain(shrink_order.iter().copied()) {
            map.insert(k, tag(k, 0));
        }
        Fixture {
            map,
            grow_order,
            shrink_order,
        }
    }
}
