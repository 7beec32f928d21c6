//! Runs, points and repetitions: writing a run as it goes, and reading
//! runs back.

use std::collections::HashMap;

use rusqlite::types::Type;
use rusqlite::{params, OptionalExtension, Row};

use super::errors::{no_run, sql_text, write_err};
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
        insert_run(&self.conn, meta, &uuid, None, false).map_err(|e| {
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) {
                LabError::input(format!(
                    "{}: a run with identity {uuid} is stored already (a run is stored once; \
                     `locklab push` copies runs between stores)",
                    self.path.display()
                ))
            } else {
                self.err("cannot store the run", e)
            }
        })
    }

    /// Stores one point and every repetition of it in one transaction: after
    /// an interruption the point is there whole or not at all. The run must
    /// exist and not be finished.
    pub fn add_point(&mut self, run: i64, p: &Point) -> Result<()> {
        let path = self.path.clone();
        let fail = |e| write_err(&path, &format!("cannot store a point of run {run}"), e);
        // IMMEDIATE: a transaction that reads first and then writes cannot
        // wait for another writer (SQLite answers "busy" at once, to avoid a
        // deadlock); one that takes the write lock first waits its turn.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let complete: Option<bool> = tx
            .query_row("SELECT complete FROM runs WHERE id = ?1", [run], |r| {
                r.get(0)
            })
            .optional()
            .map_err(fail)?;
        match complete {
            None => return Err(no_run(&path, run)),
            Some(true) => {
                return Err(LabError::input(format!(
                    "run {run} in {} is finished; its points cannot change",
                    path.display()
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
            .conn
            .execute(
                "UPDATE runs SET finished = ?2, complete = 1 WHERE id = ?1 AND complete = 0",
                params![run, machine::now_rfc3339()],
            )
            .map_err(|e| self.err(&format!("cannot finish run {run}"), e))?;
        if changed == 0 && !self.exists(run)? {
            return Err(self.no_run(run));
        }
        Ok(())
    }

    fn exists(&self, run: i64) -> Result<bool> {
        self.conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| self.err("cannot read runs", e))
    }

    /// Every stored run with its number of points, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        let fail = |e| self.err("cannot read runs", e);
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {RUN_COLUMNS}, (SELECT count(*) FROM points p WHERE p.run_id = runs.id)
                 FROM runs ORDER BY id DESC"
            ))
            .map_err(fail)?;
        // A row that cannot be read whole is listed with what can be read,
        // and says why, rather than hiding every other run.
        let rows = stmt
            .query_map([], |row| {
                let points = row.get::<_, Option<i64>>(18)?.unwrap_or(0) as usize;
                Ok(match run_from_row(row) {
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
                })
            })
            .map_err(fail)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(fail)
    }

    /// A run and its points (in the order stored, repetitions by number).
    pub fn load(&self, run: i64) -> Result<(RunMeta, Vec<Point>)> {
        let fail = |e| self.err(&format!("cannot read run {run}"), e);
        let meta = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [run],
                run_from_row,
            )
            .optional()
            .map_err(fail)?
            .ok_or_else(|| self.no_run(run))?;

        let mut points = Vec::new();
        let mut index: HashMap<i64, usize> = HashMap::new();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, bench, lock, threads, params FROM points WHERE run_id = ?1 ORDER BY id",
            )
            .map_err(fail)?;
        let mut rows = stmt.query([run]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            let id: i64 = row.get(0).map_err(fail)?;
            index.insert(id, points.len());
            points.push(Point {
                bench: row.get(1).map_err(fail)?,
                lock: row.get(2).map_err(fail)?,
                threads: row.get(3).map_err(fail)?,
                params: json_column(row, 4).map_err(fail)?,
                reps: Vec::new(),
            });
        }

        let mut stmt = self
            .conn
            .prepare(
                "SELECT point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s, ns_per_op,
                        thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, metrics,
                        censored, censored_ns
                 FROM reps WHERE point_id IN (SELECT id FROM points WHERE run_id = ?1)
                 ORDER BY point_id, rep",
            )
            .map_err(fail)?;
        let mut rows = stmt.query([run]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            let point_id: i64 = row.get(0).map_err(fail)?;
            let rep = rep_from_row(row).map_err(fail)?;
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
    conn: &rusqlite::Connection,
    meta: &RunMeta,
    uuid: &str,
    finished: Option<&str>,
    complete: bool,
) -> rusqlite::Result<i64> {
    let m = &meta.machine;
    conn.execute(
        "INSERT INTO runs (kind, command, params, started, finished, complete,
            machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
            machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns,
            uuid, machine_id, machine_rtm)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            meta.kind,
            meta.command,
            meta.params.to_string(),
            meta.started,
            finished,
            complete,
            m.cpu_model,
            m.cores as i64,
            m.tsc_hz.map(|hz| hz as i64),
            m.kernel,
            m.rustc,
            m.git_rev,
            m.hostname,
            m.c2c_round_trip_ns,
            uuid,
            m.id,
            m.rtm,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Inserts point `p` of run `run` with every repetition (the caller's
/// transaction makes it whole or nothing).
pub(super) fn insert_point(tx: &rusqlite::Connection, run: i64, p: &Point) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO points (run_id, bench, lock, threads, params) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![run, p.bench, p.lock, p.threads, p.params.to_string()],
    )?;
    let point_id = tx.last_insert_rowid();
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s,
                    ns_per_op, thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, metrics,
                    censored, censored_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                    ?16)",
        )?;
        for r in &p.reps {
            let thread_ops = serde_json::Value::from(r.thread_ops.clone()).to_string();
            // NULL for none; NaN and infinite numbers are already null,
            // which reads back as NaN.
            let metrics = (!r.metrics.is_empty())
                .then(|| serde_json::Value::Object(r.metrics.clone()).to_string());
            insert.execute(params![
                point_id,
                r.rep,
                r.wall_s,
                r.cpu_s,
                r.total_ops as i64,
                r.throughput_ops_s,
                r.ns_per_op,
                thread_ops,
                r.jain,
                r.p50_ns as i64,
                r.p99_ns as i64,
                r.p999_ns as i64,
                r.max_ns as i64,
                metrics,
                r.censored as i64,
                r.censored_ns as i64,
            ])?;
        }
    }
    Ok(())
}

