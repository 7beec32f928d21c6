//! Which NUMA node a thread runs on: what the NUMA-aware locks (cohort
//! locks, HMCS, CNA) ask on their slow paths to keep hand-overs within a
//! node.
//!
//! # Where the answer comes from
//!
//! - **The machine.** Linux lists each node's CPUs in
//!   `/sys/devices/system/node/node<N>/cpulist` (the nodes present in
//!   `/sys/devices/system/node/online`). Nodes are numbered densely here,
//!   in the kernel's order: a machine whose nodes are 0 and 2 has nodes 0
//!   and 1 to a lock. Without sysfs (another OS, a container without it)
//!   the machine is one node.
//! - **A virtual topology** in [`TOPOLOGY_VAR`] (`LOCKLAB_TOPOLOGY`), so
//!   that the node logic runs, and is tested, on any machine, one socket
//!   included:
//!   - `NxM`: `N` nodes of `M` CPUs each, CPU `c` on node `(c / M) % N`
//!     (`2x1` on two CPUs: CPU 0 on node 0, CPU 1 on node 1; CPUs past
//!     `N·M` wrap around);
//!   - CPU lists, one per node, separated by `:` (`0-3,8-11:4-7,12-15`);
//!     a CPU that no list names is on node 0;
//!   - `system`, empty or unset: the machine's.
//!
//!   A value that is none of these counts as `system`; a program can
//!   refuse it with [`Topology::from_env`], which says what is wrong.
//! - **The calling thread's CPU**, from `sched_getcpu(3)` (glibc reads it
//!   from the restartable-sequences area or the vDSO: a few nanoseconds,
//!   no system call), looked up in a table of 1024 CPUs ([`MAX_CPUS`];
//!   CPUs past it count as node 0). On a one-node topology no CPU is
//!   asked for at all. A thread migrates at the scheduler's will, so the
//!   answer is a hint that may be stale by the time it is used: a lock may
//!   only use it for performance, never for correctness.
//! - **A thread's own claim**: [`set_thread_node`] makes the calling thread
//!   count as on a node whatever CPU it runs on. Tests use it to put
//!   threads on two nodes of a one-socket machine, and Miri (which has no
//!   `sched_getcpu`) needs it for anything but node 0.
//!
//! Under `--cfg loom` there is no machine: two nodes, and a thread is on
//! node `index % 2` (its locklab thread index), so the models of the
//! NUMA-aware locks see hand-overs within and across nodes.
//!
//! # Not allocating
//!
//! A lock's slow path may run inside `malloc` (the interposer makes a C
//! library's `malloc` take locklab's locks), so the table is built without
//! allocating: the files are read with `open`/`read` into the stack, the
//! variable with `getenv`. Threads that race to build it build the same
//! table; the last store wins and every store is the same.
//!
//! # Orderings
//!
//! The table's entries are stored `Relaxed`, then the state `READY` with
//! `Release`; a reader that loads `READY` with `Acquire` sees the entries.

#![cfg_attr(loom, allow(dead_code))]

use std::cell::Cell;
use std::fmt;

