//! The kernel: its objects, the system-call path and the emulated cores.
//!
//! # The path of a system call
//!
//! A core runs its current thread's user program until it makes a system
//! call. Kernel entry saves the user registers into the thread's TCB, outside
//! any lock (in seed 002 §3.2 the entry and exit code, which saves and
//! restores user state on a per-core kernel stack, stays outside the big
//! lock). Then the concurrency control admits the core
//! ([`Concurrency::enter`]), and the call runs in two phases, as seL4's do
//! (§3.1): the first decodes the capability and checks the object, and may
//! fail without changing anything; the second executes and cannot fail. The
//! context switch's "hardware" work (standing for page-table and segment
//! register loads) runs after the core left the kernel's critical section,
//! unless [`Config::switch_inside`] asks for it inside, and the emulated
//! inter-processor interrupts are sent after it too (§3.4). Kernel exit
//! restores the registers of whichever thread is now current.
//!
//! # Fine-grained locking
//!
//! Under [`Fine`](crate::cc::Fine) a call first peeks (under the reader
//! lock, which keeps every object alive) at the endpoint to learn which
//! threads it will touch, then locks those TCBs and the endpoint in address
//! order, and checks that what it peeked is still so; if not, it unlocks and
//! starts over (§3.3). A core's ready queue has its own lock, always taken
//! last. Under the other variants the locking and re-checking compile away.
//!
//! # Scheduling
//!
//! Scheduling is partitioned: each thread belongs to one core, and each core
//! has its own ready queue and current thread. A call that wakes a thread of
//! the same core and blocks the caller switches to it directly (the IPC fast
//! path); a thread woken on another core goes on that core's ready queue and
//! the core gets an emulated interrupt. An idle core polls for that a
//! while, then halts until rung ([`crate::idle`], "Halting").

use crate::cc::Concurrency;
use crate::idle::{Doorbell, IdleClock, IdleMarks};
use crate::irq::IrqSpec;
use crate::objects::{
    rights, Cap, CoreState, Endpoint, EpState, Notification, ObjKind, Tcb, ThreadState, MSG_WORDS,
    NIL, REG_WORDS,
};
use crate::stats::{CoreStats, Published};
use crate::syscall::{Error, Syscall, REG_BADGE, REG_ERROR, REG_MSG};
use crate::user::{Program, Regs};
use crossbeam_utils::CachePadded;
use locklab::sys::{spin_ticks, ticks};
use locklab::{RawTicket, Ticket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How the kernel runs, beside its concurrency control.
#[derive(Debug, Clone, Copy, Default)]
pub struct Config {
    /// Busy ticks of context-switch hardware work (page-table and segment
    /// loads) whenever a core's current thread changes.
    pub switch_ticks: u64,
    /// Do that work inside the kernel's critical section instead of after
    /// it, to show what moving it out saved (seed 002 §3.2).
    pub switch_inside: bool,
    /// Time every kernel critical section (two time-stamp reads per call).
    pub measure_hold: bool,
}

/// One thread of a [`System`].
#[derive(Debug, Clone)]
pub struct ThreadSpec {
    /// Its core.
    pub core: u32,
    /// Its capabilities, by index.
    pub caps: Vec<Cap>,
    /// What it runs.
    pub program: Program,
}

/// A system to boot: cores, objects and threads.
#[derive(Debug, Clone)]
pub struct System {
    /// Emulated cores.
    pub cores: u32,
    /// Endpoints.
    pub endpoints: u32,
    /// Notifications.
    pub notifications: u32,
    /// Threads; each core starts the first of its threads.
    pub threads: Vec<ThreadSpec>,
    /// Interrupt lines, each wired to a core and bound to a notification
    /// (see [`crate::irq`]); capabilities of kind `Irq` index them.
    pub irqs: Vec<IrqSpec>,
}

/// Kernel objects on different cores' threads in a kernel that cannot share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootError(pub String);

impl std::fmt::Display for BootError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BootError {}

/// The emulated kernel with concurrency control `C`.
///
/// Only the system-call path is generic over `C` (its entry and exit are
/// the variant's, inlined). Booting, starting and stopping the cores and
/// the checkers work on the objects alone (`Objects`), so that they are
/// compiled once rather than once per variant (a lab builds over a
/// hundred variants).
pub struct Kernel<C> {
    pub(crate) cc: C,
    pub(crate) o: Objects,
}

/// Everything of a [`Kernel`] but its concurrency control: the objects,
/// the cores' state and the clocks.
pub(crate) struct Objects {
    pub(crate) tcbs: Box<[CachePadded<Tcb>]>,
    pub(crate) eps: Box<[CachePadded<Endpoint>]>,
    pub(crate) ntfns: Box<[CachePadded<Notification>]>,
    pub(crate) cores: Box<[CachePadded<CoreState>]>,
    published: Box<[Published]>,
    cfg: Config,
    /// Each core's idle loop time ([`crate::idle`]).
    pub(crate) idle: Box<[IdleClock]>,
    /// Each core's doorbell, rung to wake it from a halt.
    bells: Box<[Arc<Doorbell>]>,
    /// Interrupt lines, and by core the lines it takes.
    pub(crate) irqs: Box<[IrqSpec]>,
    core_irqs: Box<[Box<[u32]>]>,
    /// When the kernel booted, ticks (the checker bounds idle time by it).
    pub(crate) booted: u64,
}

/// Locks a fine-grained call holds, released in reverse order on drop.
struct Held<'a> {
    locks: [Option<(&'a RawTicket, Ticket)>; 4],
}

impl Drop for Held<'_> {
    #[inline]
    fn drop(&mut self) {
        for (l, t) in self.locks.iter().rev().flatten() {
            // SAFETY: each entry was acquired by `lock_objs` with this ticket.
            unsafe { l.release(*t) }
        }
    }
}

/// Cores to interrupt after leaving the kernel.
struct Kicks {
    few: [u32; 4],
    n: usize,
    more: Vec<u32>,
}

impl Kicks {
    fn new() -> Self {
        Kicks {
            few: [NIL; 4],
            n: 0,
            more: Vec::new(),
        }
    }

    #[inline]
    fn add(&mut self, core: u32) {
        if self.few[..self.n].contains(&core) || self.more.contains(&core) {
            return;
        }
        if self.n < self.few.len() {
            self.few[self.n] = core;
            self.n += 1;
        } else {
            self.more.push(core);
        }
    }

    #[inline]
    fn send(&self, cores: &[CachePadded<CoreState>], bells: &[Arc<Doorbell>]) {
        for &c in self.few[..self.n].iter().chain(&self.more) {
            // `Release` is not needed for the queue (the idle core takes the
            // kernel's lock before it looks), but it keeps the interrupt from
            // overtaking the kernel exit that made it due.
            cores[c as usize].kick.store(true, Ordering::Release);
            bells[c as usize].ring();
        }
    }
}

/// What a run left behind: each core's counters and each thread's program
/// (with its own tallies), by thread index.
#[derive(Debug)]
pub struct RunResult {
    /// Per core.
    pub cores: Vec<CoreStats>,
    /// Per thread.
    pub programs: Vec<Program>,
}

/// Cores did not stop: the kernel hung (a deadlock left a core spinning
/// inside the kernel) or a core's thread died (a corrupted object made it
/// index out of bounds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hang {
    /// The cores that did not stop.
    pub cores: Vec<u32>,
    /// Whether they died rather than hung.
    pub died: bool,
}

