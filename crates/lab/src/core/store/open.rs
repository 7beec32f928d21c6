//! Opening a database: the checks that leave a file that is not locklab's
//! (or is a newer locklab's) unchanged, a new file made whole under a
//! temporary name, the header that decides whose a file is, and the
//! errors, each on one line naming the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::engine::Engine;
use super::errors::{read_err, sql_text, sqlite_hint as hint, write_err};
use super::handle::Store;
use super::location::Location;
use super::schema::{
    read_header_snapshot, refuse_foreign, Migration, APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION,
};
use crate::core::error::{LabError, Result};

/// How long a writer waits for another process holding the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl Store {
    /// Opens the store at `at` (a file's path, or a [`Location`]),
    /// creating it if absent and migrating an older schema. Refuses,
    /// without changing anything, what is not a locklab store this build
    /// can read.
    pub fn open(at: impl Into<Location>) -> Result<Store> {
        match at.into() {
            Location::File(path) => Self::open_file(&path),
            Location::Server(server) => super::server::open(&server),
        }
    }

    fn open_file(path: &Path) -> Result<Store> {
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
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| write_err(&shown, "cannot set up the database", e))?;
        let mut store = Store {
            engine: Engine::Sqlite(conn),
            at: Location::File(path.to_path_buf()),
        };
        store.check_and_migrate(MIGRATIONS)?;
        // The rollback journal, not WAL: a reader then needs nothing but
        // the file (WAL needs -wal and -shm files beside it, which a user
        // who may only read cannot create), and reading creates no file.
        // Readers still read while a sweep writes; each point's commit
        // holds them off for a moment, and they wait (busy_timeout). A
        // database an older build left in WAL goes back when no one else
        // has it open; until then WAL is also correct, so a failure here is
        // not an error.
        let conn = store.conn_mut();
        let _ = conn.pragma_update(None, "journal_mode", "DELETE");
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| write_err(&shown, "cannot set up the database", e))?;
        Ok(store)
    }

    /// Opens an existing database to read it (`runs`, `show`, `plot`, a
    /// study that reads stored runs): read-only, so that a user who may only read the
    /// file can, and nothing is changed or created. A path with no file, or
    /// an empty file, is an input error saying so. A database of an older
    /// schema is read as it is: through a copy in memory migrated there,
    /// the file left byte for byte (the next command that stores into it
    /// migrates it).
    ///
    /// On a server: a database with no store in it yet is an input error
    /// saying so, and nothing is written.
    pub fn open_read_only(at: impl Into<Location>) -> Result<Store> {
        let path = match at.into() {
            Location::File(path) => path,
            Location::Server(server) => {
                return super::server::open_existing(&server)?.ok_or_else(|| {
                    LabError::input(format!(
                        "{}: no runs stored yet (the database holds no locklab store); nothing \
                         was changed",
                        server.shown()
                    ))
                })
            }
        };
        let path = path.as_path();
        Self::open_existing_file(path)?.ok_or_else(|| {
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
    /// (no file, or an empty one; a database with no store in it).
    pub fn open_existing(at: impl Into<Location>) -> Result<Option<Store>> {
        match at.into() {
            Location::File(path) => Self::open_existing_file(&path),
            Location::Server(server) => super::server::open_existing(&server),
        }
    }

    fn open_existing_file(path: &Path) -> Result<Option<Store>> {
        check_location(path)?;
        match inspect(path, SCHEMA_VERSION)? {
            Found::Nothing => Ok(None),
            Found::Ours { conn } => Self::reading(path, conn).map(Some),
            Found::Unread { wal, why } => {
                // A WAL database (an older build's) in a directory this user
                // cannot write, with no -wal file, so that no one has it
                // open: its file holds every committed change, and SQLite
                // reads it as an immutable file.
                if wal && !sidecar(path, "-wal").exists() {
                    if let Ok(conn) = open_immutable(path) {
                        if read_header_snapshot(&conn).is_ok() {
                            return Self::reading(path, conn).map(Some);
                        }
                    }
                }
                // An interrupted write to roll back first, which SQLite does
                // on the first read of a connection that may write: the file
                // goes back to its last committed state, and its schema is
                // left as it is.
                let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                Connection::open_with_flags(path, flags)
                    .and_then(|conn| conn.busy_timeout(BUSY_TIMEOUT).map(|()| conn))
                    .map_err(|e| read_err(path, e))
                    .and_then(|conn| Self::reading(path, conn))
                    .map(Some)
                    .map_err(|e| {
                        LabError::input(format!(
                            "{}; it cannot be read as it is ({why})",
                            e.msg.trim_end_matches("; nothing was changed")
                        ))
                    })
            }
        }
    }

    /// A store that reads the locklab database at `path` through `conn`
    /// and never writes to it: a file of this build's schema is read
    /// directly; an older one is copied into memory and brought up to date
    /// there, so that reading it leaves the file byte for byte (a command
    /// that stores, through [`Store::open`], migrates the file itself).
    fn reading(path: &Path, conn: Connection) -> Result<Store> {
        let header = read_header_snapshot(&conn).map_err(|e| read_err(path, e))?;
        refuse_foreign(path, &header, SCHEMA_VERSION)?;
        if header.user_version == SCHEMA_VERSION {
            return Ok(Store {
                engine: Engine::Sqlite(conn),
                at: Location::File(path.to_path_buf()),
            });
        }
        let mut store = Store {
            engine: Engine::Sqlite(in_memory_copy(path, &conn)?),
            at: Location::File(path.to_path_buf()),
        };
        store.check_and_migrate(MIGRATIONS)?;
        Ok(store)
    }
}

impl Store {
    /// Decides whether the store is locklab's and brings its schema to the
    /// newest of `steps`. Reads only, until it has decided to write.
    pub(super) fn check_and_migrate(&mut self, steps: &[Migration]) -> Result<()> {
        match (&mut self.engine, &self.at) {
            (Engine::Sqlite(conn), Location::File(path)) => {
                super::schema::migrate_file(conn, path, steps)
            }
            (Engine::Postgres(client), Location::Server(server)) => {
                super::server::migrate(client.get_mut().client_mut(), server, steps)
            }
            (_, at) => Err(LabError::failed(format!(
                "{at}: the store's connection is not of its kind (a bug in locklab)"
            ))),
        }
    }
}

/// A copy in memory of the database `conn` reads, taken in one read
/// transaction (SQLite's online backup in one step), so that it is one
/// committed state of the file even while another process writes to it.
fn in_memory_copy(path: &Path, conn: &Connection) -> Result<Connection> {
    use rusqlite::backup::{Backup, StepResult};
    let fail = |e| read_err(path, e);
    let mut copy = Connection::open_in_memory().map_err(fail)?;
    let backup = Backup::new(conn, &mut copy).map_err(fail)?;
    // The step waits for a writer as the source connection's busy timeout
    // says; a step still refused is tried again until that time is up.
    let waited = std::time::Instant::now();
    loop {
        match backup.step(-1).map_err(fail)? {
            StepResult::Done => break,
            StepResult::Busy | StepResult::Locked if waited.elapsed() > BUSY_TIMEOUT => {
                return Err(LabError::input(format!(
                    "{}: cannot read the database: it stayed locked{}",
                    path.display(),
                    " (another locklab holds it; try again when it ends)"
                )));
            }
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    drop(backup);
    Ok(copy)
}

/// What a read-only look at a database path found.
enum Found {
    /// No file, an empty file, or an SQLite file with nothing in it.
    Nothing,
    /// A locklab database, open read-only; its header was read in one
    /// read transaction.
    Ours { conn: Connection },
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
                Ok(Found::Ours { conn })
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
            engine: Engine::Sqlite(conn),
            at: Location::File(path.to_path_buf()),
        };
        store.check_and_migrate(MIGRATIONS)?;
        store
            .into_sqlite()
            .close()
            .map_err(|(_, e)| cannot(&sql_text(&e)))?;
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn empty_file_becomes_a_database() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(db(&dir), b"").unwrap();
        let mut store = Store::open(db(&dir)).unwrap();
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
            let mut store = Store::open(db(&dir)).unwrap();
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
        expect_input_err(Store::open(file.join("locklab.db")), "is not a directory");
        expect_input_err(
            Store::open(dir.path().join("missing").join("locklab.db")),
            "does not exist",
        );
        expect_input_err(
            Store::open(dir.path()),
            "a directory; allowed a regular file",
        );
        expect_input_err(Store::open(Path::new("")), "the database path is empty");
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }

    /// A file of every older schema, with a run stored in it, is read as
    /// it is by the opening that reads: its run, point and repetition read
    /// back (with what a newer schema added empty), it has no baselines,
    /// and the file is byte for byte what it was, at its own version, with
    /// nothing created beside it. Opening it to write then migrates it.
    #[test]
    fn an_older_schema_is_read_without_changing_the_file() {
        for version in 1..SCHEMA_VERSION {
            let dir = tempfile::tempdir().unwrap();
            let path = db(&dir);
            {
                let store = store_at(&dir, version as usize);
                // Only the columns schema 1 has.
                store
                    .conn()
                    .execute_batch(
                        "INSERT INTO runs (kind, command, params, started, finished, complete,
                            machine_cpu, machine_cores, machine_tsc_hz, machine_kernel,
                            machine_rustc, machine_git_rev, machine_hostname)
                         VALUES ('bench demo', 'locklab bench demo', '{\"secs\": 1}', 't0',
                            't1', 1, 'cpu', 2, NULL, 'k', 'r', 'g', 'h');
                         INSERT INTO points (run_id, bench, lock, threads, params)
                         VALUES (1, 'demo', 'tas', 1, '{}');
                         INSERT INTO reps (point_id, rep, wall_s, cpu_s, total_ops,
                            throughput_ops_s, ns_per_op, thread_ops, jain, p50_ns, p99_ns,
                            p999_ns, max_ns)
                         VALUES (1, 0, 1.0, 1.0, 10, 10.0, 1e8, '[10]', 1.0, 1, 2, 3, 4);",
                    )
                    .unwrap();
            }
            let before = std::fs::read(&path).unwrap();
            let entries = || {
                let mut v: Vec<_> = std::fs::read_dir(dir.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                v.sort();
                v
            };
            let listing = entries();
            for store in [
                Store::open_read_only(&path).unwrap(),
                Store::open_existing(&path).unwrap().unwrap(),
            ] {
                let runs = store.runs().unwrap();
                assert_eq!(runs.len(), 1, "schema {version}");
                assert_eq!(runs[0].points, 1);
                assert_eq!(runs[0].meta.params, json!({"secs": 1}));
                let (meta, points) = store.load(1).unwrap();
                assert!(meta.complete, "schema {version}");
                assert_eq!(meta.machine.c2c_round_trip_ns, None);
                let r = &points[0].reps[0];
                assert_eq!((r.total_ops, r.max_ns, r.censored), (10, 4, 0));
                assert!(r.metrics.is_empty());
                assert!(store.has_run(1).unwrap());
                assert!(store.baselines().unwrap().is_empty());
                assert_eq!(store.baseline("main").unwrap(), None);
            }
            assert_eq!(std::fs::read(&path).unwrap(), before, "schema {version}");
            assert_eq!(entries(), listing, "schema {version}: files beside it");
            assert_eq!(header(&path).1, version);

            let mut store = Store::open(&path).unwrap();
            assert_eq!(header(&path).1, SCHEMA_VERSION, "from schema {version}");
            assert_eq!(store.save_baseline("main", 1).unwrap(), None);
            assert_eq!(store.load(1).unwrap().1[0].reps[0].total_ops, 10);
        }
    }
}
