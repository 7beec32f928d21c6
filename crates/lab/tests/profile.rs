//! `locklab profile`: a C program whose every lock does one known thing
//! (`tests/c/profile_prog.c`), counted through the interposer (built by
//! `cargo test --workspace` beside the binary), under the C library's
//! locks and under locklab's. Known answers: exact counts (acquisitions, a
//! recursive mutex counted once a turn, failed tries, shared acquisitions
//! that never wait because readers share, condition waits, a forked
//! child's own counts); a holder that sleeps 1 ms holds at least 1 ms and
//! its waiter waits about that; the holds of one lock, which never
//! overlap, add up to no more than the run; the first contended caller is
//! the function that asked. And bad input: one line, exit 2.

mod common;

use common::{assert_bad_input, compile_c, locklab, stdout, tmp};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The test program, compiled once.
fn program() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| compile_c("profile_prog"))
}

/// Profiles the program under `args`; its JSON and the addresses of its
/// locks by name.
fn profile(db: &Path, args: &[&str]) -> (Value, HashMap<String, String>) {
    let addrs = db.with_extension("addrs");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
    cmd.arg("--db")
        .arg(db)
        .arg("--json")
        .arg("profile")
        .arg("--hide-output")
        .args(args)
        .arg("--")
        .arg(program())
        .arg(&addrs);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let names = std::fs::read_to_string(&addrs)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, a) = l.split_once(' ').unwrap();
            // The C library prints pointers as 0x… without leading zeros,
            // as the lab stores them.
            (n.to_string(), a.to_string())
        })
        .collect();
    (v, names)
}

/// The counts of the object at `addr` in process `pid` (or the one
/// process other than `not`).
fn counts<'a>(v: &'a Value, addr: &str, pid: Option<u64>, not: Option<u64>) -> &'a Value {
    let p = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| {
            let at = p["params"]["process"]["pid"].as_u64();
            p["object"] == addr
                && pid.is_none_or(|x| at == Some(x))
                && not.is_none_or(|x| at != Some(x))
        })
        .unwrap_or_else(|| panic!("no object {addr} in {v}"));
    &p["repetitions"][0]["profile"]
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

