//! The key-value system's user programs (see the [module](super) for the
//! path of a request): the network driver, the key-value server and the
//! YCSB client, each a state machine that returns its next system call
//! like the kernel's other [`Program`](crate::user::Program)s, and each
//! checking what it receives so that a kernel that loses, duplicates or
//! misdelivers a message is caught.

use super::{KvShared, Op, OpCounts, CLIENTS_PER_SERVER, MAX_SCAN};
use crate::syscall::{Error, Syscall, REG_ERROR, REG_MSG};
use crate::user::Regs;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Capability indices of the driver.
const DRV_IRQ_NTFN: u8 = 0;
const DRV_IRQ: u8 = 1;
const DRV_SERVER0: u8 = 2;

/// What the driver's last system call was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DriverPhase {
    Start,
    Waiting,
    Signalling,
    Acking,
}

/// The network driver on core 0: woken by the card's interrupt, it moves
/// requests from the card's queue to their servers' rings, signals those
/// servers, acknowledges the interrupt and waits for the next.
#[derive(Debug, Clone)]
pub struct Driver {
    shared: Arc<KvShared>,
    phase: DriverPhase,
    /// Servers given work and not yet signalled.
    pub to_signal: Vec<u32>,
    marked: Vec<bool>,
    /// Requests moved to a server's ring.
    pub forwarded: u64,
    /// Times it woke from its notification.
    pub wakeups: u64,
    /// System calls that failed.
    pub errors: u64,
}

impl Driver {
    pub(crate) fn new(shared: Arc<KvShared>) -> Self {
        let n = shared.servers() as usize;
        Driver {
            shared,
            phase: DriverPhase::Start,
            to_signal: Vec::with_capacity(n),
            marked: vec![false; n],
            forwarded: 0,
            wakeups: 0,
            errors: 0,
        }
    }

    /// What the system's threads share (the checker's way in).
    pub fn shared(&self) -> &Arc<KvShared> {
        &self.shared
    }

    fn next(&mut self) -> Syscall {
        match self.to_signal.pop() {
            Some(s) => {
                self.marked[s as usize] = false;
                self.phase = DriverPhase::Signalling;
                Syscall::Signal(DRV_SERVER0 + s as u8)
            }
            None => {
                self.phase = DriverPhase::Acking;
                Syscall::IrqAck(DRV_IRQ)
            }
        }
    }

    /// Runs user mode until the next system call.
    pub fn step(&mut self, regs: &mut Regs) -> Syscall {
        if self.phase != DriverPhase::Start && regs[REG_ERROR] != 0 {
            self.errors += 1;
        }
        match self.phase {
            DriverPhase::Start | DriverPhase::Acking => {
                self.phase = DriverPhase::Waiting;
                Syscall::Wait(DRV_IRQ_NTFN)
            }
            DriverPhase::Waiting => {
                self.wakeups += 1;
                while let Some(c) = self.shared.wire.pop() {
                    let s = self.shared.server_of[c as usize];
                    let ok = self.shared.rx[s as usize].push(c);
                    // Each client has one request out, and each ring holds
                    // every client's: a full ring is a duplicated request.
                    assert!(ok, "server {s}'s ring overflowed: a request was duplicated");
                    self.forwarded += 1;
                    if !self.marked[s as usize] {
                        self.marked[s as usize] = true;
                        self.to_signal.push(s);
                    }
                }
                self.next()
            }
            DriverPhase::Signalling => self.next(),
        }
    }
}

/// What the server's last system call was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerPhase {
    Start,
    Waiting,
    Sending,
}

/// A key-value server: woken by the driver's signal, it serves the
/// requests in its ring one at a time on its table and sends each result
/// to its client.
#[derive(Debug, Clone)]
pub struct KvServer {
    shared: Arc<KvShared>,
    /// Its index among the servers.
    pub index: u32,
    phase: ServerPhase,
    /// The client whose response it sends (until its next step).
    pub current: Option<u32>,
    /// Requests taken from its ring.
    pub taken: u64,
    /// Responses sent (a send the kernel may still hold if it blocked).
    pub responses: u64,
    /// Requests for records that were missing or damaged.
    pub misses: u64,
    /// Requests it could not decode (a corrupted mailbox).
    pub garbled: u64,
    /// System calls that failed.
    pub errors: u64,
}

impl KvServer {
    pub(crate) fn new(index: u32, shared: Arc<KvShared>) -> Self {
        KvServer {
            shared,
            index,
            phase: ServerPhase::Start,
            current: None,
            taken: 0,
            responses: 0,
            misses: 0,
            garbled: 0,
            errors: 0,
        }
    }

