//! `rwsem`: a sleeping reader-writer lock in the manner of Linux's
//! `rw_semaphore`.
//!
//! # Idea
//!
//! One 32-bit state word holds the reader count and a few flags. An
//! uncontended reader takes the lock with one `fetch_add` of a reader unit
//! and looks at the value it replaced; an uncontended writer with one
//! compare-and-swap from 0. Under contention a writer first spins for a few
//! tens of microseconds while another writer holds the lock (optimistic
//! spinning: a running holder is likely to let go soon, and a futex sleep
//! plus wake-up costs several microseconds), then sleeps; a writer that
//! spins on readers holds new readers back meanwhile. A reader that finds
//! a writer in or ahead of it spins briefly too, then sleeps. Sleepers sleep on one of two futex *sequence* words, one per side,
//! so a release can wake all readers, or one writer, without waking the
//! other side.
//!
//! Sources: Linux `kernel/locking/rwsem.c` (count layout with flag bits below
//! a reader bias, `RWSEM_FLAG_HANDOFF`, writer lock stealing, optimistic
//! spinning, the time-bounded writer spin on a reader-owned lock); seed 001,
//! Bueso, "Scalability Techniques for Practical Synchronization Primitives"
//! (ACM Queue 2014): fast path / mid path (spin) / slow path (sleep), writer
//! lock stealing breaking strict FIFO between writers for throughput, CCAS
//! (read the word before trying the read-modify-write), and the difficulty
//! of spinning on readers; Drepper, "Futexes Are Tricky" (2011) for the
//! futex wait/wake protocol; the waiting-flags-plus-notify-word shape is also
//! used by Rust std's futex `RwLock`.
//!
//! # State word
//!
//! ```text
//!  bit 0      WRITER     held by a writer
//!  bit 1      R_WAIT     a reader sleeps (or is about to) on `read_seq`
//!  bit 2      W_WAIT     a writer sleeps (or is about to) on `write_seq`
//!  bit 3      HANDOFF    a starved waiter owns the next turn: no stealing
//!  bit 4      HANDOFF_R  ... and that waiter is a reader (else a writer)
//!  bit 5      W_SPIN     a writer spins on a reader-held lock: no new reader
//!  bits 6..31 readers    number of read holders, plus readers that added
//!                        themselves on the fast path and are about to take
//!                        themselves off again; bit 31 set = overflow
//! ```
//!
//! The word is only ever changed by read-modify-write operations, never by a
//! plain store. That matters for the orderings below: any value a later
//! `Acquire` reads lies in the release sequence of every earlier `Release`
//! RMW on the word.
//!
//! # Who may enter
//!
//! - A reader, if no writer holds and either no handoff is pending and no
//!   writer waits or spins on readers (`W_WAIT`, `W_SPIN`: writer
//!   preference, so a stream of readers cannot starve a writer), or the
//!   pending handoff is the readers' (`HANDOFF_R`).
//! - A writer, if nobody holds and no handoff is pending, or the pending
//!   handoff is its own. A writer that finds the lock free takes it even when
//!   others sleep: **writer lock stealing**, as in Linux (seed 001: it breaks
//!   strict FIFO order between writers, for performance; a running writer
//!   is cheaper to admit than a sleeping one is to wake).
//!
//! # Optimistic spinning
//!
//! A writer that misses the fast path spins (re-reading the word, CCAS):
//! six rounds of pause hints that double (63 hints), then rounds that
//! yield the CPU, for at most [`SPIN_LIMIT`] from the first yield (under
//! loom one round). Spinning on *readers* is different, as seed 001 says:
//! there is no single owner whose progress one can watch, and the readers
//! may be many, or descheduled; Linux bounds that spin by a time threshold
//! (`rwsem_rspin_threshold`). Here a writer that finds the lock
//! reader-held sets `W_SPIN`, which turns new readers away as `W_WAIT`
//! does, so that the readers inside drain instead of being replaced (a
//! writer of `parking_lot::RwLock` likewise closes the lock to readers as
//! soon as it arrives); it gives up after the shorter
//! [`READER_SPIN_LIMIT`]. A pending handoff that is not ours also ends the
//! spin at once. `W_SPIN` never outlives its writer's attempt: the CAS by
//! which any writer enters clears it, and a writer that stops spinning
//! trades it for `W_WAIT` in the CAS that sends it to sleep. Measured in
//! one run against the previous rwsem (`bench hash`, `global-rw`, AMD EPYC
//! guest, 2 cores): 1.19–1.46× at 50 % writes from 2 to 16 threads, 1.35×
//! at 10 % and 4 threads, ties elsewhere but 0.94× (0.91–0.96) at 1 % and
//! 2 threads.
//!
//! A reader that cannot enter (a writer holds, waits or spins) spins the
//! same way, for at most [`SPIN_LIMIT`], before it sleeps.
//!
//! # Handoff: neither side starves
//!
//! A waiter that has been blocked for longer than [`HANDOFF_AFTER`] (1 ms;
//! Linux uses a few ms) is *starved*. It claims the single handoff by setting
//! `HANDOFF` (with `HANDOFF_R` if it is a reader) when no handoff is pending;
//! until then it re-checks every `HANDOFF_AFTER` (a timed futex wait).
//! - A starved writer claims whenever it can. From then on no writer may
//!   steal and no new reader may enter; the readers inside drain, and the
//!   owner takes the lock (clearing `HANDOFF` in the same CAS).
//! - A starved reader claims only while a *writer* holds the lock (readers
//!   are blocked by writers waiting, which get in once the readers inside
//!   drain; the reader's turn comes after a writer). When that writer
//!   releases, no writer may enter, every reader may, and the owner clears
//!   the handoff as it enters.
//! - A release that sees a writer's handoff pending wakes *all* sleeping
//!   writers, so the owner is surely among them.
//!
//! A writer's unlock wakes every sleeping reader and one writer, so after a
//! write section the waiting readers get a turn (they race the woken writer,
//! and a starved reader wins it by the handoff); the last reader out wakes
//! one writer. Under loom there is no clock: a waiter is starved after one
//! futex wait that did not get it the lock, and sleeps untimed.
//!
//! # Recursive read while a writer waits: deadlock
//!
//! The design prefers writers: a reader that arrives while a writer waits
//! blocks (and once the writer has waited 1 ms its handoff blocks new
//! readers too), and a starved reader's handoff only applies after a writer
//! has held the lock. So a thread that holds a read lock and asks for another one
//! while a writer waits deadlocks: the writer waits for the first read lock,
//! the second read waits for the writer. This is the same rule as Linux's
//! `rw_semaphore` (recursive `down_read` is forbidden; lockdep reports it)
//! and `parking_lot::RwLock` (`read_recursive` exists for this). Do not
//! take a read lock recursively. The test
//! `recursive_read_blocks_behind_a_waiting_writer` shows it.
//!
//! # Orderings
//!
//! - Entering (`fetch_add` of a reader unit; the writer's CAS; the slow
//!   paths' entering CAS) is `Acquire`: it reads a value in the release
//!   sequence of the last writer's `Release` unlock, so the new critical
//!   section sees the previous write section.
//! - Leaving is `Release`: a reader's `fetch_sub` orders its reads before a
//!   later writer's writes (the writer's `Acquire` CAS reads the count that
//!   RMW produced, or a later RMW's); the writer's CAS or `fetch_and`
//!   publishes its writes to the next readers and writer.
//! - Setting waiting flags or claiming the handoff is `Relaxed` for readers:
//!   it carries no data. Its only job is to be seen by the releaser's RMW,
//!   which the atomicity of RMWs on one word guarantees. A writer's is
//!   `Release`, and the RMWs that clear `W_WAIT` before waking a writer are
//!   `Acquire`, for the count of waiting writers (below).
//! - A sleeper reads its sequence word with `Acquire`; a waker bumps it with
//!   `Release` (see below for why).
//! - Failed CASes and snapshots (`is_locked`, the spin's re-reads) are
//!   `Relaxed`; whatever they lead to is re-validated by an `Acquire` CAS.
//!
//! # No lost wake-up
//!
//! A sleeper (1) loads its side's sequence word `seq` (value `v`), (2) sets
//! its side's waiting flag with an RMW on the state word, having seen there
//! that it cannot enter, and (3) calls `futex::wait(seq, v)`. A releaser (a)
//! changes the state word with an RMW that also clears the flags it will act
//! on, and if a flag was set, (b) bumps `seq` and (c) calls `futex::wake`.
//! If (2) precedes (a) in the word's modification order, the releaser sees
//! the flag and wakes. The sleeper's `v` is older than the bump: had (1)
//! read the bump, then by `Acquire`/`Release` (a) would happen before (2),
//! and (2) would follow (a) in the modification order. So either the kernel
//! compare in (3) sees the bump and does not sleep, or (3) sleeps before
//! (c)'s wake, which finds it (the kernel compares and enqueues under the
//! lock that `wake` takes). If (a) precedes (2), the sleeper saw the state
//! after the release and sleeps only if another holder took the lock since;
//! that holder's release sees the flag. Which transitions must wake whom:
//! - only a writer's unlock and the last reader's exit make the lock
//!   enterable for a writer, and both wake writers if `W_WAIT` was set;
//! - only a writer's unlock makes it enterable for a sleeping reader (a
//!   reader sleeps while a writer holds, or while `W_WAIT`, `W_SPIN` or a
//!   writer's handoff is pending; `W_WAIT` set means a writer is in its
//!   slow path or holds the lock having re-asserted the flag, and that
//!   writer's unlock wakes all readers; `W_SPIN` set means a writer spins,
//!   and it leaves the flag only by entering (its unlock wakes the
//!   readers) or by trading it for `W_WAIT`);
//! - readers are woken all at once, so none is left asleep with `R_WAIT`
//!   cleared; writers are woken one at a time, so a woken writer re-asserts
//!   `W_WAIT` when it takes the lock, for those still asleep, if the count
//!   of writers in the sleeping loop (`writers_waiting`, which includes
//!   it) says there are others. A writer is counted before its first
//!   `W_WAIT`, which is `Release`; the releaser's RMW that clears the flag
//!   is `Acquire` and reads that write or a later one, and the futex wake
//!   that follows it happens before the woken writer's return (the kernel
//!   orders both under its bucket lock), so the woken writer's load sees
//!   every writer whose flag its waker cleared. A count that is too high
//!   (a writer still on its way to setting the flag itself) only costs a
//!   futex call that wakes nobody, which is what every woken writer's
//!   unlock cost before the count (at 50 % writes, 20–30 % more writer
//!   wake calls than writer sleeps). An unlock with no flag set never
//!   makes one.
//! - a claimed handoff changes nothing a sleeper waits for, except that a
//!   writer's handoff makes its owner the only writer that may enter, which
//!   is why such a release wakes all writers.
//!
//! `seq` wraps after 2³² wakes; a sleeper that misses exactly that many
//! between (1) and (3) would sleep on. Like every futex sequence counter,
//! that is accepted.