use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The environment variable that gives a virtual topology (see the module
/// documentation). Read once per process, on first use.
pub const TOPOLOGY_VAR: &str = "LOCKLAB_TOPOLOGY";

/// The environment variable that overrides the count of CPUs online
/// ([`online_cpus`]): a positive number. Read once per process.
pub const CPUS_VAR: &str = "LOCKLAB_CPUS";

/// How many CPUs are online: [`CPUS_VAR`] when it holds a positive number
/// (so that a test, or a user who knows better, can decide it), else the
/// count in `/sys/devices/system/cpu/online`; 2 when neither says (Miri,
/// which has no file system and should check the paths of a machine with
/// several). Read once per process, without allocating. The machine's
/// count, not the process's CPU affinity: a thread that a benchmark has
/// pinned to one CPU still shares the lock with threads on the others.
#[cfg(not(loom))]
pub fn online_cpus() -> usize {
    static CPUS: AtomicU32 = AtomicU32::new(0);
    match CPUS.load(Ordering::Relaxed) {
        0 => {
            let n = count_online_cpus().clamp(1, u32::MAX as usize);
            CPUS.store(n as u32, Ordering::Relaxed);
            n
        }
        n => n as usize,
    }
}

#[cfg(not(loom))]
fn count_online_cpus() -> usize {
    if let Some(n) = env_var(c"LOCKLAB_CPUS").and_then(|v| v.trim().parse::<usize>().ok()) {
        if n > 0 {
            return n;
        }
    }
    let mut buf = [0u8; 4096];
    let mut n = 0;
    match read_file(b"/sys/devices/system/cpu/online\0", &mut buf) {
        Some(list) if for_each_cpu(list, |_| n += 1).is_ok() && n > 0 => n,
        _ => 2,
    }
}

/// CPUs the table covers; higher-numbered CPUs count as node 0.
pub const MAX_CPUS: usize = 1024;

/// Nodes a NUMA-aware lock keeps apart: its per-node state is an array of
/// this many entries (fixed, so that the lock has a `const` initialiser),
/// and node `k` uses entry `k % MAX_NODES`. Machines with more nodes work;
/// their nodes share entries.
pub const MAX_NODES: usize = 8;

/// The most nodes a topology may have (they are numbered in a byte).
const NODE_LIMIT: usize = 255;

const UNKNOWN: u8 = 0;
const READY: u8 = 1;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static NODES: AtomicU32 = AtomicU32::new(1);
static CPUS: AtomicU32 = AtomicU32::new(1);
static VIRTUAL: AtomicU8 = AtomicU8::new(0);
static CPU_NODE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];

const NO_CLAIM: u32 = u32::MAX;

std::thread_local! {
    // Const-initialised, no destructor: one thread-pointer-relative load,
    // and nothing allocated on a thread's first use.
    static CLAIM: Cell<u32> = const { Cell::new(NO_CLAIM) };
}

// ------------------------------------------------------------ the table

/// The table as built: nodes, CPUs and each CPU's node.
struct Built {
    nodes: usize,
    cpus: usize,
    is_virtual: bool,
    cpu_node: [u8; MAX_CPUS],
}

#[cold]
#[inline(never)]
fn build_table() {
    let b = build();
    for (slot, &n) in CPU_NODE.iter().zip(b.cpu_node.iter()) {
        slot.store(n, Ordering::Relaxed);
    }
    NODES.store(b.nodes as u32, Ordering::Relaxed);
    CPUS.store(b.cpus as u32, Ordering::Relaxed);
    VIRTUAL.store(u8::from(b.is_virtual), Ordering::Relaxed);
    STATE.store(READY, Ordering::Release);
}

#[inline]
fn ready() {
    if STATE.load(Ordering::Acquire) != READY {
        build_table();
    }
}

/// Builds the table from the variable, else from sysfs.
fn build() -> Built {
    let cpus = configured_cpus();
    let mut b = Built {
        nodes: 1,
        cpus,
        is_virtual: false,
        cpu_node: [0; MAX_CPUS],
    };
    if let Some(spec) = env_spec() {
        if let Ok(Some(nodes)) = parse_into(spec.as_bytes(), &mut b.cpu_node) {
            b.nodes = nodes;
            b.is_virtual = true;
            return b;
        }
    }
    b.nodes = read_sysfs(&mut b.cpu_node);
    b
}

/// The CPUs the kernel has configured (at least 1, at most [`MAX_CPUS`]).
fn configured_cpus() -> usize {
    #[cfg(not(miri))]
    {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        (n.max(1) as usize).min(MAX_CPUS)
    }
    #[cfg(miri)]
    {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_CPUS))
    }
}

/// [`TOPOLOGY_VAR`]'s value (see [`env_var`]).
fn env_spec() -> Option<&'static str> {
    env_var(c"LOCKLAB_TOPOLOGY")
}

