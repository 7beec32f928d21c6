//! The store's errors, each on one line naming the store: what failed,
//! the engine's own words, and a hint where one helps.

use std::fmt::Display;
use std::path::Path;

use postgres::error::SqlState;
use rusqlite::ErrorCode;

use super::engine::{ColumnError, DbError};
use crate::core::error::LabError;

/// An error reading a file that may not be a database at all.
pub(super) fn read_err(path: &Path, e: rusqlite::Error) -> LabError {
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
            sqlite_hint(&e)
        )),
    }
}

/// An SQLite error on one line and without the statement: an error in a
/// statement (a column an old or damaged file lacks) would otherwise quote
/// the whole SQL, schema and line breaks included.
pub(super) fn sql_text(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        e => e.to_string(),
    };
    one_line(&text)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A PostgreSQL error on one line: the server's message, or what failed on
/// the way to it (with its cause: "connection refused").
pub(super) fn pg_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return one_line(db.message());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    one_line(&text)
}

/// Either engine's error on one line.
pub(super) fn db_text(e: &DbError) -> String {
    match e {
        DbError::Sqlite(e) => sql_text(e),
        DbError::Postgres(e) => pg_text(e),
        DbError::Column(ColumnError::Kind(i, kind)) => {
            format!("column {i} of a row holds a value of type {kind}")
        }
        DbError::Column(ColumnError::Json(i, e)) => format!("column {i} of a row is not JSON: {e}"),
    }
}

pub(super) fn no_run(at: &dyn Display, run: i64) -> LabError {
    LabError::input(format!("no run {run} in {at}; `locklab runs` lists them"))
}

pub(super) fn write_err(at: &dyn Display, what: &str, e: impl Into<DbError>) -> LabError {
    let e = e.into();
    LabError::input(format!("{at}: {what}: {}{}", db_text(&e), hint(&e)))
}

/// What the user can do about an error, if there is something.
pub(super) fn hint(e: &DbError) -> &'static str {
    match e {
        DbError::Sqlite(e) => sqlite_hint(e),
        DbError::Postgres(e) => pg_hint(e),
        DbError::Column(_) => "",
    }
}

pub(super) fn sqlite_hint(e: &rusqlite::Error) -> &'static str {
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

pub(super) fn pg_hint(e: &postgres::Error) -> &'static str {
    if e.is_closed() {
        return " (the connection to the server was lost)";
    }
    let refused = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    if let Some(kind) = refused {
        return match kind {
            std::io::ErrorKind::ConnectionRefused => {
                " (is a PostgreSQL server running and listening at that host and port?)"
            }
            std::io::ErrorKind::TimedOut => " (the server did not answer in time)",
            std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe
            | std::io::ErrorKind::UnexpectedEof => " (the connection to the server was lost)",
            _ => "",
        };
    }
    match e.code() {
        Some(c) if *c == SqlState::INVALID_PASSWORD => {
            " (check the user and its password: in the URL, PGPASSWORD or PGPASSFILE)"
        }
        Some(c) if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            " (the server refuses that user from here: check the user, its password, and the \
             server's pg_hba.conf)"
        }
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => {
            " (create the database first: docs/cli.md, \"A store a team shares\")"
        }
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            " (that user may not do this in that database)"
        }
        Some(c) if *c == SqlState::ADMIN_SHUTDOWN || *c == SqlState::CRASH_SHUTDOWN => {
            " (the server ended the connection)"
        }
        _ => "",
    }
}
