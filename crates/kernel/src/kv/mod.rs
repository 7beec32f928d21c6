//! The key-value macro-benchmark's system (seed 000 §4.3, seed 002 §5.2):
//! Redis-like servers driven by YCSB clients through an emulated network
//! card whose interrupts core 0's driver serves, every step a kernel entry.
//!
//! # The set-up
//!
//! With one core, core 0 runs everything (seed 000's single-core set-up:
//! driver, server, clients). With more, core 0 runs only the network
//! driver and every other core runs a key-value server over its own table
//! of `records` records and [`CLIENTS_PER_SERVER`] YCSB clients (seed 002
//! Fig. 6: a server and two benchmarking clients per core).
//!
//! # A request's path
//!
//! 1. A client (user mode) draws a YCSB operation and a key, writes the
//!    request into its mailbox (shared memory) and puts its number on the
//!    network card's receive queue ([`ring::Ring`]); the card raises its
//!    interrupt line ([`crate::irq`]). The client then waits for the
//!    response: `Recv` on its own endpoint (a kernel entry; it blocks and
//!    its core switches to another thread or idles).
//! 2. Core 0 takes the interrupt at its next user/kernel boundary or in its
//!    idle loop: a kernel entry that masks the line and signals the
//!    driver's notification, waking the driver.
//! 3. The driver drains the card's queue into the ring of each request's
//!    server, then signals each server it gave work (`Signal`, a kernel
//!    entry that wakes the server on its core and interrupts that core),
//!    acknowledges the interrupt (`IrqAck`, a kernel entry) and waits
//!    again (`Wait`, a kernel entry).
//! 4. The server, woken from `Wait` on its notification, takes requests
//!    from its ring one by one, executes each on its table and sends the
//!    result to the client (`Send` on the client's endpoint, a kernel entry
//!    that wakes the client on the same core), then waits again.
//!
//! So a request costs a handful of kernel entries, some on core 0 and some
//! on the server's core, and touches kernel state of both (the server's
//! notification and ready queue): no variant without synchronization is
//! valid beyond one core. Responses travel by IPC straight back to the
//! client on the server's core, not through the card again.

pub mod check;
pub mod programs;
pub mod ring;
pub mod table;
pub mod zipf;

use crate::irq::{IrqLine, IrqSpec};
use crate::kernel::{System, ThreadSpec};
use crate::objects::{rights, Cap, ObjKind};
use crate::user::Program;
use crossbeam_utils::CachePadded;
use programs::{Driver, KvClient, KvServer};
use ring::Ring;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use table::Table;
pub use zipf::KeyDist;

/// YCSB clients per server (seed 002 §5.2.1: two per core).
pub const CLIENTS_PER_SERVER: u32 = 2;

/// Longest YCSB scan (its `maxscanlength`); lengths are uniform in 1..=.
pub const MAX_SCAN: u64 = 100;

/// A YCSB core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// 50 % reads, 50 % updates.
    A,
    /// 95 % reads, 5 % updates.
    B,
    /// Reads only (the seeds' choice).
    C,
    /// 95 % short scans, 5 % inserts.
    E,
    /// 50 % reads, 50 % read-modify-writes.
    F,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 5] = [Self::A, Self::B, Self::C, Self::E, Self::F];

    /// The CLI and stored name.
    pub fn name(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
            Self::C => "c",
            Self::E => "e",
            Self::F => "f",
        }
    }

    /// The workload a name stands for.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The operation a uniform `u` in [0, 1) draws.
    pub fn op(self, u: f64) -> Op {
        match self {
            Self::A if u < 0.5 => Op::Update,
            Self::B if u < 0.05 => Op::Update,
            Self::E if u < 0.05 => Op::Insert,
            Self::E => Op::Scan,
            Self::F if u < 0.5 => Op::Rmw,
            _ => Op::Read,
        }
    }
}

/// A YCSB operation (a read-modify-write is two requests: a read, then an
/// update of the same record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum Op {
    /// Read every field of a record (`GET`).
    Read = 1,
    /// Overwrite one field (`SET`).
    Update = 2,
    /// Read a run of records.
    Scan = 3,
    /// Add a record.
    Insert = 4,
    /// Read, then update, the same record.
    Rmw = 5,
}

