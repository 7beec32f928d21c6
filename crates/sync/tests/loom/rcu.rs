//! The RCU grace-period core under loom, in its fenced form (readers
//! `swap` their record, the scan reads it with `fetch_add(0)`; there is no
//! `membarrier` under loom).
//!
//! The protected data are loom `UnsafeCell`s: an updater publishes a new
//! version (an index in a loom atomic), waits for a grace period and then
//! *poisons* the old cell, a write standing for the free. A reader that can
//! still reach the old cell makes that write a data race, which loom
//! reports ("Causality violation: Concurrent read and write accesses to
//! `UnsafeCell`"), or sees the poison and fails its assertion. Readers
//! register in their own threads, so registering during a grace period is
//! explored too. In the three-thread models the main thread is an updater:
//! a spawned thread costs no preemption to start, and with the main thread
//! as the reader bound 2 did not reach the schedule that one breakage below
//! (the grace period's first `seq` increment made `Relaxed`) needs. Every
//! model ends in well under a second at bound 2 (the three-thread ones in
//! about 2 s at bound 3).
//!
//! Under loom the reader's leaving and quiescent-state stores are `swap`s
//! (see "Under loom" in `rcu/gp.rs`): with plain stores, every model in
//! which a grace period waits for a reader failed with "Model exceeded
//! maximum number of branches", loom letting the scan's `fetch_add(0)` read
//! its own previous write for ever.
//!
//! Teeth, checked by breaking `rcu/gp.rs` (the last but one: `rcu/mod.rs`)
//! on purpose once each, and then restoring it. "The reader models" are
//! `rcu_reader_vs_synchronize`, `rcu_two_sections_vs_synchronize`,
//! `rcu_nested_sections`, `qsbr_quiescent_state_between_sections`,
//! `qsbr_offline_and_back`, `qsbr_registered_updater`,
//! `rcu_cond_synchronize_protects`, and "the shared models"
//! `rcu_two_updaters_share_grace_periods` and `rcu_cond_synchronize_shared`;
//! unless said otherwise each failed with the causality violation on a
//! poisoned cell:
//! - `enter` publishing with `store(g, Release)` instead of the `swap`: the
//!   reader models and the shared models (store buffering: the scan reads
//!   the old 0, the reader reads the old index), and
//!   `rcu_cookie_in_section_not_done` with "cookie complete inside its
//!   section";
//! - `passed` reading with `load(Relaxed)` instead of `fetch_add(0,
//!   AcqRel)`: the reader models and the shared models;
//! - `snapshot` taking the cookie from `load(Relaxed)` (or `load(Acquire)`,
//!   or a `Relaxed` `fetch_add(0)`) instead of `fetch_add(0, AcqRel)`: the
//!   shared models only (the other updater's grace period covers the
//!   cookie, but the unlink is not ordered before its advance, so the
//!   reader enters with the new counter and reads the old index); the
//!   one-updater models cannot see it, the updater ordering its own steps;
//! - the grace period not waiting at all (`while false && !passed`): as
//!   the `store` in `enter`;
//! - `leave` with `Relaxed` instead of `Release`: the reader models and the
//!   shared models;
//! - `passed` ignoring `c == 0` (waiting for idle readers): every model
//!   with a registered reader, `rcu_idle_reader_does_not_block` and
//!   `qsbr_offline_reader_does_not_block` included, with "Model exceeded
//!   maximum number of branches" (loom's report of a spin that never ends);
//!   only `rcu_cookie_done_after_synchronize`, which has no reader, passed;
//! - the QSBR quiescent-state store `Relaxed`:
//!   `qsbr_quiescent_state_between_sections` and `qsbr_registered_updater`;
//! - `gp_ctr`'s advance, or `enter`'s load of it, `Relaxed`: the one-updater
//!   reader models;
//! - the grace period's first `seq` increment `Relaxed` (it must acquire the
//!   cookies taken before it), its last one `Relaxed`, or `done`'s load
//!   `Relaxed`: the shared models;
//! - `passed`'s `fetch_add(0)` only `Acquire` or only `Release`, or
//!   `enter`'s `swap` only `Release`: the reader models and the shared
//!   models;
//! - the nesting count ignored, an inner guard's drop leaving the section:
//!   `rcu_nested_sections`, and `rcu_read_outer_with_a_nested_section` on
//!   its assertion that the section is still open (as it also failed with
//!   `read_outer` not entering the section at all);
//! - the cookie of a snapshot taken while a grace period runs being that
//!   grace period's end (`(s + 2) & !1` instead of `(s + 3) & !1`): the
//!   shared models, and `rcu_cookie_in_section_not_done` with "cookie
//!   complete inside its section".
//!
//! One weakening passes, and rightly: `enter`'s `swap` with `Acquire`
//! instead of `AcqRel`. Its `Acquire` half is what the argument uses (the
//! scan's write that the swap reads happens before the reader's loads);
//! nothing reads the swap expecting the reader's earlier accesses to be
//! ordered before it: a scan that reads the new copy (at least `g`) passes
//! because the reader's `Acquire` load of `gp_ctr` saw the advance, and a
//! previous section's accesses stay ordered by that section's `Release`
//! store of 0, whose release sequence the swap (a read-modify-write)
//! continues.

