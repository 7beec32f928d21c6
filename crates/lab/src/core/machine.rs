//! Detects the machine a run measures on, so every stored result carries its
//! context: CPU model, logical cores, TSC rate, kernel, the compiler and
//! source revision the lab was built from (recorded by `build.rs`), and host
//! name. Detection never fails: what cannot be learnt is "unknown" (or 0
//! cores, or no TSC rate).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::core::results::Machine;

const UNKNOWN: &str = "unknown";

/// Facts about this machine and this build of the lab.
pub fn detect() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (kernel, hostname) = uname();
    Machine {
        cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| UNKNOWN.to_string()),
        cores: cores(&cpuinfo),
        tsc_hz: tsc_hz(&cpuinfo),
        kernel,
        rustc: env!("LOCKLAB_RUSTC").to_string(),
        git_rev: env!("LOCKLAB_GIT_REV").to_string(),
        hostname,
        c2c_round_trip_ns: c2c_round_trip_ns(),
        id: machine_id(),
        rtm: cfg!(target_arch = "x86_64").then(locklab::rtm_available),
    }
}

/// The variable that names this machine for the store, overriding the
/// name derived from the operating system's machine id.
pub const MACHINE_ID_VAR: &str = "LOCKLAB_MACHINE_ID";

/// The namespace of the machine identities derived from machine ids (a
/// random UUID, fixed: changing it would make every machine a new one).
const MACHINE_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x8f1c_52a4_6d0e_4b7a_9c3e_5a1f_0b2d_7e64);

/// This machine's identity, the same in every run it makes, so that a
/// store that many machines push into can tell them apart: the value of
/// `LOCKLAB_MACHINE_ID` if set (a name for a machine, or for a class of
/// machines, such as CI runners that are each new: `ci-amd-2core`), else
/// a name-based UUID (version 5) of the operating system's machine id
/// (`/etc/machine-id`, else `/var/lib/dbus/machine-id`). The machine id
/// itself is never stored: machine-id(5) asks that it be kept
/// confidential, and a one-way name of it identifies the machine as well.
/// `None` where neither is there (some containers); such runs are grouped
/// by host name and CPU instead.
pub fn machine_id() -> Option<String> {
    if let Ok(v) = std::env::var(MACHINE_ID_VAR) {
        let v = v.trim();
        if !v.is_empty() {
            return Some(v.to_string());
        }
    }
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|f| {
            let id = std::fs::read_to_string(f).ok()?;
            let id = id.trim();
            (!id.is_empty()).then(|| machine_id_of(id))
        })
}

/// The identity derived from the machine id `id`.
fn machine_id_of(id: &str) -> String {
    uuid::Uuid::new_v5(&MACHINE_NAMESPACE, id.as_bytes()).to_string()
}

/// Round trips per timed batch of [`c2c_round_trip_ns`].
const C2C_TRIPS: u32 = 5_000;
/// Batches timed; the fastest counts (interruptions only add time).
const C2C_BATCHES: u32 = 5;

/// The round trip of one cache line between the first two CPUs this
/// process may run on: one thread on each, pinned, passing a flag back and
/// forth. About 5–30 ms. `None` with fewer than two CPUs or when pinning
/// is refused.
pub fn c2c_round_trip_ns() -> Option<f64> {
    use std::sync::atomic::{AtomicU32, Ordering};
    let cpus = allowed_cpus();
    let (a, b) = (*cpus.first()?, *cpus.get(1)?);
    let flag = crossbeam_utils::CachePadded::new(AtomicU32::new(0));
    let flag = &flag;
    std::thread::scope(|s| {
        let other = s.spawn(move || {
            if !pin(b) {
                // Tell the timer we are not coming (it waits for 1 first).
                flag.store(u32::MAX, Ordering::Release);
                return;
            }
            flag.store(1, Ordering::Release);
            for _ in 0..C2C_BATCHES * C2C_TRIPS {
                while flag.load(Ordering::Acquire) != 2 {
                    core::hint::spin_loop();
                }
                flag.store(1, Ordering::Release);
            }
        });
        let pinned = pin(a);
        loop {
            match flag.load(Ordering::Acquire) {
                1 => break,
                u32::MAX => return None,
                _ => core::hint::spin_loop(),
            }
        }
        let mut best = f64::INFINITY;
        for _ in 0..C2C_BATCHES {
            let t = std::time::Instant::now();
            for _ in 0..C2C_TRIPS {
                flag.store(2, Ordering::Release);
                while flag.load(Ordering::Acquire) != 1 {
                    core::hint::spin_loop();
                }
            }
            best = best.min(t.elapsed().as_nanos() as f64 / f64::from(C2C_TRIPS));
        }
        let _ = other.join();
        // Unpin this thread again: it goes on to run the benchmark.
        unpin(&cpus);
        (pinned && best.is_finite()).then_some(best)
    })
}

