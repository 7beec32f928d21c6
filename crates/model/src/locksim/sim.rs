//! The event loop, the coherence of lines, and each algorithm's steps.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{Algorithm, Config, Costs, Outcome, SimError};
use crate::lhp::config::Dist;
use crate::lhp::rng::Rng;

/// "No thread" in a line's field (an empty MCS tail or `next`).
const NONE: u64 = u64::MAX;

/// The line of the lock word (TAS's flag, the ticket lock's `next` and
/// `owner`, MCS's tail).
const LOCK: usize = 0;

/// C-BO-MCS: the most consecutive passes of the global lock within a
/// socket (`numa/cohort.rs`, `COHORT_BOUND`).
const COHORT_BOUND: u64 = 100;

/// CNA: the most consecutive local hand-overs while skipped waiters wait
/// (`numa/cna.rs`, `CNA_BOUND`).
const CNA_BOUND: u64 = 1 << 16;

/// A waiting MCS node's grant (c-bo-mcs) or status (hmcs) word.
const WAIT: u64 = u64::MAX - 2;

/// HMCS: the most consecutive hand-overs within a leaf (`numa/hmcs.rs`,
/// `HMCS_BOUND`), and the `status` word's value besides `WAIT` and a
/// count.
const HMCS_BOUND: u64 = 63;
const H_PARENT: u64 = u64::MAX - 3;

/// qspin: the locked byte and the pending bit in the lock word's field 0.
const Q_LOCKED: u64 = 1;
const Q_PENDING: u64 = 2;

/// CNA: a grant without a secondary queue.
const GRANTED: u64 = u64::MAX - 1;

/// More events than this in one run is a bug (a spinner that never
/// waits), reported rather than looped on.
const MAX_EVENTS: u64 = 500_000_000;

/// A cache line: two fields of 64 bits, where it is, and who watches it.
struct Line {
    vals: [u64; 2],
    /// The core whose cache holds it modified, if one does.
    owner: Option<u32>,
    /// Cores holding a clean copy.
    sharers: Vec<bool>,
    /// The socket whose memory it lives in.
    home: u32,
    /// When its current transfer ends.
    busy_until: f64,
    /// Threads that read it, found it wanting, and wait for a write.
    watchers: Vec<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Rmw,
}

/// The lines and what moving them cost.
struct Memory {
    lines: Vec<Line>,
    costs: Costs,
    /// The socket of each core.
    socket: Vec<u32>,
    /// Transfer time inside the window, ns.
    transfer_ns: f64,
    /// CNA: fields of each thread's queue node beyond the two of its line
    /// (`count` and `sec_tail`; they live on that line, whose accesses
    /// are charged where they are read or written).
    cna_count: Vec<u64>,
    cna_sec_tail: Vec<u64>,
    /// The socket of each thread (the NUMA node a CNA waiter records).
    thread_socket: Vec<u32>,
    /// CLH: each thread's pool of free nodes (line indexes).
    clh_free: Vec<Vec<usize>>,
    window: (f64, f64),
}

impl Memory {
    /// An access by core `c` to `line`, issued at `now`: its end, and the
    /// watchers a write invalidated (to be woken at its end). The state
    /// changes now, in the line's order.
    fn access(&mut self, c: u32, line: usize, kind: Kind, now: f64) -> (f64, Vec<u32>) {
        let costs = self.costs;
        let my_socket = self.socket[c as usize];
        let socket = &self.socket;
        let l = &mut self.lines[line];
        let from_core = |o: u32| {
            if socket[o as usize] == my_socket {
                costs.same_socket
            } else {
                costs.other_socket
            }
        };
        let from_memory = if l.home == my_socket {
            costs.memory_local
        } else {
            costs.memory_remote
        };
        let others_share = l
            .sharers
            .iter()
            .enumerate()
            .any(|(i, &s)| s && i as u32 != c);
        let cycles = match kind {
            Kind::Read => {
                if l.owner == Some(c) || l.sharers[c as usize] {
                    None
                } else if let Some(o) = l.owner {
                    Some(from_core(o))
                } else if others_share {
                    // The nearest clean copy.
                    let near = l
                        .sharers
                        .iter()
                        .enumerate()
                        .any(|(i, &s)| s && socket[i] == my_socket);
                    Some(if near {
                        costs.same_socket
                    } else {
                        costs.other_socket
                    })
                } else {
                    Some(from_memory)
                }
            }
            Kind::Write | Kind::Rmw => {
                if l.owner == Some(c)
                    || (l.owner.is_none() && l.sharers[c as usize] && !others_share)
                {
                    None
                } else if let Some(o) = l.owner {
                    Some(from_core(o))
                } else if others_share {
                    // Invalidating every copy: as far as the farthest.
                    let far = l
                        .sharers
                        .iter()
                        .enumerate()
                        .any(|(i, &s)| s && socket[i] != my_socket);
                    Some(if far {
                        costs.other_socket
                    } else {
                        costs.same_socket
                    })
                } else {
                    Some(from_memory)
                }
            }
        };
        // Through the line's home, if it is elsewhere and the protocol
        // asks there.
        let cycles = cycles.map(|cy| {
            if costs.home_snoop && l.home != my_socket {
                cy.max(costs.other_socket)
            } else {
                cy
            }
        });
        let atomic = if kind == Kind::Rmw { costs.atomic } else { 0.0 };
        let done = match cycles {
            None => now + costs.ns(costs.hit + atomic),
            Some(cy) => {
                let start = now.max(l.busy_until);
                let d = costs.ns(cy + atomic);
                l.busy_until = start + d;
                // The part of the transfer inside the window.
                let (lo, hi) = self.window;
                self.transfer_ns += ((start + d).min(hi) - start.max(lo)).max(0.0);
                start + d
            }
        };
        let mut woken = Vec::new();
        match kind {
            Kind::Read => {
                if let Some(o) = l.owner.take() {
                    l.sharers[o as usize] = true;
                }
                l.sharers[c as usize] = true;
            }
            Kind::Write | Kind::Rmw => {
                l.sharers.iter_mut().for_each(|s| *s = false);
                l.owner = Some(c);
                woken = std::mem::take(&mut l.watchers);
            }
        }
        (done, woken)
    }
}

