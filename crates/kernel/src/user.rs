//! User-mode programs: what the emulated threads do between system calls.
//!
//! A program is a state machine. Each time its thread runs, [`Program::step`]
//! reads the results the kernel left in the user registers (the message, the
//! badge, the error code of the last call), does its user-mode work and
//! returns the next system call. The programs check what they receive, so a
//! kernel that loses, duplicates or misdelivers a message is caught.

use crate::objects::REG_WORDS;
use crate::syscall::{Error, Syscall, REG_BADGE, REG_ERROR, REG_MSG};
use locklab::sys::spin_ticks;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::Exp1;

/// User registers as a program sees them.
pub type Regs = [u64; REG_WORDS];

/// An exponentially distributed busy delay (the user-mode work between
/// receiving and replying of seed 002 §5.1.2), or none.
#[derive(Debug, Clone)]
pub struct Delay {
    mean_ticks: f64,
    rng: SmallRng,
}

impl Delay {
    /// A delay with mean `mean_ticks` time-stamp ticks (0 = none).
    pub fn exp(mean_ticks: f64, seed: u64) -> Self {
        Delay {
            mean_ticks,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Busy-waits one draw.
    #[inline]
    pub fn wait(&mut self) {
        if self.mean_ticks > 0.0 {
            let e: f64 = self.rng.sample(Exp1);
            spin_ticks((e * self.mean_ticks) as u64);
        }
    }
}

/// A client: calls its endpoint with a sequence number and its tag, and
/// expects the number plus one and the tag back.
#[derive(Debug, Clone)]
pub struct Client {
    /// The endpoint capability.
    pub cap: u8,
    /// The tag its messages carry (its thread index).
    pub tag: u64,
    seq: u64,
    called: bool,
    /// Replies that matched.
    pub done: u64,
    /// Replies that did not (a kernel fault).
    pub bad: u64,
    /// Calls that failed.
    pub errors: u64,
}

/// A server: receives, works for an exponential delay, replies with the
/// number plus one, and receives again, in one `reply_recv`.
#[derive(Debug, Clone)]
pub struct Server {
    /// The endpoint capability.
    pub cap: u8,
    delay: Delay,
    received: bool,
    /// Replies sent.
    pub replied: u64,
    /// Receives that failed.
    pub errors: u64,
}

/// One side of a notification handshake: signals `out`, then waits on `inp`
/// and expects the peer's badge; `first` decides who starts.
#[derive(Debug, Clone)]
pub struct Pinger {
    /// Capability to signal the peer.
    pub out: u8,
    /// Capability to wait on.
    pub inp: u8,
    /// The badge the peer's signals carry.
    pub expect: u64,
    first: bool,
    waiting: bool,
    /// Handshakes completed.
    pub rounds: u64,
    /// Wrong badges seen (a kernel fault).
    pub bad: u64,
    /// Calls that failed.
    pub errors: u64,
}

/// Deletes an object after a number of its own steps (each a `Signal` on a
/// notification only it uses, to pass time through the kernel), then exits.
#[derive(Debug, Clone)]
pub struct Reaper {
    /// Capability to delete.
    pub target: u8,
    /// Capability it signals while counting down.
    pub tick: u8,
    /// Steps left before the deletion.
    pub left: u64,
    /// Whether the deletion succeeded.
    pub deleted: bool,
    deleting: bool,
}

/// What a thread runs.
#[derive(Debug, Clone)]
pub enum Program {
    /// See [`Client`].
    Client(Client),
    /// See [`Server`].
    Server(Server),
    /// See [`Pinger`].
    Pinger(Pinger),
    /// See [`Reaper`].
    Reaper(Reaper),
    /// The key-value system's network driver ([`crate::kv`]).
    Driver(crate::kv::programs::Driver),
    /// A key-value server ([`crate::kv`]).
    KvServer(crate::kv::programs::KvServer),
    /// A YCSB client ([`crate::kv`]).
    KvClient(crate::kv::programs::KvClient),
}

impl Program {
    /// A client of endpoint capability `cap`, tagging its messages `tag`.
    pub fn client(cap: u8, tag: u64) -> Self {
        Program::Client(Client {
            cap,
            tag,
            seq: 0,
            called: false,
            done: 0,
            bad: 0,
            errors: 0,
        })
    }

    /// A server on endpoint capability `cap` with a user-mode delay.
    pub fn server(cap: u8, delay: Delay) -> Self {
        Program::Server(Server {
            cap,
            delay,
            received: false,
            replied: 0,
            errors: 0,
        })
    }

    /// One side of a notification handshake.
    pub fn pinger(out: u8, inp: u8, expect: u64, first: bool) -> Self {
        Program::Pinger(Pinger {
            out,
            inp,
            expect,
            first,
            waiting: false,
            rounds: 0,
            bad: 0,
            errors: 0,
        })
    }

    /// Deletes `target` after `after` signals on `tick`.
    pub fn reaper(target: u8, tick: u8, after: u64) -> Self {
        Program::Reaper(Reaper {
            target,
            tick,
            left: after,
            deleted: false,
            deleting: false,
        })
    }

    /// Runs user mode until the next system call.
    #[inline]
    pub fn step(&mut self, regs: &mut Regs) -> Syscall {
        let err = Error::from_code(regs[REG_ERROR]);
        match self {
            Program::Client(c) => {
                if c.called {
                    match err {
                        Some(Error::Deleted) => {
                            c.errors += 1;
                            return Syscall::Exit;
                        }
                        Some(_) => c.errors += 1,
                        None => {
                            if regs[REG_MSG] == c.seq + 1 && regs[REG_MSG + 1] == c.tag {
                                c.done += 1;
                            } else {
                                c.bad += 1;
                            }
                        }
                    }
                    c.seq += 2;
                }
                c.called = true;
                regs[REG_MSG] = c.seq;
                regs[REG_MSG + 1] = c.tag;
                Syscall::Call(c.cap)
            }
            Program::Server(s) => {
                if !s.received {
                    s.received = true;
                    return Syscall::Recv(s.cap);
                }
                if let Some(e) = err {
                    s.errors += 1;
                    if e == Error::Deleted {
                        return Syscall::Exit;
                    }
                    return Syscall::Recv(s.cap);
                }
                s.delay.wait();
                regs[REG_MSG] = regs[REG_MSG].wrapping_add(1);
                s.replied += 1;
                Syscall::ReplyRecv(s.cap)
            }
            Program::Pinger(p) => {
                if p.waiting {
                    p.waiting = false;
                    match err {
                        Some(Error::Deleted) => {
                            p.errors += 1;
                            return Syscall::Exit;
                        }
                        Some(_) => p.errors += 1,
                        None => {
                            // Signals may merge (a notification is a word of
                            // bits), so the peer's bit must be there and no
                            // other.
                            if regs[REG_BADGE] == p.expect {
                                p.rounds += 1;
                            } else {
                                p.bad += 1;
                            }
                        }
                    }
                    return Syscall::Signal(p.out);
                }
                if p.first {
                    p.first = false;
                    return Syscall::Signal(p.out);
                }
                p.waiting = true;
                Syscall::Wait(p.inp)
            }
            Program::Driver(d) => d.step(regs),
            Program::KvServer(s) => s.step(regs),
            Program::KvClient(c) => c.step(regs),
            Program::Reaper(r) => {
                if r.deleting {
                    r.deleted = err.is_none();
                    return Syscall::Exit;
                }
                if r.left == 0 {
                    r.deleting = true;
                    return Syscall::Delete(r.target);
                }
                r.left -= 1;
                Syscall::Signal(r.tick)
            }
        }
    }
}