/// The CPUs this process may run on, in order.
fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is a plain bitmask that the kernel fills.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        if libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
        }
    }
    Vec::new()
}

/// Pins the calling thread to `cpu`; whether that worked.
pub fn pin(cpu: usize) -> bool {
    set_affinity(&[cpu])
}

/// Lets the calling thread run on `cpus` again.
fn unpin(cpus: &[usize]) {
    set_affinity(cpus);
}

fn set_affinity(cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is a plain bitmask the libc macros fill; the call only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        return libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) == 0;
    }
    #[allow(unreachable_code)]
    {
        let _ = cpus;
        false
    }
}

/// The first value of a `key : value` line in /proc/cpuinfo.
fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key)
            .then(|| v.trim())
            .filter(|v| !v.is_empty())
    })
}

/// "model name" on x86; other architectures name the CPU differently.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "Hardware", "cpu model", "cpu"]
        .iter()
        .find_map(|key| cpuinfo_field(cpuinfo, key))
        .map(str::to_string)
}

/// Logical CPUs this process may run on: its affinity mask and cgroup
/// limits count, because that is what a benchmark can use (1 if unknown).
/// Every default the lab derives from the core count follows it, so a
/// test or a user sets it with the affinity mask (`taskset -c 0 locklab
/// …` runs the lab as on a one-CPU machine).
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn cores(cpuinfo: &str) -> usize {
    if let Ok(n) = std::thread::available_parallelism() {
        return n.get();
    }
    cpuinfo
        .lines()
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count()
}

/// The TSC rate: the nominal frequency in the model name (Intel names it,
/// "… @ 2.40GHz", and its invariant TSC ticks at that rate), else a
/// measurement against the monotonic clock. Only on x86_64, and only when the
/// TSC is invariant (`constant_tsc`), since otherwise it has no one rate.
fn tsc_hz(cpuinfo: &str) -> Option<u64> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let flags = cpuinfo_field(cpuinfo, "flags").unwrap_or("");
    // An unreadable /proc/cpuinfo says nothing either way: measure.
    if !flags.is_empty() && !flags.split_whitespace().any(|f| f == "constant_tsc") {
        return None;
    }
    cpuinfo_field(cpuinfo, "model name")
        .and_then(ghz_in_model_name)
        .or_else(measure_tsc_hz)
}

/// Parses the "@ x.xxGHz" suffix of a CPU model name into Hz.
fn ghz_in_model_name(model: &str) -> Option<u64> {
    let (_, after) = model.rsplit_once('@')?;
    let num = after.trim().strip_suffix("GHz")?.trim();
    let ghz: f64 = num.parse().ok()?;
    (ghz.is_finite() && ghz > 0.0 && ghz < 100.0).then(|| (ghz * 1e9).round() as u64)
}

/// The lab clock's measured rate (ticks per ns over ~20 ms of the monotonic
/// clock), rounded to 1 MHz (the measurement is not finer than that).
fn measure_tsc_hz() -> Option<u64> {
    let mhz = (crate::core::clock::ticks_per_ns() * 1e3).round();
    (mhz.is_finite() && mhz >= 1.0).then(|| mhz as u64 * 1_000_000)
}

/// (kernel, host name) from uname(2), else from /proc/sys/kernel.
fn uname() -> (String, String) {
    // SAFETY: `utsname` is plain bytes, so all-zero is a valid value, and
    // uname(2) writes only into the struct we pass.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).trim().to_string()
        };
        let kernel = [field(&u.sysname), field(&u.release), field(&u.version)]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let host = field(&u.nodename);
        return (non_empty(kernel), non_empty(host));
    }
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let kernel = format!("{} {}", read("osrelease"), read("version"));
    (
        non_empty(kernel.trim().to_string()),
        non_empty(read("hostname")),
    )
}

fn non_empty(s: String) -> String {
    if s.is_empty() {
        UNKNOWN.to_string()
    } else {
        s
    }
}

