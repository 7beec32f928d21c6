//! `mutex`: a hybrid sleeping mutex with optimistic spinning, after the
//! three paths of Linux's `struct mutex`.
//!
//! Seed 001 (Bueso, "Scalability Techniques for Practical Synchronization
//! Primitives", ACM Queue 2014) and Linux's `kernel/locking/mutex.c` and
//! `osq_lock.c` (Molnar, Bueso, Long, Zijlstra; `Documentation/locking/
//! mutex-design.rst`) split acquisition into three paths:
//!
//! - **Fast path**: one compare-and-swap of a free word to "locked by me".
//! - **Mid path, optimistic spinning**: while the owner is making progress
//!   and will probably release soon, spin instead of paying for a sleep and
//!   a wake-up. Only one spinner at a time spins on the lock word; the
//!   others wait in a queue of spinners, each on its own cache line (the
//!   kernel's OSQ), and may leave it.
//! - **Slow path**: sleep on a futex until an unlock wakes us.
//!
//! # When spinning pays, without seeing the owner's CPU
//!
//! The kernel spins while the owner task is on a CPU (`owner->on_cpu`).
//! User space cannot see that. Spinning pays when the wait it saves is
//! shorter than a sleep and a wake-up ([`SLEEP_WAKE_NS`]); Karlin, Li,
//! Manasse and Owicki (SOSP 1991, in seed 004's references) show that
//! spinning for exactly that long before blocking is never worse than twice
//! the optimum, and that knowing the distribution of waits does better.
//! This mutex watches the lock move instead of the owner's CPU:
//!
//! - **Progress is a new acquisition.** While a spinner watches, it sets
//!   `SPINNING` in the lock word, and every acquisition then bumps a 14-bit
//!   *stamp* in the word. A spinner that sees the stamp change knows the
//!   lock is moving, even when one thread releases and re-takes it between
//!   two of the spinner's looks (the common case: a busy owner wins its own
//!   lock back). Without a spinner the word holds no stamp, so an
//!   uncontended acquisition is one compare-and-swap of 0 to `LOCKED`;
//!   with one, an acquisition tries a second CAS on the value the first one
//!   returned. Sending those to the out-of-line paths instead cost a busy
//!   owner about a tenth of its rate at 8 and 16 threads (measured side by
//!   side). A release is one `fetch_sub` of `LOCKED`, whatever else the
//!   word holds (it keeps the bit and the stamp), and looks at the flags
//!   only in the value it returns.
//! - Each lock learns its **time per hold while moving**: a spinner divides
//!   the time until the last new acquisition it saw by the number it saw,
//!   and folds that into a running mean when it finishes (nobody pays
//!   for it on the fast path). Waits it gave up on are left out: a stall
//!   is what the mean exists to recognise, and counting stalls in would
//!   lengthen the patience that detects the next one.
//! - **Patience** for one hold is a few times that mean plus a small floor,
//!   capped by the sleep/wake cost. A lock that does not move for that long
//!   has an owner that stopped making progress: preempted, blocked on I/O
//!   or a page fault under the lock, or in an unusually long critical
//!   section. Spinning on it burns a CPU that the owner or others may need,
//!   so the spinner gives up early. That is the user-space stand-in for
//!   "the owner is not on a CPU". While the lock keeps moving, the spinner
//!   keeps spinning, up to a total budget of a few sleep/wake costs
//!   ([`SpinPolicy::SPIN_BUDGET_NS`]).
//! - When patience runs out on an oversubscribed lock (others already
//!   sleep), the spinner yields its CPU, so that a preempted owner can run
//!   (a user-space analogue of seed 004's yield baselines, which the host
//!   applies to a spinning vCPU), and yields again only if the lock moved
//!   meanwhile: an owner that is blocked rather than preempted gains
//!   nothing from it. With nobody asleep it sleeps at once.
//! - With one CPU online nobody watches or spins: the owner cannot run
//!   while a waiter does, so every wait would last its whole budget. (The
//!   kernel's spinning stops there too: its owner is never on another
//!   CPU.) On the lab's guest held to one CPU, with owners that stall,
//!   this cut the CPU per acquisition by 7–14 % at the same throughput
//!   (docs/library.md).
//! - When the mean alone exceeds half the sleep/wake cost, the lock's
//!   critical sections are too long for spinning to pay: contenders sleep
//!   at once. Each acquisition made after sleeping decays the mean a
//!   little, so an occasional spinner probes whether things have changed.
//!
//! [`FixedSpin`] is the same mutex with a fixed spin budget (the sleep/wake
//! cost, Karlin's 2-competitive rule) and no progress detection; the lab
//! registers both (`mutex`, `mutex-fixed`) so that the benefit is measured,
//! not claimed. docs/results.md has the numbers: on stalled owners the learnt
//! patience burns 3–16 % less CPU for the same throughput, and in plain
//! contention it is 1–11 % ahead on the lab's 2-core VM.
//!
//! # The watch before the queue
//!
//! A thread that finds the mutex held first watches the word for up to
//! `WATCH_NS` (1 µs), looking after every group of hints (about 40 ns),
//! and takes it if it comes free unreserved; only then does it join the
//! spinner queue. Under short critical sections most waits end within
//! that, and the queue's fixed costs (the CLH node, the `SPINNING` bit's
//! read-modify-write on the lock word, the stamps) are then larger than
//! the wait itself. Measured side by side in one process on the lab's
//! 2-core AMD EPYC guest (`bench spin`'s workload: 100 ns holds, 200 ns
//! exponential delays): without the watch the mutex ran at 0.95× `std`
//! at 2 threads and 0.67–0.78× at 4 to 16 threads, burning 615–715 ns of
//! CPU per acquisition against `std`'s 480; with it, a tie with `std`
//! (1.00–1.03×) and 1.08–1.13× `parking_lot` at 2 to 16 threads, with no
//! more CPU per acquisition than either. A watch of 200 ns fell behind
//! again at 8 threads; 500 ns to 3 µs measured alike. The watch is
//! skipped when the policy says the holds are too long to spin for.
//!
//! The spinner at the head of the queue looks at the word with exponential
//! backoff, up to `BACKOFF_MAX_NS` (4 µs) between looks: looking less often lets
//! a busy owner take the lock back several times in a row instead of
//! losing every release to the spinner, which saves a cache-line transfer
//! per acquisition. The other spinners wait in the queue, each on its own
//! cache line, for up to two of the head's patiences (at most twice the
//! sleep/wake cost): waiting there costs the owner nothing, but it costs
//! CPU, all of it wasted while the owner is stalled (the measurements are
//! at `spin`'s queue wait).
//!
//! All spin budgets are times, and the spinners' waits read a clock
//! (`util::pause::relax_ns`, private: groups of `pause` hints sized by
//! their measured cost, between looks at the time-stamp counter). The
//! lab measured why not to wait in plain runs of hints: on its VM, a head
//! spinner that did sometimes left the owner running at half speed (see
//! that module).
//!
//! # The lock word
//!
//! ```text
//!  31                        4     3          2         1        0
//! |          stamp            | SPINNING | HANDOFF | WAITERS | LOCKED |
//! ```
//!
//! - `LOCKED`: held.
//! - `WAITERS`: some thread sleeps (or is about to) on the futex, so unlock
//!   must wake one. An unlock that finds it clears it (in the free word)
//!   and wakes one sleeper; a thread that has slept takes the lock with
//!   `WAITERS` set again, since others may still sleep (the three-state
//!   futex mutex's rule, Drepper, "Futexes Are Tricky"). Since that makes
//!   `WAITERS` conservative, unlock also checks the count of threads in the
//!   slow path (below) and makes the wake-up system call only when one of
//!   them may be asleep.
//! - `HANDOFF`: a thread has been in the slow path longer than
//!   [`HANDOFF_AFTER`] (1 ms, as the kernel's `MUTEX_FLAG_HANDOFF` policy),
//!   or an `unlock_fair` found sleepers. A free word with `HANDOFF` is
//!   *reserved*: only a thread of the slow path may take it, and the unlock
//!   that freed it wakes one; spinners, newcomers and `try_lock` leave it
//!   alone (a spinner leaves for the slow path). Without it, newcomers and
//!   spinners may steal the lock from a woken sleeper, which is what makes
//!   the mutex fast under contention. The futex wakes sleepers in arrival
//!   order, so the thread that takes a reserved lock is one of the longest
//!   sleepers, though not necessarily the one that asked; whoever takes it
//!   clears the bit, and a starving thread that did not get it asks again.
//! - `SPINNING` and the stamp: see above. Only the spinner at the head of
//!   the queue sets and clears `SPINNING`, and it clears the stamp with it;
//!   every other write keeps both. So a word without `SPINNING` has no
//!   stamp, and the uncontended paths find 0 and `LOCKED`.
//!
//! There is no owner field: nothing in the mutex reads one (user space
//! cannot see whether the owner runs), and recording it cost every
//! acquisition a thread-local read and every release a load of the word
//! before its read-modify-write: on an AMD EPYC that load after a locked
//! instruction on the same word cost about 1.5 ns a pair, a fifth of it
//! (measured in one process against `std` and `parking_lot`, see
//! docs/library.md, "Where the fast path goes").
//!
//! A reservation must reach somebody, or the lock stays unusable for ever,
//! and `WAITERS` may be stale. So the mutex counts the threads in its slow
//! path (`sleepers`, beside the word) and keeps a free word reserved only
//! while that count is positive. A counted thread that has slept (been
//! woken, or found the word changed) or is starving may take a reserved
//! word; one that has just come to the slow path first sleeps on it, for
//! at most [`HANDOFF_AFTER`] or until the taker's unlock wakes it, so that
//! a releaser coming straight back cannot take what it reserved for the
//! sleeper it woke. The bound is what keeps every reservation taken: if
//! all counted threads are newcomers, the first whose sleep ends takes it.
//! A counted thread leaves the count only once it holds the lock, or,
//! after a timeout, just before a CAS that either leaves (its `HANDOFF`
//! request with it) or, finding the word free, takes it, reserved or not.
//! So a reserved free word always has a taker. The loom model found the
//! deadlock that a hand-over on `WAITERS` alone causes.
//!
//! # Orderings
//!
//! - Every acquisition (fast-path CAS, a steal before queueing, a
//!   spinner's CAS, a sleeper's CAS of a free word) is `Acquire`, and every
//!   release (the unlock's `fetch_sub`, the fair unlock's CAS) is
//!   `Release`; all writes to the word are read-modify-writes, so each
//!   acquisition reads the value written by the release before it (or a
//!   later flag change in its release sequence).
//! - No wake-up is lost: a sleeper's CAS that sets `WAITERS` and the
//!   unlock's CAS are read-modify-writes of the same word, so either the
//!   sleeper's comes first (the unlock sees `WAITERS`) or the unlock's does
//!   (and the sleeper's CAS fails on the changed word); and the futex
//!   compares the word with the value that has `WAITERS` set, atomically
//!   with going to sleep.
//! - Skipping the wake-up when no thread is counted: a sleeper increments
//!   the count before its `WAITERS` CAS, which is `Release` and which it
//!   makes even when the flag is already set. An unlock that sees
//!   `WAITERS` in the value its `fetch_sub` returned clears the flag in
//!   the free word with a CAS that is `AcqRel`: a read-modify-write reads
//!   the latest value of the word, so it reads the sleeper's write (or a
//!   later one) and the count load after it sees the increment. A sleeper
//!   whose CAS comes later found a word that the `fetch_sub` had freed, so
//!   its CAS on a held word failed and it took the lock instead of
//!   sleeping. So a thread that may be asleep is always counted, and an
//!   unlock whose `fetch_sub` returned no `WAITERS` has nobody to wake.
//! - Reserving for a counted thread: the unlock decides from the word it
//!   is about to replace and from the count, which it reads before its
//!   CAS. So the load of that word is `Acquire` too (and so is a failed
//!   CAS, which reloads it): a word that shows a sleeper's `WAITERS` or
//!   `HANDOFF` was written by that sleeper's `Release` CAS or by a later
//!   read-modify-write, and the count load after it sees the sleeper's
//!   increment. With a `Relaxed` load the count could read an older 0 on a
//!   weakly ordered machine: `unlock_fair` then freed the lock with a
//!   sleeper waiting, and a starving sleeper's `HANDOFF` went unanswered
//!   (found by Miri's weak-memory emulation; no wake-up was lost, as the
//!   point above shows, only the hand-over).
//! - `SPINNING` is set and cleared `Relaxed`: it publishes nothing; losing
//!   a race with it only costs a sample of progress.
//! - The spinner queue is a CLH lock with timeout ([`RawClh::acquire_while`]);
//!   it orders nothing about the mutex's data, only who spins.
//! - The statistics are plain `Relaxed` counters outside the model-checked
//!   shim: they steer performance, never correctness, and racing updates
//!   merely lose a sample.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32 as StatU32, Ordering as StatOrdering};
use std::time::Instant;