use crate::block::futex;
use crate::info::{Described, Family, LockInfo};
#[cfg(not(loom))]
use crate::util::backoff::spin_for;
#[cfg(loom)]
use crate::util::sync::spin_loop;
#[cfg(not(loom))]
use crate::util::sync::yield_now;
use crate::util::sync::{AtomicU32, Ordering};
#[cfg(not(loom))]
use std::time::{Duration, Instant};

const WRITER: u32 = 1 << 0;
const R_WAIT: u32 = 1 << 1;
const W_WAIT: u32 = 1 << 2;
const HANDOFF: u32 = 1 << 3;
const HANDOFF_R: u32 = 1 << 4;
const W_SPIN: u32 = 1 << 5;
const READER_SHIFT: u32 = 6;
const READER: u32 = 1 << READER_SHIFT;
const OVERFLOW: u32 = 1 << 31;
/// Anything in the value a fast-path reader replaced that sends it to the
/// slow path.
const READ_FAIL: u32 = WRITER | W_WAIT | W_SPIN | HANDOFF | OVERFLOW;

/// How long a writer spins on a writer-held lock before sleeping.
#[cfg(not(loom))]
pub const SPIN_LIMIT: Duration = Duration::from_micros(30);
/// How long a writer spins on a reader-held lock (holding new readers back
/// with `W_SPIN`) before sleeping.
#[cfg(not(loom))]
pub const READER_SPIN_LIMIT: Duration = Duration::from_micros(10);
/// How long a waiter may stay blocked before it claims the handoff.
#[cfg(not(loom))]
pub const HANDOFF_AFTER: Duration = Duration::from_millis(1);