/// A variable's value, without allocating: `getenv`'s pointer into the
/// environment, as a string (`None` if unset or not UTF-8).
fn env_var(name: &core::ffi::CStr) -> Option<&'static str> {
    // SAFETY: the name is NUL-terminated; `getenv` returns null or a
    // pointer to a NUL-terminated string in the environment block. The
    // process does not change its environment while locks run (a `setenv`
    // racing with `getenv` is undefined in C, whoever calls it).
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: as above; the string outlives the process's use of it.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    s.to_str().ok()
}

/// Reads each online node's CPU list from sysfs into `cpu_node`; returns
/// the number of nodes (1 if sysfs does not say).
fn read_sysfs(cpu_node: &mut [u8; MAX_CPUS]) -> usize {
    let mut buf = [0u8; 4096];
    let Some(online) = read_file(b"/sys/devices/system/node/online\0", &mut buf) else {
        return 1;
    };
    let mut ids = [0u32; NODE_LIMIT];
    let mut count = 0;
    let ok = for_each_cpu(online, |id| {
        if count < NODE_LIMIT {
            ids[count] = id as u32;
            count += 1;
        }
    });
    if ok.is_err() || count < 2 {
        return 1;
    }
    let mut seen = 0;
    for (dense, &id) in ids[..count].iter().enumerate() {
        let mut path = [0u8; 64];
        let prefix = b"/sys/devices/system/node/node";
        let suffix = b"/cpulist\0";
        path[..prefix.len()].copy_from_slice(prefix);
        let mut at = prefix.len();
        let mut digits = [0u8; 10];
        let mut n = id;
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for i in (0..len).rev() {
            path[at] = digits[i];
            at += 1;
        }
        path[at..at + suffix.len()].copy_from_slice(suffix);
        let mut list = [0u8; 4096];
        let Some(cpus) = read_file(&path, &mut list) else {
            continue;
        };
        let _ = for_each_cpu(cpus, |cpu| {
            if cpu < MAX_CPUS {
                cpu_node[cpu] = dense as u8;
            }
        });
        seen += 1;
    }
    if seen < 2 {
        cpu_node.fill(0);
        return 1;
    }
    count
}

/// The contents of the file at `path` (NUL-terminated) in `buf`, trimmed;
/// `None` if it cannot be read. No allocation.
#[cfg(not(miri))]
fn read_file<'a>(path: &[u8], buf: &'a mut [u8]) -> Option<&'a [u8]> {
    // SAFETY: `path` is NUL-terminated (every caller's literal or buffer
    // ends in one).
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut len = 0;
    while len < buf.len() {
        // SAFETY: writes at most the rest of `buf`.
        let n = unsafe { libc::read(fd, buf[len..].as_mut_ptr().cast(), buf.len() - len) };
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    // SAFETY: our descriptor, closed once.
    unsafe { libc::close(fd) };
    Some(buf[..len].trim_ascii())
}

/// Miri isolates the program from the file system: one node.
#[cfg(miri)]
fn read_file<'a>(_path: &[u8], _buf: &'a mut [u8]) -> Option<&'a [u8]> {
    None
}

// ------------------------------------------------------------- parsing

/// What is wrong with a topology's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpecError {
    /// Not `NxM`, CPU lists or `system`.
    Shape,
    /// A CPU number past [`MAX_CPUS`].
    CpuTooHigh,
    /// Zero nodes, zero CPUs per node, or more nodes than [`NODE_LIMIT`].
    Count,
    /// A range whose end is below its start.
    Range,
}

impl SpecError {
    fn says(self) -> &'static str {
        match self {
            SpecError::Shape => "expected NxM (N nodes of M CPUs, e.g. 2x1), CPU lists per node separated by ':' (e.g. 0-3:4-7), or 'system'",
            SpecError::CpuTooHigh => "a CPU number is past the 1024 the table covers",
            SpecError::Count => "a topology has 1 to 255 nodes, each of at least one CPU",
            SpecError::Range => "a CPU range ends below its start",
        }
    }
}

