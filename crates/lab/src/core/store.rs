//! The results store: one SQLite file (`locklab.db` by default) that keeps
//! every run, point and repetition.
//!
//! A run is written as it goes: `begin_run` stores it incomplete, each
//! `add_point` commits one point with all its repetitions in one transaction,
//! and `finish_run` marks it complete. An interrupted sweep therefore keeps
//! every point it finished.
//!
//! The file is marked as locklab's by SQLite's `application_id` and carries
//! its schema version in `user_version`. Opening never changes a file that is
//! not a locklab database (not SQLite, another program's SQLite file, or a
//! locklab schema newer than this build): that is refused with an input
//! error. An older schema is brought up to date by the ordered steps in
//! [`MIGRATIONS`], all in one transaction.
//!
//! Integers the data model holds as `u64` (operation counts, latencies, the
//! TSC rate) are stored bit for bit in SQLite's signed 64-bit integers, so
//! every value round-trips; only values above 2⁶³, which no measurement
//! reaches, would read as negative in plain SQL. A NaN `f64` is stored as
//! NULL (SQLite has no NaN) and reads back as NaN.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Type;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction};

use crate::core::error::{LabError, Result};
use crate::core::machine;
use crate::core::results::{Machine, Point, Rep, RunMeta};

/// SQLite `application_id` of a locklab database: "LKLB".
pub const APPLICATION_ID: i32 = 0x4c4b_4c42;

/// How long a writer waits for another process holding the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// One step of schema migration: `MIGRATIONS[i]` takes version `i` to `i + 1`.
pub struct Migration {
    /// What the step does, for messages.
    pub what: &'static str,
    /// Applies the step inside the migration transaction.
    pub apply: fn(&Transaction<'_>) -> rusqlite::Result<()>,
}

/// Every schema step in order; the schema this build writes is
/// `MIGRATIONS.len()`. Version 0 is an empty file.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        what: "create runs, points and reps (schema 1)",
        apply: |tx| tx.execute_batch(SCHEMA_V1),
    },
    Migration {
        what: "add the machine's cache-line round trip to runs (schema 2)",
        apply: |tx| tx.execute_batch("ALTER TABLE runs ADD COLUMN machine_c2c_ns REAL;"),
    },
    // Schemas 3 to 5 each added a column of one study's metrics (JSON) to
    // reps; schema 7 folds such columns into one. A file migrating past
    // them needs neither the columns nor the fold.
    Migration {
        what: "a study's metrics column (schema 3, superseded by schema 7)",
        apply: |_| Ok(()),
    },
    Migration {
        what: "a study's metrics column (schema 4, superseded by schema 7)",
        apply: |_| Ok(()),
    },
    Migration {
        what: "a study's metrics column (schema 5, superseded by schema 7)",
        apply: |_| Ok(()),
    },
    Migration {
        what: "add the waits still open at the window's closing to reps (schema 6)",
        // Their count and the longest one's lower bound, ns; NULL in rows
        // stored before the lab measured over one window (whose latency
        // percentiles clamped every wait of 256 ticks or more).
        apply: |tx| {
            tx.execute_batch(
                "ALTER TABLE reps ADD COLUMN censored INTEGER;
                 ALTER TABLE reps ADD COLUMN censored_ns INTEGER;",
            )
        },
    },
    Migration {
        what: "keep every study's metrics of a repetition in one JSON column of reps (schema 7)",
        apply: fold_metrics,
    },
    Migration {
        what: "add baselines, runs saved under a name to compare with (schema 8)",
        apply: |tx| tx.execute_batch(SCHEMA_V8_BASELINES),
    },
];

/// Schema 8: a baseline is a name for a stored run (`locklab baseline
/// save`); deleting the run would delete its baselines.
const SCHEMA_V8_BASELINES: &str = "
CREATE TABLE baselines (
    name   TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    saved  TEXT NOT NULL                  -- RFC 3339 UTC
);
";

/// The columns of `reps` as of schema 6 that every repetition has: any
/// other column a file has is one study's metrics, as JSON, named by the
/// study's key (schemas 3 to 5).
const REP_COLUMNS: [&str; 17] = [
    "id",
    "point_id",
    "rep",
    "wall_s",
    "cpu_s",
    "total_ops",
    "throughput_ops_s",
    "ns_per_op",
    "thread_ops",
    "jain",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "censored",
    "censored_ns",
    "metrics",
];

/// Schema 7: adds `reps.metrics`, a JSON object holding each study's
/// metrics under the study's key (`{"key": {...}}`; NULL for none), and
/// moves the per-study columns of older files into it under their column
/// names, dropping them.
fn fold_metrics(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("ALTER TABLE reps ADD COLUMN metrics TEXT;")?;
    let columns: Vec<String> = tx
        .prepare("SELECT name FROM pragma_table_info('reps')")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for c in columns
        .iter()
        .filter(|c| !REP_COLUMNS.contains(&c.as_str()))
    {
        let q = format!("\"{}\"", c.replace('"', "\"\""));
        // json_set, not json_patch: a merge patch would drop null members.
        let path = format!("$.\"{}\"", c.replace('"', "\\\""));
        tx.execute(
            &format!(
                "UPDATE reps SET metrics = json_set(COALESCE(metrics, '{{}}'), ?1, json({q}))
                 WHERE {q} IS NOT NULL"
            ),
            [path],
        )?;
        tx.execute_batch(&format!("ALTER TABLE reps DROP COLUMN {q};"))?;
    }
    Ok(())
}

