//! One repetition of `bench condvar`: P producers and C consumers move
//! items through one bounded queue ([`super::queues`]) for a measured
//! window.
//!
//! Producer `p` puts the items `p, p + P, p + 2P, …` (so every item says
//! who made it and its place in that producer's sequence), each as soon as
//! the previous one is in (or after `producer_sleep_ns` of sleep, where
//! given); consumers take items as fast as they come. The threads start,
//! settle and are measured through [`crate::core::measure`]: an item
//! counts in the window where its consumer's `pop` returned, the
//! repetition's rate is the items taken in the window over the window's
//! length, and the CPU time of every producer and consumer is read over the
//! same window. Each consumer's count is kept (the spread between
//! consumers is Jain's index of them), and how often pushes and pops had to
//! wait.
//!
//! # Every item exactly once
//!
//! The window closes on a running queue; the workers keep going until the
//! controller stops the queue. Each producer sums what it put (a count and
//! a wrapping sum of a 64-bit mix of each item, SplitMix64's finalizer:
//! Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", OOPSLA 2014), each consumer what it took, and the
//! controller what was left in the queue at the end. Counts and sums must
//! agree: an item lost, duplicated or made up fails the repetition (a lost
//! and a duplicated item leave the count equal but move the sum by the
//! difference of their mixes). Since the queue is one FIFO and each
//! producer puts its items in order, every consumer must also see each
//! producer's items in increasing order; one that does not fails the
//! repetition at once.
//!
//! # No lost wake-up
//!
//! A lost wake-up in a bounded queue ends with everybody asleep: the queue
//! full, the producers waiting for room, and a consumer asleep that should
//! have been woken (or the reverse, empty). Nothing wakes them until the
//! controller stops the queue. So after the window closes, and before it
//! stops the queue, the controller waits for one more item to be taken,
//! up to [`stall_limit`] (2 s, more with slow producers); if none is, the
//! repetition fails. Then it stops the queue and repeats the stop (which
//! wakes every waiter) until every worker has returned; workers that do
//! not return within the same limit are left behind (they hold only a
//! reference to the shared state) and the repetition fails too, so a
//! broken condition variable ends the run instead of hanging it.

use super::queues::{BoundedQueue, Signal};
use crate::core::clock::ticks;
use crate::core::measure::{settle_for, Hooks, Measured, Phase, Recorder, Window};
use crate::core::results::{Rep, StudyMetrics};
use crossbeam_utils::CachePadded;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The name its points are stored under.
pub const BENCH: &str = "condvar";

/// How many producers and consumers share the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// Producer threads.
    pub producers: u32,
    /// Consumer threads.
    pub consumers: u32,
}

impl Pair {
    /// Threads in all.
    pub fn threads(self) -> u32 {
        self.producers + self.consumers
    }
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.producers, self.consumers)
    }
}

/// Parameters of one repetition besides the pairing.
#[derive(Debug, Clone, Serialize)]
pub struct CondvarConfig {
    /// Items the queue holds at most.
    pub capacity: usize,
    /// Where pushes and pops notify: under the mutex or after it.
    pub signal: Signal,
    /// Each producer sleeps this long after each item, ns (0: never).
    pub producer_sleep_ns: u64,
    /// Measured seconds per repetition.
    pub secs: f64,
}

/// What only this study measures of a repetition (under the key
/// `condvar`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CondvarMetrics {
    /// Items each producer put in the window (a push counts where it
    /// returned).
    pub produced: Vec<u64>,
    /// Waits on "not full" of the pushes that returned in the window.
    pub producer_waits: u64,
    /// Waits on "not empty" of the pops that returned in the window.
    pub consumer_waits: u64,
    /// Items put over the whole repetition (warm-up, window and after).
    pub put: u64,
    /// Items taken over the whole repetition, those left in the queue at
    /// the end included: equal to `put`, or the repetition failed.
    pub taken: u64,
    /// Of them, left in the queue when it stopped.
    pub drained: u64,
}

impl StudyMetrics for CondvarMetrics {
    const KEY: &'static str = "condvar";
}

/// How long the controller waits for an item to move before it calls the
/// queue stuck: 2 s, plus four of a producer's sleeps.
pub fn stall_limit(cfg: &CondvarConfig) -> Duration {
    Duration::from_secs(2) + Duration::from_nanos(cfg.producer_sleep_ns.saturating_mul(4))
}

/// SplitMix64's finalizer: a bijection of `u64` that spreads every bit of
/// an item over the whole word, so that sums of mixes tell item sets
/// apart where plain sums may not.
pub fn mix(v: u64) -> u64 {
    let mut z = v.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A multiset of items in short: how many, and the wrapping sum of their
/// mixes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Items.
    pub count: u64,
    /// Wrapping sum of [`mix`] of each.
    pub mixed: u64,
}

impl Tally {
    /// Adds one item.
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.count += 1;
        self.mixed = self.mixed.wrapping_add(mix(v));
    }

    /// Two tallies together.
    pub fn merge(self, o: Tally) -> Tally {
        Tally {
            count: self.count + o.count,
            mixed: self.mixed.wrapping_add(o.mixed),
        }
    }
}

