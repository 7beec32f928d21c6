//! What each CLI command does, over the lab's library parts.

use crate::bench::hash::{self, strategies, HashConfig};
use crate::bench::{
    self, spin::SpinConfig, uncontended, workload::DelayDist, HashPlan, Progress, SpinPlan,
    UncontendedPlan,
};
use crate::cli::{
    BenchKind, Cli, Cmd, HashArgs, IpcArgs, LhpArgs, RunRef, SimKind, SpinArgs, TortureArgs,
    UncontendedArgs, Workload,
};
use crate::error::{LabError, Result};
use crate::registry::{self, Entry};
use crate::results::RunMeta;
use crate::store::Store;
use crate::torture::TortureConfig;
use crate::{machine, noteln, outln, plot, report};
use serde_json::json;

/// Exit code when the user interrupted a run (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli, argv: &[String]) -> Result<i32> {
    match &cli.cmd {
        Cmd::Bench(b) => match &b.kind {
            None => bench_suite(&cli, argv),
            Some(BenchKind::Spin(a)) => bench_spin(&cli, argv, a),
            Some(BenchKind::Uncontended(a)) => bench_uncontended(&cli, argv, a),
            Some(BenchKind::Lhp(a)) => bench_lhp(&cli, argv, a),
            Some(BenchKind::Hash(a)) => bench_hash(&cli, argv, a),
            Some(BenchKind::Ipc(a)) => bench_ipc(&cli, argv, a),
        },
        Cmd::Torture(a) => torture(&cli, a),
        Cmd::Model(a) => crate::model::run(&cli, a),
        Cmd::Sim(s) => match &s.kind {
            SimKind::Lhp(a) => crate::sim::run(&cli, argv, a),
        },
        Cmd::Locks => {
            locks(cli.json)?;
            Ok(0)
        }
        Cmd::Runs => {
            // Nothing stored yet is an empty list, and creates nothing.
            let runs = match Store::open_existing(&cli.db)? {
                Some(store) => store.runs()?,
                None => Vec::new(),
            };
            if cli.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "runs": runs })).expect("serialises")
                )?;
            } else {
                crate::out::print(&report::runs_text(&runs))?;
            }
            Ok(0)
        }
        Cmd::Show { run } => {
            let store = Store::open_read_only(&cli.db)?;
            let (meta, points) = store.load(resolve(&store, *run)?)?;
            if cli.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&report::run_json(&meta, &points))
                        .expect("serialises")
                )?;
            } else {
                crate::out::print(&report::render_text(&meta, &points))?;
            }
            Ok(0)
        }
        Cmd::Plot {
            run,
            out,
            log,
            bench,
        } => {
            if cli.json {
                return Err(LabError::input(
                    "--json: plot writes an SVG file (--out) and prints no table; leave --json out",
                ));
            }
            plot::check_out(out, &cli.db)?;
            let store = Store::open_read_only(&cli.db)?;
            let (meta, points) = store.load(resolve(&store, *run)?)?;
            plot::plot_throughput(&meta, &points, bench.as_deref(), out, *log)?;
            noteln!("wrote {}", out.display());
            Ok(0)
        }
    }
}

/// The id of a run named on the command line (`last`: the newest).
pub(crate) fn resolve(store: &Store, run: RunRef) -> Result<i64> {
    match run {
        RunRef::Id(id) => Ok(id),
        RunRef::Last => store
            .runs()?
            .first()
            .and_then(|r| r.meta.id)
            .ok_or_else(|| {
                LabError::input(format!("{}: no runs stored yet", store.path().display()))
            }),
    }
}

