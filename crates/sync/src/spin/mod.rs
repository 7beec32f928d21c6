//! Busy-waiting mutual exclusion, one algorithm per file.
//!
//! Each raw lock has inherent `acquire`/`try_acquire`/`release` methods (the
//! algorithm, model-checked under loom) and, outside loom, a thin
//! `lock_api::RawMutex` layer with a ready `…Mutex<T>` alias.

pub mod backoff;
pub mod clh;
pub mod k42;
pub mod mcs;
pub mod qspin;
pub mod tas;
pub mod ticket;
pub mod ticket_backoff;
pub mod ttas;

pub use backoff::RawBackoff;
pub use clh::{ClhToken, RawClh};
pub use k42::RawK42;
pub use mcs::{McsToken, RawMcs};
pub use qspin::RawQspin;
pub use tas::RawTas;
pub use ticket::{RawTicket, Ticket};
pub use ticket_backoff::RawTicketBackoff;
pub use ttas::RawTtas;

#[cfg(not(loom))]
pub use backoff::BackoffMutex;
#[cfg(not(loom))]
pub use clh::ClhMutex;
#[cfg(not(loom))]
pub use k42::K42Mutex;
#[cfg(not(loom))]
pub use mcs::McsMutex;
#[cfg(not(loom))]
pub use qspin::QspinMutex;
#[cfg(not(loom))]
pub use tas::TasMutex;
#[cfg(not(loom))]
pub use ticket::TicketMutex;
#[cfg(not(loom))]
pub use ticket_backoff::TicketBackoffMutex;
#[cfg(not(loom))]
pub use ttas::TtasMutex;

/// Multi-threaded smoke tests shared by the algorithms' unit tests (the
/// loom checks and torture tests are the thorough ones).
#[cfg(all(test, not(loom)))]
pub(crate) mod smoke {
    use std::sync::Arc;

    /// `threads` threads each add one to a `lock_api::Mutex<R, u64>` (what
    /// every `…Mutex<u64>` alias is) `per_thread` times; the final count
    /// must be exact and the mutex left unlocked.
    ///
    /// Each thread yields after each release. With more spinning threads
    /// than free cores (four threads, a two-core machine, other tests in
    /// parallel), a FIFO lock hands over to preempted waiters while the
    /// running ones spin out their time slices: without the yield a run of
    /// the fair locks took minutes (lock-holder/waiter preemption, seed 004).
    /// The yield lets a granted waiter run; the threads still contend.
    pub(crate) fn count_with<R>(threads: usize, per_thread: u64)
    where
        R: lock_api::RawMutex + Send + Sync + 'static,
    {
        count_in(lock_api::Mutex::<R, u64>::new(0), threads, per_thread);
    }

    /// [`count_with`] on a given (for example specially initialised) mutex
    /// holding 0.
    pub(crate) fn count_in<R>(m: lock_api::Mutex<R, u64>, threads: usize, per_thread: u64)
    where
        R: lock_api::RawMutex + Send + Sync + 'static,
    {
        let m = Arc::new(m);
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..per_thread {
                        *m.lock() += 1;
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), threads as u64 * per_thread, "lost update");
        assert!(!m.is_locked(), "left locked");
    }

    /// FIFO check for fair locks, without timing: while this thread holds
    /// the lock, three threads arrive one after another, each started only
    /// once `arrivals` (an observable that changes when a waiter has taken
    /// its place: the ticket counter, the queue tail) shows the previous one
    /// queued. After the release they must enter in arrival order.
    pub(crate) fn fifo_order<L, T>(
        lock: &L,
        arrivals: impl Fn(&L) -> usize + Sync,
        acquire: impl Fn(&L) -> T + Sync,
        release: impl Fn(&L, T) + Sync,
    ) where
        L: Sync,
    {
        let order = std::sync::Mutex::new(Vec::new());
        let held = acquire(lock);
        std::thread::scope(|s| {
            for i in 0..3 {
                let before = arrivals(lock);
                let (order, acquire, release) = (&order, &acquire, &release);
                s.spawn(move || {
                    let t = acquire(lock);
                    order.lock().unwrap().push(i);
                    release(lock, t);
                });
                while arrivals(lock) == before {
                    std::thread::yield_now();
                }
            }
            release(lock, held);
        });
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    }
}
