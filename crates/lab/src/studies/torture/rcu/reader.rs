//! A reader: read-side sections that load the published element, check it
//! is not poisoned, look keys up in the hash map, wait a little (now and
//! then a long time, or nested, or with a polling cookie that must not
//! complete), and record the element's pipeline count at the end.

use super::flavor::{Sections, TortureRcu};
use super::map::View;
use super::pipe::{Elem, PIPE_LEN, POISON};
use super::state::State;
use crate::core::clock::{ns_to_ticks, spin_ticks};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The reader thread `id`.
pub fn reader<R: TortureRcu>(st: Arc<State<R>>, id: usize, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut r = st.rcu.register();
    let mut pipe = [0u64; PIPE_LEN + 1];
    let mut batch = [0u64; PIPE_LEN + 1];
    let mut view = View::new();
    let mut n = 0u64;
    let short = ns_to_ticks(300);
    let long = ns_to_ticks(50_000);
    while !st.stopping() {
        {
            // Half the sections open through the shared handle (with the
            // nesting check), half through the exclusive one.
            let g = if rng.random_bool(0.5) {
                r.read()
            } else {
                r.read_outer()
            };
            let nested = rng
                .random_ratio(1, 8)
                .then(|| <R::Reader as Sections>::nest(&g));
            let gp0 = st.rcu.grace_periods();
            let p = st.slot.load(Ordering::Acquire);
            // SAFETY: the slot only ever points into the pool, which lives
            // as long as `st`.
            let e: &Elem = unsafe { &*p };
            let mut poisoned = e.poison.load(Ordering::Relaxed) == POISON;
            let cookie = rng.random_ratio(1, 16).then(|| {
                if rng.random_bool(0.5) {
                    st.rcu.start_poll()
                } else {
                    st.rcu.get_state()
                }
            });
            view.check(&st, &g, &mut rng);
            match rng.random_range(0..1024) {
                // A reader preempted inside its section.
                0..=1 => std::thread::yield_now(),
                2..=3 => spin_ticks(long),
                _ => spin_ticks(rng.random_range(0..=short)),
            }
            poisoned |= e.poison.load(Ordering::Relaxed) == POISON;
            if poisoned {
                st.c.poisoned.fetch_add(1, Ordering::Relaxed);
            }
            let count = (e.pipe.load(Ordering::Relaxed) as usize).min(PIPE_LEN);
            pipe[count] += 1;
            if count > 1 {
                st.c.too_short.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(c) = cookie {
                if st.rcu.poll(c) {
                    st.c.poll_in_section.fetch_add(1, Ordering::Relaxed);
                }
            }
            let gp1 = st.rcu.grace_periods();
            batch[(gp1.saturating_sub(gp0) as usize).min(PIPE_LEN)] += 1;
            if nested.is_some() {
                st.c.nested.fetch_add(1, Ordering::Relaxed);
            }
            drop(nested);
            drop(g);
        }
        R::quiesce(&mut r);
        n += 1;
        st.c.reads[id].store(n, Ordering::Relaxed);
        if rng.random_ratio(1, 256) {
            // Hold nothing for a while (QSBR: offline).
            R::idle(&mut r, || {
                std::thread::sleep(Duration::from_micros(rng.random_range(10..100)))
            });
        }
    }
    for (i, (p, b)) in pipe.iter().zip(&batch).enumerate() {
        st.c.pipe[i].fetch_add(*p, Ordering::Relaxed);
        st.c.batch[i].fetch_add(*b, Ordering::Relaxed);
    }
}