fn check(args: &[&str]) {
    let (_d, db) = tmp();
    let (v, at) = profile(&db, args);
    // Two processes: the program and its forked child.
    let pids: Vec<u64> = {
        let mut p: Vec<u64> = v["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["params"]["process"]["pid"].as_u64().unwrap())
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    };
    assert_eq!(pids.len(), 2, "{v}");
    // The parent is the one with the hot lock.
    let hot_point = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["object"] == at["hot"])
        .unwrap();
    let parent = hot_point["params"]["process"]["pid"].as_u64().unwrap();
    let c = |name: &str| counts(&v, &at[name], Some(parent), None);

    let hot = c("hot");
    assert_eq!(u(hot, "acquisitions"), 40, "{hot}");
    assert_eq!(u(hot, "threads"), 2, "{hot}");
    assert!(u(hot, "contended") >= 10, "{hot}");
    // Every hold sleeps 1 ms: the mean hold is at least that.
    let hold_mean = u(hot, "hold_total_ns") as f64 / 40.0;
    assert!(hold_mean >= 1e6, "mean hold {hold_mean} ns: {hot}");
    // The holds never overlap, nor do B's waits: each together no longer
    // than the rounds took by the program's own clock (with room for the
    // sample's estimate of the holds).
    let rounds: f64 = at["hot_ns"].parse().unwrap();
    assert!(
        u(hot, "hold_total_ns") as f64 <= 1.25 * rounds,
        "holds {} ns in rounds of {rounds} ns: {hot}",
        u(hot, "hold_total_ns")
    );
    assert!(u(hot, "wait_total_ns") as f64 <= rounds, "{hot}");
    // B asks while A holds for 1 ms: it waits for a good part of that.
    let wait_mean = u(hot, "wait_total_ns") as f64 / u(hot, "contended") as f64;
    assert!(wait_mean >= 0.25e6, "mean wait {wait_mean} ns: {hot}");
    assert!(
        hot_point["caller"]
            .as_str()
            .unwrap()
            .starts_with("wait_for_hot+0x"),
        "{hot_point}"
    );
    assert!(hot_point["bench_spin"]
        .as_str()
        .unwrap()
        .starts_with("locklab bench spin --threads 2 --cs-ns "));

    let lone = c("lone");
    assert_eq!(
        (
            u(lone, "acquisitions"),
            u(lone, "contended"),
            u(lone, "threads")
        ),
        (10000, 0, 1),
        "{lone}"
    );
    assert_eq!(u(c("rec"), "acquisitions"), 100);
    let errchk = c("errchk");
    assert_eq!(
        (u(errchk, "acquisitions"), u(errchk, "contended")),
        (1, 0),
        "{errchk}"
    );
    let busy = c("busy");
    assert_eq!((u(busy, "acquisitions"), u(busy, "busy")), (1, 7), "{busy}");
    let rw = c("rw");
    assert_eq!(
        (
            u(rw, "reads"),
            u(rw, "read_contended"),
            u(rw, "acquisitions")
        ),
        (60, 0, 5),
        "{rw}"
    );
    assert_eq!(u(rw, "threads"), 4, "{rw}");
    let cvm = c("cvm");
    assert_eq!(
        (u(cvm, "cond_waits"), u(cvm, "acquisitions")),
        (10, 1),
        "{cvm}"
    );
    assert_eq!(u(c("spin"), "acquisitions"), 1000);

    // The child counts its own 5, not its parent's 10000.
    let child = counts(&v, &at["lone"], None, Some(parent));
    assert_eq!(u(child, "acquisitions"), 5, "{child}");

    // The text: the hot lock first, its caller named, the ready command.
    let o = locklab(&db, &["show", "last"]);
    let text = stdout(&o);
    let first_row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(first_row.contains(&at["hot"]), "{text}");
    assert!(first_row.contains("wait_for_hot+0x"), "{text}");
    assert!(text.contains("locklab bench spin --threads 2"), "{text}");
}

#[test]
fn known_answers_under_the_c_library() {
    check(&[]);
}

#[test]
fn known_answers_under_locklab_locks() {
    check(&["--lock", "mcs", "--rwlock", "rw-fair"]);
    // A lock that only spins takes the program's pthread spin locks too.
    check(&["--lock", "ttas", "--rwlock", "rwsem"]);
}

#[test]
fn bad_input_is_one_line() {
    let (_d, db) = tmp();
    let prog = program().to_str().unwrap().to_string();
    for (args, needle) in [
        (vec!["--lock", "nope", "--", &prog, "/dev/null"], "nope"),
        (
            vec!["--lock", "mcs,tas", "--", &prog, "/dev/null"],
            "one lock only",
        ),
        (
            vec!["--lock", "parking_lot", "--", &prog, "/dev/null"],
            "parking_lot",
        ),
        (
            vec!["--rwlock", "nope", "--", &prog, "/dev/null"],
            "--rwlock nope",
        ),
        (vec!["--top", "0", "--", &prog, "/dev/null"], "'0'"),
        (vec!["--", "/nonexistent/program"], "no such program"),
        // Killed before it could write its counts.
        (vec!["--", "sh", "-c", "kill -KILL $$"], "wrote no profile"),
    ] {
        let mut all = vec!["profile"];
        all.extend(args.iter().copied());
        let o = locklab(&db, &all);
        assert_bad_input(&o, needle);
    }
    let o = locklab(&db, &["runs"]);
    assert!(stdout(&o).contains("no runs"), "{}", stdout(&o));
}

/// A program with one contended mutex, taken by a function that is not
/// exported (`static`), right after an exported function the ELF gives no
/// size (assembly without `.size`): in the stripped program the nearest
/// dynamic symbol before the caller is that one, and it covers nothing.
const UNCOVERED_C: &str = r#"
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t go;

