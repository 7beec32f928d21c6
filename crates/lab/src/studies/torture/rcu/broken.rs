//! `rcu-broken`: an RCU whose grace periods do not wait, to prove that the
//! torture catches one. Lab-only and left out of `all`.
//!
//! Readers take real read-side sections of a real general-purpose domain
//! (which also protects the hash map, so the map stays memory-safe), but
//! the update side ignores them: `synchronize` returns at once, every
//! polling cookie reports complete, and `call`/`defer_drop` hand their work
//! to a thread that runs it immediately, with no grace period. The
//! torture's elements live in a fixed pool and are only ever poisoned and
//! reused, never freed, so what this breaks is observable and not undefined
//! behaviour. Its pending callbacks are two queues (its executor's and the
//! real domain's, which holds the map's deferred drops), each with its own
//! bound, so it may also fail the backpressure check.

use super::flavor::TortureRcu;
use locklab::rcu::{General, Rcu, RcuReader, Stats};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

type Job = Box<dyn FnOnce() + Send>;

/// Counters of the executor that runs deferred work at once.
#[derive(Default)]
struct Exec {
    queued: AtomicU64,
    done: AtomicU64,
    pending: AtomicUsize,
}

thread_local! {
    /// Set on the executor: work it queues runs after the current job
    /// instead of going through the channel (no waiting on itself).
    static ON_EXEC: Cell<bool> = const { Cell::new(false) };
    static LOCAL: RefCell<VecDeque<Job>> = const { RefCell::new(VecDeque::new()) };
}

/// See the module documentation.
pub struct Broken {
    real: Rcu,
    tx: Sender<Job>,
    exec: Arc<Exec>,
    fake_gps: AtomicU64,
    max_pending: usize,
}

impl Broken {
    fn submit(&self, f: Job) {
        if ON_EXEC.with(Cell::get) {
            self.exec.queued.fetch_add(1, Ordering::Relaxed);
            self.exec.pending.fetch_add(1, Ordering::Relaxed);
            LOCAL.with(|l| l.borrow_mut().push_back(f));
            return;
        }
        // Backpressure, so that a flood cannot grow the channel unbounded
        // (only the grace periods are meant to be broken).
        while self.exec.pending.load(Ordering::Relaxed) >= self.max_pending {
            std::thread::yield_now();
        }
        self.exec.queued.fetch_add(1, Ordering::Relaxed);
        self.exec.pending.fetch_add(1, Ordering::Relaxed);
        // The executor ended only if its thread died; run the work here.
        if let Err(e) = self.tx.send(f) {
            run(&self.exec, e.0);
        }
    }
}

fn run(exec: &Exec, f: Job) {
    f();
    exec.pending.fetch_sub(1, Ordering::Relaxed);
    exec.done.fetch_add(1, Ordering::Release);
}

impl TortureRcu for Broken {
    type F = General;
    type Reader = RcuReader;
    type Cookie = ();

    fn build(fenced: bool, max_pending: usize, stalls: Arc<AtomicU64>) -> Self {
        let real = <Rcu as TortureRcu>::build(fenced, max_pending, stalls);
        let (tx, rx) = channel::<Job>();
        let exec = Arc::new(Exec::default());
        let e = exec.clone();
        std::thread::Builder::new()
            .name("rcu-broken-exec".into())
            .spawn(move || {
                ON_EXEC.with(|f| f.set(true));
                // Alternate between work queued by callbacks and work from
                // other threads, so that neither starves the other.
                loop {
                    let local = LOCAL.with(|l| l.borrow_mut().pop_front());
                    let had_local = local.is_some();
                    if let Some(j) = local {
                        run(&e, j);
                    }
                    let next = if had_local {
                        rx.try_recv().ok()
                    } else {
                        match rx.recv() {
                            Ok(j) => Some(j),
                            Err(_) => break, // every sender gone, nothing local
                        }
                    };
                    if let Some(j) = next {
                        run(&e, j);
                    }
                }
            })
            .expect("spawning the rcu-broken executor");
        Broken {
            real,
            tx,
            exec,
            fake_gps: AtomicU64::new(0),
            max_pending,
        }
    }
    fn domain(&self) -> &Rcu {
        &self.real
    }
    fn register(&self) -> RcuReader {
        self.real.register()
    }
    fn quiesce(_: &mut RcuReader) {}
    fn idle(_: &mut RcuReader, f: impl FnOnce()) {
        f()
    }
    fn synchronize(&self) {
        // The bug: no wait for pre-existing readers.
        self.fake_gps.fetch_add(1, Ordering::Relaxed);
    }
    fn call(&self, f: impl FnOnce() + Send + 'static) {
        self.submit(Box::new(f));
    }
    fn defer_drop<T: Send + 'static>(&self, b: Box<T>) {
        self.submit(Box::new(move || drop(b)));
    }
    fn barrier(&self) {
        let target = self.exec.queued.load(Ordering::Relaxed);
        while self.exec.done.load(Ordering::Acquire) < target {
            std::thread::yield_now();
        }
        self.real.barrier();
    }
    fn start_poll(&self) {}
    fn get_state(&self) {}
    fn poll(&self, _: ()) -> bool {
        true
    }
    fn grace_periods(&self) -> u64 {
        self.fake_gps.load(Ordering::Relaxed) + self.real.grace_periods()
    }
    fn stats(&self) -> Stats {
        let mut s = self.real.stats();
        s.grace_periods = self.grace_periods();
        s.pending_callbacks += self.exec.pending.load(Ordering::Relaxed);
        s.completed_callbacks += self.exec.done.load(Ordering::Relaxed);
        s
    }
    fn fenced(&self) -> bool {
        self.real.is_fenced()
    }
}
