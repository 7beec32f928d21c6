//! `locklab torture`: many threads on non-atomic shadow data under each
//! lock, checking that it excludes and never hangs ([`runner`]); with
//! `--rcu`, RCU flavours tortured instead ([`crate::studies::torture::rcu`]).

pub mod args;
pub mod locks;
pub mod rcu;
pub mod runner;

use crate::core::error::{LabError, Result};
use crate::core::study::Ctx;

use crate::core::run::EXIT_INTERRUPTED;
use crate::{noteln, outln};
use args::TortureArgs;
use runner::TortureConfig;
use serde_json::json;

/// Whether `name` is an RCU flavour (for the message of a lock list that
/// names one).
fn is_flavour(name: &str) -> bool {
    rcu::find(name).is_some()
}

/// `torture`: each lock in turn, a row as it finishes (or JSON at the
/// end); exit 1 if any lock failed. With `--rcu`, the RCU torture.
pub fn command(ctx: &Ctx, a: &TortureArgs) -> Result<i32> {
    if a.rcu {
        return rcu::command::run(ctx, a);
    }
    let locks = locks::parse_torture_list(&a.locks, is_flavour)?;
    if let Some(p) = a.read_pct {
        if !locks.iter().any(|l| l.rw) {
            return Err(LabError::input(format!(
                "--read-pct {p} is for reader-writer locks, and --locks {} names none; \
                 add one (see `locklab locks`) or leave --read-pct out",
                a.locks
            )));
        }
    }
    let secs = a.secs.unwrap_or(1.0);
    let read_pct = a.read_pct.unwrap_or(80);
    let threads = a.threads.unwrap_or_else(|| {
        (4 * crate::core::machine::cpus()).min(crate::core::args::MAX_THREADS as usize) as u32
    });
    let cfg = TortureConfig {
        threads,
        secs,
        watchdog_s: a.watchdog,
        read_pct,
    };
    crate::core::interrupt::install();
    if !ctx.json {
        outln!(
            "torture: {threads} threads on {} cores, {}s per lock, watchdog {}s",
            crate::core::machine::cpus(),
            secs,
            a.watchdog
        )?;
        if locks.iter().any(|l| l.rw) {
            outln!(
                "reader-writer locks: {read_pct}% reads; READERS is the most seen inside together"
            )?;
        }
        outln!(
            "{:<15} {:>12} {:>10} {:>6} {:>7} {:>7} {:>7} {:>12}  RESULT",
            "LOCK",
            "ACQUIRES",
            "VIOLATIONS",
            "LOST",
            "READERS",
            "MIN%",
            "MAX%",
            "LONGEST WAIT"
        )?;
    }
    let mut reports = Vec::new();
    let mut all_ok = true;
    for e in &locks {
        if crate::core::interrupt::requested() {
            break;
        }
        let mut r = (e.run)(&cfg);
        r.lock = e.info.name.into();
        all_ok &= r.ok();
        if !ctx.json {
            let share = |x: u64| {
                if r.acquisitions == 0 {
                    0.0
                } else {
                    100.0 * x as f64 / r.acquisitions as f64
                }
            };
            let min = r.per_thread.iter().copied().min().unwrap_or(0);
            let max = r.per_thread.iter().copied().max().unwrap_or(0);
            let verdict = if r.hung {
                "HUNG".to_string()
            } else if r.ok() {
                "ok".to_string()
            } else {
                "VIOLATED".to_string()
            };
            let readers = if e.rw {
                r.max_readers.to_string()
            } else {
                "-".into()
            };
            outln!(
                "{:<15} {:>12} {:>10} {:>6} {:>7} {:>6.1}% {:>6.1}% {:>12}  {verdict}",
                r.lock,
                r.acquisitions,
                r.violations,
                r.lost_updates,
                readers,
                share(min),
                share(max),
                crate::core::report::fmt_ns(r.longest_wait_ns as f64),
            )?;
        }
        let hung = r.hung;
        reports.push(r);
        if hung {
            // Its threads are stuck for good; measuring more locks beside
            // them would only measure the stuck threads.
            break;
        }
    }
    let interrupted = crate::core::interrupt::requested();
    if ctx.json {
        let v = json!({ "threads": threads, "secs": secs, "ok": all_ok && !interrupted, "interrupted": interrupted, "results": reports });
        outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"))?;
    }
    if interrupted {
        noteln!("interrupted");
        return Ok(EXIT_INTERRUPTED);
    }
    if all_ok {
        Ok(0)
    } else {
        let bad: Vec<&str> = reports
            .iter()
            .filter(|r| !r.ok())
            .map(|r| r.lock.as_str())
            .collect();
        Err(LabError::failed(format!(
            "torture failed for: {}",
            bad.join(", ")
        )))
    }
}

impl crate::core::study::RunCommand for TortureArgs {
    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self).map(crate::core::study::Outcome::Exit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rcu_flavours_share_the_name_space_and_are_refused_as_locks() {
        for f in rcu::flavors() {
            assert!(
                crate::core::registry::all()
                    .iter()
                    .all(|e| e.info.name != f.name)
                    && crate::core::registry::rw_all()
                        .iter()
                        .all(|e| e.info.name != f.name),
                "{} is also a lock name",
                f.name
            );
            let e = locks::parse_torture_list(f.name, is_flavour)
                .err()
                .expect("not a lock");
            assert!(e.msg.contains("--rcu"), "{}", e.msg);
        }
        let all_rcu = rcu::parse_flavors("all", locks::is_lock).unwrap();
        let got: Vec<_> = all_rcu.iter().map(|f| f.name).collect();
        assert_eq!(
            got,
            ["rcu", "rcu-qsbr", "rcu-fenced"],
            "rcu-broken stays out of all"
        );
        assert_eq!(
            rcu::parse_flavors("rcu-broken,rcu", locks::is_lock)
                .unwrap()
                .len(),
            2
        );
    }
}
