//! What an [`Elided`] lock says about itself ([`Described`]): its name,
//! `elide(<fall-back>)`, spelt at compile time, and the fall-back's facts.

use super::Elided;
use crate::info::{Described, LockInfo};

/// Longest `elide(<name>)` that [`Described`] can spell.
const NAME_CAP: usize = 64;

/// `elide(<name>)` for the lock `R`, spelt at compile time: a generic
/// `&'static str` cannot be `concat!`ed, so the bytes are copied into a
/// fixed buffer by a `const fn` and the name borrows its filled prefix.
struct Name<R>(core::marker::PhantomData<R>);

impl<R: Described> Name<R> {
    const FILLED: ([u8; NAME_CAP], usize) = spell(["elide(", R::INFO.name, ")"]);
    const BYTES: &'static [u8; NAME_CAP] = &Self::FILLED.0;
    const STR: &'static str = match core::str::from_utf8(Self::BYTES.split_at(Self::FILLED.1).0) {
        Ok(s) => s,
        Err(_) => panic!("a prefix of joined strings is UTF-8"),
    };
}

/// Joins `parts` into a buffer: the bytes and how many are used.
const fn spell(parts: [&str; 3]) -> ([u8; NAME_CAP], usize) {
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

impl<R: Described, H> Described for Elided<R, H> {
    // The family and blocking of the fall-back lock, which is what waits;
    // never fair, since transactions pass the fall-back's queue.
    const INFO: LockInfo = LockInfo {
        name: Name::<R>::STR,
        family: R::INFO.family,
        fair: false,
        blocking: R::INFO.blocking,
        source: "speculative lock elision: Rajwar & Goodman, MICRO 2001; Intel TSX/RTM (Intel SDM vol. 1 ch. 16); kernel transaction code of seed 002 (Elphinstone et al. 2016, Fig. 1); 3 attempts as glibc's x86 elision",
        summary: "run the section in an RTM transaction that only reads the lock; after 3 aborts by default (waiting for the lock to be free between them) take the lock; without RTM, the lock alone",
    };
}