use crate::block::futex::{self, Wake};
use crate::info::{Described, Family, LockInfo};
use crate::spin::clh::RawClh;
use crate::util::pause;
use crate::util::sync::{yield_now, AtomicU32, Ordering};

const LOCKED: u32 = 1;
const WAITERS: u32 = 1 << 1;
const HANDOFF: u32 = 1 << 2;
const SPINNING: u32 = 1 << 3;
/// The acquisition stamp, bits 4..32: bumped by every acquisition while
/// `SPINNING` is set, so that the spinner sees the lock turn over even
/// when one thread keeps re-taking it. It wraps; only changes matter.
const STAMP_SHIFT: u32 = 4;
const STAMP_ONE: u32 = 1 << STAMP_SHIFT;
const FLAGS: u32 = STAMP_ONE - 1;
const STAMP_MASK: u32 = !FLAGS;
/// `SPINNING` moved onto the stamp's lowest bit: what [`acquired`] adds.
const _: () = assert!(SPINNING << 1 == STAMP_ONE);

/// What sleeping on a futex and being woken cost together, ns: the
/// futex system calls and two context switches, about 5–20 µs on current
/// Linux machines (the lab's `bench` measures the hand-over costs this
/// trades against). Spinning longer than this never pays.
pub const SLEEP_WAKE_NS: u64 = 10_000;

