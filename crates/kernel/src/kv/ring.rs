//! A bounded multi-producer multi-consumer queue of small words, standing
//! for shared-memory rings between emulated devices and user processes: the
//! network card's receive queue (every client core produces, the driver
//! consumes) and the driver's per-server rings (the driver produces, one
//! server consumes).
//!
//! The algorithm is Dmitry Vyukov's bounded MPMC queue (1024cores.net,
//! "Bounded MPMC queue"): each slot carries a sequence number saying whose
//! turn it is. A producer at position `p` may fill slot `p mod n` once its
//! sequence is `p`; it claims the position by advancing the enqueue index
//! with a compare-and-swap, writes the value, and publishes it by setting
//! the sequence to `p + 1` (`Release`: the value, and everything the
//! producer wrote before pushing, such as a request in its mailbox, is
//! visible to the consumer that reads the sequence with `Acquire`). A
//! consumer at position `p` takes slot `p mod n` once its sequence is
//! `p + 1`, and frees it for the producer one lap later by setting it to
//! `p + n` (`Release`, so the producer's next write cannot overtake the
//! read). The indices themselves order nothing (`Relaxed`): the sequences
//! do.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{
    AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

#[derive(Debug)]
struct Slot {
    seq: AtomicUsize,
    val: AtomicU32,
}

/// See the module documentation.
#[derive(Debug)]
pub struct Ring {
    slots: Box<[Slot]>,
    mask: usize,
    enq: CachePadded<AtomicUsize>,
    deq: CachePadded<AtomicUsize>,
}

impl Ring {
    /// A ring of at least `cap` slots (a power of two).
    pub fn new(cap: usize) -> Self {
        let n = cap.max(2).next_power_of_two();
        Ring {
            slots: (0..n)
                .map(|i| Slot {
                    seq: AtomicUsize::new(i),
                    val: AtomicU32::new(0),
                })
                .collect(),
            mask: n - 1,
            enq: CachePadded::new(AtomicUsize::new(0)),
            deq: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    /// Appends `v`; `false` if the ring is full.
    pub fn push(&self, v: u32) -> bool {
        let Some((pos, slot)) = self.claim(&self.enq, 0) else {
            return false;
        };
        slot.val.store(v, Relaxed);
        slot.seq.store(pos + 1, Release);
        true
    }

    /// Takes the oldest value, if any.
    pub fn pop(&self) -> Option<u32> {
        let (pos, slot) = self.claim(&self.deq, 1)?;
        let v = slot.val.load(Relaxed);
        slot.seq.store(pos + self.mask + 1, Release);
        Some(v)
    }

    /// Claims position `pos` of `index` (the enqueue index with `lag` 0,
    /// the dequeue index with `lag` 1) once its slot's sequence is
    /// `pos + lag`, by advancing the index past it; `None` if the sequence
    /// is behind (the ring is full for a producer, empty for a consumer).
    #[inline]
    fn claim(&self, index: &AtomicUsize, lag: usize) -> Option<(usize, &Slot)> {
        let mut pos = index.load(Relaxed);
        loop {
            let slot = &self.slots[pos & self.mask];
            let seq = slot.seq.load(Acquire);
            let diff = seq as isize - (pos + lag) as isize;
            if diff == 0 {
                match index.compare_exchange_weak(pos, pos + 1, Relaxed, Relaxed) {
                    Ok(_) => return Some((pos, slot)),
                    Err(p) => pos = p,
                }
            } else if diff < 0 {
                return None;
            } else {
                pos = index.load(Relaxed);
            }
        }
    }

    /// The values queued, oldest first. Only meaningful while no thread
    /// pushes or pops (the checker's view of a stopped system).
    pub fn contents(&self) -> Vec<u32> {
        let (d, e) = (self.deq.load(Acquire), self.enq.load(Acquire));
        (d..e)
            .map(|p| self.slots[p & self.mask].val.load(Relaxed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_full_and_empty() {
        let r = Ring::new(3);
        assert_eq!(r.pop(), None);
        for v in 1..=4 {
            assert!(r.push(v));
        }
        assert!(!r.push(5), "four slots");
        assert_eq!(r.contents(), vec![1, 2, 3, 4]);
        assert_eq!(r.pop(), Some(1));
        assert!(r.push(5));
        assert_eq!(
            (2..=5).map(|_| r.pop().unwrap()).collect::<Vec<_>>(),
            vec![2, 3, 4, 5]
        );
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn producers_and_a_consumer_lose_and_duplicate_nothing() {
        let r = Arc::new(Ring::new(8));
        let hs: Vec<_> = (0..3u32)
            .map(|t| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        while !r.push(t << 20 | i) {
                            std::hint::spin_loop();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u32; 3];
        let mut got = 0;
        while got < 60_000 {
            if let Some(v) = r.pop() {
                let (t, i) = ((v >> 20) as usize, v & 0xfffff);
                assert_eq!(i, next[t], "per-producer order");
                next[t] += 1;
                got += 1;
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(r.pop(), None);
    }
}
