//! locklab: lock algorithms for multicore programs, and the lab's
//! recommended defaults under `parking_lot`'s names.
//!
//! ```
//! use locklab::Mutex; // was: use parking_lot::Mutex;
//!
//! static COUNTER: Mutex<u64> = Mutex::new(0);
//! *COUNTER.lock() += 1;
//! assert_eq!(*COUNTER.lock(), 1);
//! ```
//!
//! # Choose a lock
//!
//! The figures are from `docs/results.md` in the repository, measured by
//! the `locklab` command line (`cargo install --path crates/lab` in the
//! repository) on a 2-core KVM guest, Intel Xeon at 2.30 GHz, Linux 6.18,
//! git 388ddce, unless a row says otherwise; the command in each row
//! measures the same on your machine. Threads beyond the cores are
//! where families part: a waiter that spins holds a CPU its lock's owner
//! may need.
//!
//! | family | types | wins | loses | measure it |
//! |---|---|---|---|---|
//! | spin: test-and-set, TTAS, backoff | [`TasMutex`], [`TtasMutex`], [`BackoffMutex`] | uncontended: `tas` 8.08 ns an acquire+release, at the one-atomic floor (8.05 ns; `parking_lot` 12.1) | unfair and collapsing beyond the cores: at 8 threads on 2 cores `tas` does 1.17 Mops/s against `parking_lot`'s 3.15, its least-served thread gets 37 % of an even share, one wait lasted over 184 ms | `locklab bench spin --locks tas,ttas,parking_lot --threads 1,2,8` |
//! | fair spin: ticket and queue locks | [`TicketMutex`], [`TicketBackoffMutex`], [`K42Mutex`], [`McsMutex`], [`ClhMutex`], [`QspinMutex`] | FIFO, so no starvation (Jain index 0.99 at 8 threads); `qspin` 8.76 ns uncontended and 0.98× `tas`'s throughput at 2 threads; MCS-style queues keep each waiter on its own cache line | preemption: a hand-over to a waiter that is not running waits for the scheduler, so at 8 threads on 2 cores they collapse to 120–165 acquisitions a second, about 20 000× below `parking_lot` | `locklab bench lhp --locks ticket,mcs,qspin,mutex` |
//! | compact FIFO | [`HemlockMutex`], [`TwaMutex`], [`AndersonMutex`] | FIFO at `mcs`'s uncontended cost or below (5.9, 6.4 and 5.0 ns against `mcs`'s 6.0 since its embedded-node fast path; AMD EPYC guest, git 3f64275); `hemlock` is one word per lock, where `mcs` now carries a node of its own | the FIFO locks' collapse beyond the cores | `locklab bench spin --locks mcs,hemlock,twa,anderson --threads 1,2,8` |
//! | NUMA-aware | [`CboMcsMutex`], [`HmcsMutex`], [`CnaMutex`] | on two nodes (virtual, `LOCKLAB_TOPOLOGY=2x1`), 99–100 % of hand-overs stay within a node where `mcs` keeps 38 % (git 54213e1) | one node gains nothing, and two-level locks cost more uncontended (`hmcs` 3.8× `mcs`, `c-bo-mcs` 1.6×, `cna` 2.3×, git 3f64275) | `LOCKLAB_TOPOLOGY=2x1 locklab bench spin --locks mcs,cna,c-bo-mcs,hmcs --threads 4 --pin` |
//! | restricting, preemption-tolerant | [`MalthusianMutex`], [`McsTpMutex`] | beyond the cores `mcs-tp` passes over preempted waiters: 0.61 Mops/s at 8 threads on 2 cores, 4 200× `mcs` (git 54213e1) | still 0.25× [`Mutex`] there; `malthusian` grants the lock to a sleeping waiter when none is queued, and falls with the FIFO locks | `locklab bench lhp --locks mcs,mcs-tp,malthusian,mutex` |
//! | delegation | [`CombiningMutex`] | beyond the cores a waiter that is not running holds up nobody, the combiner runs its request: 3.25 and 2.01 Mops/s at 4 and 8 threads on 2 cores, 1.06× and 0.67× `parking_lot`, where `mcs` does 3.65e-4 (AMD EPYC guest, git dd852b5) | no guard, only `apply(|v| …)` with a `Send` closure; at 2 threads 0.85× `mcs` (publishing, the combiner's scan) | `locklab bench spin --locks combining,mcs,parking_lot --threads 1,2,4,8` |
//! | sleeping and hybrid | [`Mutex`] (= [`HybridMutex`]), [`Futex3Mutex`], [`SpinParkMutex`], [`SpinYieldMutex`] | more threads than cores (`bench lhp`): [`Mutex`] keeps 90 % of its one-thread rate at 8 and 16 threads (5.31 Mops/s, 1.20× and 1.09× `parking_lot`); when an owner stalls (50 µs every 100 sections), 741 ns of CPU per acquisition at 8 threads against `parking_lot`'s 1.16 µs | uncontended (Xeon, before git 161a57f): [`Mutex`] 19.7 ns against `parking_lot`'s 12.1 and [`Futex3Mutex`]'s 11.5, since then 5.63 against 6.57 on the AMD EPYC guest; with a 200 ns gap between acquisitions (`bench spin`'s defaults) it trailed `parking_lot` until the watch before its spinner queue (git ac1a598): since then 1.10× `parking_lot` at 8 threads and a tie with `std` (AMD EPYC guest) | `locklab bench lhp --locks mutex,futex3,parking_lot,std` |
//! | reader-writer | [`RwLock`] (= [`RwSem`]), [`RwFairLock`], [`RwReaderLock`], [`RwWriterLock`], [`BrLock`] | readers that overlap: a hash table with a reader-writer lock per bucket keeps 97 Mops/s at 4 threads where a spin lock per bucket falls to 42.5; `brlock`'s readers scale (44.8 → 88.6 Mops/s from 1 to 2 threads) | readers still write the lock's word: one global `rw-fair` falls from 64.2 Mops/s at 1 thread to 26.5 at 2 with no updates at all; `brlock`'s writers pay, 0.21× the per-bucket `rw-fair` at 50 % updates | `locklab bench hash --strategies 'bucket-rw(rw-fair),bucket-rw(rwsem),brlock,bucket-spin'` |
//! | seqlock | [`SeqLock`], [`SeqCount`] | readers write nothing shared: 366 Mops/s at 2 threads (0.65× no synchronization at all) and the fastest strategy from 10 % to 33 % updates at 4 threads | only `Copy` data, copied out by every read and read again after a write: at 100 % updates 15.9 Mops/s against `dashmap`'s 25.3 (4 threads, git de0c460) | `locklab bench hash --strategies seqlock,rcu,bucket-rw --update-pct 0,10,33,50` |
//! | RCU | [`rcu::Rcu`], [`rcu::Qsbr`], [`rcu::RcuHashMap`], [`rcu::RcuList`] | read-mostly: readers as fast as no synchronization at all (`rcu` 540 and `rcu-qsbr` 572 Mops/s at 2 threads against 544) | updates allocate and wait for grace periods: at 4 threads `rcu` falls behind the per-bucket reader-writer lock at 18.6 % updates (`rcu-qsbr` at 25.2 %), 0.53× of it at 100 % | `locklab bench hash --strategies none,rcu,rcu-qsbr,bucket-rw` |
//! | hardware lock elision | [`ElidedMutex`], [`AdaptiveElidedMutex`] | on a CPU with RTM, critical sections that touch different lines run in parallel: the emulated kernel's key-value benchmark at 2 cores had its best work per busy CPU with `elide(clh)` (1.39–1.50 Mreq/s against 1.19–1.21 for the big lock; a 2-core Xeon guest with RTM, git e74a1c5) | without RTM (AMD processors; Intel parts whose microcode or kernel switched TSX off) it is its fall-back lock plus one load; and with it, the gain there was in CPU more than speed (the big lock kept 0.89–0.91× of the best throughput) | `locklab bench kv --variants 'bkl(clh),elide(clh),fine'` |
//!
//! The quick suite, `locklab bench`, runs the uncontended, `spin` and
//! `lhp` rows above for every lock in about six minutes on 2 cores; `locklab
//! advise` measures the candidates for a workload you describe.
//!
//! # The defaults: `parking_lot`'s names
//!
//! [`Mutex`], [`MutexGuard`], [`MappedMutexGuard`], [`RwLock`],
//! [`RwLockReadGuard`], [`RwLockWriteGuard`], [`MappedRwLockReadGuard`],
//! [`MappedRwLockWriteGuard`], [`RawMutex`], [`RawRwLock`], [`Condvar`]
//! and [`WaitTimeoutResult`] have `parking_lot`'s names and shapes
//! (`lock_api` types, `const fn new`), so `use locklab::{Mutex, …};`
//! replaces `use parking_lot::{Mutex, …};` (`tests/adopt.rs` compiles and
//! runs one program both ways). [`lock_api`] is re-exported, so naming a
//! guard or a trait needs no second dependency.
//!
//! - [`Mutex`] is the hybrid mutex (`mutex` in the lab): the sleeping lock
//!   that held up best with more threads than cores in the table above
//!   (`bench lhp`: 1.20× `parking_lot` at 8 threads on 2 cores, 1.09× at
//!   16, 90 % of its one-thread rate), gives up on a stalled owner sooner
//!   than `parking_lot` (741 ns of CPU per acquisition against 1.16 µs),
//!   and has the timed and fair unlock that `parking_lot`'s mutex has. Its
//!   uncontended pair was its price (19.7 against 12.1 ns on that Xeon)
//!   until git 161a57f dropped its owner field and made its release one
//!   `fetch_sub`: on the AMD EPYC guest it now costs 5.63 ns against
//!   `std`'s 6.40 and `parking_lot`'s 6.57. Under `bench spin`'s defaults
//!   it trailed both until a waiter first watched the word for a
//!   microsecond before queueing (git ac1a598); since then it ties
//!   `std` at 1 to 16 threads on 2 cores and is 1.10× `parking_lot` at 4
//!   and 8 threads, with no more CPU per acquisition (docs/library.md,
//!   "Where the fast path goes", the goal table); the Xeon was not
//!   re-measured.
//! - [`RwLock`] is [`RwSem`] (`rwsem`), the one sleeping reader-writer
//!   lock of the library: the spinning ones share the spin locks' hazard
//!   beyond the cores (a queued writer or reader that is not running
//!   stalls the queue behind it). `locklab bench hash --strategies
//!   'global-rw(rwsem),global-rw(parking_lot-rw),global-rw(std-rw)'`
//!   compares it with the peers: on the AMD EPYC guest it was ahead of
//!   or tied with `std`'s at every point of 0–50 % writes and 1–16
//!   threads, and with `parking_lot`'s at 19 of 20 (0.92× at 1 % writes
//!   and 4 threads; docs/library.md, the goal table). It has no upgradable reads, `downgrade`
//!   or timed locking.
//! - [`Condvar`] works with the guard of any locklab mutex. Unlike
//!   `parking_lot`'s, its `wait` may return without a notify (as
//!   `std`'s): wait in a loop, or with `wait_while`.
//!
//! # The algorithms
//!
//! Every algorithm lives in its own file and keeps its own name. The
//! mutexes implement [`lock_api::RawMutex`] (with a ready `…Mutex<T>`
//! alias that behaves like `parking_lot::Mutex<T>`; some also
//! `RawMutexFair` and `RawMutexTimed`), the reader-writer locks
//! [`lock_api::RawRwLock`]; the seqlock, RCU and the elided locks have
//! APIs of their own. Each raw lock carries a [`LockInfo`] that the lab,
//! the docs and the CLI read from one place. [`sys`] has the tick clock
//! and kernel memory that the locks are built on.
//!
//! ```
//! let counter = locklab::McsMutex::new(0u64);
//! *counter.lock() += 1;
//! assert_eq!(*counter.lock(), 1);
//! ```
//!
//! Under `--cfg loom` the algorithms are built on loom's atomics so that the
//! model checks in `tests/loom/` exercise the very same code; the
//! `lock_api` layer (which needs `const` initialisers that loom cannot
//! provide) is left out in that configuration.