use crate::harness;
use locklab::rcu::{Domain, Flavor, General, Qsbr, QuiescentState, Rcu};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Release};
use loom::sync::Arc;

const POISON: u64 = u64::MAX;

/// A published version of the data: `cur` indexes `cells`; version `i`
/// holds `10 * (i + 1)` until it is poisoned.
struct Versioned {
    cur: AtomicUsize,
    cells: [UnsafeCell<u64>; 2],
}

impl Versioned {
    fn new() -> Self {
        Versioned {
            cur: AtomicUsize::new(0),
            cells: [UnsafeCell::new(10), UnsafeCell::new(0)],
        }
    }

    /// The reader's step inside a read-side section: follow the published
    /// index and read the cell. Returns the index read.
    fn read(&self) -> usize {
        let i = self.cur.load(Acquire);
        self.read_at(i);
        i
    }

    /// Reads version `i` again (it must still be protected).
    fn read_at(&self, i: usize) {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let v = self.cells[i].with(|p| unsafe { *p });
        assert_ne!(v, POISON, "read version {i} after it was freed");
        assert_eq!(v, 10 * (i as u64 + 1), "version {i} not initialized");
    }

    /// Initializes version `i` and publishes it; returns the old index.
    fn publish(&self, i: usize) -> usize {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.cells[i].with_mut(|p| unsafe { *p = 10 * (i as u64 + 1) });
        let old = self.cur.load(Acquire);
        self.cur.store(i, Release);
        old
    }

    /// The "free" of version `i`, after a grace period.
    fn poison(&self, i: usize) {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.cells[i].with_mut(|p| unsafe { *p = POISON });
    }
}

/// A reader thread runs `reader` against a fresh (fenced) domain of
/// flavour `F` and the data; meanwhile the updater publishes version 1,
/// waits with `synchronize` and frees the old version.
fn reader_vs_synchronize<F: Flavor>(reader: fn(&Domain<F>, &Versioned)) {
    harness::builder().check(move || {
        let rcu = Domain::<F>::builder().fenced(true).build();
        let data = Arc::new(Versioned::new());
        let (d, r) = (data.clone(), rcu.clone());
        let t = loom::thread::spawn(move || reader(&r, &d));
        let old = data.publish(1);
        rcu.synchronize();
        data.poison(old);
        t.join().unwrap();
    });
}

// ---------------------------------------------------------------------------
// 1. General flavour

/// A reader's section against an updater that publishes, synchronizes and
/// frees the old version.
#[test]
fn rcu_reader_vs_synchronize() {
    reader_vs_synchronize::<General>(|r, d| {
        let me = r.register();
        let g = me.read();
        d.read();
        drop(g);
    });
}

/// Two sections in a row, the second of which may start during the grace
/// period: each reads the version it found.
#[test]
fn rcu_two_sections_vs_synchronize() {
    reader_vs_synchronize::<General>(|r, d| {
        let me = r.register();
        let mut last = 0;
        for _ in 0..2 {
            let _g = me.read();
            let i = d.read();
            assert!(i >= last, "went back from version {last} to {i}");
            last = i;
        }
    });
}

