//! The operations `bench costs` times, one thread each (two for the cache
//! transfer), and the machine facts they are sized by.
//!
//! Seed 003's Table 1 gives the cost of basic operations on a 700 MHz
//! Pentium III "that can complete two integer instructions per clock":
//! an instruction, a clock cycle, an L2 hit, an atomic increment, a
//! cmpxchg-based atomic increment, main memory, a CPU-local lock and a
//! cache transfer. Each row here measures one of them the way the seed
//! defines it, as far as a user-space program can:
//!
//! * *instruction*: one of eight independent integer adds per loop turn
//!   (four registers, so the adds issue in parallel): the time per
//!   instruction when nothing waits on anything;
//! * *clock cycle*: one of eight adds each waiting on the one before (a
//!   dependent add takes one cycle on every x86 core), so the time per add
//!   is one clock;
//! * *L2 hit* and *main memory*: a pointer chase (each load's address is
//!   the previous load's value, so loads cannot overlap) over a ring of
//!   cache lines in random order, sized to 4 × the L1 data cache (so it
//!   misses L1 and hits L2) and to 4 × the last-level cache, at least
//!   64 MiB (so it misses every cache; with 4 KiB pages it also misses the
//!   TLB, which the seed's figure may not include);
//! * *atomic increment*: `lock xadd` on one cache-resident word, one
//!   after another; *cmpxchg increment*: load, then `lock cmpxchg` the
//!   incremented value (the seed's "cmpxchg atomic increment");
//! * *CPU-local lock*: acquire and release of an uncontended test-and-set
//!   lock whose line is in this CPU's cache;
//! * *cache transfer*: half the round trip of a cache line between two
//!   pinned threads on different CPUs ([`crate::core::machine::c2c_round_trip_ns`]).
//!
//! The instruction and clock rows use `asm!` and exist on x86-64 only.
//! They run eight adds per loop turn, `n / 8` turns: exact, since the
//! batch sizes of [`batched_cost`] are 1000 doubled, multiples of eight.
//! The loop itself is in the `asm!` too (a `dec` and a `jnz` beside the
//! adds, which the core runs in parallel with them), so what is timed does
//! not depend on how the compiler builds a Rust loop: the lab's tests build
//! the lab unoptimized, and there a Rust loop around the adds cost more
//! than the adds, and "instruction" came out slower than "clock cycle".

use crate::core::results::Rep;
use crate::core::sweep::batched_cost;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// One repetition of one operation, `secs` long.
pub type OpFn = fn(secs: f64) -> Result<Rep, String>;

/// Bytes of a cache line, the stride of the pointer-chase rings.
const LINE: usize = 64;

/// A cache's size from sysfs (`index` of cpu0: 0 = L1 data on x86, 3 =
/// the L3 where there is one), in bytes.
fn cache_bytes(level: u32, kind: &str) -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
        let lvl: Option<u32> = read("level").and_then(|s| s.trim().parse().ok());
        let ty = read("type").map(|s| s.trim().to_string());
        if lvl == Some(level) && ty.as_deref().is_some_and(|t| t == kind || t == "Unified") {
            let s = read("size")?;
            let s = s.trim();
            let (num, mul) = match s.strip_suffix('K') {
                Some(n) => (n, 1024),
                None => match s.strip_suffix('M') {
                    Some(n) => (n, 1024 * 1024),
                    None => (s, 1),
                },
            };
            return num.parse::<usize>().ok().map(|n| n * mul);
        }
    }
    None
}

/// The L1 data cache (32 KiB where sysfs does not say).
pub fn l1_bytes() -> usize {
    cache_bytes(1, "Data").unwrap_or(32 << 10)
}

/// The last-level cache (the largest level sysfs lists; 32 MiB where it
/// lists none).
pub fn llc_bytes() -> usize {
    (2..=4)
        .rev()
        .find_map(|l| cache_bytes(l, "Unified"))
        .unwrap_or(32 << 20)
}

/// The ring of the L2 row: 4 × L1d.
pub fn l2_ring_bytes() -> usize {
    4 * l1_bytes()
}

/// The ring of the memory row: 4 × the last-level cache, 64 MiB to 1 GiB.
pub fn memory_ring_bytes() -> usize {
    (4 * llc_bytes()).clamp(64 << 20, 1 << 30)
}

/// A ring of `bytes / LINE` slots, one per cache line, each holding the
/// index of the next slot, in one random cycle through all of them.
pub fn ring(bytes: usize, seed: u64) -> Vec<[usize; LINE / 8]> {
    let n = (bytes / LINE).max(2);
    // A random cyclic order: shuffle the slots (Fisher–Yates with a
    // xorshift generator), then link each to the next in that order.
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = seed | 1;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut slots = vec![[0usize; LINE / 8]; n];
    for w in 0..n {
        slots[order[w]][0] = order[(w + 1) % n];
    }
    slots
}

/// `n` dependent loads around `ring` from `at`; where it ended.
#[inline(never)]
fn chase(ring: &[[usize; LINE / 8]], mut at: usize, n: u64) -> usize {
    for _ in 0..n {
        at = ring[at][0];
    }
    at
}

