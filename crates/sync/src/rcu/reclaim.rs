//! Deferred reclamation: `call` and `defer_drop` queue work that must wait
//! for a grace period; one background thread per domain runs it in batches.
//!
//! Queuing is a push under a mutex; the reclaimer is woken only when
//! [`WAKE_BATCH`] callbacks wait or someone waits for them (`barrier`,
//! backpressure, a poller), and otherwise looks every [`LINGER`], so a
//! trickle of updates does not pay a futex wake-up each.
//!
//! The reclaimer takes the whole queue, waits for one grace period (which
//! it shares with any concurrent `synchronize`), runs the batch and goes
//! back for the next; what is queued while a grace period runs waits for
//! the next, so one grace period serves any number of callbacks, as in
//! Sarma's Linux 2.5 implementation (seed 003). Batches run strictly in
//! queue order, which is what makes [`Callbacks::barrier`] a simple count:
//! everything queued before the barrier has run once the number of
//! callbacks run reaches the number queued at the barrier.
//!
//! Backpressure: when more than `max_pending` callbacks wait, `call` wakes
//! the reclaimer and waits until the backlog is back under the limit, so a
//! flood of updates cannot outrun reclamation. It never waits where that
//! would deadlock: inside a read-side section of the same domain (the grace
//! period would wait for it) or on the reclaimer thread itself (a callback
//! that queues another).

use super::gp::{Core, Waiting};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Callbacks that make the reclaimer run a batch at once.
const WAKE_BATCH: usize = 256;
/// Longest a smaller batch waits before the reclaimer runs it.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// Work to run after a grace period: a boxed value and what to do with it
/// (drop it, or call it). Two words, so a queue of pending callbacks
/// costs 16 bytes per callback beside what it frees.
struct Deferred {
    ptr: *mut (),
    run: unsafe fn(*mut ()),
}

// SAFETY: `ptr` is a `Box<T>` with `T: Send` (enforced by `defer_drop` and
// `call`), and `run` takes it back on whatever thread runs it.
unsafe impl Send for Deferred {}

impl Deferred {
    fn run(self) {
        // SAFETY: `ptr` came from `Box::into_raw` of the type `run` was
        // instantiated for, and runs once.
        unsafe { (self.run)(self.ptr) }
    }
}

unsafe fn drop_box<T>(p: *mut ()) {
    // SAFETY: see `Deferred::run`.
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
}

unsafe fn call_box<F: FnOnce()>(p: *mut ()) {
    // SAFETY: see `Deferred::run`.
    let f = unsafe { Box::from_raw(p.cast::<F>()) };
    f()
}

#[derive(Default)]
struct Queue {
    items: Vec<Deferred>,
    /// Bytes of `defer_drop`ped values among `items`.
    items_bytes: usize,
    /// Callbacks ever queued and ever run: `barrier` compares them.
    enqueued: u64,
    completed: u64,
    /// A poller asked for a grace period even with nothing queued.
    gp_requested: bool,
    /// The domain's last handle is gone: drain and exit.
    shutdown: bool,
    started: bool,
    idle: bool,
    /// Someone waits for reclamation (`barrier`, backpressure): run a
    /// batch now, however small.
    urgent: bool,
}

/// The callback side of one domain.
pub(crate) struct Callbacks {
    queue: Mutex<Queue>,
    /// The reclaimer sleeps here.
    wake: Condvar,
    /// `barrier` and backpressure sleep here.
    progress: Condvar,
    /// Queued or running, and their bytes; readable without the lock.
    pending: AtomicUsize,
    bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
    max_pending: usize,
}

thread_local! {
    /// Set on reclaimer threads: their callbacks must never wait for
    /// reclamation.
    static IN_RECLAIMER: Cell<bool> = const { Cell::new(false) };
}

impl Callbacks {
    pub(crate) fn new(max_pending: usize) -> Self {
        Callbacks {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            progress: Condvar::new(),
            pending: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            peak_bytes: AtomicUsize::new(0),
            max_pending: max_pending.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panicking callback is caught on the reclaimer, so poisoning can
        // only come from a panic between two lines here: keep going.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn defer_drop<T: Send + 'static>(
        &self,
        core: &Arc<Core>,
        this: &Arc<Self>,
        b: Box<T>,
        wait: Waiting,
    ) {
        let d = Deferred {
            ptr: Box::into_raw(b).cast(),
            run: drop_box::<T>,
        };
        self.push(core, this, d, core::mem::size_of::<T>(), wait);
    }

    pub(crate) fn call<F: FnOnce() + Send + 'static>(
        &self,
        core: &Arc<Core>,
        this: &Arc<Self>,
        f: F,
        wait: Waiting,
    ) {
        let d = Deferred {
            ptr: Box::into_raw(Box::new(f)).cast(),
            run: call_box::<F>,
        };
        self.push(core, this, d, 0, wait);
    }

    fn push(&self, core: &Arc<Core>, this: &Arc<Self>, d: Deferred, bytes: usize, wait: Waiting) {
        let mut q = self.lock();
        q.items.push(d);
        q.items_bytes += bytes;
        q.enqueued += 1;
        // The counters change only under the queue lock (here and in the
        // reclaimer), so plain stores do: no locked instruction per update.
        let pending = self.pending.load(Ordering::Relaxed) + 1;
        self.pending.store(pending, Ordering::Relaxed);
        let b = self.bytes.load(Ordering::Relaxed) + bytes;
        self.bytes.store(b, Ordering::Relaxed);
        if b > self.peak_bytes.load(Ordering::Relaxed) {
            self.peak_bytes.store(b, Ordering::Relaxed);
        }
        if !q.started || q.items.len() >= WAKE_BATCH {
            self.kick(&mut q, core, this);
        }
        if pending > self.max_pending && wait == Waiting::Free && !IN_RECLAIMER.with(|r| r.get()) {
            self.wait_below_limit(q);
        }
    }