/// Nesting: an outer and an inner guard, the inner dropped first; the
/// version found under the outer guard stays protected after the inner one
/// is gone.
#[test]
fn rcu_nested_sections() {
    reader_vs_synchronize::<General>(|r, d| {
        let me = r.register();
        let outer = me.read();
        let i = d.read();
        let inner = me.read();
        assert!(me.in_read_section());
        d.read();
        drop(inner);
        assert!(me.in_read_section());
        d.read_at(i);
        drop(outer);
        assert!(!me.in_read_section());
    });
}

/// An outermost section through the exclusive handle (`read_outer`, which
/// skips the nesting check at both ends) with a section nested inside it:
/// what either guard found stays protected until the outer one ends.
#[test]
fn rcu_read_outer_with_a_nested_section() {
    reader_vs_synchronize::<General>(|r, d| {
        let mut me = r.register();
        let outer = me.read_outer();
        let i = d.read();
        let inner = outer.reader().read();
        d.read();
        drop(inner);
        d.read_at(i);
        assert!(outer.reader().in_read_section());
        drop(outer);
        assert!(!me.in_read_section());
    });
}

// ---------------------------------------------------------------------------
// 2. QSBR

/// A QSBR reader reads, reports a quiescent state, reads again, and goes
/// offline (drops its handle); the updater frees after `synchronize`.
#[test]
fn qsbr_quiescent_state_between_sections() {
    reader_vs_synchronize::<QuiescentState>(|r, d| {
        let mut me = r.register();
        {
            let _g = me.read();
            d.read();
        }
        me.quiescent_state();
        {
            let _g = me.read();
            d.read();
        }
    });
}

/// A QSBR reader reads, goes offline and back online, and reads again.
#[test]
fn qsbr_offline_and_back() {
    reader_vs_synchronize::<QuiescentState>(|r, d| {
        let mut me = r.register();
        {
            let _g = me.read();
            d.read();
        }
        drop(me.offline());
        {
            let _g = me.read();
            d.read();
        }
    });
}

/// The updater is itself a registered QSBR thread and waits with
/// `QsbrReader::synchronize` (offline meanwhile, so it does not wait for
/// itself); then it reads, online again.
#[test]
fn qsbr_registered_updater() {
    harness::builder().check(|| {
        let rcu = Qsbr::builder().fenced(true).build();
        let data = Arc::new(Versioned::new());
        let (d, r) = (data.clone(), rcu.clone());
        let reader = loom::thread::spawn(move || {
            let mut me = r.register();
            {
                let _g = me.read();
                d.read();
            }
            me.quiescent_state();
        });
        let mut me = rcu.register();
        let old = data.publish(1);
        me.synchronize();
        data.poison(old);
        {
            let _g = me.read();
            data.read();
        }
        drop(me);
        reader.join().unwrap();
    });
}

// ---------------------------------------------------------------------------
// 3. Shared grace periods

/// Two updaters, each publishing into its own structure, wait
/// concurrently while a reader reads both; the main thread is the first
/// updater (so that the updaters' steps interleave within the preemption
/// bound) and `wait` is how the second one waits. An updater whose cookie a
/// grace period run by the other covers returns without running its own:
/// its unlink must still be ordered before that grace period.
fn two_updaters_one_reader(wait: fn(&Rcu)) {
    harness::builder().check(move || {
        let rcu = Rcu::builder().fenced(true).build();
        let data = Arc::new([Versioned::new(), Versioned::new()]);
        let (d, r) = (data.clone(), rcu.clone());
        let reader = loom::thread::spawn(move || {
            let me = r.register();
            let _g = me.read();
            d[0].read();
            d[1].read();
        });
        let (d, r) = (data.clone(), rcu.clone());
        let other = loom::thread::spawn(move || {
            let old = d[1].publish(1);
            wait(&r);
            d[1].poison(old);
        });
        let old = data[0].publish(1);
        rcu.synchronize();
        data[0].poison(old);
        reader.join().unwrap();
        other.join().unwrap();
        assert!(rcu.grace_periods() >= 1);
    });
}