/// Calls `f` for every CPU of a Linux CPU list (`0-3,8,10-11`).
fn for_each_cpu(list: &[u8], mut f: impl FnMut(usize)) -> Result<(), SpecError> {
    let list = list.trim_ascii();
    if list.is_empty() {
        return Err(SpecError::Shape);
    }
    for item in list.split(|&c| c == b',') {
        let item = item.trim_ascii();
        let (a, b) = match item.iter().position(|&c| c == b'-') {
            Some(i) => (number(&item[..i])?, number(&item[i + 1..])?),
            None => {
                let a = number(item)?;
                (a, a)
            }
        };
        if b < a {
            return Err(SpecError::Range);
        }
        if b >= MAX_CPUS {
            return Err(SpecError::CpuTooHigh);
        }
        (a..=b).for_each(&mut f);
    }
    Ok(())
}

/// A decimal number of at most 9 digits.
fn number(s: &[u8]) -> Result<usize, SpecError> {
    let s = s.trim_ascii();
    if s.is_empty() || s.len() > 9 || !s.iter().all(u8::is_ascii_digit) {
        return Err(SpecError::Shape);
    }
    Ok(s.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0')))
}

/// Parses a topology's text into `cpu_node`: `Ok(None)` for `system`,
/// `Ok(Some(nodes))` for a virtual one. Allocates nothing.
fn parse_into(spec: &[u8], cpu_node: &mut [u8; MAX_CPUS]) -> Result<Option<usize>, SpecError> {
    let spec = spec.trim_ascii();
    if spec.is_empty() || spec.eq_ignore_ascii_case(b"system") {
        return Ok(None);
    }
    if let Some(x) = spec.iter().position(|&c| c == b'x' || c == b'X') {
        let nodes = number(&spec[..x])?;
        let per = number(&spec[x + 1..])?;
        if nodes == 0 || per == 0 || nodes > NODE_LIMIT {
            return Err(SpecError::Count);
        }
        for (cpu, n) in cpu_node.iter_mut().enumerate() {
            *n = ((cpu / per) % nodes) as u8;
        }
        return Ok(Some(nodes));
    }
    cpu_node.fill(0);
    let mut nodes = 0;
    for list in spec.split(|&c| c == b':') {
        if nodes == NODE_LIMIT {
            return Err(SpecError::Count);
        }
        let node = nodes as u8;
        for_each_cpu(list, |cpu| cpu_node[cpu] = node)?;
        nodes += 1;
    }
    Ok(Some(nodes))
}

// ---------------------------------------------------------- the hot path

/// The node the calling thread runs on, `0..node_count()`: its claim
/// ([`set_thread_node`]) if it made one, else its CPU's node. A hint: the
/// thread may have moved by the time the caller uses it.
#[inline]
pub fn current_node() -> usize {
    #[cfg(loom)]
    {
        crate::util::thread_index::current() as usize % 2
    }
    #[cfg(not(loom))]
    {
        let claim = CLAIM.get();
        if claim != NO_CLAIM {
            return claim as usize;
        }
        ready();
        if NODES.load(Ordering::Relaxed) == 1 {
            return 0;
        }
        cpu_node(current_cpu())
    }
}

/// The node of `cpu` in this process's topology (0 past [`MAX_CPUS`]).
pub fn cpu_node(cpu: usize) -> usize {
    ready();
    CPU_NODE
        .get(cpu)
        .map_or(0, |n| usize::from(n.load(Ordering::Relaxed)))
}

/// The CPU the calling thread runs on (0 if the system does not say).
#[cfg(all(target_os = "linux", not(miri)))]
#[inline]
fn current_cpu() -> usize {
    // SAFETY: no preconditions; -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0)
}

#[cfg(not(all(target_os = "linux", not(miri))))]
#[inline]
fn current_cpu() -> usize {
    0
}

/// How many nodes the topology has (at least 1).
pub fn node_count() -> usize {
    #[cfg(loom)]
    {
        2
    }
    #[cfg(not(loom))]
    {
        ready();
        NODES.load(Ordering::Relaxed) as usize
    }
}

/// Makes the calling thread count as running on `node` (`Some`), whatever
/// CPU it is on, or takes that back (`None`). For tests and experiments
/// that place threads on nodes of a machine that has fewer; the locks
/// only ever use a node for performance, so any claim is safe. Under loom
/// it does nothing (a thread's node is its index's parity there).
pub fn set_thread_node(node: Option<usize>) {
    CLAIM.set(node.map_or(NO_CLAIM, |n| n.min(NODE_LIMIT) as u32));
}

// ------------------------------------------------------------ the report

/// A topology as a value: each node's CPUs, for printing and for checking
/// a user's text before it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Each node's CPUs, ascending, among the machine's configured CPUs.
    pub nodes: Vec<Vec<usize>>,
    /// Whether it is a virtual topology (from [`TOPOLOGY_VAR`]) rather
    /// than the machine's.
    pub is_virtual: bool,
}

