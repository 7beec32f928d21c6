//! Kernel objects: thread control blocks, endpoints, notifications and the
//! per-core scheduler state.
//!
//! Every field is a word that the kernel's concurrency control protects (the
//! big lock, the fine-grained object locks, or a transaction). The words are
//! atomics accessed `Relaxed` for one reason: the fine-grained kernel peeks
//! at an endpoint's queue *before* it locks the endpoint (to learn which
//! thread control blocks to lock, seed 002 §3.3), and such a racy read must be
//! defined behaviour. On x86 a `Relaxed` load or store is a plain move, so the
//! other variants pay nothing for it; all ordering comes from the locks.
//!
//! Each object carries a ticket lock that only the fine-grained variant
//! takes, in the object's own cache line as seL4's fine-grained prototype
//! keeps it.

use crossbeam_utils::CachePadded;
use locklab::RawTicket;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

/// "No thread/object": the end of a queue, no reply owed, an idle core.
pub const NIL: u32 = u32::MAX;
/// Message registers an IPC transfers.
pub const MSG_WORDS: usize = 4;
/// User registers saved on kernel entry and restored on exit.
pub const REG_WORDS: usize = 16;

/// A 32-bit kernel word (see the module documentation).
#[derive(Debug, Default)]
pub struct Word(AtomicU32);

impl Word {
    /// A word holding `v`.
    pub const fn new(v: u32) -> Self {
        Word(AtomicU32::new(v))
    }
    /// Reads the word.
    #[inline(always)]
    pub fn get(&self) -> u32 {
        self.0.load(Relaxed)
    }
    /// Writes the word.
    #[inline(always)]
    pub fn set(&self, v: u32) {
        self.0.store(v, Relaxed)
    }
}

/// A 64-bit kernel word (see the module documentation).
#[derive(Debug, Default)]
pub struct Word64(AtomicU64);

impl Word64 {
    /// A word holding `v`.
    pub const fn new(v: u64) -> Self {
        Word64(AtomicU64::new(v))
    }
    /// Reads the word.
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    /// Writes the word.
    #[inline(always)]
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed)
    }
    /// Adds one (a load and a store: the word is protected, not shared).
    #[inline(always)]
    pub fn bump(&self) {
        self.set(self.get().wrapping_add(1))
    }
}

/// A thread's scheduling state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ThreadState {
    /// Exited or never started.
    Inactive = 0,
    /// The current thread of its core.
    Running = 1,
    /// In its core's ready queue.
    Ready = 2,
    /// Queued on an endpoint to send (or call).
    BlockedOnSend = 3,
    /// Queued on an endpoint to receive.
    BlockedOnRecv = 4,
    /// Called a server that has not replied yet.
    BlockedOnReply = 5,
    /// Queued on a notification.
    BlockedOnNotification = 6,
}

impl ThreadState {
    /// The state a word holds.
    pub fn from_word(w: u32) -> Option<Self> {
        Some(match w {
            0 => Self::Inactive,
            1 => Self::Running,
            2 => Self::Ready,
            3 => Self::BlockedOnSend,
            4 => Self::BlockedOnRecv,
            5 => Self::BlockedOnReply,
            6 => Self::BlockedOnNotification,
            _ => return None,
        })
    }
}

/// What a capability names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjKind {
    /// An endpoint (synchronous IPC).
    Endpoint,
    /// A notification (asynchronous signals, a word of badge bits).
    Notification,
    /// An interrupt line's handler (see [`crate::irq`]): acknowledges it.
    Irq,
}

/// Rights a capability grants.
pub mod rights {
    /// May send, call or signal.
    pub const SEND: u8 = 1;
    /// May receive or wait.
    pub const RECV: u8 = 2;
    /// May delete the object.
    pub const DELETE: u8 = 4;
    /// Everything.
    pub const ALL: u8 = SEND | RECV | DELETE;
}

/// A capability: an object and what its holder may do with it. A thread's
/// capabilities are fixed when it is created; deleting an object leaves the
/// capabilities in place and makes them fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The kind of object.
    pub kind: ObjKind,
    /// Its index in the kernel's table of that kind.
    pub obj: u32,
    /// [`rights`] bits.
    pub rights: u8,
    /// The badge a receiver sees for messages sent or signals raised through
    /// this capability (0 = unbadged).
    pub badge: u64,
}

