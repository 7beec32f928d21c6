//! `interposer-cost`: what the interposer costs an uncontended
//! `pthread_mutex_lock`/`pthread_mutex_unlock` pair, each figure measured
//! in one process, side by side:
//!
//! - **passthrough** (`LD_PRELOAD`, `LOCKLAB_LOCK=pthread`): the pair
//!   through the interposer's functions, which hand every call to the C
//!   library, against the C library's own functions in the same process
//!   (found in `libc.so.6` itself with `dlopen(RTLD_NOLOAD)` and `dlsym`,
//!   past the interposer). The figure is the difference, in ns per pair.
//! - **mutex** (`LD_PRELOAD`, `LOCKLAB_LOCK=mutex`): the pair through the
//!   interposer, which runs locklab's hybrid mutex under it, against the
//!   same mutex used from Rust (`locklab::Mutex`, the lab's default) in the
//!   same process. The figure is the ratio. Beside it, the C library's own
//!   pair over the Rust one: what any mutex reached through the C
//!   interface pays (two calls into a shared library) that inlined Rust
//!   does not.
//! - **control** (no `LD_PRELOAD`): the same two pointers both reach the C
//!   library, so the pair measured twice must give a ratio of 1, and two C
//!   library pairs counted as one must give 2: the harness's known answers,
//!   printed with every run (`tests/cost.rs` holds them to it).
//!
//! ```text
//! cargo build --release
//! target/release/interposer-cost            # --reps 101 --pairs 20000 --procs 3
//! ```
//!
//! How it measures: a child process (this program, `--child`) per
//! configuration, the configurations in turn, `--procs` rounds. In a child,
//! one thread times batches of `--pairs` pairs of each side on its own
//! mutex (each pair writes a volatile word inside, as a critical section
//! would), one batch of every side per repetition, the order of the sides
//! rotated from one repetition to the next, `--reps` repetitions; a second
//! thread sleeps throughout, so that no C library takes a single-threaded
//! short cut. Each repetition gives a difference or ratio of two batches
//! measured a few milliseconds apart, so drift in the machine's speed
//! cancels; reported is the median over every repetition of every child
//! with its 95 % confidence interval (distribution-free, from order
//! statistics), and the range of the children's own medians. Uncontended,
//! one thread: what a program pays when nobody waits.
//!
//! A bad argument gets one line naming it and what is allowed, exit code 2.

use std::ffi::{c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use libc::pthread_mutex_t;

/// A `pthread_mutex_lock` or `_unlock`.
type PairFn = unsafe extern "C" fn(*mut pthread_mutex_t) -> c_int;

/// The sides a child times.
const SIDES: [&str; 4] = ["glibc", "interposed", "rust", "glibc-twice"];

/// The configurations, in the order each round runs them: a name, and
/// `LOCKLAB_LOCK` (`None`: no `LD_PRELOAD` at all).
const CONFIGS: [(&str, Option<&str>); 3] = [
    ("control", None),
    ("passthrough", Some("pthread")),
    ("mutex", Some("mutex")),
];

struct Args {
    reps: u32,
    pairs: u64,
    procs: u32,
    preload: Option<PathBuf>,
    child: bool,
}

fn usage() -> &'static str {
    "usage: interposer-cost [--reps N (1-1000, default 101)] [--pairs N (1000-100000000, default 20000)] \
     [--procs N (1-100, default 3)] [--preload PATH (default: LOCKLAB_PRELOAD, or liblocklab_preload.so beside this program)]"
}

/// One line naming the bad value and what is allowed; exit code 2.
fn bad(msg: String) -> ExitCode {
    eprintln!("interposer-cost: {msg}");
    ExitCode::from(2)
}

fn parse_args() -> Result<Args, ExitCode> {
    let mut a = Args {
        reps: 101,
        pairs: 20_000,
        procs: 3,
        preload: None,
        child: false,
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(flag) = it.next() {
        let flag = flag.to_string_lossy().into_owned();
        let mut value = |name: &str| {
            it.next()
                .map(|v| v.to_string_lossy().into_owned())
                .ok_or_else(|| bad(format!("{name} needs a value; {}", usage())))
        };
        fn number(name: &str, v: &str, lo: u64, hi: u64) -> Result<u64, ExitCode> {
            match v.parse::<u64>() {
                Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(bad(format!(
                    "{name} '{v}' is not a whole number from {lo} to {hi}"
                ))),
            }
        }
        match flag.as_str() {
            "--reps" => a.reps = number("--reps", &value("--reps")?, 1, 1000)? as u32,
            "--pairs" => a.pairs = number("--pairs", &value("--pairs")?, 1000, 100_000_000)?,
            "--procs" => a.procs = number("--procs", &value("--procs")?, 1, 100)? as u32,
            "--preload" => a.preload = Some(PathBuf::from(value("--preload")?)),
            "--child" => a.child = true,
            "-h" | "--help" => {
                println!("{}", usage());
                return Err(ExitCode::SUCCESS);
            }
            other => return Err(bad(format!("'{other}' is not an argument; {}", usage()))),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(code) => return code,
    };
    if args.child {
        return child(&args);
    }
    match parent(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("interposer-cost: {e}");
            ExitCode::FAILURE
        }
    }
}

// ------------------------------------------------------------ the child

/// The shared object that defines the function at `f`.
fn object_of(f: *const c_void) -> String {
    // SAFETY: `info` is written by dladdr; its strings are the loader's.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(f, &mut info) == 0 || info.dli_fname.is_null() {
            return "?".into();
        }
        CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    }
}

