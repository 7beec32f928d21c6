//! `locklab torture --rcu`: RCU tortured in the manner of Linux's
//! rcutorture.
//!
//! One run per flavour, each on a fresh domain, with these threads at once:
//!
//! * **readers** (`--threads`, default 2 × cores): read-side sections that
//!   load the published element of the [pipeline](pipe), check it is not
//!   poisoned, look keys up in the hash map (`map`), spin (rarely long, or
//!   yielding the CPU), sometimes nest or take a polling cookie, and record
//!   the element's pipeline count at the end of the section in the *Reader
//!   Pipe* histogram. QSBR readers report a quiescent state after each
//!   section and go offline now and then.
//! * one **writer** that replaces the published element and retires the old
//!   one by `synchronize`, `call`, `defer_drop` or a polling cookie
//!   (`start_poll` or `get_state`, then `poll`), and checks `barrier` and a
//!   cookie across `synchronize` now and then;
//! * two **synchronize** threads, each checking that a cookie taken before
//!   its `synchronize` reports complete after it;
//! * one **flood** thread: self-re-queueing callback chains and one-shot
//!   callbacks and deferred drops queued as fast as backpressure allows;
//! * one hash-map **updater**.
//!
//! Failures: a pipeline count above 1 or a poisoned element seen by a
//! reader (a too-short grace period); a cookie taken inside a section that
//! completes before the section ends, or one taken before `synchronize`
//! that is not complete after it; a `barrier` that returns before an
//! earlier callback ran; callbacks or elements lost by the end; a broken
//! hash-map rule; more callbacks pending than the backpressure bound plus
//! its slack ([`pending_slack`]); and a hang: no progress of any one thread
//! group, of grace periods or of callback completions for `--watchdog`
//! seconds.

mod broken;
pub mod command;
pub mod flavor;
mod flood;
mod keys;
mod map;
pub mod pipe;
mod pool;
mod reader;
pub mod state;

use crate::core::error::{LabError, Result};
use crossbeam_utils::CachePadded;
use flavor::TortureRcu;
use locklab::rcu::{Qsbr, Rcu};
use pipe::{Elem, PIPE_LEN, POOL};
use serde::Serialize;
pub use state::{Counters, RcuTortureConfig, State, SYNCERS};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Threads that queue callbacks and may overshoot the bound by one each
/// before backpressure stops them: the writer, the flood and the map
/// updater.
const POSTERS: usize = 3;
/// Largest object the torture defers with `defer_drop` (checked below).
const MAX_DEFERRED_BYTES: usize = 64;
const _: () = assert!(core::mem::size_of::<flood::Blob>() <= MAX_DEFERRED_BYTES);

/// How far above `max_pending` the callbacks pending may legitimately go:
/// each posting thread queues one callback before it finds the bound
/// exceeded and waits, and each self-re-queueing chain (one per pool
/// element at most, plus the flood's) can have one callback running and its
/// successor queued, which the reclaimer never waits for.
pub fn pending_slack() -> usize {
    POSTERS + 2 * (POOL + flood::CHAINS)
}

