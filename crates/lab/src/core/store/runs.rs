//! Runs, points and repetitions: writing a run as it goes, and reading
//! runs back. The statements are the same on both engines (engine.rs).

use std::collections::HashMap;

use super::engine::{Cols, ColumnError, DbError, Sql, Value};
use super::errors::{no_run, write_err};
use super::handle::Store;
use crate::core::error::{LabError, Result};
use crate::core::machine;
use crate::core::results::{Machine, Point, Rep, RunMeta};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunSummary {
    /// The run (with its id).
    pub meta: RunMeta,
    /// Points stored for it so far.
    pub points: usize,
    /// Why the run's row cannot be read whole (a damaged column): `meta`
    /// then holds what could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Store {
    /// Stores a new, incomplete run and returns its id. `meta.id`,
    /// `meta.finished` and `meta.complete` are ignored: a run starts
    /// unfinished. It gets `meta.uuid` as its identity, or a new random one.
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64> {
        let uuid = meta
            .uuid
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let at = self.at.clone();
        let fail = |e: DbError| write_err(&at, "cannot store the run", e);
        let tx = self.engine.write().map_err(fail)?;
        // The identity is looked up under the write lock, so that a run is
        // refused here rather than by the unique index's error, which each
        // engine words its own way.
        if tx
            .row(
                "SELECT id FROM runs WHERE uuid = ?1",
                &[uuid.as_str().into()],
            )
            .map_err(fail)?
            .is_some()
        {
            return Err(LabError::input(format!(
                "{at}: a run with identity {uuid} is stored already (a run is stored once; \
                 `locklab push` copies runs between stores)"
            )));
        }
        let id = insert_run(&tx, meta, &uuid, None, false).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(id)
    }

    /// Stores one point and every repetition of it in one transaction: after
    /// an interruption the point is there whole or not at all. The run must
    /// exist and not be finished.
    pub fn add_point(&mut self, run: i64, p: &Point) -> Result<()> {
        let at = self.at.clone();
        let fail = |e: DbError| write_err(&at, &format!("cannot store a point of run {run}"), e);
        let tx = self.engine.write().map_err(fail)?;
        let complete = tx
            .row("SELECT complete FROM runs WHERE id = ?1", &[run.into()])
            .map_err(fail)?
            .map(|row| Cols(&row).bool(0))
            .transpose()
            .map_err(|e| fail(e.into()))?;
        match complete {
            None => return Err(no_run(&at, run)),
            Some(true) => {
                return Err(LabError::input(format!(
                    "run {run} in {at} is finished; its points cannot change"
                )))
            }
            Some(false) => {}
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = p.reps.iter().find(|r| !seen.insert(r.rep)) {
            return Err(LabError::input(format!(
                "point {} at {} threads has two repetitions numbered {}",
                p.lock, p.threads, dup.rep
            )));
        }
        insert_point(&tx, run, p).map_err(fail)?;
        tx.commit().map_err(fail)
    }

    /// Marks a run complete and records when it finished. Finishing a
    /// finished run changes nothing.
    pub fn finish_run(&mut self, run: i64) -> Result<()> {
        let changed = self
            .engine
            .exec(
                "UPDATE runs SET finished = ?2, complete = 1 WHERE id = ?1 AND complete = 0",
                &[run.into(), machine::now_rfc3339().into()],
            )
            .map_err(|e| self.err(&format!("cannot finish run {run}"), e))?;
        if changed == 0 && !self.exists(run)? {
            return Err(self.no_run(run));
        }
        Ok(())
    }

    fn exists(&self, run: i64) -> Result<bool> {
        self.engine
            .row("SELECT 1 FROM runs WHERE id = ?1", &[run.into()])
            .map(|o| o.is_some())
            .map_err(|e| self.err("cannot read runs", e))
    }

    /// Every stored run with its number of points, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        let rows = self
            .engine
            .rows(
                &format!(
                    "SELECT {RUN_COLUMNS},
                        (SELECT count(*) FROM points p WHERE p.run_id = runs.id)
                     FROM runs ORDER BY id DESC"
                ),
                &[],
            )
            .map_err(|e| self.err("cannot read runs", e))?;
        // A row that cannot be read whole is listed with what can be read,
        // and says why, rather than hiding every other run.
        Ok(rows
            .iter()
            .map(|row| {
                let points = Cols(row).opt_int(18).ok().flatten().unwrap_or(0) as usize;
                match run_from_row(row) {
                    Ok(meta) => RunSummary {
                        meta,
                        points,
                        problem: None,
                    },
                    Err(e) => RunSummary {
                        meta: damaged_run(row),
                        points,
                        problem: Some(column_problem(&e)),
                    },
                }
            })
            .collect())
    }

    /// A run and its points (in the order stored, repetitions by number).
    pub fn load(&self, run: i64) -> Result<(RunMeta, Vec<Point>)> {
        let fail = |e: DbError| self.err(&format!("cannot read run {run}"), e);
        let row = self
            .engine
            .row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                &[run.into()],
            )
            .map_err(fail)?
            .ok_or_else(|| self.no_run(run))?;
        let meta = run_from_row(&row).map_err(|e| fail(e.into()))?;

        let mut points = Vec::new();
        let mut index: HashMap<i64, usize> = HashMap::new();
        let rows = self
            .engine
            .rows(
                "SELECT id, bench, lock, threads, params FROM points WHERE run_id = ?1 ORDER BY id",
                &[run.into()],
            )
            .map_err(fail)?;
        for row in &rows {
            let point = || -> std::result::Result<(i64, Point), ColumnError> {
                let c = Cols(row);
                Ok((
                    c.int(0)?,
                    Point {
                        bench: c.text(1)?,
                        lock: c.text(2)?,
                        threads: u32::try_from(c.int(3)?)
                            .map_err(|_| ColumnError::Kind(3, "Integer out of range"))?,
                        params: c.json(4)?,
                        reps: Vec::new(),
                    },
                ))
            };
            let (id, p) = point().map_err(|e| fail(e.into()))?;
            index.insert(id, points.len());
            points.push(p);
        }

        // Read after the points: a point is committed with its repetitions,
        // so every point read above has them all here. (One added since
        // has repetitions for no point read, and they are passed over.)
        let rows = self
            .engine
            .rows(
                "SELECT point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s, ns_per_op,
                        thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, metrics,
                        censored, censored_ns
                 FROM reps WHERE point_id IN (SELECT id FROM points WHERE run_id = ?1)
                 ORDER BY point_id, rep",
                &[run.into()],
            )
            .map_err(fail)?;
        for row in &rows {
            let point_id = Cols(row).int(0).map_err(|e| fail(e.into()))?;
            let rep = rep_from_row(row).map_err(|e| fail(e.into()))?;
            if let Some(&i) = index.get(&point_id) {
                points[i].reps.push(rep);
            }
        }
        Ok((meta, points))
    }

    /// Whether run `run` is stored.
    pub fn has_run(&self, run: i64) -> Result<bool> {
        self.exists(run)
    }
}