impl std::fmt::Display for Hang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.died {
            "died (a panic inside the kernel)"
        } else {
            "did not stop (a hang inside the kernel)"
        };
        write!(f, "emulated cores {:?} {what}", self.cores)
    }
}

/// What the caller of [`Kernel::run`] sees while the cores run.
pub struct Monitor<'a> {
    published: &'a [Published],
    idle: &'a [IdleClock],
}

impl Monitor<'_> {
    /// The counters the cores published last (each at most a few dozen
    /// system calls old), summed.
    pub fn total(&self) -> CoreStats {
        self.per_core()
            .into_iter()
            .fold(CoreStats::default(), CoreStats::plus)
    }

    /// The counters each core published last.
    pub fn per_core(&self) -> Vec<CoreStats> {
        self.published.iter().map(Published::load).collect()
    }

    /// Each core's idle clock read now: `(ticks now, ticks idled so far)`
    /// (see [`IdleClock::sample`]).
    pub fn idle(&self) -> Vec<(u64, u64)> {
        self.idle.iter().map(IdleClock::sample).collect()
    }
}

impl<C> Kernel<C> {
    /// Halts, over every core so far, that ended by their timeout with work
    /// waiting: wake-ups whose waker did not ring the doorbell (a kernel bug;
    /// its tests want none).
    pub fn late_rings(&self) -> u64 {
        self.o.bells.iter().map(|b| b.late()).sum()
    }
}

/// The emulated timer's period, in system calls on the core: when it fires
/// and threads are ready, the running thread yields the core to them.
/// Without it, threads that keep each other busy (a ping-pong pair, or one
/// whose partner always answers first) would starve their core's other
/// threads, as in a kernel without timer interrupts. Ping-pong benchmarks
/// keep their ready queues empty, so the timer costs them one compare.
const TIMESLICE: u32 = 64;

/// Polls of an idle core before it halts.
const IDLE_SPINS: u32 = 1 << 12;

/// The longest halt: a waker that forgot to ring costs this, never a hang.
const HALT_MAX: Duration = Duration::from_millis(20);

/// How often a core publishes its counters, in system calls.
const PUBLISH_EVERY: u32 = 32;

/// A core's loop over its threads' programs until `stop`, as [`Kernel::run`]
/// hands it to the core's thread.
type CoreLoop = Arc<dyn Fn(u32, &mut [(u32, Program)], &AtomicBool) -> CoreStats + Send + Sync>;

