//! `condvar`: a condition variable for the guard of any locklab mutex.
//!
//! A waiter gives up its mutex and sleeps until another thread notifies;
//! then it takes the mutex back. The mutex is any `lock_api::RawMutex`, so
//! the condvar cannot look inside it: everything it knows about the mutex is
//! "release it, run this, take it back" (`MutexGuard::unlocked`).
//!
//! # The sequence word: no lost wake-ups
//!
//! The classic futex condvar (Drepper, "Futexes Are Tricky", 2011; the
//! design of Rust's `std` futex condvar): waiters sleep on `seq`, and every
//! notify increments `seq` before it wakes. A waiter reads `seq` while it
//! still holds the mutex, then releases the mutex and calls
//! `futex::wait(seq, observed)`. A notifier that changed the state the
//! waiter waits for did so under the mutex, so after the waiter released it:
//! its increment comes after the waiter's read, and either lands before the
//! kernel's compare (the waiter does not sleep) or after the waiter was
//! queued (the wake finds it). That is the whole argument for no lost
//! wake-ups; it needs the waiter to read `seq` *before* it releases the
//! mutex (the loom check breaks when it does not).
//!
//! `waiters` counts threads inside a wait, registered under the mutex before
//! it is released and counted out once they hold it again; it decides when
//! the mutex's address is forgotten (below).
//!
//! # `sleepers`: no system call for a waiter already woken
//!
//! Notifiers read `sleepers` first and skip the increment and the system
//! call when it is zero. A waiter counts itself in with `waiters`, under
//! the mutex, and is counted out as soon as nobody needs to wake it any
//! more: by the notifier whose wake took it off the futex's queue (the
//! kernel's count of threads woken says so, and a wait that the kernel
//! ended by such a wake returns [`Wake::Woken`]), or by itself when its
//! wait ended otherwise (the word had changed, its deadline passed, a
//! signal). Each registration is thus counted out exactly once, and
//! never before it was counted in (a wake that dequeues a thread follows
//! its enqueue under the kernel's lock, which follows its registration).
//!
//! Why a notifier that reads zero may skip: by the argument above it sees
//! the registration of every waiter that released the mutex before its
//! change of state. Zero means each such registration was counted out, so
//! each of those waiters is off the futex's queue, or about to leave it by
//! itself, and will take the mutex and re-check its condition: after the
//! notifier's change (then it sees it), or before it (then it found its
//! condition unchanged and, to wait again, registered again under the
//! mutex, which the notifier sees in turn).
//!
//! Why it matters: counting a woken waiter out only when it runs again
//! (or, as before, only once it holds the mutex again) leaves it counted
//! while it waits for a CPU, and on a machine with more runnable threads
//! than cores that can last a scheduler time slice, during which every
//! notify pays a wake system call that finds nobody. `bench condvar`
//! measured it: with four producers and four consumers on two cores,
//! about 2.2 futex calls per item, against `parking_lot`'s 0.5 (whose
//! queue of parked threads knows exactly who sleeps), and 0.5 with this
//! count (measured during that change on the AMD EPYC guest; docs/library.md's
//! goal table has `bench condvar`'s rates and CPU per item since).
//!
//! A wait taken apart ([`Condvar::begin_wait`], for the C interface) does
//! its own sleeping and cannot say how it ended, so it counts itself out
//! in [`Condvar::end_wait`]; and a notifier that wakes it must not. A
//! notifier cannot tell whom it woke, so the first `begin_wait` on a
//! condvar sets `foreign`, for good: from then on notifiers count nobody
//! out and every waiter counts itself out once its wait returns. A waiter
//! reads `foreign` as it registers and counts itself out on a wake only if
//! it read `foreign` set; a notifier reads it after its wake. A notifier
//! that wakes a waiter which read it set (or a foreign waiter, which set
//! it before sleeping) reads it set too (the waiter's read or write, its
//! enqueue, the notifier's dequeue and read are ordered by the kernel's
//! lock), so nobody is counted out twice; the other way round, a waiter
//! that read it clear woken by a notifier that reads it set is counted
//! out by neither and stays counted: a notify that skips nothing it
//! should, only the system call it could have saved.
//!
//! # A look at `seq` before sleeping
//!
//! A waiter that has released the mutex looks at `seq` for up to
//! `SPIN_NS` (2 µs) before its futex wait, and returns at once if a notify
//! moved it on. For the argument above the look is nothing new: it is a
//! delay between the release and the futex wait, which any waiter may
//! suffer there (a preemption); a `seq` that moved is what the futex wait
//! would have found (`Wake::Changed`), and the waiter counts itself out of
//! `sleepers` as it does then. A notifier that comes during the look still
//! makes its wake call, which finds nobody asleep: the price of the look,
//! against a sleep and a wake-up saved.
//!
//! Why: when the other side runs on another core and notifies within a
//! few microseconds, a sleep costs the waiter a wake-up's latency, and
//! with `sleepers` the notifier, which makes no more system calls once its
//! wake is on the way, runs ahead and fills (or drains) the queue while
//! the woken thread is still on its way back. `bench condvar --signal
//! after` with one producer and one consumer on the lab's 2-core AMD EPYC
//! guest ran locklab's pair at 1.04–1.09 M items/s against `std`'s
//! 2.0–2.1 without the look, and at 1.9–2.1, a tie with `std`, with it;
//! with the notify under the mutex, at 3.6–3.9 M items/s against
//! 1.1–1.2 without it (and `std`'s 0.6–1.1). Looks of 0.5, 1, 2 and 5 µs
//! measured 1.16, 1.62, 2.03 and 2.38 M items/s at 1x1 (one run each,
//! `std` 1.9–2.5 beside them); 2 µs is where the gain is taken.
//!
//! With one CPU online there is no look: the notifier cannot run while
//! the waiter looks (`topology::online_cpus`, which `LOCKLAB_CPUS`
//! overrides).
//!
//! A look that sees no notify costs its 2 µs of CPU, so the condvar keeps
//! a score of how its looks have paid (`spin_score`: up one for a hit,
//! down one for a miss, at most `SCORE_MAX`), and waiters look only while
//! it is above zero, or, at zero, when the `seq` they read is a multiple
//! of `PROBE_EVERY` (a probe, so that a condvar whose notifies start to
//! come quickly is looked at again). The score is a heuristic, read and
//! written without read-modify-writes: a lost update changes when a waiter
//! looks, never whether it is woken. Measured with producers that sleep
//! 20 µs after each item (`--producer-sleep-ns 20000`, so that every look
//! misses): a fixed look of 2 µs, without the score, added 1.4 µs of CPU
//! per item at 1x1 (5 µs added 4.8); with the score, the CPU per item with
//! and without looks is the same within the runs' spread (17.6 and 18.5
//! µs against 17.3 and 18.5 at 1x1, notify after unlocking, two runs each,
//! the looks switched off by a scratch switch in the same binary).
//!
//! # `notify_all` without a thundering herd: requeue onto a word of our own
//!
//! Waking every waiter at once sends them all onto the mutex, where all but
//! one block again (or, with a spin lock, spin). The kernel's answer,
//! `FUTEX_CMP_REQUEUE` onto the mutex's word, needs to know the mutex's
//! word and protocol, which a generic condvar does not. We requeue onto a
//! second word that the condvar owns, `chain`, and wake from it one thread
//! at a time:
//!
//! - `notify_all` increments `seq`, then asks the kernel to move every
//!   thread sleeping on `seq` to `chain` without waking any of them (one
//!   system call; the kernel's compare of `seq` makes it atomic with respect
//!   to sleepers, and a changed `seq` is simply re-read and retried). It
//!   adds the number moved to `chained`, the count of wakes still owed to
//!   the chain, and pays the first one: one `wake_one(chain)`.
//! - Every waiter, once it holds the mutex again, pays the next one (if
//!   `chained > 0`: decrement, `wake_one(chain)`) before it returns to its
//!   caller. So the next waiter of the broadcast wakes only when the
//!   previous one owns the mutex: at most one of them is ever awake and
//!   blocked on the mutex, instead of all of them.
//!
//! Being moved is the mark "signalled by a broadcast", set by the kernel
//! atomically: `chain` holds only threads that slept on `seq` when some
//! `notify_all` ran, and a waiter that registered later sleeps on `seq`, out
//! of the chain's reach. That is why this does not depend on the order in
//! which the kernel picks sleepers (the futex man page promises none).
//!
//! Why every waiter present at a `notify_all` wakes: those not yet asleep
//! see `seq` changed and do not sleep. Those asleep are moved to `chain`;
//! let `s` be the number asleep on `chain`. Every move adds to `chained` as
//! much as to `s`; every payment that finds someone asleep removes one from
//! both; a thread that leaves `chain` by itself (signal, timeout) removes one
//! from `s` only. So `s <= chained` once the notifier has added its count,
//! and every payment made while `s > 0` wakes a thread that will pay again
//! once it holds the mutex. The notifier makes the first payment after
//! adding, so while anyone sleeps on `chain`, some thread is on its way to
//! pay for it: the chain cannot stop early. (It can run long: a payment
//! that finds nobody is a wasted system call, never a lost wake.)
//!
//! Every waiter pays, not only those woken from the chain, because a waiter
//! cannot tell which word it slept on; a waiter woken by `notify_one` or by
//! a signal thus may wake one chained waiter early. That only adds one
//! thread to the mutex's queue, and keeps the argument above simple.
//!
//! # A notify in two steps, for a notifier that holds the mutex
//!
//! A waiter woken while its notifier still holds the mutex can only wait
//! for the mutex; under a spin lock it spins, and on a busy machine it may
//! spin on the CPU of the holder it waits for, which it preempted by
//! waking. [`Condvar::choose_one`] and [`Condvar::choose_all`] do a notify's
//! work under the mutex but the wake: `seq` moves on, and the sleepers to
//! release are moved, still asleep, onto `chain`, their wakes counted in
//! `chained`; [`Condvar::wake_chosen`], after the release, pays the first
//! one. That is `notify_all`'s own protocol with its first payment made
//! later by the same thread, so the argument above covers it: while the
//! chosen sleep on `chain`, a thread (the notifier) is on its way to pay.
//! The waiter released is chosen when the notifier calls, among those
//! asleep then, as a one-step notify would: never one that starts waiting
//! between the release and the wake. The C interface
//! (`locklab-preload`) uses them, because a C program signals under the
//! mutex as often as not, and it cannot be changed to notify after the
//! release, which Rust code can (drop the guard first).

