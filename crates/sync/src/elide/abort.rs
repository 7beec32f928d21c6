//! Why a transaction aborted: the `xabort` codes of lock elision and the
//! RTM abort status that `xbegin` reports, decoded into [`Abort`].

use core::fmt;

/// The `xabort` code of a transaction that found the lock held (seed 002's
/// `_xabort('L')`).
pub const LOCK_BUSY: u8 = b'L';

/// The `xabort` code of a transaction that tried to take an elided lock
/// inside itself (see the module documentation).
pub const NESTED: u8 = b'N';

// The RTM abort status in `eax` (Intel SDM vol. 1, "RTM Abort Status
// Definition"): bits 0–5 say why, bits 24–31 carry `xabort`'s operand.
pub(super) const STATUS_EXPLICIT: u32 = 1 << 0;
pub(super) const STATUS_RETRY: u32 = 1 << 1;
pub(super) const STATUS_CONFLICT: u32 = 1 << 2;
pub(super) const STATUS_CAPACITY: u32 = 1 << 3;
pub(super) const STATUS_DEBUG: u32 = 1 << 4;
pub(super) const STATUS_NESTED: u32 = 1 << 5;
pub(super) const STATUS_CODE_SHIFT: u32 = 24;

/// Why a hardware transaction aborted: the RTM status bits, decoded.
///
/// Several bits may be set at once; none set means the hardware gave no
/// reason (an interrupt, an exception or an instruction transactions do
/// not allow, among others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Abort {
    /// Aborted by `xabort`, with its 8-bit code.
    pub explicit: Option<u8>,
    /// The hardware thinks a retry may succeed.
    pub retry: bool,
    /// Another processor touched memory the transaction had read or
    /// written.
    pub conflict: bool,
    /// The transaction outgrew what the hardware can track.
    pub capacity: bool,
    /// A debug breakpoint was hit.
    pub debug: bool,
    /// The abort happened in a nested transaction.
    pub nested: bool,
}

impl Abort {
    /// The abort of a transaction that found the lock held.
    pub const LOCK_BUSY: Abort = Abort::xabort(LOCK_BUSY);

    /// An explicit abort with `code`, as `xabort code` reports it.
    pub const fn xabort(code: u8) -> Self {
        Self::from_status(STATUS_EXPLICIT | (code as u32) << STATUS_CODE_SHIFT)
    }

    /// Decodes the status `xbegin` leaves in `eax` after an abort.
    pub const fn from_status(status: u32) -> Self {
        let explicit = status & STATUS_EXPLICIT != 0;
        Self {
            explicit: if explicit {
                Some((status >> STATUS_CODE_SHIFT) as u8)
            } else {
                None
            },
            retry: status & STATUS_RETRY != 0,
            conflict: status & STATUS_CONFLICT != 0,
            capacity: status & STATUS_CAPACITY != 0,
            debug: status & STATUS_DEBUG != 0,
            nested: status & STATUS_NESTED != 0,
        }
    }

    /// The status word this abort decodes from.
    pub const fn status(self) -> u32 {
        let mut s = 0;
        if let Some(code) = self.explicit {
            s |= STATUS_EXPLICIT | (code as u32) << STATUS_CODE_SHIFT;
        }
        if self.retry {
            s |= STATUS_RETRY;
        }
        if self.conflict {
            s |= STATUS_CONFLICT;
        }
        if self.capacity {
            s |= STATUS_CAPACITY;
        }
        if self.debug {
            s |= STATUS_DEBUG;
        }
        if self.nested {
            s |= STATUS_NESTED;
        }
        s
    }

    /// Whether this is the abort of a transaction that found the lock held.
    pub const fn is_lock_busy(self) -> bool {
        matches!(self.explicit, Some(LOCK_BUSY))
    }

    /// The one [`Cause`] this abort is tallied under.
    pub const fn cause(self) -> Cause {
        if self.is_lock_busy() {
            Cause::LockBusy
        } else if self.conflict {
            Cause::Conflict
        } else if self.capacity {
            Cause::Capacity
        } else if !self.retry {
            Cause::RetryClear
        } else {
            Cause::Other
        }
    }
}

/// Why an abort happened, one answer per abort so that tallies add up to
/// the aborts: the first of these that applies.
///
/// The status bits overlap (an `xabort` always has the retry bit clear, a
/// capacity abort usually has), so the order matters: an explicit abort
/// with [`LOCK_BUSY`] is the lock's own doing whatever else is set; then
/// the two reasons the hardware names; then whatever the hardware says a
/// retry cannot cure (interrupts, system calls, `pause` on some parts,
/// other `xabort` codes such as [`NESTED`]); what remains had the retry
/// bit set and no reason given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// `xabort` with [`LOCK_BUSY`]: the transaction found the lock held.
    LockBusy,
    /// Another processor touched what the transaction had read or written.
    Conflict,
    /// The transaction outgrew what the hardware tracks.
    Capacity,
    /// Any other abort whose retry bit is clear: the hardware says trying
    /// again cannot succeed.
    RetryClear,
    /// Retry bit set, no reason given.
    Other,
}

/// Aborts counted by [`Cause`]: what [`Outcome::causes`] reports for one
/// acquisition, and what a caller sums over many.
///
/// [`Outcome::causes`]: super::Outcome::causes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Causes {
    /// [`Cause::LockBusy`].
    pub lock_busy: u32,
    /// [`Cause::Conflict`].
    pub conflict: u32,
    /// [`Cause::Capacity`].
    pub capacity: u32,
    /// [`Cause::RetryClear`].
    pub retry_clear: u32,
    /// [`Cause::Other`].
    pub other: u32,
}

impl Causes {
    /// Counts one abort under its cause.
    #[inline]
    pub fn count(&mut self, abort: Abort) {
        let n = match abort.cause() {
            Cause::LockBusy => &mut self.lock_busy,
            Cause::Conflict => &mut self.conflict,
            Cause::Capacity => &mut self.capacity,
            Cause::RetryClear => &mut self.retry_clear,
            Cause::Other => &mut self.other,
        };
        *n += 1;
    }

    /// Every abort counted.
    pub fn total(&self) -> u32 {
        self.lock_busy + self.conflict + self.capacity + self.retry_clear + self.other
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut part = |f: &mut fmt::Formatter<'_>, s: fmt::Arguments<'_>| {
            let r = write!(f, "{sep}{s}");
            sep = "+";
            r
        };
        if let Some(code) = self.explicit {
            if code.is_ascii_graphic() {
                part(f, format_args!("explicit '{}'", code as char))?;
            } else {
                part(f, format_args!("explicit {code:#04x}"))?;
            }
        }
        for (set, name) in [
            (self.conflict, "conflict"),
            (self.capacity, "capacity"),
            (self.debug, "debug"),
            (self.nested, "nested"),
            (self.retry, "retry"),
        ] {
            if set {
                part(f, format_args!("{name}"))?;
            }
        }
        if self.status() == 0 {
            f.write_str("no reason given")?;
        }
        Ok(())
    }
}