impl Objects {
    /// Builds the objects of `sys`; every thread starts ready on its core.
    /// Unless `sharing`, objects used by threads of two cores are refused
    /// (`name` names the variant in the error).
    fn build(
        sys: &System,
        cfg: Config,
        sharing: bool,
        name: &dyn Fn() -> String,
    ) -> Result<Self, BootError> {
        if sys.cores == 0 {
            return Err(BootError("a kernel needs at least one core".into()));
        }
        let mut slots = vec![0u32; sys.cores as usize];
        let mut tcbs = Vec::with_capacity(sys.threads.len());
        // Which core first used each object, to refuse sharing where the
        // variant cannot have it.
        let mut ep_core = vec![NIL; sys.endpoints as usize];
        let mut nt_core = vec![NIL; sys.notifications as usize];
        let mut irq_core = vec![NIL; sys.irqs.len()];
        let mut core_irqs = vec![Vec::new(); sys.cores as usize];
        for (i, q) in sys.irqs.iter().enumerate() {
            if q.core >= sys.cores || q.ntfn >= sys.notifications {
                return Err(BootError(format!(
                    "interrupt line {i} is wired to core {} and notification {}, but the kernel \
                     has {} cores and {} notifications",
                    q.core, q.ntfn, sys.cores, sys.notifications
                )));
            }
            // The line's core signals the notification: it uses it.
            nt_core[q.ntfn as usize] = q.core;
            irq_core[i] = q.core;
            core_irqs[q.core as usize].push(i as u32);
        }
        for (i, t) in sys.threads.iter().enumerate() {
            if t.core >= sys.cores {
                return Err(BootError(format!(
                    "thread {i} is on core {} but the kernel has {} cores",
                    t.core, sys.cores
                )));
            }
            for cap in &t.caps {
                let (n, owner) = match cap.kind {
                    ObjKind::Endpoint => (sys.endpoints, &mut ep_core),
                    ObjKind::Notification => (sys.notifications, &mut nt_core),
                    ObjKind::Irq => (sys.irqs.len() as u32, &mut irq_core),
                };
                if cap.obj >= n {
                    return Err(BootError(format!(
                        "thread {i} has a capability to {:?} {} of {n}",
                        cap.kind, cap.obj
                    )));
                }
                let o = &mut owner[cap.obj as usize];
                if *o == NIL {
                    *o = t.core;
                } else if *o != t.core && !sharing {
                    return Err(BootError(format!(
                        "{}: {:?} {} is used by threads on cores {} and {}; this variant has no \
                         synchronization and is only correct when cores touch disjoint objects",
                        name(),
                        cap.kind,
                        cap.obj,
                        *o,
                        t.core
                    )));
                }
            }
            let slot = &mut slots[t.core as usize];
            tcbs.push(CachePadded::new(Tcb::new(t.core, *slot, t.caps.clone())));
            *slot += 1;
        }
        let k = Objects {
            tcbs: tcbs.into_boxed_slice(),
            eps: (0..sys.endpoints)
                .map(|_| CachePadded::new(Endpoint::new()))
                .collect(),
            ntfns: (0..sys.notifications)
                .map(|_| CachePadded::new(Notification::new()))
                .collect(),
            cores: (0..sys.cores)
                .map(|_| CachePadded::new(CoreState::new()))
                .collect(),
            published: (0..sys.cores).map(|_| Published::default()).collect(),
            cfg,
            idle: (0..sys.cores).map(|_| IdleClock::default()).collect(),
            bells: (0..sys.cores).map(|_| Arc::default()).collect(),
            irqs: sys.irqs.clone().into_boxed_slice(),
            core_irqs: core_irqs.into_iter().map(Vec::into_boxed_slice).collect(),
            booted: ticks(),
        };
        for (i, q) in k.irqs.iter().enumerate() {
            if !q.line.wire(&k.bells[q.core as usize]) {
                return Err(BootError(format!(
                    "interrupt line {i} is already wired to another kernel; build a fresh system \
                     for every kernel"
                )));
            }
        }
        for (i, t) in k.tcbs.iter().enumerate() {
            t.set_state(ThreadState::Ready);
            k.cores[t.core as usize].rq_push(&k.tcbs, i as u32);
        }
        Ok(k)
    }

    /// [`Kernel::run`] but for calling each core's loop: starts the cores'
    /// threads, runs `drive`, stops the cores and collects what they did.
    fn run_cores(
        &self,
        programs: Vec<Program>,
        on_core_start: Arc<dyn Fn(u32) + Send + Sync>,
        grace: Duration,
        core_loop: CoreLoop,
        drive: &mut dyn FnMut(&Monitor),
    ) -> Result<RunResult, Hang> {
        assert_eq!(programs.len(), self.tcbs.len(), "one program per thread");
        let mut per_core: Vec<Vec<(u32, Program)>> =
            (0..self.cores.len()).map(|_| Vec::new()).collect();
        for (i, p) in programs.into_iter().enumerate() {
            per_core[self.tcbs[i].core as usize].push((i as u32, p));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        for (core, progs) in per_core.into_iter().enumerate() {
            let (k, stop, tx, start) = (
                Arc::clone(&core_loop),
                Arc::clone(&stop),
                tx.clone(),
                Arc::clone(&on_core_start),
            );
            std::thread::Builder::new()
                .name(format!("core{core}"))
                .spawn(move || {
                    start(core as u32);
                    let mut progs = progs;
                    let st = k(core as u32, &mut progs, &stop);
                    let _ = tx.send((core as u32, st, progs));
                })
                .expect("spawn an emulated core");
        }
        drop(tx);
        drive(&Monitor {
            published: &self.published,
            idle: &self.idle,
        });
        stop.store(true, Ordering::Relaxed);
        for b in self.bells.iter() {
            b.ring();
        }
        let deadline = std::time::Instant::now() + grace;
        let n = self.cores.len();
        let mut cores = vec![CoreStats::default(); n];
        let mut done = vec![false; n];
        let mut slots: Vec<Option<Program>> = (0..self.tcbs.len()).map(|_| None).collect();
        while done.iter().any(|d| !d) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok((c, st, progs)) => {
                    cores[c as usize] = st;
                    done[c as usize] = true;
                    for (t, p) in progs {
                        slots[t as usize] = Some(p);
                    }
                }
                Err(e) => {
                    return Err(Hang {
                        cores: (0..n as u32).filter(|&c| !done[c as usize]).collect(),
                        died: e == mpsc::RecvTimeoutError::Disconnected,
                    })
                }
            }
        }
        let programs = slots
            .into_iter()
            .map(|p| p.expect("every core returned its programs"))
            .collect();
        Ok(RunResult { cores, programs })
    }
}

