//! One repetition of `bench hash`: the table built, the threads started,
//! one window measured, the table verified (see the study's overview in
//! [`super`]).

use crate::core::clock::ticks;
use crate::core::measure::{settle_for, Hooks, Measured, Phase, Window};
use crate::core::results::{Rep, StudyMetrics};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use serde::Serialize;
use std::cell::Cell;

/// One lookup in this many is timed (two time-stamp reads); the others run
/// untimed, so the timing costs little.
pub const SAMPLE_EVERY: u64 = 64;

/// Threads report a quiescent state ([`HashTable::quiescent`]) after this
/// many operations: often enough that grace periods end within
/// microseconds, rarely enough that a flavour whose quiescent state costs a
/// memory barrier (QSBR) does not pay it on every lookup.
pub const QS_EVERY: u32 = 64;

/// Most keys a table may hold (values carry the key in 32 bits, and a
/// table of this size already takes some hundred megabytes).
pub const MAX_KEYS: u64 = 1 << 22;

/// Most buckets a table may have.
pub const MAX_BUCKETS: u64 = 1 << 22;

/// The shape of the table and the length of a repetition (the thread count
/// and the update fraction vary per point).
#[derive(Debug, Clone, Serialize)]
pub struct HashConfig {
    /// Buckets.
    pub buckets: usize,
    /// Distinct keys, `0..keys`.
    pub keys: u64,
    /// Mean elements per bucket, `keys / buckets`.
    pub chain: f64,
    /// Measured seconds per repetition.
    pub secs: f64,
    /// Pin thread i to CPU i mod cores.
    pub pin: bool,
}

impl HashConfig {
    /// A table of `buckets` buckets and `keys` keys.
    pub fn new(buckets: usize, keys: u64, secs: f64, pin: bool) -> Self {
        HashConfig {
            buckets,
            keys,
            chain: keys as f64 / buckets as f64,
            secs,
            pin,
        }
    }
}

/// The bucket of `key` in a table of `buckets` buckets.
#[inline(always)]
pub fn bucket_of(key: u64, buckets: usize) -> usize {
    // The reduction `locklab::rcu::RcuHashMap` applies to a hash, so every
    // table pays the same for it: a mask for a power of two, else a
    // division.
    if buckets & (buckets - 1) == 0 {
        key as usize & (buckets - 1)
    } else {
        (key % buckets as u64) as usize
    }
}

/// The value an update stores for `key`: the key in the high half, so a
/// reader can tell a value that belongs to another key.
#[inline(always)]
pub fn tag(key: u64, generation: u32) -> u64 {
    key << 32 | u64::from(generation)
}

/// The key a value belongs to.
#[inline(always)]
pub fn tag_key(value: u64) -> u64 {
    value >> 32
}

/// A chained hash table with one synchronization strategy.
///
/// The table is built with every key (`build`), then threads share it:
/// each makes a reader (its registration with the strategy, if any) and
/// calls `lookup` and `update` through it. `verify` walks the table when
/// the threads are gone.
pub trait HashTable: Send + Sync + Sized + 'static {
    /// A thread's handle on the table: an RCU registration or an epoch
    /// handle; `()` for the locks.
    type Reader<'t>;

    /// True for a table that must not see updates (`none`): the benchmark
    /// refuses to run it at a non-zero update fraction.
    const READ_ONLY: bool = false;

    /// A table of `buckets` buckets holding `0..keys`, each key's value
    /// `tag(key, 0)`.
    fn build(buckets: usize, keys: u64) -> Self;

    /// The calling thread's reader, made on the thread that uses it.
    fn reader(&self) -> Self::Reader<'_>;

    /// The value of `key`, if the table has it.
    ///
    /// # Safety
    /// `r` was made by this table's [`reader`](HashTable::reader). (The RCU
    /// tables rely on it to skip checking, on every lookup, that the
    /// reader's guards protect their map; see
    /// [`RcuHashMap::get_unchecked`](locklab::rcu::RcuHashMap::get_unchecked).)
    unsafe fn lookup(&self, r: &mut Self::Reader<'_>, key: u64) -> Option<u64>;

    /// Replaces the element of `key` (which the table has) by a new one
    /// holding `value`.
    fn update(&self, r: &mut Self::Reader<'_>, key: u64, value: u64);

    /// Called every [`QS_EVERY`] operations, outside any lookup or update:
    /// where a quiescent-state-based flavour reports one.
    #[inline(always)]
    fn quiescent(&self, _r: &mut Self::Reader<'_>) {}

    /// Bytes removed from the table and not yet freed (awaiting a grace
    /// period); 0 for tables that free at once.
    fn backlog_bytes(&self) -> u64 {
        0
    }

    /// Calls `f(bucket, key, value)` for every element (bucket `None` where
    /// the table does not expose its buckets). Only with no thread using
    /// the table.
    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64));
}