fn chase_rep(secs: f64, bytes: usize) -> Result<Rep, String> {
    batched_cost(
        secs,
        || (ring(bytes, 0x9e37_79b9_7f4a_7c15), 0usize),
        |(r, at), n| *at = black_box(chase(r, *at, n)),
    )
}

/// An L2 hit: a pointer chase over [`l2_ring_bytes`].
pub fn l2_hit(secs: f64) -> Result<Rep, String> {
    chase_rep(secs, l2_ring_bytes())
}

/// Main memory: a pointer chase over [`memory_ring_bytes`].
pub fn main_memory(secs: f64) -> Result<Rep, String> {
    chase_rep(secs, memory_ring_bytes())
}

/// Eight independent adds per turn over four registers; per add.
#[cfg(target_arch = "x86_64")]
pub fn instruction(secs: f64) -> Result<Rep, String> {
    batched_cost(
        secs,
        || (),
        |_, n| {
            let (mut a, mut b, mut c, mut d) = (0u64, 1u64, 2u64, 3u64);
            // SAFETY: register arithmetic and a counted loop only; no
            // memory, no stack; flags clobbered (the default of `asm!`).
            // `turns` is at least 1, so `dec` reaches 0.
            unsafe {
                core::arch::asm!(
                    "2:",
                    "add {a}, {a}", "add {b}, {b}", "add {c}, {c}", "add {d}, {d}",
                    "add {a}, {a}", "add {b}, {b}", "add {c}, {c}", "add {d}, {d}",
                    "dec {turns}",
                    "jnz 2b",
                    a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
                    turns = inout(reg) turns(n) => _,
                    options(nomem, nostack),
                );
            }
            black_box((a, b, c, d));
        },
    )
}

/// Eight dependent adds per turn on one register; per add (one clock).
#[cfg(target_arch = "x86_64")]
pub fn clock_cycle(secs: f64) -> Result<Rep, String> {
    batched_cost(
        secs,
        || (),
        |_, n| {
            let mut a = 0u64;
            // SAFETY: as in `instruction`.
            unsafe {
                core::arch::asm!(
                    "2:",
                    "add {a}, {a}", "add {a}, {a}", "add {a}, {a}", "add {a}, {a}",
                    "add {a}, {a}", "add {a}, {a}", "add {a}, {a}", "add {a}, {a}",
                    "dec {turns}",
                    "jnz 2b",
                    a = inout(reg) a,
                    turns = inout(reg) turns(n) => _,
                    options(nomem, nostack),
                );
            }
            black_box(a);
        },
    )
}

/// Loop turns of eight adds for `n` adds (at least one turn).
#[cfg(target_arch = "x86_64")]
fn turns(n: u64) -> u64 {
    n.div_ceil(8).max(1)
}

/// `lock xadd` on one word, one after another.
pub fn atomic_increment(secs: f64) -> Result<Rep, String> {
    batched_cost(
        secs,
        || AtomicU64::new(0),
        |a, n| {
            for _ in 0..n {
                a.fetch_add(1, Ordering::SeqCst);
            }
            black_box(a.load(Ordering::Relaxed));
        },
    )
}

/// Load, then `lock cmpxchg` the incremented value (retrying on failure,
/// which one thread never sees).
pub fn cmpxchg_increment(secs: f64) -> Result<Rep, String> {
    batched_cost(
        secs,
        || AtomicU64::new(0),
        |a, n| {
            for _ in 0..n {
                let mut v = a.load(Ordering::Relaxed);
                while let Err(now) =
                    a.compare_exchange(v, v + 1, Ordering::SeqCst, Ordering::Relaxed)
                {
                    v = now;
                }
            }
            black_box(a.load(Ordering::Relaxed));
        },
    )
}

/// Half a cache line's round trip between two pinned CPUs, as one
/// repetition (it times its own batches and keeps the fastest).
pub fn cache_transfer(_secs: f64) -> Result<Rep, String> {
    let t0 = std::time::Instant::now();
    let rt = crate::core::machine::c2c_round_trip_ns()
        .ok_or("needs two CPUs this process may be pinned to")?;
    let wall = t0.elapsed().as_secs_f64();
    let mut r = Rep::one_thread(0, wall, wall, 1);
    r.ns_per_op = rt / 2.0;
    r.throughput_ops_s = 1e9 / r.ns_per_op;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_is_one_cycle_through_every_line() {
        let r = ring(64 * 1000, 7);
        let mut seen = vec![false; r.len()];
        let mut at = 0;
        for _ in 0..r.len() {
            assert!(!seen[at], "slot {at} visited twice before the end");
            seen[at] = true;
            at = r[at][0];
        }
        assert_eq!(at, 0, "the cycle closes after every slot");
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn rings_are_sized_to_miss_the_cache_they_must() {
        assert!(l2_ring_bytes() > l1_bytes());
        assert!(memory_ring_bytes() >= 4 * llc_bytes().min(256 << 20));
        assert!(memory_ring_bytes() >= 64 << 20);
    }
}