/// How long a sleeper waits before it asks for the lock to be handed to it.
pub const HANDOFF_AFTER: std::time::Duration = std::time::Duration::from_millis(1);

/// Most times a spinner whose patience ran out on an oversubscribed lock
/// yields its CPU (and waits once more) before it sleeps; it yields again
/// only if the lock moved after the previous yield.
pub const MAX_YIELDS: u32 = 4;

/// Least patience of a spinner for one hold, ns: a few cache-line
/// transfers, so that a short critical section with little history is not
/// abandoned at once.
const MIN_PATIENCE_NS: u64 = 500;

/// Longest pause between two looks at the lock word by the spinner at the
/// head of the queue (it backs off exponentially up to this). Looking less
/// often lets a busy owner take the lock back several times in a row
/// instead of losing every release to the spinner: fewer cache-line
/// transfers, more throughput; the spin budget and the handoff bound what
/// this costs in fairness.
const BACKOFF_MAX_NS: u64 = 4_000;

/// How long a thread that finds the mutex held first watches the word,
/// ns, before it joins the spinner queue (see the module documentation):
/// about ten short critical sections, a tenth of a sleep and a wake-up.
const WATCH_NS: u64 = 1_000;

/// The head spinner's first pause between two looks at the lock word, ns
/// (doubled after each look, up to [`BACKOFF_MAX_NS`]).
const BACKOFF_MIN_NS: u64 = 32;

/// How a spinner decides how long to wait.
pub trait SpinPolicy: Send + Sync + 'static {
    /// The mutex's metadata under this policy.
    const INFO: LockInfo;
    /// Whether a new acquisition (the stamp moving) restarts the
    /// spinner's patience.
    const RESTART_ON_PROGRESS: bool;
    /// Whether to keep the time-per-hold statistics at all.
    const LEARNS: bool;
    /// Longest a spinner spins in all, ns, however the lock moves.
    const SPIN_BUDGET_NS: u64;
    /// Patience for one hold, ns, given the lock's mean time per hold
    /// (0 when nothing was observed yet). 0 means: do not spin.
    fn patience_ns(mean_hold_ns: u32) -> u64;
}

/// Learns each lock's time per hold and gives up on a lock that stops
/// moving for far longer than that. See the module documentation.
#[derive(Debug)]
pub enum AdaptiveSpin {}

impl SpinPolicy for AdaptiveSpin {
    const INFO: LockInfo = LockInfo {
        name: "mutex",
        family: Family::Blocking,
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "Linux kernel/locking/mutex.c and osq_lock.c (fast path, optimistic spinning with an MCS-style spinner queue, handoff); Bueso (seed 001); competitive spinning: Karlin, Li, Manasse & Owicki, SOSP 1991",
        summary: "CAS fast path; one spinner on the word, the rest queued; spins while the lock moves, gives up when it stalls for a few learnt hold times; futex sleep; handoff after 1 ms",
    };
    const RESTART_ON_PROGRESS: bool = true;
    const LEARNS: bool = true;
    const SPIN_BUDGET_NS: u64 = 4 * SLEEP_WAKE_NS;

    fn patience_ns(mean: u32) -> u64 {
        let mean = u64::from(mean);
        if mean == 0 {
            return SLEEP_WAKE_NS;
        }
        if 2 * mean > SLEEP_WAKE_NS {
            return 0;
        }
        (4 * mean + MIN_PATIENCE_NS).min(SLEEP_WAKE_NS)
    }
}

/// A fixed spin budget (the sleep/wake cost), however the lock moves.
#[derive(Debug)]
pub enum FixedSpin {}

impl SpinPolicy for FixedSpin {
    const INFO: LockInfo = LockInfo {
        name: "mutex-fixed",
        family: Family::Blocking,
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "locklab's hybrid mutex with a fixed spin budget, for comparison; Karlin, Li, Manasse & Owicki, SOSP 1991",
        summary: "the hybrid mutex spinning a fixed 10 µs per acquisition before sleeping, with no progress detection",
    };
    const RESTART_ON_PROGRESS: bool = false;
    const LEARNS: bool = false;
    const SPIN_BUDGET_NS: u64 = SLEEP_WAKE_NS;

    fn patience_ns(_: u32) -> u64 {
        SLEEP_WAKE_NS
    }
}