/// Checks that the table holds each of `0..keys` exactly once, in its
/// bucket, with a value that carries its key.
pub fn verify<T: HashTable>(table: &mut T, buckets: usize, keys: u64) -> Result<(), String> {
    let mut seen = vec![false; keys as usize];
    let mut problems: Vec<String> = Vec::new();
    let mut complain = |p: String| {
        if problems.len() < 3 {
            problems.push(p);
        }
    };
    table.visit(&mut |bucket, key, value| {
        if key >= keys {
            complain(format!("a foreign key {key}"));
            return;
        }
        if std::mem::replace(&mut seen[key as usize], true) {
            complain(format!("key {key} twice"));
        }
        if let Some(b) = bucket.filter(|&b| b != bucket_of(key, buckets)) {
            complain(format!("key {key} in bucket {b}"));
        }
        if tag_key(value) != key {
            complain(format!(
                "key {key} holds value {value:#x} of key {}",
                tag_key(value)
            ));
        }
    });
    let missing = seen.iter().filter(|s| !**s).count();
    if missing > 0 {
        let first = seen.iter().position(|s| !*s).unwrap_or(0);
        problems.insert(0, format!("{missing} keys missing (first: {first})"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// What one thread did in the window.
struct ThreadResult {
    /// Its window's latencies, and as operations its lookups and updates.
    measured: Measured,
    /// Lookups and updates in the window (each batch's counted by the
    /// share of it that fell in the window).
    lookups: u64,
    updates: u64,
    /// Lookups that missed or read a foreign value, over the whole run.
    misses: u64,
}

/// Counts a lookup that missed, out of the measured loop's way.
#[cold]
#[inline(never)]
fn missed(misses: &mut u64) {
    *misses += 1;
}

/// One thread's operations from the window's gate until its closing. What
/// the thread allocates for itself (its reader registration, its
/// histogram) it allocates before the window opens, so the heap figure
/// counts only the table's.
fn worker<T: HashTable>(
    table: &T,
    keys: u64,
    update_pct: u32,
    seed: u64,
    window: &Window,
    index: usize,
) -> ThreadResult {
    let mut r = table.reader();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rec = window.enter(index);
    // The loop keeps its state in registers, so that what an operation
    // costs is the table's and not the harness's: two counters (updates
    // are `ops - lookups`, and an update's generation is its number), a
    // miss counted in a cold call (it never happens in a correct table),
    // and the clock read once per batch of `QS_EVERY` operations, which
    // the window counts by the share of the batch it covers. A counter
    // spilled to the stack would put a store-to-load round trip on every
    // iteration, and the tables whose lookups need the most registers
    // would pay it.
    let (mut ops, mut lookups, mut misses) = (0u64, 0u64, 0u64);
    let (mut in_lookups, mut in_updates) = (0.0f64, 0.0f64);
    let mut t_batch = ticks();
    loop {
        let batch_lookups = lookups;
        for _ in 0..QS_EVERY {
            let x = rng.next_u64();
            // Multiply-shift instead of a division: the low half picks the
            // key uniformly from 0..keys, the high half the operation.
            let key = ((x & 0xffff_ffff) * keys) >> 32;
            if ((x >> 32) * 100) >> 32 < u64::from(update_pct) {
                let generation = (ops - lookups) as u32 + 1;
                table.update(&mut r, key, tag(key, generation));
            } else {
                let value = if lookups % SAMPLE_EVERY == 0 {
                    let t0 = ticks();
                    // SAFETY: `r` is this table's reader (made above).
                    let v = unsafe { table.lookup(&mut r, key) };
                    rec.sample(t0, ticks());
                    v
                } else {
                    // SAFETY: as above.
                    unsafe { table.lookup(&mut r, key) }
                };
                if value.is_none_or(|v| tag_key(v) != key) {
                    missed(&mut misses);
                }
                lookups += 1;
            }
            ops += 1;
        }
        table.quiescent(&mut r);
        let t = ticks();
        let share = rec.share(t_batch, t);
        let batch_lookups = lookups - batch_lookups;
        in_lookups += batch_lookups as f64 * share;
        in_updates += (u64::from(QS_EVERY) - batch_lookups) as f64 * share;
        t_batch = t;
        if rec.phase(t) == Phase::Closed {
            break;
        }
    }
    let (lookups, updates) = (in_lookups.round() as u64, in_updates.round() as u64);
    let mut measured = rec.finish();
    measured.ops = lookups + updates;
    ThreadResult {
        measured,
        lookups,
        updates,
        misses,
    }
}

/// One repetition of strategy `T` at `threads` threads and `update_pct` %
/// updates, on a fresh table, measured over one window
/// ([`crate::core::measure`]); the reclamation backlog and the heap in use
/// ([`crate::core::heap`]) are sampled about every millisecond while it is open.
/// `Err` names what the strategy broke: a lookup that missed, or a table
/// that lost, doubled or garbled a key.
pub fn run_rep<T: HashTable>(
    cfg: &HashConfig,
    threads: u32,
    update_pct: u32,
) -> Result<Rep, String> {
    if T::READ_ONLY && update_pct > 0 {
        return Err(format!(
            "an unsynchronized table cannot take updates ({update_pct} % asked)"
        ));
    }
    let mut table = T::build(cfg.buckets, cfg.keys);
    let n = threads as usize;
    let window = Window::new(n);
    let ncpu = crate::core::machine::cpus();
    let (span, backlog_peak_bytes, mem_peak_bytes, results) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (table, window) = (&table, &window);
                std::thread::Builder::new()
                    .name(format!("hash-{i}"))
                    .spawn_scoped(s, move || {
                        if cfg.pin {
                            // Best effort: an unpinnable thread runs where it may.
                            crate::core::machine::pin(i % ncpu);
                        }
                        let seed = 0x4a54_u64 ^ (i as u64) << 20 ^ u64::from(update_pct) << 40;
                        worker(table, cfg.keys, update_pct, seed, window, i)
                    })
                    .expect("spawning a benchmark thread")
            })
            .collect();
        // The heap in use when the window opens (the table built, every
        // reader registered), and the peaks of the heap and of the
        // reclamation backlog while it is open.
        let (heap0, heap_peak, backlog) = (Cell::new(0u64), Cell::new(0u64), Cell::new(0u64));
        let sample = || {
            backlog.set(backlog.get().max(table.backlog_bytes()));
            heap_peak.set(heap_peak.get().max(crate::core::heap::in_use()));
        };
        let mut at_open = || {
            heap0.set(crate::core::heap::in_use());
            sample();
        };
        let (mut during, mut at_close) = (sample, sample);
        let span = window.measure(
            settle_for(cfg.secs),
            cfg.secs,
            Hooks {
                at_open: Some(&mut at_open),
                at_close: Some(&mut at_close),
                during: Some(&mut during),
            },
        );
        let results: Vec<ThreadResult> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect();
        (
            span,
            backlog.get(),
            Some(heap_peak.get().saturating_sub(heap0.get())),
            results,
        )
    });
    let misses: u64 = results.iter().map(|r| r.misses).sum();
    if misses > 0 {
        return Err(format!(
            "{misses} lookups of always-present keys missed or read a foreign element"
        ));
    }
    verify(&mut table, cfg.buckets, cfg.keys)?;
    drop(table);

    let lookups = results.iter().map(|r| r.lookups).sum();
    let updates = results.iter().map(|r| r.updates).sum();
    let measured: Vec<Measured> = results.into_iter().map(|r| r.measured).collect();
    let metrics = HashMetrics {
        lookups,
        updates,
        backlog_peak_bytes,
        mem_peak_bytes,
    };
    let mut rep = crate::core::sweep::rep_of(&span, &measured)?;
    rep.set_metrics(&metrics);
    Ok(rep)
}

