//! The store on a PostgreSQL server from the command line: the password
//! from `PGPASSWORD` or the password file and never in what is stored or
//! printed; bad input (another program's database, a newer schema, wrong
//! credentials, an unreachable server, a URL that does not parse) one line,
//! exit 2, nothing written; a connection lost during a benchmark says which
//! points the run keeps; `compare` of two machines and `history` of a
//! planted regression read from the server as from a file.
//!
//! Each test makes a database of its own on the server that
//! `LOCKLAB_TEST_PG` names, and is skipped (saying so) without one.

mod common;

use common::{assert_bad_input, ok, stderr, stdout, SHORT_BENCH as BENCH};
use locklab_lab::core::results::{Machine, Point, RunMeta};
use locklab_lab::core::store::testing::TestDatabase;
use locklab_lab::core::store::{Location, Store};
use serde_json::{json, Value};
use std::process::{Command, Output};

/// `locklab --db URL ARGS` with `env` set (and the test server's variables
/// cleared, so that only what the test gives is used).
fn lab(url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_locklab"));
    c.env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env_remove("LOCKLAB_DB")
        .arg("--db")
        .arg(url)
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("running locklab")
}

/// The test database's URL split into its password and the URL without it.
fn without_password(db: &TestDatabase) -> (String, String) {
    let (scheme, rest) = db.url().split_once("://").unwrap();
    let (auth, tail) = rest.split_once('@').unwrap();
    let (user, pw) = auth.split_once(':').expect("the test URL has a password");
    (format!("{scheme}://{user}@{tail}"), pw.to_string())
}

