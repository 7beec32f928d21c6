//! `dashmap`: the concurrent map most Rust programs reach for, as a peer.
//! It shards the map into reader-writer-locked hash tables (open
//! addressing, values inline), so it is neither a chained table nor
//! lock-free for readers; it is what a Rust user would compare against. An
//! update is `insert`, which replaces the value of a present key in place
//! (no new allocation, nothing to reclaim). Keys are hashed with a
//! multiplicative hash ([`IntHasher`]) rather than the default SipHash, so
//! that the peer does not pay for a hash the chained tables do not compute.

use super::runner::{tag, HashTable};
use dashmap::DashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of one integer: multiply by 2⁶⁴/φ; the shard and
/// the bucket come from the well-mixed high bits.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The `dashmap` strategy (default shard count: four per CPU, a power of
/// two).
pub struct DashTable(DashMap<u64, u64, BuildHasherDefault<IntHasher>>);

impl HashTable for DashTable {
    type Reader<'t> = ();

    fn build(_buckets: usize, keys: u64) -> Self {
        let map = DashMap::with_capacity_and_hasher(keys as usize, Default::default());
        for key in 0..keys {
            map.insert(key, tag(key, 0));
        }
        DashTable(map)
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        self.0.get(&key).map(|v| *v)
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        self.0.insert(key, value);
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for e in self.0.iter() {
            f(None, *e.key(), *e.value());
        }
    }
}