/// Inserts a run row with identity `uuid`; `finished` and `complete` as
/// given (a new run: none and false; a copy: the source's).
pub(super) fn insert_run(
    tx: &dyn Sql,
    meta: &RunMeta,
    uuid: &str,
    finished: Option<&str>,
    complete: bool,
) -> std::result::Result<i64, DbError> {
    let m = &meta.machine;
    tx.insert_id(
        "INSERT INTO runs (kind, command, params, started, finished, complete,
            machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
            machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns,
            uuid, machine_id, machine_rtm)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
         RETURNING id",
        &[
            (&meta.kind).into(),
            (&meta.command).into(),
            meta.params.to_string().into(),
            (&meta.started).into(),
            finished.into(),
            complete.into(),
            (&m.cpu_model).into(),
            (m.cores as i64).into(),
            m.tsc_hz.map(|hz| hz as i64).into(),
            (&m.kernel).into(),
            (&m.rustc).into(),
            (&m.git_rev).into(),
            (&m.hostname).into(),
            m.c2c_round_trip_ns.into(),
            uuid.into(),
            m.id.as_deref().into(),
            m.rtm.into(),
        ],
    )
}

/// Inserts point `p` of run `run` with every repetition (the caller's
/// transaction makes it whole or nothing).
pub(super) fn insert_point(tx: &dyn Sql, run: i64, p: &Point) -> std::result::Result<(), DbError> {
    let point_id = tx.insert_id(
        "INSERT INTO points (run_id, bench, lock, threads, params) VALUES (?1, ?2, ?3, ?4, ?5)
         RETURNING id",
        &[
            run.into(),
            (&p.bench).into(),
            (&p.lock).into(),
            p.threads.into(),
            p.params.to_string().into(),
        ],
    )?;
    for r in &p.reps {
        let thread_ops = serde_json::Value::from(r.thread_ops.clone()).to_string();
        // NULL for none; NaN and infinite numbers are already null,
        // which reads back as NaN.
        let metrics = (!r.metrics.is_empty())
            .then(|| serde_json::Value::Object(r.metrics.clone()).to_string());
        tx.exec(
            "INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s,
                    ns_per_op, thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, metrics,
                    censored, censored_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                    ?16)",
            &[
                point_id.into(),
                r.rep.into(),
                r.wall_s.into(),
                r.cpu_s.into(),
                // u64 counts bit for bit in a signed 64-bit integer.
                (r.total_ops as i64).into(),
                r.throughput_ops_s.into(),
                r.ns_per_op.into(),
                thread_ops.into(),
                r.jain.into(),
                (r.p50_ns as i64).into(),
                (r.p99_ns as i64).into(),
                (r.p999_ns as i64).into(),
                (r.max_ns as i64).into(),
                metrics.into(),
                (r.censored as i64).into(),
                (r.censored_ns as i64).into(),
            ],
        )?;
    }
    Ok(())
}

