//! Scenario files of `sim lhp --config FILE.toml`: the host, its pause-loop
//! exiting and the VMs in TOML, read into a `locklab_model::lhp::Scenario`
//! (the format is documented in docs/lhp.md, "Scenario files").
//!
//! The file's units are the ones people write: host times in µs, the
//! measured and warm-up times in ms, workload phase lengths in ns (as
//! `Dist::parse` reads them), PLE settings in CPU cycles. Every table
//! refuses unknown keys, so a misspelt key is an error and not a default.
//! Errors start with the file's name and name the field as the file spells
//! it (`vm[1].hold`, `host.tick_us`); TOML syntax and type errors keep the
//! line and column. `Scenario::validate` does the range checks, and its
//! field names (`vm[1].workload.hold`, `host.tick_ns`) are translated back
//! to the file's.

use std::fmt;
use std::path::Path;

use locklab_model::lhp::{
    ConfigError, Dist, Host, LockKind, Ple, PleMode, Policy, Scenario, VmSpec, Workload,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use toml::Spanned;

use crate::core::error::{LabError, Result};

/// vCPUs of a VM whose `[[vm]]` table does not say (seed 004's).
pub const DEFAULT_VCPUS: u32 = 8;

/// A scenario file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioFile {
    /// The table title: the file's `name`, else the file name without `.toml`.
    pub name: String,
    /// The scenario (its `policy` is `none`: the command runs every policy).
    pub scenario: Scenario,
    /// The file's `policies`, if it lists them.
    pub policies: Option<Vec<Policy>>,
}

/// What the command line overrides in the file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--secs`: measured simulated seconds.
    pub secs: Option<f64>,
    /// `--warmup-secs`.
    pub warmup_secs: Option<f64>,
    /// `--seed`.
    pub seed: Option<u64>,
}

/// Most bytes of a scenario file read (a scenario is a few KiB).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Reads and checks the scenario file at `path`.
pub fn load(path: &Path, overrides: &Overrides) -> Result<ScenarioFile> {
    let shown = path.display().to_string();
    // A FIFO, a device or a directory is refused, and a file is read only
    // up to a bound far above any scenario (a few KiB).
    let text = crate::core::files::read_input(
        "--config",
        path,
        MAX_SCENARIO_BYTES,
        "a scenario file (TOML, a regular file of a few KiB)",
    )?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(&text, &shown, &stem, overrides)
}