/// `Err` unless what was taken is what was put.
pub fn exactly_once(put: Tally, taken: Tally) -> Result<(), String> {
    if put == taken {
        return Ok(());
    }
    let what = match taken.count.cmp(&put.count) {
        std::cmp::Ordering::Less => format!("{} lost", put.count - taken.count),
        std::cmp::Ordering::Greater => format!("{} too many", taken.count - put.count),
        std::cmp::Ordering::Equal => "as many, but not the same ones".to_string(),
    };
    Err(format!(
        "items were not delivered exactly once: {} put, {} taken ({what}): items lost or \
         duplicated",
        put.count, taken.count
    ))
}

/// The state every worker and the controller share; owned by all (not
/// borrowed from the controller's stack), so that workers stuck in a
/// broken queue can be left behind.
struct Shared<Q> {
    queue: CachePadded<Q>,
    window: Window,
    /// Items each consumer has taken so far (any phase), for the
    /// controller's check that items still move; each on its own line.
    taken: Vec<CachePadded<AtomicU64>>,
}

/// What a producer reports.
struct ProducerOut {
    measured: Measured,
    put: Tally,
    waits: u64,
}

/// What a consumer reports.
struct ConsumerOut {
    measured: Measured,
    taken: Tally,
    waits: u64,
    /// The first item seen out of its producer's order, if any.
    disorder: Option<String>,
}

fn producer<Q: BoundedQueue>(
    s: &Shared<Q>,
    cfg: &CondvarConfig,
    pair: Pair,
    p: u32,
) -> ProducerOut {
    let mut rec: Recorder<'_> = s.window.enter(p as usize);
    let sleep = Duration::from_nanos(cfg.producer_sleep_ns);
    let (mut put, mut waits) = (Tally::default(), 0u64);
    let mut seq = 0u64;
    loop {
        let item = seq * u64::from(pair.producers) + u64::from(p);
        let t0 = ticks();
        let Some(w) = s.queue.push(item, cfg.signal) else {
            break;
        };
        let t1 = ticks();
        put.add(item);
        seq += 1;
        if rec.phase(t1) == Phase::Open {
            waits += u64::from(w);
        }
        // Past the closing the count stops, but the producer goes on until
        // the queue stops: the controller's check that items still move
        // needs it.
        rec.op(t0, t1);
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }
    ProducerOut {
        measured: rec.finish(),
        put,
        waits,
    }
}

fn consumer<Q: BoundedQueue>(
    s: &Shared<Q>,
    cfg: &CondvarConfig,
    pair: Pair,
    c: u32,
) -> ConsumerOut {
    let mut rec = s.window.enter((pair.producers + c) as usize);
    let (mut taken, mut waits) = (Tally::default(), 0u64);
    // The next sequence number each producer's items may have at least.
    let mut next = vec![0u64; pair.producers as usize];
    let mut disorder = None;
    loop {
        let t0 = ticks();
        let Some((item, w)) = s.queue.pop(cfg.signal) else {
            break;
        };
        let t1 = ticks();
        taken.add(item);
        s.taken[c as usize].store(taken.count, Ordering::Relaxed);
        let (p, seq) = (
            (item % u64::from(pair.producers)) as usize,
            item / u64::from(pair.producers),
        );
        if seq < next[p] && disorder.is_none() {
            disorder = Some(format!(
                "consumer {c} took producer {p}'s item {seq} after its item {}: the queue \
                 reordered or duplicated items",
                next[p] - 1
            ));
        }
        next[p] = next[p].max(seq + 1);
        if rec.phase(t1) == Phase::Open {
            waits += u64::from(w);
        }
        rec.op(t0, t1);
    }
    ConsumerOut {
        measured: rec.finish(),
        taken,
        waits,
        disorder,
    }
}

/// Items taken so far by every consumer.
fn taken_so_far<Q>(s: &Shared<Q>) -> u64 {
    s.taken.iter().map(|t| t.load(Ordering::Relaxed)).sum()
}

