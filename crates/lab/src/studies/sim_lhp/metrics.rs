//! What a `sim lhp` run is stored as: its kind, its points' `bench`, and
//! what a repetition keeps beyond the fields every repetition has (the row
//! of its table, and the simulator's own work).

use crate::core::results::{nan_if_null, StudyMetrics};
use serde::{Deserialize, Serialize};

/// The run kind of `sim lhp`.
pub const KIND: &str = "sim lhp";

/// The `bench` of a `sim lhp` point.
pub const BENCH: &str = "sim-lhp";

/// One repetition of one row of a `sim lhp` table: a case (its VMs) under a
/// host policy, simulated with this repetition's seed (see
/// `locklab_model::lhp::experiment` for what each metric means). For `sim`
/// points the `Rep` fields around it describe the simulator's own work on
/// this row: `wall_s` and `cpu_s` of the simulation, `total_ops` the events
/// it processed and `throughput_ops_s` its events per second.
///
/// A number that does not exist (a throughput over a baseline of 0) is NaN
/// here and `null` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimMetrics {
    /// The repetition's seed.
    pub seed: u64,
    /// Mean normalized throughput of the case's VMs.
    #[serde(deserialize_with = "nan_if_null")]
    pub throughput_norm: f64,
    /// `throughput_norm` over `none`'s in the same case and repetition.
    #[serde(deserialize_with = "nan_if_null")]
    pub speedup: f64,
    /// Speed-up of the VMs that take locks (`fairness`: hackbench's).
    pub lock_speedup: Option<f64>,
    /// Variance of CPU utilization across the lock-free VMs (or all loaded
    /// VMs), percent².
    #[serde(deserialize_with = "nan_if_null")]
    pub util_variance: f64,
    /// The request VM's median response time, µs (`latency`).
    pub response_p50_us: Option<f64>,
    /// Its 99th percentile, µs.
    pub response_p99_us: Option<f64>,
    /// Its median over `none`'s, minus 1 (−0.17: 17 % faster).
    pub response_change: Option<f64>,
    /// Share of the host's CPU time spent spinning on guest locks, 0 to 1.
    #[serde(deserialize_with = "nan_if_null")]
    pub spin_share: f64,
    /// Share spent in host context switches and VM exits, 0 to 1.
    #[serde(deserialize_with = "nan_if_null")]
    pub overhead_share: f64,
    /// PLE exits per simulated second.
    #[serde(deserialize_with = "nan_if_null")]
    pub ple_exits_s: f64,
    /// Host context switches per simulated second.
    #[serde(deserialize_with = "nan_if_null")]
    pub switches_s: f64,
    /// Per VM of the case.
    pub per_vm: Vec<SimVm>,
    /// Events simulated by every simulation of this repetition, the
    /// baselines included.
    pub plan_events: u64,
    /// Seconds those simulations took, summed over them (the simulator's
    /// time, whatever the worker threads).
    #[serde(deserialize_with = "nan_if_null")]
    pub plan_sim_s: f64,
    /// Wall-clock seconds the whole command spent simulating, every
    /// repetition on every worker thread.
    #[serde(deserialize_with = "nan_if_null")]
    pub run_wall_s: f64,
}

/// One VM of a `sim lhp` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimVm {
    /// The VM's name (`oltp#2`).
    pub name: String,
    /// Its throughput over its baseline (the same VM alone under `none`).
    #[serde(deserialize_with = "nan_if_null")]
    pub throughput_norm: f64,
    /// Its CPU utilization, percent of the host.
    #[serde(deserialize_with = "nan_if_null")]
    pub util_pct: f64,
}

impl StudyMetrics for SimMetrics {
    const KEY: &'static str = "sim";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::{Machine, Point, Rep, RunMeta};
    use crate::core::store::Store;
    use proptest::prelude::*;
    use serde_json::json;

    fn meta() -> RunMeta {
        RunMeta {
            id: None,
            kind: KIND.into(),
            command: "locklab sim lhp".into(),
            params: json!({}),
            machine: Machine::default(),
            started: "2025-03-01T14:05:09Z".into(),
            finished: None,
            complete: false,
        }
    }

    fn sim_metrics(seed: u64) -> SimMetrics {
        SimMetrics {
            seed,
            throughput_norm: 0.4125,
            speedup: 2.95,
            lock_speedup: Some(31.5),
            util_variance: 1.0 / 3.0,
            response_p50_us: None,
            response_p99_us: None,
            response_change: None,
            spin_share: 0.25,
            overhead_share: 0.0125,
            ple_exits_s: 123_456.5,
            switches_s: 9_876.25,
            per_vm: vec![
                SimVm {
                    name: "oltp#1".into(),
                    throughput_norm: 0.4,
                    util_pct: 24.9,
                },
                SimVm {
                    name: "oltp#2".into(),
                    throughput_norm: f64::NAN,
                    util_pct: 25.1,
                },
            ],
            plan_events: 12_345_678,
            plan_sim_s: 3.25,
            run_wall_s: 1.5,
        }
    }

