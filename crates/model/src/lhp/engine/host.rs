//! The host: a CFS-like scheduler per pCPU, after Linux 2.6.38's
//! `sched_fair.c` (the kernel seed 004 modified, described in its
//! documentation `sched-design-CFS.txt`).
//!
//! The running task's virtual runtime grows by `Δt · 1024 / weight`;
//! queued tasks sit in a tree ordered by virtual runtime; a tick preempts
//! the running task when it has had its slice (`max(latency, n ·
//! min_granularity) · weight / load`), or, after the minimum granularity,
//! when the leftmost task is a slice behind it. A waking task is placed at
//! `max(vruntime, min_vruntime − latency/2)` on its previous pCPU if idle,
//! else on an idle one, else on its previous one, and preempts when the
//! running task is more than the wake-up granularity ahead. An idle pCPU
//! pulls the leftmost queued task of the busiest queue; every balance
//! interval a queue at least two tasks busier than another gives one away.
//! A migrated task keeps its lag: its virtual runtime moves by the
//! difference of the two queues' minima. "Next" and "skip" hints let a
//! yield pick a given task next or avoid one, as CFS's buddies do.

use super::{Phase, Sim, TState, NICE_0};
use crate::lhp::config::PleMode;
use crate::lhp::result::RunSpan;
use std::cmp::Reverse;

impl Sim {
    // ----- accounting -----------------------------------------------------

    pub(super) fn update_curr(&mut self, cpu: u32) {
        let Some(c) = self.rq[cpu as usize].curr else {
            return;
        };
        let now = self.now;
        let v = &mut self.v[c as usize];
        let d = now - v.exec_update;
        v.exec_update = now;
        v.sum_exec += d;
        v.stats.cpu += d;
        v.vruntime += d * NICE_0 / v.weight;
        self.update_min_vr(cpu);
    }

    fn update_min_vr(&mut self, cpu: u32) {
        let rq = &self.rq[cpu as usize];
        let curr = rq.curr.map(|c| self.v[c as usize].vruntime);
        let left = rq.tree.first().map(|e| e.0);
        let m = match (curr, left) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        let rq = &mut self.rq[cpu as usize];
        rq.min_vr = rq.min_vr.max(m);
    }

    // ----- run queues -----------------------------------------------------

    pub(super) fn enqueue(&mut self, i: u32, cpu: u32) {
        self.tree_seq += 1;
        let v = &mut self.v[i as usize];
        v.seq = self.tree_seq;
        v.cpu = cpu;
        v.state = TState::Queued;
        let rq = &mut self.rq[cpu as usize];
        rq.tree.insert((v.vruntime, v.seq, i));
        rq.load += v.weight;
        rq.nr += 1;
    }

    fn dequeue(&mut self, i: u32) {
        let v = &self.v[i as usize];
        let rq = &mut self.rq[v.cpu as usize];
        let removed = rq.tree.remove(&(v.vruntime, v.seq, i));
        debug_assert!(removed, "dequeue of a vCPU not queued");
        rq.load -= v.weight;
        rq.nr -= 1;
    }

    /// Moves a queued vCPU to another run queue, keeping its lag.
    fn migrate(&mut self, i: u32, to: u32) {
        let from = self.v[i as usize].cpu;
        if from == to {
            return;
        }
        self.dequeue(i);
        let (fm, tm) = (self.rq[from as usize].min_vr, self.rq[to as usize].min_vr);
        let v = &mut self.v[i as usize];
        v.vruntime = (v.vruntime + tm).saturating_sub(fm).max(1);
        self.migrations += 1;
        self.enqueue(i, to);
    }

    fn slice(&self, cpu: u32, i: u32) -> u64 {
        let rq = &self.rq[cpu as usize];
        let period = self.latency.max(u64::from(rq.nr) * self.min_gran);
        period * self.v[i as usize].weight / rq.load.max(1)
    }