fn locks(as_json: bool) -> Result<()> {
    let mutexes: Vec<_> = registry::all().iter().map(|e| (e.info, e.peer)).collect();
    let rwlocks: Vec<_> = registry::rw_all()
        .iter()
        .map(|e| (e.info, e.peer))
        .collect();
    if as_json {
        let row = |kind: &str, (i, peer): &(locklab::LockInfo, bool)| {
            json!({
                "name": i.name, "kind": kind, "family": i.family.as_str(), "fair": i.fair,
                "blocking": i.blocking, "peer": peer, "source": i.source,
                "summary": i.summary,
            })
        };
        let v: Vec<_> = mutexes
            .iter()
            .map(|e| row("mutex", e))
            .chain(rwlocks.iter().map(|e| row("rwlock", e)))
            .collect();
        return outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "locks": v })).expect("serialises")
        );
    }
    let w = mutexes
        .iter()
        .chain(&rwlocks)
        .map(|(i, _)| i.name.len())
        .max()
        .unwrap_or(4);
    for (title, list) in [("MUTEX", &mutexes), ("READER-WRITER LOCK", &rwlocks)] {
        if title != "MUTEX" {
            outln!()?;
        }
        outln!(
            "{:<w$} {:<9} {:<5} {:<9} WHAT",
            title,
            "FAMILY",
            "FAIR",
            "BLOCKING"
        )?;
        for (i, peer) in list.iter() {
            let kind = if *peer { " (peer)" } else { "" };
            outln!(
                "{:<w$} {:<9} {:<5} {:<9} {}{kind}",
                i.name,
                i.family.as_str(),
                if i.fair { "yes" } else { "no" },
                if i.blocking { "yes" } else { "no" },
                i.summary,
            )?;
        }
    }
    Ok(())
}

/// Whether progress stays off stderr: `--quiet`, or `--json` (whose
/// callers read stdout and may log stderr).
pub(crate) fn progress_quiet(cli: &Cli) -> bool {
    cli.json || cli.quiet
}

/// Opens the store, records the run, runs `body` with a sink that stores
/// each point in its own transaction, then clears `progress` and prints the
/// stored run.
pub(crate) fn stored_run(
    cli: &Cli,
    argv: &[String],
    kind: &str,
    params: serde_json::Value,
    progress: &Progress,
    body: impl FnOnce(&mut dyn FnMut(crate::results::Point) -> Result<()>) -> Result<bool>,
) -> Result<i32> {
    // Open (and validate) the database before measuring anything.
    let mut store = Store::open(&cli.db)?;
    crate::interrupt::install();
    let meta = RunMeta {
        id: None,
        kind: kind.into(),
        // The program as the user knows it, not the path cargo built it at.
        command: std::iter::once("locklab")
            .chain(argv.iter().skip(1).map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        params,
        machine: machine::detect(),
        started: machine::now_rfc3339(),
        finished: None,
        complete: false,
    };
    let id = store.begin_run(&meta)?;
    let mut stored = 0usize;
    let complete = {
        let mut sink = |p: crate::results::Point| -> Result<()> {
            store.add_point(id, &p)?;
            stored += 1;
            Ok(())
        };
        body(&mut sink)?
    };
    if complete {
        store.finish_run(id)?;
    }
    // The bar goes before the report, so that it does not cut into it.
    progress.finish();
    let (meta, points) = store.load(id)?;
    if cli.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report::run_json(&meta, &points)).expect("serialises")
        )?;
    } else {
        crate::out::print(&report::render_text(&meta, &points))?;
    }
    if complete {
        noteln!("stored as run {id} in {}", cli.db.display());
        Ok(0)
    } else {
        noteln!(
            "interrupted: {stored} finished points kept in run {id} ({}), marked incomplete",
            cli.db.display()
        );
        Ok(EXIT_INTERRUPTED)
    }
}

/// How long a stalled holder blocks unless `--stall-ns` says otherwise.
const DEFAULT_STALL_NS: u64 = 50_000;

/// The stall of the workload: `--stall-ns` only means something with
/// `--stall-every`, and is refused without it rather than ignored.
fn stall(every: u64, ns: Option<u64>) -> Result<(u64, u64)> {
    match (every, ns) {
        (0, Some(_)) => Err(LabError::input(
            "--stall-ns needs --stall-every N (stall every N acquisitions of each thread)",
        )),
        (0, None) => Ok((0, 0)),
        (n, ns) => Ok((n, ns.unwrap_or(DEFAULT_STALL_NS))),
    }
}

