//! Read-mostly configuration under `locklab::RwLock`: many readers at
//! once, an occasional writer. `RwLock` is the library's `rwsem`, a
//! sleeping reader-writer lock; its guards can be narrowed with `map`.
//!
//! ```sh
//! cargo run -p locklab --example config
//! ```

use locklab::{MappedRwLockReadGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread;

#[derive(Debug)]
struct Config {
    name: String,
    limit: u32,
}

static CONFIG: RwLock<Option<Config>> = RwLock::new(None);

/// The part of the configuration a reader needs, still under the read lock.
fn name() -> MappedRwLockReadGuard<'static, str> {
    RwLockReadGuard::map(CONFIG.read(), |c| {
        c.as_ref().map_or("unset", |c| c.name.as_str())
    })
}

fn raise(mut config: RwLockWriteGuard<'_, Option<Config>>) {
    if let Some(c) = config.as_mut() {
        c.limit *= 2;
    }
}

fn main() {
    assert_eq!(&*name(), "unset");
    *CONFIG.write() = Some(Config {
        name: "primary".into(),
        limit: 10,
    });
    let seen: u64 = thread::scope(|s| {
        let readers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..10_000)
                        .map(|_| u64::from(CONFIG.read().as_ref().unwrap().limit))
                        .sum::<u64>()
                })
            })
            .collect();
        raise(CONFIG.write());
        readers.into_iter().map(|r| r.join().unwrap()).sum()
    });
    let limit = CONFIG.read().as_ref().unwrap().limit;
    assert_eq!(limit, 20);
    // Every read saw the limit before the raise (10) or after it (20).
    assert!((400_000..=800_000).contains(&seen));
    println!("{} has limit {limit}; readers summed {seen}", &*name());
}
