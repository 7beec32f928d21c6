//! The synchronization primitives `bench costs` times, each uncontended
//! on one thread: what one operation of each costs when nothing else is
//! in its way, the cost seed 003's argument turns on (its lesson: "avoid
//! expensive operations", which is what RCU's read side does).
//!
//! Each lock is acquired and released (read and write separately for the
//! reader-writer locks); an RCU read-side section is entered and left; a
//! seqlock read begins and checks for a retry; `synchronize` waits for a
//! grace period with this thread registered and outside any section (and
//! no other reader); `call` queues an empty callback, which the domain's
//! background thread runs later (its cost lands there, on another CPU
//! where there is one, and back-pressure throttles `call` to it).

use super::ops::OpFn;
use crate::core::results::Rep;
use crate::core::sweep::batched_cost;
use locklab::rcu::{Qsbr, Rcu};
use locklab::{BrLock, QspinMutex, RwFairLock, SeqCount, TasMutex, TicketMutex};
use std::hint::black_box;

macro_rules! mutex_op {
    ($name:ident, $ty:ty) => {
        /// Acquire and release, uncontended.
        pub fn $name(secs: f64) -> Result<Rep, String> {
            let m = <$ty>::new(0u64);
            batched_cost(
                secs,
                || (),
                |_, n| {
                    for _ in 0..n {
                        *m.lock() += 1;
                    }
                },
            )
        }
    };
}

mutex_op!(tas, TasMutex<u64>);
mutex_op!(ticket, TicketMutex<u64>);
mutex_op!(qspin, QspinMutex<u64>);

/// A reader-writer lock's read side, acquire and release.
pub fn rw_read(secs: f64) -> Result<Rep, String> {
    let l = RwFairLock::new(0u64);
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                black_box(*l.read());
            }
        },
    )
}

/// A reader-writer lock's write side, acquire and release.
pub fn rw_write(secs: f64) -> Result<Rep, String> {
    let l = RwFairLock::new(0u64);
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                *l.write() += 1;
            }
        },
    )
}

/// The big-reader lock's read side: this thread's slot only.
pub fn br_read(secs: f64) -> Result<Rep, String> {
    let l = BrLock::new(0u64);
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                black_box(*l.read());
            }
        },
    )
}

/// The big-reader lock's write side: every slot.
pub fn br_write(secs: f64) -> Result<Rep, String> {
    let l = BrLock::new(0u64);
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                *l.write() += 1;
            }
        },
    )
}

/// A seqlock read: begin, read, check for a retry.
pub fn seq_read(secs: f64) -> Result<Rep, String> {
    let s = SeqCount::new();
    let data = 7u64;
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                loop {
                    let start = s.read_begin();
                    black_box(data);
                    if !s.read_retry(start) {
                        break;
                    }
                }
            }
        },
    )
}

/// An RCU read-side section (general-purpose flavour; `fenced`: readers
/// fence instead of the grace period's membarrier).
fn rcu_read_with(secs: f64, fenced: bool) -> Result<Rep, String> {
    let rcu = Rcu::builder().fenced(fenced).build();
    batched_cost(
        secs,
        || rcu.register(),
        |r, n| {
            for _ in 0..n {
                let g = r.read();
                black_box(&g);
            }
        },
    )
}

/// An RCU read-side section, general-purpose flavour.
pub fn rcu_read(secs: f64) -> Result<Rep, String> {
    rcu_read_with(secs, false)
}

/// An RCU read-side section, readers fencing.
pub fn rcu_read_fenced(secs: f64) -> Result<Rep, String> {
    rcu_read_with(secs, true)
}

/// An RCU read-side section, QSBR flavour (nothing to do).
pub fn qsbr_read(secs: f64) -> Result<Rep, String> {
    let q = Qsbr::new();
    batched_cost(
        secs,
        || q.register(),
        |r, n| {
            for _ in 0..n {
                let g = r.read();
                black_box(&g);
            }
        },
    )
}

/// A QSBR quiescent state (what a QSBR reader pays now and then).
pub fn qsbr_quiescent(secs: f64) -> Result<Rep, String> {
    let q = Qsbr::new();
    batched_cost(
        secs,
        || q.register(),
        |r, n| {
            for _ in 0..n {
                r.quiescent_state();
            }
        },
    )
}

/// `synchronize` of the general-purpose flavour, this thread registered
/// and outside any section.
pub fn rcu_synchronize(secs: f64) -> Result<Rep, String> {
    let rcu = Rcu::new();
    batched_cost(
        secs,
        || rcu.register(),
        |_, n| {
            for _ in 0..n {
                rcu.synchronize();
            }
        },
    )
}

/// `synchronize` of QSBR with no reader registered.
pub fn qsbr_synchronize(secs: f64) -> Result<Rep, String> {
    let q = Qsbr::new();
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                q.synchronize();
            }
        },
    )
}

/// `call` of an empty callback (general-purpose flavour).
pub fn rcu_call(secs: f64) -> Result<Rep, String> {
    let rcu = Rcu::new();
    let r = batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                rcu.call(|| {});
            }
        },
    );
    rcu.barrier();
    r
}

/// The timing loop alone: one turn with an opaque value, what every row
/// below pays besides its operation (a figure near it is the loop's, not
/// the operation's).
pub fn empty_loop(secs: f64) -> Result<Rep, String> {
    batched_cost(
        secs,
        || (),
        |_, n| {
            for _ in 0..n {
                black_box(());
            }
        },
    )
}

/// The primitives' rows: name, what is timed, the function.
pub const PRIMITIVES: [(&str, &str, OpFn); 16] = [
    ("empty loop", "the timing loop alone", empty_loop),
    ("spin tas", "acquire+release", tas),
    ("spin ticket", "acquire+release", ticket),
    ("spin qspin", "acquire+release", qspin),
    ("rwlock read", "rw-fair read acquire+release", rw_read),
    ("rwlock write", "rw-fair write acquire+release", rw_write),
    ("brlock read", "acquire+release, own slot", br_read),
    ("brlock write", "acquire+release, every slot", br_write),
    ("seqlock read", "begin, read, retry check", seq_read),
    ("rcu read", "enter+leave, general-purpose", rcu_read),
    (
        "rcu read fenced",
        "enter+leave, readers fence",
        rcu_read_fenced,
    ),
    ("rcu-qsbr read", "enter+leave, QSBR", qsbr_read),
    ("rcu-qsbr quiescent", "one quiescent state", qsbr_quiescent),
    (
        "rcu synchronize",
        "one grace period, no reader inside",
        rcu_synchronize,
    ),
    (
        "rcu-qsbr synchronize",
        "one grace period, no reader",
        qsbr_synchronize,
    ),
    ("rcu call", "queue an empty callback", rcu_call),
];