//! # Spurious wake-ups
//!
//! [`Condvar::wait`] may return without a notify: on a signal, or because
//! *any* notify (even a `notify_one` meant for someone else) moved `seq`
//! between the waiter's read and its sleep, or when a payment of the chain
//! reaches it early. Callers re-check their condition, or use
//! [`Condvar::wait_while`], which does so and never returns spuriously.
//!
//! This is the one difference from `parking_lot::Condvar` that a program
//! can trip over: `parking_lot`'s `wait` returns only after a notify (or
//! its timeout), so a single waiter may test its condition with `if`
//! before it waits; here it must loop, as with `std::sync::Condvar`. The
//! calls themselves have `parking_lot`'s shapes: `new` (a `const fn`),
//! `wait(&mut guard)`, `wait_for`, `wait_until`, `wait_while`,
//! `wait_while_for` and `wait_while_until` (the condition before the
//! time), `notify_one -> bool` and `notify_all -> usize`. Their counts
//! are of sleepers woken (or queued for waking), so a waiter that had not
//! yet fallen asleep returns without being counted.
//!
//! # One mutex at a time
//!
//! Waiters of one condvar that hold different mutexes would each assume the
//! other's mutex orders their notifies, which it does not. The condvar
//! records the mutex's address while it has waiters and panics if a wait
//! comes with another one while a thread is still inside a wait with the
//! first (including a woken waiter that is taking its mutex back). Using a
//! condvar with one mutex, then later with another, is fine.
//!
//! # Orderings
//!
//! All `Relaxed`. The condvar publishes no data: the state waiters wait for
//! is published by the mutex. What it relies on is (a) coherence along the
//! mutex's happens-before order (a notifier after a waiter's release of the
//! mutex reads `sleepers` and increments `seq` later in their modification
//! orders than the waiter's increment and read), (b) the atomicity of
//! read-modify-writes (`chained`, `seq` increments: each sees the latest
//! value), and (c) the kernel's compare-and-sleep, which is atomic with
//! respect to wakes and requeues on the same word, and which orders a
//! sleeper's registration (and its read or write of `foreign`) before the
//! wake that dequeues it and whatever that waker does next.

use std::time::Instant;

use crate::block::futex::{self, Wake};
use crate::util::sync::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Relaxed};

