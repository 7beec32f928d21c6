//! The docs against the code: every list of locks in the README and in
//! `docs/` sits between `<!-- locks:begin … -->` and `<!-- locks:end -->`
//! and is exactly what `locklab locks --format markdown` prints now; and
//! every doc a link or a comment names exists.

mod common;
use common::*;
use std::path::{Path, PathBuf};

const BEGIN: &str = "<!-- locks:begin";
const END: &str = "<!-- locks:end -->";
const REGENERATE: &str = "locklab locks --format markdown";

/// The README and every Markdown file under `docs/`.
fn docs(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let p = e.expect("directory entry").path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// The marked blocks of `text`: (line number of the begin marker, the
/// text between the markers). A begin without its end is an error.
fn blocks(text: &str) -> Result<Vec<(usize, String)>, String> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.trim_start().starts_with(BEGIN) {
            if let Some((at, _)) = open {
                return Err(format!("line {n}: a second {BEGIN} before line {at}'s end"));
            }
            open = Some((n, String::new()));
        } else if line.trim() == END {
            match open.take() {
                Some(b) => out.push(b),
                None => return Err(format!("line {n}: {END} without a begin")),
            }
        } else if let Some((_, body)) = &mut open {
            body.push_str(line);
            body.push('\n');
        }
    }
    match open {
        Some((at, _)) => Err(format!("line {at}: {BEGIN} without {END}")),
        None => Ok(out),
    }
}

#[test]
fn every_list_of_locks_in_the_docs_is_the_registry_s() {
    let (_d, db) = tmp();
    let o = locklab(&db, &["locks", "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let generated = stdout(&o);
    assert!(generated.contains("| `tas` |"), "{generated}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = 0;
    let mut stale = Vec::new();
    for file in docs(&root) {
        let text = std::fs::read_to_string(&file).expect("readable doc");
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let marked = blocks(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (line, body) in marked {
            found += 1;
            if body.trim() != generated.trim() {
                stale.push(format!("{name}:{line}"));
            }
        }
    }
    assert!(found > 0, "no doc holds a {BEGIN} … {END} block");
    assert!(
        stale.is_empty(),
        "the list of locks differs from the registry's at {}: replace what lies between the \
         markers with the output of `{REGENERATE}` (`cargo run -p locklab-lab -- {}`)",
        stale.join(", "),
        REGENERATE.trim_start_matches("locklab "),
    );
}

#[test]
fn a_marked_block_is_read_between_its_markers() {
    let text = "a\n<!-- locks:begin (x) -->\n\n| t |\n\n<!-- locks:end -->\nb\n";
    assert_eq!(blocks(text), Ok(vec![(2, "\n| t |\n\n".to_string())]));
    assert!(blocks("<!-- locks:begin -->\n| t |\n").is_err());
    assert!(blocks("<!-- locks:end -->\n").is_err());
}

/// Every file under `dir` whose name ends in one of `exts`, `target` and
/// hidden folders left out.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable folder") {
        let p = e.expect("directory entry").path();
        let name = p.file_name().unwrap().to_string_lossy();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files(&p, exts, out);
            }
        } else if exts.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

#[test]
fn every_doc_a_link_or_a_comment_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut missing = Vec::new();
    // Relative links of the README and the docs: `](path)` or `](path#anchor)`.
    for file in docs(&root) {
        let text = std::fs::read_to_string(&file).expect("readable doc");
        let dir = file.parent().unwrap();
        for (n, line) in text.lines().enumerate() {
            for part in line.split("](").skip(1) {
                let target = part.split(')').next().unwrap_or("");
                let path = target.split('#').next().unwrap_or("");
                if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                    continue;
                }
                if !dir.join(path).exists() {
                    let name = file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    missing.push(format!("{name}:{}: link to {path}", n + 1));
                }
            }
        }
    }
    // A Markdown file of the top `docs/` folder named anywhere in the
    // sources and the docs (a path that continues one, `x/docs/…`, is not).
    let mut all = Vec::new();
    files(&root, &[".rs", ".md", ".toml"], &mut all);
    for file in all {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("docs/") {
                let before = line[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || "/_-.".contains(c)) {
                    continue;
                }
                let rest = &line[i..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
                    .unwrap_or(rest.len());
                let named = rest[..end].trim_end_matches('.');
                if named.ends_with(".md") && !root.join(named).exists() {
                    let name = file
                        .strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    missing.push(format!("{name}:{}: {named}", n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs that do not exist:\n{}",
        missing.join("\n")
    );
}
