//! The schema: its text, the steps that take an older file to this build's
//! version, the version numbers, and the header that says whose (and which
//! version's) a file is.

use std::path::Path;

use rusqlite::{Connection, Transaction};

use super::errors::{read_err, write_err};
use crate::core::error::{LabError, Result};

/// SQLite `application_id` of a locklab database: "LKLB".
pub const APPLICATION_ID: i32 = 0x4c4b_4c42;

/// One step of schema migration: `MIGRATIONS[i]` takes version `i` to `i + 1`,
/// on either engine.
pub struct Migration {
    /// What the step does, for messages.
    pub what: &'static str,
    /// Applies the step to an SQLite file inside the migration transaction.
    pub apply: fn(&Transaction<'_>) -> rusqlite::Result<()>,
    /// The same step on PostgreSQL: statements run inside the migration
    /// transaction (empty for none). Types as engine.rs maps them:
    /// `BIGINT` for SQLite's integers, `DOUBLE PRECISION` for its reals.
    /// A server store starts at schema 9 (the first that a server held),
    /// so its steps never meet rows stored before them.
    pub postgres: &'static str,
}

/// Every schema step in order; the schema this build writes is
/// `MIGRATIONS.len()`. Version 0 is an empty file.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        what: "create runs, points and reps (schema 1)",
        apply: |tx| tx.execute_batch(SCHEMA_V1),
        postgres: SCHEMA_V1_POSTGRES,
    },
    Migration {
        what: "add the machine's cache-line round trip to runs (schema 2)",
        apply: |tx| tx.execute_batch("ALTER TABLE runs ADD COLUMN machine_c2c_ns REAL;"),
        postgres: "ALTER TABLE runs ADD COLUMN machine_c2c_ns DOUBLE PRECISION;",
    },
    // Schemas 3 to 5 each added a column of one study's metrics (JSON) to
    // reps; schema 7 folds such columns into one. A file migrating past
    // them needs neither the columns nor the fold.
    Migration {
        what: "a study's metrics column (schema 3, superseded by schema 7)",
        apply: |_| Ok(()),
        postgres: "",
    },
    Migration {
        what: "a study's metrics column (schema 4, superseded by schema 7)",
        apply: |_| Ok(()),
        postgres: "",
    },
    Migration {
        what: "a study's metrics column (schema 5, superseded by schema 7)",
        apply: |_| Ok(()),
        postgres: "",
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
        postgres: "ALTER TABLE reps ADD COLUMN censored BIGINT;
                   ALTER TABLE reps ADD COLUMN censored_ns BIGINT;",
    },
    Migration {
        what: "keep every study's metrics of a repetition in one JSON column of reps (schema 7)",
        apply: fold_metrics,
        // A server store never had a column of one study's metrics.
        postgres: "ALTER TABLE reps ADD COLUMN metrics TEXT;",
    },
    Migration {
        what: "add baselines, runs saved under a name to compare with (schema 8)",
        apply: |tx| tx.execute_batch(SCHEMA_V8_BASELINES),
        postgres: SCHEMA_V8_BASELINES,
    },
    Migration {
        what: "give each run an identity kept across stores, and record the machine's \
               identity and RTM (schema 9)",
        apply: identities,
        postgres: "ALTER TABLE runs ADD COLUMN uuid TEXT;
                   ALTER TABLE runs ADD COLUMN machine_id TEXT;
                   ALTER TABLE runs ADD COLUMN machine_rtm BIGINT CHECK (machine_rtm IN (0, 1));
                   CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);",
    },
];

/// The namespace of the identities that schema 9 gives the runs stored
/// before it (a random UUID, fixed).
const LEGACY_RUNS: uuid::Uuid = uuid::Uuid::from_u128(0x3b7e_9d21_c4a8_4f06_8e5b_1d9c_62f0_a713);