/// Longest a waiter looks at `seq` before it sleeps, ns: about a sleep's
/// and a wake-up's cost on the lab's machine (see the module documentation
/// for the measurements behind it).
const SPIN_NS: u64 = 2_000;

/// The ceiling of `Condvar::spin_score`: after a run of looks that saw a
/// notify, this many looks in a row that see none stop the looking.
const SCORE_MAX: u32 = 16;

/// A new condvar's score: its first waits look.
const SCORE_START: u32 = 4;

/// With a score of zero, a wait still looks when the `seq` it read is a
/// multiple of this: a probe, so that a condvar whose notifies start to
/// come quickly gets looked at again.
const PROBE_EVERY: u32 = 16;

/// A condition variable that works with the guard of any locklab mutex
/// (any `lock_api::Mutex<R, T>`). See the module documentation.
///
/// ```
/// use locklab::{Condvar, TicketMutex};
/// let ready = TicketMutex::new(false);
/// let cv = Condvar::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         *ready.lock() = true;
///         cv.notify_one();
///     });
///     let mut g = ready.lock();
///     cv.wait_while(&mut g, |ready| !*ready);
///     assert!(*g);
/// });
/// ```
#[derive(Debug)]
pub struct Condvar {
    /// Waiters sleep here; every notify increments it first.
    seq: AtomicU32,
    /// Waiters of a broadcast are moved here and woken one by one. Its value
    /// never changes: nobody waits on it by value, only by being moved.
    chain: AtomicU32,
    /// Wakes still owed to threads moved to `chain`.
    chained: AtomicU32,
    /// Threads between registering (mutex held) and leaving (mutex held
    /// again) a wait.
    waiters: AtomicU32,
    /// Registered threads that a notify may still have to wake: counted
    /// out by the wake that dequeues them, or by themselves when their
    /// wait ends otherwise (see the module documentation).
    sleepers: AtomicU32,
    /// Set for good by the first wait taken apart (`begin_wait`): from
    /// then on every waiter counts itself out of `sleepers`.
    foreign: AtomicBool,
    /// Address of the mutex the current waiters use, or 0.
    mutex: AtomicUsize,
    /// How well looking at `seq` before sleeping has paid lately: up by
    /// one for a look that saw a notify, down by one for one that did not,
    /// within `0..=SCORE_MAX`. Waiters look while it is above zero.
    spin_score: AtomicU32,
    #[cfg(all(test, not(loom)))]
    probe: probe::Probe,
}

/// Whether a timed wait returned because its time ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeoutResult(bool);

impl WaitTimeoutResult {
    /// `true` if the deadline passed (for the `wait_while…` forms: and the
    /// condition still held). A notify may have come at the same moment.
    pub fn timed_out(self) -> bool {
        self.0
    }
}

impl Condvar {
    crate::loom_const_fn! {
        /// A condition variable nobody waits on.
        pub fn new() -> Self {
            Self {
                seq: AtomicU32::new(0),
                chain: AtomicU32::new(0),
                chained: AtomicU32::new(0),
                waiters: AtomicU32::new(0),
                sleepers: AtomicU32::new(0),
                foreign: AtomicBool::new(false),
                mutex: AtomicUsize::new(0),
                spin_score: AtomicU32::new(SCORE_START),
                #[cfg(all(test, not(loom)))]
                probe: probe::Probe::new(),
            }
        }
    }