/// Waits up to `limit` for `moved` to change from `from`; whether it did.
fn moves_within(limit: Duration, from: u64, moved: impl Fn() -> u64) -> bool {
    let end = Instant::now() + limit;
    loop {
        if moved() != from {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// One repetition with a fresh queue `Q` (see the module documentation).
/// `Err` says why it is no measurement: an item lost, duplicated or out of
/// order, a queue that stopped moving, or workers that did not end.
pub fn run_rep<Q: BoundedQueue>(cfg: &CondvarConfig, pair: Pair) -> Result<Rep, String> {
    if pair.producers == 0 || pair.consumers == 0 {
        return Err(format!("{pair}: a queue needs a producer and a consumer"));
    }
    let shared = Arc::new(Shared {
        queue: CachePadded::new(Q::with_capacity(cfg.capacity)),
        window: Window::new(pair.threads() as usize),
        taken: (0..pair.consumers)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
    });
    let spawn = |name: String| std::thread::Builder::new().name(name);
    let producers: Vec<_> = (0..pair.producers)
        .map(|p| {
            let (s, cfg) = (shared.clone(), cfg.clone());
            spawn(format!("producer-{p}"))
                .spawn(move || producer(&s, &cfg, pair, p))
                .expect("spawning a producer")
        })
        .collect();
    let consumers: Vec<_> = (0..pair.consumers)
        .map(|c| {
            let (s, cfg) = (shared.clone(), cfg.clone());
            spawn(format!("consumer-{c}"))
                .spawn(move || consumer(&s, &cfg, pair, c))
                .expect("spawning a consumer")
        })
        .collect();

    let span = shared
        .window
        .measure(settle_for(cfg.secs), cfg.secs, Hooks::default());
    let limit = stall_limit(cfg);
    // Items still move after the window (see the module documentation).
    let stuck = !span.interrupted && {
        let from = taken_so_far(&shared);
        !moves_within(limit, from, || taken_so_far(&shared))
    };
    let stuck_at = taken_so_far(&shared);
    // Stop, and stop again (waking every waiter each time) until every
    // worker has returned, or give up on them after the limit.
    let end = Instant::now() + limit;
    loop {
        shared.queue.stop();
        let running = producers.iter().filter(|h| !h.is_finished()).count()
            + consumers.iter().filter(|h| !h.is_finished()).count();
        if running == 0 {
            break;
        }
        if Instant::now() >= end {
            return Err(format!(
                "{running} of {} threads did not return within {:?} of the queue's stop, which \
                 wakes every waiter: a lost wake-up?",
                pair.threads(),
                limit
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let producers: Vec<ProducerOut> = producers
        .into_iter()
        .map(|h| h.join().expect("a producer panicked"))
        .collect();
    let consumers: Vec<ConsumerOut> = consumers
        .into_iter()
        .map(|h| h.join().expect("a consumer panicked"))
        .collect();
    if stuck {
        return Err(format!(
            "no item moved for {limit:?} after the window closed ({stuck_at} taken, queue of \
             capacity {}): every thread asleep, a lost wake-up",
            cfg.capacity
        ));
    }
    if let Some(d) = consumers.iter().find_map(|c| c.disorder.clone()) {
        return Err(d);
    }
    let left = shared.queue.drain();
    let put = producers
        .iter()
        .fold(Tally::default(), |a, p| a.merge(p.put));
    let mut taken = consumers
        .iter()
        .fold(Tally::default(), |a, c| a.merge(c.taken));
    for &v in &left {
        taken.add(v);
    }
    exactly_once(put, taken)?;

    let measured: Vec<Measured> = consumers.iter().map(|c| c.measured.clone()).collect();
    let mut rep = crate::core::sweep::rep_of(&span, &measured)?;
    rep.set_metrics(&CondvarMetrics {
        produced: producers.iter().map(|p| p.measured.ops).collect(),
        producer_waits: producers.iter().map(|p| p.waits).sum(),
        consumer_waits: consumers.iter().map(|c| c.waits).sum(),
        put: put.count,
        taken: taken.count,
        drained: left.len() as u64,
    });
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::super::queues::ParkingLotQueue;
    use super::*;

    #[test]
    fn tallies_tell_a_lost_and_a_duplicated_item_apart_from_none() {
        let mut put = Tally::default();
        for v in 0..100 {
            put.add(v);
        }
        assert!(exactly_once(put, put).is_ok());
        // Item 7 twice, item 8 never: the same count, another sum.
        let mut taken = Tally::default();
        for v in (0..100).filter(|v| *v != 8) {
            taken.add(v);
        }
        taken.add(7);
        let e = exactly_once(put, taken).unwrap_err();
        assert!(
            e.contains("not the same ones") && e.contains("exactly once"),
            "{e}"
        );
        let mut short = Tally::default();
        short.add(1);
        assert!(exactly_once(put, short).unwrap_err().contains("99 lost"));
    }

    #[test]
    fn a_short_repetition_moves_items_and_accounts_for_each() {
        let cfg = CondvarConfig {
            capacity: 4,
            signal: Signal::After,
            producer_sleep_ns: 0,
            secs: 0.05,
        };
        let pair = Pair {
            producers: 2,
            consumers: 3,
        };
        let r = run_rep::<ParkingLotQueue>(&cfg, pair).unwrap();
        assert_eq!(r.thread_ops.len(), 3, "one count per consumer");
        assert!(r.total_ops > 0);
        let m: CondvarMetrics = r.metrics_of().expect("the study's metrics");
        assert_eq!(m.produced.len(), 2);
        assert_eq!(m.put, m.taken);
        assert!(m.drained <= 4);
        // An item whose pop returned in the window was put in a push that
        // returned in it, or was queued when it opened (at most the
        // capacity), or was taken off the queue before the opening by a pop
        // that returned after it (at most one per consumer), or was in a
        // push that returned after the closing (at most one per producer).
        let produced: u64 = m.produced.iter().sum();
        assert!(r.total_ops <= produced + 4 + 3 + 2, "{r:?}");
    }
}