/// One repetition's hash-table measurements beyond throughput (see
/// [`super`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashMetrics {
    /// Lookups done by all threads.
    pub lookups: u64,
    /// Updates (replacements of an element) done by all threads.
    pub updates: u64,
    /// Peak of the bytes removed from the table but awaiting a grace period
    /// (sampled about every millisecond); 0 for strategies that free at once.
    pub backlog_peak_bytes: u64,
    /// Peak growth of the heap in use over the repetition's start (its
    /// table built), bytes, sampled about every millisecond by the lab's
    /// counting allocator (`None` in runs stored before it counted).
    pub mem_peak_bytes: Option<u64>,
}

impl StudyMetrics for HashMetrics {
    const KEY: &'static str = "hash";
}

#[cfg(test)]
mod tests {
    #[cfg(locklab_liburcu)]
    use super::super::urcu;
    use super::super::{epoch, peers, strategies, tables};
    use super::*;
    use strategies::Strategy;

    fn cfg(buckets: usize, keys: u64) -> HashConfig {
        HashConfig::new(buckets, keys, 0.05, false)
    }

    /// Every strategy of this build, plus `bucket-rw` and `global-rw` over
    /// every reader-writer lock of the registry.
    fn every_strategy() -> Vec<Strategy> {
        let mut v = strategies::all();
        for rw in crate::core::registry::rw_all() {
            for base in ["global-rw", "bucket-rw"] {
                v.extend(strategies::parse(&format!("{base}({})", rw.info.name)).unwrap());
            }
        }
        v.dedup_by(|a, b| a.name == b.name);
        v
    }