/// A thread control block.
#[derive(Debug)]
pub struct Tcb {
    /// Fine-grained variant only.
    pub lock: RawTicket,
    /// A [`ThreadState`].
    pub state: Word,
    /// The endpoint or notification the thread is queued on.
    pub blocked_on: Word,
    /// Whether its queued send is a call (it then waits for a reply).
    pub is_call: Word,
    /// The caller this thread owes a reply to (seL4's reply capability), or
    /// [`NIL`].
    pub reply_to: Word,
    /// The next and previous thread in the endpoint or notification queue.
    pub next: Word,
    /// See `next`.
    pub prev: Word,
    /// The next thread in its core's ready queue.
    pub rq_next: Word,
    /// The badge of the message a queued sender waits to deliver.
    pub send_badge: Word64,
    /// The core the thread runs on (fixed: scheduling is partitioned, as in
    /// seed 002 §3.2).
    pub core: u32,
    /// The thread's index among its core's threads (where its user program is).
    pub slot: u32,
    /// Saved user registers, written on kernel entry and read on exit. IPC
    /// copies the message registers between TCBs and leaves the badge and
    /// the error code (see `syscall::REG_*`) in the receiver's.
    pub regs: [Word64; REG_WORDS],
    /// Messages this thread sent that a receiver took.
    pub sent: Word64,
    /// Messages this thread received.
    pub received: Word64,
    /// The thread's capabilities, by index.
    pub caps: Box<[Cap]>,
}

impl Tcb {
    /// A new, inactive thread on `core`, the `slot`-th there.
    pub fn new(core: u32, slot: u32, caps: Vec<Cap>) -> Self {
        Tcb {
            lock: RawTicket::new(),
            state: Word::new(ThreadState::Inactive as u32),
            blocked_on: Word::new(NIL),
            is_call: Word::new(0),
            reply_to: Word::new(NIL),
            next: Word::new(NIL),
            prev: Word::new(NIL),
            rq_next: Word::new(NIL),
            send_badge: Word64::new(0),
            core,
            slot,
            regs: Default::default(),
            sent: Word64::new(0),
            received: Word64::new(0),
            caps: caps.into_boxed_slice(),
        }
    }

    /// The thread's state.
    #[inline(always)]
    pub fn state(&self) -> ThreadState {
        ThreadState::from_word(self.state.get()).unwrap_or(ThreadState::Inactive)
    }

    /// Sets the thread's state.
    #[inline(always)]
    pub fn set_state(&self, s: ThreadState) {
        self.state.set(s as u32)
    }
}

/// Which threads an endpoint's queue holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum EpState {
    /// Nobody waits.
    Idle = 0,
    /// Senders (and callers) wait.
    Send = 1,
    /// Receivers wait.
    Recv = 2,
}

impl EpState {
    /// The state a word holds.
    pub fn from_word(w: u32) -> Option<Self> {
        Some(match w {
            0 => Self::Idle,
            1 => Self::Send,
            2 => Self::Recv,
            _ => return None,
        })
    }
}

/// A doubly linked FIFO of threads, threaded through the TCBs' `next` and
/// `prev` words (the endpoint and notification wait queues).
#[derive(Debug)]
pub struct Queue {
    /// First thread, or [`NIL`].
    pub head: Word,
    /// Last thread, or [`NIL`].
    pub tail: Word,
}

impl Queue {
    fn new() -> Self {
        Queue {
            head: Word::new(NIL),
            tail: Word::new(NIL),
        }
    }

    /// Whether no thread waits.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.head.get() == NIL
    }

    /// Appends thread `t`.
    #[inline]
    pub fn push(&self, tcbs: &[CachePadded<Tcb>], t: u32) {
        let tail = self.tail.get();
        let tcb = &tcbs[t as usize];
        tcb.next.set(NIL);
        tcb.prev.set(tail);
        if tail == NIL {
            self.head.set(t);
        } else {
            tcbs[tail as usize].next.set(t);
        }
        self.tail.set(t);
    }

    /// Removes thread `t`, which must be queued here.
    #[inline]
    pub fn remove(&self, tcbs: &[CachePadded<Tcb>], t: u32) {
        let tcb = &tcbs[t as usize];
        let (prev, next) = (tcb.prev.get(), tcb.next.get());
        if prev == NIL {
            self.head.set(next);
        } else {
            tcbs[prev as usize].next.set(next);
        }
        if next == NIL {
            self.tail.set(prev);
        } else {
            tcbs[next as usize].prev.set(prev);
        }
        tcb.next.set(NIL);
        tcb.prev.set(NIL);
    }
}

