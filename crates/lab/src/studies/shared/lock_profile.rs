//! The interposer's profile files (`<dir>/<pid>.prof`, one per process
//! that exited normally), as `crates/preload/src/profile.rs` writes them,
//! read for `locklab profile` and `advise`; and the contention workload a
//! profiled lock's pattern stands for.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// One process's profile.
#[derive(Debug, Clone)]
pub struct Process {
    /// Its process id, and its parent's.
    pub pid: u32,
    /// See `pid`.
    pub ppid: u32,
    /// Its executable.
    pub exe: String,
    /// The mutex and reader-writer lock it ran under.
    pub lock: String,
    /// See `lock`.
    pub rwlock: String,
    /// Nanoseconds from the interposer's load to the dump.
    pub elapsed_ns: u64,
    /// Threads that took a counted lock.
    pub threads: u32,
    /// Objects the table had no room for (not counted).
    pub overflow: u64,
    /// Calls on objects the C library keeps (not counted).
    pub glibc_only: u64,
    /// Unlocks of a default mutex the caller did not hold, refused with
    /// `EPERM` (the `misuse` record, written only when there was one).
    pub misuse: u64,
    /// Its counted objects.
    pub objects: Vec<Object>,
}

/// Where the first contended acquisition came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Caller {
    /// The return address in the program.
    pub ip: u64,
    /// The base address of its module.
    pub base: u64,
    /// The nearest dynamic symbol the loader knew (or empty), and its
    /// address.
    pub dyn_symbol: String,
    /// See `dyn_symbol`.
    pub dyn_addr: u64,
    /// The module's path.
    pub module: String,
}

/// One lock object's counts, times in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Exclusive acquisitions (a recursive mutex taken again is not one).
    pub acquisitions: u64,
    /// Those whose first attempt found the lock taken.
    pub contended: u64,
    /// Failed try forms and timed-out timed forms.
    pub busy: u64,
    /// Time the contended acquisitions waited.
    pub wait_total_ns: u64,
    /// See `wait_total_ns`.
    pub wait_max_ns: u64,
    /// Time it was held exclusive: every hold of its first 64
    /// acquisitions timed, then one in 16 standing for 16, scaled to the
    /// acquisitions (exact up to 64 acquisitions).
    pub hold_total_ns: u64,
    /// The longest timed hold.
    pub hold_max_ns: u64,
    /// Holds the timed ones stand for.
    pub hold_samples: u64,
    /// Shared acquisitions (reader-writer locks).
    pub reads: u64,
    /// Those that waited.
    pub read_contended: u64,
    /// Their waits.
    pub read_wait_total_ns: u64,
    /// See `read_wait_total_ns`.
    pub read_wait_max_ns: u64,
    /// Their holds, estimated as `hold_total_ns` is.
    pub read_hold_total_ns: u64,
    /// See `read_hold_total_ns`.
    pub read_hold_max_ns: u64,
    /// Shared holds the timed ones stand for.
    pub read_hold_samples: u64,
    /// Condition waits with this mutex, and their time.
    pub cond_waits: u64,
    /// See `cond_waits`.
    pub cond_wait_total_ns: u64,
    /// Threads that took it (exact up to 64).
    pub threads: u32,
    /// Its first and last acquisition, ns after the process started.
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
}

impl crate::core::results::StudyMetrics for Counts {
    const KEY: &'static str = "profile";
}

impl Counts {
    /// All waiting, exclusive and shared.
    pub fn wait_ns(&self) -> u64 {
        self.wait_total_ns + self.read_wait_total_ns
    }

    /// Adds another object's counts (for a summary row).
    pub fn add(&mut self, o: &Counts) {
        self.acquisitions += o.acquisitions;
        self.contended += o.contended;
        self.busy += o.busy;
        self.wait_total_ns += o.wait_total_ns;
        self.wait_max_ns = self.wait_max_ns.max(o.wait_max_ns);
        self.hold_total_ns += o.hold_total_ns;
        self.hold_max_ns = self.hold_max_ns.max(o.hold_max_ns);
        self.hold_samples += o.hold_samples;
        self.read_hold_samples += o.read_hold_samples;
        self.reads += o.reads;
        self.read_contended += o.read_contended;
        self.read_wait_total_ns += o.read_wait_total_ns;
        self.read_wait_max_ns = self.read_wait_max_ns.max(o.read_wait_max_ns);
        self.read_hold_total_ns += o.read_hold_total_ns;
        self.read_hold_max_ns = self.read_hold_max_ns.max(o.read_hold_max_ns);
        self.cond_waits += o.cond_waits;
        self.cond_wait_total_ns += o.cond_wait_total_ns;
        self.threads = self.threads.max(o.threads);
        self.first_ns = if self.first_ns == 0 {
            o.first_ns
        } else {
            self.first_ns.min(o.first_ns.max(1))
        };
        self.last_ns = self.last_ns.max(o.last_ns);
    }
}

