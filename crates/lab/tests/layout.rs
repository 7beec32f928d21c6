//! The lab's layout, checked (see `ARCHITECTURE.md`, "Adding a study"):
//!
//! - the module graph of `src/`, read from `use` and `mod` paths (with
//!   `super::` and child modules), has no cycle, and no module imports a
//!   higher layer (core < studies < front); no study imports another,
//!   and the studies' shared modules (`src/studies/shared/`) import none;
//! - the code outside the studies names no study, except the one catalog
//!   (`src/front/catalog/`), so that a study lives in its folder and its
//!   line in the catalog alone.

use std::collections::{BTreeMap, BTreeSet};
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
    let mut words: Vec<String> = study_folders(studies.parent().unwrap())
        .into_iter()
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
    let catalog = src.join("front").join("catalog");
    let words = study_words(&studies);
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for f in files
        .iter()
        .filter(|f| !f.starts_with(&studies) && !f.starts_with(&catalog))
    {
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

// ---- The module graph ----------------------------------------------------
//
// Every module of `src/` (a file, or a `mod name { … }` inside one) and
// the modules each names: in `use` trees, and in paths that start at
// `crate::`, `super::`, `self::` or at a child module. The layers are
// `core` (bottom), `studies`, `front` (top); `lib.rs`, which only
// declares them, is outside the graph.

/// A module's path below the crate root (`["core", "store"]`).
type ModPath = Vec<String>;

/// The source with comments, string and character literals blanked out,
/// so that braces and paths inside them are not read as code.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (i == 0 || !ident(b[i - 1])) && {
            let mut j = i + 1;
            while j < b.len() && b[j] == b'#' {
                j += 1;
            }
            j < b.len() && b[j] == b'"'
        } {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            while b[j] == b'#' {
                j += 1;
            }
            let hashes = j - i - 1;
            let mut end = String::from("\"");
            end.push_str(&"#".repeat(hashes));
            let close = src[j + 1..].find(&end).expect("raw string ends");
            i = j + 1 + close + end.len();
            out.push_str("\"\"");
        } else if b[i] == b'"' {
            i += 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), else a lifetime.
            let rest = &src[i + 1..];
            let len = if rest.starts_with('\\') {
                rest.find('\'').map(|e| e + 2)
            } else {
                rest.chars()
                    .next()
                    .filter(|c| rest[c.len_utf8()..].starts_with('\''))
                    .map(|c| c.len_utf8() + 2)
            };
            match len {
                Some(n) => {
                    out.push_str("' '");
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = src[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Sep,
    Open,
    Close,
    Semi,
    Comma,
    Star,
    Other,
}

fn tokens(code: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_alphabetic() || c == '_' => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_alphanumeric() || d == '_' {
                        end = j + d.len_utf8();
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Tok::Ident(code[i..end].to_string()));
            }
            ':' if chars.peek().is_some_and(|&(_, d)| d == ':') => {
                chars.next();
                out.push(Tok::Sep);
            }
            '{' => out.push(Tok::Open),
            '}' => out.push(Tok::Close),
            ';' => out.push(Tok::Semi),
            ',' => out.push(Tok::Comma),
            '*' => out.push(Tok::Star),
            c if c.is_whitespace() => {}
            _ => out.push(Tok::Other),
        }
    }
    out
}

