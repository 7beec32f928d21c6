//! Pause-loop exiting and the host's policies for a spinning vCPU: seed
//! 004's transitory co-scheduling (ITCS, SITCS and DTCS, §2.1–2.3) and its
//! yields (YTH, YTT, §3) on Linux 2.6.38's CFS, and KVM's directed yield.
//!
//! A running spinner's guest event is its PLE exit, one window after it
//! started spinning in this stint (only when the policy uses PLE and the
//! spin loop's PAUSEs are at most `gap` cycles apart). The exit costs
//! `exit_ns` of the vCPU's time and hands the decision to the policy; see
//! [`Sim::ple_action`].

use super::{Ev, Sim, TState, Vcpu};
use crate::lhp::config::PleMode;
use crate::lhp::policy::Policy;

impl Sim {
    pub(super) fn ple_window_ns(&self, i: u32) -> u64 {
        ((self.v[i as usize].ple_window as f64 / self.ghz).round() as u64).max(1)
    }

    // ----- policies -------------------------------------------------------

    /// A PLE exit of the running spinner `i`: the exit costs `exit_ns` of
    /// its time (the window grows under KVM's adaptive PLE), and when that
    /// is paid [`Sim::ple_action`] applies the policy.
    pub(super) fn ple_exit(&mut self, i: u32) {
        self.v[i as usize].stats.ple_exits += 1;
        self.v[i as usize].last_ple = Some(self.now);
        if let PleMode::Kvm {
            grow, max_cycles, ..
        } = self.ple_mode
        {
            let v = &mut self.v[i as usize];
            v.ple_window = (v.ple_window.saturating_mul(u64::from(grow))).min(max_cycles);
        }
        self.add_overhead(i, self.exit);
        let v = &mut self.v[i as usize];
        v.exiting = true;
        v.gen = v.gen.wrapping_add(1);
        let (t, g) = (v.seg_start, v.gen);
        self.at(t, Ev::Guest(i, g));
    }

    /// The policy's answer once the PLE exit of `i` has been paid for.
    ///
    /// - `yth`: the spinner is requeued at its virtual runtime, at or near
    ///   the head, and the pCPU picks again ([`Sim::yield_to_head`]); `ytt`:
    ///   it is requeued behind the rightmost task (2.6.38's compat yield).
    /// - `itcs`/`sitcs`: queued siblings (`sitcs`: those preempted in kernel
    ///   mode) run now on their own pCPUs ([`Sim::coschedule`]); the spinner
    ///   spins on.
    /// - `dtcs`: the spinner is descheduled until the first queued sibling
    ///   preempted in kernel mode (round robin from the spinner) is switched
    ///   in, and then runs at once beside it (at most one scheduling
    ///   latency later in any case); with no such sibling it spins on.
    /// - `kvm-dy`: the first queued sibling preempted in kernel mode that is
    ///   not a known spinner ([`Sim::directed_yield_target`]), round robin
    ///   from the last one boosted, is made the next task of its pCPU, which
    ///   reschedules, and the spinner yields its pCPU (CFS `yield_to`: next
    ///   and skip buddies); with no such sibling the spinner spins on, as
    ///   `kvm_vcpu_on_spin` does.
    pub(super) fn ple_action(&mut self, i: u32) {
        let cpu = self.v[i as usize].cpu;
        match self.policy {
            Policy::None | Policy::Pv => unreachable!("PLE is off under {}", self.policy),
            Policy::Yth => self.yield_to_head(cpu),
            Policy::Ytt => {
                self.update_curr(cpu);
                if let Some(&(vr, _, _)) = self.rq[cpu as usize].tree.last() {
                    let v = &mut self.v[i as usize];
                    v.vruntime = v.vruntime.max(vr + 1);
                    self.resched(cpu);
                } else {
                    self.start_guest(i);
                }
            }
            Policy::Itcs | Policy::Sitcs => {
                self.coschedule(i, self.policy == Policy::Sitcs);
                if self.v[i as usize].state == TState::Running && self.v[i as usize].spinning() {
                    self.start_guest(i);
                }
            }
            Policy::Dtcs => {
                match self.sibling(i, i, |v| v.state == TState::Queued && v.in_kernel()) {
                    Some(h) => {
                        self.v[i as usize].deferred_on = Some(h);
                        self.deferred[h as usize].push(i);
                        self.block(i);
                        let g = self.v[i as usize].gen;
                        let t = self.now + self.latency;
                        self.at(t, Ev::Undefer(i, g));
                    }
                    None => self.start_guest(i),
                }
            }
            Policy::KvmDy => {
                let vm = self.v[i as usize].vm as usize;
                let from = self.vms[vm].first + self.vms[vm].last_boosted;
                let target = self.directed_yield_target(i, from);
                if let Some(t) = target {
                    self.vms[vm].last_boosted = t - self.vms[vm].first;
                    let tcpu = self.v[t as usize].cpu;
                    if tcpu == cpu {
                        self.rq[cpu as usize].next = Some(t);
                        self.resched(cpu);
                        return;
                    }
                    self.rq[tcpu as usize].next = Some(t);
                    self.resched(tcpu);
                    self.rq[cpu as usize].skip = Some(i);
                    self.resched(cpu);
                } else {
                    // Nobody to yield to: back to the guest.
                    self.start_guest(i);
                }
            }
        }
    }

