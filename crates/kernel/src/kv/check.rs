//! The key-value system's own invariants, checked on a stopped kernel
//! after every run beside [`crate::check`]'s: every request out is in
//! exactly one place, no request waits without a wake-up on its way, the
//! interrupt's counts agree with its state, and the tables are intact.
//!
//! Where a request can be, once the cores stopped (between user steps):
//! on the card's queue; in its server's ring; in the kernel, with its
//! server blocked sending the response; or answered, the response
//! delivered to a client that has not run since. A client has at most one
//! request out, so each client number appears in at most one of these, and
//! in one exactly when the client is waiting for a response.

use super::KvShared;
use crate::cc::Concurrency;
use crate::check::Violations;
use crate::irq::{MASKED, PENDING};
use crate::kernel::{Kernel, Objects, RunResult};
use crate::objects::ThreadState;
use crate::user::Program;

/// Checks a stopped key-value system. See the module documentation.
pub fn check_kv<C: Concurrency>(k: &Kernel<C>, run: &RunResult, sh: &KvShared) -> Violations {
    check_kv_objects(&k.o, run, sh)
}

/// [`check_kv`] on the objects alone: compiled once, not per variant.
pub(crate) fn check_kv_objects(k: &Objects, run: &RunResult, sh: &KvShared) -> Violations {
    let mut v = Violations::default();
    let state = |t: u32| k.tcbs[t as usize].state();
    let clients = sh.mail.len();
    let mut places: Vec<Vec<&str>> = vec![Vec::new(); clients];
    // The queues, read once (the system is stopped).
    let wire = sh.wire.contents();
    let rings: Vec<Vec<u32>> = sh.rx.iter().map(|r| r.contents()).collect();
    for &c in &wire {
        match places.get_mut(c as usize) {
            Some(p) => p.push("the card's queue"),
            None => v.add(format!(
                "the card's queue holds client {c}, which does not exist"
            )),
        }
    }
    for (s, ring) in rings.iter().enumerate() {
        for &c in ring {
            match places.get_mut(c as usize) {
                Some(p) => p.push("a server's ring"),
                None => v.add(format!(
                    "server {s}'s ring holds client {c}, which does not exist"
                )),
            }
        }
    }
    let mut to_signal: Vec<u32> = Vec::new();
    let mut forwarded = 0;
    let mut wakeups = 0;
    let mut taken_from_rings = 0;
    for (t, p) in run.programs.iter().enumerate() {
        let t = t as u32;
        match p {
            Program::Driver(d) => {
                to_signal.extend(&d.to_signal);
                forwarded += d.forwarded;
                wakeups += d.wakeups;
                if d.errors != 0 {
                    v.add(format!(
                        "the driver's system calls failed {} times",
                        d.errors
                    ));
                }
            }
            Program::KvServer(s) => {
                taken_from_rings += s.taken;
                if let Some(c) = s.current {
                    if state(t) == ThreadState::BlockedOnSend {
                        places[c as usize].push("its server's pending send");
                    }
                }
                if s.errors + s.garbled + s.misses != 0 {
                    v.add(format!(
                        "server {}: {} failed calls, {} garbled requests, {} missing or damaged records",
                        s.index, s.errors, s.garbled, s.misses
                    ));
                }
                let tbl = sh.tables[s.index as usize]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let bad = tbl.check();
                if !bad.is_empty() || tbl.damaged != 0 {
                    v.add(format!(
                        "server {}'s table: {} damaged reads; {}",
                        s.index,
                        tbl.damaged,
                        bad.join("; ")
                    ));
                }
                // Every response it sent, the kernel delivered (but one
                // still blocked in its send).
                let held = u64::from(state(t) == ThreadState::BlockedOnSend);
                let sent = k.tcbs[t as usize].sent.get();
                if sent + held != s.responses {
                    v.add(format!(
                        "server {} sent {} responses but the kernel delivered {sent}",
                        s.index, s.responses
                    ));
                }
            }
            Program::KvClient(c) => {
                if c.bad != 0 {
                    v.add(format!("client {} got {} wrong responses", c.id, c.bad));
                }
                let tcb = &k.tcbs[t as usize];
                let unread = tcb.received.get().wrapping_sub(c.received + c.errors);
                let runnable = matches!(state(t), ThreadState::Running | ThreadState::Ready);
                if unread > 1 || (unread == 1 && !runnable) {
                    v.add(format!(
                        "client {} ({:?}) was delivered {} responses but read {}",
                        c.id,
                        state(t),
                        tcb.received.get(),
                        c.received
                    ));
                }
                if unread == 1 {
                    places[c.id as usize].push("a delivered response");
                }
                let out = c.issued.wrapping_sub(c.received);
                if out > 1 {
                    v.add(format!("client {} has {out} requests out", c.id));
                }
                let n = places[c.id as usize].len() as u64;
                if n != out {
                    v.add(format!(
                        "client {} has {out} requests out, found in {n} places: {:?}",
                        c.id, places[c.id as usize]
                    ));
                }
            }
            _ => {}
        }
    }
    let queued: u64 = rings.iter().map(|r| r.len() as u64).sum();
    if forwarded != taken_from_rings + queued {
        v.add(format!(
            "the driver forwarded {forwarded} requests, the servers took {taken_from_rings} and \
             {queued} wait in their rings"
        ));
    }
    // No lost wake-up: a server waiting on an empty notification has an
    // empty ring, unless the driver still owes it a signal.
    for (s, ring) in rings.iter().enumerate() {
        let t = sh.server_threads[s];
        let n = &k.ntfns[1 + s];
        if !ring.is_empty()
            && state(t) == ThreadState::BlockedOnNotification
            && n.word.get() == 0
            && !to_signal.contains(&(s as u32))
        {
            v.add(format!(
                "server {s} waits with requests in its ring and no signal on its way (a lost wake-up)"
            ));
        }
    }
    // No lost interrupt: a driver waiting on an empty notification has had
    // every interrupt acknowledged, and work on the card has one pending.
    let line = &sh.irq;
    let drv = sh.driver_thread;
    let waiting = state(drv) == ThreadState::BlockedOnNotification
        && k.tcbs[drv as usize].blocked_on.get() == 0
        && k.ntfns[0].word.get() == 0;
    if waiting && line.state() == MASKED {
        v.add("the driver waits, but its interrupt was taken and never signalled".into());
    }
    if waiting && !wire.is_empty() && line.state() != PENDING {
        v.add(format!(
            "the driver waits with requests on the card and no interrupt pending (line state {})",
            line.state()
        ));
    }
    if wakeups > line.taken() {
        v.add(format!(
            "the driver woke {wakeups} times for {} interrupts",
            line.taken()
        ));
    }
    v
}
