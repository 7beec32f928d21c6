//! The hash-table rules, checked on `locklab::rcu::RcuHashMap` while an
//! updater changes it and the readers look keys up.
//!
//! The keys fall in four ranges, each with a rule a reader can check from
//! what it alone has seen:
//!
//! * **stable** keys are present from the start and never removed; the
//!   updater keeps replacing their values. Every lookup finds them, with a
//!   value tagged with the key.
//! * **grow** keys are absent at the start and added once each, never
//!   removed: a reader that has found one must find it on every later
//!   lookup.
//! * **shrink** keys are present at the start and removed once each, never
//!   re-added: a reader that has missed one must miss it on every later
//!   lookup.
//! * **churn** keys are added and removed again and again; no rule, they
//!   move the chains that the other keys share.
//!
//! Grow and shrink keys change at a pace that spreads them over the run.
//! A *sabotage* switch (for the test that shows the checks can fail) makes
//! the updater break each rule once.

use super::flavor::TortureRcu;
use super::keys::*;
use super::state::State;
use locklab::rcu::ReadGuard;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// What one reader has seen of the grow and shrink keys.
pub struct View {
    seen_grow: Vec<bool>,
    missed_shrink: Vec<bool>,
}

impl View {
    pub fn new() -> Self {
        View {
            seen_grow: vec![false; GROW],
            missed_shrink: vec![false; SHRINK],
        }
    }

    /// Three lookups under `g` (a stable, a grow and a shrink key), each
    /// checked against its rule and this reader's history.
    pub fn check<R: TortureRcu, G: ReadGuard>(&mut self, st: &State<R>, g: &G, rng: &mut SmallRng) {
        let map = &st.map.map;
        let c = &st.c;
        let k = rng.random_range(0..STABLE);
        match map.get(&k, g) {
            None => {
                c.map_stable_missing.fetch_add(1, Ordering::Relaxed);
            }
            Some(v) if v >> 32 != k => {
                c.map_wrong_value.fetch_add(1, Ordering::Relaxed);
            }
            Some(_) => {}
        }
        let i = rng.random_range(0..GROW);
        let k = GROW_BASE + i as u64;
        match map.get(&k, g) {
            Some(v) => {
                if *v != tag(k, 0) {
                    c.map_wrong_value.fetch_add(1, Ordering::Relaxed);
                }
                self.seen_grow[i] = true;
            }
            None if self.seen_grow[i] => {
                c.map_grow_lost.fetch_add(1, Ordering::Relaxed);
            }
            None => {}
        }
        let i = rng.random_range(0..SHRINK);
        let k = SHRINK_BASE + i as u64;
        match map.get(&k, g) {
            Some(v) => {
                if *v != tag(k, 0) {
                    c.map_wrong_value.fetch_add(1, Ordering::Relaxed);
                }
                if self.missed_shrink[i] {
                    c.map_shrink_returned.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => self.missed_shrink[i] = true,
        }
        c.map_lookups.fetch_add(3, Ordering::Relaxed);
    }
}

/// The updater: replaces stable values and churns at full speed, grows and
/// shrinks at the pace of the run.
pub fn updater<R: TortureRcu>(st: Arc<State<R>>, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let fx = &st.map;
    let (mut grown, mut shrunk) = (0usize, 0usize);
    let start = Instant::now();
    let mut version = 0u32;
    let mut sabotaged = false;
    while !st.stopping() {
        let frac = (start.elapsed().as_secs_f64() / st.cfg.secs).min(1.0);
        let due = (frac * GROW as f64) as usize;
        while grown < due.min(GROW) {
            fx.map
                .insert(fx.grow_order[grown], tag(fx.grow_order[grown], 0));
            grown += 1;
        }
        let due = (frac * SHRINK as f64) as usize;
        while shrunk < due.min(SHRINK) {
            fx.map.remove(&fx.shrink_order[shrunk]);
            shrunk += 1;
        }
        if st.cfg.sabotage_map && !sabotaged && frac > 0.1 && grown > 0 && shrunk > 0 {
            // Break each rule once: a stable key goes for good, a grow key
            // is removed, a shrink key comes back.
            sabotaged = true;
            fx.map.remove(&0);
            fx.map.remove(&fx.grow_order[0]);
            fx.map
                .insert(fx.shrink_order[0], tag(fx.shrink_order[0], 0));
        }
        version = version.wrapping_add(1);
        let k = rng.random_range(0..STABLE);
        if !(sabotaged && k == 0) {
            fx.map.insert(k, tag(k, version));
        }
        let k = CHURN_BASE + rng.random_range(0..CHURN);
        if rng.random_bool(0.5) {
            fx.map.insert(k, tag(k, version));
        } else {
            fx.map.remove(&k);
        }
        st.c.map_updates.fetch_add(1, Ordering::Relaxed);
        if rng.random_ratio(1, 16) {
            std::thread::yield_now();
        }
    }
}