/// The newest schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const SCHEMA_V1: &str = "
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    kind             TEXT NOT NULL,
    command          TEXT NOT NULL,
    params           TEXT NOT NULL,       -- JSON
    started          TEXT NOT NULL,       -- RFC 3339 UTC
    finished         TEXT,                -- NULL while running or if interrupted
    complete         INTEGER NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    machine_cpu      TEXT NOT NULL,
    machine_cores    INTEGER NOT NULL,
    machine_tsc_hz   INTEGER,             -- NULL when unknown
    machine_kernel   TEXT NOT NULL,
    machine_rustc    TEXT NOT NULL,
    machine_git_rev  TEXT NOT NULL,
    machine_hostname TEXT NOT NULL
);
CREATE TABLE points (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bench   TEXT NOT NULL,
    lock    TEXT NOT NULL,
    threads INTEGER NOT NULL,
    params  TEXT NOT NULL                 -- JSON
);
CREATE INDEX points_by_run ON points(run_id, id);
CREATE TABLE reps (
    point_id         INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    rep              INTEGER NOT NULL,
    wall_s           REAL,                -- REAL columns: NULL is NaN
    cpu_s            REAL,
    total_ops        INTEGER NOT NULL,
    throughput_ops_s REAL,
    ns_per_op        REAL,
    thread_ops       TEXT NOT NULL,       -- JSON array of per-thread counts
    jain             REAL,
    p50_ns           INTEGER NOT NULL,
    p99_ns           INTEGER NOT NULL,
    p999_ns          INTEGER NOT NULL,
    max_ns           INTEGER NOT NULL,
    PRIMARY KEY (point_id, rep)
) WITHOUT ROWID;
";

/// A stored run as `locklab runs` lists it.
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

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the database at `path`, creating it if absent and migrating an
    /// older schema. Refuses, without changing the file, anything that is not
    /// a locklab database this build can read.
    pub fn open(path: &Path) -> Result<Store> {
        check_location(path)?;
        let shown = path.display();
        // Whose file it is is decided read-only, so that a file that is not
        // locklab's is left byte for byte (SQLite would roll back another
        // program's hot journal on a connection that may write).
        let found = inspect(path, SCHEMA_VERSION)?;
        let absent = matches!(found, Found::Nothing) && std::fs::symlink_metadata(path).is_err();
        drop(found);
        if absent {
            create_whole(path)?;
        }
        // Without SQLITE_OPEN_URI, so that a path is always a file name
        // (`file:x.db?mode=ro` names a file, not an URI with options).
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| {
            LabError::input(format!(
                "{shown}: cannot open or create a database there: {}{}",
                sql_text(&e),
                hint(&e)
            ))
        })?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.err("cannot set up the database", e))?;
        store.check_and_migrate(MIGRATIONS)?;
        // The rollback journal, not WAL: a reader then needs nothing but
        // the file (WAL needs -wal and -shm files beside it, which a user
        // who may only read cannot create), and reading creates no file.
        // Readers still read while a sweep writes; each point's commit
        // holds them off for a moment, and they wait (busy_timeout). A
        // database an older build left in WAL goes back when no one else
        // has it open; until then WAL is also correct, so a failure here is
        // not an error.
        let _ = store.conn.pragma_update(None, "journal_mode", "DELETE");
        store
            .conn
            .pragma_update(None, "foreign_keys", true)
            .map_err(|e| store.err("cannot set up the database", e))?;
        Ok(store)
    }

    /// Opens an existing database to read it (`runs`, `show`, `plot`, a
    /// study that reads stored runs): read-only, so that a user who may only read the
    /// file can, and nothing is changed or created. A path with no file, or
    /// an empty file, is an input error saying so. A database of an older
    /// schema is migrated first, which needs write access.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        Self::open_existing(path)?.ok_or_else(|| {
            let shown = path.display();
            if path.exists() {
                LabError::input(format!(
                    "{shown}: no runs stored yet (the file is empty); nothing was changed"
                ))
            } else {
                LabError::input(format!(
                    "{shown}: no such database (the file does not exist); nothing was created \
                     (`locklab bench` stores runs; --db names another file)"
                ))
            }
        })
    }

    /// As [`Store::open_read_only`], with `None` where no database is yet
    /// (no file, or an empty one).
    pub fn open_existing(path: &Path) -> Result<Option<Store>> {
        check_location(path)?;
        let store = |conn| Store {
            conn,
            path: path.to_path_buf(),
        };
        match inspect(path, SCHEMA_VERSION)? {
            Found::Nothing => Ok(None),
            Found::Ours { conn, version } if version == SCHEMA_VERSION => Ok(Some(store(conn))),
            // An older schema is brought up to date as a writer would.
            Found::Ours { .. } => Self::open(path).map(Some),
            Found::Unread { wal, why } => {
                // A WAL database (an older build's) in a directory this user
                // cannot write, with no -wal file, so that no one has it
                // open: its file holds every committed change, and SQLite
                // reads it as an immutable file.
                if wal && !sidecar(path, "-wal").exists() {
                    if let Ok(conn) = open_immutable(path) {
                        if read_header_snapshot(&conn).is_ok() {
                            return Ok(Some(store(conn)));
                        }
                    }
                }
                // An interrupted write to roll back first: that is a writer's
                // job.
                Self::open(path).map(Some).map_err(|e| {
                    LabError::input(format!(
                        "{}; it cannot be read as it is ({why})",
                        e.msg.trim_end_matches("; nothing was changed")
                    ))
                })
            }
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Decides whether the file is locklab's and brings its schema to the
    /// newest of `steps`. Reads only, until it has decided to write.
    fn check_and_migrate(&mut self, steps: &[Migration]) -> Result<()> {
        let latest = steps.len() as u32;
        // One read transaction: the three reads see one state of the file,
        // even while another process is creating it.
        let header = read_header_snapshot(&self.conn).map_err(|e| read_err(&self.path, e))?;
        refuse_foreign(&self.path, &header, latest)?;
        if header.user_version == latest {
            return Ok(());
        }
        // IMMEDIATE takes the write lock now, so two processes creating the
        // same new file do not both migrate; the header is read again under
        // the lock for the same reason.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| write_err(&self.path, "cannot lock the database to set it up", e))?;
        let header = read_header(&tx).map_err(|e| write_err(&self.path, "cannot read", e))?;
        refuse_foreign(&self.path, &header, latest)?;
        for (from, step) in steps.iter().enumerate().skip(header.user_version as usize) {
            (step.apply)(&tx).map_err(|e| {
                write_err(
                    &self.path,
                    &format!("cannot migrate from schema {from} ({})", step.what),
                    e,
                )
            })?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .and_then(|()| tx.pragma_update(None, "user_version", latest))
            .and_then(|()| tx.commit())
            .map_err(|e| write_err(&self.path, "cannot write the schema", e))
    }

    fn err(&self, what: &str, e: rusqlite::Error) -> LabError {
        write_err(&self.path, what, e)
    }

    fn no_run(&self, run: i64) -> LabError {
        no_run(&self.path, run)
    }

    /// Stores a new, incomplete run and returns its id. `meta.id`,
    /// `meta.finished` and `meta.complete` are ignored: a run starts
    /// unfinished.
    pub fn begin_run(&mut self, meta: &RunMeta) -> Result<i64> {
        let m = &meta.machine;
        self.conn
            .execute(
                "INSERT INTO runs (kind, command, params, started, finished, complete,
                    machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                    machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns)
                 VALUES (?1, ?2, ?3, ?4, NULL, 0, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                params![
                    meta.kind,
                    meta.command,
                    meta.params.to_string(),
                    meta.started,
                    m.cpu_model,
                    m.cores as i64,
                    m.tsc_hz.map(|hz| hz as i64),
                    m.kernel,
                    m.rustc,
                    m.git_rev,
                    m.hostname,
                    m.c2c_round_trip_ns,
                ],
            )
            .map_err(|e| self.err("cannot store the run", e))?;
        Ok(self.conn.last_insert_rowid())
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
        tx.execute(
            "INSERT INTO points (run_id, bench, lock, threads, params) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run, p.bench, p.lock, p.threads, p.params.to_string()],
        )
        .map_err(fail)?;
        let point_id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s,
                        ns_per_op, thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, metrics,
                        censored, censored_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                        ?16)",
                )
                .map_err(fail)?;
            for r in &p.reps {
                let thread_ops = serde_json::Value::from(r.thread_ops.clone()).to_string();
                // NULL for none; NaN and infinite numbers are already null,
                // which reads back as NaN.
                let metrics = (!r.metrics.is_empty())
                    .then(|| serde_json::Value::Object(r.metrics.clone()).to_string());
                insert
                    .execute(params![
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
                    ])
                    .map_err(fail)?;
            }
        }
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
                let points = row.get::<_, Option<i64>>(15)?.unwrap_or(0) as usize;
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
}

