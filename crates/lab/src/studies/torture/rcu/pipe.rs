//! The element pipeline, after Linux's rcutorture: a fixed pool of
//! elements, one of them published in a slot; the writer replaces it and
//! retires the old one, whose *pipeline count* then rises by one for each
//! grace period the domain says has completed since its removal.
//!
//! An element's count is 0 while published and 1 once removed; each grace
//! period that completes afterwards adds one (the writer after its own
//! `synchronize`, a callback re-queued once per grace period, or a polling
//! cookie found complete). At [`PIPE_LEN`] it is reclaimed: poisoned and put
//! back in the pool for reuse. A reader that loaded the element inside a
//! read-side section reads the count at the end of the section: 1 is fine
//! (removed, but the grace period that followed had not ended), 2 or more
//! means a whole grace period began after the removal — hence after the
//! reader's load — and ended while the reader was still inside: the grace
//! period was too short. Elements are never freed while the run lasts, so
//! a broken RCU shows as a poisoned or late-counted element, not as
//! undefined behaviour.

use super::flavor::TortureRcu;
pub use super::pool::{pool, Elem, PIPE_LEN, POISON, POOL};
use super::state::State;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One grace period has completed since `e` was removed: count it, and
/// reclaim the element at the end of the pipeline. Returns whether it was
/// reclaimed.
pub fn advance<R: TortureRcu>(st: &State<R>, idx: usize) -> bool {
    let e = &st.pool[idx];
    // Relaxed is enough: a correct grace period orders every reader's
    // section before this point, so no reader that held `e` can read it.
    let n = e.pipe.fetch_add(1, Ordering::Relaxed) as usize + 1;
    st.c.circulation[n.min(PIPE_LEN)].fetch_add(1, Ordering::Relaxed);
    if n >= PIPE_LEN {
        e.poison.store(POISON, Ordering::Relaxed);
        st.free.lock().unwrap().push(e.idx);
        true
    } else {
        false
    }
}

/// Retirement by callbacks: re-queued once per grace period.
fn by_call<R: TortureRcu>(st: Arc<State<R>>, idx: usize) {
    let rcu = &st.clone().rcu;
    rcu.call(move || {
        if !advance(&st, idx) {
            by_call(st, idx);
        }
    });
}

/// Retirement by `defer_drop`: each drop of the token is one grace period.
struct Token<R: TortureRcu> {
    st: Arc<State<R>>,
    idx: usize,
}

impl<R: TortureRcu> Drop for Token<R> {
    fn drop(&mut self) {
        if !advance(&self.st, self.idx) {
            let t = Box::new(Token {
                st: self.st.clone(),
                idx: self.idx,
            });
            self.st.rcu.defer_drop(t);
        }
    }
}

