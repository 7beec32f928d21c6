//! What the kernel's integration tests share: one kernel at a time, a run
//! until a condition holds, and the unsound kernel the checkers must catch.

use locklab_kernel::cc::Concurrency;
use locklab_kernel::check::{check_kernel, check_programs};
use locklab_kernel::stats::CoreStats;
use locklab_kernel::{Config, Kernel, Monitor, RunResult, System};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One kernel at a time: the emulated cores spin, and FIFO spin locks
/// whose waiters lose their CPU to another test's cores crawl (the
/// lock-waiter preemption problem), which would only slow the tests.
pub fn one_kernel_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `k` on `sys`'s programs until `done` says so (or 20 s passed) and
/// stops it; a core that does not stop fails the test.
pub fn run_until<C: Concurrency>(
    k: &Arc<Kernel<C>>,
    sys: &System,
    done: impl Fn(&Monitor) -> bool,
) -> RunResult {
    let (_, run) = k
        .run(
            sys.programs(),
            Arc::new(|_| {}),
            Duration::from_secs(20),
            |m| {
                let t0 = Instant::now();
                while !done(m) && t0.elapsed() < Duration::from_secs(20) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            },
        )
        .unwrap_or_else(|h| panic!("{}: {h}", k.variant()));
    run
}

/// A concurrency control that claims to make sharing safe and does nothing:
/// the kernel the checkers must catch.
struct Broken;

impl Concurrency for Broken {
    type Entry = ();
    type Writer = ();
    const FINE: bool = false;
    const SHARING: bool = true;
    fn name(&self) -> String {
        "broken".into()
    }
    fn enter(&self, _: &mut CoreStats) {}
    fn exit(&self, _: ()) {}
    fn enter_writer(&self, _: &mut CoreStats) {}
    fn exit_writer(&self, _: ()) {}
}

/// Boots `sys` under [`Broken`], runs it for `window` and says what went
/// wrong: the cores that did not stop, or the checkers' violations (empty
/// if the run looked consistent).
pub fn broken_run(sys: &System, window: Duration) -> String {
    let k = Arc::new(Kernel::boot(Broken, sys, Config::default()).expect("boots"));
    let r = k.run(
        sys.programs(),
        Arc::new(|_| {}),
        Duration::from_secs(5),
        |_| std::thread::sleep(window),
    );
    match r {
        Err(h) => h.to_string(),
        Ok((_, run)) => format!("{}{}", check_kernel(&k), check_programs(&k, &run)),
    }
}
