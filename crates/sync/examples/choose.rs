//! Choosing an algorithm: every lock of the library keeps its own name
//! (`McsMutex`, `TicketMutex`, `Futex3Mutex`, `HybridMutex`, …), and code
//! generic over `lock_api::RawMutex` runs on any of them. The crate
//! documentation's "Choose a lock" says which wins where; `locklab bench`
//! measures them on your machine.
//!
//! It runs one thread per CPU and no more: a FIFO spin lock (MCS,
//! qspinlock, ticket) with more threads than CPUs hands the lock to
//! waiters that are not running and slows by orders of magnitude (the
//! "Choose a lock" table has the figure). Run it on a quiet machine.
//!
//! ```sh
//! cargo run -p locklab --release --example choose
//! ```

use locklab::lock_api::{Mutex, RawMutex};
use locklab::{Described, Futex3Mutex, McsMutex, RawFutex3, RawMcs, RawQspin, RawTicket};
use std::time::Instant;

const EACH: u64 = 20_000;

/// `threads` threads add `EACH` each to one counter under a lock of type
/// `R`; returns the count and the nanoseconds per increment.
fn run<R: RawMutex + Described + Sync>(threads: u64) -> (u64, f64) {
    let counter: Mutex<R, u64> = Mutex::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..EACH {
                    *counter.lock() += 1;
                }
            });
        }
    });
    let ns = start.elapsed().as_nanos() as f64 / (threads * EACH) as f64;
    (counter.into_inner(), ns)
}

fn main() {
    // A specific algorithm, by its own name.
    let m = McsMutex::new(Vec::new());
    m.lock().push("queued FIFO, each waiter on its own node");
    let f = Futex3Mutex::new(0);
    *f.lock() += 1;

    // The same code over several algorithms, one thread per CPU.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as u64;
    for (name, (count, ns)) in [
        (RawMcs::INFO.name, run::<RawMcs>(threads)),
        (RawQspin::INFO.name, run::<RawQspin>(threads)),
        (RawTicket::INFO.name, run::<RawTicket>(threads)),
        (RawFutex3::INFO.name, run::<RawFutex3>(threads)),
        (
            locklab::RawMutex::INFO.name,
            run::<locklab::RawMutex>(threads),
        ),
    ] {
        assert_eq!(count, threads * EACH, "{name} lost an update");
        println!("{name:>8}: {ns:6.1} ns per increment, {threads} threads");
    }
}