/// The run columns in the order `run_from_row` reads them.
const RUN_COLUMNS: &str = "id, kind, command, params, started, finished, complete,
    machine_cpu, machine_cores, machine_tsc_hz, machine_kernel, machine_rustc,
    machine_git_rev, machine_hostname, machine_c2c_ns, uuid, machine_id, machine_rtm";

fn run_from_row(row: &[Value]) -> std::result::Result<RunMeta, ColumnError> {
    let c = Cols(row);
    Ok(RunMeta {
        id: Some(c.int(0)?),
        uuid: c.opt_text(15)?,
        kind: c.text(1)?,
        command: c.text(2)?,
        params: c.json(3)?,
        started: c.text(4)?,
        finished: c.opt_text(5)?,
        complete: c.bool(6)?,
        machine: Machine {
            cpu_model: c.text(7)?,
            cores: c.int(8)? as usize,
            tsc_hz: c.opt_int(9)?.map(|hz| hz as u64),
            kernel: c.text(10)?,
            rustc: c.text(11)?,
            git_rev: c.text(12)?,
            hostname: c.text(13)?,
            c2c_round_trip_ns: c.opt_real(14)?,
            id: c.opt_text(16)?,
            rtm: c.opt_bool(17)?,
        },
    })
}

/// What can be read of a run row that [`run_from_row`] cannot read.
fn damaged_run(row: &[Value]) -> RunMeta {
    let c = Cols(row);
    let text = |i: usize| c.text(i).unwrap_or_else(|_| "?".to_string());
    RunMeta {
        id: c.int(0).ok(),
        uuid: c.opt_text(15).ok().flatten(),
        kind: text(1),
        command: text(2),
        params: serde_json::Value::Null,
        started: text(4),
        finished: c.opt_text(5).ok().flatten(),
        complete: c.bool(6).unwrap_or(false),
        machine: Machine::default(),
    }
}

/// Which column of a run row is damaged, and how.
fn column_problem(e: &ColumnError) -> String {
    let i = e.index();
    let column = RUN_COLUMNS
        .split(',')
        .nth(i)
        .map_or_else(|| format!("column {i}"), |c| format!("runs.{}", c.trim()));
    match e {
        ColumnError::Json(_, err) => format!("{column} is not JSON ({err})"),
        ColumnError::Kind(_, kind) => format!("{column} holds a value of type {kind}"),
    }
}

