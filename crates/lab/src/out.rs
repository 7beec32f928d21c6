//! The lab's output: reports on stdout, notes and errors on stderr.
//!
//! A reader that stops reading (`locklab locks | head -1`) is not an error:
//! the first write that finds the pipe closed ends the output quietly and
//! the command finishes as it would have (a run is still stored, a check's
//! verdict still sets the exit code), where `println!` would panic. Notes on
//! a closed or failing stderr are dropped the same way.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{LabError, Result};

/// Set once stdout's reader has gone: later output is dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout as it is. A closed pipe ends the output quietly;
/// any other failure (a full disk under `> file`) is an error naming it.
pub fn print(text: &str) -> Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(LabError::failed(format!("cannot write the output: {e}"))),
    }
}

/// Whether stdout may carry colour and bold: it is a terminal, `NO_COLOR`
/// is unset or empty (<https://no-color.org>), and `TERM` is not `dumb`.
pub fn colour() -> bool {
    use std::io::IsTerminal;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    !no_color && !dumb && io::stdout().is_terminal()
}

/// `s` in bold where [`colour`] allows, else as it is.
pub fn bold(s: &str) -> String {
    if colour() {
        format!("\x1b[1m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// Whether stdout's reader has gone (what is printed now is dropped).
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Writes one line to stderr; a failure to write is ignored (there is
/// nowhere left to say it).
pub fn note(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// `println!` that ends quietly when the reader has gone: evaluates to
/// [`Result`], so `outln!(…)?`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::out::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics ([`note`]).
#[macro_export]
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::out::note(&format!($($arg)*))
    };
}
