//! Ready-made systems: the benchmarks' ping-pong set-ups and the tests'.

use crate::kernel::{System, ThreadSpec};
use crate::objects::{rights, Cap, ObjKind};
use crate::user::{Delay, Program};

fn ep(obj: u32, rights: u8, badge: u64) -> Cap {
    Cap {
        kind: ObjKind::Endpoint,
        obj,
        rights,
        badge,
    }
}

fn ntfn(obj: u32, rights: u8, badge: u64) -> Cap {
    Cap {
        kind: ObjKind::Notification,
        obj,
        rights,
        badge,
    }
}

impl System {
    /// Seed 002's ping-pong, one copy per core: on each core a server and a
    /// client with their own endpoint, so cores share no kernel object. The
    /// server works for an exponential delay with mean `delay_ticks`
    /// between receiving and replying. With one core this is the
    /// single-core ping-pong.
    pub fn pingpong(cores: u32, delay_ticks: f64, seed: u64) -> Self {
        let mut threads = Vec::new();
        for c in 0..cores {
            threads.push(ThreadSpec {
                core: c,
                caps: vec![ep(c, rights::ALL, 0)],
                program: Program::server(0, Delay::exp(delay_ticks, seed ^ u64::from(c))),
            });
            threads.push(ThreadSpec {
                core: c,
                caps: vec![ep(c, rights::SEND, u64::from(c) + 1)],
                program: Program::client(0, threads.len() as u64),
            });
        }
        System {
            cores,
            endpoints: cores,
            notifications: 0,
            threads,
            irqs: Vec::new(),
        }
    }

    /// Every core's client calls one shared endpoint, on which every core's
    /// server receives: a call goes to whichever server waits longest, often
    /// on another core, so endpoint and scheduler state are shared.
    pub fn shared_endpoint(cores: u32, delay_ticks: f64, seed: u64) -> Self {
        let mut threads = Vec::new();
        for c in 0..cores {
            threads.push(ThreadSpec {
                core: c,
                caps: vec![ep(0, rights::ALL, 0)],
                program: Program::server(0, Delay::exp(delay_ticks, seed ^ u64::from(c))),
            });
            threads.push(ThreadSpec {
                core: c,
                caps: vec![ep(0, rights::SEND, u64::from(c) + 1)],
                program: Program::client(0, threads.len() as u64),
            });
        }
        System {
            cores,
            endpoints: 1,
            notifications: 0,
            threads,
            irqs: Vec::new(),
        }
    }

    /// Notification handshakes around a ring: on core `c` a pair of threads
    /// signals core `c + 1`'s pair and waits for core `c - 1`'s, so every
    /// wake-up crosses cores. Each handshake pair shares two notifications.
    pub fn notify_ring(cores: u32) -> Self {
        let mut threads = Vec::new();
        // Pair p: thread A on core p, thread B on core (p + 1) % cores;
        // A signals notification 2p (badge 1 << p), B signals 2p + 1.
        for p in 0..cores {
            let (a, b) = (p, (p + 1) % cores);
            let bit = 1u64 << (p % 64);
            threads.push(ThreadSpec {
                core: a,
                caps: vec![
                    ntfn(2 * p, rights::SEND, bit),
                    ntfn(2 * p + 1, rights::RECV, 0),
                ],
                program: Program::pinger(0, 1, bit << 1 | bit, true),
            });
            threads.push(ThreadSpec {
                core: b,
                caps: vec![
                    ntfn(2 * p + 1, rights::SEND, bit << 1 | bit),
                    ntfn(2 * p, rights::RECV, 0),
                ],
                program: Program::pinger(0, 1, bit, false),
            });
        }
        System {
            cores,
            endpoints: 0,
            notifications: 2 * cores,
            threads,
            irqs: Vec::new(),
        }
    }

    /// [`System::shared_endpoint`] plus, on core 0, a thread that deletes
    /// the shared endpoint after `after` steps of its own: every client and
    /// server then fails with `Deleted` and exits.
    pub fn shared_endpoint_deleted(cores: u32, after: u64, seed: u64) -> Self {
        let mut s = Self::shared_endpoint(cores, 0.0, seed);
        s.threads.push(ThreadSpec {
            core: 0,
            caps: vec![ep(0, rights::DELETE, 0), ntfn(0, rights::SEND, 1)],
            program: Program::reaper(0, 1, after),
        });
        s.notifications = 1;
        s
    }

    /// The threads' programs, by thread index (what [`Kernel::run`] takes).
    ///
    /// [`Kernel::run`]: crate::Kernel::run
    pub fn programs(&self) -> Vec<Program> {
        self.threads.iter().map(|t| t.program.clone()).collect()
    }
}