__asm__(".text\n.globl zero_size_sym\n.type zero_size_sym,@function\nzero_size_sym:\n ret\n");

static __attribute__((noinline)) void hidden_caller(void) {
    for (int i = 0; i < 20; i++) {
        pthread_mutex_lock(&m);
        usleep(1000);
        pthread_mutex_unlock(&m);
    }
}

static void *worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&go);
    hidden_caller();
    return NULL;
}

int main(void) {
    pthread_t t[2];
    pthread_barrier_init(&go, NULL, 2);
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
"#;

/// The contended lock's first caller in `locklab profile -- prog`.
fn first_caller(prog: &Path) -> String {
    let (_d, db) = tmp();
    let p = prog.to_str().unwrap();
    let o = locklab(&db, &["--json", "profile", "--hide-output", "--", p]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p["caller"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no caller in {v}"))
}

/// The start of the function `name` in the ELF `path`'s symbols (its
/// `.symtab` or dynamic ones).
fn symbol_start(path: &Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no {name} in {}", path.display()))
        .address()
}

/// Callers named only by a symbol that covers them: in the stripped
/// program, the caller in a function without a name is `prog+0xOFFSET`
/// (the same address the unstripped program names `hidden_caller+…`), not
/// the zero-size symbol before it.
#[test]
fn a_stripped_program_names_an_uncovered_caller_by_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("prog.c");
    std::fs::write(&src, UNCOVERED_C).unwrap();
    let (full, stripped) = (d.path().join("full"), d.path().join("stripped"));
    std::fs::create_dir_all(&full).unwrap();
    std::fs::create_dir_all(&stripped).unwrap();
    let (full, stripped) = (full.join("prog"), stripped.join("prog"));
    // A position-independent program (the toolchain's default) exporting
    // its global symbols; assembly and functions kept in source order.
    let o = Command::new("cc")
        .args([
            "-O1",
            "-pthread",
            "-rdynamic",
            "-fno-toplevel-reorder",
            "-o",
        ])
        .arg(&full)
        .arg(&src)
        .output()
        .expect("a C compiler, `cc`, on PATH");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&full)
        .output()
        .expect("`strip` on PATH");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // What the test rests on: the exported symbol of size 0 lies just
    // before the function that is not exported.
    let zero = symbol_start(&stripped, "zero_size_sym");
    let hidden = symbol_start(&full, "hidden_caller");
    assert!(zero < hidden && hidden - zero < 64, "{zero:#x} {hidden:#x}");

    let named = first_caller(&full);
    let off = named
        .strip_prefix("hidden_caller+")
        .and_then(|r| r.strip_suffix(" (prog)"))
        .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| panic!("unstripped caller {named:?}"));
    let bare = first_caller(&stripped);
    assert_eq!(bare, format!("prog+{:#x}", hidden + off), "stripped caller");
}

#[test]
fn unlocks_of_a_mutex_nobody_holds_are_refused_and_reported() {
    let prog = compile_c("misuse_prog");
    let (_d, db) = tmp();
    let run = |json: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locklab"));
        cmd.arg("--db").arg(&db);
        if json {
            cmd.arg("--json");
        }
        cmd.args(["profile", "--lock", "mcs"]);
        if json {
            cmd.arg("--hide-output");
        }
        cmd.args(["--", prog.to_str().unwrap()]);
        cmd.output().unwrap()
    };
    let o = run(true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let misuse: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["params"]["process"]["misuse"].as_u64().expect("misuse"))
        .collect();
    assert!(
        !misuse.is_empty() && misuse.iter().all(|&m| m == 3),
        "{misuse:?}"
    );
    let o = run(false);
    let text = stdout(&o);
    // The program saw its three unlocks refused, and the report says so.
    assert!(text.contains("refused 3"), "{text}");
    assert!(
        text.contains("note: 3 unlocks of a default mutex that the caller did not hold"),
        "{text}"
    );
}
