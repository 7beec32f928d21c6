//! Files the lab reads or writes by a name the user gave (`--db`, `--out`,
//! an input file of a command): what may be there, how much is read, and
//! how a file is written so that it is whole or not there at all.
//!
//! Only a regular file will do. Opening a FIFO waits for a writer (the lab
//! would hang), a character device such as `/dev/zero` never ends, and a
//! written report renamed over `/dev/null` would replace the device. So a
//! name is checked before it is used, and an input file is opened without
//! blocking and checked again on the open file (`fstat`), where nothing can
//! be swapped in between; it is read up to a bound that the caller sets.
//!
//! A file the lab writes (a report, a plot) goes to a temporary file in the
//! target's directory first and is renamed over the target only once it
//! is complete: a full disk or a write limit leaves the file that was
//! there byte for byte, and the partial temporary file is removed. A
//! rename within one directory replaces the name in one step, so a reader
//! sees the old file or the new one, never half of it.

use std::fs::{File, FileType};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::core::error::{LabError, Result};

/// What a file of type `t` is, with its article ("a FIFO"); `None` for a
/// regular file.
pub fn not_regular(t: FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Refuses `path` when something other than a regular file is there
/// (symbolic links followed); nothing there is fine. `option` names the
/// option the path came from and `allowed` says what it takes, e.g.
/// "a regular file (a locklab database) or a new file's name".
pub fn check_regular_or_absent(option: &str, path: &Path, allowed: &str) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) => match not_regular(m.file_type()) {
            Some(kind) => Err(refused(option, path, kind, allowed)),
            None => Ok(()),
        },
        // Nothing there (or a dangling link, or a directory that cannot be
        // searched): whoever opens it next says what is wrong.
        Err(_) => Ok(()),
    }
}

/// The one-line refusal of a path that is not a regular file.
fn refused(option: &str, path: &Path, kind: &str, allowed: &str) -> LabError {
    LabError::input(format!(
        "{option} {}: {kind}; allowed {allowed}",
        path.display()
    ))
}

/// Reads the input file at `path` whole as text, refusing (one line,
/// naming `option` and the path) anything that is not a regular file and a
/// file longer than `max` bytes; `what` says what the option takes, e.g.
/// "a scenario file (TOML, a few KiB)".
pub fn read_input(option: &str, path: &Path, max: u64, what: &str) -> Result<String> {
    let shown = path.display();
    // O_NONBLOCK: opening a FIFO no one writes to returns at once instead
    // of waiting; the type is then checked on what was opened.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| LabError::input(format!("{option} {shown}: cannot read it: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| LabError::input(format!("{option} {shown}: cannot read it: {e}")))?;
    if let Some(kind) = not_regular(meta.file_type()) {
        return Err(refused(option, path, kind, what));
    }
    // One byte past the bound tells a file at the bound from a longer one
    // (and one that grows while it is read is cut there, not followed).
    let mut bytes = Vec::new();
    (&mut f)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LabError::input(format!("{option} {shown}: cannot read it: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(LabError::input(format!(
            "{option} {shown}: longer than {} (the most read); allowed {what}",
            size_text(max)
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        LabError::input(format!(
            "{option} {shown}: not text (invalid UTF-8 at byte {}); allowed {what}",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `bytes` as KiB or MiB for a message.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Where a file written to `path` really goes: through a symbolic link to
/// the file it names (so that the link stays a link), else `path`.
fn write_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// The directory of `path` as a path that can be opened ("." for a bare
/// file name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A new, empty temporary file beside `target` (same directory, so that a
/// rename onto `target` is one step), with the permissions of the file it
/// will replace, or `new_mode` less the umask where there is none: removed
/// when dropped unless kept.
pub fn temp_beside(target: &Path, new_mode: u32) -> std::io::Result<tempfile::NamedTempFile> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mode = std::fs::metadata(target)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(new_mode);
    let file = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir_of(target))?;
    Ok(file)
}

/// Writes `bytes` to `path` whole or not at all: to a temporary file in
/// the same directory, flushed to the disk, then renamed over `path`. On
/// any failure the temporary file is removed, the file that was at `path`
/// is left as it was, and the error names `option`, the path and `what`
/// was being written. Refuses a path where something other than a regular
/// file is (a FIFO, a device, a directory).
pub fn write_whole(option: &str, path: &Path, what: &str, bytes: &[u8]) -> Result<()> {
    check_regular_or_absent(
        option,
        path,
        "a regular file (replaced whole) or a new file's name",
    )?;
    let target = write_target(path);
    let shown = path.display();
    let fail = |e: std::io::Error| {
        LabError::input(format!(
            "{option} {shown}: cannot write the {what}: {e}; nothing was changed"
        ))
    };
    let mut tmp = temp_beside(&target, 0o666).map_err(fail)?;
    tmp.write_all(bytes).map_err(fail)?;
    // Data on the disk before the name points at it: a crash right after
    // the rename must not leave an empty file under the good name.
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(&target).map_err(|e| fail(e.error))?;
    sync_dir(dir_of(&target));
    Ok(())
}

/// Whether `a` and `b` are one file: the same device and inode, so that
/// a symbolic link, a `..` or a hard link does not hide it. Either absent
/// is not the same.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Flushes a directory's entries (a rename or a new name in it) to the
/// disk; a failure only loses durability across a crash, so it is not an
/// error.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, kind) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
        ] {
            let e = read_input("--config", p, 1 << 20, "a scenario file").unwrap_err();
            assert!(
                e.msg.starts_with("--config ") && e.msg.contains(kind),
                "{e}"
            );
            assert!(e.msg.contains("allowed a scenario file"), "{e}");
            let e = check_regular_or_absent("--db", p, "a database").unwrap_err();
            assert!(e.msg.starts_with("--db ") && e.msg.contains(kind), "{e}");
        }
        check_regular_or_absent("--db", &dir.path().join("new"), "x").unwrap();
    }

    #[test]
    fn an_input_longer_than_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big.toml");
        std::fs::write(&f, vec![b'#'; 2049]).unwrap();
        let e = read_input("--config", &f, 2048, "a scenario file").unwrap_err();
        assert!(e.msg.contains("longer than 2 KiB"), "{e}");
        std::fs::write(&f, vec![b'#'; 2048]).unwrap();
        assert_eq!(read_input("--config", &f, 2048, "x").unwrap().len(), 2048);
        std::fs::write(&f, b"\xff\xfe").unwrap();
        assert!(read_input("--config", &f, 2048, "x")
            .unwrap_err()
            .msg
            .contains("not text"));
    }

    #[test]
    fn a_written_file_replaces_the_old_one_and_keeps_its_mode_and_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.html");
        std::fs::write(&real, b"old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.html");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_whole("--out", &link, "report", b"new").unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "a temporary file is left: {names:?}");
    }
}