/// What an RCU torture run found.
#[derive(Debug, Clone, Serialize)]
pub struct RcuReport {
    /// Flavour name.
    pub flavor: String,
    /// Whether readers fenced (no `membarrier`, or `rcu-fenced`).
    pub fenced: bool,
    /// Reader threads.
    pub readers: u32,
    /// Read-side sections completed.
    pub reads: u64,
    /// Of those, nested ones.
    pub nested: u64,
    /// Reader Pipe: sections by the pipeline count seen at their end.
    pub pipe: Vec<u64>,
    /// Reader Batch: sections by the grace periods completed during them.
    pub batch: Vec<u64>,
    /// Free-Block Circulation: elements published (stage 0), removed (1),
    /// and seen through each grace period since (2 and up).
    pub circulation: Vec<u64>,
    /// Reads that saw a pipeline count above 1.
    pub too_short: u64,
    /// Reads that saw a poisoned (reclaimed) element.
    pub poisoned: u64,
    /// Cookies taken inside a section that completed before it ended.
    pub poll_in_section: u64,
    /// Cookies taken before `synchronize` not complete after it.
    pub poll_after_sync: u64,
    /// `barrier` calls, and those that returned before an earlier callback ran.
    pub barriers: u64,
    pub barrier_errors: u64,
    /// Writer updates, and how each old element was retired.
    pub writes: u64,
    pub by_sync: u64,
    pub by_call: u64,
    pub by_defer: u64,
    pub by_poll: u64,
    /// Times the writer found the pool empty.
    pub pool_empty: u64,
    /// `synchronize` calls by the synchronize threads.
    pub syncs: u64,
    /// Grace periods the domain completed.
    pub grace_periods: u64,
    /// Callbacks the domain ran.
    pub callbacks: u64,
    /// Flood callbacks queued and run (equal after the final barrier).
    pub flood_posted: u64,
    pub flood_ran: u64,
    /// Elements missing from the pool at the end.
    pub elements_lost: u64,
    /// Hash map: lookups, updates and broken rules.
    pub map_lookups: u64,
    pub map_updates: u64,
    pub map_stable_missing: u64,
    pub map_wrong_value: u64,
    pub map_grow_lost: u64,
    pub map_shrink_returned: u64,
    /// Backpressure: the bound, its slack, and the most pending seen
    /// (sampled).
    pub max_pending: usize,
    pub pending_slack: usize,
    pub peak_pending: usize,
    /// Most bytes awaiting a grace period, and the bound for them.
    pub peak_backlog_bytes: usize,
    pub backlog_bound_bytes: usize,
    /// Stall reports from the domain (not a failure by themselves).
    pub stalls: u64,
    /// What stopped making progress, if anything did.
    pub hung: Option<String>,
    /// Wall-clock seconds.
    pub wall_s: f64,
}

impl RcuReport {
    /// Every failed check, one line each; empty if the run passed.
    pub fn failures(&self) -> Vec<String> {
        let mut f = Vec::new();
        if let Some(h) = &self.hung {
            f.push(format!("hung: no progress of {h}"));
        }
        if self.too_short > 0 || self.poisoned > 0 {
            f.push(format!(
                "too-short grace period: {} reads saw a pipeline count above 1, {} a poisoned element",
                self.too_short, self.poisoned
            ));
        }
        if self.poll_in_section > 0 {
            f.push(format!(
                "{} cookies taken inside a read-side section completed before it ended",
                self.poll_in_section
            ));
        }
        if self.poll_after_sync > 0 {
            f.push(format!(
                "{} cookies taken before synchronize were not complete after it",
                self.poll_after_sync
            ));
        }
        if self.barrier_errors > 0 {
            f.push(format!(
                "{} barriers returned before an earlier callback ran",
                self.barrier_errors
            ));
        }
        if self.hung.is_none() && self.flood_posted != self.flood_ran {
            f.push(format!(
                "callbacks lost: {} queued, {} run after the final barrier",
                self.flood_posted, self.flood_ran
            ));
        }
        if self.elements_lost > 0 {
            f.push(format!(
                "{} elements never came back to the pool",
                self.elements_lost
            ));
        }
        let map = self.map_stable_missing
            + self.map_wrong_value
            + self.map_grow_lost
            + self.map_shrink_returned;
        if map > 0 {
            f.push(format!(
                "hash map: {} stable keys missing, {} wrong values, {} grow keys lost after being seen, {} shrink keys back after being missed",
                self.map_stable_missing, self.map_wrong_value, self.map_grow_lost, self.map_shrink_returned
            ));
        }
        if self.peak_pending > self.max_pending + self.pending_slack {
            f.push(format!(
                "backpressure: {} callbacks pending, bound {} + slack {}",
                self.peak_pending, self.max_pending, self.pending_slack
            ));
        }
        if self.peak_backlog_bytes > self.backlog_bound_bytes {
            f.push(format!(
                "backpressure: {} bytes awaiting a grace period, bound {}",
                self.peak_backlog_bytes, self.backlog_bound_bytes
            ));
        }
        f
    }

    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.failures().is_empty()
    }

    /// The report as text, with the histograms in rcutorture's shape.
    pub fn text(&self) -> String {
        let row = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
        let k = |x: u64| x.to_string();
        let mut s = format!(
            "{} ({}): {} reads by {} readers ({} nested), {} updates, {} grace periods, {} callbacks in {:.1}s\n",
            self.flavor,
            if self.fenced { "fenced" } else { "membarrier" },
            k(self.reads),
            self.readers,
            k(self.nested),
            k(self.writes),
            k(self.grace_periods),
            k(self.callbacks),
            self.wall_s
        );
        s += &format!("  Reader Pipe:  {}\n", row(&self.pipe));
        s += &format!("  Reader Batch: {}\n", row(&self.batch));
        s += &format!("  Free-Block Circulation: {}\n", row(&self.circulation));
        s += &format!(
            "  writer: retired by synchronize {}, call {}, defer_drop {}, polling {}; {} barriers; pool empty {}×; synchronize threads {} calls\n",
            k(self.by_sync),
            k(self.by_call),
            k(self.by_defer),
            k(self.by_poll),
            k(self.barriers),
            self.pool_empty,
            k(self.syncs)
        );
        s += &format!(
            "  flood: {} of {} callbacks run; peak pending {} (bound {} + {}); peak backlog {} B (bound {} B)\n",
            k(self.flood_ran),
            k(self.flood_posted),
            self.peak_pending,
            self.max_pending,
            self.pending_slack,
            self.peak_backlog_bytes,
            self.backlog_bound_bytes
        );
        s += &format!(
            "  hash map: {} lookups, {} updates; stable missing {}, wrong values {}, grow lost {}, shrink returned {}\n",
            k(self.map_lookups),
            k(self.map_updates),
            self.map_stable_missing,
            self.map_wrong_value,
            self.map_grow_lost,
            self.map_shrink_returned
        );
        if self.stalls > 0 {
            s += &format!("  stall reports: {}\n", self.stalls);
        }
        let f = self.failures();
        if f.is_empty() {
            s += "  result: ok\n";
        } else {
            for l in f {
                s += &format!("  !!! {l}\n");
            }
            s += "  result: FAILED\n";
        }
        s
    }
}

