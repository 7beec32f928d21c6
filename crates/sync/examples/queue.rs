//! A bounded job queue: producers wait while it is full, consumers while it
//! is empty, on two `Condvar`s over one `locklab::Mutex`.
//!
//! `wait_while` re-checks its condition after every wake-up; locklab's
//! `Condvar::wait` may return without a notify (as `std`'s may, and unlike
//! `parking_lot`'s), so a bare `wait` belongs in a loop.
//!
//! ```sh
//! cargo run -p locklab --example queue
//! ```

use locklab::{Condvar, Mutex};
use std::collections::VecDeque;
use std::thread;
use std::time::Duration;

struct Queue<T> {
    items: Mutex<(VecDeque<T>, bool)>, // the jobs, and whether it is closed
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

impl<T> Queue<T> {
    fn new(capacity: usize) -> Self {
        Queue {
            items: Mutex::new((VecDeque::new(), false)),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity,
        }
    }

    fn push(&self, item: T) {
        let mut g = self.items.lock();
        self.not_full
            .wait_while(&mut g, |(items, _)| items.len() == self.capacity);
        g.0.push_back(item);
        drop(g);
        self.not_empty.notify_one();
    }

    /// The next item, or `None` once the queue is closed and drained.
    fn pop(&self) -> Option<T> {
        let mut g = self.items.lock();
        self.not_empty
            .wait_while(&mut g, |(items, closed)| items.is_empty() && !*closed);
        let item = g.0.pop_front();
        drop(g);
        self.not_full.notify_one();
        item
    }

    fn close(&self) {
        self.items.lock().1 = true;
        self.not_empty.notify_all();
    }
}

fn main() {
    let queue = Queue::new(8);
    let total = thread::scope(|s| {
        let consumers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut sum = 0u64;
                    while let Some(n) = queue.pop() {
                        sum += n;
                    }
                    sum
                })
            })
            .collect();
        for n in 1..=1000 {
            queue.push(n);
        }
        queue.close();
        consumers
            .into_iter()
            .map(|c| c.join().unwrap())
            .sum::<u64>()
    });
    assert_eq!(total, 1000 * 1001 / 2);

    // A timed wait that nobody notifies.
    let mut g = queue.items.lock();
    let r = queue.not_empty.wait_for(&mut g, Duration::from_millis(10));
    assert!(r.timed_out());
    println!("3 consumers summed {total}; a wait with no producer timed out");
}
