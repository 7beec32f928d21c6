//! `bench kv`: the seeds' key-value macro-benchmark (seed 000 §4.3 and
//! §5.2, seed 002 §5.2) on the emulated microkernel: core 0's network
//! driver hands each arriving request, as an interrupt turned into a
//! notification, to the key-value server of its core, which answers its
//! YCSB clients by IPC (the system: `locklab_kernel::kv`).
//!
//! Per repetition it measures, over one window of the lab's measurement
//! core: requests completed per second; each core's utilisation, busy time
//! over the window, from the idle time the kernel's idle loop records
//! (sampled at the window's two instants, like the request counts, so both
//! cover the same interval); and Xput, throughput over the mean
//! utilisation (seed 000 Fig. 4: throughput at a fixed processing cost).
//!
//! After every repetition the kernel's invariants and the key-value
//! system's (every request accounted for, tables intact, no lost wake-up
//! or interrupt) are checked; a broken one fails the run.

use crate::core::results::{Rep, StudyMetrics};
use crate::studies::shared::kernel::{
    check_run, windowed, KernelRun, KernelVariant, Variant, Windowed,
};
use locklab_kernel::cc::PolicyChoice;
use locklab_kernel::kv::{KeyDist, KvParams, KvSystem, OpCounts, Workload};
use locklab_kernel::stats::CoreStats;
use locklab_kernel::{Config, Kernel};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What every point of a `kv` run shares.
#[derive(Debug, Clone, Serialize)]
pub struct KvConfig {
    /// Measured seconds per repetition.
    pub secs: f64,
    /// Pin emulated core i to CPU i mod CPUs.
    pub pin: bool,
    /// Records per server.
    pub records: u64,
    /// YCSB workload.
    #[serde(serialize_with = "workload_name")]
    pub workload: Workload,
    /// Key distribution.
    #[serde(serialize_with = "keys_name")]
    pub keys: KeyDist,
}

fn workload_name<S: serde::Serializer>(w: &Workload, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(w.name())
}

fn keys_name<S: serde::Serializer>(k: &KeyDist, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(k.name())
}

/// One point: the emulated cores (core 0 the driver's; with one core,
/// everything on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvPoint {
    /// Emulated cores.
    pub cores: u32,
}

/// One repetition of one point under one variant.
pub type KvRun = fn(&KvConfig, &KvPoint, PolicyChoice) -> std::result::Result<Rep, String>;

/// `bench kv`'s repetition, for the kernel variant parser.
pub struct KvRuns;

impl KernelRun for KvRuns {
    type Run = KvRun;
    fn of<C: Variant>() -> KvRun {
        run_rep::<C>
    }
}

/// A kernel variant of `bench kv`.
pub type KvVariant = KernelVariant<KvRun>;

/// One repetition of `pt` under variant `C`.
pub fn run_rep<C: Variant>(
    cfg: &KvConfig,
    pt: &KvPoint,
    choice: PolicyChoice,
) -> std::result::Result<Rep, String> {
    let kv = KvSystem::new(KvParams {
        cores: pt.cores,
        records: cfg.records,
        workload: cfg.workload,
        keys: cfg.keys,
        seed: 0x6b76,
    });
    let k = Arc::new(Kernel::boot(C::make(choice), &kv.sys, Config::default()).map_err(|e| e.0)?);
    let sh = Arc::clone(&kv.shared);
    let sample = || {
        let per_client: Vec<OpCounts> = sh.counts.iter().map(|c| c.load()).collect();
        (per_client, sh.irq.taken())
    };
    let (w, run) = windowed(&k, &kv.sys, cfg.secs, cfg.pin, sample)?;
    check_run(&k, &run, "key-value system")?;
    Ok(rep_of(&w))
}