    /// KVM's candidate for a directed yield from `i`: the first sibling
    /// after `from` that is queued, was preempted in kernel mode, and is not
    /// a known spinner (a known spinner passes every other time it is
    /// looked at, as KVM's `dy_eligible` toggles).
    fn directed_yield_target(&mut self, i: u32, from: u32) -> Option<u32> {
        for s in self.ring(i, from) {
            let v = &mut self.v[s as usize];
            if v.state != TState::Queued || !v.in_kernel() {
                continue;
            }
            if v.ple_yielded {
                v.dy_eligible = !v.dy_eligible;
                if !v.dy_eligible {
                    continue;
                }
            }
            return Some(s);
        }
        None
    }

    /// The siblings of `i` in round-robin order starting after `from`
    /// (a vCPU of the same VM), `i` itself left out.
    fn ring(&self, i: u32, from: u32) -> impl Iterator<Item = u32> {
        let vm = &self.vms[self.v[i as usize].vm as usize];
        let (first, n) = (vm.first, vm.vcpus);
        let start = from - first;
        (1..=n)
            .map(move |k| first + (start + k) % n)
            .filter(move |&s| s != i)
    }

    /// The first sibling of `i` after `from` (round robin within the VM)
    /// for which `ok` holds.
    fn sibling(&self, i: u32, from: u32, ok: impl Fn(&Vcpu) -> bool) -> Option<u32> {
        self.ring(i, from).find(|&s| ok(&self.v[s as usize]))
    }

    /// YTH: the spinner goes back into its run queue where its virtual
    /// runtime puts it, at or near the head, and the pCPU picks again: a
    /// task that is owed more CPU runs, otherwise the spinner goes on. This
    /// is `sched_yield` in Linux 2.6.38's CFS without the compat flag, the
    /// kernel seed 004 built on.
    fn yield_to_head(&mut self, cpu: u32) {
        self.resched(cpu);
    }

    /// ITCS/SITCS: runs the spinner's queued siblings (those preempted in
    /// kernel mode with `kernel_only`) now, each on the pCPU whose queue it
    /// waits in, unless a sibling already runs there (two vCPUs of a VM
    /// cannot share a pCPU). The spinner keeps its pCPU and spins on, and
    /// nothing is stopped later: when the co-scheduled vCPUs give way is
    /// left to CFS, whose virtual runtimes then even out what they took
    /// (seed 004 §2.1). A sibling further ahead in virtual runtime than
    /// CFS lets a next buddy be stays queued.
    fn coschedule(&mut self, i: u32, kernel_only: bool) {
        let vm = self.v[i as usize].vm;
        let first = self.vms[vm as usize].first;
        let n = self.vms[vm as usize].vcpus;
        for s in first..first + n {
            let sv = &self.v[s as usize];
            if s == i || sv.state != TState::Queued || (kernel_only && !sv.in_kernel()) {
                continue;
            }
            let cpu = sv.cpu;
            let rq = &self.rq[cpu as usize];
            if let Some(r) = rq.curr {
                let rv = &self.v[r as usize];
                if rv.vm == vm {
                    continue;
                }
                // CFS's rule for a next buddy: not more than the wake-up
                // granularity ahead of the task it displaces, so a VM that
                // keeps exiting cannot take the host over.
                if sv.vruntime > rv.vruntime.saturating_add(self.wakeup_gran) {
                    continue;
                }
            }
            self.run_now(s, cpu);
        }
    }

