//! A store on a PostgreSQL server: connecting, the header that says whose
//! a database is, and its migrations.
//!
//! A locklab database holds the tables of schema.rs in its current schema
//! (`public` unless the user's `search_path` says otherwise) and a table
//! `locklab_schema` of one row: locklab's mark (the SQLite file's
//! `application_id`) and the schema version. As with a file, a database
//! that is not locklab's (tables of another program, or another mark) or
//! is a newer locklab's is refused before anything is written; an empty
//! database becomes a store on the first command that stores. Setting up
//! and migrating is one transaction, serialised between processes by an
//! advisory lock, so that two processes starting on a new database at once
//! create the tables once.
//!
//! Connecting: the URL gives host, port, database and user (by default
//! `PGUSER`, else the login name); the password comes from the URL, else
//! `PGPASSWORD`, else the password file (`PGPASSFILE`, else `~/.pgpass`,
//! read only if no one else may read it), as PostgreSQL's own clients
//! take them. A server that does not answer is given up after 10 s (the
//! URL's `connect_timeout` changes it).
//!
//! TLS where the URL asks for it (`sslmode=require`, or `verify-ca` and
//! `verify-full`, which are the same here): rustls, the server's
//! certificate and name checked against the URL's `sslrootcert` (a PEM
//! file of certificate authorities) or else the system's authorities.
//! Unlike PostgreSQL's own clients, `require` never goes on with a
//! certificate it cannot check. `sslmode=disable` and the default
//! `prefer` connect without TLS.

use std::time::Duration;

use postgres::config::{Host, SslMode};
use postgres::{Client, GenericClient, NoTls};

use super::engine::{Cols, DbError, Engine};
use super::errors::{pg_hint, pg_text, write_err};
use super::handle::Store;
use super::location::{pgpass_lookup, Location, Server};
use super::schema::{Migration, APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};
use crate::core::error::{LabError, Result};

/// The table that marks a database as locklab's.
const HEADER_TABLE: &str = "locklab_schema";

/// How long connecting may take when the URL does not say.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The store at `server`, set up if the database is empty and migrated if
/// its schema is older.
pub(super) fn open(server: &Server) -> Result<Store> {
    let mut client = connect(server)?;
    migrate(&mut client, server, MIGRATIONS)?;
    Ok(Store {
        engine: Engine::postgres(client),
        at: Location::Server(Box::new(server.clone())),
    })
}

/// The store at `server` to read, or `None` where the database holds no
/// store yet; nothing is written.
pub(super) fn open_existing(server: &Server) -> Result<Option<Store>> {
    let mut client = connect(server)?;
    let at = Location::Server(Box::new(server.clone()));
    let header = read_header(&mut client).map_err(|e| cannot_read(&at, e))?;
    refuse_foreign(&at, &header, SCHEMA_VERSION)?;
    match header.version {
        None => Ok(None),
        Some(v) if v == SCHEMA_VERSION => Ok(Some(Store {
            engine: Engine::postgres(client),
            at,
        })),
        Some(v) => Err(LabError::input(format!(
            "{at}: holds schema {v}, older than this build's {SCHEMA_VERSION}; a command that \
             stores (`locklab push` to it, a benchmark with --db naming it) brings it up to \
             date; nothing was changed"
        ))),
    }
}

/// Connects to `server` (see the module documentation).
pub(super) fn connect(server: &Server) -> Result<Client> {
    let at = server.shown();
    let mut config = server.config.clone();
    if config.get_user().is_none() {
        config.user(&default_user());
    }
    if config.get_hosts().is_empty() {
        config.host(&std::env::var("PGHOST").unwrap_or_else(|_| "localhost".to_string()));
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("locklab");
    }
    // A lost server is noticed within a minute rather than two hours.
    config.keepalives_idle(Duration::from_secs(30));
    let mut unread = None;
    if config.get_password().is_none() {
        match password_from_environment(&config) {
            Ok(Some(pw)) => {
                config.password(pw);
            }
            Ok(None) => {}
            Err(why) => unread = Some(why),
        }
    }
    let connected = if config.get_ssl_mode() == SslMode::Require {
        config.connect(tls(server)?)
    } else {
        config.connect(NoTls)
    };
    connected.map_err(|e| {
        let text = pg_text(&e);
        let hint = if text.contains("password missing") {
            " (the server asks for a password: give it in PGPASSWORD, the password file or the URL)"
        } else if text.contains("invalid peer certificate") {
            " (the server's certificate cannot be checked with the authorities given: name the \
             one that signed it as sslrootcert=FILE in the URL)"
        } else {
            pg_hint(&e)
        };
        let unread = unread.map_or(String::new(), |why| format!("; {why}"));
        LabError::input(format!(
            "{at}: cannot connect: {text}{hint}{unread}; nothing was written"
        ))
    })
}