    /// Takes the running vCPU off `cpu` (back to its queue unless it
    /// blocks) and picks the next.
    pub(super) fn resched(&mut self, cpu: u32) {
        self.update_curr(cpu);
        if let Some(c) = self.rq[cpu as usize].curr.take() {
            self.stop(c, cpu);
            self.rq[cpu as usize].load -= self.v[c as usize].weight;
            self.rq[cpu as usize].nr -= 1;
            self.enqueue(c, cpu);
        }
        self.schedule(cpu);
    }

    /// Ends a vCPU's stint on `cpu` (its state is set by the caller).
    fn stop(&mut self, i: u32, cpu: u32) {
        self.settle(i);
        let now = self.now;
        let recent = 2 * (self.ple_window_ns(i) + self.exit);
        let v = &mut self.v[i as usize];
        v.gen = v.gen.wrapping_add(1);
        v.exiting = false;
        v.ple_yielded = v.last_ple.is_some_and(|t| now - t <= recent);
        if v.phase == Phase::Hold {
            v.stats.holder_preemptions += 1;
        }
        let start = v.run_start;
        if let Some(t) = &mut self.trace {
            if now > start {
                t.runs.push(RunSpan {
                    vcpu: i,
                    pcpu: cpu,
                    start,
                    end: now,
                });
            }
        }
        self.rq[cpu as usize].last = Some(i);
    }

    /// Picks the next vCPU for an idle `cpu` (whose `curr` is `None`).
    pub(super) fn schedule(&mut self, cpu: u32) {
        debug_assert!(self.rq[cpu as usize].curr.is_none());
        let mut pick = self.pick(cpu);
        if pick.is_none() {
            pick = self.pull(cpu);
        }
        let now = self.now;
        match pick {
            None => {
                let rq = &mut self.rq[cpu as usize];
                if rq.idle_since.is_none() {
                    rq.idle_since = Some(now);
                }
            }
            Some(i) => self.set_curr(cpu, i),
        }
    }

    fn pick(&mut self, cpu: u32) -> Option<u32> {
        let rq = &mut self.rq[cpu as usize];
        let force = rq.force.take();
        let next = rq.next.take();
        let skip = rq.skip.take();
        let queued_here =
            |n: u32| self.v[n as usize].state == TState::Queued && self.v[n as usize].cpu == cpu;
        if let Some(n) = force.filter(|&n| queued_here(n)) {
            return Some(n);
        }
        if let Some(n) = next.filter(|&n| queued_here(n)) {
            let left = rq.tree.first().map_or(u64::MAX, |e| e.0);
            let gran = self.wakeup_gran * NICE_0 / self.v[n as usize].weight;
            if self.v[n as usize].vruntime <= left.saturating_add(gran) {
                return Some(n);
            }
        }
        let mut it = rq.tree.iter();
        let first = it.next()?.2;
        if Some(first) == skip {
            if let Some(second) = it.next() {
                return Some(second.2);
            }
        }
        Some(first)
    }

    fn set_curr(&mut self, cpu: u32, i: u32) {
        self.dequeue(i);
        let now = self.now;
        {
            let rq = &mut self.rq[cpu as usize];
            if let Some(since) = rq.idle_since.take() {
                rq.idle += now - since;
            }
            rq.curr = Some(i);
            rq.load += self.v[i as usize].weight;
            rq.nr += 1;
        }
        let switched = self.rq[cpu as usize].last != Some(i);
        let base = self.ple_base;
        let mode = self.ple_mode;
        let v = &mut self.v[i as usize];
        v.state = TState::Running;
        v.ple_yielded = false;
        v.cpu = cpu;
        v.exec_update = now;
        v.prev_sum_exec = v.sum_exec;
        v.run_start = now;
        let mut ovh = std::mem::take(&mut v.pending_ovh);
        if switched {
            ovh += self.switch;
            v.stats.switches += 1;
            self.switches += 1;
            if let PleMode::Kvm { shrink, .. } = mode {
                v.ple_window = if shrink == 0 {
                    base
                } else {
                    (v.ple_window / u64::from(shrink)).max(base)
                };
            }
        }
        v.ovh_from = now;
        v.seg_start = now + ovh;
        self.update_min_vr(cpu);
        self.start_guest(i);
        if !self.v[i as usize].ipi_from.is_empty() {
            self.acknowledge(i);
        }
        // DTCS: vCPUs waiting to run with this one go now.
        if !self.deferred[i as usize].is_empty() {
            for w in std::mem::take(&mut self.deferred[i as usize]) {
                if self.v[w as usize].deferred_on == Some(i) {
                    self.undefer(w, true);
                }
            }
        }
    }

