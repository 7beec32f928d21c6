//! Throwaway databases on a PostgreSQL server, for the tests of the store
//! on both engines (the store's own and the command line's).
//!
//! The server is named by `LOCKLAB_TEST_PG`, a URL of a user that may
//! create databases (`.ci/postgres start DIR` starts one and prints it).
//! Without it the server's tests are skipped, each saying so on stderr;
//! with `LOCKLAB_REQUIRE_POSTGRES=1` (as CI sets it) they fail instead.

use std::sync::atomic::{AtomicU32, Ordering};

use super::location::Location;

/// The variable naming the test server.
pub const TEST_SERVER_VAR: &str = "LOCKLAB_TEST_PG";

/// A database made for one test on the test server, dropped with it.
pub struct TestDatabase {
    /// The database's URL, password included.
    url: String,
    /// The server's URL, to drop the database by.
    admin: String,
    name: String,
}

impl TestDatabase {
    /// A new empty database on the test server, or `None` (with a note on
    /// stderr naming `test`) where no server is named. Panics where one is
    /// required and none is named, or where it cannot be reached.
    pub fn create(test: &str) -> Option<TestDatabase> {
        let Ok(admin) = std::env::var(TEST_SERVER_VAR) else {
            assert!(
                std::env::var_os("LOCKLAB_REQUIRE_POSTGRES").is_none_or(|v| v != "1"),
                "{test}: LOCKLAB_REQUIRE_POSTGRES=1 but {TEST_SERVER_VAR} names no server"
            );
            eprintln!(
                "note: {test}: skipped on PostgreSQL ({TEST_SERVER_VAR} names no server; \
                 `.ci/postgres start DIR` starts one)"
            );
            return None;
        };
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "locklab_test_{}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            uuid::Uuid::new_v4()
                .simple()
                .to_string()
                .get(..8)
                .unwrap_or("0")
        );
        let mut client = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{test}: {TEST_SERVER_VAR}: cannot connect: {e}"));
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("{test}: cannot create database {name}: {e}"));
        // The same server and user, this database: the URL's path is the
        // database's name, before any options.
        let auth_end = admin
            .find("://")
            .and_then(|i| admin[i + 3..].find('/').map(|j| i + 3 + j))
            .unwrap_or(admin.len());
        let query = admin[auth_end..]
            .find('?')
            .map_or("", |i| &admin[auth_end + i..]);
        Some(TestDatabase {
            url: format!("{}/{name}{query}", &admin[..auth_end]),
            admin,
            name,
        })
    }

    /// The database's URL, password included (as a user would give it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the database is, as the store takes it.
    pub fn location(&self) -> Location {
        Location::parse(std::ffi::OsStr::new(&self.url)).expect("a test database's URL parses")
    }

    /// A connection to the database itself, to look at or plant what the
    /// store reads.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls)
            .expect("connecting to a test database")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}