/// The contention workload of `bench spin` and `bench lhp`. A delay
/// distribution without a delay to draw is refused rather than ignored.
fn spin_cfg(w: &Workload, delay_ns: u64, secs: f64) -> Result<SpinConfig> {
    let (stall_every, stall_ns) = stall(w.stall_every, w.stall_ns)?;
    if let (0, Some(d)) = (delay_ns, w.delay_dist) {
        return Err(LabError::input(format!(
            "--delay-dist {}: there is no delay to draw at --delay-ns 0; give --delay-ns N (more than 0) \
             or leave --delay-dist out",
            d.as_str()
        )));
    }
    Ok(SpinConfig {
        cs_ns: w.cs_ns,
        cs_lines: w.cs_lines,
        delay_ns,
        delay_dist: w.delay_dist.unwrap_or(DelayDist::Exp),
        secs,
        pin: w.pin,
        stall_every,
        stall_ns,
    })
}

fn names(locks: &[&Entry]) -> Vec<&'static str> {
    locks.iter().map(|e| e.info.name).collect()
}

fn bench_spin(cli: &Cli, argv: &[String], a: &SpinArgs) -> Result<i32> {
    let plan = SpinPlan {
        bench: "spin",
        locks: registry::parse_list(&a.locks)?,
        threads: a.threads.0.clone(),
        reps: a.reps,
        cfg: spin_cfg(&a.work, a.delay_ns, a.secs)?,
    };
    let params = json!({ "locks": names(&plan.locks), "threads": plan.threads, "reps": plan.reps, "spin": plan.cfg });
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, "bench spin", params, &progress, |sink| {
        bench::run_spin(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The thread counts of `bench lhp`: one thread (the rate every
/// oversubscribed point is compared with), then the multiples of this
/// machine's cores; an input error names the first multiple that exceeds
/// the thread limit.
fn lhp_threads(multiples: &[u32]) -> Result<Vec<u32>> {
    let cores = bench::spin::cores() as u32;
    let mut threads = vec![1];
    for &m in multiples {
        let t = m * cores;
        if t > crate::cli::MAX_THREADS {
            return Err(LabError::input(format!(
                "--multiples {m}: {m} × {cores} cores = {t} threads; allowed up to {} threads",
                crate::cli::MAX_THREADS
            )));
        }
        if !threads.contains(&t) {
            threads.push(t);
        }
    }
    Ok(threads)
}

fn bench_lhp(cli: &Cli, argv: &[String], a: &LhpArgs) -> Result<i32> {
    let plan = SpinPlan {
        bench: "lhp",
        locks: registry::parse_list(&a.locks)?,
        threads: lhp_threads(&a.multiples.0)?,
        reps: a.reps,
        cfg: spin_cfg(&a.work, a.delay_ns, a.secs)?,
    };
    let params = json!({ "locks": names(&plan.locks), "threads": plan.threads, "reps": plan.reps, "lhp": plan.cfg });
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, "bench lhp", params, &progress, |sink| {
        bench::run_spin(&plan, &progress, sink)
    });
    progress.finish();
    r
}

fn bench_uncontended(cli: &Cli, argv: &[String], a: &UncontendedArgs) -> Result<i32> {
    let plan = UncontendedPlan {
        locks: registry::parse_list(&a.locks)?,
        reps: a.reps,
        cfg: uncontended::Config { secs: a.secs },
    };
    let params = json!({ "locks": names(&plan.locks), "reps": plan.reps, "uncontended": plan.cfg });
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, "bench uncontended", params, &progress, |sink| {
        bench::run_uncontended(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The table's keys from `--buckets`, `--keys` and `--chain`: the one of
/// keys and chain not given follows from the other (keys = buckets ×
/// chain; one element per bucket when neither is given); both given must
/// agree.
fn hash_keys(buckets: u64, keys: Option<u64>, chain: Option<u64>) -> Result<u64> {
    let max = hash::MAX_KEYS;
    let keys = match (keys, chain) {
        (Some(k), None) => k,
        (k, c) => {
            let c = c.unwrap_or(1);
            let product = buckets.saturating_mul(c);
            if let Some(k) = k.filter(|&k| k != product) {
                return Err(LabError::input(format!(
                    "--keys {k} disagrees with --buckets {buckets} × --chain {c} = {product}; \
                     give two of the three, or all three with keys = buckets × chain"
                )));
            }
            if product > max {
                return Err(LabError::input(format!(
                    "--buckets {buckets} × --chain {c} = {product} keys: allowed up to {max}"
                )));
            }
            product
        }
    };
    Ok(keys)
}

fn bench_hash(cli: &Cli, argv: &[String], a: &HashArgs) -> Result<i32> {
    let strategies = strategies::parse(&a.strategies)?;
    let keys = hash_keys(a.buckets, a.keys, a.chain)?;
    let plan = HashPlan {
        strategies,
        threads: a.threads.0.clone(),
        update_pcts: a.update_pct.0.clone(),
        reps: a.reps,
        cfg: HashConfig::new(a.buckets as usize, keys, a.secs, a.pin),
    };
    run_hash_plan(cli, argv, "bench hash", &plan)
}

/// Says where the read-only strategy is left out, then measures and stores.
fn run_hash_plan(cli: &Cli, argv: &[String], kind: &str, plan: &HashPlan) -> Result<i32> {
    if plan.units() == 0 {
        return Err(LabError::input(
            "nothing to measure: the only strategy chosen is `none`, which runs at 0 % updates only; \
             add 0 to --update-pct or choose other strategies",
        ));
    }
    let skipped: Vec<String> = plan
        .update_pcts
        .iter()
        .filter(|&&u| u > 0)
        .map(|u| format!("{u} %"))
        .collect();
    for s in plan.strategies.iter().filter(|s| s.read_only) {
        if !skipped.is_empty() {
            noteln!(
                "note: {} is unsynchronized and runs at 0 % updates only; skipped at {}",
                s.name,
                skipped.join(", ")
            );
        }
    }
    let names: Vec<&str> = plan.strategies.iter().map(|s| s.name.as_str()).collect();
    let params = json!({
        "strategies": names, "threads": plan.threads, "update_pcts": plan.update_pcts,
        "reps": plan.reps, "hash": plan.cfg,
    });
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, kind, params, &progress, |sink| {
        bench::run_hash(plan, &progress, sink)
    });
    progress.finish();
    r
}

fn bench_ipc(cli: &Cli, argv: &[String], a: &IpcArgs) -> Result<i32> {
    use crate::bench::ipc;
    let explicit = a.variants.is_some();
    let mut variants = ipc::parse_variants(a.variants.as_deref().unwrap_or("all"))?;
    let rtm = locklab_kernel::cc::rtm_available();
    if !rtm {
        if explicit && !a.allow_fallback {
            if let Some(v) = variants.iter().find(|v| v.elides) {
                return Err(LabError::input(format!(
                    "{}: this CPU has no RTM (Intel TSX restricted transactional memory), so \
                     nothing can be elided; --allow-fallback runs it anyway on its fall-back \
                     lock path (the big lock plus the elision wrapper's checks)",
                    v.name
                )));
            }
        }
        if !explicit && !a.allow_fallback {
            variants.retain(|v| !v.elides);
            noteln!(
                "note: elide left out: this CPU has no RTM (--variants elide --allow-fallback runs its fall-back path)"
            );
        }
    }
    ipc_options_used(a, &variants)?;
    let ncpu = crate::bench::spin::cores() as u32;
    let cores = match &a.cores {
        Some(c) => c.0.clone(),
        None => (1..=ncpu.clamp(1, crate::cli::MAX_CORES)).collect(),
    };
    let plan = bench::IpcPlan {
        variants,
        modes: a.modes.0.clone(),
        cores,
        delays_ns: a
            .delay_ns
            .as_ref()
            .map_or_else(|| DEFAULT_IPC_DELAYS_NS.to_vec(), |d| d.0.clone()),
        reps: a.reps,
        cfg: ipc::IpcConfig {
            secs: a.secs,
            switch_ns: a.switch_ns,
            switch_inside: a.switch_inside,
            pin: a.pin,
        },
    };
    if plan.units() == 0 {
        return Err(LabError::input(
            "nothing to measure: `none` is the only variant, and the only measurement is `shared`, \
             where cores share an endpoint that `none` cannot protect",
        ));
    }
    let over: Vec<u32> = plan.cores.iter().copied().filter(|&c| c > ncpu).collect();
    if !over.is_empty() && plan.modes.iter().any(|m| *m != ipc::Mode::Single) {
        noteln!(
            "note: {over:?} emulated cores on {ncpu} CPUs: a core that loses its CPU inside the kernel \
             stalls every core spinning on its lock, so those points measure the host's scheduler"
        );
    }
    if plan.variants.iter().any(|v| v.elides) && !rtm {
        noteln!(
            "note: this CPU has no RTM: the elide variants run their fall-back path on every kernel entry"
        );
    }
    let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
    let modes: Vec<&str> = plan.modes.iter().map(|m| m.name()).collect();
    let params = json!({
        "variants": names, "modes": modes, "cores": plan.cores, "delays_ns": plan.delays_ns,
        "reps": plan.reps, "ipc": plan.cfg, "rtm": rtm,
    });
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, "bench ipc", params, &progress, |sink| {
        bench::run_ipc(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The server delays `bench ipc` sweeps unless `--delay-ns` says otherwise.
const DEFAULT_IPC_DELAYS_NS: [u64; 4] = [0, 250, 1000, 4000];

/// Refuses the `bench ipc` options that the chosen measurements and
/// variants would ignore.
fn ipc_options_used(a: &IpcArgs, variants: &[crate::bench::ipc::IpcVariant]) -> Result<()> {
    use crate::bench::ipc::Mode;
    let modes = &a.modes.0;
    let only_single = modes.iter().all(|m| *m == Mode::Single);
    if only_single && a.cores.is_some() {
        return Err(LabError::input(
            "--cores: the only measurement is single (one-way IPC on one core); \
             --cores is for multi, shared and hold",
        ));
    }
    if let Some(d) = &a.delay_ns {
        if only_single {
            return Err(LabError::input(
                "--delay-ns: the only measurement is single, which has no server delay; \
                 --delay-ns is for multi (every delay), shared and hold (the first)",
            ));
        }
        if d.0.len() > 1 && !modes.contains(&Mode::Multi) {
            return Err(LabError::input(format!(
                "--delay-ns lists {} delays, but only multi sweeps them (shared and hold use \
                 one); give one delay or add multi to --modes",
                d.0.len()
            )));
        }
    }
    if a.allow_fallback && a.variants.is_some() && !variants.iter().any(|v| v.elides) {
        return Err(LabError::input(
            "--allow-fallback is for the elide variants, and --variants names none",
        ));
    }
    Ok(())
}

/// The standard quick suite: uncontended; spin at 1, 2 and 8 threads (cs
/// 100 ns on one shared line, exponential delay with mean 200 ns); and the
/// lock-holder-preemption sweep at one thread and 1, 2, 4 and 8 × the cores
/// (cs 100 ns, no delay). Every lock, adapter and peer, three repetitions each.
/// Then a short hash-table study (seed 003): every strategy of `bench
/// hash` at 1, 2 and 4 threads and 0, 10 and 50 % updates, 1024 keys in
/// 1024 buckets, 0.1 s repetitions (about 45 s).
fn bench_suite(cli: &Cli, argv: &[String]) -> Result<i32> {
    let all: Vec<&'static Entry> = registry::all().iter().collect();
    let unc = UncontendedPlan {
        locks: all.clone(),
        reps: 3,
        cfg: uncontended::Config { secs: 0.1 },
    };
    let spin = SpinPlan {
        bench: "spin",
        locks: all.clone(),
        threads: vec![1, 2, 8],
        reps: 3,
        cfg: SpinConfig {
            cs_ns: 100,
            cs_lines: 1,
            delay_ns: 200,
            delay_dist: DelayDist::Exp,
            secs: 0.25,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
        },
    };
    let lhp = SpinPlan {
        bench: "lhp",
        locks: all,
        threads: lhp_threads(&[1, 2, 4, 8])?,
        reps: 3,
        cfg: SpinConfig {
            cs_ns: 100,
            cs_lines: 1,
            delay_ns: 0,
            delay_dist: DelayDist::Exp,
            secs: 0.2,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
        },
    };
    let hash = HashPlan {
        strategies: strategies::all(),
        threads: vec![1, 2, 4],
        update_pcts: vec![0, 10, 50],
        reps: 3,
        cfg: HashConfig::new(1024, 1024, 0.1, false),
    };
    let hash_names: Vec<&str> = hash.strategies.iter().map(|s| s.name.as_str()).collect();
    let params = json!({
        "locks": names(&spin.locks), "reps": spin.reps, "threads": spin.threads,
        "uncontended": unc.cfg, "spin": spin.cfg,
        "lhp_threads": lhp.threads, "lhp": lhp.cfg,
        "hash_strategies": hash_names, "hash_threads": hash.threads,
        "hash_update_pcts": hash.update_pcts, "hash": hash.cfg,
    });
    let progress = Progress::new(
        unc.units() + spin.units() + lhp.units() + hash.units(),
        progress_quiet(cli),
    );
    let r = stored_run(cli, argv, "bench", params, &progress, |sink| {
        Ok(bench::run_uncontended(&unc, &progress, sink)?
            && bench::run_spin(&spin, &progress, sink)?
            && bench::run_spin(&lhp, &progress, sink)?
            && bench::run_hash(&hash, &progress, sink)?)
    });
    progress.finish();
    r
}

fn torture(cli: &Cli, a: &TortureArgs) -> Result<i32> {
    if a.rcu {
        return torture_rcu(cli, a);
    }
    let locks = registry::parse_torture_list(&a.locks)?;
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
    let threads = a
        .threads
        .unwrap_or_else(|| (4 * bench::spin::cores()).min(crate::cli::MAX_THREADS as usize) as u32);
    let cfg = TortureConfig {
        threads,
        secs,
        watchdog_s: a.watchdog,
        read_pct,
    };
    crate::interrupt::install();
    if !cli.json {
        outln!(
            "torture: {threads} threads on {} cores, {}s per lock, watchdog {}s",
            bench::spin::cores(),
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
        if crate::interrupt::requested() {
            break;
        }
        let mut r = (e.run)(&cfg);
        r.lock = e.info.name.into();
        all_ok &= r.ok();
        if !cli.json {
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
                report::fmt_ns(r.longest_wait_ns as f64),
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
    let interrupted = crate::interrupt::requested();
    if cli.json {
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

/// `torture --rcu`: each flavour in turn, its report as it finishes, then
/// a summary; exit 1 if any check failed in any flavour.
fn torture_rcu(cli: &Cli, a: &TortureArgs) -> Result<i32> {
    use crate::rcutorture::{self, RcuTortureConfig, SYNCERS};
    if a.read_pct.is_some() {
        return Err(LabError::input(
            "--read-pct is for reader-writer locks; RCU readers never exclude anyone, so --rcu does not take it",
        ));
    }
    let flavors = rcutorture::parse_flavors(&a.locks)?;
    let readers = a
        .threads
        .unwrap_or_else(|| (2 * bench::spin::cores()).min(crate::cli::MAX_THREADS as usize) as u32);
    let secs = a.secs.unwrap_or(5.0);
    let cfg = RcuTortureConfig::new(readers, secs, a.watchdog);
    crate::interrupt::install();
    if !cli.json {
        outln!(
            "rcu torture: {readers} readers, 1 writer, {SYNCERS} synchronize threads, 1 callback flood, \
             1 hash-map updater on {} cores; {secs}s per flavour, watchdog {}s, max_pending {}",
            bench::spin::cores(),
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
        if crate::interrupt::requested() {
            break;
        }
        let r = (f.run)(&cfg);
        if !cli.json {
            crate::out::print(&r.text())?;
        }
        let hung = r.hung.is_some();
        reports.push(r);
        if hung {
            // Its threads are stuck for good; more runs beside them would
            // only measure the stuck threads.
            break;
        }
    }
    let interrupted = crate::interrupt::requested();
    let all_ok = reports.iter().all(|r| r.ok());
    if cli.json {
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
