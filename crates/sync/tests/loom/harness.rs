//! What every lock's model check asks: mutual exclusion with non-atomic
//! shared data (loom reports any access not ordered by happens-before), the
//! final count (no lost update), and for queue locks one thread holding two
//! locks at once while others contend for each.

use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// The algorithm-level interface of a lock, as the checks drive it.
pub trait ModelLock: Send + Sync + 'static {
    type Token;
    fn new() -> Self;
    fn acquire(&self) -> Self::Token;
    fn try_acquire(&self) -> Option<Self::Token>;
    fn release(&self, token: Self::Token);
}

/// A model builder with bounded preemptions (default 2, or
/// `LOOM_MAX_PREEMPTIONS`) and room for spin loops.
pub fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b
}

struct Shared<L> {
    lock: L,
    data: UnsafeCell<usize>,
}

fn critical<L: ModelLock>(s: &Shared<L>) {
    critical_with(s, false)
}

/// [`critical`], yielding to the scheduler between the read and the write
/// if `yield_inside` (a free switch point: see [`requeue_with_yields`]).
fn critical_with<L: ModelLock>(s: &Shared<L>, yield_inside: bool) {
    let t = s.lock.acquire();
    // Read and write in separate accesses: a broken lock lets loom see the
    // other thread's unordered access between them.
    // SAFETY: loom checks this access; the lock under test is held, or the others joined.
    let v = s.data.with(|p| unsafe { *p });
    if yield_inside {
        loom::thread::yield_now();
    }
    // SAFETY: loom checks this access; the lock under test is held, or the others joined.
    s.data.with_mut(|p| unsafe { *p = v + 1 });
    s.lock.release(t);
}

/// Three threads: this one takes the lock twice, two others once each,
/// and every critical section yields to the scheduler in its middle. A
/// yield is a free switch point, so queues form (a waiter behind the
/// holder, a thread queueing again behind its own successor) with one
/// preemption, where [`mutual_exclusion`] needs two and its three-thread
/// models do not end (see `extra`).
pub fn requeue_with_yields<L: ModelLock>() {
    let mut b = builder();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || critical_with(&s, true))
            })
            .collect();
        critical_with(&s, true);
        critical_with(&s, true);
        for h in hs {
            h.join().unwrap();
        }
        // SAFETY: loom checks this access; the others are joined.
        assert_eq!(s.data.with(|p| unsafe { *p }), 4, "lost update");
    });
}

/// `threads` threads each take the lock `rounds` times.
pub fn mutual_exclusion<L: ModelLock>(threads: usize, rounds: usize) {
    builder().check(move || {
        let s = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || {
                    for _ in 0..rounds {
                        critical(&s);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let total = s.data.with(|p| unsafe { *p });
        assert_eq!(total, threads * rounds, "lost update");
        assert!(
            s.lock.try_acquire().map(|t| s.lock.release(t)).is_some(),
            "left locked"
        );
    });
}

/// `try_acquire` against a concurrent `acquire`: the data stays exclusive.
pub fn try_against_lock<L: ModelLock>() {
    builder().check(|| {
        let s = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let s2 = s.clone();
        let h = loom::thread::spawn(move || critical(&s2));
        let mut mine = 0;
        if let Some(t) = s.lock.try_acquire() {
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            let v = s.data.with(|p| unsafe { *p });
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            s.data.with_mut(|p| unsafe { *p = v + 1 });
            s.lock.release(t);
            mine = 1;
        }
        h.join().unwrap();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        assert_eq!(s.data.with(|p| unsafe { *p }), 1 + mine);
    });
}

/// One thread holds A and B at once (releasing A first, not LIFO) while a
/// thread on each lock contends: both data stay exclusive.
pub fn nested_two<L: ModelLock>() {
    builder().check(|| {
        let a = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let b = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let (a1, b1) = (a.clone(), b.clone());
        let both = loom::thread::spawn(move || {
            let ta = a1.lock.acquire();
            let tb = b1.lock.acquire();
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            a1.data.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            b1.data.with_mut(|p| unsafe { *p += 1 });
            a1.lock.release(ta);
            b1.lock.release(tb);
        });
        let b2 = b.clone();
        let other = loom::thread::spawn(move || critical(&b2));
        critical(&a);
        both.join().unwrap();
        other.join().unwrap();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        assert_eq!(a.data.with(|p| unsafe { *p }), 2);
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        assert_eq!(b.data.with(|p| unsafe { *p }), 2);
    });
}

/// `threads` threads each make `attempts` non-blocking attempts, entering
/// the critical section when one succeeds.
///
/// For locks whose `acquire` is literally "retry `try_acquire` until it
/// succeeds" with an atomic read-modify-write (test-and-set): loom's
/// partial-order reduction treats every failed swap as a new write that
/// conflicts with the owner's, and so never exhausts a spin of them. Bounded
/// attempts check the same instruction sequence without the unbounded loop.
pub fn try_only<L: ModelLock>(threads: usize, attempts: usize) {
    builder().check(move || {
        let s = Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        });
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || {
                    let mut entered = 0;
                    for _ in 0..attempts {
                        if let Some(t) = s.lock.try_acquire() {
                            // SAFETY: loom checks this access; the lock under test is
                            // held, or the others joined.
                            let v = s.data.with(|p| unsafe { *p });
                            // SAFETY: loom checks this access; the lock under test is
                            // held, or the others joined.
                            s.data.with_mut(|p| unsafe { *p = v + 1 });
                            s.lock.release(t);
                            entered += 1;
                        }
                        loom::thread::yield_now();
                    }
                    entered
                })
            })
            .collect();
        let entered: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert!(
            entered >= 1,
            "the first attempt on a free lock must succeed"
        );
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        assert_eq!(s.data.with(|p| unsafe { *p }), entered, "lost update");
    });
}