/// The hybrid mutex. See the module documentation.
pub struct RawHybridMutex<P: SpinPolicy = AdaptiveSpin> {
    state: AtomicU32,
    /// Threads in the slow path (see "Handoff" in the module docs).
    sleepers: AtomicU32,
    /// Mean time per hold seen by spinners while the lock moved, ns (see
    /// the module docs).
    mean_hold_ns: StatU32,
    /// The queue of optimistic spinners; its holder spins on `state`.
    spinners: RawClh,
    _policy: PhantomData<P>,
}

impl<P: SpinPolicy> core::fmt::Debug for RawHybridMutex<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RawHybridMutex")
            .field("policy", &P::INFO.name)
            .field("locked", &self.is_held())
            .finish_non_exhaustive()
    }
}

/// The word of an acquisition of free `s`: flags kept, `LOCKED`, and the
/// stamp bumped if a spinner watches (`SPINNING` shifted onto the stamp's
/// lowest bit: one `STAMP_ONE` or nothing, wrapping within the stamp).
#[inline]
fn acquired(s: u32) -> u32 {
    s.wrapping_add((s & SPINNING) << 1) | LOCKED
}

/// Acquisitions between two stamps (modulo the stamp's 14 bits).
#[inline]
fn turnovers(from: u32, to: u32) -> u32 {
    (to.wrapping_sub(from) & STAMP_MASK) >> STAMP_SHIFT
}

/// Whether waiting by spinning can pay on this machine: not with one CPU
/// online, where the owner cannot run while a waiter spins, and a waiter
/// that watched or spun would only delay it by its whole budget
/// ([`crate::topology::online_cpus`], which `LOCKLAB_CPUS` overrides).
/// Under loom always: the model explores every path.
#[inline]
fn spinning_pays() -> bool {
    #[cfg(not(loom))]
    return crate::topology::online_cpus() > 1;
    #[cfg(loom)]
    return true;
}

/// When a thread in the slow path starts to starve: [`HANDOFF_AFTER`]
/// after it entered it.
struct Starvation {
    #[cfg(not(loom))]
    since: Instant,
    #[cfg(loom)]
    sleeps: u32,
}

impl Starvation {
    fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            since: Instant::now(),
            #[cfg(loom)]
            sleeps: 0,
        }
    }

    /// About to sleep.
    fn sleeping(&mut self) {
        #[cfg(loom)]
        {
            self.sleeps += 1;
        }
    }

    /// Whether it is time to ask for a handoff. Under loom (no clock),
    /// after the first sleep, so the model explores the handoff path.
    fn starving(&self) -> bool {
        #[cfg(not(loom))]
        return self.since.elapsed() >= HANDOFF_AFTER;
        #[cfg(loom)]
        return self.sleeps >= 1;
    }
}

impl<P: SpinPolicy> RawHybridMutex<P> {
    crate::loom_const_fn! {
        /// An unlocked mutex.
        pub fn new() -> Self {
            Self {
                state: AtomicU32::new(0),
                sleepers: AtomicU32::new(0),
                mean_hold_ns: StatU32::new(0),
                spinners: RawClh::new(),
                _policy: PhantomData,
            }
        }
    }