    /// The correctness check of every strategy: threads (more than the
    /// cores) look up and replace elements of a small table with long
    /// chains, so that updates and lookups meet in the same buckets all the
    /// time; every lookup must find its key with its own value, and the
    /// table must afterwards hold every key once in its bucket
    /// (`run_rep` checks both and returns `Err` otherwise).
    ///
    /// A broken table can also send a lookup round a cycle for ever: each
    /// run has a watchdog, and a run that outlives it fails the test (its
    /// threads are left spinning until the test process ends).
    #[test]
    fn every_strategy_keeps_every_key_under_concurrent_updates() {
        let threads = 4;
        for s in every_strategy() {
            let pct = if s.read_only { 0 } else { 50 };
            let (tx, rx) = std::sync::mpsc::channel();
            let run = s.run;
            std::thread::spawn(move || {
                let _ = tx.send(run(&cfg(8, 64), threads, pct));
            });
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("{}: hung (no result within 30 s)", s.name))
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
            let h = r.metrics_of::<HashMetrics>().expect("hash metrics");
            assert!(h.lookups > 0, "{}: no lookups", s.name);
            assert_eq!(h.updates > 0, pct > 0, "{}", s.name);
            assert_eq!(r.total_ops, h.lookups + h.updates);
            assert_eq!(r.thread_ops.len(), threads as usize);
        }
    }

    #[test]
    fn updates_replace_values_and_every_key_stays_once() {
        fn check<T: HashTable>() {
            let (buckets, keys) = (7, 40);
            let mut t = T::build(buckets, keys);
            {
                let mut r = t.reader();
                // `r` is `t`'s reader: the contract of every lookup below.
                let lookup = |r: &mut T::Reader<'_>, k| {
                    // SAFETY: `r` is `t`'s reader (made just above).
                    unsafe { t.lookup(r, k) }
                };
                for k in 0..keys {
                    assert_eq!(lookup(&mut r, k), Some(tag(k, 0)));
                }
                assert_eq!(lookup(&mut r, keys), None);
                for k in (0..keys).step_by(3) {
                    t.update(&mut r, k, tag(k, 9));
                    t.quiescent(&mut r);
                }
                for k in 0..keys {
                    let g = if k % 3 == 0 { 9 } else { 0 };
                    assert_eq!(lookup(&mut r, k), Some(tag(k, g)), "key {k}");
                }
            }
            verify(&mut t, buckets, keys).unwrap();
        }
        check::<tables::Global<tables::SpinLock>>();
        check::<tables::PerBucket<tables::SpinLock>>();
        check::<tables::Refcnt>();
        check::<tables::SeqTable>();
        check::<epoch::EpochTable>();
        check::<peers::DashTable>();
        #[cfg(locklab_liburcu)]
        {
            check::<urcu::UrcuMemb>();
            check::<urcu::UrcuQsbr>();
        }
    }

    /// A table that hides, doubles, misplaces or garbles keys, for the
    /// checker itself.
    struct Fake(Vec<(Option<usize>, u64, u64)>);

    impl HashTable for Fake {
        type Reader<'t> = ();
        fn build(_: usize, _: u64) -> Self {
            Fake(Vec::new())
        }
        fn reader(&self) {}
        unsafe fn lookup(&self, _: &mut (), _: u64) -> Option<u64> {
            None
        }
        fn update(&self, _: &mut (), _: u64, _: u64) {}
        fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
            for &(b, k, v) in &self.0 {
                f(b, k, v);
            }
        }
    }

    #[test]
    fn verify_catches_lost_doubled_misplaced_and_garbled_keys() {
        let good = |k: u64| (Some(bucket_of(k, 2)), k, tag(k, 1));
        let mut t = Fake((0..4).map(good).collect());
        verify(&mut t, 2, 4).unwrap();
        t.0.pop();
        assert!(verify(&mut t, 2, 4)
            .unwrap_err()
            .contains("1 keys missing (first: 3)"));
        t.0.push(good(0));
        let e = verify(&mut t, 2, 4).unwrap_err();
        assert!(e.contains("key 0 twice"), "{e}");
        t.0 = vec![
            good(0),
            good(1),
            (Some(1), 2, tag(2, 0)),
            (None, 3, tag(1, 0)),
        ];
        let e = verify(&mut t, 2, 4).unwrap_err();
        assert!(e.contains("key 2 in bucket 1"), "{e}");
        assert!(e.contains("holds value"), "{e}");
        t.0 = (0..5).map(good).collect();
        assert!(verify(&mut t, 2, 4).unwrap_err().contains("foreign key 4"));
    }

    #[test]
    fn the_unsynchronized_table_refuses_updates() {
        let e = run_rep::<tables::Unsync>(&cfg(4, 8), 1, 10).unwrap_err();
        assert!(e.contains("cannot take updates"), "{e}");
    }
}
