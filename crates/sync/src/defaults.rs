//! The lab's recommended defaults under `parking_lot`'s names, so that a
//! program written for `parking_lot` moves to locklab by changing its `use`
//! line: `Mutex` is the hybrid mutex ([`RawHybridMutex`], `mutex` in the
//! lab), `RwLock` the sleeping reader-writer semaphore ([`RawRwSem`],
//! `rwsem`), and [`Condvar`](crate::Condvar) works with the guard of either
//! mutex. Why these two, with the figures, is in the crate documentation
//! ("Choose a lock"); what differs from `parking_lot` is on each type.
//!
//! They are aliases of `lock_api` types, as `parking_lot`'s are, so the
//! methods (`lock`, `try_lock`, `try_lock_for`, `MutexGuard::map`,
//! `unlocked`, `unlock_fair`, `read`, `write`, `RwLockReadGuard::map`, …)
//! are `lock_api`'s, and `new` is a `const fn`: a `static` needs no lazy
//! initialisation.

use crate::block::mutex::{AdaptiveSpin, RawHybridMutex};
use crate::block::rwsem::RawRwSem;

/// The raw lock under [`Mutex`]: the hybrid mutex with learnt spinning
/// (`mutex` in the lab). Also `lock_api::RawMutexFair` and
/// `lock_api::RawMutexTimed`, as `parking_lot::RawMutex` is.
pub type RawMutex = RawHybridMutex<AdaptiveSpin>;

/// The lab's recommended mutex: the hybrid mutex (`mutex` in the lab),
/// which spins while the lock moves and sleeps when it stalls.
///
/// A drop-in for `parking_lot::Mutex<T>`: `const fn new`, `lock`,
/// `try_lock`, `try_lock_for`/`try_lock_until`, `get_mut`, `into_inner`,
/// `is_locked`, `force_unlock`, and guards with `map`, `unlocked` and
/// `unlock_fair`. What keeps a waiter from starving differs:
/// `parking_lot` unlocks fairly every 0.5 ms on average, this mutex hands
/// the lock to a sleeper that has waited 1 ms (see
/// [`block::mutex`](crate::block::mutex)). Uncontended it costs less than
/// `parking_lot`'s on the lab's AMD EPYC guest (5.63 against 6.57 ns a
/// pair since git 161a57f; the Intel Xeon, where it cost 19.7 against
/// 12.1 before, was not re-measured); see "Choose a lock" in the crate
/// documentation.
/// Every other algorithm keeps its own name
/// ([`HybridMutex`](crate::HybridMutex) is this one, [`McsMutex`](crate::McsMutex),
/// [`Futex3Mutex`](crate::Futex3Mutex), …).
///
/// ```
/// use locklab::Mutex;
///
/// static HITS: Mutex<u64> = Mutex::new(0);
/// *HITS.lock() += 1;
/// assert_eq!(*HITS.lock(), 1);
/// ```
pub type Mutex<T> = lock_api::Mutex<RawMutex, T>;

/// The guard of a locked [`Mutex`].
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;

/// A [`MutexGuard`] narrowed to a part of the data by `MutexGuard::map`.
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;

/// The raw lock under [`RwLock`]: the sleeping reader-writer semaphore
/// (`rwsem` in the lab).
pub type RawRwLock = RawRwSem;

/// The lab's recommended reader-writer lock: the sleeping reader-writer
/// semaphore after Linux's `rw_semaphore` (`rwsem` in the lab; the same
/// type as [`RwSem`](crate::RwSem)).
///
/// A drop-in for `parking_lot::RwLock<T>` in `const fn new`, `read`,
/// `write`, `try_read`, `try_write`, `get_mut`, `into_inner` and the
/// guards' `map`. It has no upgradable reads, no `downgrade`, no timed
/// `try_read_for`/`try_write_for` and no fair unlock (the raw lock
/// implements only `lock_api::RawRwLock`): a program that uses those keeps
/// `parking_lot` for that lock. Writers are preferred, so a recursive read
/// while a writer waits deadlocks, as with `parking_lot`.
///
/// ```
/// use locklab::RwLock;
///
/// static LIMIT: RwLock<u32> = RwLock::new(10);
/// assert_eq!(*LIMIT.read(), 10);
/// *LIMIT.write() = 20;
/// assert_eq!(*LIMIT.read(), 20);
/// ```
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// The guard of a read lock on a [`RwLock`].
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;

/// The guard of the write lock on a [`RwLock`].
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;

/// A [`RwLockReadGuard`] narrowed by `RwLockReadGuard::map`.
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;

/// A [`RwLockWriteGuard`] narrowed by `RwLockWriteGuard::map`.
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Condvar;
    use std::time::Duration;

    static COUNT: Mutex<u64> = Mutex::new(0);
    static CONFIG: RwLock<(u32, u32)> = RwLock::new((1, 2));

    fn bump(g: &mut MutexGuard<'_, u64>) {
        **g += 1;
    }

    #[test]
    fn statics_exclude_across_threads() {
        use crate::util::testing::{iters, threads};
        const THREADS: usize = threads(4);
        const ITERS: u64 = iters(1000);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ITERS {
                        bump(&mut COUNT.lock());
                    }
                });
            }
        });
        assert_eq!(*COUNT.lock(), THREADS as u64 * ITERS);
        let first = RwLockReadGuard::map(CONFIG.read(), |c| &c.0);
        assert_eq!(*first, 1);
        drop(first);
        let mut w = CONFIG.write();
        w.1 = 3;
        drop(w);
        assert_eq!(*CONFIG.read(), (1, 3));
    }

    #[test]
    fn the_mutex_is_timed_and_fair_as_parking_lots_is() {
        let m = Mutex::new(5);
        let g = m.lock();
        assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
        MutexGuard::unlock_fair(g);
        let mut g = m.try_lock_for(Duration::from_millis(5)).unwrap();
        let mut part = MutexGuard::map(g, |v| v);
        *part += 1;
        drop(part);
        g = m.lock();
        assert_eq!(*g, 6);
    }

    #[test]
    fn condvar_waits_on_the_default_mutex() {
        let pair = (Mutex::new(false), Condvar::new());
        std::thread::scope(|s| {
            s.spawn(|| {
                *pair.0.lock() = true;
                pair.1.notify_one();
            });
            let mut ready = pair.0.lock();
            while !*ready {
                pair.1.wait(&mut ready);
            }
            assert!(*ready);
        });
        let mut g = pair.0.lock();
        assert!(pair
            .1
            .wait_for(&mut g, Duration::from_millis(1))
            .timed_out());
    }
}