/// A run saved under a name (`locklab baseline save`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Baseline {
    /// The baseline's name.
    pub name: String,
    /// The run it names.
    pub run_id: i64,
    /// When it was saved, RFC 3339 UTC.
    pub saved: String,
}

impl Store {
    /// Whether run `run` is stored.
    pub fn has_run(&self, run: i64) -> Result<bool> {
        self.exists(run)
    }

    /// Saves run `run` under `name`, replacing a baseline of that name;
    /// returns the run the name named before, if any. The run itself is
    /// not changed. The name is not checked here (the CLI checks it).
    pub fn save_baseline(&mut self, name: &str, run: i64) -> Result<Option<i64>> {
        let path = self.path.clone();
        let fail = |e| write_err(&path, &format!("cannot save baseline '{name}'"), e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let known: Option<i64> = tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map_err(fail)?;
        if known.is_none() {
            return Err(no_run(&path, run));
        }
        let before: Option<i64> = tx
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        tx.execute(
            "INSERT INTO baselines (name, run_id, saved) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id, saved = excluded.saved",
            params![name, run, machine::now_rfc3339()],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(before)
    }

    /// Every baseline, by name.
    pub fn baselines(&self) -> Result<Vec<Baseline>> {
        let fail = |e| self.err("cannot read baselines", e);
        let mut stmt = self
            .conn
            .prepare("SELECT name, run_id, saved FROM baselines ORDER BY name")
            .map_err(fail)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Baseline {
                    name: r.get(0)?,
                    run_id: r.get(1)?,
                    saved: r.get(2)?,
                })
            })
            .map_err(fail)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(fail)
    }

    /// The run saved under `name`, if there is such a baseline.
    pub fn baseline(&self, name: &str) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err("cannot read baselines", e))
    }

    /// Deletes baseline `name` (the run stays); whether there was one.
    pub fn delete_baseline(&mut self, name: &str) -> Result<bool> {
        let n = self
            .conn
            .execute("DELETE FROM baselines WHERE name = ?1", [name])
            .map_err(|e| self.err(&format!("cannot delete baseline '{name}'"), e))?;
        Ok(n > 0)
    }
}