#[test]
fn rcu_two_updaters_share_grace_periods() {
    two_updaters_one_reader(|r| r.synchronize());
}

// ---------------------------------------------------------------------------
// 4. Polling

/// A cookie taken inside a read-side section is not complete while the
/// section is open, however many grace periods run meanwhile.
#[test]
fn rcu_cookie_in_section_not_done() {
    harness::builder().check(|| {
        let rcu = Rcu::builder().fenced(true).build();
        let r = rcu.clone();
        let updater = loom::thread::spawn(move || {
            r.synchronize();
            r.synchronize();
        });
        let me = rcu.register();
        let g = me.read();
        let c = rcu.get_state();
        assert!(!rcu.poll(c), "cookie complete at once");
        loom::thread::yield_now();
        assert!(!rcu.poll(c), "cookie complete inside its section");
        drop(g);
        updater.join().unwrap();
    });
}

/// A cookie taken before `synchronize` is complete after it, also when the
/// grace period that completes it was another thread's.
#[test]
fn rcu_cookie_done_after_synchronize() {
    harness::builder().check(|| {
        let rcu = Rcu::builder().fenced(true).build();
        let r = rcu.clone();
        let other = loom::thread::spawn(move || r.synchronize());
        let c = rcu.get_state();
        let p = rcu.start_poll();
        assert!(c <= p);
        rcu.synchronize();
        assert!(rcu.poll(c), "cookie from before synchronize not complete");
        assert!(rcu.poll(p), "start_poll cookie not complete");
        other.join().unwrap();
    });
}

/// `cond_synchronize` on a cookie taken after the unlink protects like
/// `synchronize`; a second call with the same cookie returns at once.
#[test]
fn rcu_cond_synchronize_protects() {
    harness::builder().check(|| {
        let rcu = Rcu::builder().fenced(true).build();
        let data = Arc::new(Versioned::new());
        let (d, r) = (data.clone(), rcu.clone());
        let reader = loom::thread::spawn(move || {
            let me = r.register();
            let _g = me.read();
            d.read();
        });
        let old = data.publish(1);
        let c = rcu.start_poll();
        if !rcu.poll(c) {
            rcu.cond_synchronize(c);
        }
        assert!(rcu.poll(c));
        let before = rcu.grace_periods();
        rcu.cond_synchronize(c);
        assert_eq!(
            rcu.grace_periods(),
            before,
            "a done cookie ran a grace period"
        );
        data.poison(old);
        reader.join().unwrap();
    });
}

/// The same with the second updater waiting by `cond_synchronize` on a
/// cookie it took after its unlink.
#[test]
fn rcu_cond_synchronize_shared() {
    two_updaters_one_reader(|r| r.cond_synchronize(r.get_state()));
}

// ---------------------------------------------------------------------------
// 5. Idle readers do not hold grace periods

/// A registered reader outside any section waits for the updater's grace
/// period to end; the grace period must not wait for it (else neither
/// thread ever finishes and loom reports it).
#[test]
fn rcu_idle_reader_does_not_block() {
    harness::builder().check(|| {
        let rcu = Rcu::builder().fenced(true).build();
        let done = Arc::new(AtomicBool::new(false));
        let (r, dn) = (rcu.clone(), done.clone());
        let reader = loom::thread::spawn(move || {
            let me = r.register();
            drop(me.read());
            while !dn.load(Acquire) {
                loom::thread::yield_now();
            }
            drop(me);
        });
        rcu.synchronize();
        done.store(true, Release);
        reader.join().unwrap();
    });
}

/// The same for an offline QSBR reader.
#[test]
fn qsbr_offline_reader_does_not_block() {
    harness::builder().check(|| {
        let rcu = Qsbr::builder().fenced(true).build();
        let done = Arc::new(AtomicBool::new(false));
        let (r, dn) = (rcu.clone(), done.clone());
        let reader = loom::thread::spawn(move || {
            let mut me = r.register();
            me.quiescent_state();
            let off = me.offline();
            while !dn.load(Acquire) {
                loom::thread::yield_now();
            }
            drop(off);
        });
        rcu.synchronize();
        done.store(true, Release);
        reader.join().unwrap();
    });
}