/// One lock object.
#[derive(Debug, Clone)]
pub struct Object {
    /// Its address.
    pub addr: u64,
    /// `mutex`, `rwlock` or `spin`.
    pub kind: &'static str,
    /// What it did.
    pub counts: Counts,
    /// Its first contended acquisition's caller, if it had one.
    pub caller: Option<Caller>,
}

fn num(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("'{s}' is not a number"))
}

/// Parses one profile file's text.
pub fn parse(text: &str) -> Result<Process, String> {
    let mut lines = text.lines();
    if lines.next() != Some("locklab-profile 1") {
        return Err("not a locklab profile (version 1)".into());
    }
    let mut p = Process {
        pid: 0,
        ppid: 0,
        exe: String::new(),
        lock: String::new(),
        rwlock: String::new(),
        elapsed_ns: 0,
        threads: 0,
        overflow: 0,
        glibc_only: 0,
        misuse: 0,
        objects: Vec::new(),
    };
    for (n, line) in lines.enumerate() {
        let at = |e: String| format!("line {}: {e}", n + 2);
        let (key, rest) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "pid" => p.pid = num(rest).map_err(at)? as u32,
            "ppid" => p.ppid = num(rest).map_err(at)? as u32,
            "exe" => p.exe = rest.to_string(),
            "lock" => p.lock = rest.to_string(),
            "rwlock" => p.rwlock = rest.to_string(),
            "elapsed_ns" => p.elapsed_ns = num(rest).map_err(at)?,
            "threads" => p.threads = num(rest).map_err(at)? as u32,
            "overflow" => p.overflow = num(rest).map_err(at)?,
            "glibc_only" => p.glibc_only = num(rest).map_err(at)?,
            "misuse" => p.misuse = num(rest).map_err(at)?,
            "tick_ns" => {}
            "obj" => p.objects.push(object(rest).map_err(at)?),
            _ => return Err(at(format!("unknown record '{key}'"))),
        }
    }
    Ok(p)
}

/// The total of `all` holds from a weighted total standing for `timed` of
/// them.
fn scaled(total: u64, all: u64, timed: u64) -> u64 {
    if timed == 0 {
        0
    } else {
        (total as f64 * all as f64 / timed as f64).round() as u64
    }
}

/// An `obj` record after its key.
fn object(rest: &str) -> Result<Object, String> {
    // The address, 25 fields, then the module's path (which may hold spaces).
    let mut f = rest.splitn(27, ' ');
    let mut next = || f.next().ok_or_else(|| "a short obj record".to_string());
    let addr = num(next()?)?;
    let kind = match next()? {
        "1" => "mutex",
        "2" => "rwlock",
        "3" => "spin",
        k => return Err(format!("unknown kind {k}")),
    };
    let mut v = [0u64; 20];
    for x in &mut v {
        *x = num(next()?)?;
    }
    let ip = num(next()?)?;
    let base = num(next()?)?;
    let dyn_addr = num(next()?)?;
    let dyn_symbol = next()?.to_string();
    let module = next()?.to_string();
    let counts = Counts {
        acquisitions: v[0],
        contended: v[1],
        busy: v[2],
        wait_total_ns: v[3],
        wait_max_ns: v[4],
        hold_total_ns: scaled(v[5], v[0], v[18]),
        hold_max_ns: v[6],
        threads: v[7].count_ones(),
        first_ns: v[8],
        last_ns: v[9],
        reads: v[10],
        read_contended: v[11],
        read_wait_total_ns: v[12],
        read_wait_max_ns: v[13],
        read_hold_total_ns: scaled(v[14], v[10], v[19]),
        read_hold_max_ns: v[15],
        cond_waits: v[16],
        cond_wait_total_ns: v[17],
        hold_samples: v[18],
        read_hold_samples: v[19],
    };
    let caller = (ip != 0).then(|| Caller {
        ip,
        base,
        dyn_symbol: if dyn_symbol == "-" {
            String::new()
        } else {
            dyn_symbol
        },
        dyn_addr,
        module: if module == "-" { String::new() } else { module },
    });
    Ok(Object {
        addr,
        kind,
        counts,
        caller,
    })
}