/// `name` as the program's calls reach it (the interposer, when preloaded).
fn resolved(name: &CStr) -> *mut c_void {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the global scope.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// `name` in the C library itself, past any interposer.
fn in_libc(name: &CStr) -> *mut c_void {
    // SAFETY: the C library is loaded (this program links it); RTLD_NOLOAD
    // only finds it; `name` is NUL-terminated.
    unsafe {
        let h = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY);
        if h.is_null() {
            return std::ptr::null_mut();
        }
        libc::dlsym(h, name.as_ptr())
    }
}

/// A mutex the C side uses, in memory of its own (never moved).
fn c_mutex() -> *mut pthread_mutex_t {
    Box::into_raw(Box::new(libc::PTHREAD_MUTEX_INITIALIZER))
}

/// Times `pairs * per` pairs of `lock`/`unlock` on `m`: ns per `per`
/// pairs (`per` 2: each counted pair is two, the known answer's case).
#[inline(never)]
fn time_c(lock: PairFn, unlock: PairFn, m: *mut pthread_mutex_t, pairs: u64, per: u64) -> f64 {
    let mut sink = 0u64;
    let start = Instant::now();
    for i in 0..pairs * per {
        // SAFETY: a live mutex the calling thread alone uses, locked and
        // unlocked in turn; `sink` is a live local.
        unsafe {
            lock(m);
            std::ptr::write_volatile(&mut sink, i);
            unlock(m);
        }
    }
    start.elapsed().as_nanos() as f64 / pairs as f64
}

/// Times `pairs` pairs of `locklab::Mutex` (lock, write, guard dropped).
#[inline(never)]
fn time_rust(m: &locklab::Mutex<u64>, pairs: u64) -> f64 {
    let start = Instant::now();
    for i in 0..pairs {
        let mut g = std::hint::black_box(m).lock();
        // SAFETY: the guard's own data, written as the C side writes.
        unsafe { std::ptr::write_volatile(&mut *g, i) };
        drop(g);
    }
    start.elapsed().as_nanos() as f64 / pairs as f64
}

/// Prints `from <side> <object>` for the functions found, then `rep <r>
/// <side> <ns per pair>` for every batch.
fn child(a: &Args) -> ExitCode {
    let lock_name = c"pthread_mutex_lock";
    let unlock_name = c"pthread_mutex_unlock";
    let (gl, gu) = (in_libc(lock_name), in_libc(unlock_name));
    let (il, iu) = (resolved(lock_name), resolved(unlock_name));
    if [gl, gu, il, iu].iter().any(|p| p.is_null()) {
        eprintln!("interposer-cost: cannot find pthread_mutex_lock and _unlock");
        return ExitCode::FAILURE;
    }
    println!("from glibc {}", object_of(gl));
    println!("from interposed {}", object_of(il));
    // SAFETY: both are the C interface's functions of this signature.
    let (glock, gunlock, ilock, iunlock): (PairFn, PairFn, PairFn, PairFn) = unsafe {
        (
            std::mem::transmute::<*mut c_void, PairFn>(gl),
            std::mem::transmute::<*mut c_void, PairFn>(gu),
            std::mem::transmute::<*mut c_void, PairFn>(il),
            std::mem::transmute::<*mut c_void, PairFn>(iu),
        )
    };
    // A second thread, asleep throughout.
    std::thread::spawn(|| loop {
        std::thread::park();
    });
    let (gm, im, tm) = (c_mutex(), c_mutex(), c_mutex());
    let rust = locklab::Mutex::new(0u64);
    let side = |s: usize, pairs: u64| match s {
        0 => time_c(glock, gunlock, gm, pairs, 1),
        1 => time_c(ilock, iunlock, im, pairs, 1),
        2 => time_rust(&rust, pairs),
        _ => time_c(glock, gunlock, tm, pairs, 2),
    };
    // Warm-up: every side once, discarded.
    for s in 0..SIDES.len() {
        side(s, a.pairs / 10);
    }
    for r in 0..a.reps {
        for k in 0..SIDES.len() {
            let s = (k + r as usize) % SIDES.len();
            println!("rep {r} {} {:.4}", SIDES[s], side(s, a.pairs));
        }
    }
    ExitCode::SUCCESS
}

