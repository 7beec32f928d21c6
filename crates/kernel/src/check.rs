//! The invariant checker, run on a stopped kernel after every benchmark.
//!
//! It walks every queue (bounded, so a cycle is reported rather than
//! followed forever) and checks that the objects agree with each other:
//! each thread is where its state says it is, exactly once; endpoint and
//! notification states match their queues; every reply owed is owed to a
//! thread that waits for it; every message sent was received; and the user
//! programs saw only correct replies and badges, with counts that add up.

use crate::cc::Concurrency;
use crate::kernel::{Kernel, Objects, RunResult};
use crate::objects::{EpState, Queue, Tcb, ThreadState, NIL};
use crate::user::Program;
use crossbeam_utils::CachePadded;

/// What the checker found wrong; empty means consistent.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Violations(pub Vec<String>);

impl Violations {
    /// Whether nothing was wrong.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn add(&mut self, s: String) {
        // A broken kernel breaks many things at once; the first few say it.
        if self.0.len() < 20 {
            self.0.push(s);
        }
    }
}

impl std::fmt::Display for Violations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

/// Walks a wait queue; returns its members, or `None` if it is malformed
/// (reported into `v`).
fn walk(tcbs: &[CachePadded<Tcb>], q: &Queue, what: &str, v: &mut Violations) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let (mut t, mut prev) = (q.head.get(), NIL);
    while t != NIL {
        if t as usize >= tcbs.len() || out.len() > tcbs.len() {
            v.add(format!(
                "{what}: queue runs past the thread table (a cycle or a bad link)"
            ));
            return None;
        }
        let tcb = &tcbs[t as usize];
        if tcb.prev.get() != prev {
            v.add(format!(
                "{what}: thread {t}'s back link is {} but follows {prev}",
                tcb.prev.get()
            ));
        }
        out.push(t);
        prev = t;
        t = tcb.next.get();
    }
    if q.tail.get() != prev {
        v.add(format!(
            "{what}: tail is {} but the last thread is {prev}",
            q.tail.get()
        ));
    }
    Some(out)
}

/// Checks a stopped kernel's objects. See the module documentation.
pub fn check_kernel<C: Concurrency>(k: &Kernel<C>) -> Violations {
    check_kernel_objects(&k.o)
}