    /// The waiting algorithm, for any mutex: the building block of the
    /// `wait…` methods, public for mutexes outside `lock_api` and for the
    /// loom model checks.
    ///
    /// Call it holding the mutex at `mutex` (its address, used only to
    /// detect a condvar used with two mutexes at once). `unlocked` must
    /// release that mutex, call the closure it is given once, and take the
    /// mutex back before returning. Wakes up spuriously like
    /// [`wait`](Self::wait); `deadline: None` waits without a time limit.
    ///
    /// # Panics
    /// If another thread is inside a wait on this condvar with a different
    /// mutex ([`try_wait_with`](Self::try_wait_with) says so instead).
    pub fn wait_with(
        &self,
        mutex: *const (),
        deadline: Option<Instant>,
        unlocked: impl FnOnce(&mut dyn FnMut()),
    ) -> WaitTimeoutResult {
        match self.try_wait_with(mutex, deadline, unlocked) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`wait_with`](Self::wait_with), but a wait with a second mutex (while
    /// another thread waits with a different one) returns an error at once,
    /// without calling `unlocked`, instead of panicking: for callers that
    /// must not unwind (a C interface, where POSIX leaves this undefined
    /// and an error code is the kind answer).
    pub fn try_wait_with(
        &self,
        mutex: *const (),
        deadline: Option<Instant>,
        unlocked: impl FnOnce(&mut dyn FnMut()),
    ) -> Result<WaitTimeoutResult, TwoMutexes> {
        let mutex = mutex as usize;
        let (observed, foreign) = self.enter(mutex)?;
        let mut wake = Wake::Woken;
        let mut slept = false;
        unlocked(&mut || {
            // Not under Miri: its clock jumps when a thread sleeps, so the
            // tests that sleep to let waiters fall asleep would find them
            // still looking there. The look itself is atomic loads, checked
            // under Miri by its own test, which calls it directly.
            wake = if !cfg!(miri) && self.spin_for_notify(observed) {
                Wake::Changed
            } else {
                futex::wait(&self.seq, observed, deadline)
            };
            slept = true;
            // Woken by a notifier's wake: it counted us out, unless
            // waits are foreign here (module documentation).
            if foreign || wake != Wake::Woken {
                self.sleepers.fetch_sub(1, Relaxed);
            }
            #[cfg(all(test, not(loom)))]
            self.probe.returned(wake);
        });
        if !slept {
            // `unlocked` did not call the sleep, against its contract:
            // count the waiter out all the same.
            self.sleepers.fetch_sub(1, Relaxed);
        }
        #[cfg(all(test, not(loom)))]
        self.probe.relocked(wake);
        self.leave(mutex);
        Ok(WaitTimeoutResult(wake == Wake::TimedOut))
    }

    /// The look before the sleep (module documentation, "A look at `seq`
    /// before sleeping"): whether `seq` moved on from `observed` within
    /// [`SPIN_NS`], when the recent looks have paid (or this wait probes).
    /// Records whether this one did.
    fn spin_for_notify(&self, observed: u32) -> bool {
        // Under loom the look is left out: it is only a delay before the
        // futex wait, which the models already give every waiter, and an
        // unbounded spin would not end their exploration.
        #[cfg(not(loom))]
        {
            // With one CPU online the notifier cannot run while we look.
            if crate::topology::online_cpus() < 2 {
                return false;
            }
            let score = self.spin_score.load(Relaxed);
            if score == 0 && observed % PROBE_EVERY != 0 {
                return false;
            }
            let mut spun = 0;
            let hit = loop {
                if self.seq.load(Relaxed) != observed {
                    break true;
                }
                if spun >= SPIN_NS {
                    break false;
                }
                spun += crate::util::pause::relax_ns(0);
            };
            // A heuristic: concurrent updates may overwrite each other.
            let next = if hit {
                (score + 1).min(SCORE_MAX)
            } else {
                score.saturating_sub(1)
            };
            if next != score {
                self.spin_score.store(next, Relaxed);
            }
            hit
        }
        #[cfg(loom)]
        {
            let _ = observed;
            false
        }
    }

    /// A wait taken apart, for a caller that must do the sleeping itself:
    /// the C interface (`locklab-preload`), whose condition wait is a
    /// thread-cancellation point, sleeps with cancellation enabled and must
    /// undo the wait when the thread is cancelled asleep, which a closure
    /// inside [`try_wait_with`](Self::try_wait_with) cannot do.
    ///
    /// Call it holding the mutex at `mutex`: it registers the waiter (or
    /// refuses a second mutex, as `try_wait_with` does) and returns the
    /// value to sleep on. Then release the mutex, sleep on
    /// [`futex_word`](Self::futex_word) while it holds that value (a
    /// process-private futex wait: a broadcast requeues its sleepers with
    /// `FUTEX_CMP_REQUEUE_PRIVATE`), take the mutex back, and call
    /// [`end_wait`](Self::end_wait) with the same mutex, whatever ended
    /// the sleep. `try_wait_with` is exactly these steps.
    pub fn begin_wait(&self, mutex: *const ()) -> Result<u32, TwoMutexes> {
        // Before registering: a notifier that wakes this thread must see it.
        self.foreign.store(true, Relaxed);
        self.enter(mutex as usize).map(|(observed, _)| observed)
    }

    /// The word a wait begun by [`begin_wait`](Self::begin_wait) sleeps on.
    #[cfg(not(loom))]
    pub fn futex_word(&self) -> &std::sync::atomic::AtomicU32 {
        &self.seq
    }

    /// Ends a wait begun by [`begin_wait`](Self::begin_wait), the mutex
    /// held again: passes on the broadcast's wake it owes, if any, and
    /// unregisters the waiter.
    pub fn end_wait(&self, mutex: *const ()) {
        self.sleepers.fetch_sub(1, Relaxed);
        self.leave(mutex as usize)
    }

    /// Registers a waiter (mutex held) and reads `seq` while the mutex still
    /// keeps notifiers out; also whether waits are foreign here.
    fn enter(&self, mutex: usize) -> Result<(u32, bool), TwoMutexes> {
        self.waiters.fetch_add(1, Relaxed);
        if let Err(other) = self.mutex.compare_exchange(0, mutex, Relaxed, Relaxed) {
            if other != mutex {
                self.waiters.fetch_sub(1, Relaxed);
                return Err(TwoMutexes { mutex, other });
            }
        }
        let foreign = self.foreign.load(Relaxed);
        self.sleepers.fetch_add(1, Relaxed);
        Ok((self.seq.load(Relaxed), foreign))
    }

    /// After a wake of ours that dequeued `woken` sleepers: counts them
    /// out, unless waits are foreign here (then they count themselves).
    fn count_out(&self, woken: u32) {
        if woken > 0 && !self.foreign.load(Relaxed) {
            self.sleepers.fetch_sub(woken, Relaxed);
        }
    }

    /// Mutex held again: pays the chain's next wake, then unregisters.
    fn leave(&self, mutex: usize) {
        self.pay_chain();
        if self.waiters.fetch_sub(1, Relaxed) == 1 {
            // The last waiter forgets the mutex. A waiter with another mutex
            // that registered since then found ours recorded and panicked,
            // so this exchange cannot erase a newer record.
            let _ = self.mutex.compare_exchange(mutex, 0, Relaxed, Relaxed);
        }
    }

    /// Wakes the next thread moved to `chain`, if a wake is owed.
    fn pay_chain(&self) {
        let mut owed = self.chained.load(Relaxed);
        while owed > 0 {
            match self
                .chained
                .compare_exchange(owed, owed - 1, Relaxed, Relaxed)
            {
                Ok(_) => {
                    self.count_out(u32::from(futex::wake_one(&self.chain)));
                    return;
                }
                Err(now) => owed = now,
            }
        }
    }

    /// Wakes one waiter, if any is asleep.
    ///
    /// Returns whether this call woke a sleeping waiter. `false` means
    /// nobody was waiting, or every waiter was already on its way back (it
    /// had not fallen asleep yet, so it sees the notify anyway, an earlier
    /// notify woke it, or it is in the queue of an earlier
    /// [`notify_all`](Self::notify_all)).
    pub fn notify_one(&self) -> bool {
        if self.sleepers.load(Relaxed) == 0 {
            return false;
        }
        self.seq.fetch_add(1, Relaxed);
        let woke = futex::wake_one(&self.seq);
        self.count_out(u32::from(woke));
        woke
    }

    /// Wakes every waiter, one after another: the next wakes when the
    /// previous has taken the mutex back (see the module documentation).
    ///
    /// Returns how many sleeping waiters this call queued for waking.
    /// Waiters that had not yet fallen asleep are not counted; they return
    /// anyway.
    pub fn notify_all(&self) -> usize {
        let moved = self.choose(u32::MAX);
        if moved > 0 {
            self.pay_chain();
        }
        moved as usize
    }

    /// [`notify_one`](Self::notify_one) for a notifier that holds the
    /// mutex, in two steps: the waiter is chosen now, and woken by
    /// [`wake_chosen`](Self::wake_chosen) once the caller has released the
    /// mutex. Woken at once, it would find the mutex held; under a spin
    /// lock it then spins, and where it woke on the notifier's own CPU
    /// (a woken thread may preempt the one that woke it) it spins while
    /// the holder it waits for cannot run, until the scheduler's tick:
    /// milliseconds per hand-off instead of microseconds. (The C library's
    /// mutex sleeps instead; a condvar that cannot look inside its mutex
    /// defers the wake.)
    ///
    /// Choosing is what `notify_all` does to its sleepers, for one of them:
    /// `seq` moves on (a waiter not yet asleep returns), and one sleeper is
    /// moved, still asleep, onto the chain, with the wake it is owed
    /// counted there. So the waiter released is one that slept when the
    /// notifier called, never one that arrives between the release and the
    /// wake; and a chosen waiter that leaves by itself (its deadline, a
    /// signal) changes nothing in the chain's argument (module
    /// documentation), which this only adds to.
    ///
    /// Returns whether a sleeper was chosen; if so, the caller owes one
    /// [`wake_chosen`](Self::wake_chosen), after releasing the mutex.
    pub fn choose_one(&self) -> bool {
        self.choose(1) > 0
    }

    /// [`notify_all`](Self::notify_all) in the two steps of
    /// [`choose_one`](Self::choose_one): every sleeper is moved onto the
    /// chain now, and the chain's first wake is paid by
    /// [`wake_chosen`](Self::wake_chosen) after the release.
    ///
    /// Returns how many sleepers were moved; if any, the caller owes one
    /// `wake_chosen`.
    pub fn choose_all(&self) -> usize {
        self.choose(u32::MAX) as usize
    }

    /// Pays the wake that [`choose_one`](Self::choose_one) or
    /// [`choose_all`](Self::choose_all) left owed (call it once for each
    /// that chose someone, after releasing the mutex).
    pub fn wake_chosen(&self) {
        self.pay_chain();
    }

    /// Moves `seq` on and up to `n` of its sleepers onto the chain, their
    /// wakes counted owed; how many were moved.
    fn choose(&self, n: u32) -> u32 {
        if self.sleepers.load(Relaxed) == 0 {
            return 0;
        }
        let mut seq = self.seq.fetch_add(1, Relaxed).wrapping_add(1);
        let moved = loop {
            match futex::requeue(&self.seq, seq, 0, &self.chain, n) {
                Some(n) => break n,
                // Another notify moved `seq` meanwhile. Retry: it may have
                // been a `notify_one`, which would leave our sleepers asleep.
                None => seq = self.seq.load(Relaxed),
            }
        };
        if moved > 0 {
            if cfg!(miri) {
                // Miri's requeue wakes the threads instead of moving them
                // (`futex::requeue`): this call dequeued them.
                self.count_out(moved);
            }
            self.chained.fetch_add(moved, Relaxed);
        }
        moved
    }
}

/// A condvar waited on with two mutexes at once: the caller's and the one
/// another thread waits with (their addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TwoMutexes {
    /// The caller's mutex.
    pub mutex: usize,
    /// The mutex another waiter uses.
    pub other: usize,
}