    /// Takes the mutex, spinning or sleeping as long as needed.
    #[inline]
    pub fn acquire(&self) {
        if let Err(s) = self
            .state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
        {
            // Free but watched by a spinner (or flagged): one more CAS on the
            // value the first one returned, before anything slower. While a
            // spinner watches, every acquisition by a busy owner comes here.
            // A reserved word (HANDOFF) is for the slow path.
            if s & (LOCKED | HANDOFF) != 0
                || self
                    .state
                    .compare_exchange(s, acquired(s), Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
            {
                self.acquire_contended(None);
            }
        }
    }

    /// Takes the mutex if it is free right now and not reserved for a
    /// sleeper (never spins or sleeps).
    #[inline]
    pub fn try_acquire(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        s & (LOCKED | HANDOFF) == 0
            && self
                .state
                .compare_exchange(s, acquired(s), Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Takes the mutex unless `deadline` passes first; whether it did.
    pub fn acquire_until(&self, deadline: Instant) -> bool {
        self.state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.acquire_contended(Some(deadline))
    }

    #[cold]
    #[inline(never)]
    fn acquire_contended(&self, deadline: Option<Instant>) -> bool {
        // Free but flagged (a spinner watches, or sleepers wait): take it
        // before queueing, as the kernel's trylock before the spinner queue.
        // With one CPU online, neither watch nor spin.
        self.try_acquire()
            || (spinning_pays() && (self.watch() || self.spin()))
            || self.sleep(deadline)
    }

    /// The short wait before the spinner queue: look at the word for up to
    /// [`WATCH_NS`] and take it if it comes free (and is not reserved).
    /// Whether we got the mutex. See the module documentation.
    fn watch(&self) -> bool {
        // Holds too long for spinning (the policy says sleep at once):
        // do not watch either.
        if P::patience_ns(self.mean_hold_ns.load(StatOrdering::Relaxed)) == 0 {
            return false;
        }
        let mut watched = 0;
        while watched < WATCH_NS {
            watched += pause::relax_ns(0);
            if self.try_acquire() {
                return true;
            }
        }
        false
    }

    /// The mid path: join the spinner queue; at its head, spin on the word
    /// while the owner makes progress. Whether we got the mutex.
    fn spin(&self) -> bool {
        let patience = P::patience_ns(self.mean_hold_ns.load(StatOrdering::Relaxed));
        if patience == 0 {
            return false;
        }
        // Waiting behind other spinners costs the owner nothing (each waits
        // on its own cache line), but it costs the spinner's CPU, and when
        // the owner has stalled (preempted, or asleep in its critical
        // section) every queued spinner burns its whole budget. So the
        // queue wait is two head patiences, within the competitive budget
        // (Karlin's rule: twice the sleep/wake cost). Measured on the lab's
        // 2-core AMD EPYC guest, three runs each, side by side with `std`
        // (`bench spin --stall-every 100`, 4 to 16 threads): with the full
        // budget the mutex used 2–8 % more CPU per acquisition than `std`
        // at 5 of 9 points; with a fixed 2 µs queue wait it tied or used
        // less at all 9, and with two patiences (this) at all 6 of two more
        // runs, with the same throughput. With two patiences, `bench
        // spin`'s defaults ran at 0.97–1.02× `std` from 1 to 16 threads, and
        // 2 µs holds with 2 µs delays at 8 threads at 0.97× `std`, where the
        // full budget ran 0.87–0.89×. (Before the watch of ac1a598, a queue
        // wait of a few patiences made oversubscribed threads leave the
        // queue about once per acquisition and halved throughput; with the
        // watch, most waits end before the queue.)
        let mut queue_deadline = pause::Deadline::after((2 * patience).min(2 * SLEEP_WAKE_NS));
        let Some(token) = self.spinners.acquire_while(|| !queue_deadline.passed()) else {
            return false;
        };

        // Ask every acquisition to bump the stamp while we watch (Relaxed:
        // the bit orders nothing; the acquisition CAS below is Acquire).
        let mut s = self.state.fetch_or(SPINNING, Ordering::Relaxed) | SPINNING;
        let first = s & STAMP_MASK;
        let mut stamp = first;
        // Times in ns, as `pause::relax_ns` measures them.
        let mut since_progress: u64 = 0;
        let mut spun: u64 = 0;
        let mut spun_to_progress: u64 = 0;
        let mut backoff = BACKOFF_MIN_NS;
        let mut yields = 0;
        let mut yielded = false;
        let got = loop {
            if s & HANDOFF != 0 {
                // A sleeper is starving, or the lock is reserved for the
                // slow path: leave it to the sleepers.
                break false;
            }
            if s & LOCKED == 0 {
                // Taken with our bit and the stamp cleared: no spinner
                // watches now.
                match self.state.compare_exchange_weak(
                    s,
                    (s & FLAGS & !SPINNING) | LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break true,
                    Err(now) => {
                        s = now;
                        continue;
                    }
                }
            }
            if s & STAMP_MASK != stamp {
                stamp = s & STAMP_MASK;
                spun_to_progress = spun;
                if P::RESTART_ON_PROGRESS {
                    since_progress = 0;
                    yielded = false;
                }
            }
            if spun >= P::SPIN_BUDGET_NS {
                break false;
            }
            if since_progress >= patience {
                if yielded || yields == MAX_YIELDS || self.sleepers.load(Ordering::Relaxed) == 0 {
                    break false;
                }
                // The owner has stalled, most likely preempted. When others
                // already sleep (the lock is oversubscribed), give our CPU
                // away before paying for a sleep and a wake-up: the owner
                // may be waiting for exactly this CPU (a user-space
                // analogue of seed 004's host-side yields).
                // With nobody asleep we sleep at once instead: measured at
                // one thread per core, yielding only kept the spinner on
                // the lock's line longer, slowing the owner.
                yield_now();
                yields += 1;
                yielded = true;
                since_progress = 0;
            } else {
                let waited = pause::relax_ns(backoff);
                since_progress += waited;
                spun += waited;
                backoff = (backoff * 2).min(BACKOFF_MAX_NS);
            }
            s = self.state.load(Ordering::Relaxed);
        };
        if !got {
            self.state
                .fetch_and(!(SPINNING | STAMP_MASK), Ordering::Relaxed);
        }
        // SAFETY: the token is this acquisition of the spinner queue.
        unsafe { self.spinners.release(token) };
        if P::LEARNS {
            // Time per hold while the lock moved: the holds that ended while
            // we watched (those that began since we started, and, if we got
            // the lock, the one we found), over the time until the last of
            // them ended. A stall we gave up on is left out: it is what the
            // mean exists to tell apart, and counting it would lengthen the
            // patience that detects the next one.
            let ended = turnovers(first, stamp) + u32::from(got);
            let until = if got { spun } else { spun_to_progress };
            if ended > 0 {
                self.learn(until / u64::from(ended));
            }
        }
        got
    }

    /// Folds one time-per-hold sample into the lock's mean (weight 1/8).
    fn learn(&self, sample_ns: u64) {
        let sample = sample_ns.min(u64::from(u32::MAX)) as i64;
        let mean = i64::from(self.mean_hold_ns.load(StatOrdering::Relaxed));
        let next = (mean + (sample - mean) / 8).max(1);
        self.mean_hold_ns.store(next as u32, StatOrdering::Relaxed);
    }

    /// The slow path: sleep on the futex until the mutex is ours, or until
    /// `deadline`. Whether we got it.
    #[cold]
    fn sleep(&self, deadline: Option<Instant>) -> bool {
        let mut starvation = Starvation::new();
        let mut slept = false;
        // Counted until we hold the mutex (a releaser that sees us may hand
        // it over, and we will pick it up) or leave in `give_up`.
        self.sleepers.fetch_add(1, Ordering::Relaxed);
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & (LOCKED | HANDOFF) == HANDOFF && !slept && !starvation.starving() {
                // Reserved, and we have only just come: the reservation is
                // for a thread that was woken to take it. Taking it would
                // be the steal the reservation exists to stop, and the
                // commonest thief is the releaser itself, back for the
                // lock while the sleeper it woke is still being scheduled
                // (two threads with 1 ms holds: one waited ~300 ms, Jain
                // 0.95). So sleep on the reserved word for up to
                // HANDOFF_AFTER, or until the taker's release wakes us.
                // The bound keeps the reservation from stranding: every
                // counted thread may be as new as we are (an
                // `unlock_fair` over a stale WAITERS), and then the first
                // one whose wait ends takes it below, having slept.
                let mine = Instant::now() + HANDOFF_AFTER;
                let (until, theirs) = match deadline {
                    Some(d) if d <= mine => (d, true),
                    _ => (mine, false),
                };
                if futex::wait(&self.state, s, Some(until)) == Wake::TimedOut && theirs {
                    return self.give_up();
                }
                slept = true;
                s = self.state.load(Ordering::Relaxed);
                continue;
            }
            if s & LOCKED == 0 {
                // Free, or reserved for us sleepers: take it, answering
                // any HANDOFF request (a starving thread that did not get
                // it asks again). Having slept, take it marked contended:
                // others may still sleep, and our unlock must then wake one.
                let new = acquired(s & !HANDOFF) | if slept { WAITERS } else { 0 };
                match self
                    .state
                    .compare_exchange(s, new, Ordering::Acquire, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.got_it_in_slow_path(slept);
                        return true;
                    }
                    Err(now) => {
                        s = now;
                        continue;
                    }
                }
            }
            let mut want = s | WAITERS;
            if starvation.starving() {
                want |= HANDOFF;
            }
            // Always a read-modify-write, even when the flags are already
            // set, and Release: a releaser whose CAS (Acquire) changes the
            // word we sleep on then sees our `sleepers` increment, so it may
            // skip the wake-up system call only when nobody can be asleep.
            if let Err(now) =
                self.state
                    .compare_exchange(s, want, Ordering::Release, Ordering::Relaxed)
            {
                s = now;
                continue;
            }
            s = want;
            starvation.sleeping();
            if futex::wait(&self.state, s, deadline) == Wake::TimedOut {
                return self.give_up();
            }
            slept = true;
            s = self.state.load(Ordering::Relaxed);
        }
    }

    /// A slow-path acquisition: no longer a sleeper; and let the statistics
    /// forget a little, so that a lock which stopped spinning probes again
    /// now and then.
    fn got_it_in_slow_path(&self, slept: bool) {
        // Relaxed: we hold the mutex, so the next releaser (which acquired
        // after our Release) sees this.
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        if P::LEARNS && slept {
            let mean = self.mean_hold_ns.load(StatOrdering::Relaxed);
            self.mean_hold_ns
                .store(mean - mean / 16, StatOrdering::Relaxed);
        }
    }

    /// The deadline passed while we slept or were about to. Take the mutex
    /// if it came free (or was handed to us) meanwhile; otherwise leave
    /// without losing a wake-up that may have been meant for us.
    #[cold]
    fn give_up(&self) -> bool {
        // Uncounted before the CAS below, which is Release: an unlock whose
        // reserving CAS loses against it reads the new count (see
        // `settle`); one whose CAS wins leaves a free word, which we take.
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let (new, got) = if s & LOCKED == 0 {
                // Free or reserved: ours (so a reservation never strands).
                (acquired(s & !HANDOFF) | WAITERS, true)
            } else {
                // Leave. Our HANDOFF request goes (a starving peer asks
                // again); WAITERS stays set, so the holder's unlock wakes
                // any other sleeper in case a wake-up was spent on us.
                ((s & !HANDOFF) | WAITERS, false)
            };
            let order = if got {
                Ordering::Acquire
            } else {
                Ordering::Release
            };
            match self
                .state
                .compare_exchange(s, new, order, Ordering::Relaxed)
            {
                Ok(_) => return got,
                Err(now) => s = now,
            }
        }
    }

