//! `locklab torture --rcu`: each flavour in turn, its report as it
//! finishes, then a summary.

use crate::core::error::{LabError, Result};
use crate::core::run::EXIT_INTERRUPTED;
use crate::core::study::Ctx;
use crate::studies::torture::args::TortureArgs;
use crate::{noteln, outln};
use serde_json::json;

/// `torture --rcu`: each flavour in turn, its report as it finishes, then
/// a summary; exit 1 if any check failed in any flavour.
pub fn run(ctx: &Ctx, a: &TortureArgs) -> Result<i32> {
    use super::state::{RcuTortureConfig, SYNCERS};
    if a.read_pct.is_some() {
        return Err(LabError::input(
            "--read-pct is for reader-writer locks; RCU readers never exclude anyone, so --rcu does not take it",
        ));
    }
    let flavors = super::parse_flavors(&a.locks, crate::studies::torture::locks::is_lock)?;
    let readers = a.threads.unwrap_or_else(|| {
        (2 * crate::core::machine::cpus()).min(crate::core::args::MAX_THREADS as usize) as u32
    });
    let secs = a.secs.unwrap_or(5.0);
    let cfg = RcuTortureConfig::new(readers, secs, a.watchdog);
    crate::core::interrupt::install();
    if !ctx.json {
        outln!(
            "rcu torture: {readers} readers, 1 writer, {SYNCERS} synchronize threads, 1 callback flood, \
             1 hash-map updater on {} cores; {secs}s per flavour, watchdog {}s, max_pending {}",
            crate::core::machine::cpus(),
            a.watchdog,
            cfg.max_pending
        )?;
        outln!(
            "The Reader Pipe histogram counts read-side sections by the pipeline count of their element at their end \
             (0 published, 1 removed, +1 per grace period since); anything past the second column is a too-short grace period"
        )?;
    }
    let mut reports = Vec::new();
    for f in &flavors {
        if crate::core::interrupt::requested() {
            break;
        }
        let r = (f.run)(&cfg);
        if !ctx.json {
            crate::core::out::print(&r.text())?;
        }
        let hung = r.hung.is_some();
        reports.push(r);
        if hung {
            // Its threads are stuck for good; more runs beside them would
            // only measure the stuck threads.
            break;
        }
    }
    let interrupted = crate::core::interrupt::requested();
    let all_ok = reports.iter().all(|r| r.ok());
    if ctx.json {
        let v = json!({ "readers": readers, "secs": secs, "config": cfg, "ok": all_ok && !interrupted,
                        "interrupted": interrupted, "results": reports });
        outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"))?;
    } else {
        outln!(
            "{:<12} {:>12} {:>10} {:>10} {:>8} {:>8}  RESULT",
            "FLAVOUR",
            "READS",
            "UPDATES",
            "GPS",
            "PIPE>1",
            "POISONED"
        )?;
        for r in &reports {
            let verdict = match (&r.hung, r.ok()) {
                (Some(_), _) => "HUNG",
                (None, true) => "ok",
                (None, false) => "FAILED",
            };
            outln!(
                "{:<12} {:>12} {:>10} {:>10} {:>8} {:>8}  {verdict}",
                r.flavor,
                r.reads,
                r.writes,
                r.grace_periods,
                r.too_short,
                r.poisoned
            )?;
        }
    }
    if interrupted {
        noteln!("interrupted");
        return Ok(EXIT_INTERRUPTED);
    }
    if all_ok {
        return Ok(0);
    }
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| !r.ok())
        .map(|r| format!("{} ({})", r.flavor, r.failures().join("; ")))
        .collect();
    Err(LabError::failed(format!(
        "rcu torture failed for: {}",
        bad.join(", ")
    )))
}
