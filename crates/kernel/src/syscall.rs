//! The system calls and their results, as user programs see them.
//!
//! The semantics are seL4's rendezvous IPC (seed 002 §3.1): `send` and
//! `call` block until a receiver takes the message; `call` then waits for
//! the reply, and the receiver owes that reply (seL4's reply capability);
//! `reply_recv` replies and waits for the next message in one call;
//! notifications are words of badge bits that `signal` raises and `wait`
//! collects. Message registers travel in the saved user registers.

/// The first message register in the user register file.
pub const REG_MSG: usize = 0;
/// The register that receives the badge of the message or signal.
pub const REG_BADGE: usize = crate::objects::MSG_WORDS;
/// The register that receives the error code of the system call.
pub const REG_ERROR: usize = REG_BADGE + 1;

/// A system call: a capability index into the calling thread's capabilities
/// and what to do with the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syscall {
    /// Send the message registers and wait for the reply.
    Call(u8),
    /// Reply to the thread this one owes a reply to (if any), then receive.
    ReplyRecv(u8),
    /// Send the message registers (blocking until a receiver takes them).
    Send(u8),
    /// Receive a message (blocking until one is sent).
    Recv(u8),
    /// Raise the capability's badge bits on a notification.
    Signal(u8),
    /// Collect a notification's bits (blocking while there are none).
    Wait(u8),
    /// Delete the object (under the kernel's writer side): threads queued
    /// on it wake with [`Error::Deleted`], later uses of it fail.
    Delete(u8),
    /// Acknowledge the interrupt of an IRQ handler capability, unmasking
    /// its line (see [`crate::irq`]).
    IrqAck(u8),
    /// End the thread.
    Exit,
}

impl Syscall {
    /// The capability the call uses, if any.
    pub fn cap(self) -> Option<u8> {
        match self {
            Syscall::Call(c)
            | Syscall::ReplyRecv(c)
            | Syscall::Send(c)
            | Syscall::Recv(c)
            | Syscall::Signal(c)
            | Syscall::Wait(c)
            | Syscall::Delete(c)
            | Syscall::IrqAck(c) => Some(c),
            Syscall::Exit => None,
        }
    }
}

/// Why a system call failed its checks (phase one). Nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Error {
    /// No capability at that index.
    InvalidCap = 1,
    /// The capability names the wrong kind of object.
    WrongKind = 2,
    /// The capability lacks the right.
    NoRights = 3,
    /// The object was deleted (also what a queued thread wakes with when
    /// its object is deleted).
    Deleted = 4,
}

impl Error {
    /// The error a register value holds (0 = success).
    pub fn from_code(c: u64) -> Option<Self> {
        Some(match c {
            1 => Self::InvalidCap,
            2 => Self::WrongKind,
            3 => Self::NoRights,
            4 => Self::Deleted,
            _ => return None,
        })
    }
}
