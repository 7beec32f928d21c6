//! Interrupt delivery: an emulated device raises an interrupt line; the
//! kernel, on the line's core, takes it in a kernel entry and turns it into
//! a signal on the notification the line is bound to; the driver thread
//! waiting there wakes, serves the device, and acknowledges the interrupt
//! with a system call, which unmasks the line. This is seL4's model (an IRQ
//! handler capability bound to a notification) and why seed 002 §5.2 counts
//! two kernel entries per interrupt in a microkernel.
//!
//! # The line's states
//!
//! `Idle` (unmasked, nothing pending) → `Pending` (raised, not yet taken:
//! the device's compare-and-swap) → `Masked` (taken: the kernel signalled
//! the notification) → `Idle` (acknowledged). A level-triggered line stays
//! asserted while the device has work: `asserted` is set by every raise and
//! cleared when the kernel takes the interrupt, and an acknowledgement that
//! finds it set again pends the line at once, so work that arrived while the
//! line was masked is never left without an interrupt.
//!
//! # Why no interrupt is lost
//!
//! The device sets `asserted` and then tries `Idle → Pending`; the
//! acknowledgement stores `Idle` and then reads `asserted`. All four are
//! `SeqCst`, so (as in Dekker's protocol) at least one side sees the
//! other's write: the device finds the line `Idle` and pends it, or the
//! acknowledgement finds it asserted and pends it (a compare-and-swap, so
//! only one of them does). Taking the interrupt swaps `asserted` to false
//! before signalling; a raise whose `asserted` store the swap read happened
//! before the swap (`SeqCst` store and read-modify-write synchronise), so
//! the device work behind it is visible to the driver the signal wakes.
//!
//! The state is a real atomic, not a kernel word: the device changes it
//! without entering the kernel. The kernel's own transitions are
//! compare-and-swaps too, inside its critical section (or its transaction,
//! where a device's write aborts it like any conflicting write).
//!
//! # Waking a halted core
//!
//! A raise that pends the line rings the doorbell of the core the line is
//! wired to ([`crate::idle::Doorbell`]), after its compare-and-swap, so an
//! idle core that halted sees the interrupt at once. A line is wired to one
//! core of one kernel, at boot.

use crate::idle::Doorbell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};

/// Unmasked, nothing pending.
pub const IDLE: u32 = 0;
/// Raised, not yet taken by the kernel.
pub const PENDING: u32 = 1;
/// Taken and signalled; waits for the driver's acknowledgement.
pub const MASKED: u32 = 2;

/// An interrupt line shared by a device and the kernel.
#[derive(Debug, Default)]
pub struct IrqLine {
    state: AtomicU32,
    asserted: AtomicBool,
    /// Raises by the device.
    raised: AtomicU64,
    /// Interrupts the kernel took (each one signal).
    taken: AtomicU64,
    /// Acknowledgements of a masked line.
    acked: AtomicU64,
    /// The doorbell of the core the line is wired to.
    bell: OnceLock<Arc<Doorbell>>,
}

impl IrqLine {
    /// A quiet line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Device side: there is work; interrupt the line's core unless an
    /// interrupt is already pending or masked.
    #[inline]
    pub fn raise(&self) {
        self.raised.fetch_add(1, Relaxed);
        self.asserted.store(true, SeqCst);
        if self.state.load(SeqCst) == IDLE
            && self
                .state
                .compare_exchange(IDLE, PENDING, SeqCst, SeqCst)
                .is_ok()
        {
            if let Some(b) = self.bell.get() {
                b.ring();
            }
        }
    }

    /// Wires the line to a core's doorbell; `false` if it is already wired
    /// to another one (a line belongs to one kernel).
    pub(crate) fn wire(&self, bell: &Arc<Doorbell>) -> bool {
        Arc::ptr_eq(self.bell.get_or_init(|| Arc::clone(bell)), bell)
    }