/// Rounds of a spin that pause (1, 2, 4, … spin-loop hints, 63 in all)
/// before the spin yields its CPU instead.
#[cfg(not(loom))]
const PAUSE_ROUNDS: u32 = 6;
/// Spin rounds under loom, which has no clock.
#[cfg(loom)]
const LOOM_SPINS: u32 = 1;

/// What one more round of a spin may do.
enum Round {
    /// The spin's time is up: stop.
    Over,
    /// Paused; carry on.
    On,
    /// Read the clock (the time) and yielded.
    #[cfg(not(loom))]
    Clock(Instant),
}

/// The budget of one optimistic spin: [`PAUSE_ROUNDS`] rounds of pauses
/// that double, then yields for at most [`SPIN_LIMIT`] (timed from the
/// first yield); under loom, [`LOOM_SPINS`] rounds.
struct Spin {
    rounds: u32,
    #[cfg(not(loom))]
    start: Option<Instant>,
}

impl Spin {
    fn new() -> Self {
        Self {
            rounds: 0,
            #[cfg(not(loom))]
            start: None,
        }
    }

    /// Counts a round and waits a little, unless the budget is spent.
    #[inline]
    fn round(&mut self) -> Round {
        self.rounds += 1;
        #[cfg(not(loom))]
        {
            if self.rounds <= PAUSE_ROUNDS {
                spin_for(1 << (self.rounds - 1));
                return Round::On;
            }
            let now = Instant::now();
            // Timed from the first yield, a few microseconds in.
            if now - *self.start.get_or_insert(now) > SPIN_LIMIT {
                return Round::Over;
            }
            yield_now();
            Round::Clock(now)
        }
        #[cfg(loom)]
        {
            if self.rounds >= LOOM_SPINS {
                return Round::Over;
            }
            spin_loop();
            Round::On
        }
    }
}

#[inline]
const fn readers(s: u32) -> u32 {
    s >> READER_SHIFT
}

#[inline]
const fn read_enterable(s: u32) -> bool {
    if s & WRITER != 0 {
        false
    } else if s & HANDOFF != 0 {
        s & HANDOFF_R != 0
    } else {
        s & (W_WAIT | W_SPIN) == 0
    }
}

#[inline]
const fn write_enterable(s: u32, handoff_owner: bool) -> bool {
    s & WRITER == 0 && readers(s) == 0 && (s & HANDOFF == 0 || handoff_owner)
}