/// Where a thread is in its loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Acquire(u8),
    /// Writing data line `i` (then the critical section's time).
    Cs(u32),
    Release(u8),
    Delay,
}

impl Phase {
    fn index(self) -> usize {
        match self {
            Phase::Acquire(_) => 0,
            Phase::Cs(_) => 1,
            Phase::Release(_) => 2,
            Phase::Delay => 3,
        }
    }
}

struct Thread {
    core: u32,
    socket: u32,
    phase: Phase,
    /// The ticket drawn, or the MCS predecessor, or the MCS successor.
    reg: u64,
    /// C-BO-MCS: the consecutive passes of the global lock granted with
    /// the local lock, then (in the release) the grant to hand on; CNA:
    /// the count of local hand-overs that came with the lock.
    passes: u64,
    /// CNA: the secondary queue's head that came with the lock (`NONE`:
    /// empty), and the scan's current node and the last node it skipped.
    sec: u64,
    cur: u64,
    last: u64,
    rng: Rng,
    /// The phase of the step that ran last, and when it ran: the time
    /// from then to the next step is that phase's.
    current: Phase,
    since: f64,
    phases: [f64; 4],
    acquired: u64,
}

/// What a step asks of the loop.
enum Next {
    /// Run the thread's next step at this time.
    At(f64),
    /// Nothing until a write to the line it watches.
    Watch,
}

/// An event: a thread's next step at a time (earliest first; ties in the
/// order they were made).
#[derive(PartialEq)]
struct Event {
    at: f64,
    seq: u64,
    thread: u32,
}

impl Eq for Event {}

impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

fn sample(rng: &mut Rng, d: Dist) -> f64 {
    match d {
        Dist::Const(x) => x,
        Dist::Exp(m) => -m * (1.0 - rng.unit()).ln(),
    }
}

fn check(c: &Config) -> Result<(), SimError> {
    let t = c.topology;
    if t.sockets == 0 || t.cores_per_socket == 0 || t.cores() > 4096 {
        return Err(SimError(format!(
            "topology {}x{}: allowed 1 or more sockets of 1 or more cores, 4096 cores at most",
            t.sockets, t.cores_per_socket
        )));
    }
    if c.threads == 0 || c.threads > t.cores() {
        return Err(SimError(format!(
            "{} threads on {} cores: allowed 1 to {} (one thread a core)",
            c.threads,
            t.cores(),
            t.cores()
        )));
    }
    for (name, d) in [("critical section", c.cs), ("delay", c.delay)] {
        let m = d.mean();
        if !(m.is_finite() && m >= 0.0) {
            return Err(SimError(format!(
                "{name} of {m} ns: allowed a finite length, 0 or more"
            )));
        }
    }
    if c.cs_lines > 64 {
        return Err(SimError(format!(
            "{} lines written in the critical section: allowed 0 to 64",
            c.cs_lines
        )));
    }
    let window_ok = c.window_ns.is_finite() && c.window_ns > 0.0;
    let warmup_ok = c.warmup_ns.is_finite() && c.warmup_ns >= 0.0;
    if !(window_ok && warmup_ok) {
        return Err(SimError(format!(
            "warm-up {} ns and window {} ns: allowed a warm-up of 0 or more and a window above 0",
            c.warmup_ns, c.window_ns
        )));
    }
    if c.lock_socket >= t.sockets {
        return Err(SimError(format!(
            "the lock in socket {}'s memory: allowed 0 to {} (sockets count from 0)",
            c.lock_socket,
            t.sockets - 1
        )));
    }
    c.costs.check()
}

/// Runs one simulation.
pub fn simulate(c: &Config) -> Result<Outcome, SimError> {
    run(c, None)
}

/// Most acquisitions [`Outcome::order`] lists.
const ORDER_MAX: usize = 64;

/// One hand-over sequence under a fixed schedule: thread `t` (placed as
/// `placement` says) first asks for the lock at `arrivals_ns[t]`, holds it
/// for `cs_ns`, and does not come back; the threads in the order they got
/// the lock. For holding a simulated algorithm to the real lock's order
/// under the same schedule.
pub fn replay(
    algorithm: Algorithm,
    topology: super::Topology,
    placement: super::Placement,
    costs: Costs,
    arrivals_ns: &[f64],
    cs_ns: f64,
) -> Result<Vec<u32>, SimError> {
    let last = arrivals_ns.iter().copied().fold(0.0, f64::max);
    let c = Config {
        algorithm,
        topology,
        placement,
        costs,
        threads: arrivals_ns.len() as u32,
        cs: Dist::Const(cs_ns),
        cs_lines: 0,
        // Never back within the run.
        delay: Dist::Const(1e15),
        lock_socket: 0,
        warmup_ns: 0.0,
        window_ns: last + cs_ns * (arrivals_ns.len() as f64 + 1.0) + 1e6,
        seed: 1,
    };
    if arrivals_ns.len() > ORDER_MAX || arrivals_ns.iter().any(|a| !(a.is_finite() && *a >= 0.0)) {
        return Err(SimError(format!(
            "{} arrivals: allowed 1 to {ORDER_MAX}, each a time of 0 ns or more",
            arrivals_ns.len()
        )));
    }
    Ok(run(&c, Some(arrivals_ns))?.order)
}

