//! Delegation: one thread runs the other threads' critical sections for
//! them.
//!
//! With an ordinary lock every thread runs its own critical section, so
//! the lock word *and the protected data* travel from cache to cache with
//! every hand-over: under contention a short critical section costs a few
//! cache misses on lines that the previous holder just wrote. A delegation
//! lock moves the *work* instead of the data. A thread describes its
//! critical section (here: a closure) and publishes it; one thread, the
//! *combiner*, takes the lock and runs every published request in turn,
//! writing each result back to its requester. The data stays in the
//! combiner's cache for the whole batch, the lock word is taken once per
//! batch rather than once per request, and the waiting threads spin on
//! their own request's cache line instead of the lock's.
//!
//! Flat combining is the delegation scheme of D. Hendler, I. Incze,
//! N. Shavit and M. Tzafrir, "Flat Combining and the
//! Synchronization-Parallelism Tradeoff", SPAA 2010: there is no dedicated
//! server thread; whichever waiting thread finds the lock free becomes the
//! combiner for a while. Their measurements show it paying for data
//! structures with a sequential bottleneck (queues, stacks, priority
//! queues) under high contention, where every thread would otherwise fight
//! over the same few lines. (Other delegation schemes dedicate a server
//! core or thread instead: Lozi et al.'s Remote Core Locking, USENIX ATC
//! 2012, and Roghanchi, Eriksson and Basu's ffwd, SOSP 2017.)
//!
//! When it pays, and when not:
//! - It pays when many threads hammer one structure with short critical
//!   sections: the combiner keeps the data in its cache and runs a batch
//!   of requests back to back on it, while the others wait rather than
//!   run, each on its own line. A request costs its thread a write of its
//!   own slot and a wait, not a round trip of the data and the lock word.
//! - The combiner does the others' work after its own is done, so its
//!   latency is unfair to it; the waiters cannot run anything meanwhile
//!   (there is no parallelism inside critical sections with a lock either);
//!   and a combiner that is descheduled stalls every waiter (as any
//!   spinning lock's holder does).
//! - Uncontended, it costs a little more than a plain spin lock: the
//!   combiner also looks through the publication slots before it lets go.
//! - The critical section must be something another thread can run: a
//!   `Send` closure that neither blocks on what its own thread would do
//!   next nor relies on thread-local state. Long critical sections gain
//!   nothing (the cache effect is a per-request saving).
//!
//! [`CombiningMutex`] is the flat-combining mutex; its module documentation
//! has the protocol, its word layouts and the memory orderings.

pub mod combining;

pub use combining::CombiningMutex;
