//! The futex layer: sleep until a 32-bit word changes, and wake sleepers.
//!
//! The only place in locklab that makes futex system calls. A futex
//! (Franke, Russell & Kirkwood, "Fuss, Futexes and Furwocks", Ottawa Linux
//! Symposium 2002; U. Drepper, "Futexes Are Tricky", 2011) lets a thread
//! sleep in the kernel on the address of a word in user memory, but only if
//! the word still holds the value the thread expects: the kernel compares and
//! enqueues atomically with respect to `wake` on the same address. That is
//! what makes "check the lock word, then sleep" free of lost wake-ups: a
//! waker that changes the word and then calls [`wake`] either runs before the
//! compare (and the sleeper does not sleep) or after the enqueue (and wakes
//! it).
//!
//! Contract, for every caller: [`wait`] may return for no reason (a signal,
//! a spurious wake-up, a wake meant for an earlier sleeper); callers always
//! re-check their condition in a loop. The result says why it returned as
//! far as the kernel knows, which is useful for timeouts and statistics,
//! never as proof that the condition holds.
//!
//! Errors: `EINTR` (a signal) is reported as [`Wake::Interrupted`], a
//! spurious return; `EAGAIN` (the word no longer held `expected`) as
//! [`Wake::Changed`]; `ETIMEDOUT` as [`Wake::TimedOut`]. [`Wake::Woken`]
//! is exactly the kernel's success: a [`wake`] (or a waking [`requeue`])
//! took this thread off the word's queue, so every such return matches
//! one thread in some waker's count (the condition variable counts its
//! sleepers out by it). Any other error
//! would be a bug in locklab (a bad address, bad flags), and aborts with a
//! message rather than let a lock spin or deadlock silently.
//!
//! [`requeue`] (`FUTEX_CMP_REQUEUE`) moves sleepers from one word to another
//! without waking them; the condition variable uses it to line up the
//! waiters of a broadcast on a word of its own (see `condvar.rs`). Under
//! Miri, which does not emulate it, [`requeue`] wakes the sleepers instead:
//! a spurious wake-up for each, which the contract below allows.
//!
//! All futexes here are process-private (`FUTEX_PRIVATE_FLAG`): cheaper, as
//! the kernel keys them by address without looking up a shared mapping.
//! Timeouts are relative and are recomputed from an absolute deadline after
//! an interruption, so a signal storm cannot extend a wait.
//!
//! Under `--cfg loom` the same API is modelled with loom's `Mutex` and
//! `Condvar`: a per-execution table of sleepers, each with the address it
//! sleeps on, where the compare-and-enqueue happens under the table's mutex
//! just as the kernel does it under its hash-bucket lock. Loom has no clock,
//! so a timed wait whose word still holds `expected` returns
//! [`Wake::TimedOut`] at once: it explores the "the timeout fired before
//! any wake" branch, and untimed waits explore the rest.

use crate::util::sync::AtomicU32;
use std::time::Instant;

/// Why [`wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Woken by [`wake`] (or a waking [`requeue`]): this thread is one of
    /// the waker's count. Still re-check: the wake may be meant for an
    /// earlier state.
    Woken,
    /// A signal interrupted the sleep: re-check.
    Interrupted,
    /// The word did not hold `expected`, so the thread never slept.
    Changed,
    /// The deadline passed.
    TimedOut,
}

/// Sleeps while `word` holds `expected`, until woken or until `deadline`.
///
/// Returns at once with [`Wake::Changed`] if the word holds anything else,
/// and at once with [`Wake::TimedOut`] if the deadline has already passed.
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> Wake {
    imp::wait(word, expected, deadline)
}

/// Wakes up to `n` threads sleeping on `word`; returns how many woke.
#[inline]
pub fn wake(word: &AtomicU32, n: u32) -> u32 {
    #[cfg(all(test, not(loom)))]
    WAKE_CALLS.with(|w| w.set(w.get() + 1));
    imp::wake(word, n)
}