#[test]
fn the_password_comes_from_the_environment_or_its_file_and_is_never_kept() {
    let Some(db) = TestDatabase::create("the_password_comes_from_the_environment") else {
        return;
    };
    let (bare, pw) = without_password(&db);
    // In the URL: it works, and the run's command line does not keep it.
    ok(lab(db.url(), &BENCH, &[]));
    let o = ok(lab(db.url(), &["runs", "--json"], &[]));
    let listed = stdout(&o);
    assert!(listed.contains("--db postgres://"), "{listed}");
    assert!(
        !listed.contains(&format!(":{pw}@")),
        "the password was stored: {listed}"
    );
    // From PGPASSWORD.
    let o = ok(lab(&bare, &["runs"], &[("PGPASSWORD", &pw)]));
    assert!(!stdout(&o).contains(&pw) && !stderr(&o).contains(&pw));
    // From the password file, read only if no one else may read it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgpass");
    std::fs::write(&file, format!("# test\n*:*:*:*:{pw}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file_env = [("PGPASSFILE", file.to_str().unwrap())];
    ok(lab(&bare, &["runs"], &file_env));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = lab(&bare, &["runs"], &file_env);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("was not read, as others may read it"), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    // None at all: refused, one line, saying where a password goes.
    let o = lab(&bare, &["runs"], &[("PGPASSFILE", "/nonexistent/pgpass")]);
    assert_bad_input(&o, "the server asks for a password: give it in PGPASSWORD");
    // LOCKLAB_DB names the store where --db is not given.
    let o = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["runs", "--json"])
        .env("LOCKLAB_DB", &bare)
        .env("PGPASSWORD", &pw)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&ok(o))).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn bad_input_for_a_server_is_one_line_and_writes_nothing() {
    let Some(db) = TestDatabase::create("bad_input_for_a_server") else {
        return;
    };
    let (_, pw) = without_password(&db);
    // A URL that does not parse: named without its password.
    let o = lab("postgres://ann:hunter2@host:port/db", &["runs"], &[]);
    assert_bad_input(&o, "postgres://ann@host:port/db: not a PostgreSQL URL");
    assert!(!stderr(&o).contains("hunter2"));
    // TLS whose certificate cannot be checked (the test server's is signed
    // by an authority of its own; one without TLS refuses the handshake).
    let o = lab(&format!("{}?sslmode=require", db.url()), &["runs"], &[]);
    assert_bad_input(&o, "cannot connect: error performing TLS handshake");
    // Wrong credentials.
    let wrong = db.url().replace(&format!(":{pw}@"), ":wrong-password@");
    let o = lab(&wrong, &BENCH, &[]);
    assert_bad_input(&o, "password authentication failed");
    assert!(!stderr(&o).contains("wrong-password"));
    // Nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = lab(&format!("postgres://ann@127.0.0.1:{port}/x"), &BENCH, &[]);
    assert_bad_input(&o, "is a PostgreSQL server running");
    // Another program's database, and a newer locklab's: refused, unchanged.
    let mut c = db.client();
    c.batch_execute("CREATE TABLE invoices (id BIGINT); INSERT INTO invoices VALUES (1);")
        .unwrap();
    for args in [&BENCH[..], &["runs"], &["machines"]] {
        assert_bad_input(
            &lab(db.url(), args, &[]),
            "not a locklab store: a database of another program (has invoices)",
        );
    }
    let tables = |c: &mut postgres::Client| -> i64 {
        c.query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()",
            &[],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(tables(&mut c), 1);
    c.batch_execute("DROP TABLE invoices").unwrap();
    ok(lab(db.url(), &BENCH, &[]));
    let before = tables(&mut c);
    c.batch_execute("UPDATE locklab_schema SET version = version + 1")
        .unwrap();
    let o = lab(db.url(), &BENCH, &[]);
    assert_bad_input(&o, "was written by a newer locklab");
    let runs: i64 = c
        .query_one("SELECT count(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!((runs, tables(&mut c)), (1, before));
}

/// The server ends locklab's connection while it benchmarks: it stops
/// with one line naming the run and the points it keeps, and those points
/// are there.
#[test]
fn a_connection_lost_during_a_benchmark_says_which_points_stay() {
    let Some(db) = TestDatabase::create("a_connection_lost_during_a_benchmark") else {
        return;
    };
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["--db", db.url()])
        .args(["bench", "spin", "--locks", "tas,ticket", "--threads", "1,2"])
        .args(["--secs", "0.2", "--reps", "2", "-q"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut c = db.client();
    // Wait for the first point, then end every other connection to it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let has_points = c
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE tablename = 'points'",
                &[],
            )
            .unwrap()
            .get::<_, i64>(0)
            == 1
            && c.query_one("SELECT count(*) FROM points", &[])
                .unwrap()
                .get::<_, i64>(0)
                >= 1;
        if has_points {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no point stored");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    c.batch_execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let kept: i64 = c
        .query_one("SELECT count(*) FROM points", &[])
        .unwrap()
        .get(0);
    assert!((1..4).contains(&kept), "{kept} points");
    let word = if kept == 1 { "point" } else { "points" };
    assert_bad_input(
        &o,
        &format!("run 1 in {} keeps the {kept} {word} stored before it", {
            let (bare, _) = without_password(&db);
            bare
        }),
    );
    let complete: i64 = c
        .query_one("SELECT complete FROM runs WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(complete, 0);
}

fn meta(machine: &str, cores: usize, rev: &str) -> RunMeta {
    RunMeta {
        id: None,
        uuid: None,
        kind: "bench spin".into(),
        command: "locklab bench spin".into(),
        params: json!({}),
        machine: Machine {
            cpu_model: format!("{machine} CPU"),
            cores,
            git_rev: rev.into(),
            id: Some(machine.into()),
            rtm: Some(false),
            ..Machine::default()
        },
        started: "2026-01-01T00:00:00Z".into(),
        finished: None,
        complete: false,
    }
}

/// A finished run of one point, `mcs` at 4 threads, with throughputs
/// around `level`.
fn store(at: &Location, meta: &RunMeta, level: f64) -> i64 {
    let tputs: Vec<f64> = (0..5)
        .map(|i| level * (1.0 + 0.01 * f64::from(i % 3) - 0.01))
        .collect();
    let p = Point::of_throughputs("spin", "mcs", 4, json!({"cs_ns": 100}), &tputs);
    let mut s = Store::open(at).unwrap();
    let id = s.begin_run(meta).unwrap();
    s.add_point(id, &p).unwrap();
    s.finish_run(id).unwrap();
    id
}

#[test]
fn compare_and_history_read_a_server_as_a_file() {
    let Some(db) = TestDatabase::create("compare_and_history_read_a_server") else {
        return;
    };
    let at = db.location();
    let a = store(&at, &meta("amd-box", 2, "r1"), 1e6);
    store(&at, &meta("amd-box", 2, "r1"), 1e6);
    store(&at, &meta("amd-box", 2, "r2"), 0.8e6);
    let b = store(&at, &meta("intel-box", 8, "r1"), 2e6);
    // Two machines side by side: what differs is named.
    let o = ok(lab(
        db.url(),
        &["compare", &a.to_string(), &b.to_string()],
        &[],
    ));
    let text = stdout(&o) + &stderr(&o);
    assert!(
        text.contains("amd-box") && text.contains("intel-box"),
        "{text}"
    );
    assert!(text.contains("cores"), "{text}");
    // The planted 20 % drop at r2 is marked; r1's two runs are one figure.
    let o = ok(lab(
        db.url(),
        &[
            "history",
            "--bench",
            "spin",
            "--lock",
            "mcs",
            "--threads",
            "4",
            "--machine",
            "amd-box",
            "--format",
            "json",
        ],
        &[],
    ));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let revs = v["series"][0]["revisions"].as_array().unwrap();
    let seen: Vec<(&str, usize, &str)> = revs
        .iter()
        .map(|r| {
            (
                r["revision"].as_str().unwrap(),
                r["runs"].as_array().unwrap().len(),
                r["vs_previous"]["change"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(seen, [("r1", 2, "-"), ("r2", 1, "slower")]);
}