/// The TLS connector of `sslmode=require`: the server's certificate
/// checked against `sslrootcert` or else the system's authorities.
fn tls(server: &Server) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let at = server.shown();
    let mut roots = rustls::RootCertStore::empty();
    match &server.root_cert {
        Some(file) => {
            let shown = file.display();
            let certs = CertificateDer::pem_file_iter(file)
                .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| {
                    LabError::input(format!(
                        "{at}: sslrootcert {shown}: cannot read certificates from it ({e}); \
                         allowed a PEM file of certificate authorities"
                    ))
                })?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(LabError::input(format!(
                    "{at}: sslrootcert {shown}: no certificate in it; allowed a PEM file of \
                     certificate authorities"
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(LabError::input(format!(
                    "{at}: sslmode=require, and this system has no certificate authorities to \
                     check the server with; give sslrootcert=FILE in the URL"
                )));
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LabError::failed(format!("{at}: TLS cannot be set up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// `PGUSER`, else the login name, as PostgreSQL's clients default it.
fn default_user() -> String {
    if let Ok(u) = std::env::var("PGUSER") {
        return u;
    }
    // SAFETY: getpwuid returns null or a pointer to a static record that
    // stays valid until the next getpw* call on this thread; the name is
    // copied out before anything else runs here.
    let name = unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() {
            None
        } else {
            Some(
                std::ffi::CStr::from_ptr((*pw).pw_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        }
    };
    name.or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "postgres".to_string())
}

/// The password from `PGPASSWORD`, else from the password file; `Err`
/// says why a password file there was not read (for the message of a
/// connection that then fails).
fn password_from_environment(
    config: &postgres::Config,
) -> std::result::Result<Option<String>, String> {
    if let Ok(pw) = std::env::var("PGPASSWORD") {
        return Ok(Some(pw));
    }
    let Some(file) = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))
    else {
        return Ok(None);
    };
    let Ok(meta) = std::fs::metadata(&file) else {
        return Ok(None);
    };
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "the password file {} was not read, as others may read it (chmod 600 it, as \
             PostgreSQL asks)",
            file.display()
        ));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("the password file {} cannot be read: {e}", file.display()))?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    Ok(pgpass_lookup(&text, &host, port, db, user))
}

/// What decides whether a database is a locklab store.
struct Header {
    /// The tables (and views) of the current schema.
    tables: Vec<String>,
    /// The mark in `locklab_schema`, if that table is there and holds one row.
    mark: Option<i64>,
    /// The schema version, if the database is marked as locklab's.
    version: Option<u32>,
}

fn read_header(client: &mut impl GenericClient) -> std::result::Result<Header, DbError> {
    let tables: Vec<String> = client
        .query(
            "SELECT c.relname::text FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
             ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<std::result::Result<_, _>>()?;
    let (mut mark, mut version) = (None, None);
    if tables.iter().any(|t| t == HEADER_TABLE) {
        let rows = client.query(
            &format!("SELECT application_id, version FROM {HEADER_TABLE}"),
            &[],
        )?;
        if let [row] = rows.as_slice() {
            let values = [row.try_get(0)?, row.try_get(1)?];
            let c = Cols(&values);
            mark = c.opt_int(0)?;
            // A version beyond u32 is no locklab's: newer than any.
            version = c.opt_int(1)?.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        }
    }
    if mark != Some(i64::from(APPLICATION_ID)) {
        version = None;
    }
    Ok(Header {
        tables,
        mark,
        version,
    })
}

/// Refuses a database of another program, or of a newer locklab.
fn refuse_foreign(at: &Location, h: &Header, latest: u32) -> Result<()> {
    if h.mark != Some(i64::from(APPLICATION_ID)) && !h.tables.is_empty() {
        let mut names = h
            .tables
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if h.tables.len() > 5 {
            names.push_str(", …");
        }
        return Err(LabError::input(format!(
            "{at}: not a locklab store: a database of another program (has {names}); nothing \
             was changed (give locklab a database of its own)"
        )));
    }
    match h.version {
        Some(v) if v > latest => Err(LabError::input(format!(
            "{at}: was written by a newer locklab (schema {v}, this build reads up to {latest}); \
             nothing was changed"
        ))),
        _ => Ok(()),
    }
}

fn cannot_read(at: &Location, e: DbError) -> LabError {
    write_err(at, "cannot read the database", e)
}

/// Decides whether the database is locklab's and brings its schema to the
/// newest of `steps`, in one transaction. Reads only, until it has decided
/// to write.
pub(super) fn migrate(client: &mut Client, server: &Server, steps: &[Migration]) -> Result<()> {
    let at = Location::Server(Box::new(server.clone()));
    let latest = steps.len() as u32;
    let header = read_header(client).map_err(|e| cannot_read(&at, e))?;
    refuse_foreign(&at, &header, latest)?;
    if header.version == Some(latest) {
        return Ok(());
    }
    let fail = |what: &str, e: DbError| write_err(&at, what, e);
    let mut tx = client
        .transaction()
        .map_err(|e| fail("cannot set the database up", e.into()))?;
    // Two processes setting up one database wait for each other here; the
    // second then finds the tables made and the header current.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&i64::from(APPLICATION_ID)],
    )
    .map_err(|e| fail("cannot lock the database to set it up", e.into()))?;
    let header = read_header(&mut tx).map_err(|e| cannot_read(&at, e))?;
    refuse_foreign(&at, &header, latest)?;
    let from = header.version.unwrap_or(0);
    for (i, step) in steps.iter().enumerate().skip(from as usize) {
        if !step.postgres.is_empty() {
            tx.batch_execute(step.postgres).map_err(|e| {
                fail(
                    &format!("cannot migrate from schema {i} ({})", step.what),
                    e.into(),
                )
            })?;
        }
    }
    let header_sql = if header.version.is_none() {
        format!(
            "CREATE TABLE {HEADER_TABLE} (application_id BIGINT NOT NULL, version BIGINT NOT NULL);
             INSERT INTO {HEADER_TABLE} VALUES ({APPLICATION_ID}, {latest});"
        )
    } else {
        format!("UPDATE {HEADER_TABLE} SET version = {latest};")
    };
    tx.batch_execute(&header_sql)
        .and_then(|()| tx.commit())
        .map_err(|e| fail("cannot write the schema", e.into()))
}

#[cfg(test)]
mod tests {
    use super::super::copy::Copied;
    use super::super::fixtures::*;
    use super::super::testing::TestDatabase;
    use super::*;

    /// The tables of the test database's current schema.
    fn tables(db: &TestDatabase) -> Vec<String> {
        super::read_header(&mut db.client()).unwrap().tables
    }

    fn open_all_three(db: &TestDatabase, needle: &str) {
        expect_input_err(Store::open(db.location()), needle);
        expect_input_err(Store::open_read_only(db.location()), needle);
        expect_input_err(Store::open_existing(db.location()), needle);
    }

    #[test]
    fn an_empty_database_is_read_as_no_store_and_made_one_by_a_write() {
        let Some(db) = TestDatabase::create("an_empty_database_is_read_as_no_store") else {
            return;
        };
        assert!(Store::open_existing(db.location()).unwrap().is_none());
        expect_input_err(Store::open_read_only(db.location()), "no runs stored yet");
        assert!(tables(&db).is_empty(), "reading wrote: {:?}", tables(&db));
        let mut store = Store::open(db.location()).unwrap();
        store.begin_run(&meta()).unwrap();
        let t = tables(&db);
        for want in ["baselines", "locklab_schema", "points", "reps", "runs"] {
            assert!(t.iter().any(|x| x == want), "{t:?}");
        }
        let h = super::read_header(&mut db.client()).unwrap();
        assert_eq!(
            (h.mark, h.version),
            (Some(i64::from(APPLICATION_ID)), Some(SCHEMA_VERSION))
        );
    }

    #[test]
    fn processes_setting_up_one_database_at_once_make_it_once() {
        let Some(db) = TestDatabase::create("processes_setting_up_one_database_at_once") else {
            return;
        };
        let at = db.location();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let at = at.clone();
                std::thread::spawn(move || {
                    let mut s = Store::open(&at).unwrap();
                    s.begin_run(&meta()).unwrap()
                })
            })
            .collect();
        let mut ids: Vec<i64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 4);
        let rows = db
            .client()
            .query("SELECT version FROM locklab_schema", &[])
            .unwrap();
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn another_programs_database_is_refused_and_unchanged() {
        let Some(db) = TestDatabase::create("another_programs_database_is_refused") else {
            return;
        };
        db.client()
            .batch_execute(
                "CREATE TABLE invoices (id BIGINT PRIMARY KEY, total DOUBLE PRECISION);
                 INSERT INTO invoices VALUES (1, 12.5);",
            )
            .unwrap();
        open_all_three(&db, "a database of another program (has invoices)");
        assert_eq!(tables(&db), ["invoices"]);
        // One that marks itself with a table of locklab's name, another mark.
        db.client()
            .batch_execute(
                "DROP TABLE invoices;
                 CREATE TABLE locklab_schema (application_id BIGINT, version BIGINT);
                 INSERT INTO locklab_schema VALUES (7, 1);",
            )
            .unwrap();
        open_all_three(&db, "a database of another program (has locklab_schema)");
        assert_eq!(tables(&db), ["locklab_schema"]);
    }

    #[test]
    fn a_newer_schema_is_refused_and_unchanged() {
        let Some(db) = TestDatabase::create("a_newer_schema_is_refused") else {
            return;
        };
        {
            let mut store = Store::open(db.location()).unwrap();
            let run = store.begin_run(&meta()).unwrap();
            store.add_point(run, &point("tas", 1)).unwrap();
        }
        db.client()
            .execute(
                "UPDATE locklab_schema SET version = $1",
                &[&i64::from(SCHEMA_VERSION + 1)],
            )
            .unwrap();
        open_all_three(
            &db,
            &format!(
                "was written by a newer locklab (schema {}, this build reads up to \
                 {SCHEMA_VERSION}); nothing was changed",
                SCHEMA_VERSION + 1
            ),
        );
        let n: i64 = db
            .client()
            .query_one("SELECT count(*) FROM reps", &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 3);
    }

    /// The URL of the test database with another password.
    fn with_password(db: &TestDatabase, pw: &str) -> Location {
        let url = db.url();
        let (scheme, rest) = url.split_once("://").unwrap();
        let (auth, tail) = rest.split_once('@').unwrap();
        let user = auth.split(':').next().unwrap();
        Location::parse(std::ffi::OsStr::new(&format!(
            "{scheme}://{user}:{pw}@{tail}"
        )))
        .unwrap()
    }

    #[test]
    fn wrong_credentials_and_an_unreachable_server_are_one_line_without_the_password() {
        let Some(db) = TestDatabase::create("wrong_credentials") else {
            return;
        };
        let e = expect_input_err(
            Store::open(with_password(&db, "not-the-password")),
            "cannot connect: password authentication failed",
        );
        assert!(!e.msg.contains("not-the-password"), "{}", e.msg);
        assert!(e.msg.contains("PGPASSWORD"), "{}", e.msg);
        assert!(tables(&db).is_empty());
        // A port where nothing listens: one bound, then let go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let at = Location::parse(std::ffi::OsStr::new(&format!(
            "postgres://ann:secret@127.0.0.1:{port}/results"
        )))
        .unwrap();
        let e = expect_input_err(Store::open_read_only(at), "cannot connect");
        assert!(
            e.msg.contains("is a PostgreSQL server running") && !e.msg.contains("secret"),
            "{}",
            e.msg
        );
    }

    /// The server ends the store's connection between two points: the next
    /// write fails with one line saying so, and what was committed stays.
    #[test]
    fn a_connection_lost_mid_run_keeps_every_committed_point() {
        let Some(db) = TestDatabase::create("a_connection_lost_mid_run") else {
            return;
        };
        let mut store = Store::open(db.location()).unwrap();
        let run = store.begin_run(&meta()).unwrap();
        store.add_point(run, &point("tas", 1)).unwrap();
        let mut admin = db.client();
        let ended: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(ended, 1);
        let e = expect_input_err(
            store.add_point(run, &point("tas", 2)),
            "cannot store a point",
        );
        assert!(
            e.msg.contains("(the connection to the server was lost)")
                || e.msg.contains("(the server ended the connection)"),
            "{}",
            e.msg
        );
        let again = Store::open_read_only(db.location()).unwrap();
        assert_eq!(again.load(run).unwrap().1, vec![point("tas", 1)]);
    }

    /// Writers in several processes (here: connections) at once: each run
    /// and point is stored once, and one run copied by several at once is
    /// stored once.
    #[test]
    fn concurrent_writers_lose_nothing_and_store_a_copy_once() {
        let Some(db) = TestDatabase::create("concurrent_writers_lose_nothing") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (src_meta, src_points) = {
            let mut src = Store::open(dir.path().join("src.db")).unwrap();
            let run = src.begin_run(&meta()).unwrap();
            for t in [1, 2, 4] {
                src.add_point(run, &point("tas", t)).unwrap();
            }
            src.finish_run(run).unwrap();
            src.load(run).unwrap()
        };
        let at = db.location();
        Store::open(&at).unwrap();
        let mut threads = Vec::new();
        for _ in 0..3 {
            let at = at.clone();
            threads.push(std::thread::spawn(move || {
                let mut s = Store::open(&at).unwrap();
                for _ in 0..3 {
                    let run = s.begin_run(&meta()).unwrap();
                    for t in 1..=4 {
                        s.add_point(run, &point("ticket", t)).unwrap();
                    }
                    s.finish_run(run).unwrap();
                }
                None
            }));
        }
        for _ in 0..3 {
            let (at, m, p) = (at.clone(), src_meta.clone(), src_points.clone());
            threads.push(std::thread::spawn(move || {
                Some(Store::open(&at).unwrap().store_copy(&m, &p).unwrap())
            }));
        }
        let copies: Vec<Copied> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(
            copies
                .iter()
                .filter(|c| matches!(c, Copied::New(_)))
                .count(),
            1,
            "{copies:?}"
        );
        let store = Store::open_read_only(&at).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), 9 + 1);
        for r in &runs {
            assert!(r.meta.complete);
            let want = if r.meta.uuid == src_meta.uuid { 3 } else { 4 };
            assert_eq!(r.points, want);
            assert_eq!(store.load(r.meta.id.unwrap()).unwrap().1.len(), want);
        }
    }

    /// `sslmode=require` with the test server's certificate authority:
    /// the connection is TLS; with the system's authorities, which did not
    /// sign it, it is refused, in one line that says what to do.
    #[test]
    fn a_server_is_reached_over_tls_when_the_url_asks_and_checked() {
        let Some(db) = TestDatabase::create("a_server_is_reached_over_tls") else {
            return;
        };
        let mut c = db.client();
        let on: String = c.query_one("SHOW ssl", &[]).unwrap().get(0);
        if on != "on" {
            assert!(
                std::env::var_os("LOCKLAB_REQUIRE_POSTGRES").is_none_or(|v| v != "1"),
                "the test server does not speak TLS (.ci/postgres needs openssl)"
            );
            eprintln!("note: a_server_is_reached_over_tls: skipped (the test server has no TLS)");
            return;
        }
        let cert: String = c.query_one("SHOW ssl_cert_file", &[]).unwrap().get(0);
        let root = std::path::Path::new(&cert).with_file_name("root.crt");
        let url =
            |q: &str| Location::parse(std::ffi::OsStr::new(&format!("{}?{q}", db.url()))).unwrap();
        let store = Store::open(url(&format!(
            "sslmode=verify-full&sslrootcert={}",
            root.display()
        )))
        .unwrap();
        use super::super::engine::Sql;
        let row = store
            .engine
            .row(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap();
        assert_eq!(row, Some(vec![super::super::engine::Value::Int(1)]));
        // Without the TLS options, the same server in the clear.
        let plain = Store::open(db.location()).unwrap();
        let row = plain
            .engine
            .row(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap();
        assert_eq!(row, Some(vec![super::super::engine::Value::Int(0)]));
        expect_input_err(
            Store::open_read_only(url("sslmode=require")),
            "name the one that signed it as sslrootcert=FILE",
        );
        expect_input_err(
            Store::open_read_only(url("sslmode=require&sslrootcert=/nonexistent/ca.pem")),
            "sslrootcert /nonexistent/ca.pem: cannot read certificates from it",
        );
    }
}