/// The run columns in the order `run_from_row` reads them.
const RUN_COLUMNS: &str = "id, kind, command, params, started, finished, complete,
    machine_cpu, machine_cores, machine_tsc_hz, machine_kernel, machine_rustc,
    machine_git_rev, machine_hostname, machine_c2c_ns, uuid, machine_id, machine_rtm";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunMeta> {
    Ok(RunMeta {
        id: Some(row.get(0)?),
        uuid: row.get(15)?,
        kind: row.get(1)?,
        command: row.get(2)?,
        params: json_column(row, 3)?,
        started: row.get(4)?,
        finished: row.get(5)?,
        complete: row.get(6)?,
        machine: Machine {
            cpu_model: row.get(7)?,
            cores: row.get::<_, i64>(8)? as usize,
            tsc_hz: row.get::<_, Option<i64>>(9)?.map(|hz| hz as u64),
            kernel: row.get(10)?,
            rustc: row.get(11)?,
            git_rev: row.get(12)?,
            hostname: row.get(13)?,
            c2c_round_trip_ns: row.get(14)?,
            id: row.get(16)?,
            rtm: row.get(17)?,
        },
    })
}

/// What can be read of a run row that [`run_from_row`] cannot read.
fn damaged_run(row: &Row<'_>) -> RunMeta {
    let text = |i: usize| row.get::<_, String>(i).unwrap_or_else(|_| "?".to_string());
    RunMeta {
        id: row.get(0).ok(),
        uuid: row.get(15).ok().flatten(),
        kind: text(1),
        command: text(2),
        params: serde_json::Value::Null,
        started: text(4),
        finished: row.get(5).ok().flatten(),
        complete: row.get(6).unwrap_or(false),
        machine: Machine::default(),
    }
}

/// Which column of a run row is damaged, and how.
fn column_problem(e: &rusqlite::Error) -> String {
    let column = |i: usize| {
        RUN_COLUMNS
            .split(',')
            .nth(i)
            .map_or_else(|| format!("column {i}"), |c| format!("runs.{}", c.trim()))
    };
    match e {
        rusqlite::Error::FromSqlConversionFailure(i, _, err) if *i == 3 => {
            format!("{} is not JSON ({err})", column(*i))
        }
        rusqlite::Error::FromSqlConversionFailure(i, _, err) => {
            format!("{} cannot be read ({err})", column(*i))
        }
        rusqlite::Error::InvalidColumnType(i, _, t) => {
            format!("{} holds a value of type {t}", column(*i))
        }
        e => sql_text(e),
    }
}