/// Sleeping reader-writer lock with writer lock stealing, optimistic
/// spinning for writers and a starvation handoff. See the module
/// documentation.
///
/// Recursive read locking deadlocks if a writer starts waiting between the
/// two acquisitions (as with Linux's `rw_semaphore` and
/// `parking_lot::RwLock`): never take a read lock on a `RawRwSem` whose read
/// lock this thread already holds.
#[derive(Debug)]
pub struct RawRwSem {
    state: AtomicU32,
    /// Futex word sleeping readers wait on; bumped by each reader wake-up.
    read_seq: AtomicU32,
    /// Futex word sleeping writers wait on; bumped by each writer wake-up.
    write_seq: AtomicU32,
    /// Writers in the sleeping loop of the slow path, counted from before
    /// their first `W_WAIT` until they enter: a woken writer re-asserts
    /// `W_WAIT` for the others only while this says there are any.
    writers_waiting: AtomicU32,
}

/// How long a waiter has been blocked, and what it may do about it.
struct Patience {
    #[cfg(not(loom))]
    since: Option<Instant>,
    #[cfg(loom)]
    rounds: u32,
    /// This waiter set `HANDOFF`.
    owner: bool,
    /// This waiter has set its side's waiting flag at least once.
    flagged: bool,
}

impl Patience {
    fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            since: None,
            #[cfg(loom)]
            rounds: 0,
            owner: false,
            flagged: false,
        }
    }

    /// Blocked long enough to claim the handoff.
    fn starved(&self) -> bool {
        #[cfg(not(loom))]
        return self.since.is_some_and(|t| t.elapsed() >= HANDOFF_AFTER);
        #[cfg(loom)]
        return self.rounds >= 1;
    }

    /// Sleeps on `seq` while it holds `v`. A handoff owner sleeps until woken
    /// (releases wake it); others wake up by themselves to claim the handoff
    /// once starved.
    fn sleep(&mut self, seq: &AtomicU32, v: u32) {
        #[cfg(not(loom))]
        {
            let now = Instant::now();
            let since = *self.since.get_or_insert(now);
            let deadline = if self.owner {
                None
            } else {
                Some((since + HANDOFF_AFTER).max(now + HANDOFF_AFTER))
            };
            futex::wait(seq, v, deadline);
        }
        #[cfg(loom)]
        {
            futex::wait(seq, v, None);
            self.rounds += 1;
        }
    }
}

