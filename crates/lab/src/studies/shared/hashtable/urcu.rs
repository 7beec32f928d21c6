//! `liburcu` and `liburcu-qsbr`: the chained table over liburcu (the
//! user-space RCU library of Desnoyers and McKenney), memb and QSBR
//! flavours, through the C shim in `csrc/urcu_hash.h` (see there for the
//! table). Compiled only where `build.rs` found liburcu (`cfg
//! locklab_liburcu`).
//!
//! A reader is the thread's registration with the flavour, made on the
//! thread and dropped there (unregistering it). With QSBR a registered
//! thread is online and must report quiescent states, which it does every
//! `QS_EVERY` operations; the memb flavour's quiescent
//! state is a no-op.

use super::runner::HashTable;
use std::ffi::c_void;
use std::marker::PhantomData;

#[repr(C)]
struct LhTable {
    _private: [u8; 0],
}

type Visitor = unsafe extern "C" fn(*mut c_void, usize, u64, u64);

/// The C side forwards every element to the Rust closure in `ctx`.
unsafe extern "C" fn visit_one(ctx: *mut c_void, bucket: usize, key: u64, value: u64) {
    // SAFETY: `ctx` is the `&mut &mut dyn FnMut` that `visit` passed, alive
    // for the whole call.
    let f = unsafe { &mut *(ctx as *mut &mut dyn FnMut(Option<usize>, u64, u64)) };
    f(Some(bucket), key, value);
}

/// A thread's registration; unregisters when dropped. Not `Send`: it
/// belongs to the thread that registered.
pub struct Registration<F: 'static> {
    unregister: unsafe extern "C" fn(),
    _thread: PhantomData<*const F>,
}

impl<F> Drop for Registration<F> {
    fn drop(&mut self) {
        // SAFETY: this thread registered when the value was made.
        unsafe { (self.unregister)() };
    }
}

macro_rules! flavour {
    ($(#[$doc:meta])* $name:ident, $new:ident, $free:ident, $register:ident, $unregister:ident,
     $quiescent:ident, $lookup:ident, $update:ident, $backlog:ident, $visit:ident) => {
        extern "C" {
            fn $new(buckets: usize, keys: u64) -> *mut LhTable;
            fn $free(t: *mut LhTable);
            fn $register();
            fn $unregister();
            fn $quiescent();
            fn $lookup(t: *mut LhTable, key: u64, value: *mut u64) -> i32;
            fn $update(t: *mut LhTable, key: u64, value: u64);
            fn $backlog(t: *mut LhTable) -> u64;
            fn $visit(t: *mut LhTable, f: Visitor, ctx: *mut c_void);
        }

        $(#[$doc])*
        pub struct $name(*mut LhTable);

        // SAFETY: the C table is made for concurrent readers and per-bucket
        // locked writers from any registered thread.
        unsafe impl Sync for $name {}
        // SAFETY: the table holds no thread-bound state.
        unsafe impl Send for $name {}

        impl HashTable for $name {
            type Reader<'t> = Registration<$name>;

            fn build(buckets: usize, keys: u64) -> Self {
                // SAFETY: plain constructor; NULL only when out of memory.
                let t = unsafe { $new(buckets, keys) };
                assert!(!t.is_null(), "liburcu table: out of memory");
                $name(t)
            }

            fn reader(&self) -> Registration<$name> {
                // SAFETY: registers the calling thread; undone by the drop.
                unsafe { $register() };
                Registration {
                    unregister: $unregister,
                    _thread: PhantomData,
                }
            }

            #[inline]
            unsafe fn lookup(&self, _: &mut Registration<$name>, key: u64) -> Option<u64> {
                let mut v = 0u64;
                // SAFETY: a live table, from a registered thread.
                (unsafe { $lookup(self.0, key, &mut v) } != 0).then_some(v)
            }

            #[inline]
            fn update(&self, _: &mut Registration<$name>, key: u64, value: u64) {
                // SAFETY: a live table, from a registered thread.
                unsafe { $update(self.0, key, value) }
            }

            #[inline]
            fn quiescent(&self, _: &mut Registration<$name>) {
                // SAFETY: from a registered thread, outside a read section.
                unsafe { $quiescent() }
            }

            fn backlog_bytes(&self) -> u64 {
                // SAFETY: an atomic load in a live table.
                unsafe { $backlog(self.0) }
            }

            fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
                let mut f = f;
                // SAFETY: `&mut self`: no thread uses the table; `ctx` lives
                // through the call.
                unsafe {
                    $visit(
                        self.0,
                        visit_one,
                        &mut f as *mut &mut dyn FnMut(Option<usize>, u64, u64) as *mut c_void,
                    )
                }
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: `&mut self`: no thread uses the table; the C side
                // waits for its callbacks (rcu_barrier) before freeing.
                unsafe { $free(self.0) }
            }
        }
    };
}

flavour!(
    /// The `liburcu` strategy: liburcu's memb flavour.
    UrcuMemb,
    locklab_urcu_memb_new,
    locklab_urcu_memb_free,
    locklab_urcu_memb_register_thread,
    locklab_urcu_memb_unregister_thread,
    locklab_urcu_memb_quiescent_state,
    locklab_urcu_memb_lookup,
    locklab_urcu_memb_update,
    locklab_urcu_memb_backlog_bytes,
    locklab_urcu_memb_visit
);

flavour!(
    /// The `liburcu-qsbr` strategy: liburcu's QSBR flavour.
    UrcuQsbr,
    locklab_urcu_qsbr_new,
    locklab_urcu_qsbr_free,
    locklab_urcu_qsbr_register_thread,
    locklab_urcu_qsbr_unregister_thread,
    locklab_urcu_qsbr_quiescent_state,
    locklab_urcu_qsbr_lookup,
    locklab_urcu_qsbr_update,
    locklab_urcu_qsbr_backlog_bytes,
    locklab_urcu_qsbr_visit
);
