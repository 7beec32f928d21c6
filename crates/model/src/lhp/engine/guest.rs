//! The guests: seed 004's VMs of vCPUs running workloads whose kernel
//! phases take guest spin locks, the setting of its lock-holder
//! preemption problem (§1).
//!
//! A vCPU progresses only while its guest runs: a stint on a pCPU first
//! pays the host's switch cost (and any VM-exit cost), then its phase's
//! remaining length counts down. Phases: user, kernel work, spin (waiting
//! for a guest lock), cross-call (waiting for every sibling to acknowledge
//! a TLB shootdown, which a sibling does when it next runs), hold (in a
//! critical section), think (halted between requests) and idle (a vCPU
//! with no thread, halted for good). Ticket locks pass to the oldest
//! waiter, running or not; test-and-set locks go to a waiter that is
//! running when they are released (chosen at random), or, when none is, to
//! whoever polls first. Under `pv` a waiter halts after a spin threshold
//! and the releaser kicks it (Linux's pv qspinlock).

use super::{Ev, Phase, Sim, TState};
use crate::lhp::config::LockKind;
use crate::lhp::policy::Policy;
use crate::lhp::result::HoldSpan;

impl Sim {
    // ----- accounting -----------------------------------------------------

    /// Charges the running vCPU's guest progress and overhead up to now.
    pub(super) fn settle(&mut self, i: u32) {
        let now = self.now;
        let v = &mut self.v[i as usize];
        let ovh_end = now.min(v.seg_start);
        v.stats.overhead += ovh_end.saturating_sub(v.ovh_from);
        v.ovh_from = v.ovh_from.max(ovh_end);
        if now > v.seg_start {
            let p = now - v.seg_start;
            match v.phase {
                Phase::User => {
                    v.stats.user += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Kernel => {
                    v.stats.kernel += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Hold => {
                    v.stats.hold += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Spin => {
                    v.stats.spin += p;
                    v.spin_accum += p;
                }
                Phase::Ipi => v.stats.spin += p,
                Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
            }
            v.seg_start = now;
            v.ovh_from = now;
        }
    }

    /// Adds `d` ns of overhead before the running vCPU's guest continues.
    pub(super) fn add_overhead(&mut self, i: u32, d: u64) {
        self.settle(i);
        let now = self.now;
        let v = &mut self.v[i as usize];
        v.seg_start = v.seg_start.max(now) + d;
    }

    // ----- guest ----------------------------------------------------------

    /// Arms the running vCPU's next guest event for its phase.
    pub(super) fn start_guest(&mut self, i: u32) {
        let now = self.now;
        let v = &mut self.v[i as usize];
        v.gen = v.gen.wrapping_add(1);
        let g = v.gen;
        let from = v.seg_start.max(now);
        match v.phase {
            Phase::User | Phase::Kernel | Phase::Hold => {
                let t = from + v.remaining;
                self.at(t, Ev::Guest(i, g));
            }
            Phase::Spin => {
                if self.can_take(i) {
                    self.settle(i);
                    self.acquire(i, true);
                    return self.start_guest(i);
                }
                if self.ple_on {
                    let t = from + self.ple_window_ns(i);
                    self.at(t, Ev::Guest(i, g));
                } else if self.policy == Policy::Pv {
                    let left = self.pv_spin.saturating_sub(self.v[i as usize].spin_accum);
                    self.at(from + left, Ev::Guest(i, g));
                }
            }
            Phase::Ipi => {
                if self.ple_on {
                    let t = from + self.ple_window_ns(i);
                    self.at(t, Ev::Guest(i, g));
                }
            }
            Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
        }
    }

    fn can_take(&self, i: u32) -> bool {
        let v = &self.v[i as usize];
        let lock = &self.vms[v.vm as usize].locks[v.lock as usize];
        match self.vms[v.vm as usize].lock_kind {
            LockKind::Ticket => lock.owner == Some(i) && !lock.held,
            LockKind::Tas => lock.owner.is_none(),
        }
    }

    /// `i` starts its critical section (its lock is free to it).
    fn acquire(&mut self, i: u32, after_spin: bool) {
        let now = self.now;
        let (vm, l) = (
            self.v[i as usize].vm as usize,
            self.v[i as usize].lock as usize,
        );
        let hold = self.rng.sample(self.vms[vm].hold);
        let lock = &mut self.vms[vm].locks[l];
        lock.owner = Some(i);
        lock.held = true;
        lock.hold_start = now;
        lock.waiters.retain(|&w| w != i);
        let v = &mut self.v[i as usize];
        v.phase = Phase::Hold;
        v.remaining = hold + if after_spin { self.handoff } else { 0 };
        v.spin_accum = 0;
        v.exiting = false;
    }

    /// The running vCPU's phase (or spin window) ended.
    pub(super) fn guest_event(&mut self, i: u32) {
        self.settle(i);
        let vm = self.v[i as usize].vm as usize;
        match self.v[i as usize].phase {
            Phase::User => {
                if self.vms[vm].sections == 0 {
                    self.cycle_done(i);
                } else if self.vms[vm].ipi > 0.0 && self.rng.unit() < self.vms[vm].ipi {
                    self.cross_call(i);
                } else {
                    self.v[i as usize].sections_left = self.vms[vm].sections;
                    self.begin_kernel(i);
                }
            }
            Phase::Kernel => self.request(i),
            Phase::Hold => {
                self.release(i);
                let v = &mut self.v[i as usize];
                v.sections_left -= 1;
                if v.sections_left > 0 {
                    self.begin_kernel(i);
                } else {
                    self.cycle_done(i);
                }
            }
            Phase::Spin if self.policy == Policy::Pv => self.pv_halt(i),
            Phase::Spin | Phase::Ipi if self.v[i as usize].exiting => {
                self.v[i as usize].exiting = false;
                self.ple_action(i);
            }
            Phase::Spin | Phase::Ipi => self.ple_exit(i),
            Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
        }
    }

    /// `i` sends a synchronous cross-call (a TLB shootdown) to every
    /// sibling that runs its workload and is not halted (a halted vCPU is
    /// in lazy TLB mode and is skipped, as Linux skips it), and spins until
    /// each has acknowledged, which a sibling does as soon as it runs. Under
    /// `pv` the guest skips preempted siblings too (KVM's paravirtual TLB
    /// flush leaves the flush to their next entry), so it never waits.
    fn cross_call(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let (first, n) = (self.vms[vm].first, self.vms[vm].vcpus);
        let mut wait = 0;
        for t in first..first + n {
            if t != i && self.v[t as usize].state == TState::Queued && self.policy != Policy::Pv {
                self.v[t as usize].ipi_from.push(i);
                wait += 1;
            }
        }
        if wait == 0 {
            return self.after_cross_call(i);
        }
        let v = &mut self.v[i as usize];
        v.ipi_wait = wait;
        v.phase = Phase::Ipi;
        self.start_guest(i);
    }

    /// The cross-call of `i` is acknowledged by all: its kernel phase
    /// goes on.
    fn after_cross_call(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let k = self.rng.sample(self.vms[vm].kernel);
        let v = &mut self.v[i as usize];
        v.sections_left = self.vms[vm].sections;
        v.phase = Phase::Kernel;
        v.remaining = k;
        v.exiting = false;
        if v.state == TState::Running {
            self.start_guest(i);
        }
    }

    /// Switched-in `t` acknowledges the cross-calls waiting for it.
    pub(super) fn acknowledge(&mut self, t: u32) {
        for s in std::mem::take(&mut self.v[t as usize].ipi_from) {
            let v = &mut self.v[s as usize];
            v.ipi_wait -= 1;
            if v.ipi_wait == 0 {
                if v.state == TState::Running {
                    self.settle(s);
                }
                self.after_cross_call(s);
            }
        }
    }

    fn begin_kernel(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let k = self.rng.sample(self.vms[vm].kernel);
        let v = &mut self.v[i as usize];
        v.phase = Phase::Kernel;
        v.remaining = k;
        self.start_guest(i);
    }

    fn cycle_done(&mut self, i: u32) {
        let now = self.now;
        let vm = self.v[i as usize].vm as usize;
        let rt = now - self.v[i as usize].cycle_start;
        self.vms[vm].response.record(rt);
        self.v[i as usize].stats.work += 1;
        match self.vms[vm].think {
            Some(d) => {
                let t = self.rng.sample(d);
                self.v[i as usize].phase = Phase::Think;
                self.v[i as usize].stats.halts += 1;
                self.block(i);
                let g = self.v[i as usize].gen;
                self.at(now + t, Ev::Wake(i, g));
            }
            None => {
                let u = self.rng.sample(self.vms[vm].user);
                let v = &mut self.v[i as usize];
                v.cycle_start = now;
                v.phase = Phase::User;
                v.remaining = u;
                self.start_guest(i);
            }
        }
    }

    pub(super) fn think_over(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let u = self.rng.sample(self.vms[vm].user);
        let v = &mut self.v[i as usize];
        v.cycle_start = self.now;
        v.phase = Phase::User;
        v.remaining = u;
        v.pending_ovh += self.exit;
        self.wake(i);
    }

    /// `i` asks for one of its VM's locks.
    fn request(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let l = self.rng.below(self.vms[vm].locks.len() as u32);
        self.v[i as usize].lock = l;
        let kind = self.vms[vm].lock_kind;
        let lock = &mut self.vms[vm].locks[l as usize];
        if lock.owner.is_none() {
            self.acquire(i, false);
        } else {
            match kind {
                LockKind::Ticket => lock.queue.push_back(i),
                LockKind::Tas => lock.waiters.push(i),
            }
            let v = &mut self.v[i as usize];
            v.phase = Phase::Spin;
            v.spin_accum = 0;
        }
        self.start_guest(i);
    }

    fn release(&mut self, i: u32) {
        let now = self.now;
        let vm = self.v[i as usize].vm as usize;
        let l = self.v[i as usize].lock as usize;
        self.v[i as usize].stats.sections += 1;
        let kind = self.vms[vm].lock_kind;
        let lock = &mut self.vms[vm].locks[l];
        debug_assert_eq!(lock.owner, Some(i));
        if let Some(t) = &mut self.trace {
            t.holds.push(HoldSpan {
                vm: vm as u32,
                lock: l as u32,
                vcpu: i,
                start: lock.hold_start,
                end: now,
            });
        }
        lock.held = false;
        let next = match kind {
            LockKind::Ticket if self.policy == Policy::Pv => {
                // pv queued locks let a running waiter take the lock when
                // the queue's head is not running (Linux's pv qspinlock
                // steals, against lock-waiter preemption).
                let v = &self.v;
                let head_runs = lock
                    .queue
                    .front()
                    .is_some_and(|&w| v[w as usize].state == TState::Running);
                let pos = if head_runs {
                    Some(0)
                } else {
                    lock.queue
                        .iter()
                        .position(|&w| v[w as usize].state == TState::Running)
                        .or(if lock.queue.is_empty() { None } else { Some(0) })
                };
                lock.owner = pos.and_then(|k| lock.queue.remove(k));
                lock.owner
            }
            LockKind::Ticket => {
                lock.owner = lock.queue.pop_front();
                lock.owner
            }
            LockKind::Tas => {
                lock.owner = None;
                let v = &self.v;
                let runs = |w: &u32| v[*w as usize].state == TState::Running;
                let running = lock.waiters.iter().filter(|w| runs(w)).count();
                if running == 0 {
                    // Nobody polls now: under pv a halted waiter is kicked
                    // to try again.
                    let halted = lock
                        .waiters
                        .iter()
                        .copied()
                        .find(|&w| v[w as usize].pv_halted);
                    if let Some(w) = halted {
                        self.kick(i, w);
                    }
                    None
                } else {
                    let k = self.rng.below(running as u32) as usize;
                    lock.waiters.iter().copied().filter(|w| runs(w)).nth(k)
                }
            }
        };
        if let Some(w) = next {
            if self.v[w as usize].state == TState::Running {
                self.settle(w);
                self.acquire(w, true);
                self.start_guest(w);
            } else if self.v[w as usize].pv_halted {
                self.kick(i, w);
            }
        }
    }

    /// pv: the releaser `by` wakes the halted waiter `w` with a hypercall.
    fn kick(&mut self, by: u32, w: u32) {
        self.add_overhead(by, self.exit);
        let v = &mut self.v[w as usize];
        v.pv_halted = false;
        v.spin_accum = 0;
        v.pending_ovh += self.exit;
        self.wake(w);
    }

    /// pv: a waiter spun for the threshold and halts until kicked.
    fn pv_halt(&mut self, i: u32) {
        self.v[i as usize].pv_halted = true;
        self.v[i as usize].stats.halts += 1;
        self.block(i);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{blank, O};
    use super::super::{Phase, TState};
    use crate::lhp::config::LockKind;
    use crate::lhp::policy::Policy;

    #[test]
    fn progress_counts_after_the_switch_and_exit_overhead() {
        let mut s = blank(1, &[(1, 1024)], Policy::None, LockKind::Ticket);
        // Switched in at 0: the 2 µs switch comes first.
        s.run_on(0, 0, O);
        assert_eq!(s.guest_due(0), Some(2_000 + 10_000));
        s.now = 5_000;
        s.settle(0);
        let st = s.v[0].stats;
        assert_eq!(
            (st.overhead, st.user, s.v[0].remaining),
            (2_000, 3_000, 7_000)
        );
        s.add_overhead(0, 1_000);
        s.now = 10_000;
        s.settle(0);
        let st = s.v[0].stats;
        assert_eq!(
            (st.overhead, st.user, s.v[0].remaining),
            (3_000, 7_000, 3_000)
        );
    }

    #[test]
    fn a_ticket_lock_passes_to_its_waiters_in_arrival_order() {
        let mut s = blank(4, &[(4, 1024)], Policy::None, LockKind::Ticket);
        for i in 0..4 {
            s.run_on(i, i, O);
        }
        for i in [0, 2, 1, 3] {
            s.request(i);
        }
        assert_eq!(s.v[0].phase, Phase::Hold);
        assert!([1, 2, 3].iter().all(|&i| s.v[i].phase == Phase::Spin));
        let mut order = vec![0];
        for _ in 0..3 {
            let o = *order.last().unwrap();
            s.release(o);
            let next = s.vms[0].locks[0].owner.expect("a waiter");
            assert_eq!(s.v[next as usize].phase, Phase::Hold);
            order.push(next);
        }
        assert_eq!(order, [0, 2, 1, 3]);
        s.release(3);
        assert_eq!(s.vms[0].locks[0].owner, None);
        assert_eq!(s.v[0].stats.sections + s.v[3].stats.sections, 2);
    }

    #[test]
    fn a_ticket_lock_waits_for_its_preempted_next_owner() {
        let mut s = blank(2, &[(3, 1024)], Policy::None, LockKind::Ticket);
        s.run_on(0, 0, O + 100);
        s.run_on(1, 1, O);
        s.request(0);
        // v2 took its ticket and was preempted on cpu0.
        s.put(2, 0, O);
        s.v[2].phase = Phase::Spin;
        s.vms[0].locks[0].queue.push_back(2);
        s.request(1);
        s.release(0);
        let lock = &s.vms[0].locks[0];
        assert_eq!((lock.owner, lock.held), (Some(2), false));
        assert_eq!(s.v[1].phase, Phase::Spin, "the running waiter spins on");
        // v2 runs: it takes the lock it was handed.
        s.resched(0);
        assert_eq!(s.rq[0].curr, Some(2));
        assert_eq!(s.v[2].phase, Phase::Hold);
        assert!(s.vms[0].locks[0].held);
    }

    #[test]
    fn a_test_and_set_lock_goes_to_a_running_waiter() {
        let mut s = blank(2, &[(3, 1024)], Policy::None, LockKind::Tas);
        s.run_on(0, 0, O + 100);
        s.run_on(1, 1, O);
        s.request(0);
        s.put(2, 0, O);
        s.v[2].phase = Phase::Spin;
        s.vms[0].locks[0].waiters.push(2);
        s.request(1);
        assert_eq!(s.vms[0].locks[0].waiters, [2, 1]);
        s.release(0);
        assert_eq!(s.vms[0].locks[0].owner, Some(1));
        assert_eq!(s.v[1].phase, Phase::Hold);
        assert_eq!(s.vms[0].locks[0].waiters, [2]);
    }

    #[test]
    fn a_cross_call_waits_for_each_preempted_sibling_to_run() {
        for policy in [Policy::None, Policy::Pv] {
            let mut s = blank(2, &[(4, 1024)], policy, LockKind::Ticket);
            s.run_on(0, 0, O + 100);
            s.run_on(1, 1, O);
            s.put(2, 0, O);
            s.cross_call(0);
            if policy == Policy::Pv {
                // pv flushes preempted siblings' TLBs on their next entry.
                assert_eq!(s.v[0].phase, Phase::Kernel);
                continue;
            }
            // v1 runs and v3 is halted: only v2 is waited for.
            assert_eq!((s.v[0].phase, s.v[0].ipi_wait), (Phase::Ipi, 1));
            assert_eq!(s.v[2].ipi_from, [0]);
            s.resched(0);
            assert_eq!(s.rq[0].curr, Some(2));
            assert_eq!(s.v[0].state, TState::Queued);
            assert_eq!((s.v[0].phase, s.v[0].ipi_wait), (Phase::Kernel, 0));
        }
    }
}
