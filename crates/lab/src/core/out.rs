//! The lab's output: reports on stdout, notes and errors on stderr.
//!
//! A reader that stops reading (`locklab locks | head -1`) is not an error:
//! the first write that finds the pipe closed ends the output quietly and
//! the command finishes as it would have (a run is still stored, a check's
//! verdict still sets the exit code), where `println!` would panic. Notes on
//! a closed or failing stderr are dropped the same way.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::core::error::{LabError, Result};

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

/// Notes held back while a command's input may still be refused
/// ([`hold_notes`]): `None` when notes go straight out.
static HELD: std::sync::Mutex<Option<Vec<String>>> = std::sync::Mutex::new(None);

fn held() -> std::sync::MutexGuard<'static, Option<Vec<String>>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Holds notes back from here on: a command whose input is refused after
/// a note was decided (a note about the CPU, then a `--db` that cannot be
/// opened) prints the refusal's one line and nothing else. The binary
/// holds them until the command is under way ([`release_notes`]: a run's
/// store is open and its record begun) or has ended; a refusal drops them
/// ([`drop_held_notes`]).
pub fn hold_notes() {
    *held() = Some(Vec::new());
}

/// Prints the notes held back, in order, and lets later ones straight out.
pub fn release_notes() {
    let lines = held().take();
    for line in lines.into_iter().flatten() {
        write_note(&line);
    }
}

/// Forgets the notes held back (the command was refused) and lets later
/// ones straight out.
pub fn drop_held_notes() {
    held().take();
}

/// Writes one line to stderr, or holds it back ([`hold_notes`]); a failure
/// to write is ignored (there is nowhere left to say it).
pub fn note(line: &str) {
    if let Some(lines) = held().as_mut() {
        lines.push(line.to_string());
        return;
    }
    write_note(line);
}

fn write_note(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// `println!` that ends quietly when the reader has gone: evaluates to
/// [`Result`], so `outln!(…)?`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::core::out::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::core::out::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics ([`note`]).
#[macro_export]
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::core::out::note(&format!($($arg)*))
    };
}

/// `arg` as a POSIX shell reads it back as one word: as it is when it
/// holds only characters no shell treats specially, else in single quotes
/// (inside which nothing is special), each `'` written `'\''` (end the
/// quotes, an escaped quote, quotes again). An empty argument is `''`.
pub fn shell_quote(arg: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    // `=` and `~` are special only at a word's start (an assignment before
    // a command, a home directory); `=` inside a word is kept plain.
    if !arg.is_empty() && arg.chars().all(plain) && !arg.starts_with('=') {
        std::borrow::Cow::Borrowed(arg)
    } else {
        std::borrow::Cow::Owned(format!("'{}'", arg.replace('\'', r"'\''")))
    }
}

/// A command line as a shell reads it back word for word: each argument
/// [`shell_quote`]d, joined by spaces. What a run stores as its command,
/// and the "exact command" that `show` and `report` print, so that it can
/// be pasted back into a shell.
pub fn shell_command<'a>(args: impl IntoIterator<Item = &'a str>) -> String {
    args.into_iter()
        .map(shell_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod shell_tests {
    use super::*;

    #[test]
    fn quoted_words_read_back_through_sh() {
        let words = [
            "locklab",
            "--locks",
            " mcs, ticket",
            "it's",
            "$HOME",
            "a\"b",
            "",
            "`id`",
            "x;y|z&",
            "*",
            "~",
            "=x",
            "a=b",
            "tab\there",
            "new\nline",
            "\\",
            "ünïcode",
        ];
        let line = shell_command(words.iter().copied());
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {line}"))
            .output()
            .unwrap();
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(back, words, "{line}");
        assert_eq!(shell_quote("bench"), "bench");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