/// Every profile in `dir`, by process id.
pub fn read_dir(dir: &Path) -> Result<Vec<Process>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "prof") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(parse(&text).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    out.sort_by_key(|p| p.pid);
    Ok(out)
}

/// The name `locklab profile` stores its points under.
pub const BENCH: &str = "profile";

/// Mean of a total over a count (NaN for none).
pub fn mean(total: u64, n: u64) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        total as f64 / n as f64
    }
}

/// The workload of `bench spin` that has this lock's pattern: its threads,
/// its mean hold as the critical section, and as the delay between a
/// thread's acquisitions what is left of each thread's share of the
/// lock's active time (from its first acquisition to its last) once the
/// hold and the wait are taken out. `None` if it was never contended or
/// never held exclusive.
pub fn spin_workload(c: &Counts) -> Option<(u32, u64, u64)> {
    if c.contended + c.read_contended == 0 || c.acquisitions == 0 {
        return None;
    }
    let threads = c.threads.max(2);
    let cs = mean(c.hold_total_ns, c.acquisitions);
    let waited = mean(c.wait_ns(), c.acquisitions + c.reads);
    let window = c.last_ns.saturating_sub(c.first_ns) as f64;
    let cycle = window * f64::from(threads) / (c.acquisitions + c.reads) as f64;
    let delay = (cycle - cs - waited).max(0.0);
    let cap = crate::core::args::MAX_NS as f64;
    Some((
        threads,
        cs.round().min(cap) as u64,
        delay.round().min(cap) as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interposer writes `misuse N` only when a default mutex was
    /// unlocked by a thread that did not hold it; a profile without the
    /// record reads as none.
    #[test]
    fn reads_the_misuse_count_when_there_is_one() {
        let head = "locklab-profile 1\npid 7\nppid 1\nexe /bin/x\nlock mcs\nrwlock pthread-rw\n\
                    elapsed_ns 5000\ntick_ns 0.43\nthreads 3\noverflow 0\nglibc_only 0\n";
        assert_eq!(parse(&format!("{head}misuse 6\n")).unwrap().misuse, 6);
        assert_eq!(parse(head).unwrap().misuse, 0);
    }

    #[test]
    fn reads_what_the_interposer_writes() {
        let text = "locklab-profile 1\npid 7\nppid 1\nexe /bin/x y\nlock mcs\nrwlock pthread-rw\n\
                    elapsed_ns 5000\ntick_ns 0.43\nthreads 3\noverflow 0\nglibc_only 2\n\
                    obj 0x10 1 100 98 1 900 20 110 30 0x5 61 111 0 0 0 0 0 0 4 50 10 0 0x5ae4 0x5000 0x0 - /tmp/a b\n\
                    obj 0x20 2 1 0 0 0 0 3 3 0x7 9 9 2000 1 7 7 50 50 0 0 1 250 0x0 0x0 0x0 - -\n";
        let p = parse(text).unwrap();
        assert_eq!((p.pid, p.ppid, p.threads, p.glibc_only), (7, 1, 3, 2));
        assert_eq!(p.exe, "/bin/x y");
        assert_eq!(p.objects.len(), 2);
        let a = &p.objects[0];
        assert_eq!((a.addr, a.kind), (0x10, "mutex"));
        assert_eq!(a.counts.acquisitions, 100);
        assert_eq!(a.counts.contended, 98);
        assert_eq!(a.counts.busy, 1);
        assert_eq!(a.counts.wait_total_ns, 900);
        assert_eq!(a.counts.hold_max_ns, 30);
        // 10 holds timed, 110 ns in all: 100 acquisitions held 1100 ns.
        assert_eq!((a.counts.hold_samples, a.counts.hold_total_ns), (10, 1100));
        assert_eq!(a.counts.threads, 2);
        assert_eq!((a.counts.first_ns, a.counts.last_ns), (61, 111));
        assert_eq!((a.counts.cond_waits, a.counts.cond_wait_total_ns), (4, 50));
        let c = a.caller.as_ref().unwrap();
        assert_eq!(
            (c.ip, c.base, c.module.as_str()),
            (0x5ae4, 0x5000, "/tmp/a b")
        );
        let r = &p.objects[1];
        assert_eq!(
            (r.kind, r.counts.reads, r.counts.read_contended),
            ("rwlock", 2000, 1)
        );
        assert_eq!(r.counts.read_hold_total_ns, 400);
        assert_eq!(r.counts.hold_total_ns, 3);
        assert_eq!(r.counts.threads, 3);
        assert!(r.caller.is_none());
        assert!(parse("locklab-profile 2\n").is_err());
        assert!(parse("locklab-profile 1\nobj 0x10 9\n").is_err());
    }
}