impl<C: Concurrency> Kernel<C> {
    /// Builds the objects of `sys` under concurrency control `cc`. Every
    /// thread starts ready on its core.
    pub fn boot(cc: C, sys: &System, cfg: Config) -> Result<Self, BootError> {
        let o = Objects::build(sys, cfg, C::SHARING, &|| cc.name())?;
        Ok(Kernel { cc, o })
    }

    /// The concurrency control's name.
    pub fn variant(&self) -> String {
        self.cc.name()
    }

    /// Number of emulated cores.
    pub fn n_cores(&self) -> u32 {
        self.o.cores.len() as u32
    }

    /// Runs every core on its own thread with the threads' `programs` (one
    /// per thread of the system, in order) until `drive` returns, then stops
    /// the cores at their next user-mode step and collects what they did.
    /// `on_core_start` runs first on each core's thread (to pin it).
    ///
    /// A core that does not stop within `grace` is a [`Hang`]; its thread is
    /// left behind.
    pub fn run<R>(
        self: &Arc<Self>,
        programs: Vec<Program>,
        on_core_start: Arc<dyn Fn(u32) + Send + Sync>,
        grace: Duration,
        drive: impl FnOnce(&Monitor) -> R,
    ) -> Result<(R, RunResult), Hang> {
        let k = Arc::clone(self);
        // Each core's thread calls this once and loops inside it: the one
        // dynamic call per core and run, outside the system-call path.
        let core_loop: CoreLoop = Arc::new(move |core, progs, stop| k.core_loop(core, progs, stop));
        let (mut drive, mut r) = (Some(drive), None);
        let run = self
            .o
            .run_cores(programs, on_core_start, grace, core_loop, &mut |m| {
                r = drive.take().map(|d| d(m))
            })?;
        Ok((r.expect("the cores ran the driver"), run))
    }