// ----------------------------------------------------------- the parent

/// One child's output: where the functions came from, and per repetition
/// the ns per pair of each side.
struct Measured {
    from: Vec<(String, String)>,
    reps: Vec<[f64; 4]>,
}

fn find_preload(a: &Args) -> Result<PathBuf, String> {
    if let Some(p) = &a.preload {
        return match p.is_file() {
            true => Ok(p.clone()),
            false => Err(format!("--preload {}: no such file", p.display())),
        };
    }
    if let Some(p) = std::env::var_os("LOCKLAB_PRELOAD") {
        let p = PathBuf::from(p);
        return match p.is_file() {
            true => Ok(p),
            false => Err(format!("LOCKLAB_PRELOAD={}: no such file", p.display())),
        };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let p = exe
        .parent()
        .unwrap_or(Path::new("."))
        .join("liblocklab_preload.so");
    match p.is_file() {
        true => Ok(p),
        false => Err(format!(
            "no interposer at {}: `cargo build --release` builds it beside this program \
             (or name it with --preload)",
            p.display()
        )),
    }
}

fn run_child(a: &Args, preload: &Path, lock: Option<&str>) -> Result<Measured, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "--child",
        "--reps",
        &a.reps.to_string(),
        "--pairs",
        &a.pairs.to_string(),
    ])
    .stdin(Stdio::null());
    for var in [
        "LD_PRELOAD",
        "LOCKLAB_LOCK",
        "LOCKLAB_RWLOCK",
        "LOCKLAB_PROFILE",
        "LOCKLAB_MARK",
    ] {
        cmd.env_remove(var);
    }
    if let Some(l) = lock {
        cmd.env("LD_PRELOAD", preload).env("LOCKLAB_LOCK", l);
    }
    let what = match lock {
        Some(l) => format!("the child under LOCKLAB_LOCK={l}"),
        None => "the child without the interposer".into(),
    };
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut m = Measured {
        from: Vec::new(),
        reps: vec![[f64::NAN; 4]; a.reps as usize],
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["from", side, obj] => m.from.push((side.to_string(), obj.to_string())),
            ["rep", r, side, ns] => {
                let r: usize = r
                    .parse()
                    .map_err(|_| format!("{what}: bad line '{line}'"))?;
                let s = SIDES
                    .iter()
                    .position(|x| x == side)
                    .ok_or_else(|| format!("{what}: bad line '{line}'"))?;
                let ns: f64 = ns
                    .parse()
                    .map_err(|_| format!("{what}: bad line '{line}'"))?;
                *m.reps
                    .get_mut(r)
                    .ok_or_else(|| format!("{what}: bad line '{line}'"))?
                    .get_mut(s)
                    .expect("a side's index") = ns;
            }
            _ => return Err(format!("{what}: unexpected line '{line}'")),
        }
    }
    if m.reps.iter().flatten().any(|x| !x.is_finite()) {
        return Err(format!("{what}: a repetition is missing from its output"));
    }
    // Preloaded, the program's calls must reach the interposer, and the
    // C library's own functions must not.
    let object = |side: &str| {
        m.from
            .iter()
            .find(|(s, _)| s == side)
            .map(|(_, o)| o.as_str())
            .unwrap_or("?")
    };
    let (i, g) = (object("interposed"), object("glibc"));
    let is_preload = |o: &str| match (Path::new(o).canonicalize(), preload.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if lock.is_some() != is_preload(i) || is_preload(g) {
        return Err(format!(
            "{what}: pthread_mutex_lock resolved to {i} and the C library's to {g}: \
             the interposer did not load as it should"
        ));
    }
    Ok(m)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median's 95 % confidence interval, free of any assumption on the
/// distribution: the order statistics `(k, n + 1 - k)` for the largest
/// `k` with `P(Binomial(n, 1/2) < k) <= 2.5 %` (the whole range when `n`
/// is too small for that: under 6).
pub fn median_interval(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // P(X <= j) for X ~ Binomial(n, 1/2), built up term by term.
    let mut term = 0.5f64.powi(n as i32);
    let mut below = 0.0;
    let mut k = 0;
    for j in 0..n {
        // below = P(X < j + 1) once term (P(X = j)) is added.
        below += term;
        if below > 0.025 {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    if k == 0 {
        return (v[0], v[n - 1]);
    }
    (v[k - 1], v[n - k])
}

/// A figure over every repetition of every child: median, its interval,
/// and the range of the children's own medians.
struct Figure {
    median: f64,
    lo: f64,
    hi: f64,
    procs: (f64, f64),
}

fn figure(per_child: &[Vec<f64>]) -> Figure {
    let all: Vec<f64> = per_child.iter().flatten().copied().collect();
    let (lo, hi) = median_interval(&all);
    let meds: Vec<f64> = per_child.iter().map(|v| median(v)).collect();
    let min = meds.iter().copied().fold(f64::INFINITY, f64::min);
    let max = meds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Figure {
        median: median(&all),
        lo,
        hi,
        procs: (min, max),
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    // SAFETY: returns a static NUL-terminated string.
    let glibc = unsafe { CStr::from_ptr(gnu_get_libc_version()) }.to_string_lossy();
    format!("{cpu}, {cores} cores, glibc {glibc}")
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

extern "C" {
    fn gnu_get_libc_version() -> *const std::ffi::c_char;
}

fn parent(a: &Args) -> Result<(), String> {
    let preload = find_preload(a)?;
    println!(
        "interposer-cost: uncontended pthread_mutex_lock/unlock pairs, ns per pair; {}",
        machine()
    );
    println!(
        "{} repetitions x {} pairs per side, in each of {} processes per configuration; load {} at the start",
        a.reps,
        a.pairs,
        a.procs,
        load()
    );
    let mut runs: Vec<Vec<Measured>> = CONFIGS.iter().map(|_| Vec::new()).collect();
    for _ in 0..a.procs {
        for (c, (_, lock)) in CONFIGS.iter().enumerate() {
            runs[c].push(run_child(a, &preload, *lock)?);
        }
    }
    println!("load {} at the end", load());
    // Per configuration and child: each repetition's value of `f`.
    let per = |c: usize, f: &dyn Fn(&[f64; 4]) -> f64| -> Vec<Vec<f64>> {
        runs[c]
            .iter()
            .map(|m| m.reps.iter().map(f).collect())
            .collect()
    };
    let show = |label: &str, fig: &Figure, unit: &str, note: &str| {
        println!(
            "  {label:<44} {:>7.3}{unit} (95% CI {:.3}-{:.3}; processes {:.3}-{:.3}){note}",
            fig.median, fig.lo, fig.hi, fig.procs.0, fig.procs.1
        );
    };
    println!("\nns per pair, median over every repetition:");
    for (c, (name, _)) in CONFIGS.iter().enumerate() {
        for (s, side) in SIDES.iter().enumerate() {
            if (*side == "rust" && *name != "mutex")
                || (*side == "glibc-twice" && *name != "control")
            {
                continue;
            }
            let label = format!("{name}: {side}");
            show(&label, &figure(&per(c, &|r| r[s])), " ns", "");
        }
    }
    println!("\nthe harness's known answers (no interposer):");
    let same = figure(&per(0, &|r| r[1] / r[0]));
    show("same pair, two pointers: ratio (known 1)", &same, "x", "");
    let twice = figure(&per(0, &|r| r[3] / r[0]));
    show("two pairs counted as one: ratio (known 2)", &twice, "x", "");
    println!("\nthe interposer's cost:");
    let pass = figure(&per(1, &|r| r[1] - r[0]));
    show(
        "passthrough - C library",
        &pass,
        " ns",
        &format!(" [goal <= 1 ns: {}]", verdict(pass.median <= 1.0)),
    );
    let pass_ratio = figure(&per(1, &|r| r[1] / r[0]));
    show("passthrough / C library", &pass_ratio, "x", "");
    let mutex = figure(&per(2, &|r| r[1] / r[2]));
    show(
        "interposed mutex / locklab::Mutex from Rust",
        &mutex,
        "x",
        &format!(" [goal <= 1.1x: {}]", verdict(mutex.median <= 1.1)),
    );
    let mutex_diff = figure(&per(2, &|r| r[1] - r[2]));
    show("interposed mutex - locklab::Mutex", &mutex_diff, " ns", "");
    // What any mutex called through the C interface pays that inlined Rust
    // does not (two calls into a shared library), beside it.
    let call = figure(&per(2, &|r| r[0] / r[2]));
    show("(C library's own pair / locklab::Mutex)", &call, "x", "");
    let vs_glibc = figure(&per(2, &|r| r[1] / r[0]));
    show(
        "(interposed mutex / C library's own pair)",
        &vs_glibc,
        "x",
        "",
    );
    println!(
        "\nresult same {:.4} twice {:.4} passthrough_ns {:.4} mutex_ratio {:.4}",
        same.median, twice.median, pass.median, mutex.median
    );
    Ok(())
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}