    /// An idle `cpu` takes the leftmost queued vCPU of the busiest queue.
    fn pull(&mut self, cpu: u32) -> Option<u32> {
        let busiest = (0..self.pcpus)
            .filter(|&c| c != cpu && !self.rq[c as usize].tree.is_empty())
            .max_by_key(|&c| (self.rq[c as usize].nr, Reverse(c)))?;
        let i = self.rq[busiest as usize].tree.first()?.2;
        self.migrate(i, cpu);
        Some(i)
    }

    pub(super) fn periodic_balance(&mut self) {
        for cpu in 0..self.pcpus {
            let Some(busiest) = (0..self.pcpus)
                .filter(|&c| !self.rq[c as usize].tree.is_empty())
                .max_by_key(|&c| (self.rq[c as usize].nr, Reverse(c)))
            else {
                return;
            };
            if self.rq[busiest as usize].nr >= self.rq[cpu as usize].nr + 2 {
                let i = self.rq[busiest as usize].tree.first().expect("non-empty").2;
                self.migrate(i, cpu);
                if self.rq[cpu as usize].curr.is_none() {
                    self.schedule(cpu);
                }
            }
        }
    }

    pub(super) fn tick_cpu(&mut self, cpu: u32) {
        self.update_curr(cpu);
        let Some(c) = self.rq[cpu as usize].curr else {
            return;
        };
        let rq = &self.rq[cpu as usize];
        let Some(&(left_vr, _, _)) = rq.tree.first() else {
            return;
        };
        let ideal = self.slice(cpu, c);
        let v = &self.v[c as usize];
        let ran = v.sum_exec - v.prev_sum_exec;
        if ran > ideal || (ran >= self.min_gran && v.vruntime > left_vr + ideal) {
            self.resched(cpu);
        }
    }

    /// A blocked vCPU becomes runnable: on its previous pCPU if idle, else
    /// on an idle one, else on its previous one.
    pub(super) fn wake(&mut self, i: u32) {
        let prev = self.v[i as usize].cpu;
        let cpu = if self.rq[prev as usize].curr.is_none() {
            prev
        } else {
            (1..self.pcpus)
                .map(|k| (prev + k) % self.pcpus)
                .find(|&c| self.rq[c as usize].curr.is_none())
                .unwrap_or(prev)
        };
        self.enqueue_woken(i, cpu);
        match self.rq[cpu as usize].curr {
            None => self.schedule(cpu),
            Some(c) => {
                let gran = self.wakeup_gran * NICE_0 / self.v[i as usize].weight;
                if self.v[c as usize].vruntime > self.v[i as usize].vruntime + gran {
                    self.resched(cpu);
                }
            }
        }
    }

    /// Queues blocked `i` on `cpu` with CFS's sleeper placement.
    pub(super) fn enqueue_woken(&mut self, i: u32, cpu: u32) {
        let prev = self.v[i as usize].cpu;
        if cpu != prev {
            let (fm, tm) = (self.rq[prev as usize].min_vr, self.rq[cpu as usize].min_vr);
            let v = &mut self.v[i as usize];
            v.vruntime = (v.vruntime + tm).saturating_sub(fm).max(1);
            self.migrations += 1;
        }
        self.update_curr(cpu);
        let floor = self.rq[cpu as usize]
            .min_vr
            .saturating_sub(self.latency / 2);
        let v = &mut self.v[i as usize];
        v.vruntime = v.vruntime.max(floor);
        self.enqueue(i, cpu);
    }

