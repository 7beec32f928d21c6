//! The command line of `bench ipc`.

use super::runner::Mode;
use crate::core::args::{parse_ns, parse_ns_list, CoreList, NsList};
use crate::studies::shared::kernel::RepArgs;
use clap::Args;

/// Parameters of `bench ipc`.
#[derive(Debug, Args)]
pub struct IpcArgs {
    /// Kernel variants: `all`, or comma-separated names: none, bkl, fine,
    /// elide, elide-adaptive; bkl and the elide variants take a mutex of
    /// the library in parentheses, e.g. bkl(ticket) (default clh).
    /// Default: none, bkl, fine, and elide and elide-adaptive where the CPU
    /// has RTM.
    #[arg(long)]
    pub variants: Option<String>,
    /// Measurements: `all`, or comma-separated: single (one-way IPC cost on
    /// one core), multi (a ping-pong pair per core), shared (every client
    /// calls one endpoint), hold (kernel critical-section lengths).
    #[arg(long, value_parser = parse_modes, default_value = "all")]
    pub modes: ModeList,
    /// Emulated core counts for multi, shared and hold, like 1,2,4 or 1-4
    /// (default: 1 up to the CPUs this process may use).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::studies::shared::kernel::parse_emulated_cores)]
    pub cores: Option<CoreList>,
    /// Mean exponential delay a server works between receiving and
    /// replying, ns, comma-separated (default 0,250,1000,4000); multi
    /// sweeps them, shared and hold use the first, single none.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns_list)]
    pub delay_ns: Option<NsList>,
    /// Context-switch hardware work (page-table and segment loads), ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "30")]
    pub switch_ns: u64,
    /// Do the context-switch work inside the kernel's critical section
    /// (seed 002 moved it out; this shows what that saved).
    #[arg(long)]
    pub switch_inside: bool,
    /// Seconds, repetitions, pinning, elision's fall-back path.
    #[command(flatten)]
    pub rep: RepArgs,
}

/// A validated list of `bench ipc` measurements, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeList(pub Vec<Mode>);

pub(crate) fn parse_modes(s: &str) -> Result<ModeList, String> {
    use Mode;
    let mut v = Vec::new();
    let parts = crate::core::args::name_items(s).ok_or_else(|| {
        format!("'{s}' has an empty measurement name: allowed all, single, multi, shared, hold")
    })?;
    for part in parts {
        let add: Vec<Mode> = if part == "all" {
            Mode::ALL.to_vec()
        } else {
            vec![Mode::from_name(part).ok_or_else(|| {
                format!("'{part}' is not a measurement: allowed all, single, multi, shared, hold")
            })?]
        };
        for m in add {
            if !v.contains(&m) {
                v.push(m);
            }
        }
    }
    Ok(ModeList(v))
}