/// Schema 9: `runs.uuid`, a run's identity in every store (unique; new runs
/// get a random one, version 4), `runs.machine_id` and `runs.machine_rtm`
/// (NULL for older runs: not recorded). A run stored before gets a
/// name-based UUID (version 5) of its id, kind, command line, start and
/// host, so that two copies of one file, migrated apart, give their runs
/// the same identities, and pushing both stores each run once.
fn identities(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "ALTER TABLE runs ADD COLUMN uuid TEXT;
         ALTER TABLE runs ADD COLUMN machine_id TEXT;
         ALTER TABLE runs ADD COLUMN machine_rtm INTEGER CHECK (machine_rtm IN (0, 1));",
    )?;
    let old: Vec<(i64, String)> = tx
        .prepare("SELECT id, kind, command, started, machine_hostname FROM runs")?
        .query_map([], |r| {
            let id: i64 = r.get(0)?;
            let fields: [String; 4] = [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
            Ok((id, legacy_run_uuid(id, &fields)))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut set = tx.prepare("UPDATE runs SET uuid = ?2 WHERE id = ?1")?;
    for (id, uuid) in old {
        set.execute(rusqlite::params![id, uuid])?;
    }
    tx.execute_batch("CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);")
}

/// The identity schema 9 gives run `id` stored before it, from its kind,
/// command line, start and host.
fn legacy_run_uuid(id: i64, fields: &[String; 4]) -> String {
    let mut name = id.to_string();
    for f in fields {
        name.push('\0');
        name.push_str(f);
    }
    uuid::Uuid::new_v5(&LEGACY_RUNS, name.as_bytes()).to_string()
}

/// Schema 8: a baseline is a name for a stored run (`locklab baseline
/// save`); deleting the run would delete its baselines.
const SCHEMA_V8_BASELINES: &str = "
CREATE TABLE baselines (
    name   TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    saved  TEXT NOT NULL                  -- RFC 3339 UTC
);
";

/// The columns of `reps` as of schema 7 that every repetition has: the
/// keys (`id`, `point_id`), then a repetition's own fields in the order
/// `locklab show --reps` exports them. In a file of schema 6, any other
/// column is one study's metrics, as JSON, named by the study's key
/// (schemas 3 to 5).
pub const REP_COLUMNS: [&str; 17] = [
    "id",
    "point_id",
    "rep",
    "wall_s",
    "cpu_s",
    "total_ops",
    "throughput_ops_s",
    "ns_per_op",
    "jain",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "censored",
    "censored_ns",
    "thread_ops",
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

/// Schema 1 on PostgreSQL: SQLite's integers as `BIGINT` (ids from
/// identity columns, which never hand out a number twice, as SQLite's
/// AUTOINCREMENT), its reals as `DOUBLE PRECISION`.
const SCHEMA_V1_POSTGRES: &str = "
CREATE TABLE runs (
    id               BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    kind             TEXT NOT NULL,
    command          TEXT NOT NULL,
    params           TEXT NOT NULL,
    started          TEXT NOT NULL,
    finished         TEXT,
    complete         BIGINT NOT NULL DEFAULT 0 CHECK (complete IN (0, 1)),
    machine_cpu      TEXT NOT NULL,
    machine_cores    BIGINT NOT NULL,
    machine_tsc_hz   BIGINT,
    machine_kernel   TEXT NOT NULL,
    machine_rustc    TEXT NOT NULL,
    machine_git_rev  TEXT NOT NULL,
    machine_hostname TEXT NOT NULL
);
CREATE TABLE points (
    id      BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    run_id  BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    bench   TEXT NOT NULL,
    lock    TEXT NOT NULL,
    threads BIGINT NOT NULL,
    params  TEXT NOT NULL
);
CREATE INDEX points_by_run ON points(run_id, id);
CREATE TABLE reps (
    point_id         BIGINT NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    rep              BIGINT NOT NULL,
    wall_s           DOUBLE PRECISION,
    cpu_s            DOUBLE PRECISION,
    total_ops        BIGINT NOT NULL,
    throughput_ops_s DOUBLE PRECISION,
    ns_per_op        DOUBLE PRECISION,
    thread_ops       TEXT NOT NULL,
    jain             DOUBLE PRECISION,
    p50_ns           BIGINT NOT NULL,
    p99_ns           BIGINT NOT NULL,
    p999_ns          BIGINT NOT NULL,
    max_ns           BIGINT NOT NULL,
    PRIMARY KEY (point_id, rep)
);
";

/// Decides whether the SQLite file at `path` (open as `conn`) is
/// locklab's and brings its schema to the newest of `steps`, in one
/// transaction. Reads only, until it has decided to write.
pub(super) fn migrate_file(conn: &mut Connection, path: &Path, steps: &[Migration]) -> Result<()> {
    let latest = steps.len() as u32;
    // One read transaction: the three reads see one state of the file,
    // even while another process is creating it.
    let header = read_header_snapshot(conn).map_err(|e| read_err(path, e))?;
    refuse_foreign(path, &header, latest)?;
    if header.user_version == latest {
        return Ok(());
    }
    // IMMEDIATE takes the write lock now, so two processes creating the
    // same new file do not both migrate; the header is read again under
    // the lock for the same reason.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| write_err(&path.display(), "cannot lock the database to set it up", e))?;
    let header = read_header(&tx).map_err(|e| write_err(&path.display(), "cannot read", e))?;
    refuse_foreign(path, &header, latest)?;
    for (from, step) in steps.iter().enumerate().skip(header.user_version as usize) {
        (step.apply)(&tx).map_err(|e| {
            write_err(
                &path.display(),
                &format!("cannot migrate from schema {from} ({})", step.what),
                e,
            )
        })?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .and_then(|()| tx.pragma_update(None, "user_version", latest))
        .and_then(|()| tx.commit())
        .map_err(|e| write_err(&path.display(), "cannot write the schema", e))
}

/// What decides whether a file is a locklab database.
pub(super) struct Header {
    pub(super) application_id: i32,
    pub(super) user_version: u32,
    /// Tables, indexes, views and triggers in the file.
    pub(super) objects: Vec<String>,
}

/// [`read_header`] inside one read transaction, so that its reads see one
/// state of the file (without it, a file another process was creating
/// between two of them looked like another program's).
pub(super) fn read_header_snapshot(conn: &Connection) -> rusqlite::Result<Header> {
    let tx = conn.unchecked_transaction()?;
    let header = read_header(&tx)?;
    tx.commit()?;
    Ok(header)
}

pub(super) fn read_header(conn: &Connection) -> rusqlite::Result<Header> {
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
pub(super) fn refuse_foreign(path: &Path, h: &Header, latest: u32) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::handle::Store;
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn a_failing_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let steps = [
            Migration {
                what: "one table",
                apply: |tx| tx.execute_batch("CREATE TABLE a (x);"),
                postgres: "",
            },
            Migration {
                what: "a broken step",
                apply: |tx| tx.execute_batch("NOT SQL;"),
                postgres: "",
            },
        ];
        let conn = Connection::open(db(&dir)).unwrap();
        let mut store = file_store(conn, db(&dir));
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
            let mut store = Store::open(db(&dir)).unwrap();
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
                postgres: m.postgres,
            })
            .collect();
        steps.push(Migration {
            what: "add runs.note",
            apply: |tx| tx.execute_batch("ALTER TABLE runs ADD COLUMN note TEXT;"),
            postgres: "",
        });
        let conn = Connection::open(db(&dir)).unwrap();
        let mut store = file_store(conn, db(&dir));
        store.check_and_migrate(&steps).unwrap();
        let (_, version, _) = header(&db(&dir));
        assert_eq!(version, SCHEMA_VERSION + 1);
        assert_eq!(store.load(run).unwrap().1, vec![point("tas", 1)]);
        // And this build now refuses it as newer.
        drop(store);
        expect_input_err(
            Store::open(db(&dir)),
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
            let mut store = file_store(conn, db(&dir));
            store
                .check_and_migrate(&[Migration {
                    what: MIGRATIONS[0].what,
                    apply: MIGRATIONS[0].apply,
                    postgres: MIGRATIONS[0].postgres,
                }])
                .unwrap();
            store
                .conn()
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
        let store = Store::open(db(&dir)).unwrap();
        assert_eq!(header(&db(&dir)).1, SCHEMA_VERSION);
        let (meta, points) = store.load(1).unwrap();
        assert_eq!(meta.machine.c2c_round_trip_ns, None);
        assert_eq!(meta.machine.cpu_model, "cpu");
        assert!(points.is_empty());
    }

    /// A file of schema 2 (before any study's metrics) with a stored
    /// repetition opens, migrates, and reads its repetitions back with no
    /// metrics; a repetition stored after the migration keeps its metrics.
    #[test]
    fn a_schema_2_file_migrates_and_then_keeps_metrics() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = store_at(&dir, 2);
            store
                .conn()
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
        let mut store = Store::open(db(&dir)).unwrap();
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

    /// A file of schema 6, whose repetitions kept each study's metrics in
    /// a column of their own (schemas 3 to 5 added them), opens and
    /// migrates: each column's JSON moves into `metrics` under the
    /// column's name, and the columns are gone.
    #[test]
    fn a_schema_6_file_folds_its_study_columns_into_metrics() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = store_at(&dir, 6);
            store
                .conn()
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
        let store = Store::open(db(&dir)).unwrap();
        assert_eq!(header(&db(&dir)).1, SCHEMA_VERSION);
        assert_eq!(SCHEMA_VERSION, 9);
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
            .conn()
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

    /// Schema 9 gives the runs stored before it identities that depend on
    /// the run alone: two copies of one file, migrated apart, agree, so
    /// that pushing both stores each run once.
    #[test]
    fn a_schema_8_file_gains_identities_that_its_copies_share() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = store_at(&dir, 8);
            // Two runs alike but for their ids (one started twice in a
            // second), and a third of another host.
            store
                .conn()
                .execute_batch(
                    "INSERT INTO runs (kind, command, params, started, finished, complete,
                        machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                        machine_rustc, machine_git_rev, machine_hostname, machine_c2c_ns)
                     VALUES ('k', 'locklab k', '{}', 't0', 't1', 1,
                        'cpu', 2, NULL, 'k', 'r', 'g', 'h', NULL),
                        ('k', 'locklab k', '{}', 't0', 't1', 1,
                        'cpu', 2, NULL, 'k', 'r', 'g', 'h', NULL),
                        ('k', 'locklab k', '{}', 't0', 't1', 1,
                        'cpu', 2, NULL, 'k', 'r', 'g', 'other', NULL);",
                )
                .unwrap();
        }
        let copy = dir.path().join("copy.db");
        std::fs::copy(db(&dir), &copy).unwrap();
        let identities = |path: &Path| {
            let store = Store::open(path).unwrap();
            assert_eq!(header(path).1, SCHEMA_VERSION);
            let mut v: Vec<(i64, String)> = store
                .runs()
                .unwrap()
                .into_iter()
                .map(|r| {
                    assert_eq!((r.meta.machine.id, r.meta.machine.rtm), (None, None));
                    (r.meta.id.unwrap(), r.meta.uuid.unwrap())
                })
                .collect();
            v.sort();
            v
        };
        let a = identities(&db(&dir));
        assert_eq!(a, identities(&copy), "copies migrated apart agree");
        let uuids: std::collections::HashSet<&String> = a.iter().map(|(_, u)| u).collect();
        assert_eq!(uuids.len(), 3, "{a:?}");
        for (_, u) in &a {
            assert_eq!(uuid::Uuid::parse_str(u).map(|u| u.get_version_num()), Ok(5));
        }
    }
}