/// The run columns in the order `run_from_row` reads them.
const RUN_COLUMNS: &str = "id, kind, command, params, started, finished, complete,
    machine_cpu, machine_cores, machine_tsc_hz, machine_kernel, machine_rustc,
    machine_git_rev, machine_hostname, machine_c2c_ns";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunMeta> {
    Ok(RunMeta {
        id: Some(row.get(0)?),
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
        },
    })
}

/// What can be read of a run row that [`run_from_row`] cannot read.
fn damaged_run(row: &Row<'_>) -> RunMeta {
    let text = |i: usize| row.get::<_, String>(i).unwrap_or_else(|_| "?".to_string());
    RunMeta {
        id: row.get(0).ok(),
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

/// What decides whether a file is a locklab database.
struct Header {
    application_id: i32,
    user_version: u32,
    /// Tables, indexes, views and triggers in the file.
    objects: Vec<String>,
}

/// [`read_header`] inside one read transaction, so that its reads see one
/// state of the file (without it, a file another process was creating
/// between two of them looked like another program's).
fn read_header_snapshot(conn: &Connection) -> rusqlite::Result<Header> {
    let tx = conn.unchecked_transaction()?;
    let header = read_header(&tx)?;
    tx.commit()?;
    Ok(header)
}

/// What a read-only look at a database path found.
enum Found {
    /// No file, an empty file, or an SQLite file with nothing in it.
    Nothing,
    /// A locklab database, open read-only; its header was read in one
    /// read transaction.
    Ours { conn: Connection, version: u32 },
    /// A file with locklab's mark that a read-only connection cannot read
    /// as it is: an interrupted write to roll back, or a WAL database whose
    /// directory this user cannot write.
    Unread { wal: bool, why: String },
}

/// The SQLite header of a file, read as plain bytes.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Decides, without writing anything (not even a -journal, -wal or -shm
/// file), whether `path` is a locklab database this build can read.
/// Refuses anything else with an input error; nothing is changed.
fn inspect(path: &Path, latest: u32) -> Result<Found> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let mut head = Vec::with_capacity(100);
    // Without blocking, and the type checked on the open file: a FIFO put
    // in place after [`check_location`] is refused, not waited on.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    match opened {
        Ok(f) => {
            if let Some(kind) = f
                .metadata()
                .ok()
                .and_then(|m| crate::core::files::not_regular(m.file_type()))
            {
                return Err(LabError::input(format!(
                    "--db {shown}: {kind}; allowed {DB_ALLOWED}"
                )));
            }
            f.take(100).read_to_end(&mut head)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => Err(e),
    }
    .map_err(|e| LabError::input(format!("{shown}: cannot read it: {e}")))?;
    if head.is_empty() {
        return Ok(Found::Nothing);
    }
    if head.len() < 100 || !head.starts_with(SQLITE_MAGIC) {
        return Err(LabError::input(format!(
            "{shown}: not a locklab database (not SQLite); nothing was changed"
        )));
    }
    let app = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    // Bytes 18 and 19 are 2 in WAL mode. A locklab database is marked before
    // it ever goes to WAL, so its file carries the mark even while newer
    // pages are in the -wal file; a WAL file without it is another
    // program's, and even a read-only connection would create its -shm.
    let wal = head[18] == 2 || head[19] == 2;
    if wal && app != APPLICATION_ID {
        return Err(LabError::input(format!(
            "{shown}: not a locklab database: an SQLite file of another program (in WAL mode); \
             nothing was changed"
        )));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| read_err(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| read_err(path, e))?;
    match read_header_snapshot(&conn) {
        Ok(h) => {
            refuse_foreign(path, &h, latest)?;
            if h.application_id == 0 && h.user_version == 0 && h.objects.is_empty() {
                Ok(Found::Nothing)
            } else {
                Ok(Found::Ours {
                    conn,
                    version: h.user_version,
                })
            }
        }
        Err(e)
            if e.sqlite_error_code() == Some(ErrorCode::ReadOnly)
                || e.sqlite_error_code() == Some(ErrorCode::CannotOpen) =>
        {
            if app == APPLICATION_ID {
                return Ok(Found::Unread {
                    wal,
                    why: sql_text(&e),
                });
            }
            Err(LabError::input(format!(
                "{shown}: not a locklab database: an SQLite file without locklab's mark that \
                 cannot be read without changing it (another program's interrupted write: {}); \
                 nothing was changed",
                sql_text(&e)
            )))
        }
        Err(e) => Err(read_err(path, e)),
    }
}

/// `path` with `suffix` appended to its file name (`-wal`, `-journal`).
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A read-only connection that takes the file as immutable: SQLite then
/// needs no -shm file, and no lock. Only for a file no one has open to write.
fn open_immutable(path: &Path) -> rusqlite::Result<Connection> {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri, flags)
}

/// What `--db` takes, for the refusal of anything else.
const DB_ALLOWED: &str =
    "a regular file (a locklab database, or an empty file) or a new file's name, e.g. locklab.db";

/// Makes a new database at `path` whole or not at all: the schema is
/// written to a temporary file beside it, which then takes the name only
/// if nothing has taken it meanwhile. A failure (a full disk, a write
/// limit) leaves no file, empty or half made, under the name; where
/// another process made the database first, its file is kept and ours is
/// dropped (both are the same schema).
fn create_whole(path: &Path) -> Result<()> {
    let shown = path.display();
    let cannot = |e: &dyn std::fmt::Display| {
        LabError::input(format!(
            "{shown}: cannot create a database there: {e}; nothing was created"
        ))
    };
    // SQLite's own mode for a new database (0644 less the umask).
    let tmp = crate::core::files::temp_beside(path, 0o644)
        .map_err(|e| cannot(&e))?
        .into_temp_path();
    let journal = sidecar(&tmp, "-journal");
    let made = (|| {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&tmp, flags)
            .map_err(|e| cannot(&format!("{}{}", sql_text(&e), hint(&e))))?;
        // Messages name the database as the user knows it, not the
        // temporary file.
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.check_and_migrate(MIGRATIONS)?;
        store.conn.close().map_err(|(_, e)| cannot(&sql_text(&e)))?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| cannot(&e))
    })();
    if let Err(e) = made {
        // A journal of the failed transaction, if SQLite could not remove
        // it, is ours alone (the temporary name is unique).
        let _ = std::fs::remove_file(&journal);
        return Err(e);
    }
    match tmp.persist_noclobber(path) {
        Ok(()) => {
            crate::core::files::sync_dir(
                path.parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            );
            Ok(())
        }
        // Another process made it first: open theirs.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(cannot(&e.error)),
    }
}