    fn core_loop(&self, core: u32, progs: &mut [(u32, Program)], stop: &AtomicBool) -> CoreStats {
        let cs = &self.o.cores[core as usize];
        let slot = &self.o.published[core as usize];
        let mut st = CoreStats::default();
        let mut regs: Regs = [0; REG_WORDS];
        let mut cur = NIL;
        let mut n = 0u32;
        // System calls since the emulated timer last fired.
        let mut since_tick = 0u32;
        let mut idle_spins = 0u32;
        let (clock, mut marks) = (&self.o.idle[core as usize], IdleMarks::default());
        let lines = &self.o.core_irqs[core as usize];
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if self.irq_pending(lines) {
                // A device interrupt: taken at the boundary between user
                // steps (or in the idle loop), in a kernel entry of its own.
                marks.leave(clock, ticks);
                self.interrupt(core, lines, &mut st);
            }
            if cur == NIL {
                // Idle: wait for an interrupt or a ready thread (a racy peek;
                // the kernel's lock decides). Time here is idle time.
                marks.enter(clock, ticks);
                let work = || {
                    stop.load(Ordering::Relaxed)
                        || cs.kick.load(Ordering::Acquire)
                        || cs.rq_head.get() != NIL
                        || self.irq_pending(lines)
                };
                if !work() {
                    // A real idle core halts; an emulated one polls a while
                    // (an interrupt soon after costs no host wake-up), then
                    // halts until rung.
                    idle_spins += 1;
                    if idle_spins < IDLE_SPINS {
                        std::hint::spin_loop();
                    } else {
                        self.o.bells[core as usize].halt(work, HALT_MAX);
                    }
                    continue;
                }
                idle_spins = 0;
                marks.leave(clock, ticks);
                cs.kick.store(false, Ordering::Relaxed);
                cur = self.schedule_idle(core, &mut st);
                if cur != NIL {
                    self.restore(cur, &mut regs);
                }
                continue;
            }
            if since_tick >= TIMESLICE && cs.rq_head.get() != NIL {
                // The timer: the running thread goes to the back of the
                // queue and the first ready thread runs.
                since_tick = 0;
                cur = self.preempt(core, cur, &mut st);
                self.restore(cur, &mut regs);
                continue;
            }
            let tcb = &self.o.tcbs[cur as usize];
            let sc = progs[tcb.slot as usize].1.step(&mut regs);
            // Kernel entry: save the user state, outside any lock.
            for (r, v) in tcb.regs.iter().zip(&regs) {
                r.set(*v);
            }
            let next = self.syscall(core, cur, sc, &mut st);
            // Kernel exit: restore the (new) current thread's state.
            if next != NIL {
                self.restore(next, &mut regs);
            }
            since_tick += 1;
            cur = next;
            n = n.wrapping_add(1);
            if n % PUBLISH_EVERY == 0 {
                slot.store(&st);
            }
        }
        marks.leave(clock, ticks);
        slot.store(&st);
        st
    }

    /// Whether one of `lines` has an interrupt pending (a racy peek).
    #[inline]
    fn irq_pending(&self, lines: &[u32]) -> bool {
        lines
            .iter()
            .any(|&l| self.o.irqs[l as usize].line.state() == crate::irq::PENDING)
    }

    /// Takes the pending interrupts of `lines` in one kernel entry: each
    /// masks its line and signals its notification.
    fn interrupt(&self, core: u32, lines: &[u32], st: &mut CoreStats) {
        let mut kicks = Kicks::new();
        let e = self.cc.enter(st);
        for &l in lines {
            let q = &self.o.irqs[l as usize];
            if q.line.take() {
                self.signal(core, NIL, q.ntfn, q.badge.max(1), &mut kicks);
            }
        }
        self.cc.exit(e);
        kicks.send(&self.o.cores, &self.o.bells);
    }

    #[inline]
    fn restore(&self, t: u32, regs: &mut Regs) {
        for (v, r) in regs.iter_mut().zip(&self.o.tcbs[t as usize].regs) {
            *v = r.get();
        }
    }

    /// The timer preempts `me`: it goes to the back of its core's ready
    /// queue and the first ready thread runs.
    fn preempt(&self, core: u32, me: u32, st: &mut CoreStats) -> u32 {
        st.preemptions += 1;
        let mut kicks = Kicks::new();
        let e = self.cc.enter(st);
        let t = &self.o.tcbs[me as usize];
        let next = {
            let _held = self.lock_objs([Some(&t.lock), None, None, None]);
            self.make_ready(core, me, &mut kicks);
            self.pick_next(core)
        };
        self.cc.exit(e);
        st.switches += 1;
        spin_ticks(self.o.cfg.switch_ticks);
        next
    }

    /// The idle core schedules its first ready thread.
    fn schedule_idle(&self, core: u32, st: &mut CoreStats) -> u32 {
        st.idle_entries += 1;
        let e = self.cc.enter(st);
        let next = self.pick_next(core);
        if next != NIL && self.o.cfg.switch_inside {
            spin_ticks(self.o.cfg.switch_ticks);
        }
        self.cc.exit(e);
        if next != NIL {
            st.switches += 1;
            if !self.o.cfg.switch_inside {
                spin_ticks(self.o.cfg.switch_ticks);
            }
        }
        next
    }

    /// One system call by thread `me` on `core`; returns the core's current
    /// thread afterwards ([`NIL`] if it idles).
    #[inline]
    fn syscall(&self, core: u32, me: u32, sc: Syscall, st: &mut CoreStats) -> u32 {
        st.syscalls += 1;
        let mut kicks = Kicks::new();
        if let Syscall::Delete(cap) = sc {
            let w = self.cc.enter_writer(st);
            let next = self.delete(core, me, cap, st, &mut kicks);
            self.cc.exit_writer(w);
            kicks.send(&self.o.cores, &self.o.bells);
            return next;
        }
        let e = self.cc.enter(st);
        let t0 = if self.o.cfg.measure_hold { ticks() } else { 0 };
        let next = self.execute(core, me, sc, st, &mut kicks);
        let switched = next != me;
        if switched && self.o.cfg.switch_inside {
            spin_ticks(self.o.cfg.switch_ticks);
        }
        if self.o.cfg.measure_hold {
            st.hold_ticks += ticks().wrapping_sub(t0);
            st.holds += 1;
        }
        self.cc.exit(e);
        if switched {
            st.switches += 1;
            if !self.o.cfg.switch_inside {
                spin_ticks(self.o.cfg.switch_ticks);
            }
        }
        kicks.send(&self.o.cores, &self.o.bells);
        next
    }

    /// Phase one: the object a capability names, if the thread may do
    /// `right` with it.
    #[inline]
    fn decode(&self, me: u32, idx: u8, kind: ObjKind, right: u8) -> Result<&Cap, Error> {
        let cap = self.o.tcbs[me as usize]
            .caps
            .get(idx as usize)
            .ok_or(Error::InvalidCap)?;
        if cap.kind != kind {
            return Err(Error::WrongKind);
        }
        if cap.rights & right == 0 {
            return Err(Error::NoRights);
        }
        let deleted = match kind {
            ObjKind::Endpoint => self.o.eps[cap.obj as usize].deleted.get(),
            ObjKind::Notification => self.o.ntfns[cap.obj as usize].deleted.get(),
            ObjKind::Irq => 0,
        };
        if deleted != 0 {
            return Err(Error::Deleted);
        }
        Ok(cap)
    }

    #[inline]
    fn execute(
        &self,
        core: u32,
        me: u32,
        sc: Syscall,
        st: &mut CoreStats,
        kicks: &mut Kicks,
    ) -> u32 {
        let t = &self.o.tcbs[me as usize];
        t.regs[REG_ERROR].set(0);
        let checked = match sc {
            Syscall::Call(c) => self
                .decode(me, c, ObjKind::Endpoint, rights::SEND)
                .map(|cap| self.send_or_call(core, me, cap.obj, cap.badge, true, st, kicks)),
            Syscall::ReplyRecv(c) => match self.decode(me, c, ObjKind::Endpoint, rights::RECV) {
                Ok(cap) => Ok(self.reply_recv(core, me, cap.obj, st, kicks)),
                // The reply goes through the reply capability, not the
                // endpoint: it is delivered even when the receive fails.
                Err(e) => {
                    self.reply_only(core, me, st, kicks);
                    Err(e)
                }
            },
            Syscall::Send(c) => self
                .decode(me, c, ObjKind::Endpoint, rights::SEND)
                .map(|cap| self.send_or_call(core, me, cap.obj, cap.badge, false, st, kicks)),
            Syscall::Recv(c) => self
                .decode(me, c, ObjKind::Endpoint, rights::RECV)
                .map(|cap| self.recv(core, me, cap.obj, st, kicks)),
            Syscall::Signal(c) => self
                .decode(me, c, ObjKind::Notification, rights::SEND)
                .map(|cap| self.signal(core, me, cap.obj, cap.badge.max(1), kicks)),
            Syscall::Wait(c) => self
                .decode(me, c, ObjKind::Notification, rights::RECV)
                .map(|cap| self.wait(core, me, cap.obj)),
            Syscall::IrqAck(c) => self.decode(me, c, ObjKind::Irq, rights::SEND).map(|cap| {
                // The line's state is its own atomic (see `irq`): acking a
                // line that is not masked changes nothing.
                self.o.irqs[cap.obj as usize].line.ack();
                me
            }),
            Syscall::Exit => Ok(self.exit(core, me, kicks)),
            Syscall::Delete(_) => unreachable!("deletion takes the writer side"),
        };
        checked.unwrap_or_else(|e| {
            st.errors += 1;
            t.regs[REG_ERROR].set(e as u64);
            me
        })
    }

    /// Locks (fine-grained variant only) the given object locks in address
    /// order, each once.
    #[inline(always)]
    fn lock_objs<'a>(&self, mut ls: [Option<&'a RawTicket>; 4]) -> Held<'a> {
        let mut h = Held { locks: [None; 4] };
        if !C::FINE {
            return h;
        }
        ls.sort_unstable_by_key(|l| l.map_or(usize::MAX, |l| l as *const RawTicket as usize));
        let mut prev = 0usize;
        for (slot, l) in h.locks.iter_mut().zip(ls) {
            if let Some(l) = l {
                let a = l as *const RawTicket as usize;
                if a != prev {
                    prev = a;
                    *slot = Some((l, l.acquire()));
                }
            }
        }
        h
    }

    #[inline(always)]
    fn tcb_lock(&self, t: u32) -> Option<&RawTicket> {
        (t != NIL).then(|| &self.o.tcbs[t as usize].lock)
    }

    /// The first thread queued on `ep` if it queues threads in `state`.
    #[inline(always)]
    fn head_if(&self, ep: &Endpoint, state: EpState) -> u32 {
        if ep.state() == state {
            ep.queue.head.get()
        } else {
            NIL
        }
    }

    /// Copies the message registers of `from` to `to`.
    #[inline]
    fn transfer(&self, from: u32, to: u32, badge: u64, st: &mut CoreStats) {
        let (f, t) = (&self.o.tcbs[from as usize], &self.o.tcbs[to as usize]);
        for i in 0..MSG_WORDS {
            t.regs[REG_MSG + i].set(f.regs[REG_MSG + i].get());
        }
        t.regs[REG_BADGE].set(badge);
        t.regs[REG_ERROR].set(0);
        f.sent.bump();
        t.received.bump();
        st.transfers += 1;
    }

    /// Makes `t` ready on its core's queue (interrupting that core if it is
    /// not this one).
    #[inline]
    fn make_ready(&self, core: u32, t: u32, kicks: &mut Kicks) {
        let tcb = &self.o.tcbs[t as usize];
        tcb.set_state(ThreadState::Ready);
        let cs = &self.o.cores[tcb.core as usize];
        let _g = self.lock_objs([Some(&cs.lock), None, None, None]);
        cs.rq_push(&self.o.tcbs, t);
        if tcb.core != core {
            kicks.add(tcb.core);
        }
    }

    /// The caller blocked: the core runs its next ready thread, or idles.
    #[inline]
    fn pick_next(&self, core: u32) -> u32 {
        let cs = &self.o.cores[core as usize];
        let _g = self.lock_objs([Some(&cs.lock), None, None, None]);
        let n = cs.rq_pop(&self.o.tcbs).unwrap_or(NIL);
        if n != NIL {
            self.o.tcbs[n as usize].set_state(ThreadState::Running);
        }
        cs.current.set(n);
        n
    }

    /// The caller blocked and woke `t`: switch to it directly if it is
    /// this core's, else make it ready there and run the next ready thread.
    #[inline]
    fn wake_switch(&self, core: u32, t: u32, kicks: &mut Kicks) -> u32 {
        let tcb = &self.o.tcbs[t as usize];
        if tcb.core == core {
            tcb.set_state(ThreadState::Running);
            self.o.cores[core as usize].current.set(t);
            t
        } else {
            self.make_ready(core, t, kicks);
            self.pick_next(core)
        }
    }

    #[inline]
    fn block_on_ep(&self, me: u32, ep_i: u32, ts: ThreadState, es: EpState) {
        let (t, ep) = (&self.o.tcbs[me as usize], &self.o.eps[ep_i as usize]);
        t.set_state(ts);
        t.blocked_on.set(ep_i);
        ep.queue.push(&self.o.tcbs, me);
        ep.state.set(es as u32);
    }

    /// Takes `sender`'s message off endpoint `ep_i` into `me`.
    #[inline]
    fn take_from(
        &self,
        core: u32,
        me: u32,
        sender: u32,
        ep_i: u32,
        st: &mut CoreStats,
        kicks: &mut Kicks,
    ) {
        let (ep, s) = (&self.o.eps[ep_i as usize], &self.o.tcbs[sender as usize]);
        ep.queue.remove(&self.o.tcbs, sender);
        if ep.queue.is_empty() {
            ep.state.set(EpState::Idle as u32);
        }
        s.blocked_on.set(NIL);
        self.transfer(sender, me, s.send_badge.get(), st);
        ep.transfers.bump();
        if s.is_call.get() != 0 {
            s.is_call.set(0);
            s.set_state(ThreadState::BlockedOnReply);
            self.o.tcbs[me as usize].reply_to.set(sender);
        } else {
            self.make_ready(core, sender, kicks);
        }
    }

    /// Takes `receiver` off endpoint `ep_i` and gives it `me`'s message.
    #[inline]
    fn give_to(&self, me: u32, receiver: u32, ep_i: u32, badge: u64, st: &mut CoreStats) {
        let ep = &self.o.eps[ep_i as usize];
        ep.queue.remove(&self.o.tcbs, receiver);
        if ep.queue.is_empty() {
            ep.state.set(EpState::Idle as u32);
        }
        self.o.tcbs[receiver as usize].blocked_on.set(NIL);
        self.transfer(me, receiver, badge, st);
        ep.transfers.bump();
    }

    /// `send`, or with `call` set, `call`: hands the message to the first
    /// waiting receiver (the caller then waits for its reply, the receiver
    /// owing it), or queues the sender on the endpoint.
    #[allow(clippy::too_many_arguments)]
    fn send_or_call(
        &self,
        core: u32,
        me: u32,
        ep_i: u32,
        badge: u64,
        call: bool,
        st: &mut CoreStats,
        kicks: &mut Kicks,
    ) -> u32 {
        let (t, ep) = (&self.o.tcbs[me as usize], &self.o.eps[ep_i as usize]);
        loop {
            let recv = self.head_if(ep, EpState::Recv);
            let _held = self.lock_objs([Some(&t.lock), self.tcb_lock(recv), Some(&ep.lock), None]);
            if C::FINE && self.head_if(ep, EpState::Recv) != recv {
                continue;
            }
            if recv == NIL {
                t.is_call.set(u32::from(call));
                t.send_badge.set(badge);
                self.block_on_ep(me, ep_i, ThreadState::BlockedOnSend, EpState::Send);
                return self.pick_next(core);
            }
            self.give_to(me, recv, ep_i, badge, st);
            if !call {
                self.make_ready(core, recv, kicks);
                return me;
            }
            self.o.tcbs[recv as usize].reply_to.set(me);
            t.set_state(ThreadState::BlockedOnReply);
            return self.wake_switch(core, recv, kicks);
        }
    }

    fn recv(&self, core: u32, me: u32, ep_i: u32, st: &mut CoreStats, kicks: &mut Kicks) -> u32 {
        self.reply_recv_from(core, me, NIL, ep_i, st, kicks)
    }

    fn reply_recv(
        &self,
        core: u32,
        me: u32,
        ep_i: u32,
        st: &mut CoreStats,
        kicks: &mut Kicks,
    ) -> u32 {
        // Only this thread writes its own `reply_to` (it is running), so
        // the peek needs no re-check.
        let caller = self.o.tcbs[me as usize].reply_to.get();
        self.reply_recv_from(core, me, caller, ep_i, st, kicks)
    }

    /// Replies to `caller` (if not [`NIL`]) and receives on `ep_i`.
    fn reply_recv_from(
        &self,
        core: u32,
        me: u32,
        caller: u32,
        ep_i: u32,
        st: &mut CoreStats,
        kicks: &mut Kicks,
    ) -> u32 {
        let (t, ep) = (&self.o.tcbs[me as usize], &self.o.eps[ep_i as usize]);
        loop {
            let sender = self.head_if(ep, EpState::Send);
            let _held = self.lock_objs([
                Some(&t.lock),
                self.tcb_lock(caller),
                self.tcb_lock(sender),
                Some(&ep.lock),
            ]);
            if C::FINE && self.head_if(ep, EpState::Send) != sender {
                continue;
            }
            if caller != NIL {
                // Replies carry no badge.
                self.transfer(me, caller, 0, st);
                t.reply_to.set(NIL);
            }
            if sender != NIL {
                self.take_from(core, me, sender, ep_i, st, kicks);
                if caller != NIL {
                    self.make_ready(core, caller, kicks);
                }
                return me;
            }
            self.block_on_ep(me, ep_i, ThreadState::BlockedOnRecv, EpState::Recv);
            return if caller != NIL {
                self.wake_switch(core, caller, kicks)
            } else {
                self.pick_next(core)
            };
        }
    }

    /// Delivers the reply `me` owes, if any, and lets `me` go on.
    fn reply_only(&self, core: u32, me: u32, st: &mut CoreStats, kicks: &mut Kicks) {
        let t = &self.o.tcbs[me as usize];
        let caller = t.reply_to.get();
        if caller == NIL {
            return;
        }
        let _held = self.lock_objs([Some(&t.lock), self.tcb_lock(caller), None, None]);
        self.transfer(me, caller, 0, st);
        t.reply_to.set(NIL);
        self.make_ready(core, caller, kicks);
    }

    fn signal(&self, core: u32, me: u32, n_i: u32, badge: u64, kicks: &mut Kicks) -> u32 {
        let n = &self.o.ntfns[n_i as usize];
        loop {
            let waiter = n.queue.head.get();
            let _held = self.lock_objs([self.tcb_lock(waiter), Some(&n.lock), None, None]);
            if C::FINE && n.queue.head.get() != waiter {
                continue;
            }
            n.signals.bump();
            if waiter == NIL {
                n.word.set(n.word.get() | badge);
            } else {
                n.queue.remove(&self.o.tcbs, waiter);
                let w = &self.o.tcbs[waiter as usize];
                w.blocked_on.set(NIL);
                w.regs[REG_BADGE].set(badge);
                w.regs[REG_ERROR].set(0);
                self.make_ready(core, waiter, kicks);
            }
            return me;
        }
    }

    fn wait(&self, core: u32, me: u32, n_i: u32) -> u32 {
        let (t, n) = (&self.o.tcbs[me as usize], &self.o.ntfns[n_i as usize]);
        let _held = self.lock_objs([Some(&t.lock), Some(&n.lock), None, None]);
        let w = n.word.get();
        if w != 0 {
            n.word.set(0);
            t.regs[REG_BADGE].set(w);
            return me;
        }
        t.set_state(ThreadState::BlockedOnNotification);
        t.blocked_on.set(n_i);
        n.queue.push(&self.o.tcbs, me);
        self.pick_next(core)
    }

    /// Ends `me`. A reply it still owes can never come: the caller wakes
    /// with [`Error::Deleted`], as when seL4 destroys a reply capability.
    fn exit(&self, core: u32, me: u32, kicks: &mut Kicks) -> u32 {
        let t = &self.o.tcbs[me as usize];
        let caller = t.reply_to.get();
        let _held = self.lock_objs([Some(&t.lock), self.tcb_lock(caller), None, None]);
        if caller != NIL {
            t.reply_to.set(NIL);
            self.o.tcbs[caller as usize].regs[REG_ERROR].set(Error::Deleted as u64);
            self.make_ready(core, caller, kicks);
        }
        t.set_state(ThreadState::Inactive);
        self.pick_next(core)
    }

    /// Deletes an object under the writer side: every thread queued on it
    /// wakes with [`Error::Deleted`].
    fn delete(&self, core: u32, me: u32, idx: u8, st: &mut CoreStats, kicks: &mut Kicks) -> u32 {
        let t = &self.o.tcbs[me as usize];
        t.regs[REG_ERROR].set(0);
        let cap = t
            .caps
            .get(idx as usize)
            .ok_or(Error::InvalidCap)
            .and_then(|c| self.decode(me, idx, c.kind, rights::DELETE));
        let cap = match cap {
            Ok(c) => *c,
            Err(e) => {
                st.errors += 1;
                t.regs[REG_ERROR].set(e as u64);
                return me;
            }
        };
        if cap.kind == ObjKind::Irq {
            st.errors += 1;
            t.regs[REG_ERROR].set(Error::WrongKind as u64);
            return me;
        }
        let (queue, deleted) = match cap.kind {
            ObjKind::Endpoint => {
                let ep = &self.o.eps[cap.obj as usize];
                ep.state.set(EpState::Idle as u32);
                (&ep.queue, &ep.deleted)
            }
            ObjKind::Notification => {
                let n = &self.o.ntfns[cap.obj as usize];
                n.word.set(0);
                (&n.queue, &n.deleted)
            }
            ObjKind::Irq => unreachable!("refused above"),
        };
        deleted.set(1);
        while !queue.is_empty() {
            let w = queue.head.get();
            queue.remove(&self.o.tcbs, w);
            let wt = &self.o.tcbs[w as usize];
            wt.blocked_on.set(NIL);
            wt.is_call.set(0);
            wt.regs[REG_ERROR].set(Error::Deleted as u64);
            self.make_ready(core, w, kicks);
        }
        me
    }
}