/// A repetition from a window of the key-value system.
fn rep_of(w: &Windowed<(Vec<OpCounts>, u64)>) -> Rep {
    let ((c0, q0), (c1, q1)) = (&w.samples.0, &w.samples.1);
    let per_client: Vec<OpCounts> = c1.iter().zip(c0).map(|(a, b)| a.minus(*b)).collect();
    let counts = per_client
        .iter()
        .copied()
        .fold(OpCounts::default(), OpCounts::plus);
    let kernel = w
        .per_core
        .iter()
        .copied()
        .fold(CoreStats::default(), CoreStats::plus);
    let wall_s = w.wall_s;
    let mean_util = mean(&w.utilisation);
    let thread_ops: Vec<u64> = per_client.iter().map(|c| c.requests).collect();
    let interrupts = q1.saturating_sub(*q0);
    let mut rep = Rep::counted(wall_s, w.span.cpu_total_s(), thread_ops);
    let throughput = rep.throughput_ops_s;
    rep.set_metrics(&KvMetrics {
        ticks: w.ticks,
        utilisation: w.utilisation.clone(),
        mean_utilisation: mean_util,
        xput: xput(throughput, mean_util),
        reads: counts.reads,
        updates: counts.updates,
        scans: counts.scans,
        inserts: counts.inserts,
        rmws: counts.rmws,
        syscalls: kernel.syscalls,
        interrupts,
        idle_entries: kernel.idle_entries,
        elided: kernel.elided,
        fallbacks: kernel.fallbacks,
        aborts: kernel.aborts,
        host_wait: w.span.waited_frac(),
        core_syscalls: w.per_core.iter().map(|c| c.syscalls).collect(),
        abort_causes: [
            kernel.abort_conflict,
            kernel.abort_capacity,
            kernel.abort_lock_busy,
            kernel.abort_retry_clear,
            kernel.abort_other,
        ],
        skipped: kernel.skipped,
    });
    rep
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Seed 000's Xput: throughput over the mean utilisation of the cores
/// (NaN when no core was busy).
pub fn xput(throughput: f64, mean_utilisation: f64) -> f64 {
    if mean_utilisation > 0.0 {
        throughput / mean_utilisation
    } else {
        f64::NAN
    }
}

/// One repetition's key-value measurements over the window. `Rep::total_ops`
/// counts requests answered (a read-modify-write is two) and
/// `Rep::thread_ops` each client's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KvMetrics {
    /// Time-stamp ticks the window lasted.
    pub ticks: u64,
    /// Per core: busy time over the window (from the idle loop's time).
    pub utilisation: Vec<f64>,
    /// Their mean.
    #[serde(deserialize_with = "crate::core::results::nan_if_null")]
    pub mean_utilisation: f64,
    /// Throughput over the mean utilisation, requests per second.
    #[serde(deserialize_with = "crate::core::results::nan_if_null")]
    pub xput: f64,
    /// YCSB operations completed, by kind.
    pub reads: u64,
    /// See `reads`.
    pub updates: u64,
    /// See `reads`.
    pub scans: u64,
    /// See `reads`.
    pub inserts: u64,
    /// See `reads`.
    pub rmws: u64,
    /// System calls on every core.
    pub syscalls: u64,
    /// Interrupts the kernel took from the network card.
    pub interrupts: u64,
    /// Times an idle core scheduled.
    pub idle_entries: u64,
    /// Kernel entries run as hardware transactions (elision).
    pub elided: u64,
    /// Kernel entries that took the fall-back lock (elision).
    pub fallbacks: u64,
    /// Transactions aborted (elision).
    pub aborts: u64,
    /// Per core: the time its thread was ready to run but waiting for a
    /// host CPU, as a fraction of the window (absent from runs stored
    /// before it was measured).
    #[serde(default)]
    pub host_wait: Vec<f64>,
    /// Per core: its system calls (absent from runs stored before it was
    /// counted).
    #[serde(default)]
    pub core_syscalls: Vec<u64>,
    /// Aborts by cause: conflict, capacity, lock busy, retry bit clear,
    /// other (zeros in runs stored before they were counted).
    #[serde(default)]
    pub abort_causes: [u64; 5],
    /// Kernel entries that took the fall-back lock without attempting
    /// (counted in `fallbacks` too; the adaptive policy).
    #[serde(default)]
    pub skipped: u64,
}

impl StudyMetrics for KvMetrics {
    const KEY: &'static str = "kv";
}