impl Op {
    /// The operation a word holds.
    pub fn from_word(w: u64) -> Option<Self> {
        Some(match w {
            1 => Op::Read,
            2 => Op::Update,
            3 => Op::Scan,
            4 => Op::Insert,
            5 => Op::Rmw,
            _ => return None,
        })
    }
}

/// Requests and YCSB operations completed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Requests answered (round trips; a read-modify-write makes two).
    pub requests: u64,
    /// Reads completed.
    pub reads: u64,
    /// Updates completed.
    pub updates: u64,
    /// Scans completed.
    pub scans: u64,
    /// Inserts completed.
    pub inserts: u64,
    /// Read-modify-writes completed.
    pub rmws: u64,
}

const COUNTS: usize = 6;

impl OpCounts {
    fn to_array(self) -> [u64; COUNTS] {
        [
            self.requests,
            self.reads,
            self.updates,
            self.scans,
            self.inserts,
            self.rmws,
        ]
    }

    fn from_array(a: [u64; COUNTS]) -> Self {
        OpCounts {
            requests: a[0],
            reads: a[1],
            updates: a[2],
            scans: a[3],
            inserts: a[4],
            rmws: a[5],
        }
    }

    /// Field-wise sum.
    pub fn plus(self, o: Self) -> Self {
        let (a, b) = (self.to_array(), o.to_array());
        Self::from_array(std::array::from_fn(|i| a[i] + b[i]))
    }

    /// Field-wise difference (`self` later than `earlier`).
    pub fn minus(self, earlier: Self) -> Self {
        let (a, b) = (self.to_array(), earlier.to_array());
        Self::from_array(std::array::from_fn(|i| a[i].wrapping_sub(b[i])))
    }

    /// YCSB operations completed.
    pub fn ops(&self) -> u64 {
        self.reads + self.updates + self.scans + self.inserts + self.rmws
    }
}

/// A client's counters, published by the client after every response (its
/// own cache line; the benchmark reads them at the window's instants).
#[derive(Debug, Default)]
pub struct Published([AtomicU64; COUNTS]);

impl Published {
    pub(crate) fn store(&self, c: &OpCounts) {
        for (s, v) in self.0.iter().zip(c.to_array()) {
            s.store(v, Relaxed);
        }
    }

    /// The last published counts.
    pub fn load(&self) -> OpCounts {
        OpCounts::from_array(std::array::from_fn(|i| self.0[i].load(Relaxed)))
    }
}

/// A client's request, in memory it shares with the servers.
#[derive(Debug, Default)]
pub struct Mailbox {
    /// An [`Op`] (the read or update half of a read-modify-write).
    pub op: AtomicU64,
    /// Record number.
    pub record: AtomicU64,
    /// Field to update, or scan length.
    pub arg: AtomicU64,
    /// The request's sequence number (the response echoes it).
    pub seq: AtomicU64,
}

/// The parameters of a key-value system.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvParams {
    /// Emulated cores (core 0 the driver's).
    pub cores: u32,
    /// Records per server.
    pub records: u64,
    /// The YCSB workload.
    pub workload: Workload,
    /// How keys are chosen.
    pub keys: KeyDist,
    /// Seed of the clients' random choices and the records' contents.
    pub seed: u64,
}

/// What the threads share besides the kernel: the network card, the
/// driver's rings, the clients' mailboxes and counters, and the tables.
#[derive(Debug)]
pub struct KvShared {
    /// The system's parameters.
    pub params: KvParams,
    /// The network card's receive queue (client numbers).
    pub wire: Ring,
    /// Its interrupt line.
    pub irq: Arc<IrqLine>,
    /// Per server: requests the driver handed it (client numbers).
    pub rx: Vec<Ring>,
    /// Per client.
    pub mail: Vec<CachePadded<Mailbox>>,
    /// Per client.
    pub counts: Vec<CachePadded<Published>>,
    /// Per server (only its server uses it while the system runs).
    pub tables: Vec<Mutex<Table>>,
    /// Per client: its server.
    pub server_of: Vec<u32>,
    /// Thread indices: the driver's and each server's.
    pub driver_thread: u32,
    /// See `driver_thread`.
    pub server_threads: Vec<u32>,
}