/// [`check_kernel`] on the objects alone: compiled once, not per variant.
fn check_kernel_objects(k: &Objects) -> Violations {
    let mut v = Violations::default();
    let n = k.tcbs.len();
    // Where each thread was found: (queue name, count).
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); n];
    let state = |t: usize| ThreadState::from_word(k.tcbs[t].state.get());
    for (t, tcb) in k.tcbs.iter().enumerate() {
        if state(t).is_none() {
            v.add(format!(
                "thread {t} has no valid state ({})",
                tcb.state.get()
            ));
        }
    }
    for (c, cs) in k.cores.iter().enumerate() {
        let cur = cs.current.get();
        if cur != NIL {
            if cur as usize >= n {
                v.add(format!("core {c}: current thread {cur} does not exist"));
            } else {
                seen[cur as usize].push(format!("current of core {c}"));
                if k.tcbs[cur as usize].core as usize != c {
                    v.add(format!(
                        "core {c} runs thread {cur} of core {}",
                        k.tcbs[cur as usize].core
                    ));
                }
                if state(cur as usize) != Some(ThreadState::Running) {
                    v.add(format!(
                        "core {c}'s current thread {cur} is {:?}",
                        state(cur as usize)
                    ));
                }
            }
        }
        let mut t = cs.rq_head.get();
        let mut last = NIL;
        let mut len = 0;
        while t != NIL {
            if t as usize >= n || len > n {
                v.add(format!("core {c}: ready queue runs past the thread table"));
                break;
            }
            seen[t as usize].push(format!("ready queue of core {c}"));
            if state(t as usize) != Some(ThreadState::Ready) {
                v.add(format!(
                    "thread {t} is in core {c}'s ready queue but {:?}",
                    state(t as usize)
                ));
            }
            if k.tcbs[t as usize].core as usize != c {
                v.add(format!(
                    "thread {t} of core {} is in core {c}'s ready queue",
                    k.tcbs[t as usize].core
                ));
            }
            last = t;
            len += 1;
            t = k.tcbs[t as usize].rq_next.get();
        }
        if cs.rq_tail.get() != last {
            v.add(format!(
                "core {c}: ready queue tail {} but last {last}",
                cs.rq_tail.get()
            ));
        }
    }
    for (e, ep) in k.eps.iter().enumerate() {
        let what = format!("endpoint {e}");
        let Some(es) = EpState::from_word(ep.state.get()) else {
            v.add(format!("{what} has no valid state ({})", ep.state.get()));
            continue;
        };
        let Some(members) = walk(&k.tcbs, &ep.queue, &what, &mut v) else {
            continue;
        };
        if (es == EpState::Idle) != members.is_empty() {
            v.add(format!("{what} is {es:?} with {} queued", members.len()));
        }
        if ep.deleted.get() != 0 && !members.is_empty() {
            v.add(format!("deleted {what} still queues {members:?}"));
        }
        let want = match es {
            EpState::Send => Some(ThreadState::BlockedOnSend),
            EpState::Recv => Some(ThreadState::BlockedOnRecv),
            EpState::Idle => None,
        };
        for t in members {
            seen[t as usize].push(what.clone());
            if want.is_some() && state(t as usize) != want {
                v.add(format!(
                    "thread {t} is queued on {what} ({es:?}) but {:?}",
                    state(t as usize)
                ));
            }
            if k.tcbs[t as usize].blocked_on.get() != e as u32 {
                v.add(format!(
                    "thread {t} is queued on {what} but blocked on {}",
                    k.tcbs[t as usize].blocked_on.get()
                ));
            }
        }
    }
    for (i, nt) in k.ntfns.iter().enumerate() {
        let what = format!("notification {i}");
        let Some(members) = walk(&k.tcbs, &nt.queue, &what, &mut v) else {
            continue;
        };
        if !members.is_empty() && nt.word.get() != 0 {
            v.add(format!(
                "{what} has waiters and pending bits {:#x}",
                nt.word.get()
            ));
        }
        for t in members {
            seen[t as usize].push(what.clone());
            if state(t as usize) != Some(ThreadState::BlockedOnNotification) {
                v.add(format!(
                    "thread {t} is queued on {what} but {:?}",
                    state(t as usize)
                ));
            }
            if k.tcbs[t as usize].blocked_on.get() != i as u32 {
                v.add(format!(
                    "thread {t} is queued on {what} but blocked on {}",
                    k.tcbs[t as usize].blocked_on.get()
                ));
            }
        }
    }
    // Each thread is exactly where its state puts it.
    for (t, places) in seen.iter().enumerate() {
        let expected = match state(t) {
            Some(ThreadState::Running)
            | Some(ThreadState::Ready)
            | Some(ThreadState::BlockedOnSend)
            | Some(ThreadState::BlockedOnRecv)
            | Some(ThreadState::BlockedOnNotification) => 1,
            _ => 0,
        };
        if places.len() != expected {
            v.add(format!(
                "thread {t} ({:?}) is in {} places: {places:?}",
                state(t),
                places.len()
            ));
        }
    }
    // Replies owed.
    let mut owed = vec![0u32; n];
    for (s, tcb) in k.tcbs.iter().enumerate() {
        let r = tcb.reply_to.get();
        if r == NIL {
            continue;
        }
        if r as usize >= n {
            v.add(format!(
                "thread {s} owes a reply to thread {r}, which does not exist"
            ));
            continue;
        }
        owed[r as usize] += 1;
        if state(r as usize) != Some(ThreadState::BlockedOnReply) {
            v.add(format!(
                "thread {s} owes a reply to thread {r}, which is {:?}",
                state(r as usize)
            ));
        }
    }
    for (t, &o) in owed.iter().enumerate() {
        if state(t) == Some(ThreadState::BlockedOnReply) && o != 1 {
            v.add(format!("thread {t} waits for a reply that {o} threads owe"));
        }
    }
    let sent: u64 = k.tcbs.iter().map(|t| t.sent.get()).sum();
    let received: u64 = k.tcbs.iter().map(|t| t.received.get()).sum();
    if sent != received {
        v.add(format!("{sent} messages sent but {received} received"));
    }
    // Interrupt lines: each one taken was acknowledged, but one still
    // masked; a masked line's signal went somewhere (its notification's
    // word, or a thread it woke).
    for (i, q) in k.irqs.iter().enumerate() {
        let (taken, acked) = (q.line.taken(), q.line.acked());
        let masked = u64::from(q.line.state() == crate::irq::MASKED);
        if taken != acked + masked {
            v.add(format!(
                "interrupt line {i}: taken {taken} times, acknowledged {acked}, masked {masked}"
            ));
        }
        if q.line.state() > crate::irq::MASKED {
            v.add(format!(
                "interrupt line {i} has no valid state ({})",
                q.line.state()
            ));
        }
    }
    // Idle time: every core left its idle loop when it stopped, and none
    // idled longer than the kernel has existed.
    let now = locklab::sys::ticks();
    for (c, clock) in k.idle.iter().enumerate() {
        if clock.is_idle() {
            v.add(format!("core {c} stopped but is still marked idle"));
        }
        let (_, idle) = clock.sample();
        if idle > now.saturating_sub(k.booted) {
            v.add(format!(
                "core {c} idled {idle} ticks, longer than the kernel's {} ticks",
                now.saturating_sub(k.booted)
            ));
        }
    }
    for (i, l) in k
        .tcbs
        .iter()
        .map(|t| &t.lock)
        .chain(k.eps.iter().map(|e| &e.lock))
        .chain(k.ntfns.iter().map(|n| &n.lock))
        .chain(k.cores.iter().map(|c| &c.lock))
        .enumerate()
    {
        if l.is_held() {
            v.add(format!("object lock {i} is still held"));
        }
    }
    v
}

