//! The store's errors, each on one line naming the file: what failed,
//! SQLite's own words, and a hint where one helps.

use std::path::Path;

use rusqlite::ErrorCode;

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
            hint(&e)
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
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(super) fn no_run(path: &Path, run: i64) -> LabError {
    LabError::input(format!(
        "no run {run} in {}; `locklab runs` lists them",
        path.display()
    ))
}

pub(super) fn write_err(path: &Path, what: &str, e: rusqlite::Error) -> LabError {
    LabError::input(format!(
        "{}: {what}: {}{}",
        path.display(),
        sql_text(&e),
        hint(&e)
    ))
}

/// What the user can do about an SQLite error, if there is something.
pub(super) fn hint(e: &rusqlite::Error) -> &'static str {
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
