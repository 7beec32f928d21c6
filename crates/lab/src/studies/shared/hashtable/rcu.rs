//! `rcu` and `rcu-qsbr`: seed 003's RCU table, as locklab's own
//! [`RcuHashMap`] over a general-purpose or a QSBR domain. Lookups enter a
//! read-side section (free for QSBR; for `rcu` an outermost one through the
//! thread's exclusive handle, [`RcuReader::read_outer`], as a loop of
//! lookups would) and walk the chain with no lock and no shared write,
//! through [`RcuHashMap::get_unchecked`]: the harness only hands a table
//! the reader it made, so the guard's domain needs no check per lookup.
//! An update takes its bucket's lock, links a new element in place of the
//! old one with one pointer store and hands the old one to the domain's
//! reclaimer, which frees it after a grace period. QSBR
//! threads report a quiescent state every `QS_EVERY`
//! operations.
//!
//! The map places key `k` in bucket `k % buckets` like every other table
//! here: [`IdentityHash`] hands it the key itself, and the map reduces a
//! hash the way `bucket_of` does (a mask for a power
//! of two, else a division). So chains are the same as in the other
//! tables, and a lookup pays the same for its bucket.

use super::runner::{tag, HashTable};
use locklab::rcu::{Domain, Flavor, General, QsbrReader, QuiescentState, RcuHashMap, RcuReader};
use std::hash::{BuildHasher, Hasher};

/// Hashes a `u64` key to itself.
#[derive(Clone, Copy, Default)]
pub struct IdentityHash;

impl BuildHasher for IdentityHash {
    type Hasher = IdentityHasher;
    fn build_hasher(&self) -> IdentityHasher {
        IdentityHasher(0)
    }
}

/// The hasher of [`IdentityHash`]; only for `u64` keys.
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    #[inline(always)]
    fn write_u64(&mut self, k: u64) {
        self.0 = k;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Keys are u64, hashed through `write_u64`; anything else still
        // gets a hash, though not in the tables' layout.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The RCU table of flavour `F`.
pub struct RcuTable<F: Flavor> {
    domain: Domain<F>,
    map: RcuHashMap<u64, u64, F, IdentityHash>,
}

fn build<F: Flavor>(buckets: usize, keys: u64) -> RcuTable<F> {
    let domain = Domain::<F>::new();
    let map = RcuHashMap::with_buckets_and_hasher(&domain, buckets, IdentityHash);
    for key in 0..keys {
        map.insert(key, tag(key, 0));
    }
    RcuTable { domain, map }
}

/// The `HashTable` impl of one flavour: its reader type, the reader's method
/// that opens a lookup's section, and what it does at a quiescent state
/// (nothing for the general flavour).
macro_rules! rcu_table {
    ($flavor:ty, $reader:ty, $open:ident, |$r:ident| $quiescent:expr) => {
        impl HashTable for RcuTable<$flavor> {
            type Reader<'t> = $reader;

            fn build(buckets: usize, keys: u64) -> Self {
                build(buckets, keys)
            }

            fn reader(&self) -> $reader {
                self.domain.register()
            }

            #[inline(always)]
            unsafe fn lookup(&self, r: &mut $reader, key: u64) -> Option<u64> {
                let g = r.$open();
                // SAFETY: the caller vouches that the reader is ours, made
                // by `reader` from our domain, so its guards protect the
                // map (checked in debug builds).
                unsafe { self.map.get_unchecked(&key, &g) }.copied()
            }

            #[inline]
            fn update(&self, _: &mut $reader, key: u64, value: u64) {
                self.map.insert(key, value);
            }

            #[inline(always)]
            fn quiescent(&self, $r: &mut $reader) {
                $quiescent
            }

            fn backlog_bytes(&self) -> u64 {
                self.domain.backlog_bytes() as u64
            }

            fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
                let r = self.domain.register();
                let g = r.read();
                // The map does not expose its buckets: it places keys with
                // the reduction of `bucket_of`, over the identity hash.
                for (&k, &v) in self.map.iter(&g) {
                    f(None, k, v);
                }
            }
        }
    };
}

// A thread holds its general-flavour reader exclusively, so its lookups
// open outermost sections (no nesting check).
rcu_table!(General, RcuReader, read_outer, |_r| ());
rcu_table!(QuiescentState, QsbrReader, read, |r| r.quiescent_state());