    /// Whether more than `max_pending` callbacks wait.
    #[inline]
    pub(crate) fn over_limit(&self) -> bool {
        self.pending.load(Ordering::Relaxed) > self.max_pending
    }

    /// Waits until the backlog is back under the limit. The caller holds
    /// no references of the domain.
    fn wait_below_limit(&self, mut q: MutexGuard<'_, Queue>) {
        self.hurry(&mut q);
        while self.over_limit() && !q.shutdown {
            q = self.progress.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// [`Callbacks::wait_below_limit`] for a caller that does not hold the
    /// queue lock.
    pub(crate) fn throttle(&self) {
        if self.over_limit() && !IN_RECLAIMER.with(|r| r.get()) {
            self.wait_below_limit(self.lock());
        }
    }

    /// Asks for a grace period with nothing queued (for pollers).
    pub(crate) fn request_gp(&self, core: &Arc<Core>, this: &Arc<Self>) {
        let mut q = self.lock();
        q.gp_requested = true;
        q.urgent = true;
        self.kick(&mut q, core, this);
    }

    /// Wakes an idle reclaimer to run a batch now.
    fn hurry(&self, q: &mut Queue) {
        q.urgent = true;
        if q.idle {
            q.idle = false;
            self.wake.notify_one();
        }
    }

    /// Wakes the reclaimer, starting it on first use.
    fn kick(&self, q: &mut Queue, core: &Arc<Core>, this: &Arc<Self>) {
        if !q.started {
            q.started = true;
            let (core, cbs) = (core.clone(), this.clone());
            let spawned = std::thread::Builder::new()
                .name("locklab-rcu-reclaim".into())
                .spawn(move || cbs.reclaimer(&core));
            if let Err(e) = spawned {
                // Without a thread the domain could never reclaim; that is
                // a resource failure like running out of memory.
                panic!("locklab rcu: cannot start the reclaimer thread: {e}");
            }
        } else if q.idle {
            q.idle = false;
            self.wake.notify_one();
        }
    }

    /// Whether the reclaimer has a batch to run now: enough callbacks, or
    /// someone waiting, or shutting down.
    fn ready(q: &Queue) -> bool {
        q.items.len() >= WAKE_BATCH || q.urgent || q.gp_requested || q.shutdown
    }

    fn reclaimer(&self, core: &Core) {
        IN_RECLAIMER.with(|r| r.set(true));
        let mut q = self.lock();
        loop {
            // Sleep until a batch is due: at once when one is ready, after
            // at most `LINGER` when a few callbacks wait (so a trickle of
            // updates costs no wake-up each), indefinitely when none do.
            while !Self::ready(&q) {
                q.idle = true;
                if q.items.is_empty() {
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                } else {
                    let (g, t) = self
                        .wake
                        .wait_timeout(q, LINGER)
                        .unwrap_or_else(|e| e.into_inner());
                    q = g;
                    if t.timed_out() {
                        break;
                    }
                }
            }
            q.idle = false;
            q.urgent = false;
            if q.items.is_empty() && !q.gp_requested {
                if q.shutdown {
                    break; // shut down and drained
                }
                // Asked to hurry while the batch that was asked for was
                // already running: nothing left to do, sleep again.
                continue;
            }
            let batch = core::mem::take(&mut q.items);
            let bytes = core::mem::take(&mut q.items_bytes);
            q.gp_requested = false;
            drop(q);
            core.wait_for(core.snapshot());
            let n = batch.len();
            for d in batch {
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.run())) {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    eprintln!("locklab rcu: a callback panicked: {msg}");
                }
            }
            q = self.lock();
            q.completed += n as u64;
            self.pending.fetch_sub(n, Ordering::Relaxed);
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            self.progress.notify_all();
        }
        self.progress.notify_all();
    }

    /// Waits until every callback queued before the call has run.
    pub(crate) fn barrier(&self, core: &Arc<Core>, this: &Arc<Self>, wait: Waiting) {
        assert!(
            !IN_RECLAIMER.with(|r| r.get()),
            "locklab rcu: barrier() called from a callback would wait for itself"
        );
        assert!(
            wait == Waiting::Free,
            "locklab rcu: barrier() from a thread that may hold references of the domain \
             (inside a read-side section, or an online QSBR reader: use QsbrReader::barrier) \
             would wait for itself"
        );
        let mut q = self.lock();
        let target = q.enqueued;
        if q.completed < target {
            q.urgent = true;
            self.kick(&mut q, core, this);
        }
        while q.completed < target {
            q = self.progress.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The domain's last handle is gone: the reclaimer drains the queue
    /// (after a grace period, as always) and exits.
    pub(crate) fn shutdown(&self) {
        let mut q = self.lock();
        q.shutdown = true;
        self.wake.notify_one();
        self.progress.notify_all();
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn peak_bytes(&self) -> usize {
        self.peak_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn reset_peak(&self) {
        let _q = self.lock();
        self.peak_bytes.store(self.bytes(), Ordering::Relaxed);
    }

    /// Whether someone has asked for a batch now (tests stage races on it).
    #[cfg(test)]
    pub(crate) fn urgent(&self) -> bool {
        self.lock().urgent
    }

    pub(crate) fn completed(&self) -> u64 {
        self.lock().completed
    }
}
