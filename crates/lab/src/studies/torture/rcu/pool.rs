//! The pool of elements the pipeline ([`super::pipe`]) passes through:
//! its size, the poison of a reclaimed element, and the elements.

use std::sync::atomic::AtomicU32;

/// Stages of the pipeline, as in rcutorture's `RCU_TORTURE_PIPE_LEN`.
pub const PIPE_LEN: usize = 10;
/// Elements in the pool.
pub const POOL: usize = 10 * PIPE_LEN;
/// What a reclaimed element's `poison` field holds.
pub const POISON: u32 = 0xdead_beef;

/// One element of the pool.
pub struct Elem {
    pub(super) idx: usize,
    /// 0 published, 1 removed, +1 per grace period since.
    pub pipe: AtomicU32,
    /// [`POISON`] once reclaimed, 0 while in use.
    pub poison: AtomicU32,
}

/// The pool, every element free.
pub fn pool() -> Box<[Elem]> {
    (0..POOL)
        .map(|idx| Elem {
            idx,
            pipe: AtomicU32::new(0),
            poison: AtomicU32::new(POISON),
        })
        .collect()
}