#[cfg(all(test, not(loom)))]
std::thread_local! {
    /// Wake system calls made by this thread, for tests of the locks that
    /// promise to make none when nobody sleeps.
    static WAKE_CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Wake calls this thread has made so far (tests only).
#[cfg(all(test, not(loom)))]
pub(crate) fn wake_calls() -> u64 {
    WAKE_CALLS.with(std::cell::Cell::get)
}

/// Wakes one thread sleeping on `word`; returns whether one woke.
#[inline]
pub fn wake_one(word: &AtomicU32) -> bool {
    wake(word, 1) > 0
}

/// Wakes every thread sleeping on `word`; returns how many woke.
#[inline]
pub fn wake_all(word: &AtomicU32) -> u32 {
    wake(word, i32::MAX as u32)
}

/// Moves threads sleeping on `from` to sleep on `to` instead, after waking
/// up to `wake` of them, but only if `from` still holds `expected`
/// (`FUTEX_CMP_REQUEUE`). Moves at most `requeue` threads.
///
/// Returns how many threads were woken or moved, or `None` if `from` did not
/// hold `expected` (nobody was touched). A moved thread's [`wait`] goes on
/// exactly as if it had slept on `to` all along: only a wake on `to` (or a
/// signal, or its deadline) ends it. `from` and `to` must differ.
#[inline]
pub fn requeue(
    from: &AtomicU32,
    expected: u32,
    wake: u32,
    to: &AtomicU32,
    requeue: u32,
) -> Option<u32> {
    imp::requeue(from, expected, wake, to, requeue)
}

#[cfg(all(not(loom), target_os = "linux"))]
mod imp {
    use super::Wake;
    use crate::util::sync::AtomicU32;
    use std::time::{Duration, Instant};

    /// The time left until `deadline`, or `None` if it has passed.
    fn remaining(deadline: Instant) -> Option<Duration> {
        let left = deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// `futex(2)`; the syscall has no wrapper in libc.
    ///
    /// # Safety
    /// `uaddr` must point to a live, aligned 32-bit word.
    unsafe fn futex(
        uaddr: *const u32,
        op: libc::c_int,
        val: u32,
        timeout: *const libc::timespec,
    ) -> libc::c_long {
        // SAFETY: the caller vouches for `uaddr`; `timeout` is null or points
        // to a timespec on the caller's stack; the remaining arguments are
        // unused by FUTEX_WAIT and FUTEX_WAKE.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                uaddr,
                op,
                val,
                timeout,
                core::ptr::null::<u32>(),
                0u32,
            )
        }
    }

    fn errno() -> libc::c_int {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    #[cold]
    fn fatal(what: &str, err: libc::c_int) -> ! {
        eprintln!(
            "locklab: futex {what} failed: {}",
            std::io::Error::from_raw_os_error(err)
        );
        std::process::abort();
    }

    pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> Wake {
        let ts = match deadline {
            None => None,
            Some(d) => {
                let Some(left) = remaining(d) else {
                    return Wake::TimedOut;
                };
                Some(libc::timespec {
                    // Clamp: a deadline centuries away is "forever".
                    tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
                    tv_nsec: left.subsec_nanos() as libc::c_long,
                })
            }
        };
        let tp = ts
            .as_ref()
            .map_or(core::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a live AtomicU32, which has the size and
        // alignment of a u32; the kernel only reads it.
        let r = unsafe {
            futex(
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                tp,
            )
        };
        if r == 0 {
            return Wake::Woken;
        }
        match errno() {
            libc::EAGAIN => Wake::Changed,
            libc::EINTR => Wake::Interrupted,
            libc::ETIMEDOUT => Wake::TimedOut,
            e => fatal("wait", e),
        }
    }

    pub fn wake(word: &AtomicU32, n: u32) -> u32 {
        let n = n.min(i32::MAX as u32);
        // SAFETY: as in `wait`; FUTEX_WAKE does not even read the word.
        let r = unsafe {
            futex(
                word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                n,
                core::ptr::null(),
            )
        };
        if r < 0 {
            fatal("wake", errno());
        }
        r as u32
    }

    /// Under Miri, which emulates `FUTEX_WAIT`, `FUTEX_WAKE` and their
    /// bitset forms but not `FUTEX_CMP_REQUEUE`: wake the threads instead
    /// of moving them. That keeps the contract of [`super::requeue`] as
    /// callers rely on it, because a woken thread's [`wait`] returns
    /// [`Wake::Woken`], which every caller must already take as possibly
    /// spurious and answer by re-checking its condition (and waiting again,
    /// on whichever word that condition names). So a thread woken where
    /// the kernel would have moved it sees a spurious wake-up, never a lost
    /// one: the condvar's broadcast turns back into a thundering herd,
    /// slower but correct, and its chain of wakes on `to` finds nobody.
    /// The compare is a plain load, not atomic with the wake as the
    /// kernel's is; that too costs only spurious wake-ups (a thread that
    /// started sleeping after the load is woken early), and `None` still
    /// means that nobody was touched.
    #[cfg(miri)]
    pub fn requeue(
        from: &AtomicU32,
        expected: u32,
        wake: u32,
        _to: &AtomicU32,
        requeue: u32,
    ) -> Option<u32> {
        use crate::util::sync::Ordering;
        if from.load(Ordering::Relaxed) != expected {
            return None;
        }
        Some(self::wake(from, wake.saturating_add(requeue)))
    }

    #[cfg(not(miri))]
    pub fn requeue(
        from: &AtomicU32,
        expected: u32,
        wake: u32,
        to: &AtomicU32,
        requeue: u32,
    ) -> Option<u32> {
        // SAFETY: both words are live AtomicU32s; the kernel reads `from`
        // only; FUTEX_CMP_REQUEUE takes the requeue limit in the timeout
        // slot, as an integer.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                from.as_ptr(),
                libc::FUTEX_CMP_REQUEUE | libc::FUTEX_PRIVATE_FLAG,
                wake.min(i32::MAX as u32),
                requeue.min(i32::MAX as u32) as libc::c_ulong,
                to.as_ptr(),
                expected,
            )
        };
        if r >= 0 {
            return Some(r as u32);
        }
        match errno() {
            libc::EAGAIN => None,
            e => fatal("requeue", e),
        }
    }
}

