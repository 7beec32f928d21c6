//! What the store's tests share: a run, points and repetitions to store,
//! a database path, and the checks of an error and of a file's header.

pub(super) use std::path::{Path, PathBuf};

pub(super) use rusqlite::Connection;
pub(super) use serde_json::json;

pub(super) use super::schema::read_header;
pub(super) use super::schema::{Migration, MIGRATIONS, SCHEMA_VERSION};
pub(super) use crate::core::error::{LabError, Result, EXIT_INPUT};
pub(super) use crate::core::results::{Machine, Point, Rep, RunMeta};

pub(super) fn meta() -> RunMeta {
    RunMeta {
        id: None,
        uuid: None,
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
            id: Some("test-machine".to_string()),
            rtm: Some(false),
        },
        started: "2025-03-01T14:05:09Z".into(),
        finished: None,
        complete: false,
    }
}

pub(super) fn rep(i: u32, threads: usize) -> Rep {
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

pub(super) fn point(lock: &str, threads: u32) -> Point {
    Point {
        bench: "demo".into(),
        lock: lock.into(),
        threads,
        params: json!({"cs_ns": 100, "delay_ns": 0, "delay_dist": "exp", "secs": 0.25}),
        reps: (0..3).map(|i| rep(i, threads as usize)).collect(),
    }
}

pub(super) fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("locklab.db")
}

pub(super) fn expect_input_err<T: std::fmt::Debug>(r: Result<T>, needle: &str) -> LabError {
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

pub(super) fn header(path: &Path) -> (i32, u32, Vec<String>) {
    let conn = Connection::open(path).unwrap();
    let h = read_header(&conn).unwrap();
    (h.application_id, h.user_version, h.objects)
}

/// A study's metrics, as a repetition keeps them.
pub(super) fn metrics(key: &str, x: f64) -> serde_json::Map<String, serde_json::Value> {
    let v = json!({ key: {"count": 900_u64, "rate": x, "none": null, "name": "n#1"} });
    v.as_object().unwrap().clone()
}

/// A store of the SQLite file at `path`, through `conn`, as open.rs makes
/// one (for the tests that plant what an older build wrote).
pub(super) fn file_store(conn: Connection, path: PathBuf) -> super::handle::Store {
    super::handle::Store {
        engine: super::engine::Engine::Sqlite(conn),
        at: super::location::Location::File(path),
    }
}

/// A store at `db(dir)` brought to schema `version` (< this build's) by
/// the first `version` steps, to plant what an older build wrote.
pub(super) fn store_at(dir: &tempfile::TempDir, version: usize) -> super::handle::Store {
    let mut store = file_store(Connection::open(db(dir)).unwrap(), db(dir));
    let steps: Vec<Migration> = MIGRATIONS[..version]
        .iter()
        .map(|m| Migration {
            what: m.what,
            apply: m.apply,
            postgres: m.postgres,
        })
        .collect();
    store.check_and_migrate(&steps).unwrap();
    store
}

/// One finished run, as schemas 2 to 8 store it.
pub(super) const OLD_RUN: &str = "INSERT INTO runs (kind, command, params, started, finished,
    complete, machine_cpu, machine_cores, machine_tsc_hz, machine_kernel, machine_rustc,
    machine_git_rev, machine_hostname, machine_c2c_ns)
    VALUES ('k', 'locklab k', '{}', 't0', 't1', 1, 'cpu', 2, NULL, 'k', 'r', 'g', 'h', NULL);";

/// A store a test of both engines runs on, and the server's database it
/// is in (dropped with it).
pub(super) struct TestStore {
    pub(super) at: super::location::Location,
    _db: Option<super::testing::TestDatabase>,
}

impl TestStore {
    pub(super) fn open(&self) -> super::handle::Store {
        super::handle::Store::open(&self.at).unwrap()
    }
}

/// The stores a test of both engines runs on: the file `name`.db in `dir`,
/// then a new database on the test server where one is named (see
/// [`super::testing`]); `test` names the test in the note of a skip.
pub(super) fn stores(dir: &tempfile::TempDir, name: &str, test: &str) -> Vec<TestStore> {
    let mut v = vec![TestStore {
        at: dir.path().join(format!("{name}.db")).into(),
        _db: None,
    }];
    if let Some(db) = super::testing::TestDatabase::create(test) {
        v.push(TestStore {
            at: db.location(),
            _db: Some(db),
        });
    }
    v
}
