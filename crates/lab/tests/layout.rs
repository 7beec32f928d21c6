//! The lab's layout, checked: the code the studies share (everything in
//! `src/` outside `src/studies/`) names no study, so that a study lives in
//! its folder alone and a change to one study never reaches into shared
//! code. See `crates/lab/README.md`, "Adding a study".

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("readable source folder") {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The studies' folder names, and how their names are written elsewhere:
/// the names their points are stored under and their commands' words.
fn study_words(studies: &Path) -> Vec<String> {
    let mut words: Vec<String> = std::fs::read_dir(studies)
        .expect("src/studies")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(words.len() >= 9, "studies found: {words:?}");
    for w in words.clone() {
        if w.contains('_') {
            words.push(w.replace('_', "-"));
            words.extend(w.split('_').map(str::to_string));
        }
    }
    words.sort();
    words.dedup();
    words
}

/// Whether `word` occurs in `line` as a whole word (letters, digits and
/// `_` around it end a word; the names are lower case, like the code's). Words that are also plain
/// English in shared code ("spin lock", "data model", "hash table", "it
/// costs") count
/// only where they name a study: quoted, after `bench `, or in a path.
fn names_study(line: &str, word: &str) -> bool {
    let lower = line;
    let mut from = 0;
    while let Some(i) = lower[from..].find(word) {
        let at = from + i;
        let end = at + word.len();
        let before = lower[..at].chars().next_back();
        let after = lower[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if boundary(before) && boundary(after) {
            // The whole of a string or a code span: "spin", `hash`.
            let quoted = matches!(before, Some('"' | '`')) && after == before;
            let path = lower[..at].ends_with("::") || lower[end..].starts_with("::");
            let command = lower[..at].ends_with("bench ") || lower[..at].ends_with("torture ");
            let english = match word {
                "spin" => true,
                "model" => true,
                "costs" => true,
                "hash" => lower[end..].starts_with(" table") || lower[end..].starts_with("-table"),
                _ => false,
            };
            if !english || quoted || path || command {
                return true;
            }
        }
        from = end;
    }
    false
}

#[test]
fn shared_code_names_no_study() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let studies = src.join("studies");
    let words = study_words(&studies);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(&studies)) {
        let text = std::fs::read_to_string(f).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            for w in &words {
                if names_study(line, w) {
                    found.push(format!(
                        "{}:{}: names the study `{w}`: {}",
                        f.strip_prefix(&src).unwrap().display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "shared code names studies:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_study_where_one_is_named() {
    // The check itself, on lines it must and must not flag.
    for (line, word) in [
        ("use crate::studies::hash::runner;", "hash"),
        ("if p.bench == \"spin\" {", "spin"),
        ("/// what `bench uncontended` measures", "uncontended"),
        ("let kind = \"sim-lhp\";", "sim-lhp"),
        ("/// the torture's watchdog", "torture"),
        ("crate::ipc::run()", "ipc"),
        ("kind: \"bench spin\".into(),", "spin"),
        ("/// model: `model` fits", "model"),
    ] {
        assert!(names_study(line, word), "missed {word} in {line}");
    }
    for (line, word) in [
        ("/// a spin lock or a sleeping one", "spin"),
        ("/// the data model holds u64", "model"),
        ("/// parks in a global hash table", "hash"),
        ("let hashes = 3; // rehash", "hash"),
        ("spinning", "spin"),
        ("cpuinfo_field(cpuinfo, \"model name\")", "model"),
        ("/// `spin-yield(L)` over the spin lock `L`", "spin"),
    ] {
        assert!(!names_study(line, word), "flagged {word} in {line}");
    }
}