/// Checks what the user programs saw: every reply and badge correct, and
/// each program's tallies agree with the kernel's counters and state.
pub fn check_programs<C: Concurrency>(k: &Kernel<C>, r: &RunResult) -> Violations {
    check_programs_objects(&k.o, r)
}

/// [`check_programs`] on the objects alone: compiled once, not per variant.
fn check_programs_objects(k: &Objects, r: &RunResult) -> Violations {
    let mut v = Violations::default();
    for (t, p) in r.programs.iter().enumerate() {
        let tcb = &k.tcbs[t];
        let st = ThreadState::from_word(tcb.state.get());
        let runnable = matches!(st, Some(ThreadState::Running) | Some(ThreadState::Ready));
        match p {
            Program::Client(c) => {
                if c.bad != 0 {
                    v.add(format!("client {t} got {} wrong replies", c.bad));
                }
                // Every reply the kernel delivered was read, except one
                // delivered to a client that has not run since.
                let unread = tcb.received.get().wrapping_sub(c.done + c.bad);
                if unread > 1 || (unread == 1 && !runnable) {
                    v.add(format!(
                        "client {t} ({st:?}) was delivered {} replies but read {}",
                        tcb.received.get(),
                        c.done + c.bad
                    ));
                }
            }
            Program::Server(s) => {
                // Every message a server receives is a call it then owes a
                // reply to, and every reply it sends, the kernel delivers.
                if tcb.sent.get() != s.replied {
                    v.add(format!(
                        "server {t} sent {} replies but the kernel delivered {}",
                        s.replied,
                        tcb.sent.get()
                    ));
                }
                let owes = u64::from(tcb.reply_to.get() != NIL);
                if tcb.received.get() != s.replied + owes {
                    v.add(format!(
                        "server {t} received {} calls, replied {} and owes {owes}",
                        tcb.received.get(),
                        s.replied
                    ));
                }
            }
            Program::Pinger(p) => {
                if p.bad != 0 {
                    v.add(format!("thread {t} saw {} wrong badges", p.bad));
                }
            }
            Program::Reaper(_) => {}
            Program::Driver(d) => {
                // The key-value system's own invariants (see `kv::check`).
                for s in crate::kv::check::check_kv_objects(k, r, d.shared()).0 {
                    v.add(s);
                }
            }
            // Checked with the driver's system, which knows their peers.
            Program::KvServer(_) | Program::KvClient(_) => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Bkl;
    use crate::{Config, System};
    use std::sync::Arc;
    use std::time::Duration;

    fn stopped_pingpong() -> (Arc<Kernel<Bkl<locklab::RawClh>>>, RunResult) {
        let sys = System::pingpong(1, 0.0, 1);
        let k = Arc::new(Kernel::boot(Bkl::new("clh"), &sys, Config::default()).unwrap());
        let (_, run) = k
            .run(
                sys.programs(),
                Arc::new(|_| {}),
                Duration::from_secs(20),
                |m| {
                    while m.total().syscalls < 1_000 {
                        std::thread::yield_now();
                    }
                },
            )
            .unwrap();
        assert!(check_kernel(&k).is_empty() && check_programs(&k, &run).is_empty());
        (k, run)
    }

    #[test]
    fn a_ready_thread_in_no_ready_queue_is_found() {
        let (k, _) = stopped_pingpong();
        let waiting = (0..2)
            .find(|&t| k.o.tcbs[t].state() != ThreadState::Running)
            .expect("one of the pair waits");
        k.o.tcbs[waiting].set_state(ThreadState::Ready);
        // Found either as a thread in no ready queue or as a queued
        // thread in the wrong state, depending on where the stop left it.
        assert!(!check_kernel(&k).is_empty());
    }

    #[test]
    fn a_broken_queue_link_is_found() {
        let (k, _) = stopped_pingpong();
        // The server waits on its endpoint or owes the client a reply;
        // either way, a dangling back link or a lost reply shows.
        k.o.tcbs[0].prev.set(1);
        k.o.tcbs[1].reply_to.set(0);
        assert!(!check_kernel(&k).is_empty());
    }

    #[test]
    fn a_message_lost_by_the_kernel_is_found_in_the_counts() {
        let (k, run) = stopped_pingpong();
        k.o.tcbs[1].received.set(k.o.tcbs[1].received.get() + 3);
        assert!(!check_kernel(&k).is_empty());
        assert!(!check_programs(&k, &run).is_empty());
    }

    #[test]
    fn a_wrong_reply_is_found() {
        let (k, mut run) = stopped_pingpong();
        if let Program::Client(c) = &mut run.programs[1] {
            c.bad = 1;
            c.done -= 1;
        }
        assert!(!check_programs(&k, &run).is_empty());
    }
}
