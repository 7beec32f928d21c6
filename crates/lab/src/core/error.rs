//! The lab's one error type: a message for the user and an exit code.
//!
//! Bad input (an unknown lock, zero threads, an unreadable database) is exit
//! code 2 with a one-line message naming the value and what is allowed; a
//! check that ran and failed (a violation or a hang found) is exit code 1.

use std::fmt;

/// An error the CLI reports on one line before exiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabError {
    /// What went wrong, naming the bad value and what is allowed.
    pub msg: String,
    /// The process exit code.
    pub code: i32,
}

/// Exit code for bad input, a bad database or an unknown run.
pub const EXIT_INPUT: i32 = 2;
/// Exit code for a check that ran and found a fault.
pub const EXIT_FAILED: i32 = 1;

impl LabError {
    /// Bad input from the user or the environment (exit code 2).
    pub fn input(msg: impl Into<String>) -> Self {
        Self {
            msg: msg.into(),
            code: EXIT_INPUT,
        }
    }

    /// A check ran and failed (exit code 1).
    pub fn failed(msg: impl Into<String>) -> Self {
        Self {
            msg: msg.into(),
            code: EXIT_FAILED,
        }
    }
}

/// A message on one line: line breaks (an SQL statement an error quotes,
/// a multi-line message from a library) become "; ".
pub fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for LabError {}

/// The lab's result type.
pub type Result<T, E = LabError> = std::result::Result<T, E>;
