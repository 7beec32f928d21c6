//! The bounded queue of `bench condvar`, once per implementation: a FIFO of
//! `u64` items of fixed capacity behind one mutex, with two condition
//! variables, "not full" (producers wait on it) and "not empty" (consumers
//! wait on it). It is the textbook monitor of a bounded buffer (Hoare,
//! "Monitors: an operating system structuring concept", CACM 1974, with
//! Mesa's signal-and-continue semantics: Lampson and Redell, "Experience
//! with processes and monitors in Mesa", CACM 1980), written as a user of
//! each library writes it, so the three differ only in their mutex and
//! condition variables:
//!
//! - `locklab`: `locklab::Mutex` (the hybrid mutex) and `locklab::Condvar`;
//! - `std`: `std::sync::Mutex` and `std::sync::Condvar`;
//! - `parking_lot`: `parking_lot::Mutex` and `parking_lot::Condvar`.
//!
//! Every wait sits in a loop that re-checks its condition (Mesa semantics:
//! a woken waiter may find the state changed again, and `locklab`'s and
//! `std`'s waits may return spuriously), and each counts its waits, which
//! the report divides by the items moved. A push signals "not empty" and a
//! pop "not full" with `notify_one`, every time, either while still holding
//! the mutex ([`Signal::Under`]) or just after releasing it
//! ([`Signal::After`]); both are correct for a monitor whose waiters loop.
//!
//! `stop` ends a repetition: it sets a flag under the mutex and wakes every
//! waiter of both condition variables; a push or pop that finds the flag
//! returns `None`. The items left in the queue are then taken out by
//! `drain`, so that the exactly-once check counts them.
//!
//! No memory ordering is chosen here: the mutex orders everything the
//! queue holds, and the condition variables publish nothing.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Where a push or a pop notifies the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signal {
    /// Before releasing the mutex: the woken thread may find it still held.
    Under,
    /// Just after releasing the mutex.
    After,
}

impl Signal {
    /// Its name on the command line and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Under => "under",
            Signal::After => "after",
        }
    }

    /// Every placement, in the order the help lists them.
    pub const ALL: [Signal; 2] = [Signal::Under, Signal::After];
}

/// A bounded FIFO with blocking push and pop: what the benchmark's
/// producers and consumers share. Each implementation's calls are
/// monomorphized into the runner.
pub trait BoundedQueue: Send + Sync + 'static {
    /// An empty queue that holds at most `capacity` items (at least 1).
    fn with_capacity(capacity: usize) -> Self;

    /// Appends `item`, waiting while the queue is full; then notifies one
    /// consumer. `Some(waits)`: how many times it waited; `None`: the queue
    /// was stopped, and `item` was not appended.
    fn push(&self, item: u64, signal: Signal) -> Option<u32>;

    /// Takes the oldest item, waiting while the queue is empty; then
    /// notifies one producer. `Some((item, waits))`, or `None` once the
    /// queue is stopped.
    fn pop(&self, signal: Signal) -> Option<(u64, u32)>;

    /// Stops the queue: every waiter wakes, every push and pop from now on
    /// returns `None`. May be called again (it wakes everybody again).
    fn stop(&self);

    /// The items still queued, oldest first, taken out.
    fn drain(&self) -> Vec<u64>;
}

/// What the mutex of every implementation protects.
#[derive(Debug)]
pub struct State {
    items: VecDeque<u64>,
    capacity: usize,
    stop: bool,
}

impl State {
    fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        State {
            // Allocated once: a push never allocates.
            items: VecDeque::with_capacity(capacity),
            capacity,
            stop: false,
        }
    }

    fn full(&self) -> bool {
        self.items.len() >= self.capacity
    }
}

/// The implementations the study compares, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    /// `locklab::Mutex` and `locklab::Condvar`.
    Locklab,
    /// `std::sync::{Mutex, Condvar}`.
    Std,
    /// `parking_lot::{Mutex, Condvar}`.
    ParkingLot,
}

impl Impl {
    /// Every implementation, in display order.
    pub const ALL: [Impl; 3] = [Impl::Locklab, Impl::Std, Impl::ParkingLot];