    /// The running vCPU `i` halts: its pCPU picks another.
    pub(super) fn block(&mut self, i: u32) {
        let cpu = self.v[i as usize].cpu;
        debug_assert_eq!(self.rq[cpu as usize].curr, Some(i));
        self.update_curr(cpu);
        self.stop(i, cpu);
        let rq = &mut self.rq[cpu as usize];
        rq.curr = None;
        rq.load -= self.v[i as usize].weight;
        rq.nr -= 1;
        self.v[i as usize].state = TState::Blocked;
        self.schedule(cpu);
    }

    /// Runs queued vCPU `i` on `cpu` now, preempting whatever runs there.
    pub(super) fn run_now(&mut self, i: u32, cpu: u32) {
        self.migrate(i, cpu);
        self.rq[cpu as usize].force = Some(i);
        if self.rq[cpu as usize].curr.is_some() {
            self.resched(cpu);
        } else {
            self.schedule(cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{blank, O};
    use super::super::TState;
    use crate::lhp::config::LockKind;
    use crate::lhp::policy::Policy;

    const T: LockKind = LockKind::Ticket;
    const MS: u64 = 1_000_000;

    #[test]
    fn slice_is_the_period_shared_by_weight() {
        // One pCPU: a vCPU of weight 2048 and three of 1024, load 5120.
        // Four tasks fit the 6 ms latency (4 × 0.75 ms ≤ 6 ms).
        let mut s = blank(1, &[(1, 2048), (3, 1024)], Policy::None, T);
        for i in 0..4 {
            s.put(i, 0, O);
        }
        assert_eq!(s.slice(0, 0), 6 * MS * 2048 / 5120);
        assert_eq!(s.slice(0, 1), 6 * MS * 1024 / 5120);
        // Ten tasks do not: the period stretches to 10 × 0.75 ms.
        let mut s = blank(1, &[(10, 1024)], Policy::None, T);
        for i in 0..10 {
            s.put(i, 0, O);
        }
        assert_eq!(s.slice(0, 3), 750_000);
    }

    #[test]
    fn vruntime_grows_by_time_over_weight() {
        let mut s = blank(2, &[(1, 2048), (1, 512)], Policy::None, T);
        s.run_on(0, 0, O);
        s.run_on(1, 1, O);
        s.now = 1_000;
        s.update_curr(0);
        s.update_curr(1);
        assert_eq!(s.v[0].vruntime, O + 500, "heavier: slower");
        assert_eq!(s.v[1].vruntime, O + 2_000, "lighter: faster");
        assert_eq!((s.v[0].sum_exec, s.v[0].stats.cpu), (1_000, 1_000));
        // The queue's minimum follows its only task.
        assert_eq!(s.rq[0].min_vr, O + 500);
    }

    #[test]
    fn pick_takes_the_leftmost_unless_a_buddy_says_otherwise() {
        let mut s = blank(1, &[(4, 1024)], Policy::None, T);
        s.put(0, 0, O + 100);
        s.put(1, 0, O + 200);
        s.put(2, 0, O + 300);
        // Equal virtual runtimes: first queued, first picked.
        s.put(3, 0, O + 100);
        assert_eq!(s.queued(0), [0, 3, 1, 2]);
        assert_eq!(s.pick(0), Some(0));
        s.rq[0].skip = Some(0);
        assert_eq!(s.pick(0), Some(3), "skip buddy");
        s.rq[0].next = Some(2);
        assert_eq!(
            s.pick(0),
            Some(2),
            "next buddy within the wake-up granularity"
        );
        assert_eq!(s.pick(0), Some(0), "hints are used once");
        s.dequeue(2);
        s.put(2, 0, O + 100 + 2 * MS);
        s.rq[0].next = Some(2);
        assert_eq!(s.pick(0), Some(0), "next buddy too far ahead");
        s.rq[0].force = Some(2);
        assert_eq!(s.pick(0), Some(2), "forced, however far ahead");
    }

    #[test]
    fn tick_preempts_after_the_slice() {
        let mut s = blank(1, &[(2, 1024)], Policy::None, T);
        s.run_on(0, 0, O);
        s.put(1, 0, O + MS);
        // Two equal tasks: 3 ms each.
        s.now = 2 * MS;
        s.tick_cpu(0);
        assert_eq!(s.rq[0].curr, Some(0));
        s.now = 3 * MS + 1;
        s.tick_cpu(0);
        assert_eq!(s.rq[0].curr, Some(1));
        assert_eq!(s.v[0].state, TState::Queued);
        assert_eq!(s.v[0].vruntime, O + 3 * MS + 1);
    }

    #[test]
    fn tick_preempts_a_task_a_slice_ahead_after_the_minimum_granularity() {
        let mut s = blank(1, &[(2, 1024)], Policy::None, T);
        s.run_on(0, 0, O + 3 * MS);
        s.put(1, 0, O);
        // Ahead of the leftmost by more than its 3 ms slice, but it has
        // not had the 0.75 ms minimum yet.
        s.now = MS / 2;
        s.tick_cpu(0);
        assert_eq!(s.rq[0].curr, Some(0));
        s.now = MS;
        s.tick_cpu(0);
        assert_eq!(s.rq[0].curr, Some(1));
    }

    #[test]
    fn a_sleeper_is_placed_half_a_latency_behind_and_preempts() {
        let mut s = blank(1, &[(3, 1024)], Policy::None, T);
        s.run_on(0, 0, O + 10 * MS);
        // Slept long: brought up to min_vruntime − latency/2.
        s.v[1].vruntime = O;
        s.enqueue_woken(1, 0);
        assert_eq!(s.v[1].vruntime, O + 7 * MS);
        // Slept briefly: keeps its own.
        s.v[2].vruntime = O + 20 * MS;
        s.enqueue_woken(2, 0);
        assert_eq!(s.v[2].vruntime, O + 20 * MS);
        s.dequeue(1);
        s.v[1].state = TState::Blocked;
        // Woken 3 ms behind the running task (more than the 1 ms wake-up
        // granularity): it preempts.
        s.v[1].vruntime = O;
        s.wake(1);
        assert_eq!(s.rq[0].curr, Some(1));
    }

    #[test]
    fn a_woken_task_goes_to_its_pcpu_if_idle_else_to_an_idle_one() {
        let mut s = blank(3, &[(5, 1024)], Policy::None, T);
        s.run_on(0, 0, O);
        s.run_on(1, 1, O);
        s.v[3].cpu = 0;
        s.wake(3);
        assert_eq!((s.v[3].cpu, s.v[3].state), (2, TState::Running));
        assert_eq!(s.migrations, 1);
        // No idle pCPU left: back to its previous one, queued.
        s.v[4].cpu = 1;
        s.v[4].vruntime = O + MS;
        s.wake(4);
        assert_eq!((s.v[4].cpu, s.v[4].state), (1, TState::Queued));
    }

    #[test]
    fn an_idle_pcpu_pulls_the_leftmost_of_the_busiest_queue_keeping_its_lag() {
        let mut s = blank(3, &[(5, 1024)], Policy::None, T);
        s.run_on(0, 0, O + MS);
        s.put(1, 0, O + 3 * MS);
        s.put(2, 0, O + 2 * MS);
        s.run_on(3, 1, O);
        s.put(4, 1, O + MS);
        s.rq[2].min_vr = O + 10 * MS;
        // cpu0 has three tasks, cpu1 two: cpu2 takes cpu0's leftmost
        // queued one, 1 ms ahead of cpu0's minimum, so 1 ms ahead of its own.
        s.schedule(2);
        assert_eq!(s.rq[2].curr, Some(2));
        assert_eq!(s.v[2].vruntime, O + 11 * MS);
        assert_eq!(s.queued(0), [1]);
    }
}