impl core::fmt::Display for TwoMutexes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "locklab::Condvar used with two mutexes at once (waiting with the mutex at {:#x} while another \
             thread waits with the one at {:#x})",
            self.mutex, self.other
        )
    }
}

impl std::error::Error for TwoMutexes {}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(not(loom))]
mod guards {
    use super::{Condvar, WaitTimeoutResult};
    use lock_api::{MutexGuard, RawMutex};
    use std::time::{Duration, Instant};

    impl Condvar {
        fn wait_guard<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            deadline: Option<Instant>,
        ) -> WaitTimeoutResult {
            let mutex = MutexGuard::mutex(guard) as *const lock_api::Mutex<R, T> as *const ();
            self.wait_with(mutex, deadline, |sleep| MutexGuard::unlocked(guard, sleep))
        }

        /// Releases the guard's mutex, sleeps until notified, and takes the
        /// mutex back.
        ///
        /// May return spuriously, without a notify: re-check the condition
        /// in a loop, or use [`wait_while`](Self::wait_while).
        ///
        /// # Panics
        /// If another thread is inside a wait on this condvar with a
        /// different mutex.
        pub fn wait<R: RawMutex, T: ?Sized>(&self, guard: &mut MutexGuard<'_, R, T>) {
            self.wait_guard(guard, None);
        }

        /// [`wait`](Self::wait), but gives up at `deadline`.
        pub fn wait_until<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            deadline: Instant,
        ) -> WaitTimeoutResult {
            self.wait_guard(guard, Some(deadline))
        }

        /// [`wait`](Self::wait), but gives up after `timeout`.
        pub fn wait_timeout<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            self.wait_guard(guard, Instant::now().checked_add(timeout))
        }

        /// [`wait_timeout`](Self::wait_timeout) under `parking_lot`'s name.
        pub fn wait_for<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            timeout: Duration,
        ) -> WaitTimeoutResult {
            self.wait_timeout(guard, timeout)
        }

        /// Waits while `condition` holds for the protected data; returns
        /// with the mutex held and `condition` false. Never returns
        /// spuriously.
        pub fn wait_while<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            mut condition: impl FnMut(&mut T) -> bool,
        ) {
            while condition(guard) {
                self.wait(guard);
            }
        }

        /// [`wait_while`](Self::wait_while), but gives up at `deadline`.
        /// Reports a timeout only if `condition` still held when time ran
        /// out.
        /// The arguments are in `parking_lot`'s order (the condition
        /// before the deadline).
        pub fn wait_while_until<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            mut condition: impl FnMut(&mut T) -> bool,
            deadline: Instant,
        ) -> WaitTimeoutResult {
            while condition(guard) {
                if self.wait_until(guard, deadline).timed_out() {
                    return WaitTimeoutResult(condition(guard));
                }
            }
            WaitTimeoutResult(false)
        }

        /// [`wait_while`](Self::wait_while), but gives up after `timeout`.
        pub fn wait_while_timeout<R: RawMutex, T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, R, T>,
            timeout: Duration,
            mut condition: impl FnMut(&mut T) -> bool,
        ) -> WaitTimeoutResult {
            match Instant::now().checked_add(timeout) {
                Some(deadline) => self.wait_while_until(guard, condition, deadline),
                None => {
                    self.wait_while(guard, &mut condition);
                    WaitTimeoutResult(false)
                }
            }
        }
    }
}

/// Instrumentation for the unit tests: how many waiters were woken from
/// their sleep and had not yet taken the mutex back, at most, at once.
#[cfg(all(test, not(loom)))]
mod probe {
    use crate::block::futex::Wake;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    #[derive(Debug)]
    pub(super) struct Probe {
        awake: AtomicUsize,
        max_awake: AtomicUsize,
    }

    impl Probe {
        pub(super) const fn new() -> Self {
            Self {
                awake: AtomicUsize::new(0),
                max_awake: AtomicUsize::new(0),
            }
        }

