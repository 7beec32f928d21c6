//! A counter shared by threads, in a `static`: `locklab::Mutex::new` is a
//! `const fn`, as `parking_lot::Mutex::new` is, so no lazy initialisation.
//!
//! ```sh
//! cargo run -p locklab --example counter
//! ```

use locklab::{Mutex, MutexGuard};
use std::thread;

static HITS: Mutex<u64> = Mutex::new(0);

/// Guards can be named, passed and returned like `parking_lot`'s.
fn bump(hits: &mut MutexGuard<'_, u64>) {
    **hits += 1;
}

fn main() {
    let threads = 4;
    let per_thread = 100_000;
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..per_thread {
                    bump(&mut HITS.lock());
                }
            });
        }
    });
    let hits = *HITS.lock();
    assert_eq!(hits, threads * per_thread);
    println!("{threads} threads counted {hits} hits under locklab::Mutex");
}