#![warn(missing_docs)]

pub mod block;
#[cfg(not(loom))]
mod defaults;
pub mod delegate;
pub mod elide;
pub mod info;
pub mod numa;
pub mod rcu;
pub mod rw;
pub mod spin;
pub mod sys;
pub mod topology;
mod util;

use util::loom_const_fn;
#[cfg(not(loom))]
use util::{guardless_raw_mutex, guardless_raw_rwlock};

pub use lock_api;

#[cfg(not(loom))]
pub use defaults::{
    MappedMutexGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, MutexGuard, RawMutex,
    RawRwLock, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

pub use block::condvar::{Condvar, TwoMutexes, WaitTimeoutResult};
#[cfg(not(loom))]
pub use block::futex3::Futex3Mutex;
pub use block::futex3::RawFutex3;
pub use block::mutex::{AdaptiveSpin, FixedSpin, RawHybridMutex, SpinPolicy};
#[cfg(not(loom))]
pub use block::mutex::{FixedSpinMutex, HybridMutex};
pub use block::park::{SpinCore, SpinPark, SpinYield};
#[cfg(not(loom))]
pub use block::park::{SpinParkMutex, SpinYieldMutex};
pub use block::rwsem::RawRwSem;
#[cfg(not(loom))]
pub use block::rwsem::RwSem;

pub use delegate::CombiningMutex;

pub use elide::{rtm_available, rtm_setting, AdaptiveElided, Elided, Rtm, RTM_VAR};
#[cfg(not(loom))]
pub use elide::{AdaptiveElidedMutex, ElidedMutex};
pub use info::{Described, Family, LockInfo};
#[cfg(not(loom))]
pub use rw::BrLock;
pub use rw::{BrReadToken, RawBrLock, SeqCount, SeqData, SeqLock};
pub use rw::{RawRwFair, RawRwReader, RawRwWriter};
#[cfg(not(loom))]
pub use rw::{RwFairLock, RwReaderLock, RwWriterLock};
#[cfg(not(loom))]
pub use spin::{AndersonMutex, HemlockMutex, TwaMutex};
#[cfg(not(loom))]
pub use spin::{
    BackoffMutex, ClhMutex, K42Mutex, McsMutex, QspinMutex, TasMutex, TicketBackoffMutex,
    TicketMutex, TtasMutex,
};
pub use spin::{ClhToken, McsToken, Ticket};
pub use spin::{HemlockToken, RawAnderson, RawHemlock, RawTwa};
pub use spin::{
    RawBackoff, RawClh, RawK42, RawMcs, RawQspin, RawTas, RawTicket, RawTicketBackoff, RawTtas,
};

#[cfg(not(loom))]
pub use numa::{CboMcsMutex, CnaMutex, HmcsMutex};
pub use numa::{CboMcsToken, CnaToken, HmcsToken, RawCboMcs, RawCna, RawHmcs};

#[cfg(not(loom))]
pub use spin::{MalthusianMutex, McsTpMutex};
pub use spin::{MalthusianToken, McsTpToken, RawMalthusian, RawMcsTp, Restriction};