        /// The futex wait returned (mutex not yet held). Only real wakes
        /// count: a waiter that never slept was not woken into the herd.
        pub(super) fn returned(&self, wake: Wake) {
            if wake == Wake::Woken {
                let now = self.awake.fetch_add(1, SeqCst) + 1;
                self.max_awake.fetch_max(now, SeqCst);
            }
        }

        /// The mutex is held again.
        pub(super) fn relocked(&self, wake: Wake) {
            if wake == Wake::Woken {
                self.awake.fetch_sub(1, SeqCst);
            }
        }

        pub(super) fn max_awake(&self) -> usize {
            self.max_awake.load(SeqCst)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{iters, limit, threads, Watchdog, HANG};
    use crate::{TasMutex, TicketMutex};
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    use std::time::Duration;

    /// Sleeps until `cv` has `n` registered waiters (they hold no mutex
    /// then, and are at most a few instructions from their futex wait).
    fn until_waiters(cv: &Condvar, n: u32) {
        while cv.waiters.load(SeqCst) != n {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn wait_and_notify_one_hand_turns_back_and_forth() {
        let _w = Watchdog::new("condvar handshake", HANG);
        const ROUNDS: u32 = iters(2_000) as u32;
        let turn = TicketMutex::new(0u32);
        let cv = Condvar::new();
        std::thread::scope(|s| {
            // Two players; player p moves when `turn % 2 == p`.
            for p in 0..2 {
                let (turn, cv) = (&turn, &cv);
                s.spawn(move || {
                    let mut g = turn.lock();
                    loop {
                        // Plain `wait` in a loop: spurious returns re-check.
                        while *g < ROUNDS && *g % 2 != p {
                            cv.wait(&mut g);
                        }
                        if *g >= ROUNDS {
                            break;
                        }
                        *g += 1;
                        cv.notify_one();
                    }
                    // The other player may be waiting for a turn that never comes.
                    cv.notify_one();
                });
            }
        });
        assert_eq!(turn.into_inner(), ROUNDS);
    }

    /// The look before sleeping: a look that sees `seq` move is a hit and
    /// raises the score, one that does not lowers it; at zero only probes
    /// look, and a probe's hit starts the looking again.
    #[test]
    fn looks_before_sleeping_stop_when_they_miss_and_probes_restart_them() {
        if crate::topology::online_cpus() < 2 {
            // No looks at all: `one_cpu_online_means_no_look` checks that.
            eprintln!("one CPU online: nobody looks, so there is no score to keep");
            return;
        }
        let cv = Condvar::new();
        assert_eq!(cv.spin_score.load(SeqCst), SCORE_START);
        // Moved on already: a hit.
        cv.seq.store(5, SeqCst);
        assert!(cv.spin_for_notify(4));
        assert_eq!(cv.spin_score.load(SeqCst), SCORE_START + 1);
        // Nobody notifies: each look misses, down to zero.
        for left in (0..=SCORE_START).rev() {
            assert!(!cv.spin_for_notify(5));
            assert_eq!(cv.spin_score.load(SeqCst), left);
        }
        // At zero, a wait that is no probe does not look (so a moved `seq`
        // goes unseen here, and the futex wait would see it) ...
        assert!(!cv.spin_for_notify(4));
        assert_eq!(cv.spin_score.load(SeqCst), 0);
        // ... a probe's miss keeps zero, and a probe's hit starts again.
        cv.seq.store(PROBE_EVERY, SeqCst);
        assert!(!cv.spin_for_notify(PROBE_EVERY));
        assert_eq!(cv.spin_score.load(SeqCst), 0);
        assert!(cv.spin_for_notify(2 * PROBE_EVERY));
        assert_eq!(cv.spin_score.load(SeqCst), 1);
        // The ceiling.
        for _ in 0..2 * SCORE_MAX {
            assert!(cv.spin_for_notify(0));
        }
        assert_eq!(cv.spin_score.load(SeqCst), SCORE_MAX);
    }

    /// Run by [`one_cpu_online_means_no_look`] in a process of its own
    /// (the count is read once per process), with `LOCKLAB_CPUS=1`.
    #[test]
    fn one_cpu_child() {
        if std::env::var_os("LOCKLAB_CPUS_CHILD").is_none() {
            return;
        }
        let cv = Condvar::new();
        // `seq` has moved on: a look would see it and score a hit.
        cv.seq.store(5, SeqCst);
        assert!(!cv.spin_for_notify(4), "a waiter looked");
        assert_eq!(cv.spin_score.load(SeqCst), SCORE_START);
        println!("one-cpu-child-ran");
    }

    /// With one CPU online a waiter does not look at `seq` before it
    /// sleeps: the notifier could not run meanwhile.
    #[test]
    #[cfg_attr(miri, ignore = "starts a child process, which Miri cannot")]
    fn one_cpu_online_means_no_look() {
        crate::util::testing::run_as_one_cpu("block::condvar::tests::one_cpu_child");
    }

    #[test]
    fn notify_without_waiters_does_not_touch_the_sequence() {
        let cv = Condvar::new();
        assert!(!cv.notify_one());
        assert_eq!(cv.notify_all(), 0);
        assert_eq!(
            cv.seq.load(SeqCst),
            0,
            "a notify with no waiter bumped `seq`"
        );
    }

    #[test]
    fn notify_all_wakes_every_waiter_one_at_a_time() {
        let _w = Watchdog::new("condvar notify_all", HANG);
        const N: u32 = 6;
        let go = TicketMutex::new(false);
        let cv = Condvar::new();
        let done = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..N {
                s.spawn(|| {
                    let mut g = go.lock();
                    cv.wait_while(&mut g, |go| !*go);
                    done.fetch_add(1, SeqCst);
                });
            }
            until_waiters(&cv, N);
            // Let them fall asleep (not needed for correctness: a waiter
            // still awake sees the notify by `seq` and is not counted).
            std::thread::sleep(Duration::from_millis(20));
            let mut g = go.lock();
            *g = true;
            let queued = cv.notify_all();
            assert!(queued <= N as usize);
            // Hold the mutex a while: a plain broadcast would have every
            // woken waiter block on it now.
            std::thread::sleep(Duration::from_millis(50));
            drop(g);
        });
        assert_eq!(done.load(SeqCst), N as u64, "a waiter was not woken");
        let herd = cv.probe.max_awake();
        eprintln!("notify_all of {N}: at most {herd} woken waiter(s) off the mutex at once");
        if cfg!(miri) {
            // Miri has no FUTEX_CMP_REQUEUE, so the futex layer wakes the
            // waiters instead of moving them (`futex::requeue`): they all
            // pile onto the mutex, correctly but as a herd. What this test
            // checks under Miri is the rest: every waiter wakes.
            return;
        }
        // The chain wakes the next waiter only once the previous holds the
        // mutex, so this is 1; one more is tolerated for a stray signal.
        assert!(
            herd <= 2,
            "{herd} woken waiters piled onto the mutex at once"
        );
    }

    /// `choose_one` under the mutex wakes nobody; `wake_chosen` after
    /// the release wakes the chosen one, and only one of two sleepers.
    #[test]
    fn a_chosen_waiter_sleeps_until_the_wake_after_the_release() {
        let _w = Watchdog::new("condvar choose_one", HANG);
        let m = TicketMutex::new(0u32);
        let cv = Condvar::new();
        let done = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut g = m.lock();
                    cv.wait_while(&mut g, |n| *n == 0);
                    *g -= 1;
                    done.fetch_add(1, SeqCst);
                });
            }
            until_waiters(&cv, 2);
            std::thread::sleep(Duration::from_millis(20));
            let mut g = m.lock();
            *g = 1;
            assert!(cv.choose_one(), "no sleeper was chosen");
            std::thread::sleep(Duration::from_millis(30));
            if !cfg!(miri) {
                // Miri's futex layer wakes where the kernel moves.
                assert_eq!(
                    cv.probe.max_awake(),
                    0,
                    "a chosen waiter woke before the wake"
                );
            }
            drop(g);
            cv.wake_chosen();
            let t = Instant::now();
            while done.load(SeqCst) == 0 {
                assert!(
                    t.elapsed() < limit(Duration::from_secs(10)),
                    "the chosen waiter never woke"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(done.load(SeqCst), 1, "one notify released both waiters");
            // The other one, by a broadcast in two steps.
            let mut g = m.lock();
            *g = 1;
            let moved = cv.choose_all();
            drop(g);
            if moved > 0 {
                cv.wake_chosen();
            }
        });
        assert_eq!(done.load(SeqCst), 2);
        assert_eq!(cv.chained.load(SeqCst), 0, "a chosen wake is still owed");
    }

    #[test]
    fn wait_timeout_times_out_and_says_so() {
        let m = TicketMutex::new(());
        let cv = Condvar::new();
        let mut g = m.lock();
        let d = Duration::from_millis(20);
        let t = Instant::now();
        // Spurious returns are allowed; loop until the timeout reports.
        while !cv
            .wait_timeout(&mut g, d.saturating_sub(t.elapsed()))
            .timed_out()
        {}
        assert!(t.elapsed() >= d);
        let t = Instant::now();
        while !cv.wait_until(&mut g, t + d).timed_out() {}
        assert!(t.elapsed() >= d);
        assert_eq!(
            cv.waiters.load(SeqCst),
            0,
            "a timed-out waiter stayed registered"
        );
        assert_eq!(
            cv.sleepers.load(SeqCst),
            0,
            "a timed-out waiter stayed counted"
        );
    }

    #[test]
    fn wait_while_timeout_reports_a_timeout_only_while_the_condition_holds() {
        let _w = Watchdog::new("condvar wait_while_timeout", HANG);
        let m = TicketMutex::new(0u32);
        let cv = Condvar::new();
        let t = Instant::now();
        let d = Duration::from_millis(20);
        let r = cv.wait_while_timeout(&mut m.lock(), d, |n| *n == 0);
        assert!(r.timed_out());
        assert!(t.elapsed() >= d);
        // Satisfied before the deadline: no timeout, and the data shows it.
        std::thread::scope(|s| {
            s.spawn(|| {
                until_waiters(&cv, 1);
                *m.lock() = 7;
                cv.notify_one();
            });
            let mut g = m.lock();
            let r = cv.wait_while_timeout(&mut g, Duration::from_secs(3600), |n| *n == 0);
            assert!(!r.timed_out());
            assert_eq!(*g, 7);
        });
    }

    #[test]
    fn wait_while_returns_only_once_the_condition_fails() {
        let _w = Watchdog::new("condvar wait_while", HANG);
        let m = TicketMutex::new(0u32);
        let cv = Condvar::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                // Many notifies for states the waiter does not want: each
                // one is a wake-up that `wait_while` must absorb.
                for _ in 0..10 {
                    *m.lock() += 1;
                    cv.notify_all();
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            let mut g = m.lock();
            cv.wait_while(&mut g, |n| *n < 10);
            assert_eq!(*g, 10);
        });
    }

    #[test]
    fn a_second_mutex_while_one_is_in_use_panics() {
        let _w = Watchdog::new("condvar misuse", HANG);
        let (a, b) = (TicketMutex::new(false), TicketMutex::new(()));
        let cv = Condvar::new();
        std::thread::scope(|s| {
            s.spawn(|| cv.wait_while(&mut a.lock(), |go| !*go));
            until_waiters(&cv, 1);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cv.wait_timeout(&mut b.lock(), Duration::from_millis(1))
            }));
            let msg = r.expect_err("waiting with a second mutex did not panic");
            let msg = msg.downcast_ref::<String>().expect("a formatted message");
            assert!(msg.contains("two mutexes"), "{msg}");
            assert_eq!(
                cv.waiters.load(SeqCst),
                1,
                "the refused waiter stayed registered"
            );
            // The form that must not unwind says so instead, and never
            // releases the mutex.
            let g = b.lock();
            let mut released = false;
            let r = cv.try_wait_with(&*g as *const (), None, |_| released = true);
            let e = r.expect_err("waiting with a second mutex was not refused");
            assert_ne!(e.mutex, e.other);
            assert!(!released, "the refused waiter released its mutex");
            assert!(e.to_string().contains("two mutexes"), "{e}");
            drop(g);
            assert_eq!(cv.waiters.load(SeqCst), 1);
            *a.lock() = true;
            cv.notify_all();
        });
        // Everyone left: the other mutex is fine now.
        assert_eq!(
            cv.mutex.load(SeqCst),
            0,
            "the last waiter kept its mutex recorded"
        );
        cv.wait_timeout(&mut b.lock(), Duration::from_millis(1));
    }

    /// Aborts if `progress` stops moving for `limit` while `done` is unset.
    fn stall_watchdog(progress: &AtomicU64, done: &AtomicBool, limit: Duration) {
        let mut last = (progress.load(SeqCst), Instant::now());
        while !done.load(SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
            let now = progress.load(SeqCst);
            if now != last.0 {
                last = (now, Instant::now());
            } else if last.1.elapsed() > limit {
                eprintln!("watchdog: no progress for {limit:?} at {now} items: lost wake-up?");
                std::process::abort();
            }
        }
    }

    #[test]
    fn bounded_queue_with_four_producers_and_four_consumers() {
        const PRODUCERS: u64 = threads(4) as u64;
        const CONSUMERS: usize = threads(4);
        const ITEMS: u64 = iters(5_000); // per producer
        const CAP: usize = 4;
        struct Queue {
            items: VecDeque<u64>,
            producers_left: u64,
        }
        let q = TasMutex::new(Queue {
            items: VecDeque::new(),
            producers_left: PRODUCERS,
        });
        let (not_empty, not_full) = (Condvar::new(), Condvar::new());
        let (progress, done) = (AtomicU64::new(0), AtomicBool::new(false));
        let sums: Vec<u64> = std::thread::scope(|s| {
            s.spawn(|| stall_watchdog(&progress, &done, limit(Duration::from_secs(20))));
            for p in 0..PRODUCERS {
                let (q, not_empty, not_full) = (&q, &not_empty, &not_full);
                s.spawn(move || {
                    for i in 0..ITEMS {
                        let mut g = q.lock();
                        not_full.wait_while(&mut g, |q| q.items.len() == CAP);
                        g.items.push_back(p * ITEMS + i);
                        drop(g);
                        // Mostly single wakes; now and then a broadcast, so
                        // chains run among single wakes and timeouts.
                        if i % 16 == 0 {
                            not_empty.notify_all();
                        } else {
                            not_empty.notify_one();
                        }
                    }
                    q.lock().producers_left -= 1;
                    not_empty.notify_all();
                });
            }
            let consumers: Vec<_> = (0..CONSUMERS)
                .map(|c| {
                    let (q, not_empty, not_full, progress) = (&q, &not_empty, &not_full, &progress);
                    s.spawn(move || {
                        let mut sum = 0;
                        let mut g = q.lock();
                        loop {
                            if c == 0 {
                                // One consumer polls with timeouts, so that
                                // timed-out waiters mix with the others.
                                not_empty.wait_while_timeout(
                                    &mut g,
                                    Duration::from_micros(200),
                                    |q| q.items.is_empty() && q.producers_left > 0,
                                );
                            } else {
                                not_empty.wait_while(&mut g, |q| {
                                    q.items.is_empty() && q.producers_left > 0
                                });
                            }
                            match g.items.pop_front() {
                                Some(v) => {
                                    sum += v;
                                    progress.fetch_add(1, SeqCst);
                                    not_full.notify_one();
                                }
                                None if g.producers_left == 0 => break,
                                None => {} // timed out
                            }
                        }
                        sum
                    })
                })
                .collect();
            let sums = consumers.into_iter().map(|h| h.join().unwrap()).collect();
            done.store(true, SeqCst);
            sums
        });
        let n = PRODUCERS * ITEMS;
        assert_eq!(progress.load(SeqCst), n, "items lost or duplicated");
        assert_eq!(sums.iter().sum::<u64>(), n * (n - 1) / 2, "wrong items");
        // Every waiter was counted out once, by itself or by its waker:
        // one count too many would cost system calls for ever, one too
        // few could skip a wake that was owed.
        for cv in [&not_empty, &not_full] {
            assert_eq!(cv.waiters.load(SeqCst), 0);
            assert_eq!(cv.sleepers.load(SeqCst), 0, "sleepers miscounted");
        }
    }

    #[test]
    fn a_notify_for_a_waiter_already_woken_makes_no_system_call() {
        let _w = Watchdog::new("condvar woken waiter", HANG);
        let go = TicketMutex::new(false);
        let cv = Condvar::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = go.lock();
                cv.wait_while(&mut g, |go| !*go);
            });
            until_waiters(&cv, 1);
            // Let it fall asleep (if it has not, the notify below finds
            // nobody and the waiter counts itself out instead).
            std::thread::sleep(Duration::from_millis(20));
            let mut g = go.lock();
            *g = true;
            let before = futex::wake_calls();
            if cv.notify_one() {
                // It cannot have run since: it needs the mutex we hold.
                assert_eq!(
                    cv.sleepers.load(SeqCst),
                    0,
                    "the notifier did not count out the waiter its wake took"
                );
            }
            let t = Instant::now();
            while cv.sleepers.load(SeqCst) != 0 {
                assert!(
                    t.elapsed() < limit(Duration::from_secs(10)),
                    "the waiter was never counted out"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            // Woken (or about to return) while we still hold the mutex:
            // nobody sleeps, so no notify needs the kernel.
            let first = futex::wake_calls() - before;
            assert!(!cv.notify_one());
            assert_eq!(cv.notify_all(), 0);
            assert_eq!(
                futex::wake_calls() - before,
                first,
                "a notify made a system call for a waiter already woken"
            );
            drop(g);
        });
        assert_eq!(cv.sleepers.load(SeqCst), 0);
    }

    #[test]
    fn a_wait_taken_apart_counts_itself_out_and_turns_notifiers_off_counting() {
        let _w = Watchdog::new("condvar begin_wait", HANG);
        let m = TicketMutex::new(false);
        let cv = Condvar::new();
        let g = m.lock();
        let me = &m as *const TicketMutex<bool> as *const ();
        let observed = cv.begin_wait(me).unwrap();
        assert!(cv.foreign.load(SeqCst));
        assert_eq!(cv.sleepers.load(SeqCst), 1);
        // A notify changes the word the waiter would sleep on.
        assert!(!cv.notify_one(), "nobody sleeps on the word yet");
        assert_ne!(cv.futex_word().load(SeqCst), observed);
        cv.end_wait(me);
        assert_eq!((cv.waiters.load(SeqCst), cv.sleepers.load(SeqCst)), (0, 0));
        drop(g);
        // Plain waits after it still get woken, and are counted out by
        // themselves: the counts end at zero.
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock();
                cv.wait_while(&mut g, |go| !*go);
            });
            until_waiters(&cv, 1);
            *m.lock() = true;
            cv.notify_one();
        });
        assert_eq!(cv.sleepers.load(SeqCst), 0);
    }
}