    /// Releases the mutex, waking a sleeper if there is one.
    ///
    /// # Safety
    /// The caller must hold the mutex.
    #[inline]
    pub unsafe fn release(&self) {
        // Free, keeping a watching spinner's bit and stamp and any flag;
        // only then look at what the word held.
        let old = self.state.fetch_sub(LOCKED, Ordering::Release);
        if old & (WAITERS | HANDOFF) != 0 {
            self.settle(false);
        }
    }

    /// Releases the mutex; if anybody sleeps, hands it straight over to a
    /// sleeper instead of letting a newcomer take it.
    ///
    /// # Safety
    /// The caller must hold the mutex.
    pub unsafe fn release_fair(&self) {
        self.settle(true);
    }

    /// The unlock's slow part. Fair: the caller still holds the lock, and
    /// this frees it reserved for the slow path if anybody sleeps. Not
    /// fair: the caller's `fetch_sub` has freed the word, which showed
    /// `WAITERS` or `HANDOFF`; this clears `WAITERS`, keeps the word
    /// reserved if a starving thread asked (and is still counted), and
    /// wakes a sleeper.
    #[cold]
    fn settle(&self, fair: bool) {
        // Acquire: the reservation below reads `sleepers` before our CAS,
        // so the word we decide on must carry the count with it (see the
        // module's orderings).
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if !fair && s & LOCKED != 0 {
                // Already taken again: by a counted thread, or (if nothing
                // was reserved) by a newcomer. The flags we found are still
                // in the word, so that holder's unlock wakes a sleeper.
                return;
            }
            // Reserve only for a thread that is certain to take it: one
            // counted in the slow path. (WAITERS alone may be stale, and a
            // word reserved for nobody would stay unusable for ever.)
            let reserve = (fair || s & HANDOFF != 0)
                && s & (WAITERS | HANDOFF) != 0
                && self.sleepers.load(Ordering::Relaxed) > 0;
            let new = (s & !(LOCKED | WAITERS | HANDOFF)) | if reserve { HANDOFF } else { 0 };
            // Acquire on failure: after losing against a timed waiter's
            // leaving CAS, the next `sleepers` load sees it uncounted.
            match self
                .state
                .compare_exchange(s, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // WAITERS is conservative (a thread that slept sets it again when it
        // takes the lock, in case others still sleep); the count is exact
        // about who may be asleep, so a release after the last sleeper left
        // makes no system call. A reserved word (HANDOFF) has a counted
        // taker, who may be asleep.
        if s & (WAITERS | HANDOFF) != 0 && self.sleepers.load(Ordering::Relaxed) > 0 {
            futex::wake_one(&self.state);
        }
    }

    /// Whether some thread holds the mutex (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCKED != 0
    }

    /// The lock's learnt mean time per hold, ns (0: nothing learnt).
    pub fn mean_hold_ns(&self) -> u32 {
        self.mean_hold_ns.load(StatOrdering::Relaxed)
    }
}

impl<P: SpinPolicy> Default for RawHybridMutex<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: SpinPolicy> Described for RawHybridMutex<P> {
    const INFO: LockInfo = P::INFO;
}

#[cfg(not(loom))]
mod raw {
    use super::{AdaptiveSpin, FixedSpin, RawHybridMutex, SpinPolicy};
    use lock_api::GuardSend;
    use std::time::{Duration, Instant};

    // SAFETY: every acquisition is a CAS that sets LOCKED on a word where
    // it was clear (or, for a handed-over word, replaces owner 0 by ours,
    // which only one thread can do), and LOCKED is cleared (or the word
    // handed over) only by `release`; Acquire/Release on those CASes order
    // the critical sections. The guard carries nothing: release reads only
    // the word, so it may run on another thread.
    crate::guardless_raw_mutex!([P: SpinPolicy] RawHybridMutex<P>);

