//! `--costs here`: the simulator's costs measured on this machine, in ns
//! (a clock of 1 GHz, so that a cycle is a nanosecond).
//!
//! - `hit`: a load and a store of a line this thread alone uses, per pair
//!   (the fastest of several batches);
//! - `atomic`: what a `fetch_add` on such a line costs beyond that;
//! - `same_socket`: half the cache-line round trip the run's header
//!   records (one line to another CPU and back, the fastest of five
//!   batches);
//! - `other_socket`: the same, for this machine has one socket as far as
//!   the lab can measure (the simulated topology still has several);
//! - memory: `same_socket` times seed 002's ratio of memory to a transfer
//!   within the socket (185/115, and 265/115 remote), not measured here.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::core::error::{LabError, Result};
use locklab_model::locksim::Costs;

/// Pairs per timed batch.
const BATCH: u32 = 1 << 20;

/// The fastest of five batches of `f`, ns per call.
fn fastest(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..BATCH {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / f64::from(BATCH)
        })
        .fold(f64::INFINITY, f64::min)
}

/// The costs of this machine (see the module documentation).
pub fn here() -> Result<Costs> {
    let line = AtomicU64::new(0);
    let hit = fastest(|| {
        let v = black_box(&line).load(Ordering::Relaxed);
        black_box(&line).store(v + 1, Ordering::Relaxed);
    });
    let rmw = fastest(|| {
        black_box(&line).fetch_add(1, Ordering::AcqRel);
    });
    let round_trip = crate::core::machine::c2c_round_trip_ns().ok_or_else(|| {
        LabError::input(
            "--costs here: this machine has one CPU, so no cache-line transfer can be \
             measured; allowed seed002 or a costs file",
        )
    })?;
    let transfer = round_trip / 2.0;
    Ok(Costs {
        hit: hit.max(0.05),
        same_socket: transfer,
        other_socket: transfer,
        memory_local: transfer * 185.0 / 115.0,
        memory_remote: transfer * 265.0 / 115.0,
        atomic: (rmw - hit).max(0.0),
        ghz: 1.0,
        home_snoop: false,
    })
}
