//! The command line of `sim lhp`.

use crate::core::args::{parse_count, parse_reps, parse_thread_count};
use clap::{ArgGroup, Args};
use std::path::PathBuf;

/// Parameters of `sim lhp`. What is simulated comes from at most one of
/// `--experiment` (default `performance`) and `--config`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").args(["experiment", "config"])))]
pub struct SimLhpArgs {
    /// One of seed 004's experiments: fairness (1 hackbench VM beside 4 pi
    /// VMs), performance (4 oltp VMs), latency (7 oltp VMs and one request
    /// VM), scalability (1 to --max-vms oltp VMs). Default: performance.
    #[arg(long, value_name = "NAME", value_parser = parse_experiment)]
    pub experiment: Option<Experiment>,
    /// A scenario file (TOML; see docs/lhp.md, "Scenario files") instead of
    /// an experiment. --policies, --secs, --warmup-secs and --seed override
    /// the file's values.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// Host policies: `all` or comma-separated names (none, yth, ytt, itcs,
    /// sitcs, dtcs, kvm-dy, pv); `none` is always simulated, as the
    /// speed-ups refer to it. Default: all.
    #[arg(long, value_name = "LIST", value_parser = parse_policies)]
    pub policies: Option<PolicyList>,
    /// Physical CPUs of the simulated host (default 8, seed 004's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pcpus)]
    pub pcpus: Option<u32>,
    /// vCPUs per VM (default 8, seed 004's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_vcpus)]
    pub vcpus: Option<u32>,
    /// Guest spin lock algorithm: ticket (default) or tas.
    #[arg(long, value_parser = parse_lock_kind)]
    pub lock: Option<LockKind>,
    /// Pause-loop exiting: `seed` (seed 004's PLE_GAP 128 and PLE_WIN 2048,
    /// fixed, both taken as cycles; the seed counts PLE_WIN in PAUSEs; the
    /// default) or `kvm` (today's KVM: window 4096,
    /// growing ×2 per exit, reset when scheduled in).
    #[arg(long, value_parser = parse_ple)]
    pub ple: Option<PleChoice>,
    /// Largest VM count of `--experiment scalability` (default 8).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_max_vms)]
    pub max_vms: Option<u32>,
    /// Simulated seconds measured per simulation (default 1).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_sim_secs)]
    pub secs: Option<f64>,
    /// Simulated seconds of warm-up per simulation, not measured (default 0.2).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_warmup_secs)]
    pub warmup_secs: Option<f64>,
    /// Seed of the first repetition; repetition r uses seed + r (default 1).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Repetitions of the whole experiment, each with its own seed.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "1")]
    pub reps: u32,
    /// Worker threads running simulations side by side (each simulation is
    /// single-threaded; default: the CPUs this process may use).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
    pub threads: Option<u32>,
}

pub use locklab_model::lhp::{Experiment, LockKind, Policy};

/// `--ple`: which pause-loop exiting the host has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PleChoice {
    /// Seed 004's values, fixed: gap 128 and window 2048, taken as cycles
    /// (the seed defines PLE_WIN as a count of PAUSE instructions).
    Seed,
    /// Today's KVM adaptive window.
    Kvm,
}

impl PleChoice {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PleChoice::Seed => "seed",
            PleChoice::Kvm => "kvm",
        }
    }

    /// The pause-loop exiting it stands for.
    pub fn ple(self) -> locklab_model::lhp::Ple {
        match self {
            PleChoice::Seed => locklab_model::lhp::Ple::seed004(),
            PleChoice::Kvm => locklab_model::lhp::Ple::kvm(),
        }
    }
}

/// A validated list of host policies, in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyList(pub Vec<Policy>);

/// Most VMs of `sim lhp --experiment scalability`.
pub const MAX_SIM_VMS: u32 = 256;

/// Most vCPUs per VM on the command line.
pub const MAX_SIM_VCPUS: u32 = 1024;

/// Longest simulated time per simulation, seconds (the simulator's limit:
/// measured time plus warm-up at most one simulated hour).
pub const MAX_SIM_SECS: f64 = 3600.0;

pub(crate) fn parse_experiment(s: &str) -> Result<Experiment, String> {
    Experiment::from_name(s.trim()).ok_or_else(|| {
        format!(
            "'{}' is not an experiment: allowed {}",
            s.trim(),
            Experiment::ALL.map(Experiment::name).join(", ")
        )
    })
}