    // SAFETY: as above; `unlock_fair` hands the mutex to a sleeper if
    // there is one.
    unsafe impl<P: SpinPolicy> lock_api::RawMutexFair for RawHybridMutex<P> {
        unsafe fn unlock_fair(&self, _guard: GuardSend) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release_fair() }
        }
    }

    // SAFETY: as for `RawMutex`; a timed acquisition that fails leaves the
    // word as it found it apart from the WAITERS flag.
    unsafe impl<P: SpinPolicy> lock_api::RawMutexTimed for RawHybridMutex<P> {
        type Duration = Duration;
        type Instant = Instant;

        fn try_lock_for(&self, timeout: Duration) -> Option<GuardSend> {
            // A timeout too large for an Instant is "forever".
            match Instant::now().checked_add(timeout) {
                Some(deadline) => self.try_lock_until(deadline),
                None => Some(lock_api::RawMutex::lock(self)),
            }
        }

        fn try_lock_until(&self, deadline: Instant) -> Option<GuardSend> {
            self.acquire_until(deadline).then(GuardSend::new)
        }
    }

    /// A mutex protected by the hybrid mutex (learnt spinning).
    pub type HybridMutex<T> = lock_api::Mutex<RawHybridMutex<AdaptiveSpin>, T>;
    /// The hybrid mutex with a fixed spin budget, for comparison.
    pub type FixedSpinMutex<T> = lock_api::Mutex<RawHybridMutex<FixedSpin>, T>;
}