/// Reads a scenario from `text`; `shown` names the file in errors and
/// `stem` is the name when the file gives none.
pub fn parse(text: &str, shown: &str, stem: &str, overrides: &Overrides) -> Result<ScenarioFile> {
    let file: FileToml = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!("{}: ", line_col(text, s.start)))
            .unwrap_or_default();
        LabError::input(format!(
            "{shown}: {at}{}",
            crate::core::error::one_line(e.message())
        ))
    })?;
    let fail = |at: usize, field: &str, msg: String| {
        LabError::input(format!("{shown}: {}: {field}: {msg}", line_col(text, at)))
    };

    let name = match &file.name {
        Some(n) => n.get_ref().trim().to_string(),
        None => stem.to_string(),
    };
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        let at = file.name.as_ref().map_or(0, |n| n.span().start);
        return Err(fail(
            at,
            "name",
            format!(
                "{:?} is not allowed: a name of 1 to 64 characters on one line",
                name
            ),
        ));
    }

    let policies = match &file.policies {
        None => None,
        Some(list) if list.get_ref().is_empty() => {
            return Err(fail(
                list.span().start,
                "policies",
                "an empty list: name at least one policy, or leave the key out for all".into(),
            ))
        }
        Some(list) => {
            let mut v: Vec<Policy> = Vec::new();
            for (i, p) in list.get_ref().iter().enumerate() {
                let add = if p.get_ref() == "all" {
                    Policy::ALL.to_vec()
                } else {
                    vec![Policy::from_name(p.get_ref()).ok_or_else(|| {
                        fail(
                            p.span().start,
                            &format!("policies[{i}]"),
                            format!(
                                "'{}' is not a policy: allowed all, {}",
                                p.get_ref(),
                                Policy::names()
                            ),
                        )
                    })?]
                };
                for p in add {
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
            }
            Some(v)
        }
    };

    let host = file.host.unwrap_or_default();
    let mut h = Host::new(host.pcpus.unwrap_or(8));
    if let Some(x) = host.cpu_ghz {
        h.cpu_ghz = x;
    }
    let us_fields = [
        (
            "sched_latency",
            host.sched_latency_us,
            &mut h.sched_latency_ns,
        ),
        (
            "min_granularity",
            host.min_granularity_us,
            &mut h.min_granularity_ns,
        ),
        (
            "wakeup_granularity",
            host.wakeup_granularity_us,
            &mut h.wakeup_granularity_ns,
        ),
        ("tick", host.tick_us, &mut h.tick_ns),
        ("balance", host.balance_us, &mut h.balance_ns),
        ("switch", host.switch_us, &mut h.switch_ns),
        ("exit", host.exit_us, &mut h.exit_ns),
        ("handoff", host.handoff_us, &mut h.handoff_ns),
        ("pv_spin", host.pv_spin_us, &mut h.pv_spin_ns),
    ];
    for (key, given, slot) in us_fields {
        if let Some(us) = given {
            if !us.is_finite() || us < 0.0 {
                return Err(LabError::input(format!(
                    "{shown}: host.{key}_us: {us} µs is not allowed: a finite time of 0 or more"
                )));
            }
            *slot = us * 1e3;
        }
    }
    if let Some(c) = host.spin_loop_cycles {
        h.spin_loop_cycles = c;
    }

    let ple = ple(&file.ple.unwrap_or_default(), &fail)?;

    let mut vms = Vec::with_capacity(file.vm.len());
    for (i, vm) in file.vm.into_iter().enumerate() {
        vms.push(vm_spec(i, vm, &fail)?);
    }

    let mut scenario = Scenario::new(vms, Policy::None);
    scenario.host = h;
    scenario.ple = ple;
    if let Some(ms) = file.duration_ms {
        scenario.duration_ns = ms * 1e6;
    }
    if let Some(ms) = file.warmup_ms {
        scenario.warmup_ns = ms * 1e6;
    }
    if let Some(s) = file.seed {
        scenario.seed = s;
    }
    if let Some(s) = overrides.secs {
        scenario.duration_ns = s * 1e9;
    }
    if let Some(s) = overrides.warmup_secs {
        scenario.warmup_ns = s * 1e9;
    }
    if let Some(s) = overrides.seed {
        scenario.seed = s;
    }
    scenario
        .validate()
        .map_err(|e| LabError::input(format!("{shown}: {}", file_error(&e, overrides))))?;
    for (i, vm) in scenario.vms.iter().enumerate() {
        time_advances(&vm.workload)
            .map_err(|(key, msg)| LabError::input(format!("{shown}: vm[{i}]{key}: {msg}")))?;
    }
    Ok(ScenarioFile {
        name,
        scenario,
        policies,
    })
}

/// The pause-loop exiting of the `[ple]` table: seed 004's fixed window
/// unless `mode = "kvm"`, each key overriding the mode's default.
fn ple(p: &PleToml, fail: &impl Fn(usize, &str, String) -> LabError) -> Result<Ple> {
    let kvm = match &p.mode {
        None => false,
        Some(m) => match m.get_ref().as_str() {
            "fixed" => false,
            "kvm" => true,
            other => {
                return Err(fail(
                    m.span().start,
                    "ple.mode",
                    format!(
                        "'{other}' is not a PLE mode: allowed fixed (one window) or kvm (KVM's adaptive window)"
                    ),
                ))
            }
        },
    };
    let mut ple = if kvm { Ple::kvm() } else { Ple::seed004() };
    if let Some(g) = p.gap {
        ple.gap_cycles = g;
    }
    if let Some(w) = p.window {
        ple.window_cycles = w;
    }
    match &mut ple.mode {
        PleMode::Kvm {
            grow,
            shrink,
            max_cycles,
        } => {
            if let Some(g) = p.grow {
                *grow = g;
            }
            if let Some(s) = p.shrink {
                *shrink = s;
            }
            if let Some(m) = p.max {
                *max_cycles = m;
            }
        }
        PleMode::Fixed => {
            for (key, given) in [
                ("grow", p.grow.map(u64::from)),
                ("shrink", p.shrink.map(u64::from)),
                ("max", p.max),
            ] {
                if given.is_some() {
                    let at = p.mode.as_ref().map_or(0, |m| m.span().start);
                    return Err(fail(
                        at,
                        &format!("ple.{key}"),
                        "only for mode = \"kvm\" (the fixed window neither grows nor shrinks)"
                            .into(),
                    ));
                }
            }
        }
    }
    Ok(ple)
}