    /// Runs user mode until the next system call.
    pub fn step(&mut self, regs: &mut Regs) -> Syscall {
        if self.phase != ServerPhase::Start && regs[REG_ERROR] != 0 {
            self.errors += 1;
        }
        self.current = None;
        // A borrow, not a clone: the `Arc`'s count is one word shared by
        // every thread of the system.
        let sh = &*self.shared;
        let Some(c) = sh.rx[self.index as usize].pop() else {
            self.phase = ServerPhase::Waiting;
            return Syscall::Wait(0);
        };
        self.taken += 1;
        let m = &sh.mail[c as usize];
        let (op, rec, arg, seq) = (
            m.op.load(Relaxed),
            m.record.load(Relaxed),
            m.arg.load(Relaxed),
            m.seq.load(Relaxed),
        );
        let decoded = Op::from_word(op);
        let result = {
            let mut t = sh.tables[self.index as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match decoded {
                Some(Op::Read) => t.get(rec),
                Some(Op::Update) => t.update(rec, arg as usize, seq ^ rec),
                Some(Op::Scan) => t.scan(rec, arg),
                Some(Op::Insert) => {
                    let i = t.len();
                    t.insert(i, seq ^ rec)
                }
                _ => {
                    self.garbled += 1;
                    0
                }
            }
        };
        if result == 0 && matches!(decoded, Some(Op::Read | Op::Update)) {
            self.misses += 1;
        }
        regs[REG_MSG] = seq;
        regs[REG_MSG + 1] = u64::from(c);
        regs[REG_MSG + 2] = result;
        regs[REG_MSG + 3] = op;
        self.current = Some(c);
        self.responses += 1;
        self.phase = ServerPhase::Sending;
        Syscall::Send(1 + (c % CLIENTS_PER_SERVER) as u8)
    }
}

/// A YCSB client: a closed loop of one request at a time, each posted to
/// the network card, its response received on its own endpoint and
/// checked.
#[derive(Debug, Clone)]
pub struct KvClient {
    shared: Arc<KvShared>,
    /// Its number (mailbox, endpoint, counters).
    pub id: u32,
    keys: super::zipf::Keys,
    rng: SmallRng,
    started: bool,
    /// The request out: its operation, record and argument.
    op: Op,
    record: u64,
    arg: u64,
    /// In a read-modify-write, whether the read half is out.
    rmw_read: bool,
    seq: u64,
    /// Requests posted.
    pub issued: u64,
    /// Responses received (good or bad).
    pub received: u64,
    /// Responses that were not the answer to its request (a kernel fault)
    /// or answered it wrongly (a damaged table).
    pub bad: u64,
    /// Receives that failed.
    pub errors: u64,
    /// Completed requests and operations.
    pub counts: OpCounts,
}

impl KvClient {
    pub(crate) fn new(id: u32, keys: super::zipf::Keys, seed: u64, shared: Arc<KvShared>) -> Self {
        KvClient {
            shared,
            id,
            keys,
            rng: SmallRng::seed_from_u64(seed),
            started: false,
            op: Op::Read,
            record: 0,
            arg: 0,
            rmw_read: false,
            seq: 0,
            issued: 0,
            received: 0,
            bad: 0,
            errors: 0,
            counts: OpCounts::default(),
        }
    }

    /// Whether a response answers the request out.
    fn answers(&self, regs: &Regs) -> bool {
        let (seq, tag, result, op) = (
            regs[REG_MSG],
            regs[REG_MSG + 1],
            regs[REG_MSG + 2],
            regs[REG_MSG + 3],
        );
        let wire_op = if self.op == Op::Rmw {
            if self.rmw_read {
                Op::Read
            } else {
                Op::Update
            }
        } else {
            self.op
        };
        let records = self.shared.params.records;
        seq == self.seq
            && tag == u64::from(self.id)
            && op == wire_op as u64
            && match wire_op {
                Op::Read | Op::Update | Op::Rmw => result == super::table::key_of(self.record),
                Op::Scan => result == self.arg,
                Op::Insert => result >= records,
            }
    }

    /// Runs user mode until the next system call.
    pub fn step(&mut self, regs: &mut Regs) -> Syscall {
        let mut rmw_update = false;
        if self.started {
            if let Some(e) = Error::from_code(regs[REG_ERROR]) {
                self.errors += 1;
                if e == Error::Deleted {
                    return Syscall::Exit;
                }
                return Syscall::Recv(0);
            }
            self.received += 1;
            if self.answers(regs) {
                self.counts.requests += 1;
                match self.op {
                    Op::Rmw if self.rmw_read => rmw_update = true,
                    Op::Rmw => self.counts.rmws += 1,
                    Op::Read => self.counts.reads += 1,
                    Op::Update => self.counts.updates += 1,
                    Op::Scan => self.counts.scans += 1,
                    Op::Insert => self.counts.inserts += 1,
                }
            } else {
                self.bad += 1;
            }
            self.shared.counts[self.id as usize].store(&self.counts);
        }
        self.started = true;
        let records = self.shared.params.records;
        let wire_op = if rmw_update {
            self.rmw_read = false;
            self.arg = self.rng.random_range(0..super::table::FIELDS as u64);
            Op::Update
        } else {
            self.op = self.shared.params.workload.op(self.rng.random::<f64>());
            self.record = self.keys.next(&mut self.rng);
            match self.op {
                Op::Read | Op::Insert => {
                    self.arg = 0;
                    self.op
                }
                Op::Update => {
                    self.arg = self.rng.random_range(0..super::table::FIELDS as u64);
                    Op::Update
                }
                Op::Scan => {
                    // Within the loaded records, so the count is known.
                    let len = self.rng.random_range(1..=MAX_SCAN);
                    self.arg = len.min(records - self.record);
                    Op::Scan
                }
                Op::Rmw => {
                    self.rmw_read = true;
                    self.arg = 0;
                    Op::Read
                }
            }
        };
        self.seq += 1;
        let m = &self.shared.mail[self.id as usize];
        m.op.store(wire_op as u64, Relaxed);
        m.record.store(self.record, Relaxed);
        m.arg.store(self.arg, Relaxed);
        m.seq.store(self.seq, Relaxed);
        // The ring's push publishes the mailbox (see `ring`).
        let ok = self.shared.wire.push(self.id);
        assert!(ok, "the card's queue overflowed: a request was duplicated");
        self.shared.irq.raise();
        self.issued += 1;
        Syscall::Recv(0)
    }
}