/// The paths of a `use` tree (`a::{b, c::{d, e}}` is `a::b`, `a::c::d`,
/// `a::c::e`), from `toks[*i]` up to the `;`, `,` or `}` that ends it.
fn use_tree(toks: &[Tok], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while *i < toks.len() {
        match &toks[*i] {
            Tok::Ident(s) if s == "as" => {
                *i += 2;
                out.push(path.clone());
                return;
            }
            Tok::Ident(s) => {
                path.push(s.clone());
                *i += 1;
            }
            Tok::Sep => *i += 1,
            Tok::Star => {
                *i += 1;
                out.push(path.clone());
                return;
            }
            Tok::Open => {
                *i += 1;
                loop {
                    use_tree(toks, i, &path, out);
                    match toks.get(*i) {
                        Some(Tok::Comma) => *i += 1,
                        Some(Tok::Close) => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                    if toks.get(*i) == Some(&Tok::Close) {
                        *i += 1;
                        break;
                    }
                }
                return;
            }
            _ => {
                out.push(path.clone());
                return;
            }
        }
    }
}

/// A module of the lab and the modules it names.
#[derive(Debug)]
struct Module {
    path: ModPath,
    /// Paths it names, as written (`crate::…`, `super::…`, `child::…`).
    paths: Vec<Vec<String>>,
}

fn file_module(src_dir: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src_dir).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The modules of one file (`text`, the file of module `base`): the file's
/// own and every inline `mod name { … }`.
fn modules_of(base: &ModPath, text: &str) -> Vec<Module> {
    let toks = tokens(&code_only(text));
    let mut mods = vec![Module {
        path: base.clone(),
        paths: Vec::new(),
    }];
    // (index into `mods`, brace depth it opened at)
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let cur = stack.last().unwrap().0;
        match &toks[i] {
            Tok::Ident(k)
                if k == "mod"
                    && matches!(toks.get(i + 1), Some(Tok::Ident(_)))
                    && toks.get(i + 2) == Some(&Tok::Open) =>
            {
                let Tok::Ident(name) = &toks[i + 1] else {
                    unreachable!()
                };
                let mut path = mods[cur].path.clone();
                path.push(name.clone());
                mods.push(Module {
                    path,
                    paths: Vec::new(),
                });
                depth += 1;
                stack.push((mods.len() - 1, depth));
                i += 3;
            }
            Tok::Ident(k) if k == "use" => {
                i += 1;
                let mut found = Vec::new();
                use_tree(&toks, &mut i, &[], &mut found);
                mods[cur].paths.extend(found);
                while i < toks.len() && toks[i] != Tok::Semi {
                    i += 1;
                }
            }
            Tok::Ident(first)
                if toks.get(i + 1) == Some(&Tok::Sep) && (i == 0 || toks[i - 1] != Tok::Sep) =>
            {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j) == Some(&Tok::Sep) {
                    match toks.get(j + 1) {
                        Some(Tok::Ident(s)) => {
                            path.push(s.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                mods[cur].paths.push(path);
                i = j;
            }
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if stack.len() > 1 && stack.last().unwrap().1 == depth {
                    stack.pop();
                }
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    mods
}

/// Every module of `src_dir` (the binary's `main.rs` left out: it is the
/// front's entry, over the library), with extra text appended to some
/// files (`plant`: file relative to `src_dir`, text) for the check's own test.
fn lab_modules(src_dir: &Path, plant: &[(&str, &str)]) -> Vec<Module> {
    let mut files = Vec::new();
    sources(src_dir, &mut files);
    files.sort();
    let mut mods = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(src_dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == "main.rs" {
            continue;
        }
        let mut text = std::fs::read_to_string(&f).expect("readable source");
        for (to, extra) in plant {
            if *to == rel {
                text.push('\n');
                text.push_str(extra);
            }
        }
        mods.extend(modules_of(&file_module(src_dir, &f), &text));
    }
    mods
}

/// The edges of the graph: module → module it names (the longest known
/// module a path starts with), without self-edges and the crate root.
fn edges(mods: &[Module]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let known: BTreeSet<ModPath> = mods.iter().map(|m| m.path.clone()).collect();
    let mut out: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for m in mods {
        for p in &m.paths {
            let (mut at, rest): (ModPath, &[String]) = match p[0].as_str() {
                "crate" => (Vec::new(), &p[1..]),
                "super" | "self" => {
                    let mut at = m.path.clone();
                    let mut k = 0;
                    while k < p.len() && (p[k] == "super" || p[k] == "self") {
                        if p[k] == "super" {
                            at.pop();
                        }
                        k += 1;
                    }
                    (at, &p[k..])
                }
                first => {
                    let mut child = m.path.clone();
                    child.push(first.to_string());
                    if !known.contains(&child) {
                        continue; // another crate, a type, an enum
                    }
                    (m.path.clone(), &p[..])
                }
            };
            let mut best = known.contains(&at).then(|| at.clone());
            for seg in rest {
                at.push(seg.clone());
                if known.contains(&at) {
                    best = Some(at.clone());
                } else {
                    break;
                }
            }
            if let Some(to) = best.filter(|to| !to.is_empty() && *to != m.path) {
                out.entry(m.path.clone()).or_default().insert(to);
            }
        }
    }
    out
}

/// `a::b` for a module path.
fn name(p: &ModPath) -> String {
    p.join("::")
}

/// The layer of a module: 0 core, 1 studies, 2 front.
fn layer(p: &ModPath) -> Option<usize> {
    match p.first().map(String::as_str) {
        Some("core") => Some(0),
        Some("studies") => Some(1),
        Some("front") => Some(2),
        _ => None,
    }
}

/// The study a module of `studies` belongs to (its folder), or `None`
/// for the modules the studies share (`studies::shared`) and `studies`
/// itself.
fn study_of(p: &ModPath, folders: &BTreeSet<String>) -> Option<String> {
    (p.len() >= 2 && p[0] == "studies" && folders.contains(&p[1])).then(|| p[1].clone())
}

/// What breaks the layering in `mods`: every edge that goes up a layer,
/// from one study to another, or from a shared module of the studies to a
/// study; and every cycle (strongly connected set of modules), with its
/// edges. Empty when the graph is clean.
fn layering_faults(mods: &[Module], folders: &BTreeSet<String>) -> Vec<String> {
    let g = edges(mods);
    let mut faults = Vec::new();
    // The crate root (lib.rs) only declares the layers and re-exports.
    for (from, tos) in g.iter().filter(|(from, _)| !from.is_empty()) {
        for to in tos {
            let (Some(lf), Some(lt)) = (layer(from), layer(to)) else {
                faults.push(format!(
                    "{} -> {}: outside the three layers",
                    name(from),
                    name(to)
                ));
                continue;
            };
            if lt > lf {
                faults.push(format!(
                    "{} -> {}: imports a higher layer",
                    name(from),
                    name(to)
                ));
            } else if lf == 1 && lt == 1 {
                let (sf, st) = (study_of(from, folders), study_of(to, folders));
                match (sf, st) {
                    (Some(a), Some(b)) if a != b => faults.push(format!(
                        "{} -> {}: one study imports another (share through the core or a shared module)",
                        name(from),
                        name(to)
                    )),
                    (None, Some(_)) if from.len() > 1 => faults.push(format!(
                        "{} -> {}: a module the studies share imports a study",
                        name(from),
                        name(to)
                    )),
                    _ => {}
                }
            }
        }
    }
    // Cycles: Tarjan's strongly connected components.
    struct T<'a> {
        g: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on: BTreeSet<&'a ModPath>,
        sccs: Vec<Vec<&'a ModPath>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a ModPath) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            t.sccs.push(comp);
        }
    }
    let mut t = T {
        g: &g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        sccs: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    for comp in t.sccs.iter().filter(|c| c.len() > 1) {
        let set: BTreeSet<&ModPath> = comp.iter().copied().collect();
        let mut lines: Vec<String> = Vec::new();
        for v in &set {
            for w in g[*v].iter().filter(|w| set.contains(w)) {
                lines.push(format!("  {} -> {}", name(v), name(w)));
            }
        }
        faults.push(format!(
            "a cycle of {} modules:\n{}",
            comp.len(),
            lines.join("\n")
        ));
    }
    faults
}

/// The studies: the folders of `src/studies/` but `shared`.
fn study_folders(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src.join("studies"))
        .expect("src/studies")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n != "shared")
        .collect()
}

#[test]
fn the_lab_is_three_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = lab_modules(&src, &[]);
    assert!(mods.len() > 100, "modules found: {}", mods.len());
    let g = edges(&mods);
    assert!(
        g.values().map(BTreeSet::len).sum::<usize>() > 300,
        "too few edges: the parser no longer reads the imports"
    );
    let faults = layering_faults(&mods, &study_folders(&src));
    assert!(
        faults.is_empty(),
        "the lab's module graph breaks its layering (core < studies < front, no cycles; see ARCHITECTURE.md):\n{}",
        faults.join("\n")
    );
}

#[test]
fn the_layering_check_fails_on_a_planted_back_edge_and_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let folders = study_folders(&src);
    // The core reaching up to the front.
    let mods = lab_modules(
        &src,
        &[("core/clock.rs", "use crate::front::catalog::all;")],
    );
    let faults = layering_faults(&mods, &folders);
    assert!(
        faults
            .iter()
            .any(|f| f.starts_with("core::clock -> front::catalog: imports a higher layer")),
        "{faults:?}"
    );
    assert!(
        faults.iter().any(|f| f.starts_with("a cycle")),
        "{faults:?}"
    );
    // One study reaching into another, through `super::` in a test module.
    let mods = lab_modules(
        &src,
        &[(
            "studies/spin/args.rs",
            "mod t { fn f() { super::super::super::hash::BENCH; } }",
        )],
    );
    let faults = layering_faults(&mods, &folders);
    assert!(
        faults
            .iter()
            .any(|f| f
                .starts_with("studies::spin::args::t -> studies::hash: one study imports another")),
        "{faults:?}"
    );
    // A cycle inside one study: a child naming its parent that names it.
    let mods = lab_modules(&src, &[("studies/spin/args.rs", "use super::command;")]);
    let faults = layering_faults(&mods, &folders);
    assert!(
        faults
            .iter()
            .any(|f| f.contains("studies::spin::args -> studies::spin")),
        "{faults:?}"
    );
}

#[test]
fn the_parser_reads_use_trees_and_skips_literals() {
    let m = modules_of(
        &vec!["core".into(), "x".into()],
        "use crate::a::{b, c::{d, e as f}, g::*};\n// crate::nope::in_comment\nlet s = \"crate::nope::in_string {\";\nfn h<'a>(c: char) { if c == '{' { super::y::z(); } }\nmod t { use super::*; }",
    );
    let paths: Vec<String> = m[0].paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "crate::a::g",
            "super::y::z"
        ]
    );
    assert_eq!(m[1].path, ["core", "x", "t"]);
    assert_eq!(m[1].paths, [vec!["super".to_string()]]);
}