impl Topology {
    /// The topology the locks of this process use.
    pub fn current() -> Topology {
        ready();
        let nodes = NODES.load(Ordering::Relaxed) as usize;
        let cpus = CPUS.load(Ordering::Relaxed) as usize;
        let mut out = vec![Vec::new(); nodes];
        for cpu in 0..cpus {
            out[cpu_node(cpu)].push(cpu);
        }
        Topology {
            nodes: out,
            is_virtual: VIRTUAL.load(Ordering::Relaxed) != 0,
        }
    }

    /// The topology `spec` describes on a machine of `cpus` CPUs (the
    /// syntax of [`TOPOLOGY_VAR`]): `Ok(None)` for the machine's own
    /// (`system`, or empty); an error that names the value and what is
    /// allowed.
    pub fn parse(spec: &str, cpus: usize) -> Result<Option<Topology>, String> {
        let mut table = [0u8; MAX_CPUS];
        match parse_into(spec.as_bytes(), &mut table) {
            Ok(None) => Ok(None),
            Ok(Some(nodes)) => {
                let mut out = vec![Vec::new(); nodes];
                for (cpu, &n) in table.iter().enumerate().take(cpus.min(MAX_CPUS)) {
                    out[usize::from(n)].push(cpu);
                }
                Ok(Some(Topology {
                    nodes: out,
                    is_virtual: true,
                }))
            }
            Err(e) => Err(format!("{TOPOLOGY_VAR} '{spec}': {}", e.says())),
        }
    }

    /// Checks [`TOPOLOGY_VAR`] as the locks will read it: `Err` with one
    /// line naming the value and what is allowed if it is set to anything
    /// the locks would ignore (they then use the machine's topology).
    pub fn from_env() -> Result<Topology, String> {
        if let Some(v) = std::env::var_os(TOPOLOGY_VAR) {
            let Some(s) = v.to_str() else {
                return Err(format!(
                    "{TOPOLOGY_VAR} '{}': not UTF-8; {}",
                    v.to_string_lossy(),
                    SpecError::Shape.says()
                ));
            };
            Topology::parse(s, configured_cpus())?;
        }
        Ok(Topology::current())
    }
}

