//! The command line of `sim spin`.

use crate::core::args::{parse_core_list, parse_ns, parse_reps, CoreList};
use clap::Args;
use std::path::PathBuf;

/// Parameters of `sim spin`.
#[derive(Debug, Args)]
pub struct SimSpinArgs {
    /// Locks: comma-separated names of the simulated algorithms (tas, ttas,
    /// ticket, mcs, clh, hemlock, qspin, c-bo-mcs, hmcs, cna).
    #[arg(
        long,
        default_value = "tas,ttas,ticket,mcs,clh,hemlock,qspin,c-bo-mcs,hmcs,cna"
    )]
    pub locks: String,
    /// The simulated machine: SOCKETSxCORES, cores per socket (seed 001's
    /// two 15-core sockets: 2x15).
    #[arg(long, value_parser = parse_topology, default_value = "2x15")]
    pub topology: TopologyArg,
    /// Thread counts, one thread a core: a list and ranges (1,2,4 or 1-30);
    /// default every count from 1 to the cores.
    #[arg(long, allow_negative_numbers = true, value_parser = |s: &str| parse_core_list(s, MAX_CORES))]
    pub threads: Option<CoreList>,
    /// Which cores the threads take: fill (one socket, then the next) or
    /// round-robin (a socket each in turn).
    #[arg(long, value_parser = parse_placement, default_value = "fill")]
    pub placement: locklab_model::locksim::Placement,
    /// What an access costs: seed002 (seed 002's Table 1, cycles of a
    /// 2.0 GHz Xeon), here (measured on this machine: a hit, an atomic
    /// increment, the cache-line round trip), or a TOML file of the costs
    /// to change from seed002's (hit, same_socket, other_socket,
    /// memory_local, memory_remote, atomic, in cycles; ghz).
    #[arg(long, value_name = "seed002|here|FILE.toml", default_value = "seed002")]
    pub costs: String,
    /// The socket whose memory holds the lock and its data (counting from
    /// 0; seed 001's "lock in remote memory" is a socket no thread runs on).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_lock_socket, default_value = "0")]
    pub lock_socket: u32,
    /// A line's transfer goes through its home socket: one homed on
    /// another socket than the requester's costs at least a transfer from
    /// there (a home-snooping or directory protocol; off by default).
    #[arg(long)]
    pub home_snoop: bool,
    /// The critical section's own time, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "100")]
    pub cs_ns: u64,
    /// Cache lines the critical section writes (they move with the lock).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_cs_lines, default_value = "1")]
    pub cs_lines: u32,
    /// Mean delay between a thread's acquisitions, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "200")]
    pub delay_ns: u64,
    /// The delay's distribution: exp (exponential) or const.
    #[arg(long, value_parser = ["exp", "const"], default_value = "exp")]
    pub delay_dist: String,
    /// Simulated milliseconds measured per simulation (after a tenth of
    /// that of warm-up).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_sim_ms, default_value = "2")]
    pub sim_ms: f64,
    /// Repetitions per point, each with its own seed (1, 2, …).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// The most cores a simulated machine has.
pub const MAX_CORES: u32 = 1024;

/// `--topology`, as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyArg(pub locklab_model::locksim::Topology);

fn parse_topology(s: &str) -> Result<TopologyArg, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "'{t}' is not a topology: allowed SOCKETSxCORES, e.g. 2x15 (1 to 16 sockets, \
             {MAX_CORES} cores in all)"
        )
    };
    let (a, b) = t.split_once(['x', 'X']).ok_or_else(bad)?;
    let (sockets, cores) = (
        a.trim().parse::<u32>().map_err(|_| bad())?,
        b.trim().parse::<u32>().map_err(|_| bad())?,
    );
    if !(1..=16).contains(&sockets)
        || cores == 0
        || u64::from(sockets) * u64::from(cores) > u64::from(MAX_CORES)
    {
        return Err(bad());
    }
    Ok(TopologyArg(locklab_model::locksim::Topology {
        sockets,
        cores_per_socket: cores,
    }))
}

fn parse_placement(s: &str) -> Result<locklab_model::locksim::Placement, String> {
    match s.trim() {
        "fill" => Ok(locklab_model::locksim::Placement::Fill),
        "round-robin" => Ok(locklab_model::locksim::Placement::RoundRobin),
        other => Err(format!(
            "'{other}' is not a placement: allowed fill or round-robin"
        )),
    }
}

fn parse_lock_socket(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n < 16 => Ok(n),
        _ => Err(format!("'{}' is not a socket: allowed 0 to 15", s.trim())),
    }
}

fn parse_cs_lines(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n <= 64 => Ok(n),
        _ => Err(format!("'{}' lines: allowed 0 to 64", s.trim())),
    }
}

fn parse_sim_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.01..=10_000.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "'{}' simulated milliseconds: allowed 0.01 to 10000",
            s.trim()
        )),
    }
}

/// `--costs FILE.toml`: the costs to change from seed 002's.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsFile {
    pub hit: Option<f64>,
    pub same_socket: Option<f64>,
    pub other_socket: Option<f64>,
    pub memory_local: Option<f64>,
    pub memory_remote: Option<f64>,
    pub atomic: Option<f64>,
    pub ghz: Option<f64>,
    pub home_snoop: Option<bool>,
}

/// The costs `--costs` names, and the name the points keep.
pub fn costs(arg: &str) -> crate::core::error::Result<(locklab_model::locksim::Costs, String)> {
    use crate::core::error::LabError;
    let base = locklab_model::locksim::Costs::seed002();
    if arg == "seed002" {
        return Ok((base, "seed002".into()));
    }
    if arg == "here" {
        return super::calibrate::here().map(|c| (c, "here".into()));
    }
    let path = std::path::Path::new(arg);
    let text = crate::core::files::read_input("--costs", path, 1 << 16, "a costs file")?;
    let f: CostsFile = toml::from_str(&text).map_err(|e| {
        LabError::input(format!(
            "--costs {arg}: {}; allowed seed002, here, or a TOML file of hit, same_socket, \
             other_socket, memory_local, memory_remote, atomic (cycles) and ghz",
            crate::core::error::one_line(&e.to_string())
        ))
    })?;
    let c = locklab_model::locksim::Costs {
        hit: f.hit.unwrap_or(base.hit),
        same_socket: f.same_socket.unwrap_or(base.same_socket),
        other_socket: f.other_socket.unwrap_or(base.other_socket),
        memory_local: f.memory_local.unwrap_or(base.memory_local),
        memory_remote: f.memory_remote.unwrap_or(base.memory_remote),
        atomic: f.atomic.unwrap_or(base.atomic),
        ghz: f.ghz.unwrap_or(base.ghz),
        home_snoop: f.home_snoop.unwrap_or(base.home_snoop),
    };
    let name = PathBuf::from(arg)
        .file_name()
        .map_or_else(|| arg.to_string(), |n| n.to_string_lossy().into_owned());
    Ok((c, name))
}