/// One flavour `locklab torture --rcu` knows.
pub struct FlavorEntry {
    /// Its name in `--locks`.
    pub name: &'static str,
    /// What it is.
    pub summary: &'static str,
    /// Left out of `all` (the deliberately broken one).
    pub hidden: bool,
    /// The torture run.
    pub run: fn(&RcuTortureConfig) -> RcuReport,
}

/// Every flavour, in the order `all` runs them.
pub fn flavors() -> &'static [FlavorEntry] {
    use locklab::rcu::{Flavor, General, QuiescentState};
    const F: &[FlavorEntry] = &[
        FlavorEntry {
            name: General::NAME,
            summary: "general-purpose RCU (membarrier where the kernel has it)",
            hidden: false,
            run: |c| run::<Rcu>(c, General::NAME, false),
        },
        FlavorEntry {
            name: QuiescentState::NAME,
            summary: "quiescent-state-based RCU",
            hidden: false,
            run: |c| run::<Qsbr>(c, QuiescentState::NAME, false),
        },
        FlavorEntry {
            name: "rcu-fenced",
            summary: "general-purpose RCU whose readers fence (Builder::fenced)",
            hidden: false,
            run: |c| run::<Rcu>(c, "rcu-fenced", true),
        },
        FlavorEntry {
            name: "rcu-broken",
            summary: "lab-only: grace periods that do not wait (must fail)",
            hidden: true,
            run: |c| run::<broken::Broken>(c, "rcu-broken", false),
        },
    ];
    F
}

/// The flavour called `name`.
pub fn find(name: &str) -> Option<&'static FlavorEntry> {
    flavors().iter().find(|f| f.name == name)
}