impl KvShared {
    /// Every client's counts, summed.
    pub fn totals(&self) -> OpCounts {
        self.counts
            .iter()
            .map(|c| c.load())
            .fold(OpCounts::default(), OpCounts::plus)
    }

    /// Servers.
    pub fn servers(&self) -> u32 {
        self.rx.len() as u32
    }
}

/// A booted-to-be key-value system and what its threads share.
#[derive(Debug, Clone)]
pub struct KvSystem {
    /// The kernel's system.
    pub sys: System,
    /// The shared memory and devices.
    pub shared: Arc<KvShared>,
}

fn cap(kind: ObjKind, obj: u32, rights: u8, badge: u64) -> Cap {
    Cap {
        kind,
        obj,
        rights,
        badge,
    }
}

impl KvSystem {
    /// The system of the module documentation. Notification 0 is the
    /// driver's (the card's interrupt), 1 + s server s's; endpoint i client
    /// i's; interrupt line 0 the card's, wired to core 0.
    pub fn new(p: KvParams) -> Self {
        let cores = p.cores.max(1);
        let core_of: Vec<u32> = if cores == 1 {
            vec![0]
        } else {
            (1..cores).collect()
        };
        let servers = core_of.len() as u32;
        let clients = servers * CLIENTS_PER_SERVER;
        let server_of: Vec<u32> = (0..clients).map(|c| c / CLIENTS_PER_SERVER).collect();
        let irq = Arc::new(IrqLine::new());
        let shared = Arc::new(KvShared {
            params: p,
            wire: Ring::new(clients as usize),
            irq: Arc::clone(&irq),
            rx: (0..servers).map(|_| Ring::new(clients as usize)).collect(),
            mail: (0..clients).map(|_| Default::default()).collect(),
            counts: (0..clients).map(|_| Default::default()).collect(),
            tables: (0..servers)
                .map(|s| Mutex::new(Table::new(p.records, p.seed ^ u64::from(s) << 40)))
                .collect(),
            server_of: server_of.clone(),
            driver_thread: 0,
            server_threads: (0..servers).map(|s| 1 + s).collect(),
        });
        let mut threads = Vec::new();
        let mut caps = vec![
            cap(ObjKind::Notification, 0, rights::RECV, 0),
            cap(ObjKind::Irq, 0, rights::SEND, 0),
        ];
        caps.extend((0..servers).map(|s| cap(ObjKind::Notification, 1 + s, rights::SEND, 1)));
        threads.push(ThreadSpec {
            core: 0,
            caps,
            program: Program::Driver(Driver::new(Arc::clone(&shared))),
        });
        for s in 0..servers {
            let mut caps = vec![cap(ObjKind::Notification, 1 + s, rights::RECV, 0)];
            caps.extend(
                (0..clients)
                    .filter(|&c| server_of[c as usize] == s)
                    .map(|c| cap(ObjKind::Endpoint, c, rights::SEND, u64::from(s) + 1)),
            );
            threads.push(ThreadSpec {
                core: core_of[s as usize],
                caps,
                program: Program::KvServer(KvServer::new(s, Arc::clone(&shared))),
            });
        }
        let keys = zipf::Keys::new(p.records, p.keys);
        for c in 0..clients {
            threads.push(ThreadSpec {
                core: core_of[server_of[c as usize] as usize],
                caps: vec![cap(ObjKind::Endpoint, c, rights::RECV, 0)],
                program: Program::KvClient(KvClient::new(
                    c,
                    keys.clone(),
                    p.seed ^ (u64::from(c) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    Arc::clone(&shared),
                )),
            });
        }
        let sys = System {
            cores,
            endpoints: clients,
            notifications: 1 + servers,
            threads,
            irqs: vec![IrqSpec {
                core: 0,
                ntfn: 0,
                badge: 1,
                line: irq,
            }],
        };
        KvSystem { sys, shared }
    }
}
