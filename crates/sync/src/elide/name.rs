//! What an [`Elided`] lock says about itself ([`Described`]): its name,
//! `elide(<fall-back>)` or `elide-adaptive(<fall-back>)` after its policy,
//! spelt at compile time, and the fall-back's facts.

use super::{Elided, Policy};
use crate::info::{Described, LockInfo};

/// Longest `<policy>(<name>)` that [`Described`] can spell.
const NAME_CAP: usize = 64;

/// `<policy>(<name>)` for the lock `R` under the policy `P`, spelt at
/// compile time: a generic `&'static str` cannot be `concat!`ed, so the
/// bytes are copied into a fixed buffer by a `const fn` and the name
/// borrows its filled prefix.
struct Name<R, P>(core::marker::PhantomData<(R, P)>);

impl<R: Described, P: Policy> Name<R, P> {
    const FILLED: ([u8; NAME_CAP], usize) = spell([P::NAME, "(", R::INFO.name, ")"]);
    const BYTES: &'static [u8; NAME_CAP] = &Self::FILLED.0;
    const STR: &'static str = match core::str::from_utf8(Self::BYTES.split_at(Self::FILLED.1).0) {
        Ok(s) => s,
        Err(_) => panic!("a prefix of joined strings is UTF-8"),
    };
}

/// Joins `parts` into a buffer: the bytes and how many are used.
const fn spell(parts: [&str; 4]) -> ([u8; NAME_CAP], usize) {
    let mut buf = [0u8; NAME_CAP];
    let mut len = 0;
    let mut p = 0;
    while p < parts.len() {
        let bytes = parts[p].as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            assert!(len < NAME_CAP, "lock name too long for elide(…)");
            buf[len] = bytes[i];
            len += 1;
            i += 1;
        }
        p += 1;
    }
    (buf, len)
}

impl<R: Described, H, P: Policy> Described for Elided<R, H, P> {
    // The family and blocking of the fall-back lock, which is what waits;
    // never fair, since transactions pass the fall-back's queue.
    const INFO: LockInfo = LockInfo {
        name: Name::<R, P>::STR,
        family: R::INFO.family,
        fair: false,
        blocking: R::INFO.blocking,
        numa_aware: R::INFO.numa_aware,
        source: P::SOURCE,
        summary: P::SUMMARY,
    };
}