/// Parses `torture --rcu --locks`: flavour names, or `all` for every one
/// but `rcu-broken` (duplicates removed, order kept). `is_lock` says
/// whether an unknown name is a lock, for the message that points to
/// `torture --locks`.
pub fn parse_flavors(
    list: &str,
    is_lock: impl Fn(&str) -> bool,
) -> Result<Vec<&'static FlavorEntry>> {
    let every: Vec<&'static FlavorEntry> = flavors().iter().filter(|f| !f.hidden).collect();
    let valid = flavors()
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ");
    crate::core::registry::pick(
        list,
        &every,
        |f| f.name,
        &valid,
        |name| {
            find(name).ok_or_else(|| {
            let lock = is_lock(name);
            LabError::input(if lock {
                format!(
                    "'{name}' is a lock, not an RCU flavour (`locklab torture --locks {name}` tortures it); \
                     valid flavours: all, {valid}"
                )
            } else {
                format!("unknown RCU flavour '{name}'; valid flavours: all, {valid}")
            })
        })
        },
    )
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .expect("spawning a torture thread")
}

/// Tortures a fresh domain of `R`. Never hangs itself: threads of a hung
/// domain are left behind and the report says what stopped.
pub fn run<R: TortureRcu>(cfg: &RcuTortureConfig, name: &str, fenced: bool) -> RcuReport {
    let stalls = Arc::new(AtomicU64::new(0));
    let rcu = R::build(fenced, cfg.max_pending, stalls.clone());
    let map = keys::Fixture::new(rcu.domain(), 0x5eed);
    let pool = pipe::pool();
    pool[0].poison.store(0, Ordering::Relaxed);
    let slot = AtomicPtr::new(&pool[0] as *const Elem as *mut Elem);
    let n = cfg.readers as usize;
    let c = Arc::new(Counters {
        reads: (0..n)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
        ..Counters::default()
    });
    let st = Arc::new(State {
        rcu,
        pool,
        slot,
        free: Mutex::new((1..POOL).rev().collect()),
        stop: AtomicBool::new(false),
        c: c.clone(),
        map,
        cfg: cfg.clone(),
    });
    let threads = n + 1 + SYNCERS + 1 + 1;
    let start = Arc::new(Barrier::new(threads + 1));
    let mut handles = Vec::new();
    let go = |f: Box<dyn FnOnce() + Send>, start: &Arc<Barrier>| {
        let start = start.clone();
        move || {
            start.wait();
            f()
        }
    };
    for i in 0..n {
        let s = st.clone();
        let f = go(
            Box::new(move || reader::reader(s, i, 0x4ead + i as u64)),
            &start,
        );
        handles.push(spawn(format!("rcu-reader-{i}"), f));
    }
    let s = st.clone();
    handles.push(spawn(
        "rcu-writer".into(),
        go(Box::new(move || pipe::writer(s, 0x1417e)), &start),
    ));
    for i in 0..SYNCERS {
        let s = st.clone();
        handles.push(spawn(
            format!("rcu-sync-{i}"),
            go(Box::new(move || pipe::syncer(s, 0x5c + i as u64)), &start),
        ));
    }
    let s = st.clone();
    handles.push(spawn(
        "rcu-flood".into(),
        go(Box::new(move || flood::flood(s)), &start),
    ));
    let s = st.clone();
    handles.push(spawn(
        "rcu-map-updater".into(),
        go(Box::new(move || map::updater(s, 0x3a9)), &start),
    ));

    start.wait();
    let t = Instant::now();
    let watchdog = Duration::from_secs_f64(cfg.watchdog_s);
    let end = Duration::from_secs_f64(cfg.secs);
    let progress = |st: &State<R>| -> [(&'static str, u64); 6] {
        let stats = st.rcu.stats();
        [
            (
                "the readers",
                st.c.reads.iter().map(|r| r.load(Ordering::Relaxed)).sum(),
            ),
            ("the writer", st.c.writes.load(Ordering::Relaxed)),
            (
                "the synchronize threads",
                st.c.syncs.load(Ordering::Relaxed),
            ),
            ("the map updater", st.c.map_updates.load(Ordering::Relaxed)),
            ("grace periods", stats.grace_periods),
            (
                "the flood's callbacks",
                st.c.flood_ran.load(Ordering::Relaxed),
            ),
        ]
    };
    let mut last: Vec<(u64, Instant)> = progress(&st).iter().map(|p| (p.1, t)).collect();
    let mut hung: Option<String> = None;
    let mut next_check = Instant::now();
    while t.elapsed() < end && !crate::core::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(1));
        st.sample_pending();
        if next_check.elapsed() < Duration::from_millis(20) {
            continue;
        }
        next_check = Instant::now();
        for (i, (what, now)) in progress(&st).into_iter().enumerate() {
            if now != last[i].0 {
                last[i] = (now, Instant::now());
            } else if last[i].1.elapsed() >= watchdog {
                hung = Some(what.to_string());
            }
        }
        if hung.is_some() {
            break;
        }
    }
    st.stop.store(true, Ordering::Relaxed);
    let joined = join_all(handles, watchdog, &st);
    if hung.is_none() && !joined {
        hung = Some("a thread that did not stop".into());
    }
    // The final barrier: what is still queued (the writer's retired
    // elements ride callbacks for up to PIPE_LEN grace periods) must run.
    if hung.is_none() {
        let s = st.clone();
        let drain = spawn("rcu-drain".into(), move || {
            for _ in 0..4 * PIPE_LEN {
                s.rcu.barrier();
                if s.rcu.stats().pending_callbacks == 0 {
                    break;
                }
            }
        });
        if !join_all(vec![drain], watchdog, &st) {
            hung = Some("the final barrier".into());
        }
    }
    let stats = st.rcu.stats();
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let elements_lost = if hung.is_none() {
        let free = st.free.lock().unwrap().len();
        (POOL - 1).saturating_sub(free) as u64
    } else {
        0
    };
    let slack = pending_slack();
    RcuReport {
        flavor: name.into(),
        fenced: st.rcu.fenced(),
        readers: cfg.readers,
        reads: c.reads.iter().map(|r| r.load(Ordering::Relaxed)).sum(),
        nested: load(&c.nested),
        pipe: c.pipe.iter().map(load).collect(),
        batch: c.batch.iter().map(load).collect(),
        circulation: c.circulation.iter().map(load).collect(),
        too_short: load(&c.too_short),
        poisoned: load(&c.poisoned),
        poll_in_section: load(&c.poll_in_section),
        poll_after_sync: load(&c.poll_after_sync),
        barriers: load(&c.barriers),
        barrier_errors: load(&c.barrier_errors),
        writes: load(&c.writes),
        by_sync: load(&c.by_sync),
        by_call: load(&c.by_call),
        by_defer: load(&c.by_defer),
        by_poll: load(&c.by_poll),
        pool_empty: load(&c.alloc_fail),
        syncs: load(&c.syncs),
        grace_periods: stats.grace_periods,
        callbacks: stats.completed_callbacks,
        flood_posted: load(&c.flood_posted),
        flood_ran: load(&c.flood_ran),
        elements_lost,
        map_lookups: load(&c.map_lookups),
        map_updates: load(&c.map_updates),
        map_stable_missing: load(&c.map_stable_missing),
        map_wrong_value: load(&c.map_wrong_value),
        map_grow_lost: load(&c.map_grow_lost),
        map_shrink_returned: load(&c.map_shrink_returned),
        max_pending: cfg.max_pending,
        pending_slack: slack,
        peak_pending: c.peak_pending.load(Ordering::Relaxed),
        peak_backlog_bytes: stats.peak_backlog_bytes,
        backlog_bound_bytes: (cfg.max_pending + slack) * MAX_DEFERRED_BYTES,
        stalls: stalls.load(Ordering::Relaxed),
        hung,
        wall_s: t.elapsed().as_secs_f64(),
    }
}

/// Joins `handles`, sampling pending callbacks meanwhile; gives up (and
/// returns false) when none finishes for `watchdog`, leaving the rest
/// behind.
fn join_all<R: TortureRcu>(
    mut pending: Vec<JoinHandle<()>>,
    watchdog: Duration,
    st: &State<R>,
) -> bool {
    let mut since = Instant::now();
    while !pending.is_empty() {
        st.sample_pending();
        let before = pending.len();
        let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(|h| h.is_finished());
        for h in done {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        pending = rest;
        if pending.len() != before {
            since = Instant::now();
        } else if since.elapsed() >= watchdog {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}