/// [`simulate`], with each thread's first request for the lock at the
/// time `first` gives (instead of after a delay).
fn run(c: &Config, first: Option<&[f64]>) -> Result<Outcome, SimError> {
    check(c)?;
    let topo = c.topology;
    let cores = topo.cores() as usize;
    let socket: Vec<u32> = (0..topo.cores())
        .map(|core| core / topo.cores_per_socket)
        .collect();
    // Thread t's core: the placement's socket, the next free core there.
    let mut used = vec![0u32; topo.sockets as usize];
    let mut threads: Vec<Thread> = (0..c.threads)
        .map(|t| {
            let s = c.placement.socket_of(topo, t);
            let core = s * topo.cores_per_socket + used[s as usize];
            used[s as usize] += 1;
            Thread {
                core,
                socket: s,
                phase: Phase::Delay,
                reg: NONE,
                passes: 0,
                sec: NONE,
                cur: NONE,
                last: NONE,
                rng: Rng::new(c.seed ^ (u64::from(t) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                current: Phase::Delay,
                since: 0.0,
                phases: [0.0; 4],
                acquired: 0,
            }
        })
        .collect();
    let nodes = 1 + c.cs_lines as usize;
    // C-BO-MCS: a line per socket (its local MCS tail);
    // HMCS: the same for its leaf's tail, then a line per socket for the
    // leaf's root node.
    let cohorts = nodes + c.threads as usize;
    let roots = cohorts + topo.sockets as usize;
    let n_lines = roots + topo.sockets as usize;
    let end = c.warmup_ns + c.window_ns;
    let mut mem = Memory {
        lines: (0..n_lines)
            .map(|i| Line {
                vals: if i == LOCK {
                    [0, 0]
                } else if i >= roots {
                    [WAIT, NONE]
                } else if i >= cohorts {
                    [NONE, 0]
                } else {
                    [0, NONE]
                },
                owner: None,
                sharers: vec![false; cores],
                // The lock and the data live on the first socket; each
                // thread's node on its own.
                home: if i >= roots {
                    (i - roots) as u32
                } else if i >= cohorts {
                    (i - cohorts) as u32
                } else if i >= nodes {
                    threads[i - nodes].socket
                } else {
                    c.lock_socket
                },
                busy_until: 0.0,
                watchers: Vec::new(),
            })
            .collect(),
        costs: c.costs,
        socket,
        transfer_ns: 0.0,
        cna_count: vec![0; c.threads as usize],
        cna_sec_tail: vec![NONE; c.threads as usize],
        thread_socket: threads.iter().map(|t| t.socket).collect(),
        clh_free: (0..c.threads as usize).map(|t| vec![nodes + t]).collect(),
        window: (c.warmup_ns, end),
    };
    if matches!(
        c.algorithm,
        Algorithm::Mcs | Algorithm::Cna | Algorithm::Clh | Algorithm::Hemlock | Algorithm::Hmcs
    ) {
        mem.lines[LOCK].vals[0] = NONE;
    }
    if c.algorithm == Algorithm::Qspin {
        mem.lines[LOCK].vals = [0, NONE];
    }

    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    for t in 0..c.threads {
        heap.push(Event {
            at: 0.0,
            seq,
            thread: t,
        });
        seq += 1;
    }
    let mut per_thread = vec![0u64; c.threads as usize];
    let (mut within, mut across) = (0u64, 0u64);
    let mut last_holder: Option<u32> = None;
    let mut order = Vec::new();
    let mut started = vec![false; c.threads as usize];
    let mut events = 0u64;
    while let Some(Event {
        at: now, thread: t, ..
    }) = heap.pop()
    {
        if now > end {
            break;
        }
        events += 1;
        if events > MAX_EVENTS {
            return Err(SimError(format!(
                "more than {MAX_EVENTS} events by {now:.0} ns: a spinner that never waits"
            )));
        }
        let th = &mut threads[t as usize];
        let before = th.phase;
        th.phases[th.current.index()] += now - th.since;
        th.since = now;
        th.current = before;
        let (mut next, woken, acquired) = step(c, &mut mem, th, t, nodes, now);
        // A fixed schedule: the first delay ends at the thread's arrival.
        if let (Some(first), false, Phase::Delay) = (first, started[t as usize], before) {
            started[t as usize] = true;
            next = Next::At(first[t as usize]);
        }
        if acquired {
            // The acquisition ends at the step's end.
            let at = match next {
                Next::At(x) => x,
                Next::Watch => now,
            };
            if at >= c.warmup_ns && at <= end {
                per_thread[t as usize] += 1;
                if let Some(prev) = last_holder.filter(|&p| p != t) {
                    if threads[prev as usize].socket == threads[t as usize].socket {
                        within += 1;
                    } else {
                        across += 1;
                    }
                }
            }
            threads[t as usize].acquired += 1;
            last_holder = Some(t);
            if order.len() < ORDER_MAX {
                order.push(t);
            }
        }
        if let Next::At(x) = next {
            heap.push(Event {
                at: x,
                seq,
                thread: t,
            });
            seq += 1;
        }
        for (w, at) in woken {
            heap.push(Event { at, seq, thread: w });
            seq += 1;
        }
    }
    for th in &mut threads {
        th.phases[th.current.index()] += end - th.since;
    }
    let total: u64 = per_thread.iter().sum();
    Ok(Outcome {
        throughput: total as f64 / (c.window_ns * 1e-9),
        per_thread,
        within_socket: within,
        across_sockets: across,
        transfer_ns: mem.transfer_ns,
        phases: threads.iter().map(|t| t.phases).collect(),
        run_ns: end,
        order,
    })
}

/// Links thread `t` behind its predecessor's queue node `pred` (a write
/// of the node's `next`, field 1); the write's end.
fn link(
    mem: &mut Memory,
    pred: usize,
    t: u32,
    access: &mut impl FnMut(&mut Memory, usize, Kind) -> f64,
) -> f64 {
    mem.lines[pred].vals[1] = u64::from(t);
    access(mem, pred, Kind::Write)
}

/// C-BO-MCS's release decision, `waiter` being whether the holder saw
/// one: the grant to hand over in `th.passes` (the count + 1 to pass the
/// global lock on, else 0) and the next step (2, release the global lock
/// first; 3, hand over to the linked successor; 4, swing the tail back).
fn cohort_grant(th: &mut Thread, waiter: bool) {
    if waiter && th.passes < COHORT_BOUND {
        th.passes += 1;
        th.phase = if th.reg == NONE {
            Phase::Release(4)
        } else {
            Phase::Release(3)
        };
    } else {
        th.passes = 0;
        th.phase = Phase::Release(2);
    }
}

/// A read-modify-write that puts `new` in field 0 of `line`: the old
/// value and the access's end (a test-and-set, an MCS tail swap).
fn swap(
    mem: &mut Memory,
    line: usize,
    new: u64,
    access: &mut impl FnMut(&mut Memory, usize, Kind) -> f64,
) -> (u64, f64) {
    let old = mem.lines[line].vals[0];
    mem.lines[line].vals[0] = new;
    (old, access(mem, line, Kind::Rmw))
}

/// A queue lock's release with nobody linked behind: the compare-and-swap
/// of the tail (field 0 of `line`) from thread `t` back to empty. Whether
/// it swung (no waiter came) and the access's end.
fn swing_back(
    mem: &mut Memory,
    line: usize,
    t: u32,
    access: &mut impl FnMut(&mut Memory, usize, Kind) -> f64,
) -> (bool, f64) {
    let mine = mem.lines[line].vals[0] == u64::from(t);
    if mine {
        mem.lines[line].vals[0] = NONE;
    }
    (mine, access(mem, line, Kind::Rmw))
}

/// Reads field `field` of `line` for thread `t`: the value and the read's
/// end if `ready` says the wait is over; else the thread watches the
/// line (its cached copy) until a write, and `None`.
fn look(
    mem: &mut Memory,
    line: usize,
    field: usize,
    t: u32,
    access: &mut impl FnMut(&mut Memory, usize, Kind) -> f64,
    ready: impl Fn(u64) -> bool,
) -> Option<(u64, f64)> {
    let v = mem.lines[line].vals[field];
    let done = access(mem, line, Kind::Read);
    if ready(v) {
        Some((v, done))
    } else {
        mem.lines[line].watchers.push(t);
        None
    }
}

/// Thread `t`'s next step at `now`: what it asks of the loop, the
/// watchers its write woke (each with the time to wake it), and whether
/// the step took the lock. The time until the thread's next step belongs
/// to the phase it was in when this one began (a delay's step starts the
/// delay and moves the phase on to acquiring).
fn step(
    c: &Config,
    mem: &mut Memory,
    th: &mut Thread,
    t: u32,
    nodes: usize,
    now: f64,
) -> (Next, Vec<(u32, f64)>, bool) {
    let core = th.core;
    let me = nodes + t as usize;
    // C-BO-MCS: this thread's socket's local lock; HMCS: its leaf, and
    // the leaf's root node.
    let cohort = nodes + c.threads as usize + th.socket as usize;
    let root_node =
        |socket: u32| nodes + c.threads as usize + c.topology.sockets as usize + socket as usize;
    let mut woke = Vec::new();
    let mut access = |mem: &mut Memory, line: usize, kind: Kind| {
        let (done, w) = mem.access(core, line, kind, now);
        woke.extend(w.into_iter().map(|x| (x, done)));
        done
    };
    let mut acquired = false;
    let next = match (c.algorithm, th.phase) {
        (_, Phase::Delay) => {
            th.phase = Phase::Acquire(0);
            Next::At(now + sample(&mut th.rng, c.delay))
        }
        (_, Phase::Cs(i)) if i < c.cs_lines => {
            let done = access(mem, 1 + i as usize, Kind::Write);
            th.phase = Phase::Cs(i + 1);
            Next::At(done)
        }
        (_, Phase::Cs(_)) => {
            th.phase = Phase::Release(0);
            Next::At(now + sample(&mut th.rng, c.cs))
        }

        // tas: swap until the old value is 0.
        (Algorithm::Tas, Phase::Acquire(_)) => {
            let (old, done) = swap(mem, LOCK, 1, &mut access);
            if old == 0 {
                acquired = true;
                th.phase = Phase::Cs(0);
            }
            Next::At(done)
        }
        // ttas: read until 0, then swap.
        (Algorithm::Ttas, Phase::Acquire(0)) => {
            match look(mem, LOCK, 0, t, &mut access, |v| v == 0) {
                Some((_, done)) => {
                    th.phase = Phase::Acquire(1);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Ttas, Phase::Acquire(_)) => {
            let (old, done) = swap(mem, LOCK, 1, &mut access);
            if old == 0 {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(0);
            }
            Next::At(done)
        }
        (Algorithm::Tas | Algorithm::Ttas, Phase::Release(_)) => {
            mem.lines[LOCK].vals[0] = 0;
            let done = access(mem, LOCK, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }

        // ticket: draw from `next` (field 0), wait for `owner` (field 1).
        (Algorithm::Ticket, Phase::Acquire(0)) => {
            th.reg = mem.lines[LOCK].vals[0];
            mem.lines[LOCK].vals[0] += 1;
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = Phase::Acquire(1);
            Next::At(done)
        }
        (Algorithm::Ticket, Phase::Acquire(_)) => {
            match look(mem, LOCK, 1, t, &mut access, |owner| owner == th.reg) {
                Some((_, done)) => {
                    acquired = true;
                    th.phase = Phase::Cs(0);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Ticket, Phase::Release(_)) => {
            mem.lines[LOCK].vals[1] = th.reg + 1;
            let done = access(mem, LOCK, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }

        // mcs: own node's field 0 is `locked`, field 1 `next`; the lock's
        // field 0 the tail.
        (Algorithm::Mcs, Phase::Acquire(0)) => {
            mem.lines[me].vals = [1, NONE];
            let done = access(mem, me, Kind::Write);
            th.phase = Phase::Acquire(1);
            Next::At(done)
        }
        (Algorithm::Mcs, Phase::Acquire(1)) => {
            let (pred, done) = swap(mem, LOCK, u64::from(t), &mut access);
            th.reg = pred;
            if th.reg == NONE {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(2);
            }
            Next::At(done)
        }
        (Algorithm::Mcs, Phase::Acquire(2)) => {
            th.phase = Phase::Acquire(3);
            Next::At(link(mem, nodes + th.reg as usize, t, &mut access))
        }
        (Algorithm::Mcs, Phase::Acquire(_)) => {
            match look(mem, me, 0, t, &mut access, |locked| locked == 0) {
                Some((_, done)) => {
                    acquired = true;
                    th.phase = Phase::Cs(0);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Mcs, Phase::Release(0 | 2)) => {
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            let waiting = th.phase == Phase::Release(2);
            if next != NONE {
                th.reg = next;
                th.phase = Phase::Release(3);
                Next::At(done)
            } else if waiting {
                // A successor swapped itself in and is about to link.
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else {
                th.phase = Phase::Release(1);
                Next::At(done)
            }
        }
        (Algorithm::Mcs, Phase::Release(1)) => {
            let (mine, done) = swing_back(mem, LOCK, t, &mut access);
            th.phase = if mine {
                Phase::Delay
            } else {
                Phase::Release(2)
            };
            Next::At(done)
        }
        (Algorithm::Mcs, Phase::Release(_)) => {
            let succ = nodes + th.reg as usize;
            mem.lines[succ].vals[0] = 0;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }

        // c-bo-mcs and hmcs queue at their socket's MCS lock alike: 0 the
        // own node, 1 the swap of the socket's tail (the cohort line's
        // field 0; an empty queue goes on to the global lock or the root
        // at 4, with no passes), 2 the link behind the predecessor.
        (Algorithm::CboMcs | Algorithm::Hmcs, Phase::Acquire(0)) => {
            mem.lines[me].vals = [WAIT, NONE];
            let done = access(mem, me, Kind::Write);
            th.phase = Phase::Acquire(1);
            Next::At(done)
        }
        (Algorithm::CboMcs | Algorithm::Hmcs, Phase::Acquire(1)) => {
            let (pred, done) = swap(mem, cohort, u64::from(t), &mut access);
            th.reg = pred;
            th.phase = if th.reg == NONE {
                th.passes = 0;
                Phase::Acquire(4)
            } else {
                Phase::Acquire(2)
            };
            Next::At(done)
        }
        (Algorithm::CboMcs | Algorithm::Hmcs, Phase::Acquire(2)) => {
            th.phase = Phase::Acquire(3);
            Next::At(link(mem, nodes + th.reg as usize, t, &mut access))
        }

        // c-bo-mcs. Acquire: 0-2 as above, 3 wait for the grant in the own
        // node's field 0 (`WAIT`, then the count of passes of the global
        // lock, 0 for "take it"), 4-5 the global test-and-test-and-set lock
        // (the lock word).
        (Algorithm::CboMcs, Phase::Acquire(3)) => {
            match look(mem, me, 0, t, &mut access, |grant| grant != WAIT) {
                Some((grant, done)) => {
                    th.passes = grant;
                    if grant > 0 {
                        acquired = true;
                        th.phase = Phase::Cs(0);
                    } else {
                        th.phase = Phase::Acquire(4);
                    }
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::CboMcs, Phase::Acquire(4)) => {
            match look(mem, LOCK, 0, t, &mut access, |v| v == 0) {
                Some((_, done)) => {
                    th.phase = Phase::Acquire(5);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::CboMcs, Phase::Acquire(_)) => {
            let (old, done) = swap(mem, LOCK, 1, &mut access);
            if old == 0 {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(4);
            }
            Next::At(done)
        }
        // Release: 0 read the own node's `next`, 1 (none linked) read the
        // local tail: a waiter if either shows one. With a waiter and
        // passes left, the grant is the count + 1; otherwise 0, and 2
        // releases the global lock first. Then 3 the MCS hand-over of the
        // grant (waiting for the successor's link if it has not come), or,
        // with nobody linked, 4 the compare-and-swap of the local tail
        // back to empty, which fails if a waiter has come (then 3).
        (Algorithm::CboMcs, Phase::Release(0)) => {
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            if next == NONE {
                th.phase = Phase::Release(1);
            } else {
                th.reg = next;
                cohort_grant(th, true);
            }
            Next::At(done)
        }
        (Algorithm::CboMcs, Phase::Release(1)) => {
            let tail = mem.lines[cohort].vals[0];
            let done = access(mem, cohort, Kind::Read);
            th.reg = NONE;
            cohort_grant(th, tail != u64::from(t));
            Next::At(done)
        }
        (Algorithm::CboMcs, Phase::Release(2)) => {
            mem.lines[LOCK].vals[0] = 0;
            let done = access(mem, LOCK, Kind::Write);
            th.phase = if th.reg == NONE {
                Phase::Release(4)
            } else {
                Phase::Release(3)
            };
            Next::At(done)
        }
        (Algorithm::CboMcs, Phase::Release(3)) if th.reg == NONE => {
            // The MCS hand-over to a successor that has swapped itself in
            // and is about to link.
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            if next == NONE {
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else {
                th.reg = next;
                Next::At(done)
            }
        }
        (Algorithm::CboMcs, Phase::Release(3)) => {
            let succ = nodes + th.reg as usize;
            th.reg = NONE;
            mem.lines[succ].vals[0] = th.passes;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }
        (Algorithm::CboMcs, Phase::Release(4)) => {
            let (mine, done) = swing_back(mem, cohort, t, &mut access);
            th.phase = if mine {
                Phase::Delay
            } else {
                Phase::Release(3)
            };
            Next::At(done)
        }
        (Algorithm::CboMcs, Phase::Release(_)) => unreachable!("c-bo-mcs has no such step"),

        // cna. Acquire as MCS, the own node's field 0 being its grant
        // (`NONE` while waiting, then `GRANTED` or the secondary queue's
        // head) and field 1 its `next`.
        (Algorithm::Cna, Phase::Acquire(0)) => {
            mem.lines[me].vals = [NONE, NONE];
            let done = access(mem, me, Kind::Write);
            th.phase = Phase::Acquire(1);
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Acquire(1)) => {
            let (pred, done) = swap(mem, LOCK, u64::from(t), &mut access);
            th.reg = pred;
            if th.reg == NONE {
                acquired = true;
                th.sec = NONE;
                th.passes = 0;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(2);
            }
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Acquire(2)) => {
            th.phase = Phase::Acquire(3);
            Next::At(link(mem, nodes + th.reg as usize, t, &mut access))
        }
        (Algorithm::Cna, Phase::Acquire(_)) => {
            let grant = mem.lines[me].vals[0];
            let done = access(mem, me, Kind::Read);
            if grant == NONE {
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else {
                acquired = true;
                th.sec = if grant == GRANTED { NONE } else { grant };
                th.passes = mem.cna_count[t as usize];
                th.phase = Phase::Cs(0);
                Next::At(done)
            }
        }
        // Release: 0 read the own `next`; 1 scan the main queue for a
        // waiter of this socket (a read of each node's line); 2-4 move
        // the waiters skipped to the secondary queue; 5 grant the local
        // waiter; 6-7 no local waiter (or the bound reached): splice the
        // secondary queue in front and grant its head, or grant the main
        // queue's head; 8-9 no successor linked: swing the tail back (to
        // the secondary queue's last node, if any), or wait for the link.
        (Algorithm::Cna, Phase::Release(0 | 9)) => {
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            if next == NONE {
                if th.phase == Phase::Release(9) {
                    mem.lines[me].watchers.push(t);
                    return (Next::Watch, woke, false);
                }
                th.phase = Phase::Release(8);
            } else {
                th.reg = next;
                th.cur = next;
                th.last = NONE;
                th.phase = if th.passes >= CNA_BOUND && th.sec != NONE {
                    Phase::Release(6)
                } else {
                    Phase::Release(1)
                };
            }
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(1)) => {
            let cur = th.cur as usize;
            let done = access(mem, nodes + cur, Kind::Read);
            if mem.thread_socket[cur] == th.socket {
                th.phase = if th.last == NONE {
                    Phase::Release(5)
                } else {
                    Phase::Release(2)
                };
            } else {
                let nxt = mem.lines[nodes + cur].vals[1];
                th.last = th.cur;
                if nxt == NONE {
                    th.phase = Phase::Release(6);
                } else {
                    th.cur = nxt;
                }
            }
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(2)) => {
            // Cut the skipped segment (head `reg` to `last`) off the queue.
            let last = nodes + th.last as usize;
            mem.lines[last].vals[1] = NONE;
            let done = access(mem, last, Kind::Write);
            th.phase = if th.sec == NONE {
                Phase::Release(4)
            } else {
                Phase::Release(3)
            };
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(3)) => {
            // Append it to the secondary queue: its last node's `next`.
            let tail = nodes + mem.cna_sec_tail[th.sec as usize] as usize;
            mem.lines[tail].vals[1] = th.reg;
            let done = access(mem, tail, Kind::Write);
            th.phase = Phase::Release(4);
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(4)) => {
            // The secondary queue's head records its new last node.
            if th.sec == NONE {
                th.sec = th.reg;
            }
            let head = th.sec as usize;
            mem.cna_sec_tail[head] = th.last;
            let done = access(mem, nodes + head, Kind::Write);
            th.phase = Phase::Release(5);
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(5)) => {
            // Grant the local waiter, the secondary queue with it.
            let w = th.cur as usize;
            mem.cna_count[w] = if th.sec == NONE { 0 } else { th.passes + 1 };
            mem.lines[nodes + w].vals[0] = if th.sec == NONE { GRANTED } else { th.sec };
            let done = access(mem, nodes + w, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(6)) if th.sec != NONE => {
            // Splice the secondary queue in front of the main one.
            let tail = nodes + mem.cna_sec_tail[th.sec as usize] as usize;
            mem.lines[tail].vals[1] = th.reg;
            let done = access(mem, tail, Kind::Write);
            th.phase = Phase::Release(7);
            Next::At(done)
        }
        (Algorithm::Cna, Phase::Release(6 | 7)) => {
            // Grant the secondary queue's head, or the main queue's.
            let w = if th.sec != NONE { th.sec } else { th.reg } as usize;
            mem.cna_count[w] = 0;
            mem.lines[nodes + w].vals[0] = GRANTED;
            let done = access(mem, nodes + w, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }
        // clh: the lock word's field 0 is the tail (a node's line, or
        // NONE); a node's field 0 is 1 while locked. `cur` is the node in
        // use, `reg` the predecessor's.
        (Algorithm::Clh, Phase::Acquire(0)) => {
            let node = match mem.clh_free[t as usize].pop() {
                Some(n) => n,
                None => {
                    // The pool is empty: a new node in this socket's memory.
                    let home = th.socket;
                    let cores = mem.socket.len();
                    mem.lines.push(Line {
                        vals: [0, NONE],
                        owner: None,
                        sharers: vec![false; cores],
                        home,
                        busy_until: 0.0,
                        watchers: Vec::new(),
                    });
                    mem.lines.len() - 1
                }
            };
            th.cur = node as u64;
            mem.lines[node].vals[0] = 1;
            let done = access(mem, node, Kind::Write);
            th.phase = Phase::Acquire(1);
            Next::At(done)
        }
        (Algorithm::Clh, Phase::Acquire(1)) => {
            let (pred, done) = swap(mem, LOCK, th.cur, &mut access);
            th.reg = pred;
            if th.reg == NONE {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(2);
            }
            Next::At(done)
        }
        (Algorithm::Clh, Phase::Acquire(_)) => {
            let pred = th.reg as usize;
            match look(mem, pred, 0, t, &mut access, |locked| locked == 0) {
                Some((_, done)) => {
                    // The released predecessor's node is ours now.
                    mem.clh_free[t as usize].push(pred);
                    acquired = true;
                    th.phase = Phase::Cs(0);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Clh, Phase::Release(_)) => {
            let node = th.cur as usize;
            mem.lines[node].vals[0] = 0;
            let done = access(mem, node, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }

        // hemlock: the lock word's field 0 is the tail (a thread, or
        // NONE); a thread's grant word is its node line's field 0 (0, or
        // 1: "releasing this lock").
        (Algorithm::Hemlock, Phase::Acquire(0)) => {
            let (pred, done) = swap(mem, LOCK, u64::from(t), &mut access);
            th.reg = pred;
            if th.reg == NONE {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(1);
            }
            Next::At(done)
        }
        (Algorithm::Hemlock, Phase::Acquire(1)) => {
            let pred = nodes + th.reg as usize;
            match look(mem, pred, 0, t, &mut access, |grant| grant == 1) {
                Some((_, done)) => {
                    th.phase = Phase::Acquire(2);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Hemlock, Phase::Acquire(_)) => {
            // The acknowledgement: clear the predecessor's grant word.
            let pred = nodes + th.reg as usize;
            mem.lines[pred].vals[0] = 0;
            let done = access(mem, pred, Kind::Write);
            acquired = true;
            th.phase = Phase::Cs(0);
            Next::At(done)
        }
        (Algorithm::Hemlock, Phase::Release(0)) => {
            let (mine, done) = swing_back(mem, LOCK, t, &mut access);
            th.phase = if mine {
                Phase::Delay
            } else {
                Phase::Release(1)
            };
            Next::At(done)
        }
        (Algorithm::Hemlock, Phase::Release(1)) => {
            mem.lines[me].vals[0] = 1;
            let done = access(mem, me, Kind::Write);
            th.phase = Phase::Release(2);
            Next::At(done)
        }
        (Algorithm::Hemlock, Phase::Release(_)) => {
            match look(mem, me, 0, t, &mut access, |grant| grant == 0) {
                Some((_, done)) => {
                    th.phase = Phase::Delay;
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }

        // qspin: the lock word's field 0 holds the locked byte (Q_LOCKED)
        // and the pending bit (Q_PENDING), field 1 the tail (a thread, or
        // NONE); a node's field 0 is 1 while its owner waits, field 1 its
        // `next`.
        (Algorithm::Qspin, Phase::Acquire(0)) => {
            let w = mem.lines[LOCK].vals;
            let free = w[0] == 0 && w[1] == NONE;
            if free {
                mem.lines[LOCK].vals[0] = Q_LOCKED;
            }
            let done = access(mem, LOCK, Kind::Rmw);
            if free {
                acquired = true;
                th.phase = Phase::Cs(0);
            } else if w[0] == Q_LOCKED && w[1] == NONE {
                th.phase = Phase::Acquire(1);
            } else {
                th.phase = Phase::Acquire(4);
            }
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(1)) => {
            // Set pending, if the word still has only the locked byte.
            let w = mem.lines[LOCK].vals;
            let alone = w[0] & Q_PENDING == 0 && w[1] == NONE;
            if alone {
                mem.lines[LOCK].vals[0] |= Q_PENDING;
            }
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = if alone {
                Phase::Acquire(2)
            } else {
                Phase::Acquire(4)
            };
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(2)) => {
            let locked = mem.lines[LOCK].vals[0] & Q_LOCKED;
            let done = access(mem, LOCK, Kind::Read);
            if locked == 0 {
                th.phase = Phase::Acquire(3);
                Next::At(done)
            } else {
                mem.lines[LOCK].watchers.push(t);
                Next::Watch
            }
        }
        (Algorithm::Qspin, Phase::Acquire(3)) => {
            // Pending into locked.
            mem.lines[LOCK].vals[0] = (mem.lines[LOCK].vals[0] & !Q_PENDING) | Q_LOCKED;
            let done = access(mem, LOCK, Kind::Rmw);
            acquired = true;
            th.phase = Phase::Cs(0);
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(4)) => {
            mem.lines[me].vals = [1, NONE];
            let done = access(mem, me, Kind::Write);
            th.phase = Phase::Acquire(5);
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(5)) => {
            th.reg = mem.lines[LOCK].vals[1];
            mem.lines[LOCK].vals[1] = u64::from(t);
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = if th.reg == NONE {
                Phase::Acquire(8)
            } else {
                Phase::Acquire(6)
            };
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(6)) => {
            th.phase = Phase::Acquire(7);
            Next::At(link(mem, nodes + th.reg as usize, t, &mut access))
        }
        (Algorithm::Qspin, Phase::Acquire(7)) => {
            match look(mem, me, 0, t, &mut access, |waiting| waiting == 0) {
                Some((_, done)) => {
                    th.phase = Phase::Acquire(8);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Qspin, Phase::Acquire(8)) => {
            // The queue's head: wait for locked and pending to clear.
            match look(mem, LOCK, 0, t, &mut access, |lp| lp == 0) {
                Some((_, done)) => {
                    th.phase = Phase::Acquire(9);
                    Next::At(done)
                }
                None => Next::Watch,
            }
        }
        (Algorithm::Qspin, Phase::Acquire(9)) => {
            // Take the lock; the last in the queue also clears the tail.
            let last = mem.lines[LOCK].vals[1] == u64::from(t);
            mem.lines[LOCK].vals[0] |= Q_LOCKED;
            if last {
                mem.lines[LOCK].vals[1] = NONE;
            }
            let done = access(mem, LOCK, Kind::Rmw);
            acquired = true;
            if last {
                th.phase = Phase::Cs(0);
            } else {
                // Hand the head on before the critical section (as the
                // kernel does): find the successor, then clear its flag.
                th.phase = Phase::Acquire(10);
            }
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Acquire(10)) => {
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            if next == NONE {
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else {
                th.reg = next;
                th.phase = Phase::Acquire(11);
                Next::At(done)
            }
        }
        (Algorithm::Qspin, Phase::Acquire(_)) => {
            let succ = nodes + th.reg as usize;
            mem.lines[succ].vals[0] = 0;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Cs(0);
            Next::At(done)
        }
        (Algorithm::Qspin, Phase::Release(_)) => {
            mem.lines[LOCK].vals[0] &= !Q_LOCKED;
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = Phase::Delay;
            Next::At(done)
        }

        // hmcs. Acquire: 0-3 the leaf (0-2 as c-bo-mcs above; a node's
        // field 0 its `status`, field 1 its `next`), 4-7 the root (the
        // lock word's field 0 its tail, a socket; each leaf's root node on
        // a line of its own).
        (Algorithm::Hmcs, Phase::Acquire(3)) => {
            let status = mem.lines[me].vals[0];
            let done = access(mem, me, Kind::Read);
            if status == WAIT {
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else if status == H_PARENT {
                th.phase = Phase::Acquire(4);
                Next::At(done)
            } else {
                acquired = true;
                th.passes = status;
                th.phase = Phase::Cs(0);
                Next::At(done)
            }
        }
        (Algorithm::Hmcs, Phase::Acquire(4)) => {
            let rn = root_node(th.socket);
            mem.lines[rn].vals = [WAIT, NONE];
            let done = access(mem, rn, Kind::Write);
            th.phase = Phase::Acquire(5);
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Acquire(5)) => {
            th.cur = mem.lines[LOCK].vals[0];
            mem.lines[LOCK].vals[0] = u64::from(th.socket);
            let done = access(mem, LOCK, Kind::Rmw);
            if th.cur == NONE {
                acquired = true;
                th.passes = 1;
                th.phase = Phase::Cs(0);
            } else {
                th.phase = Phase::Acquire(6);
            }
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Acquire(6)) => {
            let pred = root_node(th.cur as u32);
            mem.lines[pred].vals[1] = u64::from(th.socket);
            let done = access(mem, pred, Kind::Write);
            th.phase = Phase::Acquire(7);
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Acquire(_)) => {
            let rn = root_node(th.socket);
            let status = mem.lines[rn].vals[0];
            let done = access(mem, rn, Kind::Read);
            if status == WAIT {
                mem.lines[rn].watchers.push(t);
                Next::Watch
            } else {
                acquired = true;
                th.passes = 1;
                th.phase = Phase::Cs(0);
                Next::At(done)
            }
        }
        // Release: 0 read the own `next`; 1 pass within the leaf; 2-5
        // release the root (read the root node's `next`, grant it, or
        // swing the root's tail back, or wait for the link); 6-9 hand the
        // leaf on with ACQUIRE_PARENT, or swing its tail back.
        (Algorithm::Hmcs, Phase::Release(0)) => {
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            th.reg = next;
            th.phase = if next != NONE && th.passes <= HMCS_BOUND {
                Phase::Release(1)
            } else {
                Phase::Release(2)
            };
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(1)) => {
            let succ = nodes + th.reg as usize;
            mem.lines[succ].vals[0] = th.passes + 1;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(2 | 5)) => {
            let rn = root_node(th.socket);
            let next = mem.lines[rn].vals[1];
            let done = access(mem, rn, Kind::Read);
            if next != NONE {
                th.cur = next;
                th.phase = Phase::Release(4);
                Next::At(done)
            } else if th.phase == Phase::Release(5) {
                mem.lines[rn].watchers.push(t);
                Next::Watch
            } else {
                th.phase = Phase::Release(3);
                Next::At(done)
            }
        }
        (Algorithm::Hmcs, Phase::Release(3)) => {
            let mine = mem.lines[LOCK].vals[0] == u64::from(th.socket);
            if mine {
                mem.lines[LOCK].vals[0] = NONE;
            }
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = if mine {
                Phase::Release(6)
            } else {
                Phase::Release(5)
            };
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(4)) => {
            let succ = root_node(th.cur as u32);
            mem.lines[succ].vals[0] = 1;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Release(6);
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(6 | 7)) if th.reg != NONE => {
            let succ = nodes + th.reg as usize;
            mem.lines[succ].vals[0] = H_PARENT;
            let done = access(mem, succ, Kind::Write);
            th.phase = Phase::Delay;
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(6)) => {
            let (mine, done) = swing_back(mem, cohort, t, &mut access);
            th.phase = if mine {
                Phase::Delay
            } else {
                Phase::Release(7)
            };
            Next::At(done)
        }
        (Algorithm::Hmcs, Phase::Release(_)) => {
            // Release(7): a leaf waiter swapped itself in; wait for its link.
            let next = mem.lines[me].vals[1];
            let done = access(mem, me, Kind::Read);
            if next == NONE {
                mem.lines[me].watchers.push(t);
                Next::Watch
            } else {
                th.reg = next;
                Next::At(done)
            }
        }

        (Algorithm::Cna, Phase::Release(_)) => {
            // Release(8): nobody linked behind; swing the tail back.
            let mine = mem.lines[LOCK].vals[0] == u64::from(t);
            if mine {
                mem.lines[LOCK].vals[0] = if th.sec == NONE {
                    NONE
                } else {
                    mem.cna_sec_tail[th.sec as usize]
                };
            }
            let done = access(mem, LOCK, Kind::Rmw);
            th.phase = match (mine, th.sec != NONE) {
                (true, false) => Phase::Delay,
                // The secondary queue is the queue now: its head's turn.
                (true, true) => {
                    th.reg = NONE;
                    Phase::Release(7)
                }
                (false, _) => Phase::Release(9),
            };
            Next::At(done)
        }
    };
    (next, woke, acquired)
}
