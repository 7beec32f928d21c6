//! The store's handle: an open connection and where it is.

use super::engine::{DbError, Engine};
use super::errors::{no_run, write_err};
use super::location::Location;
use crate::core::error::LabError;

/// An open results store: an SQLite file or a PostgreSQL database.
pub struct Store {
    pub(super) engine: Engine,
    pub(super) at: Location,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Where the store is (shows without a server's password).
    pub fn location(&self) -> &Location {
        &self.at
    }

    pub(super) fn err(&self, what: &str, e: impl Into<DbError>) -> LabError {
        write_err(&self.at, what, e)
    }

    pub(super) fn no_run(&self, run: i64) -> LabError {
        no_run(&self.at, run)
    }

    /// The SQLite connection of a file store, which open.rs opened.
    pub(super) fn conn_mut(&mut self) -> &mut rusqlite::Connection {
        match &mut self.engine {
            Engine::Sqlite(c) => c,
            Engine::Postgres(_) => unreachable!("open.rs makes SQLite stores only"),
        }
    }

    /// The SQLite connection, for closing it (open.rs).
    pub(super) fn into_sqlite(self) -> rusqlite::Connection {
        match self.engine {
            Engine::Sqlite(c) => c,
            Engine::Postgres(_) => unreachable!("open.rs makes SQLite stores only"),
        }
    }

    /// The SQLite connection of a file store (for the tests that plant
    /// what an older build wrote).
    #[cfg(test)]
    pub(super) fn conn(&self) -> &rusqlite::Connection {
        match &self.engine {
            Engine::Sqlite(c) => c,
            Engine::Postgres(_) => panic!("{}: not an SQLite store", self.at),
        }
    }
}