    /// The line's state ([`IDLE`], [`PENDING`] or [`MASKED`]).
    #[inline(always)]
    pub fn state(&self) -> u32 {
        self.state.load(Relaxed)
    }

    /// Kernel side, on the line's core inside the kernel: takes a pending
    /// interrupt (masking the line); `true` if there was one to signal.
    #[inline]
    pub(crate) fn take(&self) -> bool {
        if self
            .state
            .compare_exchange(PENDING, MASKED, SeqCst, SeqCst)
            .is_err()
        {
            return false;
        }
        self.asserted.swap(false, SeqCst);
        self.taken.fetch_add(1, Relaxed);
        true
    }

    /// Kernel side: the driver acknowledges. `false` if the line was not
    /// masked (nothing to acknowledge).
    #[inline]
    pub(crate) fn ack(&self) -> bool {
        if self
            .state
            .compare_exchange(MASKED, IDLE, SeqCst, SeqCst)
            .is_err()
        {
            return false;
        }
        self.acked.fetch_add(1, Relaxed);
        if self.asserted.load(SeqCst) {
            let _ = self.state.compare_exchange(IDLE, PENDING, SeqCst, SeqCst);
        }
        true
    }

    /// Raises by the device so far.
    pub fn raised(&self) -> u64 {
        self.raised.load(Relaxed)
    }

    /// Interrupts taken so far.
    pub fn taken(&self) -> u64 {
        self.taken.load(Relaxed)
    }

    /// Acknowledgements so far.
    pub fn acked(&self) -> u64 {
        self.acked.load(Relaxed)
    }

    /// Whether the device asserted the line since the kernel last took it.
    pub fn asserted(&self) -> bool {
        self.asserted.load(SeqCst)
    }

    /// Test hook: forces the state (to show the checker catches a line in
    /// a state its counts deny).
    #[doc(hidden)]
    pub fn force_state(&self, s: u32) {
        self.state.store(s, SeqCst)
    }
}

/// An interrupt line wired to a core and bound to a notification: a
/// kernel object of a [`System`](crate::System), named by capabilities of
/// kind [`ObjKind::Irq`](crate::objects::ObjKind::Irq) (which acknowledge
/// it).
#[derive(Debug, Clone)]
pub struct IrqSpec {
    /// The core that takes its interrupts.
    pub core: u32,
    /// The notification it signals.
    pub ntfn: u32,
    /// The badge bits of its signals.
    pub badge: u64,
    /// The line, shared with the device that raises it.
    pub line: Arc<IrqLine>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raise_while_masked_pends_the_line_again_on_ack() {
        let l = IrqLine::new();
        l.raise();
        assert_eq!(l.state(), PENDING);
        l.raise(); // merges
        assert!(l.take());
        assert!(!l.take(), "taken once");
        assert_eq!(l.state(), MASKED);
        assert!(!l.asserted());
        l.raise(); // work arrives while masked
        assert_eq!(l.state(), MASKED);
        assert!(l.ack());
        assert_eq!(l.state(), PENDING, "the ack found the line asserted");
        assert!(l.take());
        assert!(l.ack());
        assert_eq!(l.state(), IDLE);
        assert!(!l.ack(), "nothing to acknowledge");
        assert_eq!((l.raised(), l.taken(), l.acked()), (3, 2, 2));
    }

    #[test]
    fn raises_racing_acks_never_leave_an_asserted_line_idle() {
        // A device thread raises while this one takes and acks; whenever
        // both stop, an asserted line must be pending (or masked).
        for _ in 0..200 {
            let l = Arc::new(IrqLine::new());
            let d = {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        l.raise();
                    }
                })
            };
            for _ in 0..400 {
                if l.take() {
                    l.ack();
                }
            }
            d.join().unwrap();
            if l.asserted() {
                assert_ne!(l.state(), IDLE, "an asserted line left idle");
            }
        }
    }
}