/// Refuses a path no database can be at: empty, a directory, a FIFO, a
/// device or a socket (opening a FIFO would wait for a writer for ever),
/// or in a directory that does not exist.
fn check_location(path: &Path) -> Result<()> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(LabError::input(
            "the database path is empty; give a file path such as locklab.db",
        ));
    }
    crate::core::files::check_regular_or_absent("--db", path, DB_ALLOWED)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            return Err(LabError::input(format!(
                "{shown}: directory {} does not exist",
                parent.display()
            )));
        }
        if !parent.is_dir() {
            return Err(LabError::input(format!(
                "{shown}: {} is not a directory",
                parent.display()
            )));
        }
    }
    Ok(())
}

/// An error reading a file that may not be a database at all.
fn read_err(path: &Path, e: rusqlite::Error) -> LabError {
    let shown = path.display();
    let text = sql_text(&e);
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => LabError::input(format!(
            "{shown}: not a locklab database (not SQLite): {text}; nothing was changed"
        )),
        Some(ErrorCode::DatabaseCorrupt) => LabError::input(format!(
            "{shown}: the database is corrupt: {text}; nothing was changed"
        )),
        _ => LabError::input(format!(
            "{shown}: cannot read the database: {text}{}",
            hint(&e)
        )),
    }
}

/// An SQLite error on one line and without the statement: an error in a
/// statement (a column an old or damaged file lacks) would otherwise quote
/// the whole SQL, schema and line breaks included.
fn sql_text(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        e => e.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read_header(conn: &Connection) -> rusqlite::Result<Header> {
    let application_id = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let user_version = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?;
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master ORDER BY name")?;
    let objects = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Header {
        application_id,
        // user_version is a signed 32-bit header field; a negative one is
        // no locklab version, so it reads as "newer than any".
        user_version: u32::try_from(user_version).unwrap_or(u32::MAX),
        objects,
    })
}

/// Refuses a file that is another program's database or a newer locklab's.
fn refuse_foreign(path: &Path, h: &Header, latest: u32) -> Result<()> {
    let shown = path.display();
    let empty = h.application_id == 0 && h.user_version == 0 && h.objects.is_empty();
    if h.application_id != APPLICATION_ID && !empty {
        let mut names = h
            .objects
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if h.objects.len() > 5 {
            names.push_str(", …");
        }
        let what = if names.is_empty() {
            String::new()
        } else {
            format!(" (has {names})")
        };
        return Err(LabError::input(format!(
            "{shown}: not a locklab database: an SQLite file of another program{what}; \
             nothing was changed"
        )));
    }
    if h.user_version > latest {
        return Err(LabError::input(format!(
            "{shown}: was written by a newer locklab (schema {}, this build reads up to {latest}); \
             nothing was changed",
            h.user_version
        )));
    }
    Ok(())
}

fn no_run(path: &Path, run: i64) -> LabError {
    LabError::input(format!(
        "no run {run} in {}; `locklab runs` lists them",
        path.display()
    ))
}

fn write_err(path: &Path, what: &str, e: rusqlite::Error) -> LabError {
    LabError::input(format!(
        "{}: {what}: {}{}",
        path.display(),
        sql_text(&e),
        hint(&e)
    ))
}

