//! The store's handle: an open connection and the file it is on.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::errors::{no_run, write_err};
use crate::core::error::LabError;

/// An open results database.
pub struct Store {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn err(&self, what: &str, e: rusqlite::Error) -> LabError {
        write_err(&self.path, what, e)
    }

    pub(super) fn no_run(&self, run: i64) -> LabError {
        no_run(&self.path, run)
    }
}