/// One `[[vm]]` table: a preset workload, then the keys that override it.
fn vm_spec(
    i: usize,
    vm: VmToml,
    fail: &impl Fn(usize, &str, String) -> LabError,
) -> Result<VmSpec> {
    let at = |key: &str| format!("vm[{i}].{key}");
    let mut w = Workload::preset(vm.workload.get_ref()).ok_or_else(|| {
        fail(
            vm.workload.span().start,
            &at("workload"),
            format!(
                "'{}' is not a workload: allowed {}",
                vm.workload.get_ref(),
                locklab_model::lhp::config::PRESETS.join(", ")
            ),
        )
    })?;
    if let Some(n) = &vm.name {
        let name = n.get_ref().trim();
        if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
            return Err(fail(
                n.span().start,
                &at("name"),
                format!("{name:?} is not allowed: a name of 1 to 64 characters on one line"),
            ));
        }
        w.name = name.to_string();
    }
    if let Some(l) = &vm.lock {
        w.lock = LockKind::from_name(l.get_ref()).ok_or_else(|| {
            fail(
                l.span().start,
                &at("lock"),
                format!(
                    "'{}' is not a guest lock: allowed {}",
                    l.get_ref(),
                    LockKind::ALL.map(LockKind::name).join(", ")
                ),
            )
        })?;
    }
    if let Some(Len(d)) = vm.user {
        w.user = d;
    }
    if let Some(Len(d)) = vm.kernel {
        w.kernel = d;
    }
    if let Some(Len(d)) = vm.hold {
        w.hold = d;
    }
    if let Some(Think(t)) = vm.think {
        w.think = t;
    }
    if let Some(n) = vm.sections {
        w.sections = n;
    }
    if let Some(n) = vm.locks {
        w.locks = n;
    }
    if let Some(n) = vm.threads {
        w.threads = Some(n);
    }
    if let Some(x) = vm.ipi {
        w.ipi = x;
    }
    let mut spec = VmSpec::new(w, vm.count.unwrap_or(1), vm.vcpus.unwrap_or(DEFAULT_VCPUS));
    if let Some(wt) = vm.weight {
        spec.weight = wt;
    }
    Ok(spec)
}

/// Shortest mean cycle of a workload, ns. Every cycle is a few events for
/// the simulator whatever its length, so the events per simulated second
/// grow as the cycle shrinks: at 100 ns, an 8-pCPU host makes some 10⁸ of
/// them per simulated second, and much shorter cycles would keep a
/// simulation going for hours while simulated time hardly moves.
pub const MIN_CYCLE_NS: f64 = 100.0;

/// Checks that a workload moves simulated time on: the simulator counts
/// whole ns, so a phase shorter than 1 ns takes no time at all, and a
/// cycle must last at least [`MIN_CYCLE_NS`] on average. The error is the
/// key (`.user`, or empty for the whole cycle) and what is allowed.
fn time_advances(w: &Workload) -> std::result::Result<(), (&'static str, String)> {
    let locked = w.sections > 0;
    for (key, d, used) in [
        (".user", Some(w.user), true),
        (".kernel", Some(w.kernel), locked),
        (".hold", Some(w.hold), locked),
        (".think", w.think, true),
    ] {
        let Some(d) = d.filter(|_| used) else {
            continue;
        };
        let mean = d.mean();
        if mean > 0.0 && mean < 1.0 {
            return Err((
                key,
                format!(
                    "{d} is shorter than the simulator's step of 1 ns, so the phase would take \
                     no time: allowed 0 or at least 1 ns"
                ),
            ));
        }
    }
    let cycle = w.user.mean()
        + f64::from(w.sections) * (w.kernel.mean() + w.hold.mean())
        + w.think.map_or(0.0, Dist::mean);
    if cycle < MIN_CYCLE_NS {
        return Err((
            "",
            format!(
                "a cycle of the workload (user + sections × (kernel + hold) + think) lasts \
                 {cycle} ns on average, too short for simulated time to advance at a useful \
                 pace: allowed at least {MIN_CYCLE_NS} ns"
            ),
        ));
    }
    Ok(())
}