/// Reads a repetition from a row whose column 0 is the point id.
fn rep_from_row(row: &Row<'_>) -> rusqlite::Result<Rep> {
    let real = |i: usize| -> rusqlite::Result<f64> {
        Ok(row.get::<_, Option<f64>>(i)?.unwrap_or(f64::NAN))
    };
    let bits = |i: usize| -> rusqlite::Result<u64> { Ok(row.get::<_, i64>(i)? as u64) };
    let thread_ops: Vec<u64> = serde_json::from_value(json_column(row, 7)?)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(7, Type::Text, Box::new(e)))?;
    let metrics = row
        .get::<_, Option<String>>(13)?
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(13, Type::Text, Box::new(e)))?
        .unwrap_or_default();
    let total_ops = bits(4)?;
    // No acquisition at all has no fairness (0/0). Builds before that
    // rule stored 1.0 for it, which would name such a lock the fairest:
    // such a repetition reads as undefined, and the stored value is left
    // as it was.
    let jain = if total_ops == 0 && thread_ops.iter().all(|&n| n == 0) {
        f64::NAN
    } else {
        real(8)?
    };
    Ok(Rep {
        rep: row.get(1)?,
        wall_s: real(2)?,
        cpu_s: real(3)?,
        total_ops,
        throughput_ops_s: real(5)?,
        ns_per_op: real(6)?,
        thread_ops,
        jain,
        p50_ns: bits(9)?,
        p99_ns: bits(10)?,
        p999_ns: bits(11)?,
        max_ns: bits(12)?,
        censored: row.get::<_, Option<i64>>(14)?.unwrap_or(0) as u64,
        censored_ns: row.get::<_, Option<i64>>(15)?.unwrap_or(0) as u64,
        metrics,
    })
}

fn json_column(row: &Row<'_>, i: usize) -> rusqlite::Result<serde_json::Value> {
    let text: String = row.get(i)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stored_fairness_of_no_acquisitions_reads_as_undefined() {
        // As an older build stored it: Jain's index 1.0 over zero counts.
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
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
            .conn
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
        let mut store = Store::open(&db(&dir)).unwrap();
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
        let mut store = Store::open(&db(&dir)).unwrap();
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
        let run = {
            let mut store = Store::open(&db(&dir)).unwrap();
            let run = store.begin_run(&meta()).unwrap();
            store.add_point(run, &point("tas", 1)).unwrap();
            store.add_point(run, &point("tas", 2)).unwrap();
            run
        };
        let store = Store::open(&db(&dir)).unwrap();
        let (m, points) = store.load(run).unwrap();
        assert!(!m.complete);
        assert_eq!(m.finished, None);
        assert_eq!(points, vec![point("tas", 1), point("tas", 2)]);
        let runs = store.runs().unwrap();
        assert_eq!((runs[0].points, runs[0].meta.complete), (2, false));
    }

    #[test]
    fn runs_are_listed_newest_first_and_ids_are_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
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
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [b])
            .unwrap();
        let c = store.begin_run(&meta()).unwrap();
        assert!(c > b, "run ids are never reused: {c} after {b}");
    }

    #[test]
    fn unknown_or_finished_runs_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
        let shown = db(&dir).display().to_string();
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
        let mut store = Store::open(&db(&dir)).unwrap();
        let run = store.begin_run(&meta()).unwrap();
        let mut p = point("tas", 2);
        p.reps[2].rep = 0;
        expect_input_err(store.add_point(run, &p), "two repetitions numbered 0");
        assert!(store.load(run).unwrap().1.is_empty());
    }

    /// A metric that is NaN is kept as `null`: the repetition reads back
    /// with `null` there (which a study reads as NaN).
    #[test]
    fn a_nan_metric_reads_back_as_null() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
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
        let store = std::cell::RefCell::new(Store::open(&db(&dir)).unwrap());
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 256,
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
