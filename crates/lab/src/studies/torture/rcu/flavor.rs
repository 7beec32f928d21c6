//! What the RCU torture needs of a domain, over both library flavours (and
//! the deliberately broken one in `broken.rs`), so that one generic harness
//! runs monomorphized for each.

use locklab::rcu::{
    Domain, Flavor, GpCookie, QsbrGuard, QsbrReader, QuiescentState, RcuGuard, RcuReader,
    ReadGuard, Stats,
};
use locklab::rcu::{General, Qsbr, Rcu};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A library reader handle's read side, as the torture drives it.
pub trait Sections {
    /// A read-side section.
    type Guard<'r>: ReadGuard
    where
        Self: 'r;
    /// Enters (or nests in) a section through the shared handle.
    fn read(&self) -> Self::Guard<'_>;
    /// Enters an outermost section through the exclusive handle (the
    /// general flavour's `read_outer`, which skips the nesting check).
    fn read_outer(&mut self) -> Self::Guard<'_>;
    /// Nests a section in `g`'s (through the guard, so it ends first).
    fn nest<'g>(g: &'g Self::Guard<'_>) -> Self::Guard<'g>;
}

impl Sections for RcuReader {
    type Guard<'r> = RcuGuard<'r>;
    fn read(&self) -> RcuGuard<'_> {
        RcuReader::read(self)
    }
    fn read_outer(&mut self) -> RcuGuard<'_> {
        RcuReader::read_outer(self)
    }
    fn nest<'g>(g: &'g RcuGuard<'_>) -> RcuGuard<'g> {
        g.reader().read()
    }
}

impl Sections for QsbrReader {
    type Guard<'r> = QsbrGuard<'r>;
    fn read(&self) -> QsbrGuard<'_> {
        QsbrReader::read(self)
    }
    fn read_outer(&mut self) -> QsbrGuard<'_> {
        QsbrReader::read(self)
    }
    fn nest<'g>(g: &'g QsbrGuard<'_>) -> QsbrGuard<'g> {
        g.reader().read()
    }
}

/// A domain under torture: its read side, its update side and its counters.
pub trait TortureRcu: Send + Sync + 'static {
    /// The library flavour whose domain the hash map lives in.
    type F: Flavor;
    /// A registered reader thread's handle.
    type Reader: Sections;
    /// A polling cookie.
    type Cookie: Copy + Send + 'static;

    /// A domain; `fenced` asks for the fenced read side (general flavour
    /// only), `max_pending` bounds queued callbacks, stall reports are
    /// counted in `stalls`.
    fn build(fenced: bool, max_pending: usize, stalls: Arc<AtomicU64>) -> Self;
    /// The library domain that protects the hash map.
    fn domain(&self) -> &Domain<Self::F>;
    /// Registers the calling thread as a reader.
    fn register(&self) -> Self::Reader;
    /// Between sections: a QSBR reader reports a quiescent state.
    fn quiesce(r: &mut Self::Reader);
    /// Runs `f` with the reader holding nothing (QSBR: offline).
    fn idle(r: &mut Self::Reader, f: impl FnOnce());
    /// Waits for a grace period.
    fn synchronize(&self);
    /// Runs `f` after a grace period.
    fn call(&self, f: impl FnOnce() + Send + 'static);
    /// Drops `b` after a grace period.
    fn defer_drop<T: Send + 'static>(&self, b: Box<T>);
    /// Waits for every callback queued so far.
    fn barrier(&self);
    /// A cookie, asking for a grace period to run.
    fn start_poll(&self) -> Self::Cookie;
    /// A cookie, asking for nothing.
    fn get_state(&self) -> Self::Cookie;
    /// Whether the cookie's grace period has ended.
    fn poll(&self, c: Self::Cookie) -> bool;
    /// Grace periods completed.
    fn grace_periods(&self) -> u64;
    /// The domain's counters.
    fn stats(&self) -> Stats;
    /// Whether readers fence (no `membarrier`, or asked for).
    fn fenced(&self) -> bool;
}

fn builder<F: Flavor>(
    fenced: bool,
    max_pending: usize,
    stalls: Arc<AtomicU64>,
) -> locklab::rcu::Builder<F> {
    Domain::<F>::builder()
        .fenced(fenced)
        .max_pending(max_pending)
        .on_stall(move |_| {
            stalls.fetch_add(1, Ordering::Relaxed);
        })
}

/// The update side and counters are the same for both library flavours.
macro_rules! domain_updates {
    () => {
        fn domain(&self) -> &Domain<Self::F> {
            self
        }
        fn synchronize(&self) {
            Domain::synchronize(self)
        }
        fn call(&self, f: impl FnOnce() + Send + 'static) {
            Domain::call(self, f)
        }
        fn defer_drop<T: Send + 'static>(&self, b: Box<T>) {
            Domain::defer_drop(self, b)
        }
        fn barrier(&self) {
            Domain::barrier(self)
        }
        fn start_poll(&self) -> GpCookie {
            Domain::start_poll(self)
        }
        fn get_state(&self) -> GpCookie {
            Domain::get_state(self)
        }
        fn poll(&self, c: GpCookie) -> bool {
            Domain::poll(self, c)
        }
        fn grace_periods(&self) -> u64 {
            Domain::grace_periods(self)
        }
        fn stats(&self) -> Stats {
            Domain::stats(self)
        }
        fn fenced(&self) -> bool {
            self.is_fenced()
        }
    };
}

impl TortureRcu for Rcu {
    type F = General;
    type Reader = RcuReader;
    type Cookie = GpCookie;

    fn build(fenced: bool, max_pending: usize, stalls: Arc<AtomicU64>) -> Self {
        builder(fenced, max_pending, stalls).build()
    }
    fn register(&self) -> RcuReader {
        Rcu::register(self)
    }
    fn quiesce(_: &mut RcuReader) {}
    fn idle(_: &mut RcuReader, f: impl FnOnce()) {
        f()
    }
    domain_updates!();
}

impl TortureRcu for Qsbr {
    type F = QuiescentState;
    type Reader = QsbrReader;
    type Cookie = GpCookie;

    fn build(_fenced: bool, max_pending: usize, stalls: Arc<AtomicU64>) -> Self {
        builder(false, max_pending, stalls).build()
    }
    fn register(&self) -> QsbrReader {
        Qsbr::register(self)
    }
    fn quiesce(r: &mut QsbrReader) {
        r.quiescent_state()
    }
    fn idle(r: &mut QsbrReader, f: impl FnOnce()) {
        let _off = r.offline();
        f()
    }
    domain_updates!();
}
