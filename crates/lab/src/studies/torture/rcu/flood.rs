//! Forward progress under a callback flood: chains of callbacks that
//! re-queue themselves, plus a thread that queues one-shot callbacks and
//! deferred drops as fast as `call` lets it. Every callback counts itself
//! when it runs; the monitor fails the run if completions stop, and checks
//! that queued callbacks stay under the domain's backpressure bound.

use super::flavor::TortureRcu;
use super::state::{Counters, State};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Self-re-queueing chains the flood keeps going.
pub const CHAINS: usize = 8;

/// A deferred drop that counts itself; its size counts in the backlog.
pub struct Blob {
    c: Arc<Counters>,
    _payload: [u64; 6],
}

impl Drop for Blob {
    fn drop(&mut self) {
        self.c.flood_ran.fetch_add(1, Ordering::Relaxed);
    }
}

fn chain<R: TortureRcu>(st: Arc<State<R>>) {
    st.c.flood_posted.fetch_add(1, Ordering::Relaxed);
    let rcu = &st.clone().rcu;
    rcu.call(move || {
        st.c.flood_ran.fetch_add(1, Ordering::Relaxed);
        if !st.stopping() {
            chain(st);
        }
    });
}

/// How long each flood burst lasts, and each pause between bursts: in the
/// pauses the writer and the map updater queue their callbacks without
/// waiting behind the flood.
const BURST: Duration = Duration::from_millis(25);

/// The flood thread.
pub fn flood<R: TortureRcu>(st: Arc<State<R>>) {
    for _ in 0..CHAINS {
        chain(st.clone());
    }
    let mut i = 0u64;
    let mut burst = Instant::now();
    while !st.stopping() {
        if burst.elapsed() >= BURST {
            std::thread::sleep(BURST);
            burst = Instant::now();
        }
        st.c.flood_posted.fetch_add(1, Ordering::Relaxed);
        if i % 8 == 0 {
            st.rcu.defer_drop(Box::new(Blob {
                c: st.c.clone(),
                _payload: [i; 6],
            }));
        } else {
            let c = st.c.clone();
            st.rcu.call(move || {
                c.flood_ran.fetch_add(1, Ordering::Relaxed);
            });
        }
        i += 1;
        if i % 16 == 0 {
            st.sample_pending();
        }
    }
}
