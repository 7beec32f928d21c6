//! What a `sim lhp` run is stored as: its kind, its points' `bench`, and
//! what a repetition keeps beyond the fields every repetition has (the row
//! of its table, and the simulator's own work).

use crate::core::results::{nan_if_null, StudyMetrics};
pub use locklab_model::lhp::{RowMetrics, VmRow};
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
/// Stored as one JSON object: `seed`, the row's metrics as fields of their
/// own (`throughput_norm`, `speedup`, …, `per_vm`), then the plan's totals.
/// A number that does not exist (a throughput over a baseline of 0) is NaN
/// here and `null` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimMetrics {
    /// The repetition's seed.
    pub seed: u64,
    /// The row, as the model tabulated it.
    #[serde(flatten)]
    pub row: RowMetrics,
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
            uuid: None,
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
            row: RowMetrics {
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
                    VmRow {
                        name: "oltp#1".into(),
                        throughput_norm: 0.4,
                        util_pct: 24.9,
                    },
                    VmRow {
                        name: "oltp#2".into(),
                        throughput_norm: f64::NAN,
                        util_pct: 25.1,
                    },
                ],
            },
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
        let mut store = Store::open(dir.path().join("locklab.db")).unwrap();
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
        assert!(m.row.per_vm[1].throughput_norm.is_nan());
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
            && num(a.row.throughput_norm, b.row.throughput_norm)
            && num(a.row.speedup, b.row.speedup)
            && opt(a.row.lock_speedup, b.row.lock_speedup)
            && num(a.row.util_variance, b.row.util_variance)
            && opt(a.row.response_p50_us, b.row.response_p50_us)
            && opt(a.row.response_p99_us, b.row.response_p99_us)
            && opt(a.row.response_change, b.row.response_change)
            && num(a.row.spin_share, b.row.spin_share)
            && num(a.row.overhead_share, b.row.overhead_share)
            && num(a.row.ple_exits_s, b.row.ple_exits_s)
            && num(a.row.switches_s, b.row.switches_s)
            && a.row.per_vm.len() == b.row.per_vm.len()
            && a.row.per_vm.iter().zip(&b.row.per_vm).all(|(x, y)| {
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
                row: RowMetrics {
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
                        .map(|(name, throughput_norm, util_pct)| VmRow {
                            name,
                            throughput_norm,
                            util_pct,
                        })
                        .collect(),
                },
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