    /// Its name on the command line and in the store (a point's `lock`).
    pub fn name(self) -> &'static str {
        match self {
            Impl::Locklab => "locklab",
            Impl::Std => "std",
            Impl::ParkingLot => "parking_lot",
        }
    }

    /// The implementation named `name`.
    pub fn from_name(name: &str) -> Option<Impl> {
        Impl::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// `locklab::Mutex` (the hybrid mutex) with `locklab::Condvar`.
pub struct LocklabQueue {
    state: locklab::Mutex<State>,
    not_empty: locklab::Condvar,
    not_full: locklab::Condvar,
}

impl BoundedQueue for LocklabQueue {
    fn with_capacity(capacity: usize) -> Self {
        LocklabQueue {
            state: locklab::Mutex::new(State::new(capacity)),
            not_empty: locklab::Condvar::new(),
            not_full: locklab::Condvar::new(),
        }
    }

    fn push(&self, item: u64, signal: Signal) -> Option<u32> {
        let mut g = self.state.lock();
        let mut waits = 0;
        while g.full() && !g.stop {
            self.not_full.wait(&mut g);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        g.items.push_back(item);
        if signal == Signal::Under {
            self.not_empty.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_empty.notify_one();
        }
        Some(waits)
    }

    fn pop(&self, signal: Signal) -> Option<(u64, u32)> {
        let mut g = self.state.lock();
        let mut waits = 0;
        while g.items.is_empty() && !g.stop {
            self.not_empty.wait(&mut g);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        let item = g.items.pop_front()?;
        if signal == Signal::Under {
            self.not_full.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_full.notify_one();
        }
        Some((item, waits))
    }

    fn stop(&self) {
        self.state.lock().stop = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    fn drain(&self) -> Vec<u64> {
        self.state.lock().items.drain(..).collect()
    }
}

/// `std::sync::Mutex` with `std::sync::Condvar` (futex-based on Linux).
pub struct StdQueue {
    state: std::sync::Mutex<State>,
    not_empty: std::sync::Condvar,
    not_full: std::sync::Condvar,
}

impl StdQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned queue still excludes; the benchmark's threads do not
        // panic while holding it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl BoundedQueue for StdQueue {
    fn with_capacity(capacity: usize) -> Self {
        StdQueue {
            state: std::sync::Mutex::new(State::new(capacity)),
            not_empty: std::sync::Condvar::new(),
            not_full: std::sync::Condvar::new(),
        }
    }

    fn push(&self, item: u64, signal: Signal) -> Option<u32> {
        let mut g = self.lock();
        let mut waits = 0;
        while g.full() && !g.stop {
            g = self
                .not_full
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        g.items.push_back(item);
        if signal == Signal::Under {
            self.not_empty.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_empty.notify_one();
        }
        Some(waits)
    }

    fn pop(&self, signal: Signal) -> Option<(u64, u32)> {
        let mut g = self.lock();
        let mut waits = 0;
        while g.items.is_empty() && !g.stop {
            g = self
                .not_empty
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        let item = g.items.pop_front()?;
        if signal == Signal::Under {
            self.not_full.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_full.notify_one();
        }
        Some((item, waits))
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    fn drain(&self) -> Vec<u64> {
        self.lock().items.drain(..).collect()
    }
}

/// `parking_lot::Mutex` with `parking_lot::Condvar`.
pub struct ParkingLotQueue {
    state: parking_lot::Mutex<State>,
    not_empty: parking_lot::Condvar,
    not_full: parking_lot::Condvar,
}

impl BoundedQueue for ParkingLotQueue {
    fn with_capacity(capacity: usize) -> Self {
        ParkingLotQueue {
            state: parking_lot::Mutex::new(State::new(capacity)),
            not_empty: parking_lot::Condvar::new(),
            not_full: parking_lot::Condvar::new(),
        }
    }

    fn push(&self, item: u64, signal: Signal) -> Option<u32> {
        let mut g = self.state.lock();
        let mut waits = 0;
        while g.full() && !g.stop {
            self.not_full.wait(&mut g);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        g.items.push_back(item);
        if signal == Signal::Under {
            self.not_empty.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_empty.notify_one();
        }
        Some(waits)
    }

    fn pop(&self, signal: Signal) -> Option<(u64, u32)> {
        let mut g = self.state.lock();
        let mut waits = 0;
        while g.items.is_empty() && !g.stop {
            self.not_empty.wait(&mut g);
            waits += 1;
        }
        if g.stop {
            return None;
        }
        let item = g.items.pop_front()?;
        if signal == Signal::Under {
            self.not_full.notify_one();
            drop(g);
        } else {
            drop(g);
            self.not_full.notify_one();
        }
        Some((item, waits))
    }

    fn stop(&self) {
        self.state.lock().stop = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    fn drain(&self) -> Vec<u64> {
        self.state.lock().items.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo_and_stop<Q: BoundedQueue>() {
        let q = Q::with_capacity(2);
        assert_eq!(q.push(1, Signal::Under), Some(0));
        assert_eq!(q.push(2, Signal::After), Some(0));
        assert_eq!(q.pop(Signal::Under), Some((1, 0)));
        assert_eq!(q.push(3, Signal::Under), Some(0));
        q.stop();
        assert_eq!(
            q.push(4, Signal::Under),
            None,
            "a stopped queue took an item"
        );
        assert_eq!(q.pop(Signal::After), None);
        assert_eq!(q.drain(), vec![2, 3]);
    }

    #[test]
    fn every_queue_is_a_fifo_that_stops() {
        fifo_and_stop::<LocklabQueue>();
        fifo_and_stop::<StdQueue>();
        fifo_and_stop::<ParkingLotQueue>();
    }

    /// A producer blocked on a full queue and a consumer blocked on an
    /// empty one both return `None` when the queue stops.
    fn stop_wakes_waiters<Q: BoundedQueue>() {
        let full = Q::with_capacity(1);
        assert_eq!(full.push(0, Signal::Under), Some(0));
        let empty = Q::with_capacity(1);
        std::thread::scope(|s| {
            let p = s.spawn(|| full.push(1, Signal::Under));
            let c = s.spawn(|| empty.pop(Signal::Under));
            std::thread::sleep(std::time::Duration::from_millis(20));
            full.stop();
            empty.stop();
            assert_eq!(p.join().unwrap(), None);
            assert_eq!(c.join().unwrap(), None);
        });
    }

    #[test]
    fn stop_wakes_blocked_producers_and_consumers() {
        stop_wakes_waiters::<LocklabQueue>();
        stop_wakes_waiters::<StdQueue>();
        stop_wakes_waiters::<ParkingLotQueue>();
    }

    #[test]
    fn names_round_trip() {
        for i in Impl::ALL {
            assert_eq!(Impl::from_name(i.name()), Some(i));
        }
        assert_eq!(Impl::from_name("nosuch"), None);
    }
}