    /// A point as `sim lhp` stores it: one repetition per seed.
    fn sim_point(policy: &str, ms: &[SimMetrics]) -> Point {
        Point {
            bench: BENCH.into(),
            lock: policy.into(),
            threads: 4,
            params: json!({"experiment": "performance", "pcpus": 8, "vcpus": 8}),
            reps: ms
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let mut r = Rep::one_thread(i as u32, 0.5, 0.5, 1000);
                    r.set_metrics(m);
                    r
                })
                .collect(),
        }
    }

    /// Stores the points in a fresh store and reads them back.
    fn through_the_store(points: &[Point]) -> Vec<Point> {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("locklab.db")).unwrap();
        let run = store.begin_run(&meta()).unwrap();
        for p in points {
            store.add_point(run, p).unwrap();
        }
        store.load(run).unwrap().1
    }

    #[test]
    fn a_sim_point_round_trips_with_its_nan() {
        let ms: Vec<SimMetrics> = (1..=3).map(sim_metrics).collect();
        let points = [sim_point("none", &ms), sim_point("itcs", &ms)];
        let got = through_the_store(&points);
        assert_eq!(got.len(), 2);
        for (g, w) in got.iter().zip(&points) {
            assert_eq!((&g.bench, &g.lock), (&w.bench, &w.lock));
            for (gr, wr) in g.reps.iter().zip(&w.reps) {
                let (a, b) = (wr.metrics_of::<SimMetrics>(), gr.metrics_of::<SimMetrics>());
                assert!(
                    same_sim(&a.unwrap(), &b.unwrap()),
                    "stored {wr:?}\nread   {gr:?}"
                );
            }
        }
        let m = got[1].reps[2].metrics_of::<SimMetrics>().unwrap();
        assert_eq!(m.seed, 3);
        assert!(m.per_vm[1].throughput_norm.is_nan());
    }

    /// `b` is `a` read back: a number JSON cannot hold (NaN, ±infinity)
    /// reads as NaN, or as `None` where it was optional.
    fn same_sim(a: &SimMetrics, b: &SimMetrics) -> bool {
        let num = |x: f64, y: f64| if x.is_finite() { x == y } else { y.is_nan() };
        let opt = |x: Option<f64>, y: Option<f64>| match x {
            Some(x) if x.is_finite() => y == Some(x),
            _ => y.is_none(),
        };
        a.seed == b.seed
            && num(a.throughput_norm, b.throughput_norm)
            && num(a.speedup, b.speedup)
            && opt(a.lock_speedup, b.lock_speedup)
            && num(a.util_variance, b.util_variance)
            && opt(a.response_p50_us, b.response_p50_us)
            && opt(a.response_p99_us, b.response_p99_us)
            && opt(a.response_change, b.response_change)
            && num(a.spin_share, b.spin_share)
            && num(a.overhead_share, b.overhead_share)
            && num(a.ple_exits_s, b.ple_exits_s)
            && num(a.switches_s, b.switches_s)
            && a.per_vm.len() == b.per_vm.len()
            && a.per_vm.iter().zip(&b.per_vm).all(|(x, y)| {
                x.name == y.name
                    && num(x.throughput_norm, y.throughput_norm)
                    && num(x.util_pct, y.util_pct)
            })
            && a.plan_events == b.plan_events
            && num(a.plan_sim_s, b.plan_sim_s)
            && num(a.run_wall_s, b.run_wall_s)
    }

    fn any_sim() -> impl Strategy<Value = SimMetrics> {
        use proptest::num::f64::ANY;
        let opt = || proptest::option::of(ANY);
        (
            any::<u64>(),
            [ANY; 8],
            (opt(), opt(), opt(), opt()),
            proptest::collection::vec(("[a-z#0-9]{0,8}", ANY, ANY), 0..4),
            any::<u64>(),
        )
            .prop_map(|(seed, f, o, vms, events)| SimMetrics {
                seed,
                throughput_norm: f[0],
                speedup: f[1],
                lock_speedup: o.0,
                util_variance: f[2],
                response_p50_us: o.1,
                response_p99_us: o.2,
                response_change: o.3,
                spin_share: f[3],
                overhead_share: f[4],
                ple_exits_s: f[5],
                switches_s: f[6],
                per_vm: vms
                    .into_iter()
                    .map(|(name, throughput_norm, util_pct)| SimVm {
                        name,
                        throughput_norm,
                        util_pct,
                    })
                    .collect(),
                plan_events: events,
                plan_sim_s: f[7],
                run_wall_s: f[7] / 3.0,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any metrics read back as they were stored, a number JSON cannot
        /// hold as NaN (or `None`).
        #[test]
        fn arbitrary_sim_metrics_round_trip(ms in proptest::collection::vec(any_sim(), 1..4)) {
            let got = through_the_store(&[sim_point("none", &ms)]);
            for (g, m) in got[0].reps.iter().zip(&ms) {
                let read = g.metrics_of::<SimMetrics>();
                prop_assert!(read.as_ref().is_some_and(|r| same_sim(m, r)), "{:?} read as {:?}", m, read);
            }
        }
    }
}