/// Policy names (and `all`), comma-separated, into a list in the order
/// given without duplicates.
pub fn parse_policies(s: &str) -> Result<PolicyList, String> {
    let mut v = Vec::new();
    let parts = crate::core::args::name_items(s).ok_or_else(|| {
        format!(
            "'{s}' has an empty policy name: allowed all or a list of {}",
            Policy::names()
        )
    })?;
    for part in parts {
        let add: Vec<Policy> = if part == "all" {
            Policy::ALL.to_vec()
        } else {
            vec![Policy::from_name(part).ok_or_else(|| {
                format!("'{part}' is not a policy: allowed all, {}", Policy::names())
            })?]
        };
        for p in add {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
    Ok(PolicyList(v))
}

pub(crate) fn parse_lock_kind(s: &str) -> Result<LockKind, String> {
    LockKind::from_name(s.trim()).ok_or_else(|| {
        format!(
            "'{}' is not a guest lock: allowed {}",
            s.trim(),
            LockKind::ALL.map(LockKind::name).join(", ")
        )
    })
}

pub(crate) fn parse_ple(s: &str) -> Result<PleChoice, String> {
    match s.trim() {
        "seed" => Ok(PleChoice::Seed),
        "kvm" => Ok(PleChoice::Kvm),
        other => Err(format!(
            "'{other}' is not a pause-loop exiting: allowed seed (seed 004's gap 128 and window 2048, as cycles, fixed) or kvm (adaptive)"
        )),
    }
}

pub(crate) fn parse_pcpus(s: &str) -> Result<u32, String> {
    let max = locklab_model::lhp::config::MAX_PCPUS;
    parse_count(s, "pCPUs", u64::from(max)).map(|n| n as u32)
}

pub(crate) fn parse_vcpus(s: &str) -> Result<u32, String> {
    parse_count(s, "vCPUs per VM", u64::from(MAX_SIM_VCPUS)).map(|n| n as u32)
}

pub(crate) fn parse_max_vms(s: &str) -> Result<u32, String> {
    parse_count(s, "VMs", u64::from(MAX_SIM_VMS)).map(|n| n as u32)
}

pub(crate) fn parse_sim_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= MAX_SIM_SECS => Ok(x),
        Ok(_) => Err(format!(
            "'{}' simulated seconds is out of range: allowed more than 0 up to {MAX_SIM_SECS}",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of simulated seconds: allowed more than 0 up to {MAX_SIM_SECS} (e.g. 0.5)",
            s.trim()
        )),
    }
}

pub(crate) fn parse_warmup_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=MAX_SIM_SECS).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "'{}' simulated seconds of warm-up is out of range: allowed 0 to {MAX_SIM_SECS}",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of simulated seconds: allowed 0 to {MAX_SIM_SECS} (e.g. 0.2)",
            s.trim()
        )),
    }
}

pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        format!(
            "'{}' is not a seed: allowed a whole number from 0 to {}",
            s.trim(),
            u64::MAX
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_values_name_what_is_allowed() {
        assert_eq!(
            parse_policies("itcs,none,itcs").unwrap(),
            PolicyList(vec![Policy::Itcs, Policy::None])
        );
        assert_eq!(parse_policies("all").unwrap().0.len(), Policy::ALL.len());
        let e = parse_policies("itcs,bogus").unwrap_err();
        assert!(e.contains("'bogus'") && e.contains("kvm-dy"), "{e}");
        assert!(parse_policies("itcs,,none").unwrap_err().contains("empty"));
        assert!(parse_experiment("speed")
            .unwrap_err()
            .contains("scalability"));
        assert_eq!(parse_experiment("latency").unwrap(), Experiment::Latency);
        assert!(parse_lock_kind("mcs").unwrap_err().contains("ticket, tas"));
        assert!(parse_ple("vmware").unwrap_err().contains("seed"));
        assert!(parse_pcpus("0").unwrap_err().contains("1 to 1024"));
        assert!(parse_vcpus("-1").unwrap_err().contains("'-1'"));
        for bad in ["0", "-1", "nan", "inf", "3601"] {
            assert!(parse_sim_secs(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_warmup_secs("0").unwrap(), 0.0);
        assert!(parse_warmup_secs("-0.1").is_err());
        assert!(parse_seed("-1").unwrap_err().contains("'-1'"));
    }
}