#[cfg(not(loom))]
pub use raw::{FixedSpinMutex, HybridMutex};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{churn_threads, hammer, limit};
    use lock_api::RawMutexTimed;
    use std::sync::atomic::AtomicBool;
    use std::sync::Barrier;
    use std::time::Duration;

    type Adaptive = RawHybridMutex<AdaptiveSpin>;

    #[test]
    fn uncontended_lock_and_unlock_touch_one_word() {
        let m = Adaptive::new();
        m.acquire();
        assert_eq!(m.state.load(Ordering::Relaxed), LOCKED);
        assert!(!m.try_acquire());
        // SAFETY: held.
        unsafe { m.release() };
        assert_eq!(m.state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn acquisitions_move_the_stamp_only_while_a_spinner_watches() {
        let m = Adaptive::new();
        m.acquire();
        // SAFETY: held.
        unsafe { m.release() };
        assert_eq!(
            m.state.load(Ordering::Relaxed),
            0,
            "no stamp without a spinner"
        );
        m.state.fetch_or(SPINNING, Ordering::Relaxed);
        let before = m.state.load(Ordering::Relaxed);
        for _ in 0..3 {
            // The fast path fails on the flagged word; the steal before
            // queueing takes it and bumps the stamp.
            m.acquire();
            let s = m.state.load(Ordering::Relaxed);
            assert_eq!(s & FLAGS, LOCKED | SPINNING);
            // SAFETY: held.
            unsafe { m.release() };
        }
        let after = m.state.load(Ordering::Relaxed);
        assert_eq!(after & !STAMP_MASK, SPINNING, "released, flag kept");
        assert_eq!(turnovers(before & STAMP_MASK, after & STAMP_MASK), 3);
    }

    #[test]
    fn the_stamp_moves_only_while_watched_wraps_and_keeps_the_flags() {
        let top = STAMP_MASK | WAITERS | SPINNING;
        let next = acquired(top);
        assert_eq!(next & STAMP_MASK, 0, "wrapped");
        assert_eq!(next & FLAGS, LOCKED | WAITERS | SPINNING);
        assert_eq!(turnovers(top & STAMP_MASK, next & STAMP_MASK), 1);
        assert_eq!(acquired(WAITERS), LOCKED | WAITERS, "no spinner, no stamp");
    }

    #[test]
    fn eight_threads_count_exactly_under_both_policies() {
        hammer::<Adaptive>(8, 2_000);
        hammer::<RawHybridMutex<FixedSpin>>(8, 2_000);
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<Adaptive>();
    }

    /// Holds the mutex long enough for `n` contenders to go to sleep on it,
    /// shown by the WAITERS flag, then calls `release` with the count of
    /// contenders that have been through their critical section.
    fn with_sleepers(m: &Adaptive, n: usize, release: impl FnOnce(&AtomicU32)) {
        let inside = AtomicU32::new(0);
        let started = Barrier::new(n + 1);
        m.acquire();
        std::thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    started.wait();
                    m.acquire();
                    inside.fetch_add(1, Ordering::SeqCst);
                    // SAFETY: acquired just above.
                    unsafe { m.release() };
                });
            }
            started.wait();
            while m.state.load(Ordering::Relaxed) & WAITERS == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            release(&inside);
        });
        assert_eq!(inside.load(Ordering::SeqCst), n as u32);
        assert!(!m.is_held());
    }

    #[test]
    fn sleepers_are_woken_by_unlock() {
        let m = Adaptive::new();
        // SAFETY: the main thread holds the mutex taken in `with_sleepers`.
        with_sleepers(&m, 3, |_| unsafe { m.release() });
    }

    #[test]
    fn unlock_fair_hands_over_to_a_sleeper_instead_of_freeing() {
        let m = Adaptive::new();
        with_sleepers(&m, 1, |inside| {
            // SAFETY: the main thread holds the mutex.
            unsafe { m.release_fair() };
            // Handed over: reserved for the sleeper, or taken by it, unless
            // the sleeper has already been through and released; either
            // way this newcomer cannot take it first.
            let s = m.state.load(Ordering::SeqCst);
            assert!(
                s & (LOCKED | HANDOFF) != 0 || inside.load(Ordering::SeqCst) == 1,
                "unlock_fair freed the lock with a sleeper waiting"
            );
            let stolen = m.try_acquire();
            let through = inside.load(Ordering::SeqCst) == 1;
            if stolen {
                // SAFETY: just taken.
                unsafe { m.release() };
            }
            assert!(
                !stolen || through,
                "a newcomer took a lock handed to a sleeper"
            );
        });
    }

    #[test]
    fn a_starving_sleeper_asks_for_handoff_and_no_newcomer_can_steal_it() {
        let m = Adaptive::new();
        for _attempt in 0..20 {
            let got = AtomicBool::new(false);
            m.acquire();
            let done = std::thread::scope(|s| {
                s.spawn(|| {
                    m.acquire();
                    got.store(true, Ordering::SeqCst);
                    // SAFETY: acquired just above.
                    unsafe { m.release() };
                });
                while m.state.load(Ordering::Relaxed) & WAITERS == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(2 * HANDOFF_AFTER);
                // Release and steal it back before the woken sleeper runs.
                // SAFETY: held by this thread.
                unsafe { m.release() };
                if !m.try_acquire() {
                    return None; // the sleeper won the race; try again
                }
                // The sleeper wakes, finds the lock taken after more than
                // HANDOFF_AFTER asleep, and asks for a handoff.
                // (On failure, release first and assert after the scope,
                // so that the test fails instead of hanging.)
                let give_up = Instant::now() + limit(Duration::from_secs(20));
                let mut asked = true;
                while m.state.load(Ordering::Relaxed) & HANDOFF == 0 {
                    if got.load(Ordering::SeqCst) {
                        // The sleeper slipped in between our release and
                        // our try and is gone: nobody left to ask. Retry.
                        // SAFETY: held by this thread.
                        unsafe { m.release() };
                        return None;
                    }
                    if Instant::now() >= give_up {
                        asked = false;
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                // Let the sleeper get back into the futex after asking, so
                // that a release which did not hand over would leave the
                // lock free for our try below (an awake sleeper could take
                // it first and hide the fault).
                std::thread::sleep(Duration::from_millis(5));
                // SAFETY: held by this thread.
                unsafe { m.release() };
                // Taking it now is only allowed once the sleeper has been
                // through (it may have been awake and quick).
                let stolen = asked && m.try_acquire() && !got.load(Ordering::SeqCst);
                if stolen {
                    // SAFETY: just taken; give it back so the sleeper ends.
                    unsafe { m.release() };
                }
                Some((asked, stolen))
            });
            assert!(got.load(Ordering::SeqCst));
            if let Some((asked, stolen)) = done {
                assert!(asked, "no handoff request");
                assert!(!stolen, "a newcomer stole a lock due to a starving sleeper");
                return;
            }
        }
        panic!("the sleeper always won the race; the handoff path was never reached");
    }

    /// Two threads that each hold the mutex for 1 ms, busy, and come
    /// straight back for it: the hand-over after `HANDOFF_AFTER` gives
    /// each of them a fair part. (Before the releaser left its own
    /// reservation alone, the one that had to wake lost most hand-overs:
    /// `bench spin --threads 2 --cs-ns 1000000 --delay-ns 0` gave it
    /// about a fifth of the acquisitions and a longest wait of 715 ms.)
    #[test]
    #[cfg_attr(miri, ignore = "busy holds of 1 ms for a third of a second")]
    fn two_threads_with_long_busy_holds_share_the_lock() {
        let m = Adaptive::new();
        let stop = AtomicBool::new(false);
        let counts = [AtomicU32::new(0), AtomicU32::new(0)];
        std::thread::scope(|s| {
            for count in &counts {
                let (m, stop) = (&m, &stop);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        m.acquire();
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_millis(1) {
                            core::hint::spin_loop();
                        }
                        count.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: acquired just above.
                        unsafe { m.release() };
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        let [a, b] = counts.map(|c| c.into_inner());
        assert!(
            3 * a.min(b) >= a.max(b),
            "acquisitions {a} and {b}: one thread got less than a quarter"
        );
    }

    #[test]
    fn timed_lock_times_out_while_held_and_leaves_the_word_usable() {
        let m = Adaptive::new();
        m.acquire();
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(m.try_lock_for(Duration::from_millis(30)).is_none());
                assert!(m.try_lock_until(Instant::now()).is_none());
            });
        });
        // WAITERS may be left set (harmless: one extra wake); unlock works.
        // SAFETY: held by this thread.
        unsafe { m.release() };
        assert!(m.try_lock_for(Duration::from_millis(1)).is_some());
        // SAFETY: the timed lock above succeeded.
        unsafe { m.release() };
        assert!(!m.is_held());
    }

    /// Two threads that hold the mutex for a few µs each, busy, and come
    /// back for it: holds longer than the watch, so a waiter spins, and a
    /// spinner learns their length. The mean learnt.
    fn mean_learnt_under_few_us_holds() -> u32 {
        let m = Adaptive::new();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        m.acquire();
                        pause::relax_ns(5_000);
                        // SAFETY: acquired just above.
                        unsafe { m.release() };
                    }
                });
            }
        });
        m.mean_hold_ns()
    }

    /// Run by [`one_cpu_online_means_no_waiter_spins`] in a process of its
    /// own (the count is read once per process), with `LOCKLAB_CPUS=1`.
    #[test]
    fn one_cpu_child() {
        if std::env::var_os("LOCKLAB_CPUS_CHILD").is_none() {
            return;
        }
        assert_eq!(crate::topology::online_cpus(), 1);
        assert_eq!(mean_learnt_under_few_us_holds(), 0, "a waiter spun");
        println!("one-cpu-child-ran");
    }

    /// With one CPU online no waiter watches or spins (nothing is
    /// learnt); with several, the same holds are spun on and learnt.
    #[test]
    #[cfg_attr(miri, ignore = "starts a child process, which Miri cannot")]
    fn one_cpu_online_means_no_waiter_spins() {
        crate::util::testing::run_as_one_cpu("block::mutex::tests::one_cpu_child");
        // The control: on several CPUs a waiter spins on these holds and
        // learns them. A waiter whose owner is preempted gives up and
        // learns nothing (a stall), so on a loaded machine one try may
        // see no spin: a few tries.
        if crate::topology::online_cpus() > 1 {
            assert!(
                (0..10).any(|_| mean_learnt_under_few_us_holds() > 0),
                "nobody spun on several CPUs"
            );
        }
    }

    #[test]
    fn spinners_learn_short_holds_and_stop_spinning_on_long_ones() {
        // Long holds (well beyond the sleep/wake cost) seen by spinners
        // push the mean up until contenders sleep at once.
        let m = Adaptive::new();
        for _ in 0..64 {
            m.learn(SLEEP_WAKE_NS * 4);
        }
        assert_eq!(AdaptiveSpin::patience_ns(m.mean_hold_ns()), 0);
        // Short ones bring spinning back, with patience a few times the mean.
        for _ in 0..64 {
            m.learn(200);
        }
        let p = AdaptiveSpin::patience_ns(m.mean_hold_ns());
        assert!((MIN_PATIENCE_NS..SLEEP_WAKE_NS).contains(&p), "{p}");
        assert_eq!(FixedSpin::patience_ns(m.mean_hold_ns()), SLEEP_WAKE_NS);
    }
}