/// What the user can do about an SQLite error, if there is something.
fn hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        // WAL (an older build's) needs its -wal and -shm files beside the
        // database even to read.
        Some(ErrorCode::ReadOnly) => " (the file or its directory is read-only)",
        Some(ErrorCode::CannotOpen) => " (is the directory writable?)",
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            " (another locklab holds it; try again when it ends)"
        }
        Some(ErrorCode::DiskFull) => " (the disk is full)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::EXIT_INPUT;
    use proptest::prelude::*;
    use serde_json::json;

    fn meta() -> RunMeta {
        RunMeta {
            id: None,
            kind: "bench demo".into(),
            command: "locklab bench demo --threads 1,2".into(),
            params: json!({"threads": [1, 2], "secs": 0.25, "cs_ns": 100, "dist": "exp",
                           "nested": {"x": [1.5, -2.25e-7, null, true]}}),
            machine: Machine {
                cpu_model: "Test CPU @ 3.00GHz".into(),
                cores: 2,
                tsc_hz: Some(3_000_000_000),
                kernel: "Linux 6.1".into(),
                rustc: "rustc 1.85.0".into(),
                git_rev: "abc1234-dirty".into(),
                hostname: "box".into(),
                c2c_round_trip_ns: Some(123.5),
            },
            started: "2025-03-01T14:05:09Z".into(),
            finished: None,
            complete: false,
        }
    }

    fn rep(i: u32, threads: usize) -> Rep {
        let thread_ops: Vec<u64> = (0..threads as u64)
            .map(|t| 1000 + 17 * t + u64::from(i))
            .collect();
        let total: u64 = thread_ops.iter().sum();
        Rep {
            rep: i,
            wall_s: 0.25 + f64::from(i) * 1e-3,
            cpu_s: 0.4999,
            total_ops: total,
            throughput_ops_s: total as f64 / 0.25,
            ns_per_op: 1e9 / (total as f64 / 0.25),
            jain: crate::core::results::jain(&thread_ops),
            thread_ops,
            p50_ns: 40,
            p99_ns: 1_200,
            p999_ns: 15_000,
            max_ns: u64::MAX,
            censored: 3,
            censored_ns: 2_000_000,
            metrics: Default::default(),
        }
    }

    fn point(lock: &str, threads: u32) -> Point {
        Point {
            bench: "demo".into(),
            lock: lock.into(),
            threads,
            params: json!({"cs_ns": 100, "delay_ns": 0, "delay_dist": "exp", "secs": 0.25}),
            reps: (0..3).map(|i| rep(i, threads as usize)).collect(),
        }
    }

    fn db(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("locklab.db")
    }

    fn expect_input_err<T: std::fmt::Debug>(r: Result<T>, needle: &str) -> LabError {
        let e = r.expect_err("expected an error");
        assert_eq!(e.code, EXIT_INPUT, "{e}");
        assert!(
            e.msg.contains(needle),
            "message {:?} lacks {needle:?}",
            e.msg
        );
        assert!(!e.msg.contains('\n'), "one line: {:?}", e.msg);
        e
    }

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
        let expected = RunMeta {
            id: Some(run),
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
    fn empty_file_becomes_a_database() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(db(&dir), b"").unwrap();
        let mut store = Store::open(&db(&dir)).unwrap();
        store.begin_run(&meta()).unwrap();
    }

    /// Opens `path` expecting refusal, and checks the file is byte for byte
    /// what it was and nothing was created beside it.
    fn refused_unchanged(path: &Path, needle: &str) {
        let before = std::fs::read(path).unwrap();
        let entries = |p: &Path| {
            let mut v: Vec<_> = std::fs::read_dir(p.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        let listing = entries(path);
        expect_input_err(Store::open(path), needle);
        assert_eq!(std::fs::read(path).unwrap(), before, "file changed");
        assert_eq!(entries(path), listing, "files appeared beside it");
    }

    #[test]
    fn garbage_file_is_refused_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        // A fixed-seed xorshift: random-looking bytes, the same every run.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let bytes: Vec<u8> = (0..8192)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(db(&dir), &bytes).unwrap();
        refused_unchanged(&db(&dir), "not a locklab database (not SQLite)");

        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "results: tas was fastest\n".repeat(100)).unwrap();
        refused_unchanged(&text, "not SQLite");
    }

    #[test]
    fn newer_schema_is_refused_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = Store::open(&db(&dir)).unwrap();
            let run = store.begin_run(&meta()).unwrap();
            store.add_point(run, &point("tas", 1)).unwrap();
        }
        {
            let conn = Connection::open(db(&dir)).unwrap();
            conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                .unwrap();
            conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
        }
        refused_unchanged(
            &db(&dir),
            &format!(
                "was written by a newer locklab (schema {}, this build reads up to {SCHEMA_VERSION}); \
                 nothing was changed",
                SCHEMA_VERSION + 1
            ),
        );
    }

    #[test]
    fn another_programs_sqlite_file_is_refused_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(db(&dir)).unwrap();
            conn.execute_batch(
                "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);
                 INSERT INTO invoices (total) VALUES (12.5);",
            )
            .unwrap();
        }
        refused_unchanged(&db(&dir), "another program (has invoices)");

        // Another program that also versions its schema.
        let other = dir.path().join("other.db");
        {
            let conn = Connection::open(&other).unwrap();
            conn.execute_batch("CREATE TABLE runs (x); PRAGMA user_version = 1;")
                .unwrap();
        }
        refused_unchanged(&other, "not a locklab database");
    }

    #[test]
    fn unusable_locations_are_input_errors() {
        let dir = tempfile::tempdir().unwrap();
        // A parent that is a regular file stops root too.
        let file = dir.path().join("plain-file");
        std::fs::write(&file, b"x").unwrap();
        expect_input_err(Store::open(&file.join("locklab.db")), "is not a directory");
        expect_input_err(
            Store::open(&dir.path().join("missing").join("locklab.db")),
            "does not exist",
        );
        expect_input_err(
            Store::open(dir.path()),
            "a directory; allowed a regular file",
        );
        expect_input_err(Store::open(Path::new("")), "the database path is empty");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
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

    fn header(path: &Path) -> (i32, u32, Vec<String>) {
        let conn = Connection::open(path).unwrap();
        let h = read_header(&conn).unwrap();
        (h.application_id, h.user_version, h.objects)
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let steps = [
            Migration {
                what: "one table",
                apply: |tx| tx.execute_batch("CREATE TABLE a (x);"),
            },
            Migration {
                what: "a broken step",
                apply: |tx| tx.execute_batch("NOT SQL;"),
            },
        ];
        let conn = Connection::open(db(&dir)).unwrap();
        let mut store = Store {
            conn,
            path: db(&dir),
        };
        expect_input_err(
            store.check_and_migrate(&steps),
            "cannot migrate from schema 1 (a broken step)",
        );
        drop(store);
        assert_eq!(header(&db(&dir)), (0, 0, vec![]));
    }

    #[test]
    fn an_older_schema_is_migrated_keeping_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let run = {
            let mut store = Store::open(&db(&dir)).unwrap();
            let run = store.begin_run(&meta()).unwrap();
            store.add_point(run, &point("tas", 1)).unwrap();
            run
        };
        // A future schema, one step past this build's, that this build's
        // file must reach.
        let mut steps: Vec<Migration> = MIGRATIONS
            .iter()
            .map(|m| Migration {
                what: m.what,
                apply: m.apply,
            })
            .collect();
        steps.push(Migration {
            what: "add runs.note",
            apply: |tx| tx.execute_batch("ALTER TABLE runs ADD COLUMN note TEXT;"),
        });
        let conn = Connection::open(db(&dir)).unwrap();
        let mut store = Store {
            conn,
            path: db(&dir),
        };
        store.check_and_migrate(&steps).unwrap();
        let (_, version, _) = header(&db(&dir));
        assert_eq!(version, SCHEMA_VERSION + 1);
        assert_eq!(store.load(run).unwrap().1, vec![point("tas", 1)]);
        // And this build now refuses it as newer.
        drop(store);
        expect_input_err(
            Store::open(&db(&dir)),
            &format!("newer locklab (schema {}", SCHEMA_VERSION + 1),
        );
    }

    /// A file written by the first schema (before the machine's cache-line
    /// round trip was recorded) opens, migrates, and keeps its runs, which
    /// read back without a round trip.
    #[test]
    fn a_schema_1_file_gains_the_round_trip_column() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(db(&dir)).unwrap();
            let mut store = Store {
                conn,
                path: db(&dir),
            };
            store
                .check_and_migrate(&[Migration {
                    what: MIGRATIONS[0].what,
                    apply: MIGRATIONS[0].apply,
                }])
                .unwrap();
            store
                .conn
                .execute(
                    "INSERT INTO runs (kind, command, params, started, finished, complete,
                        machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                        machine_rustc, machine_git_rev, machine_hostname)
                     VALUES ('bench demo', 'locklab bench demo', '{}', 't0', NULL, 0,
                        'cpu', 2, NULL, 'k', 'r', 'g', 'h')",
                    [],
                )
                .unwrap();
        }
        assert_eq!(header(&db(&dir)).1, 1);
        let store = Store::open(&db(&dir)).unwrap();
        assert_eq!(header(&db(&dir)).1, SCHEMA_VERSION);
        let (meta, points) = store.load(1).unwrap();
        assert_eq!(meta.machine.c2c_round_trip_ns, None);
        assert_eq!(meta.machine.cpu_model, "cpu");
        assert!(points.is_empty());
    }

    /// A study's metrics, as a repetition keeps them.
    fn metrics(key: &str, x: f64) -> serde_json::Map<String, serde_json::Value> {
        let v = json!({ key: {"count": 900_u64, "rate": x, "none": null, "name": "n#1"} });
        v.as_object().unwrap().clone()
    }

    /// A file of schema 2 (before any study's metrics) with a stored
    /// repetition opens, migrates, and reads its repetitions back with no
    /// metrics; a repetition stored after the migration keeps its metrics.
    #[test]
    fn a_schema_2_file_migrates_and_then_keeps_metrics() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(db(&dir)).unwrap();
            let mut store = Store {
                conn,
                path: db(&dir),
            };
            let first_two: Vec<Migration> = MIGRATIONS[..2]
                .iter()
                .map(|m| Migration {
                    what: m.what,
                    apply: m.apply,
                })
                .collect();
            store.check_and_migrate(&first_two).unwrap();
            store
                .conn
                .execute_batch(
                    "INSERT INTO runs (kind, command, params, started, finished, complete,
                        machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                        machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns)
                     VALUES ('bench demo', 'locklab bench demo', '{}', 't0', NULL, 0,
                        'cpu', 2, NULL, 'k', 'r', 'g', 'h', NULL);
                     INSERT INTO points (run_id, bench, lock, threads, params)
                     VALUES (1, 'demo', 'tas', 1, '{}');
                     INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s,
                        ns_per_op, thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns)
                     VALUES (1, 0, 1.0, 1.0, 10, 10.0, 1e8, '[10]', 1.0, 1, 2, 3, 4);",
                )
                .unwrap();
        }
        assert_eq!(header(&db(&dir)).1, 2);
        let mut store = Store::open(&db(&dir)).unwrap();
        assert_eq!(header(&db(&dir)).1, SCHEMA_VERSION);
        let (_, points) = store.load(1).unwrap();
        assert_eq!(points[0].reps[0].total_ops, 10);
        assert!(points[0].reps[0].metrics.is_empty());

        let run = store.begin_run(&meta()).unwrap();
        let mut p = point("lock-a", 2);
        p.reps[1].metrics = metrics("study", 0.5);
        store.add_point(run, &p).unwrap();
        assert_eq!(store.load(run).unwrap().1, vec![p]);
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

    /// A file of schema 6, whose repetitions kept each study's metrics in
    /// a column of their own (schemas 3 to 5 added them), opens and
    /// migrates: each column's JSON moves into `metrics` under the
    /// column's name, and the columns are gone.
    #[test]
    fn a_schema_6_file_folds_its_study_columns_into_metrics() {
        let dir = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(db(&dir)).unwrap();
            let mut store = Store {
                conn,
                path: db(&dir),
            };
            let first_six: Vec<Migration> = MIGRATIONS[..6]
                .iter()
                .map(|m| Migration {
                    what: m.what,
                    apply: m.apply,
                })
                .collect();
            store.check_and_migrate(&first_six).unwrap();
            store
                .conn
                .execute_batch(
                    r#"ALTER TABLE reps ADD COLUMN alpha TEXT;
                     ALTER TABLE reps ADD COLUMN beta TEXT;
                     INSERT INTO runs (kind, command, params, started, finished, complete,
                        machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                        machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns)
                     VALUES ('k', 'locklab k', '{}', 't0', 't1', 1,
                        'cpu', 2, 2000000000, 'k', 'r', 'g', 'h', 80.5);
                     INSERT INTO points (run_id, bench, lock, threads, params)
                     VALUES (1, 'b', 'l', 2, '{"mode": "multi"}');
                     INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops, throughput_ops_s,
                        ns_per_op, thread_ops, jain, p50_ns, p99_ns, p999_ns, max_ns, alpha, beta,
                        censored, censored_ns)
                     VALUES (1, 0, 0.3, 0.6, 3000, 10000.0, 200.0, '[1500, 1500]', 1.0, 0, 0, 0, 0,
                        NULL, '{"ticks": 600000000, "rate": null}', 2, 7),
                        (1, 1, 0.3, 0.6, 3000, 10000.0, 200.0, '[1500, 1500]', 1.0, 0, 0, 0, 0,
                        '{"seed": 3, "per_vm": [{"name": "a"}]}', NULL, NULL, NULL),
                        (1, 2, 0.3, 0.6, 3000, 10000.0, 200.0, '[1500, 1500]', 1.0, 0, 0, 0, 0,
                        NULL, NULL, 0, 0);"#,
                )
                .unwrap();
        }
        assert_eq!(header(&db(&dir)).1, 6);
        let store = Store::open(&db(&dir)).unwrap();
        assert_eq!(header(&db(&dir)).1, SCHEMA_VERSION);
        assert_eq!(SCHEMA_VERSION, 8);
        let (meta6, points) = store.load(1).unwrap();
        assert!(meta6.complete);
        assert_eq!(meta6.machine.c2c_round_trip_ns, Some(80.5));
        let reps = &points[0].reps;
        assert_eq!(
            serde_json::Value::Object(reps[0].metrics.clone()),
            json!({"beta": {"ticks": 600_000_000_u64, "rate": null}})
        );
        assert_eq!((reps[0].censored, reps[0].censored_ns), (2, 7));
        assert_eq!(
            serde_json::Value::Object(reps[1].metrics.clone()),
            json!({"alpha": {"seed": 3, "per_vm": [{"name": "a"}]}})
        );
        assert!(reps[2].metrics.is_empty());
        let columns: Vec<String> = store
            .conn
            .prepare("SELECT name FROM pragma_table_info('reps')")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            columns.iter().all(|c| REP_COLUMNS.contains(&c.as_str())),
            "{columns:?}"
        );
        assert!(columns.iter().any(|c| c == "metrics"), "{columns:?}");
    }

    /// A file of schema 7 (before baselines) with a stored run opens,
    /// migrates, keeps its run, and gains the baselines table: a baseline
    /// saved there reads back, replaces one of the same name, and deleting
    /// it leaves the run.
    #[test]
    fn a_schema_7_file_gains_baselines() {
        let dir = tempfile::tempdir().unwrap();
        let run = {
            let conn = Connection::open(db(&dir)).unwrap();
            let mut store = Store {
                conn,
                path: db(&dir),
            };
            let first_seven: Vec<Migration> = MIGRATIONS[..7]
                .iter()
                .map(|m| Migration {
                    what: m.what,
                    apply: m.apply,
                })
                .collect();
            store.check_and_migrate(&first_seven).unwrap();
            let run = store.begin_run(&meta()).unwrap();
            store.add_point(run, &point("tas", 1)).unwrap();
            store.finish_run(run).unwrap();
            run
        };
        assert_eq!(header(&db(&dir)).1, 7);
        assert!(!header(&db(&dir)).2.contains(&"baselines".to_string()));
        let mut store = Store::open(&db(&dir)).unwrap();
        let (_, version, objects) = header(&db(&dir));
        assert_eq!(version, SCHEMA_VERSION);
        assert!(objects.contains(&"baselines".to_string()), "{objects:?}");
        let before = store.load(run).unwrap();
        assert_eq!(before.1, vec![point("tas", 1)]);

        assert!(store.baselines().unwrap().is_empty());
        assert_eq!(store.save_baseline("main", run).unwrap(), None);
        let other = store.begin_run(&meta()).unwrap();
        assert_eq!(store.save_baseline("next", other).unwrap(), None);
        assert_eq!(store.save_baseline("main", other).unwrap(), Some(run));
        assert_eq!(store.baseline("main").unwrap(), Some(other));
        assert_eq!(store.baseline("none").unwrap(), None);
        let names: Vec<String> = store
            .baselines()
            .unwrap()
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert_eq!(names, ["main", "next"]);
        expect_input_err(store.save_baseline("x", 999), "999");
        assert!(store.delete_baseline("main").unwrap());
        assert!(!store.delete_baseline("main").unwrap());
        // Saving and deleting baselines left the runs as they were.
        assert_eq!(store.load(run).unwrap(), before);
        assert!(store.has_run(other).unwrap());
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