    /// DTCS: deferred `i` becomes runnable. With `together` (the sibling
    /// it waited for was just switched in) it runs at once on a pCPU not
    /// running a sibling, its own if possible; otherwise it wakes normally.
    pub(super) fn undefer(&mut self, i: u32, together: bool) {
        self.v[i as usize].deferred_on = None;
        if together {
            let vm = self.v[i as usize].vm;
            let home = self.v[i as usize].cpu;
            let free = |c: u32| {
                self.rq[c as usize]
                    .curr
                    .is_none_or(|r| self.v[r as usize].vm != vm)
            };
            let cpu = if free(home) {
                Some(home)
            } else {
                (0..self.pcpus).find(|&c| free(c))
            };
            if let Some(cpu) = cpu {
                self.enqueue_woken(i, cpu);
                self.rq[cpu as usize].force = Some(i);
                if self.rq[cpu as usize].curr.is_some() {
                    self.resched(cpu);
                } else {
                    self.schedule(cpu);
                }
                return;
            }
        }
        self.wake(i);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{blank, blank_from, scenario, O};
    use super::super::{Phase, Sim, TState};
    use crate::lhp::config::{LockKind, Ple};
    use crate::lhp::policy::Policy;

    /// v0 holds the VM's lock on cpu0 and v1 starts spinning on it on
    /// cpu1, both switched in at 0 (guest from 2 µs, after the switch).
    fn spinning(mut s: Sim) -> Sim {
        let lock = &mut s.vms[0].locks[0];
        lock.owner = Some(0);
        lock.held = true;
        lock.queue.push_back(1);
        s.v[0].phase = Phase::Hold;
        s.v[1].phase = Phase::Spin;
        s.run_on(0, 0, O);
        s.run_on(1, 1, O);
        s
    }

    #[test]
    fn a_spinner_exits_one_window_in_when_its_pauses_are_within_the_gap() {
        let sc = scenario(2, &[(2, 1024)], Policy::Yth, LockKind::Ticket);
        // 2048 cycles at 2 GHz.
        let mut s = spinning(blank_from(&sc));
        assert_eq!(s.ple_window_ns(1), 1_024);
        assert_eq!(s.guest_due(1), Some(2_000 + 1_024));
        s.now = 3_024;
        s.guest_event(1);
        assert_eq!(s.v[1].stats.ple_exits, 1);
        assert!(s.v[1].exiting);
        // The policy acts once the exit has cost its 1 µs.
        assert_eq!(s.guest_due(1), Some(3_024 + 1_000));
        assert_eq!(s.v[1].stats.spin, 1_024);

        // A spin loop whose PAUSEs are further apart than PLE_GAP never
        // exits; nor does one under a policy without PLE.
        let mut sc2 = sc.clone();
        sc2.host.spin_loop_cycles = sc.ple.gap_cycles + 1;
        assert_eq!(spinning(blank_from(&sc2)).guest_due(1), None);
        sc2.host.spin_loop_cycles = sc.ple.gap_cycles;
        assert_eq!(spinning(blank_from(&sc2)).guest_due(1), Some(3_024));
        sc2.policy = Policy::None;
        assert_eq!(spinning(blank_from(&sc2)).guest_due(1), None);
    }

    #[test]
    fn kvm_ple_doubles_the_window_on_an_exit_and_resets_it_on_a_switch() {
        let mut sc = scenario(2, &[(3, 1024)], Policy::Yth, LockKind::Ticket);
        sc.ple = Ple::kvm();
        let mut s = spinning(blank_from(&sc));
        assert_eq!(s.v[1].ple_window, 4_096);
        s.now = 2_000 + 2_048;
        s.guest_event(1);
        assert_eq!(s.v[1].ple_window, 8_192);
        // Switched out and in again: back to the base window.
        s.put(2, 1, O);
        s.resched(1);
        assert_eq!(s.rq[1].curr, Some(2));
        s.block(2);
        assert_eq!(s.rq[1].curr, Some(1));
        assert_eq!(s.v[1].ple_window, 4_096);
    }

    /// One pCPU: spinner v0 runs at `O`, the holder v1 of its VM is queued
    /// at `O + 200`, and v2 of another VM at `O + 100`.
    fn yielding(policy: Policy) -> Sim {
        let mut s = blank(1, &[(2, 1024), (1, 1024)], policy, LockKind::Ticket);
        s.vms[0].locks[0].owner = Some(1);
        s.vms[0].locks[0].held = true;
        s.v[0].phase = Phase::Spin;
        s.run_on(0, 0, O);
        s.put(1, 0, O + 200);
        s.put(2, 0, O + 100);
        s
    }

    #[test]
    fn yield_to_head_keeps_a_leftmost_spinner_and_yield_to_tail_queues_it_last() {
        let mut s = yielding(Policy::Yth);
        s.ple_action(0);
        assert_eq!(s.rq[0].curr, Some(0), "still owed the most CPU");
        let mut s = yielding(Policy::Ytt);
        s.ple_action(0);
        assert_eq!(s.rq[0].curr, Some(2));
        assert_eq!(s.queued(0), [1, 0]);
        assert_eq!(s.v[0].vruntime, O + 201);
    }

    /// cpu0 runs the spinner A0; cpu1 runs B0 with A1 (kernel mode)
    /// queued; cpu2 runs B1 with A2 (user mode) queued.
    fn coscheduling(policy: Policy) -> Sim {
        let mut s = blank(3, &[(3, 1024), (2, 1024)], policy, LockKind::Ticket);
        s.vms[0].locks[0].owner = Some(1);
        s.vms[0].locks[0].held = true;
        s.v[0].phase = Phase::Spin;
        s.run_on(0, 0, O);
        s.run_on(3, 1, O);
        s.run_on(4, 2, O);
        s.v[1].phase = Phase::Hold;
        s.put(1, 1, O);
        s.put(2, 2, O);
        s
    }

    #[test]
    fn itcs_runs_every_queued_sibling_and_sitcs_only_those_in_the_kernel() {
        let mut s = coscheduling(Policy::Itcs);
        s.ple_action(0);
        let curr = |s: &Sim| s.rq.iter().map(|r| r.curr).collect::<Vec<_>>();
        assert_eq!(curr(&s), [Some(0), Some(1), Some(2)]);
        let mut s = coscheduling(Policy::Sitcs);
        s.ple_action(0);
        assert_eq!(curr(&s), [Some(0), Some(1), Some(4)]);
        assert_eq!(s.v[2].state, TState::Queued);
    }

    #[test]
    fn dtcs_brings_the_spinner_back_beside_the_sibling_it_waited_for() {
        // cpu0 runs the spinner A0; cpu1 runs B0 with A1 (kernel mode)
        // queued.
        let mut s = blank(2, &[(2, 1024), (1, 1024)], Policy::Dtcs, LockKind::Ticket);
        s.vms[0].locks[0].owner = Some(1);
        s.vms[0].locks[0].held = true;
        s.v[0].phase = Phase::Spin;
        s.run_on(0, 0, O);
        s.run_on(2, 1, O);
        s.v[1].phase = Phase::Hold;
        s.put(1, 1, O);
        s.ple_action(0);
        // A0 blocked on A1; cpu0, idle, pulled A1; A1 switched in released
        // A0, which took the pCPU not running a sibling.
        assert_eq!(s.rq[0].curr, Some(1));
        assert_eq!(s.rq[1].curr, Some(0));
        assert_eq!(s.v[2].state, TState::Queued);
        assert_eq!(s.v[0].deferred_on, None);
    }

    #[test]
    fn directed_yield_skips_user_mode_siblings_and_known_spinners_every_other_time() {
        let mut s = blank(2, &[(4, 1024)], Policy::KvmDy, LockKind::Ticket);
        s.run_on(0, 0, O);
        for (i, phase) in [(1, Phase::Spin), (2, Phase::User), (3, Phase::Kernel)] {
            s.v[i as usize].phase = phase;
            s.put(i, 1, O);
        }
        s.v[1].ple_yielded = true;
        let picks: Vec<_> = (0..4).map(|_| s.directed_yield_target(0, 0)).collect();
        assert_eq!(picks, [Some(1), Some(3), Some(1), Some(3)]);
        // The boost: the target is cpu1's next task, and the spinner's own
        // pCPU reschedules with it as the skip buddy.
        s.v[1].ple_yielded = false;
        s.v[1].phase = Phase::User;
        s.v[0].phase = Phase::Spin;
        s.ple_action(0);
        assert_eq!(s.rq[1].curr, Some(3));
        assert_eq!(s.vms[0].last_boosted, 3);
    }
}