#[cfg(all(not(loom), not(target_os = "linux")))]
compile_error!("locklab's sleeping locks need Linux futexes");

#[cfg(loom)]
mod imp {
    use super::Wake;
    use crate::util::sync::{AtomicU32, Ordering};
    use loom::sync::{Condvar, Mutex};
    use std::time::Instant;

    /// One sleeping thread: the address it sleeps on, and whether a wake
    /// has picked it.
    struct Sleeper {
        addr: usize,
        id: u64,
        woken: bool,
    }

    #[derive(Default)]
    struct Table {
        sleepers: Vec<Sleeper>,
        next_id: u64,
    }

    loom::lazy_static! {
        static ref TABLE: Mutex<Table> = Mutex::new(Table::default());
        static ref BELL: Condvar = Condvar::new();
    }

    fn addr(word: &AtomicU32) -> usize {
        word as *const AtomicU32 as usize
    }

    pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> Wake {
        let mut t = TABLE.lock().unwrap();
        // The kernel's compare, under the same lock as the wakers' scan.
        if word.load(Ordering::SeqCst) != expected {
            return Wake::Changed;
        }
        if deadline.is_some() {
            // No clock under loom: the timeout fires before any wake.
            return Wake::TimedOut;
        }
        let id = t.next_id;
        t.next_id += 1;
        t.sleepers.push(Sleeper {
            addr: addr(word),
            id,
            woken: false,
        });
        loop {
            t = BELL.wait(t).unwrap();
            let i = t
                .sleepers
                .iter()
                .position(|s| s.id == id)
                .expect("a sleeper leaves the table only by itself");
            if t.sleepers[i].woken {
                t.sleepers.remove(i);
                return Wake::Woken;
            }
        }
    }

    pub fn wake(word: &AtomicU32, n: u32) -> u32 {
        let mut t = TABLE.lock().unwrap();
        let a = addr(word);
        let mut woke = 0;
        // Oldest first, as the kernel does for sleepers of equal priority.
        for s in t.sleepers.iter_mut() {
            if woke == n {
                break;
            }
            if s.addr == a && !s.woken {
                s.woken = true;
                woke += 1;
            }
        }
        if woke > 0 {
            BELL.notify_all();
        }
        woke
    }