/// An IPC endpoint.
#[derive(Debug)]
pub struct Endpoint {
    /// Fine-grained variant only.
    pub lock: RawTicket,
    /// An [`EpState`].
    pub state: Word,
    /// The waiting threads.
    pub queue: Queue,
    /// Set once by deletion (under the kernel's writer side).
    pub deleted: Word,
    /// Messages transferred through this endpoint.
    pub transfers: Word64,
}

impl Endpoint {
    /// An idle endpoint.
    pub fn new() -> Self {
        Endpoint {
            lock: RawTicket::new(),
            state: Word::new(EpState::Idle as u32),
            queue: Queue::new(),
            deleted: Word::new(0),
            transfers: Word64::new(0),
        }
    }

    /// The endpoint's state.
    #[inline(always)]
    pub fn state(&self) -> EpState {
        EpState::from_word(self.state.get()).unwrap_or(EpState::Idle)
    }
}

impl Default for Endpoint {
    fn default() -> Self {
        Self::new()
    }
}

/// A notification: a word of pending badge bits and a queue of waiters
/// (nonempty only while the word is zero), like a binary semaphore per bit.
#[derive(Debug)]
pub struct Notification {
    /// Fine-grained variant only.
    pub lock: RawTicket,
    /// Pending badge bits.
    pub word: Word64,
    /// Waiting threads.
    pub queue: Queue,
    /// Set once by deletion.
    pub deleted: Word,
    /// Signals delivered (to a waiter or into the word).
    pub signals: Word64,
}

impl Notification {
    /// A notification with nothing pending.
    pub fn new() -> Self {
        Notification {
            lock: RawTicket::new(),
            word: Word64::new(0),
            queue: Queue::new(),
            deleted: Word::new(0),
            signals: Word64::new(0),
        }
    }
}

impl Default for Notification {
    fn default() -> Self {
        Self::new()
    }
}

/// One core's scheduler state: its current thread and ready queue (per core,
/// as in seed 002 §3.2, so unrelated cores share no mutable scheduler data).
#[derive(Debug)]
pub struct CoreState {
    /// Fine-grained variant only: protects the ready queue, which other
    /// cores append to when they wake one of this core's threads.
    pub lock: RawTicket,
    /// The running thread, or [`NIL`] when the core idles.
    pub current: Word,
    /// First ready thread, or [`NIL`].
    pub rq_head: Word,
    /// Last ready thread, or [`NIL`].
    pub rq_tail: Word,
    /// The emulated inter-processor interrupt: set (after the waker left
    /// the kernel) when another core made one of this core's threads ready.
    pub kick: AtomicBool,
}

impl CoreState {
    /// A core with nothing to run.
    pub fn new() -> Self {
        CoreState {
            lock: RawTicket::new(),
            current: Word::new(NIL),
            rq_head: Word::new(NIL),
            rq_tail: Word::new(NIL),
            kick: AtomicBool::new(false),
        }
    }

    /// Appends thread `t` to the ready queue.
    #[inline]
    pub fn rq_push(&self, tcbs: &[CachePadded<Tcb>], t: u32) {
        tcbs[t as usize].rq_next.set(NIL);
        let tail = self.rq_tail.get();
        if tail == NIL {
            self.rq_head.set(t);
        } else {
            tcbs[tail as usize].rq_next.set(t);
        }
        self.rq_tail.set(t);
    }

    /// Takes the first ready thread, if any.
    #[inline]
    pub fn rq_pop(&self, tcbs: &[CachePadded<Tcb>]) -> Option<u32> {
        let h = self.rq_head.get();
        if h == NIL {
            return None;
        }
        let next = tcbs[h as usize].rq_next.get();
        self.rq_head.set(next);
        if next == NIL {
            self.rq_tail.set(NIL);
        }
        tcbs[h as usize].rq_next.set(NIL);
        Some(h)
    }
}

impl Default for CoreState {
    fn default() -> Self {
        Self::new()
    }
}