/// Reads a repetition from a row whose column 0 is the point id.
fn rep_from_row(row: &[Value]) -> std::result::Result<Rep, ColumnError> {
    let c = Cols(row);
    let bits = |i: usize| -> std::result::Result<u64, ColumnError> { Ok(c.int(i)? as u64) };
    let thread_ops: Vec<u64> =
        serde_json::from_value(c.json(7)?).map_err(|e| ColumnError::Json(7, e))?;
    let metrics = c
        .opt_text(13)?
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| ColumnError::Json(13, e))?
        .unwrap_or_default();
    let total_ops = bits(4)?;
    // No acquisition at all has no fairness (0/0). Builds before that
    // rule stored 1.0 for it, which would name such a lock the fairest:
    // such a repetition reads as undefined, and the stored value is left
    // as it was.
    let jain = if total_ops == 0 && thread_ops.iter().all(|&n| n == 0) {
        f64::NAN
    } else {
        c.real(8)?
    };
    Ok(Rep {
        rep: u32::try_from(c.int(1)?).map_err(|_| ColumnError::Kind(1, "Integer out of range"))?,
        wall_s: c.real(2)?,
        cpu_s: c.real(3)?,
        total_ops,
        throughput_ops_s: c.real(5)?,
        ns_per_op: c.real(6)?,
        thread_ops,
        jain,
        p50_ns: bits(9)?,
        p99_ns: bits(10)?,
        p999_ns: bits(11)?,
        max_ns: bits(12)?,
        censored: c.opt_int(14)?.unwrap_or(0) as u64,
        censored_ns: c.opt_int(15)?.unwrap_or(0) as u64,
        metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::super::engine::Sql;
    use super::super::fixtures::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stored_fairness_of_no_acquisitions_reads_as_undefined() {
        // As an older build stored it: Jain's index 1.0 over zero counts.
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(db(&dir)).unwrap();
        let run = store.begin_run(&meta()).unwrap();
        let mut p = point("tas", 2);
        for r in &mut p.reps {
            r.thread_ops = vec![0, 0];
            r.total_ops = 0;
            r.throughput_ops_s = 0.0;
            r.ns_per_op = f64::NAN;
            r.jain = 1.0;
        }
        // A repetition that took something keeps the fairness stored.
        p.reps[2] = rep(2, 2);
        store.add_point(run, &p).unwrap();
        store.finish_run(run).unwrap();
        let (_, got) = store.load(run).unwrap();
        let jains: Vec<f64> = got[0].reps.iter().map(|r| r.jain).collect();
        assert!(jains[0].is_nan() && jains[1].is_nan(), "{jains:?}");
        assert_eq!(jains[2], p.reps[2].jain);
        // The file still holds what was written.
        let stored: Vec<Option<f64>> = store
            .conn()
            .prepare("SELECT jain FROM reps ORDER BY rep")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(stored[..2], [Some(1.0), Some(1.0)]);
    }

    #[test]
    fn round_trip_of_a_finished_run() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "round_trip_of_a_finished_run") {
            round_trip_of_a_finished_run_in(at.open());
        }
    }

    fn round_trip_of_a_finished_run_in(mut store: Store) {
        let m = meta();
        let run = store.begin_run(&m).unwrap();
        let mut other = point("floor", 1);
        other.bench = "other".into();
        let points = vec![point("tas", 1), point("tas", 2), other];
        for p in &points {
            store.add_point(run, p).unwrap();
        }
        store.finish_run(run).unwrap();

        let (got, got_points) = store.load(run).unwrap();
        assert_eq!(got_points, points);
        assert_eq!(got.id, Some(run));
        assert!(got.complete);
        assert!(got.finished.as_deref().is_some_and(|f| f.ends_with('Z')));
        // A new run gets a random identity (version 4).
        let uuid = got.uuid.clone().expect("a stored run has an identity");
        assert_eq!(
            uuid::Uuid::parse_str(&uuid).map(|u| u.get_version_num()),
            Ok(4)
        );
        let expected = RunMeta {
            id: Some(run),
            uuid: Some(uuid),
            finished: got.finished.clone(),
            complete: true,
            ..m
        };
        assert_eq!(got, expected);

        let runs = store.runs().unwrap();
        assert_eq!(
            runs,
            vec![RunSummary {
                meta: expected,
                points: 3,
                problem: None,
            }]
        );
    }

    #[test]
    fn every_run_has_its_own_identity_or_the_one_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "every_run_has_its_own_identity") {
            every_run_has_its_own_identity_in(at.open());
        }
    }

    fn every_run_has_its_own_identity_in(mut store: Store) {
        let a = store.begin_run(&meta()).unwrap();
        let b = store.begin_run(&meta()).unwrap();
        let uuid = |run| store.load(run).unwrap().0.uuid.unwrap();
        assert_ne!(uuid(a), uuid(b));
        let given = RunMeta {
            uuid: Some("6f1d0c36-2b1e-4f57-9a43-0d4c5e8f7a21".into()),
            ..meta()
        };
        let c = store.begin_run(&given).unwrap();
        assert_eq!(store.load(c).unwrap().0.uuid, given.uuid);
        // An identity is stored once: the same one again is refused, and
        // adds no run.
        expect_input_err(store.begin_run(&given), "is stored already");
        assert_eq!(store.runs().unwrap().len(), 3);
    }

    #[test]
    fn interrupted_run_keeps_finished_points() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "interrupted_run_keeps_finished_points") {
            let run = {
                let mut store = at.open();
                let run = store.begin_run(&meta()).unwrap();
                store.add_point(run, &point("tas", 1)).unwrap();
                store.add_point(run, &point("tas", 2)).unwrap();
                run
            };
            let store = at.open();
            let (m, points) = store.load(run).unwrap();
            assert!(!m.complete);
            assert_eq!(m.finished, None);
            assert_eq!(points, vec![point("tas", 1), point("tas", 2)]);
            let runs = store.runs().unwrap();
            assert_eq!((runs[0].points, runs[0].meta.complete), (2, false));
        }
    }

    #[test]
    fn runs_are_listed_newest_first_and_ids_are_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "runs_are_listed_newest_first") {
            runs_are_listed_newest_first_in(at.open());
        }
    }

    fn runs_are_listed_newest_first_in(mut store: Store) {
        let a = store.begin_run(&meta()).unwrap();
        let b = store.begin_run(&meta()).unwrap();
        store.add_point(b, &point("tas", 1)).unwrap();
        let ids: Vec<_> = store
            .runs()
            .unwrap()
            .iter()
            .map(|r| (r.meta.id, r.points))
            .collect();
        assert_eq!(ids, vec![(Some(b), 1), (Some(a), 0)]);
        store
            .engine
            .exec("DELETE FROM runs WHERE id = ?1", &[b.into()])
            .unwrap();
        let c = store.begin_run(&meta()).unwrap();
        assert!(c > b, "run ids are never reused: {c} after {b}");
    }

    #[test]
    fn unknown_or_finished_runs_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "unknown_or_finished_runs_are_input_errors") {
            unknown_or_finished_runs_are_input_errors_in(at.open());
        }
    }

    fn unknown_or_finished_runs_are_input_errors_in(mut store: Store) {
        let shown = store.location().to_string();
        expect_input_err(
            store.load(42),
            &format!("no run 42 in {shown}; `locklab runs` lists them"),
        );
        expect_input_err(store.finish_run(42), "no run 42");
        expect_input_err(store.add_point(42, &point("tas", 1)), "no run 42");

        let run = store.begin_run(&meta()).unwrap();
        store.add_point(run, &point("tas", 1)).unwrap();
        store.finish_run(run).unwrap();
        let finished = store.load(run).unwrap();
        store.finish_run(run).unwrap();
        expect_input_err(store.add_point(run, &point("tas", 2)), "is finished");
        assert_eq!(store.load(run).unwrap(), finished, "finished run unchanged");
    }

    #[test]
    fn duplicate_repetition_numbers_store_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "duplicate_repetition_numbers_store_nothing") {
            let mut store = at.open();
            let run = store.begin_run(&meta()).unwrap();
            let mut p = point("tas", 2);
            p.reps[2].rep = 0;
            expect_input_err(store.add_point(run, &p), "two repetitions numbered 0");
            assert!(store.load(run).unwrap().1.is_empty());
        }
    }

    /// A metric that is NaN is kept as `null`: the repetition reads back
    /// with `null` there (which a study reads as NaN).
    #[test]
    fn a_nan_metric_reads_back_as_null() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "a_nan_metric_reads_back_as_null") {
            a_nan_metric_reads_back_as_null_in(at.open());
        }
    }

    fn a_nan_metric_reads_back_as_null_in(mut store: Store) {
        let run = store.begin_run(&meta()).unwrap();
        let mut p = point("itcs", 4);
        for r in &mut p.reps {
            r.metrics = metrics("study", f64::NAN);
        }
        store.add_point(run, &p).unwrap();
        let (_, got) = store.load(run).unwrap();
        assert_eq!(
            got[0].reps[2].metrics["study"]["rate"],
            serde_json::Value::Null
        );
        assert_eq!(got[0].reps[2].metrics["study"]["count"], 900);
    }

    fn same_f64(a: f64, b: f64) -> bool {
        a == b || (a.is_nan() && b.is_nan())
    }

    /// `a` is `b` read back.
    fn same_rep(a: &Rep, b: &Rep) -> bool {
        a.rep == b.rep
            && same_f64(a.wall_s, b.wall_s)
            && same_f64(a.cpu_s, b.cpu_s)
            && a.total_ops == b.total_ops
            && same_f64(a.throughput_ops_s, b.throughput_ops_s)
            && same_f64(a.ns_per_op, b.ns_per_op)
            && a.thread_ops == b.thread_ops
            && same_f64(a.jain, b.jain)
            && (a.p50_ns, a.p99_ns, a.p999_ns, a.max_ns)
                == (b.p50_ns, b.p99_ns, b.p999_ns, b.max_ns)
            && (a.censored, a.censored_ns) == (b.censored, b.censored_ns)
            && a.metrics == b.metrics
    }

    /// Some study's metrics: numbers (NaN and infinities become null, as
    /// when a study sets them), counts, names and lists, under one key.
    fn any_metrics() -> impl Strategy<Value = serde_json::Map<String, serde_json::Value>> {
        use proptest::num::f64::ANY;
        (
            "[a-z_]{1,8}",
            proptest::collection::vec(("[a-z_]{1,6}", ANY, any::<u64>(), "[a-z#0-9]{0,8}"), 0..4),
        )
            .prop_map(|(key, fields)| {
                let mut m = serde_json::Map::new();
                for (name, x, n, s) in fields {
                    m.insert(format!("{name}_x"), serde_json::Value::from(x));
                    m.insert(format!("{name}_n"), n.into());
                    m.insert(format!("{name}_s"), json!([s, null]));
                }
                let mut outer = serde_json::Map::new();
                outer.insert(key, serde_json::Value::Object(m));
                outer
            })
    }

    fn any_rep() -> impl Strategy<Value = Rep> {
        use proptest::num::f64::ANY;
        (
            any::<u32>(),
            (ANY, ANY, any::<u64>(), ANY, ANY),
            proptest::collection::vec(any::<u64>(), 0..9),
            ANY,
            any::<[u64; 6]>(),
            proptest::option::of(any_metrics()),
        )
            .prop_map(
                |(
                    rep,
                    (wall_s, cpu_s, total_ops, throughput_ops_s, ns_per_op),
                    thread_ops,
                    jain,
                    p,
                    metrics,
                )| Rep {
                    rep,
                    wall_s,
                    cpu_s,
                    total_ops,
                    throughput_ops_s,
                    ns_per_op,
                    thread_ops,
                    jain,
                    p50_ns: p[0],
                    p99_ns: p[1],
                    p999_ns: p[2],
                    max_ns: p[3],
                    censored: p[4],
                    censored_ns: p[5],
                    metrics: metrics.unwrap_or_default(),
                },
            )
    }

    #[test]
    fn arbitrary_reps_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for (i, at) in stores(&dir, "t", "arbitrary_reps_round_trip")
            .iter()
            .enumerate()
        {
            // Fewer cases through a server: each is a few round trips.
            arbitrary_reps_round_trip_in(at.open(), if i == 0 { 256 } else { 64 });
        }
    }

    fn arbitrary_reps_round_trip_in(store: Store, cases: u32) {
        let store = std::cell::RefCell::new(store);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases,
            ..ProptestConfig::default()
        });
        runner
            .run(&proptest::collection::vec(any_rep(), 1..4), |reps| {
                // Repetition numbers are unique within a point.
                let reps: Vec<Rep> = reps
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| Rep {
                        rep: r.rep.wrapping_add(i as u32),
                        ..r
                    })
                    .collect();
                prop_assume!({
                    let mut n: Vec<u32> = reps.iter().map(|r| r.rep).collect();
                    n.sort_unstable();
                    n.windows(2).all(|w| w[0] != w[1])
                });
                let mut store = store.borrow_mut();
                let run = store.begin_run(&meta()).unwrap();
                let p = Point {
                    reps: reps.clone(),
                    ..point("tas", 1)
                };
                store.add_point(run, &p).unwrap();
                let (_, got) = store.load(run).unwrap();
                let mut want = reps;
                want.sort_by_key(|r| r.rep);
                prop_assert_eq!(got.len(), 1);
                prop_assert_eq!(got[0].reps.len(), want.len());
                for (g, w) in got[0].reps.iter().zip(&want) {
                    prop_assert!(same_rep(g, w), "stored {:?}\nread   {:?}", w, g);
                }
                Ok(())
            })
            .unwrap();
    }
}