/// The current time as RFC 3339 UTC with whole seconds, e.g.
/// `2025-03-01T14:05:09Z`.
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// A time as RFC 3339 UTC with whole seconds (sub-second part dropped,
/// rounding toward the past also before 1970).
pub fn rfc3339(t: SystemTime) -> String {
    let secs: i64 = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => {
            let d = e.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            -whole - i64::from(d.subsec_nanos() > 0)
        }
    };
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// The proleptic Gregorian (year, month, day) of a day count since
/// 1970-01-01 (Howard Hinnant's `civil_from_days`: shift to eras of 400 years
/// that start on March 1, so the leap day is the last day of the year).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The round trip is measured with two CPUs and not without; either
    /// way the calling thread may run where it could before (benchmark
    /// threads inherit its affinity, so a leftover pin would put them all
    /// on one CPU).
    #[test]
    fn round_trip_measures_and_leaves_the_caller_unpinned() {
        let before = allowed_cpus();
        let rt = c2c_round_trip_ns();
        assert_eq!(allowed_cpus(), before, "affinity not restored");
        if before.len() >= 2 {
            let ns = rt.expect("two CPUs to pin to");
            // One line there and back: more than a cycle, less than a
            // millisecond on any machine that can run the lab.
            assert!((0.1..1e6).contains(&ns), "{ns} ns");
        } else {
            assert_eq!(rt, None);
        }
        // Restricted to one CPU, there is nothing to measure.
        std::thread::spawn(move || {
            assert!(pin(before[0]));
            assert_eq!(c2c_round_trip_ns(), None);
            assert_eq!(allowed_cpus(), vec![before[0]]);
        })
        .join()
        .unwrap();
    }

    fn is_leap(y: i64) -> bool {
        (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
    }

    fn month_len(y: i64, m: u32) -> u32 {
        match m {
            2 if is_leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    #[test]
    fn civil_from_days_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_088), (2024, 12, 31));
        assert_eq!(civil_from_days(-25_508), (1900, 3, 1));
    }

    #[test]
    fn civil_from_days_agrees_with_walking_the_calendar() {
        // Walk day by day from 1970-01-01 forward to 2110 and backward to
        // 1890, crossing 1900 (not a leap year) and 2000 (one).
        let (mut y, mut m, mut d) = (1970i64, 1u32, 1u32);
        for days in 0..(140 * 366) {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            d += 1;
            if d > month_len(y, m) {
                (m, d) = (m + 1, 1);
                if m > 12 {
                    (y, m) = (y + 1, 1);
                }
            }
        }
        let (mut y, mut m, mut d) = (1970i64, 1u32, 1u32);
        for days in (-(80 * 366)..=0).rev() {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            if d > 1 {
                d -= 1;
            } else {
                if m > 1 {
                    m -= 1;
                } else {
                    (y, m) = (y - 1, 12);
                }
                d = month_len(y, m);
            }
        }
    }

    #[test]
    fn rfc3339_formats_utc_seconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH
            + std::time::Duration::from_secs(951_782_400 + 3_723)
            + std::time::Duration::from_millis(999);
        assert_eq!(rfc3339(t), "2000-02-29T01:02:03Z");
        let before = UNIX_EPOCH - std::time::Duration::from_millis(500);
        assert_eq!(rfc3339(before), "1969-12-31T23:59:59Z");
        let now = now_rfc3339();
        assert_eq!(now.len(), 20);
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }

    #[test]
    fn model_name_frequency() {
        assert_eq!(
            ghz_in_model_name("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"),
            Some(2_400_000_000)
        );
        assert_eq!(ghz_in_model_name("AMD EPYC 7B13 64-Core Processor"), None);
        assert_eq!(ghz_in_model_name("Weird @ fastGHz"), None);
    }

    #[test]
    fn cpuinfo_fields_and_missing_file() {
        let info = "processor\t: 0\nmodel name\t: Test CPU @ 3.00GHz\nflags\t\t: fpu tsc constant_tsc\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 3.00GHz\n";
        assert_eq!(cpu_model(info).as_deref(), Some("Test CPU @ 3.00GHz"));
        if cfg!(target_arch = "x86_64") {
            assert_eq!(tsc_hz(info), Some(3_000_000_000));
            assert_eq!(
                tsc_hz("flags\t: fpu tsc\n"),
                None,
                "no invariant TSC, no rate"
            );
        }
        assert_eq!(cpu_model(""), None);
    }

    #[test]
    fn a_machine_id_names_its_machine_one_way() {
        let a = machine_id_of("0123456789abcdef0123456789abcdef");
        assert_eq!(
            a,
            machine_id_of("0123456789abcdef0123456789abcdef"),
            "stable"
        );
        assert_ne!(a, machine_id_of("0123456789abcdef0123456789abcdee"));
        assert!(
            !a.contains("0123456789abcdef"),
            "{a}: the machine id itself shows"
        );
        assert_eq!(
            uuid::Uuid::parse_str(&a).map(|u| u.get_version_num()),
            Ok(5)
        );
    }

    #[test]
    fn detect_fills_every_field() {
        let m = detect();
        assert!(!m.cpu_model.is_empty());
        assert!(m.cores >= 1);
        assert!(!m.kernel.is_empty() && !m.hostname.is_empty());
        assert!(!m.rustc.is_empty() && !m.git_rev.is_empty());
        if let Some(hz) = m.tsc_hz {
            assert!(hz >= 1_000_000, "{hz}");
        }
    }
}