/// The writer: replaces the published element with a fresh one from the
/// pool, retires the old one by a randomly chosen mechanism, and now and
/// then checks `barrier` and a cookie across `synchronize`.
pub fn writer<R: TortureRcu>(st: Arc<State<R>>, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    // Removed elements waiting for the writer's own grace periods, and
    // those waiting on a polling cookie.
    let mut removed: Vec<usize> = Vec::new();
    let mut polled: Vec<(usize, R::Cookie)> = Vec::new();
    while !st.stopping() {
        let Some(new) = st.free.lock().unwrap().pop() else {
            st.c.alloc_fail.fetch_add(1, Ordering::Relaxed);
            sync_and_advance(&st, &mut removed);
            advance_polled(&st, &mut polled, &mut rng);
            std::thread::yield_now();
            continue;
        };
        let e = &st.pool[new];
        e.pipe.store(0, Ordering::Relaxed);
        e.poison.store(0, Ordering::Relaxed);
        let old = st
            .slot
            .swap(e as *const Elem as *mut Elem, Ordering::AcqRel);
        st.c.circulation[0].fetch_add(1, Ordering::Relaxed);
        // SAFETY: the slot only ever points into `st.pool`, which lives as
        // long as `st`.
        let old = unsafe { &*old }.idx;
        st.pool[old].pipe.fetch_add(1, Ordering::Relaxed);
        st.c.circulation[1].fetch_add(1, Ordering::Relaxed);
        match rng.random_range(0..5) {
            0 => {
                removed.push(old);
                sync_and_advance(&st, &mut removed);
                st.c.by_sync.fetch_add(1, Ordering::Relaxed);
            }
            1 => {
                by_call(st.clone(), old);
                st.c.by_call.fetch_add(1, Ordering::Relaxed);
            }
            2 => {
                st.rcu.defer_drop(Box::new(Token {
                    st: st.clone(),
                    idx: old,
                }));
                st.c.by_defer.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                polled.push((old, cookie(&st.rcu, &mut rng)));
                st.c.by_poll.fetch_add(1, Ordering::Relaxed);
            }
        }
        advance_polled(&st, &mut polled, &mut rng);
        if rng.random_ratio(1, 64) {
            check_barrier(&st);
        }
        if rng.random_ratio(1, 16) {
            check_cookie_across_sync(&st, &mut rng);
            advance_all(&st, &mut removed);
        }
        st.c.writes.fetch_add(1, Ordering::Relaxed);
        if rng.random_ratio(1, 32) {
            std::thread::yield_now();
        }
    }
    // Finish the pipeline of what the writer still holds, so that the final
    // count of free elements is exact.
    while !removed.is_empty() || !polled.is_empty() {
        sync_and_advance(&st, &mut removed);
        advance_polled(&st, &mut polled, &mut rng);
    }
}

fn cookie<R: TortureRcu>(rcu: &R, rng: &mut SmallRng) -> R::Cookie {
    if rng.random_bool(0.5) {
        rcu.start_poll()
    } else {
        rcu.get_state()
    }
}

fn sync_and_advance<R: TortureRcu>(st: &State<R>, removed: &mut Vec<usize>) {
    st.rcu.synchronize();
    advance_all(st, removed);
}

/// Every element removed before the caller's last `synchronize` began has
/// seen one more grace period.
fn advance_all<R: TortureRcu>(st: &State<R>, removed: &mut Vec<usize>) {
    removed.retain(|&i| !advance(st, i));
}

fn advance_polled<R: TortureRcu>(
    st: &State<R>,
    polled: &mut Vec<(usize, R::Cookie)>,
    rng: &mut SmallRng,
) {
    polled.retain_mut(|(i, c)| {
        if !st.rcu.poll(*c) {
            return true;
        }
        if advance(st, *i) {
            return false;
        }
        *c = cookie(&st.rcu, rng);
        true
    });
}

/// `barrier` returns only after every callback queued before it has run.
fn check_barrier<R: TortureRcu>(st: &State<R>) {
    let c = st.c.clone();
    let before = c.barrier_marks.load(Ordering::Relaxed);
    st.rcu.call(move || {
        c.barrier_marks.fetch_add(1, Ordering::Relaxed);
    });
    st.rcu.barrier();
    if st.c.barrier_marks.load(Ordering::Relaxed) <= before {
        st.c.barrier_errors.fetch_add(1, Ordering::Relaxed);
    }
    st.c.barriers.fetch_add(1, Ordering::Relaxed);
}

/// A cookie taken before `synchronize` reports complete after it.
pub fn check_cookie_across_sync<R: TortureRcu>(st: &State<R>, rng: &mut SmallRng) {
    let c = cookie(&st.rcu, rng);
    st.rcu.synchronize();
    if !st.rcu.poll(c) {
        st.c.poll_after_sync.fetch_add(1, Ordering::Relaxed);
    }
}

/// The extra updaters: back-to-back `synchronize` calls (sharing grace
/// periods with the writer and the reclaimer), each checking a cookie.
pub fn syncer<R: TortureRcu>(st: Arc<State<R>>, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while !st.stopping() {
        check_cookie_across_sync(&st, &mut rng);
        st.c.syncs.fetch_add(1, Ordering::Relaxed);
        if rng.random_ratio(1, 8) {
            std::thread::sleep(std::time::Duration::from_micros(rng.random_range(10..200)));
        }
    }
}