/// A validation error with the field as the file spells it.
fn file_error(e: &ConfigError, o: &Overrides) -> String {
    let f = e.field.as_str();
    let (field, note) = if let Some(rest) = f.strip_prefix("host.") {
        match rest.strip_suffix("_ns") {
            Some(key) => (
                format!("host.{key}_us"),
                " (the value in ns: the file gives µs)",
            ),
            None => (f.to_string(), ""),
        }
    } else if f.starts_with("vm[") {
        (f.replacen("].workload.", "].", 1), "")
    } else if f == "duration" {
        if o.secs.is_some() {
            ("--secs".to_string(), " (the value in ns)")
        } else {
            (
                "duration_ms".to_string(),
                " (the value in ns: the file gives ms)",
            )
        }
    } else if f == "warmup" {
        if o.warmup_secs.is_some() {
            ("--warmup-secs".to_string(), " (the value in ns)")
        } else {
            (
                "warmup_ms".to_string(),
                " (the value in ns: the file gives ms)",
            )
        }
    } else {
        (f.to_string(), "")
    };
    format!("{field}: {}{note}", e.message)
}

/// `line L, column C` of byte offset `at` in `text`, both from 1.
fn line_col(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {col}")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    name: Option<Spanned<String>>,
    policies: Option<Spanned<Vec<Spanned<String>>>>,
    duration_ms: Option<f64>,
    warmup_ms: Option<f64>,
    seed: Option<u64>,
    host: Option<HostToml>,
    ple: Option<PleToml>,
    #[serde(default)]
    vm: Vec<VmToml>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostToml {
    pcpus: Option<u32>,
    cpu_ghz: Option<f64>,
    sched_latency_us: Option<f64>,
    min_granularity_us: Option<f64>,
    wakeup_granularity_us: Option<f64>,
    tick_us: Option<f64>,
    balance_us: Option<f64>,
    switch_us: Option<f64>,
    exit_us: Option<f64>,
    handoff_us: Option<f64>,
    pv_spin_us: Option<f64>,
    spin_loop_cycles: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PleToml {
    mode: Option<Spanned<String>>,
    gap: Option<u64>,
    window: Option<u64>,
    grow: Option<u32>,
    shrink: Option<u32>,
    max: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VmToml {
    workload: Spanned<String>,
    name: Option<Spanned<String>>,
    count: Option<u32>,
    vcpus: Option<u32>,
    weight: Option<u32>,
    lock: Option<Spanned<String>>,
    user: Option<Len>,
    kernel: Option<Len>,
    hold: Option<Len>,
    sections: Option<u32>,
    locks: Option<u32>,
    threads: Option<u32>,
    think: Option<Think>,
    ipi: Option<f64>,
}

/// A phase length: a number of ns (fixed), or `Dist::parse`'s text
/// (`"exp:20000"`, `"const:500"`). A bad text is reported where it stands.
#[derive(Debug)]
struct Len(Dist);

/// A think time: a length, or `"none"` (the next cycle starts at once).
#[derive(Debug)]
struct Think(Option<Dist>);

struct LenVisitor {
    none_allowed: bool,
}

impl Visitor<'_> for LenVisitor {
    type Value = Option<Dist>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a length in ns: a number, or a text like \"exp:20000\" or \"const:500\"")?;
        if self.none_allowed {
            f.write_str(", or \"none\"")?;
        }
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Self::Value, E> {
        Ok(Some(Dist::Const(v as f64)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Self::Value, E> {
        Ok(Some(Dist::Const(v as f64)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Self::Value, E> {
        Ok(Some(Dist::Const(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
        if self.none_allowed && v.trim() == "none" {
            return Ok(None);
        }
        Dist::parse(v).map(Some).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Len {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Len, D::Error> {
        d.deserialize_any(LenVisitor {
            none_allowed: false,
        })?
        .map(Len)
        .ok_or_else(|| de::Error::custom("a length is needed here"))
    }
}

impl<'de> Deserialize<'de> for Think {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Think, D::Error> {
        d.deserialize_any(LenVisitor { none_allowed: true })
            .map(Think)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::EXIT_INPUT;

    fn read(text: &str) -> Result<ScenarioFile> {
        parse(text, "s.toml", "s", &Overrides::default())
    }

    fn err(text: &str) -> String {
        let e = read(text).expect_err("expected an error");
        assert_eq!(e.code, EXIT_INPUT);
        assert!(!e.msg.contains('\n'), "one line: {:?}", e.msg);
        assert!(e.msg.starts_with("s.toml: "), "names the file: {}", e.msg);
        e.msg
    }

    const VM: &str = "[[vm]]\nworkload = \"oltp\"\n";

    #[test]
    fn the_suggested_format_reads_with_presets_overridden() {
        let f = read(
            r#"
name = "my-scenario"
policies = ["none", "itcs"]
duration_ms = 500
warmup_ms = 50
seed = 7

[host]
pcpus = 4
cpu_ghz = 3.0
sched_latency_us = 24000
tick_us = 4000
switch_us = 1.5
handoff_us = 0.05

[ple]
mode = "kvm"
gap = 64
window = 8192
grow = 4
shrink = 2
max = 65536

[[vm]]
workload = "oltp"
count = 4
vcpus = 2
weight = 2048
lock = "tas"
user = "exp:20000"
kernel = 2500
hold = "const:800"
sections = 3
locks = 5
threads = 1
think = "exp:100000"
ipi = 0.25

[[vm]]
workload = "pi"
name = "crunch"
"#,
        )
        .unwrap();
        assert_eq!(f.name, "my-scenario");
        assert_eq!(f.policies, Some(vec![Policy::None, Policy::Itcs]));
        let s = &f.scenario;
        assert_eq!(s.duration_ns, 5e8);
        assert_eq!(s.warmup_ns, 5e7);
        assert_eq!(s.seed, 7);
        // µs in the file, ns in the scenario; the rest from Host::new(4).
        assert_eq!(s.host.pcpus, 4);
        assert_eq!(s.host.cpu_ghz, 3.0);
        assert_eq!(s.host.sched_latency_ns, 24_000_000.0);
        assert_eq!(s.host.tick_ns, 4_000_000.0);
        assert_eq!(s.host.switch_ns, 1_500.0);
        assert!((s.host.handoff_ns - 50.0).abs() < 1e-9);
        assert_eq!(s.host.balance_ns, Host::new(4).balance_ns);
        assert_eq!(s.host.min_granularity_ns, Host::new(4).min_granularity_ns);
        assert_eq!(
            s.ple,
            Ple {
                gap_cycles: 64,
                window_cycles: 8192,
                mode: PleMode::Kvm {
                    grow: 4,
                    shrink: 2,
                    max_cycles: 65536
                }
            }
        );
        let oltp = &s.vms[0];
        assert_eq!((oltp.count, oltp.vcpus, oltp.weight), (4, 2, 2048));
        let w = &oltp.workload;
        assert_eq!(w.name, "oltp");
        assert_eq!(w.lock, LockKind::Tas);
        assert_eq!(w.user, Dist::Exp(20_000.0));
        assert_eq!(w.kernel, Dist::Const(2_500.0));
        assert_eq!(w.hold, Dist::Const(800.0));
        assert_eq!((w.sections, w.locks, w.threads), (3, 5, Some(1)));
        assert_eq!(w.think, Some(Dist::Exp(100_000.0)));
        assert_eq!(w.ipi, 0.25);
        // Only the name differs from the preset; 8 vCPUs, one VM, nice 0.
        let pi = &s.vms[1];
        assert_eq!((pi.count, pi.vcpus, pi.weight), (1, DEFAULT_VCPUS, 1024));
        assert_eq!(pi.name, "crunch");
        let mut preset = Workload::preset("pi").unwrap();
        preset.name = "crunch".into();
        assert_eq!(pi.workload, preset);
    }

    #[test]
    fn a_minimal_file_is_seed_004s_host_and_defaults() {
        let f = read(VM).unwrap();
        assert_eq!(f.name, "s", "the file name without .toml");
        assert_eq!(f.policies, None);
        let mut want = Scenario::new(
            vec![VmSpec::new(Workload::preset("oltp").unwrap(), 1, 8)],
            Policy::None,
        );
        want.seed = 1;
        assert_eq!(f.scenario, want);
        assert_eq!(f.scenario.ple, Ple::seed004());
    }

    #[test]
    fn think_none_removes_the_presets_think_time() {
        let f = read("[[vm]]\nworkload = \"latency\"\nthink = \"none\"\n").unwrap();
        assert_eq!(f.scenario.vms[0].workload.think, None);
        let f = read("[[vm]]\nworkload = \"latency\"\n").unwrap();
        assert!(f.scenario.vms[0].workload.think.is_some());
        let e = err("[[vm]]\nworkload = \"oltp\"\nhold = \"none\"\n");
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn the_command_line_overrides_length_and_seed() {
        let o = Overrides {
            secs: Some(0.25),
            warmup_secs: Some(0.0),
            seed: Some(99),
        };
        let f = parse(
            &format!("duration_ms = 5000\nseed = 3\n{VM}"),
            "s.toml",
            "s",
            &o,
        )
        .unwrap();
        assert_eq!(
            (
                f.scenario.duration_ns,
                f.scenario.warmup_ns,
                f.scenario.seed
            ),
            (2.5e8, 0.0, 99)
        );
    }

    #[test]
    fn validation_errors_name_the_field_as_the_file_spells_it() {
        let e = err("[[vm]]\nworkload = \"oltp\"\n[[vm]]\nworkload = \"pi\"\nvcpus = 0\n");
        assert_eq!(
            e,
            "s.toml: vm[1].vcpus: a VM with no vCPUs is not allowed: at least 1"
        );
        let e = err(&format!("{VM}hold = -5\n"));
        assert!(
            e.starts_with("s.toml: vm[0].hold: -5 ns is not allowed"),
            "{e}"
        );
        let e = err(&format!("{VM}user = \"exp:-20\"\n"));
        assert!(e.starts_with("s.toml: vm[0].user: -20 ns"), "{e}");
        let e = err(&format!("{VM}threads = 9\n"));
        assert!(e.starts_with("s.toml: vm[0].threads: 9 threads"), "{e}");
        let e = err(&format!("{VM}ipi = 1.5\n"));
        assert!(
            e.starts_with("s.toml: vm[0].ipi: 1.5 is not a chance"),
            "{e}"
        );
        let e = err(&format!("[host]\npcpus = 0\n{VM}"));
        assert!(e.starts_with("s.toml: host.pcpus: 0 pCPUs"), "{e}");
        let e = err(&format!("[host]\ntick_us = 1\n{VM}"));
        assert!(
            e.starts_with("s.toml: host.tick_us: 1000 ns is too short"),
            "{e}"
        );
        assert!(e.contains("file gives µs"), "{e}");
        let e = err(&format!("[host]\nexit_us = -1\n{VM}"));
        assert!(e.starts_with("s.toml: host.exit_us: -1 µs"), "{e}");
        let e = err(&format!("duration_ms = 0\n{VM}"));
        assert!(
            e.starts_with("s.toml: duration_ms: 0 is not allowed"),
            "{e}"
        );
        let e = err(&format!("warmup_ms = -1\n{VM}"));
        assert!(e.starts_with("s.toml: warmup_ms: "), "{e}");
        let e = err(&format!("[ple]\nwindow = 0\n{VM}"));
        assert!(e.starts_with("s.toml: ple.window: "), "{e}");
        let e = err(&format!("[ple]\nmode = \"kvm\"\ngrow = 0\n{VM}"));
        assert!(e.starts_with("s.toml: ple.grow: "), "{e}");
        let e = err(&format!("[ple]\ngrow = 2\n{VM}"));
        assert!(e.contains("ple.grow: only for mode = \"kvm\""), "{e}");
        let e = err("seed = 1\n");
        assert_eq!(e, "s.toml: vm: a scenario needs at least one VM");
        let e = err(&format!("{VM}count = 0\n"));
        assert!(e.starts_with("s.toml: vm[0].count: "), "{e}");
    }

    #[test]
    fn phases_too_short_for_time_to_advance_are_refused() {
        // Each of these ran for good (a fixed 0.4 ns rounds to 0 ns, so the
        // cycle took no simulated time) or for hours.
        let e = err("[[vm]]\nworkload = \"pi\"\nuser = 0.4\n");
        assert!(
            e.starts_with("s.toml: vm[0].user: const:0.4 is shorter than the simulator's step"),
            "{e}"
        );
        let e = err(&format!("{VM}hold = \"exp:0.3\"\n"));
        assert!(e.starts_with("s.toml: vm[0].hold: exp:0.3"), "{e}");
        let e = err("[[vm]]\nworkload = \"oltp\"\nuser = 1\nkernel = 1\nhold = 1\n");
        assert!(
            e.starts_with("s.toml: vm[0]: a cycle of the workload") && e.contains("5 ns"),
            "{e}"
        );
        assert!(e.contains("at least 100 ns"), "{e}");
        // A phase the workload never runs is not held against it, and the
        // think time counts towards the cycle.
        read("[[vm]]\nworkload = \"pi\"\nuser = 100\nhold = 0.5\n").unwrap();
        read("[[vm]]\nworkload = \"latency\"\nuser = 1\nkernel = 1\nhold = 1\n").unwrap();
        read("[[vm]]\nworkload = \"oltp\"\nuser = 0\nkernel = 40\nhold = 10\n").unwrap();
    }

    #[test]
    fn names_are_checked_and_list_what_is_allowed() {
        let e = err("[[vm]]\nworkload = \"oltpx\"\n");
        assert_eq!(
            e,
            "s.toml: line 2, column 12: vm[0].workload: 'oltpx' is not a workload: \
             allowed hackbench, oltp, pi, latency"
        );
        let e = err(&format!("{VM}lock = \"mcs\"\n"));
        assert!(e.contains("line 3") && e.contains("vm[0].lock") && e.contains("ticket, tas"));
        let e = err(&format!("policies = [\"itcs\", \"fast\"]\n{VM}"));
        assert!(
            e.contains("policies[1]: 'fast' is not a policy: allowed all, none"),
            "{e}"
        );
        let e = err(&format!("policies = []\n{VM}"));
        assert!(e.contains("policies: an empty list"), "{e}");
        let f = read(&format!("policies = [\"itcs\", \"all\"]\n{VM}")).unwrap();
        assert_eq!(f.policies.unwrap()[0], Policy::Itcs);
        let e = err(&format!("[ple]\nmode = \"adaptive\"\n{VM}"));
        assert!(e.contains("ple.mode: 'adaptive' is not a PLE mode"), "{e}");
        let e = err(&format!("name = \"\"\n{VM}"));
        assert!(e.contains("name: \"\" is not allowed"), "{e}");
    }

    #[test]
    fn syntax_type_and_unknown_key_errors_keep_the_line() {
        let e = err("[[vm]]\nworkload = \"oltp\"\nvcpus = \n");
        assert!(e.starts_with("s.toml: line 3, column "), "{e}");
        let e = err(&format!("{VM}vcpus = \"eight\"\n"));
        assert!(e.starts_with("s.toml: line 3, column 9: "), "{e}");
        assert!(e.contains("u32"), "{e}");
        let e = err(&format!("{VM}vcpu = 8\n"));
        assert!(
            e.starts_with("s.toml: line 3, column 1: unknown field `vcpu`"),
            "{e}"
        );
        assert!(e.contains("`vcpus`"), "lists the keys: {e}");
        let e = err(&format!("[host]\npcpu = 8\n{VM}"));
        assert!(
            e.contains("line 2") && e.contains("unknown field `pcpu`"),
            "{e}"
        );
        let e = err(&format!("{VM}hold = \"gamma:5\"\n"));
        assert!(
            e.contains("line 3") && e.contains("`gamma` is not a distribution"),
            "{e}"
        );
        let e = err(&format!("{VM}hold = true\n"));
        assert!(e.contains("a length in ns"), "{e}");
        let e = err("[[vm]]\ncount = 2\n");
        assert!(e.contains("missing field `workload`"), "{e}");
        let e = err(&format!("seed = -1\n{VM}"));
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn a_missing_file_is_an_input_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let e = load(&path, &Overrides::default()).unwrap_err();
        assert_eq!(e.code, EXIT_INPUT);
        assert!(
            e.msg.contains("--config ") && e.msg.contains("nope.toml: cannot read it"),
            "{}",
            e.msg
        );
        let e = load(dir.path(), &Overrides::default()).unwrap_err();
        assert!(
            e.msg.contains("a directory; allowed a scenario file"),
            "{}",
            e.msg
        );
        std::fs::write(&path, VM).unwrap();
        assert_eq!(load(&path, &Overrides::default()).unwrap().name, "nope");
    }

    #[test]
    fn line_and_column_count_characters_from_one() {
        assert_eq!(line_col("ab\ncd", 0), "line 1, column 1");
        assert_eq!(line_col("ab\ncd", 4), "line 2, column 2");
        assert_eq!(line_col("µs\nx", 2), "line 1, column 2");
        assert_eq!(line_col("µs\nx", 4), "line 2, column 1");
        assert_eq!(crate::core::error::one_line("a\n  |\nb\n"), "a; |; b");
    }
}