impl RawRwSem {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self {
                state: AtomicU32::new(0),
                read_seq: AtomicU32::new(0),
                write_seq: AtomicU32::new(0),
                writers_waiting: AtomicU32::new(0),
            }
        }
    }

    /// Takes a read lock, sleeping while a writer holds or waits.
    #[inline]
    pub fn acquire_shared(&self) {
        let prev = self.state.fetch_add(READER, Ordering::Acquire);
        if prev & READ_FAIL != 0 {
            self.acquire_shared_slow(prev);
        }
    }

    #[cold]
    fn acquire_shared_slow(&self, prev: u32) {
        if prev & OVERFLOW != 0 {
            // SAFETY: we added the reader unit just now.
            unsafe { self.release_shared() };
            panic!("rwsem: too many readers");
        }
        if read_enterable(prev) {
            // The readers' handoff is pending and no writer holds: we are in.
            return;
        }
        // Take our unit off again; if we were the last one counted, this
        // wakes the writer we made wait.
        // SAFETY: we added the reader unit just now.
        unsafe { self.release_shared() };
        if self.spin_for_read() {
            return;
        }
        let mut p = Patience::new();
        loop {
            let v = self.read_seq.load(Ordering::Acquire);
            let mut s = self.state.load(Ordering::Relaxed);
            loop {
                if read_enterable(s) {
                    let mut new = s + READER;
                    if p.owner {
                        new &= !(HANDOFF | HANDOFF_R);
                    }
                    match self.state.compare_exchange_weak(
                        s,
                        new,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => return,
                        Err(x) => s = x,
                    }
                    continue;
                }
                // Claim the handoff only while a writer holds: the readers'
                // turn comes after a writer (see the module docs).
                let claim = !p.owner && s & (HANDOFF | WRITER) == WRITER && p.starved();
                let new = if claim {
                    s | HANDOFF | HANDOFF_R | R_WAIT
                } else {
                    s | R_WAIT
                };
                if new == s {
                    break;
                }
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        p.owner |= claim;
                        break;
                    }
                    Err(x) => s = x,
                }
            }
            p.sleep(&self.read_seq, v);
        }
    }

    /// Takes a read lock if that needs no waiting.
    #[inline]
    pub fn try_acquire_shared(&self) -> bool {
        self.try_add_reader(|s| read_enterable(s) && s & OVERFLOW == 0)
    }

    /// Takes a read lock if no writer *holds* it, even while writers wait
    /// (or a writer's hand-off is pending): for a caller entitled to pass
    /// waiting writers (POSIX's rule for a real-time reader of higher
    /// priority than every waiting writer, which `locklab-preload` keeps).
    /// A waiting writer finds a reader counted, as it does when readers
    /// were inside before it began to wait, and the last reader's release
    /// wakes it as usual.
    #[inline]
    pub fn try_acquire_shared_past_waiters(&self) -> bool {
        self.try_add_reader(|s| s & (WRITER | OVERFLOW) == 0)
    }

    /// Counts one more reader while `enterable` holds of the state.
    #[inline]
    fn try_add_reader(&self, enterable: impl Fn(u32) -> bool) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while enterable(s) {
            match self.state.compare_exchange_weak(
                s,
                s + READER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The caller must hold a read lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_shared(&self) {
        let prev = self.state.fetch_sub(READER, Ordering::Release);
        if readers(prev) == 1 && prev & (WRITER | W_WAIT) == W_WAIT {
            self.wake_writer_after_readers();
        }
    }

    /// The last reader left while a writer waits: wake it, unless someone
    /// took the lock meanwhile (their release will).
    #[cold]
    fn wake_writer_after_readers(&self) {
        let mut s = self.state.load(Ordering::Relaxed);
        while readers(s) == 0 && s & (WRITER | W_WAIT) == W_WAIT {
            // Acquire: as in `release_exclusive_slow`.
            match self.state.compare_exchange_weak(
                s,
                s & !W_WAIT,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.wake_writers(s);
                    return;
                }
                Err(x) => s = x,
            }
        }
    }

    /// Takes the write lock: one CAS if free, else spin while that may pay,
    /// then sleep.
    #[inline]
    pub fn acquire_exclusive(&self) {
        if self
            .state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.acquire_exclusive_slow();
        }
    }

    #[cold]
    fn acquire_exclusive_slow(&self) {
        if self.spin_for_write() {
            return;
        }
        let mut p = Patience::new();
        // Counted before our first W_WAIT (which is Release, so that a
        // releaser that clears it, with Acquire, and then wakes a writer
        // passes the count on to that writer).
        self.writers_waiting.fetch_add(1, Ordering::Relaxed);
        loop {
            let v = self.write_seq.load(Ordering::Acquire);
            let mut s = self.state.load(Ordering::Relaxed);
            loop {
                if write_enterable(s, p.owner) {
                    let mut new = s | WRITER;
                    if p.flagged && self.writers_waiting.load(Ordering::Relaxed) > 1 {
                        // We may have been woken alone while other writers
                        // sleep with the flag cleared by our waker; the
                        // count (which includes us) says whether any do.
                        new |= W_WAIT;
                    }
                    if p.owner {
                        new &= !HANDOFF;
                    }
                    new &= !W_SPIN;
                    match self.state.compare_exchange_weak(
                        s,
                        new,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            self.writers_waiting.fetch_sub(1, Ordering::Relaxed);
                            return;
                        }
                        Err(x) => s = x,
                    }
                    continue;
                }
                let claim = !p.owner && s & HANDOFF == 0 && p.starved();
                // W_WAIT holds readers back from here on, in place of any
                // spinner's W_SPIN.
                let new = if claim {
                    (s | HANDOFF | W_WAIT) & !W_SPIN
                } else {
                    (s | W_WAIT) & !W_SPIN
                };
                if new == s {
                    break;
                }
                match self
                    .state
                    .compare_exchange_weak(s, new, Ordering::Release, Ordering::Relaxed)
                {
                    Ok(_) => {
                        p.owner |= claim;
                        break;
                    }
                    Err(x) => s = x,
                }
            }
            p.flagged = true;
            p.sleep(&self.write_seq, v);
        }
    }

    /// A writer's optimistic spinning (the mid path): returns whether it
    /// took the lock.
    fn spin_for_write(&self) -> bool {
        let mut spin = Spin::new();
        #[cfg(not(loom))]
        let mut reader_since: Option<Instant> = None;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if write_enterable(s, false) {
                if self
                    .state
                    .compare_exchange_weak(
                        s,
                        (s | WRITER) & !W_SPIN,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if s & HANDOFF != 0 {
                return false;
            }
            let reader_owned = s & WRITER == 0;
            if reader_owned && s & (W_SPIN | W_WAIT) == 0 {
                // Hold new readers back while the ones inside drain (if
                // this fails, the next round looks again).
                let _ = self.state.compare_exchange_weak(
                    s,
                    s | W_SPIN,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            match spin.round() {
                Round::Over => return false,
                Round::On => {}
                #[cfg(not(loom))]
                Round::Clock(now) => {
                    if reader_owned && now - *reader_since.get_or_insert(now) > READER_SPIN_LIMIT {
                        return false;
                    }
                }
            }
        }
    }

    /// A reader's optimistic spinning: while a writer holds the lock or
    /// waits for it, re-reads the word for at most [`SPIN_LIMIT`]; returns
    /// whether it took a read lock.
    fn spin_for_read(&self) -> bool {
        let mut spin = Spin::new();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if read_enterable(s) {
                if self
                    .state
                    .compare_exchange_weak(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            if matches!(spin.round(), Round::Over) {
                return false;
            }
        }
    }

    /// Takes the write lock if it is free and no handoff is pending.
    #[inline]
    pub fn try_acquire_exclusive(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while write_enterable(s, false) {
            match self.state.compare_exchange_weak(
                s,
                (s | WRITER) & !W_SPIN,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Releases the write lock, waking sleepers if any are flagged.
    ///
    /// # Safety
    /// The caller must hold the write lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_exclusive(&self) {
        if self
            .state
            .compare_exchange(WRITER, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.release_exclusive_slow();
        }
    }

    #[cold]
    fn release_exclusive_slow(&self) {
        // Acquire too: a writer woken below reads `writers_waiting` after
        // the wake, and must see the count of every writer whose W_WAIT
        // this clears.
        let prev = self
            .state
            .fetch_and(!(WRITER | R_WAIT | W_WAIT), Ordering::AcqRel);
        if prev & R_WAIT != 0 {
            self.read_seq.fetch_add(1, Ordering::Release);
            futex::wake_all(&self.read_seq);
        }
        if prev & W_WAIT != 0 {
            self.wake_writers(prev);
        }
    }

    /// Bumps `write_seq` and wakes one writer, or all of them if a writer's
    /// handoff is pending in `s` (the owner must be among those woken).
    fn wake_writers(&self, s: u32) {
        self.write_seq.fetch_add(1, Ordering::Release);
        if s & (HANDOFF | HANDOFF_R) == HANDOFF {
            futex::wake_all(&self.write_seq);
        } else {
            futex::wake_one(&self.write_seq);
        }
    }

    /// Whether anyone holds the lock (a momentary snapshot; a reader about
    /// to back out of a failed fast path counts).
    #[inline]
    pub fn is_held(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & WRITER != 0 || readers(s) != 0
    }

    /// Whether a writer holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }

    /// The state word, for tests that watch waiters arrive.
    #[cfg(all(test, not(loom)))]
    fn bits(&self) -> u32 {
        self.state.load(Ordering::Relaxed)
    }
}

impl Default for RawRwSem {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawRwSem {
    const INFO: LockInfo = LockInfo {
        name: "rwsem",
        family: Family::Blocking,
        // Not FIFO: writers steal, a woken writer races new arrivals and the
        // woken readers. Starvation is bounded by the handoff instead.
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "Linux kernel/locking/rwsem.c (handoff, writer lock stealing, optimistic spinning); Bueso, ACM Queue 2014 (seed 001); Drepper, Futexes Are Tricky, 2011",
        summary: "reader count + flags in one word; readers fetch_add, writers CAS; writers steal and spin, then sleep on futex sequence words; a waiter blocked > 1 ms claims a handoff",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawRwSem;

    // SAFETY: a writer enters only by a CAS from a value with no writer and
    // no reader counted, and a reader only by an RMW that counts it on a
    // value without `WRITER` (a fast-path reader that saw `WRITER` takes its
    // unit off again without entering, and a writer cannot enter while that
    // unit is counted). So a write guard excludes every other guard. Entering
    // is `Acquire`, leaving `Release`, on one word changed only by RMWs.
    crate::guardless_raw_rwlock!(RawRwSem);

    /// A reader-writer lock protected by a [`RawRwSem`].
    ///
    /// Do not take a read lock recursively: if a writer starts waiting in
    /// between, the second read waits for the writer, which waits for the
    /// first read (the same rule as Linux's `rw_semaphore` and
    /// `parking_lot::RwLock`).
    pub type RwSem<T> = lock_api::RwLock<RawRwSem, T>;
}

#[cfg(not(loom))]
pub use raw::RwSem;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{
        self, rw_read_section as read_section, rw_write_section as write_section, until,
        RwShadow as Shadow, Watchdog, HANG,
    };
    use std::sync::atomic::{AtomicBool, AtomicU64};

    #[test]
    fn readers_share() {
        testing::rw_readers_share::<RawRwSem>();
    }

    #[test]
    fn try_locks() {
        testing::rw_try_locks::<RawRwSem>();
    }

    #[test]
    fn a_waiting_writer_turns_new_readers_away() {
        let _w = Watchdog::new("a_waiting_writer_turns_new_readers_away", HANG);
        let l = RwSem::new(0u32);
        let r = l.read();
        std::thread::scope(|s| {
            s.spawn(|| *l.write() += 1);
            // SAFETY: only reads the state word.
            let raw = unsafe { l.raw() };
            until(|| raw.bits() & W_WAIT != 0);
            assert!(l.try_read().is_none(), "try_read got past a waiting writer");
            drop(r);
        });
        assert_eq!(*l.read(), 1);
    }

    /// A reader entitled to pass waiting writers gets in while a writer
    /// waits, not while one holds; the waiting writer is woken once both
    /// readers have left.
    #[test]
    fn a_reader_past_waiters_enters_unless_a_writer_holds() {
        let _w = Watchdog::new("a_reader_past_waiters_enters_unless_a_writer_holds", HANG);
        let l = RwSem::new(0u32);
        let r = l.read();
        std::thread::scope(|s| {
            s.spawn(|| *l.write() += 1);
            // SAFETY: only reads the state word and takes a read lock that
            // is released below.
            let raw = unsafe { l.raw() };
            until(|| raw.bits() & W_WAIT != 0);
            let past = raw.try_acquire_shared_past_waiters();
            if past {
                // SAFETY: taken just above.
                unsafe { raw.release_shared() };
            }
            drop(r);
            assert!(
                past,
                "a reader past waiters was kept out by a waiting writer"
            );
        });
        assert_eq!(*l.read(), 1);
        let w = l.write();
        // SAFETY: only tries (and must fail).
        assert!(!unsafe { l.raw() }.try_acquire_shared_past_waiters());
        drop(w);
    }

    /// `W_SPIN`, left by a writer spinning on a reader-owned lock, turns
    /// new readers away (not those entitled to pass waiting writers), and
    /// the writer that enters clears it: left behind, it would keep readers
    /// out for good.
    #[test]
    fn a_spinning_writers_flag_holds_readers_back_until_a_writer_enters() {
        let l = RawRwSem::new();
        l.acquire_shared();
        l.state.fetch_or(W_SPIN, Ordering::Relaxed);
        assert!(
            !l.try_acquire_shared(),
            "a reader got past a spinning writer"
        );
        assert!(l.try_acquire_shared_past_waiters());
        // SAFETY: both read locks taken above.
        unsafe {
            l.release_shared();
            l.release_shared();
        }
        assert!(!l.is_held());
        assert!(l.try_acquire_exclusive());
        assert_eq!(l.bits(), WRITER, "try_acquire_exclusive left W_SPIN set");
        // SAFETY: taken just above.
        unsafe { l.release_exclusive() };
        // The spinning path (the fast path's CAS from 0 fails on the flag).
        l.state.fetch_or(W_SPIN, Ordering::Relaxed);
        l.acquire_exclusive();
        assert_eq!(l.bits(), WRITER, "acquire_exclusive left W_SPIN set");
        // SAFETY: taken just above.
        unsafe { l.release_exclusive() };
        assert_eq!(l.bits(), 0);
        assert!(l.try_acquire_shared());
        // SAFETY: taken just above.
        unsafe { l.release_shared() };
    }

    /// A writer that stops spinning on a reader-owned lock and goes to
    /// sleep trades its `W_SPIN` for `W_WAIT` in one step: new readers stay
    /// out, and the last reader's release wakes it.
    #[test]
    fn a_writer_that_sleeps_trades_w_spin_for_w_wait() {
        let _w = Watchdog::new("a_writer_that_sleeps_trades_w_spin_for_w_wait", HANG);
        let l = RawRwSem::new();
        l.acquire_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.bits() & W_WAIT != 0);
            let b = l.bits();
            // SAFETY: taken above by this thread.
            unsafe { l.release_shared() };
            assert_eq!(b & W_SPIN, 0, "W_SPIN left beside W_WAIT: {b:#x}");
        });
        assert_eq!(l.bits(), 0);
    }

    #[test]
    fn eight_threads_mixing_readers_and_writers_count_exactly() {
        testing::rw_mix::<RawRwSem>(8, 20_000);
    }

    /// Writer preference, not the handoff, lets this writer in: once it
    /// waits, new readers are turned away and the current ones drain.
    #[test]
    fn a_writer_gets_in_while_readers_keep_reading() {
        let _w = Watchdog::new("a_writer_gets_in_while_readers_keep_reading", HANG);
        let l = RwSem::new(Shadow::default());
        let stop = AtomicBool::new(false);
        let reads = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        read_section(&l.read());
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            // The readers are streaming before the writer starts.
            until(|| reads.load(Ordering::Relaxed) > testing::iters(1_000));
            for _ in 0..50 {
                write_section(&mut l.write());
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(l.into_inner().a, 50);
    }

    /// A liveness smoke test: readers make progress among busy writers.
    /// Here they get in through the gaps between writers, so this passes
    /// even without the starvation handoff; the two `a_starved_…` tests
    /// below check the handoff itself, and fail without it.
    #[test]
    fn readers_get_in_while_writers_keep_writing() {
        let _w = Watchdog::new("readers_get_in_while_writers_keep_writing", HANG);
        let l = RwSem::new(Shadow::default());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        write_section(&mut l.write());
                    }
                });
            }
            until(|| l.read().a > testing::iters(1_000));
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..50 {
                        read_section(&l.read());
                    }
                })
                .join()
                .unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
    }

    /// Waits until `cond` holds, in steps of [`HANDOFF_AFTER`]; false if it
    /// does not within 20 s, longer under Miri (the caller then releases what it holds before
    /// failing, so that the test ends instead of hanging).
    fn within_20s(cond: impl Fn() -> bool) -> bool {
        let give_up = Instant::now() + testing::limit(Duration::from_secs(20));
        while !cond() {
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::sleep(HANDOFF_AFTER);
        }
        true
    }

    /// A reader blocked behind a writer for longer than [`HANDOFF_AFTER`]
    /// claims the readers' handoff; a writer that arrives afterwards must
    /// wait for the reader, though this lock otherwise prefers writers
    /// (without the handoff, the writer would go first, and a stream of
    /// writers could keep the reader out for ever).
    #[test]
    fn a_starved_reader_gets_in_ahead_of_a_later_writer() {
        let _w = Watchdog::new("a_starved_reader_gets_in_ahead_of_a_later_writer", HANG);
        let l = RawRwSem::new();
        let order = AtomicU64::new(0);
        let (reader_at, writer_at) = (AtomicU64::new(0), AtomicU64::new(0));
        let bit = |f: u32| l.state.load(Ordering::SeqCst) & f != 0;
        l.acquire_exclusive();
        let claimed = std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_shared();
                reader_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: acquired just above.
                unsafe { l.release_shared() };
            });
            until(|| bit(R_WAIT));
            // The reader re-checks every HANDOFF_AFTER and claims the
            // handoff once it has been blocked that long.
            let claimed = within_20s(|| bit(HANDOFF) && bit(HANDOFF_R));
            s.spawn(|| {
                l.acquire_exclusive();
                writer_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: acquired just above.
                unsafe { l.release_exclusive() };
            });
            until(|| bit(W_WAIT));
            // SAFETY: taken above by this thread.
            unsafe { l.release_exclusive() };
            claimed
        });
        assert!(claimed, "the starved reader never claimed the handoff");
        let (r, w) = (reader_at.into_inner(), writer_at.into_inner());
        assert!(r > 0 && w > 0, "both got in");
        assert!(r < w, "the later writer got in before the starved reader");
    }

    /// A writer blocked for longer than [`HANDOFF_AFTER`] claims the
    /// handoff; the holder's unlock then leaves the lock to it, and a
    /// newcomer (here the old holder, trying again at once) cannot take it.
    #[test]
    fn a_starved_writer_cannot_be_overtaken_by_a_newcomer() {
        let _w = Watchdog::new("a_starved_writer_cannot_be_overtaken_by_a_newcomer", HANG);
        let l = RawRwSem::new();
        let got = AtomicBool::new(false);
        let bit = |f: u32| l.state.load(Ordering::SeqCst) & f != 0;
        l.acquire_exclusive();
        let result = std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                got.store(true, Ordering::SeqCst);
                // SAFETY: acquired just above.
                unsafe { l.release_exclusive() };
            });
            until(|| bit(W_WAIT));
            let claimed = within_20s(|| bit(HANDOFF)) && !bit(HANDOFF_R);
            // SAFETY: taken above by this thread.
            unsafe { l.release_exclusive() };
            let stolen = !got.load(Ordering::SeqCst) && l.try_acquire_exclusive();
            if stolen {
                // SAFETY: just taken; give it back so the writer can finish.
                unsafe { l.release_exclusive() };
            }
            (claimed, stolen)
        });
        assert!(
            result.0,
            "the starved writer never claimed a writer's handoff"
        );
        assert!(
            !result.1,
            "a newcomer took a lock handed to a starved writer"
        );
        assert!(got.into_inner());
    }

    /// The documented deadlock, observed without hanging: this thread holds
    /// a read lock, a writer starts waiting, and this thread's second read
    /// then waits for the writer. A helper sees the second read asleep,
    /// waits well past the handoff time (a handoff must not let it in
    /// either), and then releases the first read on this thread's behalf;
    /// the writer must get in before the second read does.
    #[test]
    fn recursive_read_blocks_behind_a_waiting_writer() {
        let _w = Watchdog::new("recursive_read_blocks_behind_a_waiting_writer", HANG);
        let l = RawRwSem::new();
        let writer_done = AtomicBool::new(false);
        let second_done = AtomicBool::new(false);
        l.acquire_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                writer_done.store(true, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.bits() & W_WAIT != 0);
            let observer = s.spawn(|| {
                until(|| l.bits() & R_WAIT != 0 || second_done.load(Ordering::SeqCst));
                std::thread::sleep(HANDOFF_AFTER * 20);
                let blocked = !second_done.load(Ordering::SeqCst);
                let writer_waited = !writer_done.load(Ordering::SeqCst);
                // Release before asserting, so a failure ends the test
                // instead of leaving the writer waiting for ever.
                // SAFETY: the first read lock of the main thread, which
                // never releases it itself; read guards are not tied to a
                // thread.
                unsafe { l.release_shared() };
                (blocked, writer_waited)
            });
            l.acquire_shared();
            second_done.store(true, Ordering::SeqCst);
            let writer_first = writer_done.load(Ordering::SeqCst);
            // SAFETY: taken just above.
            unsafe { l.release_shared() };
            let (blocked, writer_waited) = observer.join().unwrap();
            assert!(blocked, "the recursive read got in while a writer waited");
            assert!(writer_waited, "the writer got in past a held read lock");
            assert!(writer_first, "the second read did not wait for the writer");
        });
        assert!(!l.is_held());
    }
}
