//! The flat-combining mutex (`combining`, a delegation lock) in the lab:
//! measured by `bench spin` beside the locks, with every acquisition
//! counted for the thread that asked and the work still mutually
//! exclusive; accepted by every command that can run a critical section
//! through it, and refused in one line by those that need a lock and an
//! unlock (the interposer, the emulated kernel's big lock).
//!
//! The contention runs go one at a time (the `SERIAL` lock): two of them
//! sharing two cores would measure each other.

mod common;

use common::{assert_bad_input, assert_rejected, locklab, stderr, stdout, tmp};
use locklab_lab::core::lablock::{Combining, LabMutex};
use locklab_lab::studies::shared::contention::runner::{self as spin, SpinConfig};
use locklab_lab::studies::shared::contention::workload::DelayDist;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn cfg(secs: f64) -> SpinConfig {
    SpinConfig {
        cs_ns: 100,
        cs_lines: 2,
        delay_ns: 200,
        delay_dist: DelayDist::Exp,
        secs,
        pin: false,
        stall_every: 0,
        stall_ns: 0,
        topology: None,
    }
}

/// `bench spin --locks combining,mcs` stores both: under combining every
/// thread's requests count for that thread (the per-thread counts add up
/// to the total, and with no more threads than cores each thread got
/// some: its requests are served by the tenure running when it publishes
/// or the next; beyond the cores a thread may miss the window, and beyond
/// the mutex's slots it competes for the lock word, which is not fair),
/// and the run ends with exit 0,
/// which it does only when the lines every critical section writes (a
/// plain load and store each, so overlapping sections lose updates)
/// counted every section that ran: the combiner ran the others' sections
/// one at a time. More threads than the cores, and than the mutex's
/// publication slots, included.
#[test]
fn bench_spin_counts_each_request_for_its_thread_and_keeps_the_work_exclusive() {
    let _s = serial();
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "spin",
            "--locks",
            "combining,mcs",
            "--threads",
            "1,2,20",
            "--cs-lines",
            "2",
            "--secs",
            "0.1",
            "--reps",
            "2",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = locklab(&db, &["show", "last", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6, "{v}");
    let cores = locklab_lab::core::machine::cpus();
    let mut seen = 0;
    for p in points.iter().filter(|p| p["lock"] == "combining") {
        seen += 1;
        let threads = p["threads"].as_u64().unwrap() as usize;
        for r in p["repetitions"].as_array().unwrap() {
            let per: Vec<u64> = r["thread_ops"]
                .as_array()
                .unwrap_or_else(|| panic!("no thread_ops in {r}"))
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            assert_eq!(per.len(), threads, "{r}");
            assert_eq!(per.iter().sum::<u64>(), r["total_ops"].as_u64().unwrap());
            assert!(
                threads > cores || per.iter().all(|&n| n > 0),
                "{threads} threads: a thread's requests were not counted for it: {per:?}"
            );
        }
    }
    assert_eq!(seen, 3);
}

/// A "mutex" that runs every section at once on the caller's thread,
/// excluding nothing: the contention runner must refuse its repetition,
/// since the shared lines did not count every section.
struct ExcludesNothing;

impl LabMutex for ExcludesNothing {
    const DELEGATES: bool = false;

    fn new() -> Self {
        ExcludesNothing
    }

    fn execute<R: Send>(&self, cs: impl FnOnce() -> R + Send) -> R {
        cs()
    }
}

#[test]
fn overlapping_sections_fail_the_repetition() {
    let _s = serial();
    // Overlapping sections lose updates only where they run side by side:
    // on x86 a line's load and store compile to one (unlocked) add, which
    // a preemption on one core cannot split.
    let cpus = locklab_lab::core::machine::cpus();
    if cpus < 2 {
        eprintln!("note: skipped: one CPU runs no two sections side by side");
        return;
    }
    // Two threads a core, and a section that is nothing but the touches
    // of many lines, so that two running at once overlap all the time. A
    // machine busy with other work may still run them one at a time for a
    // whole repetition: up to ten are given to meet.
    let threads = 2 * cpus as u32;
    let c = SpinConfig {
        cs_ns: 0,
        cs_lines: 64,
        delay_ns: 0,
        ..cfg(0.2)
    };
    let mut reps = Vec::new();
    let caught = (0..10).find_map(|_| match spin::run_rep::<ExcludesNothing>(&c, threads) {
        Ok(r) => {
            reps.push(r.total_ops);
            None
        }
        Err(e) => Some(e),
    });
    let e = caught.unwrap_or_else(|| {
        panic!("ten repetitions of sections that exclude nothing passed: {reps:?} sections")
    });
    assert!(e.contains("overlapped"), "{e}");
    spin::run_rep::<Combining>(&c, threads).expect("combining excludes");
}

/// Every command that times a critical section runs `combining`:
/// uncontended (one thread combining its own requests), advise (as a
/// candidate, through the contention sweep), torture (the non-atomic
/// shadow data checked by whichever thread combines), and `bench hash
/// --strategies combining`, the whole table behind one combining mutex
/// beside the big spin lock.
#[test]
fn uncontended_advise_torture_and_hash_run_it() {
    let _s = serial();
    let (_d, db) = tmp();
    let quick = ["--secs", "0.05", "--reps", "1", "--quiet"];
    let mut unc = vec!["bench", "uncontended", "--locks", "combining"];
    unc.extend(quick);
    let o = locklab(&db, &unc);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = locklab(
        &db,
        &[
            "advise",
            "--threads",
            "2",
            "--locks",
            "combining,ticket",
            "--secs",
            "0.05",
            "--reps",
            "2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let named = v.to_string();
    assert!(
        named.contains("combining"),
        "advise measured no combining: {v}"
    );

    let o = locklab(
        &db,
        &[
            "torture",
            "--locks",
            "combining",
            "--threads",
            "8",
            "--secs",
            "0.3",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("combining"), "{}", stdout(&o));

    let mut hash = vec![
        "bench",
        "hash",
        "--strategies",
        "combining,global-spin",
        "--threads",
        "1,3",
        "--update-pct",
        "0,50",
    ];
    hash.extend(quick);
    let o = locklab(&db, &hash);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = locklab(&db, &["show", "last", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    let combining: Vec<_> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["lock"] == "combining")
        .collect();
    assert_eq!(combining.len(), 4, "{v}");
    for p in combining {
        assert!(
            p["repetitions"][0]["total_ops"].as_u64().unwrap() > 0,
            "{p}"
        );
    }
    // The strategy is named as the lock is, yet the report draws the hash
    // study's own chart (against the update fraction), not the chart of
    // locks by family.
    let only = vec![
        "bench",
        "hash",
        "--strategies",
        "combining",
        "--threads",
        "1,2",
        "--update-pct",
        "0,50",
        "--secs",
        "0.05",
        "--reps",
        "1",
        "--quiet",
    ];
    assert_eq!(locklab(&db, &only).status.code(), Some(0));
    let html = db.with_extension("html");
    let o = locklab(&db, &["report", "last", "--out", html.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("class=\"embedded\""),
        "no hash chart in the report"
    );
    assert!(
        !page.contains("one chart per lock family"),
        "a hash run drawn as locks"
    );
}

/// `locklab locks` lists it as the library describes it; the interposer
/// (`run`, `profile`) and the emulated kernel's big lock (`ipc`, `kv`)
/// refuse it in one line that says why and what is allowed.
#[test]
fn it_is_listed_and_refused_where_there_is_no_lock_and_unlock() {
    let (_d, db) = tmp();
    let o = locklab(&db, &["locks", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let c = v["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "combining")
        .unwrap_or_else(|| panic!("combining not listed: {v}"));
    assert_eq!(c["kind"], "mutex");
    assert_eq!(c["family"], "delegation");
    assert_eq!(
        (c["fair"].as_bool(), c["blocking"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(c["peer"], false);
    assert!(c["source"].as_str().unwrap().contains("Hendler"), "{c}");
    assert!(c["source"].as_str().unwrap().contains("SPAA 2010"), "{c}");

    for args in [
        &["run", "--locks", "combining", "--", "true"][..],
        &["run", "--locks", "mcs, combining", "--", "true"][..],
    ] {
        let o = locklab(&db, args);
        assert_bad_input(&o, "--locks");
        let err = stderr(&o);
        assert!(
            err.contains("combining is a delegation lock")
                && err.contains("allowed: ")
                && err.contains("mcs")
                && err.contains("pthread"),
            "{err}"
        );
        assert!(!err.contains("allowed: all"), "{err}");
    }
    let o = locklab(&db, &["profile", "--lock", "combining", "--", "true"]);
    assert_bad_input(&o, "--lock combining: combining is a delegation lock");
    for bench in ["ipc", "kv"] {
        assert_rejected(
            &db,
            &["bench", bench, "--variants", "bkl(combining)"],
            "combining is a delegation lock",
        );
    }
    // The default lock list of `run` leaves it out rather than failing.
    let mine: Vec<_> = locklab_lab::core::program::chosen_locks(None).unwrap();
    assert!(
        !mine.contains(&"combining") && mine.contains(&"mcs"),
        "{mine:?}"
    );
    assert!(!db.exists(), "a refused command made the database");
}
