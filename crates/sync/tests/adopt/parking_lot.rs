use parking_lot::{
    Condvar, MappedMutexGuard, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    WaitTimeoutResult,
};
// A program written for parking_lot: a job queue under a mutex and a
// condition variable, ids from a mutex in a `static`, a configuration
// under a reader-writer lock, and guards named in signatures. This file
// exists twice, as `parking_lot.rs` and `locklab.rs`, which differ only in
// the first line; `tests/adopt.rs` compiles and runs both.

use std::collections::VecDeque;
use std::thread;
use std::time::Duration;

pub struct Queue {
    jobs: Mutex<VecDeque<u64>>,
    ready: Condvar,
    closed: Mutex<bool>,
}

pub struct Config {
    pub workers: usize,
    pub batch: u64,
}

const fn new_queue() -> Queue {
    Queue {
        jobs: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
        closed: Mutex::new(false),
    }
}

static NEXT_ID: Mutex<u64> = Mutex::new(1);
static QUEUE: Queue = new_queue();
static CONFIG: RwLock<Config> = RwLock::new(Config {
    workers: 2,
    batch: 50,
});
static DONE: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn take_id(next: &mut MutexGuard<'_, u64>) -> u64 {
    let id = **next;
    **next += 1;
    id
}

fn batch(config: &RwLockReadGuard<'_, Config>) -> u64 {
    config.batch
}

fn add_worker(mut config: RwLockWriteGuard<'_, Config>) -> usize {
    config.workers += 1;
    config.workers
}

fn first_done(done: MutexGuard<'_, Vec<u64>>) -> MappedMutexGuard<'_, u64> {
    MutexGuard::map(done, |d| &mut d[0])
}

fn push(id: u64) {
    QUEUE.jobs.lock().push_back(id);
    QUEUE.ready.notify_one();
}

/// Takes the next job, or `None` once the queue is closed and empty.
fn pop() -> Option<u64> {
    let mut jobs = QUEUE.jobs.lock();
    loop {
        if let Some(id) = jobs.pop_front() {
            return Some(id);
        }
        if *QUEUE.closed.lock() {
            return None;
        }
        // A timed wait, so a close that comes between the check above and
        // the wait is seen within a millisecond.
        QUEUE.ready.wait_for(&mut jobs, Duration::from_millis(1));
    }
}

/// What `run` did: the jobs done, their sum, the workers at the end, the
/// first job done, and whether a wait with nobody to notify timed out.
pub struct Outcome {
    pub done: usize,
    pub sum: u64,
    pub workers: usize,
    pub first: u64,
    pub timed_out: bool,
}

pub fn run() -> Outcome {
    let workers = CONFIG.read().workers;
    let per_producer = batch(&CONFIG.read());
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(id) = pop() {
                    DONE.lock().push(id);
                }
            });
        }
        let producers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || {
                    for _ in 0..per_producer {
                        push(take_id(&mut NEXT_ID.lock()));
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        *QUEUE.closed.lock() = true;
        let _guard = QUEUE.jobs.lock();
        QUEUE.ready.notify_all();
    });
    let workers = add_worker(CONFIG.write());
    let lonely = Mutex::new(());
    let waited: WaitTimeoutResult =
        Condvar::new().wait_for(&mut lonely.lock(), Duration::from_millis(2));
    let timed_out = waited.timed_out();
    let (done, sum) = {
        let d = DONE.lock();
        (d.len(), d.iter().sum())
    };
    let first = *first_done(DONE.lock());
    Outcome {
        done,
        sum,
        workers,
        first,
        timed_out,
    }
}