    pub fn requeue(
        from: &AtomicU32,
        expected: u32,
        wake: u32,
        to: &AtomicU32,
        requeue: u32,
    ) -> Option<u32> {
        let mut t = TABLE.lock().unwrap();
        // The kernel's compare, under the same lock as sleepers' compares.
        if from.load(Ordering::SeqCst) != expected {
            return None;
        }
        let (a, b) = (addr(from), addr(to));
        let (mut woke, mut moved) = (0, 0);
        for s in t.sleepers.iter_mut() {
            if s.addr != a || s.woken {
                continue;
            }
            if woke < wake {
                s.woken = true;
                woke += 1;
            } else if moved < requeue {
                s.addr = b;
                moved += 1;
            } else {
                break;
            }
        }
        if woke > 0 {
            BELL.notify_all();
        }
        Some(woke + moved)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::sync::Ordering;
    use crate::util::testing::limit;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_changed_word_returns_at_once() {
        let w = AtomicU32::new(1);
        assert_eq!(wait(&w, 0, None), Wake::Changed);
    }

    #[test]
    fn a_past_deadline_returns_at_once_and_a_near_one_times_out() {
        let w = AtomicU32::new(0);
        assert_eq!(wait(&w, 0, Some(Instant::now())), Wake::TimedOut);
        let t = Instant::now();
        let d = Duration::from_millis(20);
        // A spurious return is allowed; loop as every caller must.
        while wait(&w, 0, Some(t + d)) != Wake::TimedOut {}
        assert!(t.elapsed() >= d);
    }

    #[test]
    fn wake_without_sleepers_wakes_nobody() {
        let w = AtomicU32::new(0);
        assert_eq!(wake_all(&w), 0);
        assert!(!wake_one(&w));
    }

    #[test]
    fn a_sleeper_wakes_when_the_word_changes_and_wake_is_called() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let h = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                wait(&w2, 0, None);
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        w.store(1, Ordering::Release);
        wake_all(&w);
        h.join().unwrap();
    }

    #[test]
    fn requeue_checks_the_word_and_moves_sleepers_to_the_other_word() {
        let from = Arc::new(AtomicU32::new(0));
        let to = Arc::new(AtomicU32::new(0));
        assert_eq!(requeue(&from, 1, 0, &to, u32::MAX), None, "word differs");
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let from = from.clone();
                std::thread::spawn(move || while wait(&from, 0, None) != Wake::Woken {})
            })
            .collect();
        // Move both (once they sleep), then only wakes on `to` can end them.
        let mut moved = 0;
        let give_up = Instant::now() + limit(Duration::from_secs(20));
        while moved < 2 {
            assert!(Instant::now() < give_up, "sleepers never went to sleep");
            moved += requeue(&from, 0, 0, &to, u32::MAX).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(wake_all(&from), 0, "nobody is left on `from`");
        while !hs.iter().all(|h| h.is_finished()) {
            assert!(Instant::now() < give_up, "moved sleepers never woke");
            wake_all(&to);
            std::thread::sleep(Duration::from_millis(1));
        }
        for h in hs {
            h.join().unwrap();
        }
    }

    #[test]
    fn wake_one_wakes_exactly_one_of_several_sleepers() {
        let w = Arc::new(AtomicU32::new(0));
        let done = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let (w, done) = (w.clone(), done.clone());
                std::thread::spawn(move || {
                    // Sleep until woken for real (the word is never changed,
                    // so only a wake or a rare spurious return ends a wait;
                    // a spurious one simply waits again).
                    while wait(&w, 0, None) != Wake::Woken {}
                    done.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Wake one at a time until all three are out; each wake that
        // reports a woken thread must account for exactly one.
        let mut woken = 0;
        let give_up = Instant::now() + limit(Duration::from_secs(20));
        while woken < 3 {
            assert!(Instant::now() < give_up, "sleepers never went to sleep");
            if wake_one(&w) {
                woken += 1;
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), 3);
    }
}