impl fmt::Display for Topology {
    /// `1 node: 0-1`, or `2 nodes (virtual): 0 | 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nodes.len();
        write!(f, "{n} node{}", if n == 1 { "" } else { "s" })?;
        if self.is_virtual {
            f.write_str(" (virtual)")?;
        }
        f.write_str(":")?;
        for (i, cpus) in self.nodes.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { " | " })?;
            if cpus.is_empty() {
                f.write_str("-")?;
            }
            let mut i = 0;
            while i < cpus.len() {
                let mut j = i;
                while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                    j += 1;
                }
                if i > 0 {
                    f.write_str(",")?;
                }
                if j > i {
                    write!(f, "{}-{}", cpus[i], cpus[j])?;
                } else {
                    write!(f, "{}", cpus[i])?;
                }
                i = j + 1;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn parsed(spec: &str, cpus: usize) -> Vec<Vec<usize>> {
        Topology::parse(spec, cpus).unwrap().unwrap().nodes
    }

    #[test]
    fn nodes_by_cpus_per_node_wrap_around() {
        assert_eq!(parsed("2x1", 2), [vec![0], vec![1]]);
        assert_eq!(parsed("2x1", 4), [vec![0, 2], vec![1, 3]]);
        assert_eq!(parsed("2x2", 8), [vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        assert_eq!(parsed("1x4", 3), [vec![0, 1, 2]]);
    }

    #[test]
    fn cpu_lists_name_each_node_and_the_rest_are_on_node_0() {
        assert_eq!(
            parsed("0-1,4:2-3", 6),
            [vec![0, 1, 4, 5], vec![2, 3]],
            "CPU 5 is in no list, so on node 0"
        );
        assert_eq!(parsed(" 1 : 0 ", 2), [vec![1], vec![0]]);
    }

    #[test]
    fn system_means_the_machine() {
        assert_eq!(Topology::parse("system", 4), Ok(None));
        assert_eq!(Topology::parse("", 4), Ok(None));
    }

    #[test]
    fn bad_text_is_refused_with_the_value_and_what_is_allowed() {
        for (spec, says) in [
            ("2y1", "expected NxM"),
            ("0x2", "1 to 255 nodes"),
            ("2x0", "1 to 255 nodes"),
            ("3-1", "ends below its start"),
            ("0-2000", "past the 1024"),
            ("0,,1", "expected NxM"),
            ("0:", "expected NxM"),
            ("abc", "expected NxM"),
        ] {
            let e = Topology::parse(spec, 4).unwrap_err();
            assert!(e.contains(&format!("'{spec}'")), "{e}");
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn shown_as_ranges_per_node() {
        let t = Topology::parse("0-3,8:4-7", 10).unwrap().unwrap();
        assert_eq!(t.to_string(), "2 nodes (virtual): 0-3,8-9 | 4-7");
        let one = Topology {
            nodes: vec![vec![0, 1]],
            is_virtual: false,
        };
        assert_eq!(one.to_string(), "1 node: 0-1");
    }

    #[test]
    fn a_thread_claim_overrides_the_cpu_and_is_its_own() {
        set_thread_node(Some(3));
        assert_eq!(current_node(), 3);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(
                    current_node() < node_count(),
                    "another thread's claim leaked"
                );
                set_thread_node(Some(1));
                assert_eq!(current_node(), 1);
            });
        });
        assert_eq!(current_node(), 3);
        set_thread_node(None);
        assert!(current_node() < node_count());
    }

    /// The table the locks read agrees with the report, and a CPU's node
    /// is in range.
    #[test]
    fn the_table_and_the_report_agree() {
        let t = Topology::current();
        assert_eq!(t.nodes.len(), node_count());
        for (node, cpus) in t.nodes.iter().enumerate() {
            for &cpu in cpus {
                assert_eq!(cpu_node(cpu), node);
            }
        }
        assert_eq!(cpu_node(MAX_CPUS + 5), 0);
    }

    /// The virtual topology from the environment, in a child process (the
    /// table is built once per process).
    #[test]
    #[cfg_attr(miri, ignore = "spawns a process")]
    fn the_variable_makes_a_virtual_topology() {
        if std::env::var_os("LOCKLAB_TOPOLOGY_CHILD").is_some() {
            let t = Topology::current();
            assert!(t.is_virtual);
            assert_eq!(node_count(), 2);
            assert_eq!(cpu_node(0), 0);
            assert_eq!(cpu_node(1), 1);
            assert_eq!(cpu_node(2), 0);
            // Pinned to CPU 1 (where there is one), the thread is on node 1.
            #[cfg(target_os = "linux")]
            if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
                // SAFETY: a zeroed cpu_set_t is a valid empty set; the
                // calls take pointers to it for their duration.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(1, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 {
                        assert_eq!(current_node(), 1);
                    }
                }
            }
            return;
        }
        let out = crate::util::testing::run_in_child(
            &["topology::tests::the_variable_makes_a_virtual_topology"],
            &[("LOCKLAB_TOPOLOGY_CHILD", "1"), (TOPOLOGY_VAR, "2x1")],
        );
        assert!(out.contains("1 passed"), "{out}");
    }
}
