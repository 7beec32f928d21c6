//! The command line: parsing and validation of every value, with messages
//! that name the bad value and what is allowed.

use crate::core::args::{parse_pct, parse_run, parse_thread_count, trimmed_enum, RunRef, Trimmed};
use crate::core::store::Location;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// locklab: lock algorithms measured on your machine.
#[derive(Debug, Parser)]
#[command(name = "locklab", version, about, long_about = None)]
pub struct Cli {
    /// Results store: an SQLite file (created if absent), or a database on
    /// a PostgreSQL server, postgres://user@host:port/database (the
    /// password from PGPASSWORD or PGPASSFILE; docs/cli.md).
    #[arg(
        long,
        global = true,
        value_name = "PATH|URL",
        default_value = "locklab.db",
        env = "LOCKLAB_DB",
        hide_env_values = true,
        value_parser = StoreParser
    )]
    pub db: Location,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress on stderr (a bar on a terminal, otherwise a line every
    /// few seconds); `--json` implies it.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Command to run.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The commands: those of the studies ([`crate::front::catalog::Command`]), and
/// those over the store and the lock registry that every study shares.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// A study's command.
    #[command(flatten)]
    Study(crate::front::catalog::Command),
    /// List the locks and peers with their metadata.
    #[command(display_order = 3)]
    Locks {
        /// Show these locks in full, with the source each comes from
        /// (default: every lock, one line each).
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Output format (`--json` is `--format json`; `markdown` is the
        /// table the docs hold).
        #[arg(long, value_parser = trimmed_enum::<Format>())]
        format: Option<Format>,
    },
    /// List stored runs.
    #[command(display_order = 4)]
    Runs,
    /// Show one stored run (id or `last`): its tables and verdict, or its data.
    #[command(display_order = 5)]
    Show {
        /// Run id, or `last`.
        #[arg(allow_negative_numbers = true, value_parser = parse_run)]
        run: RunRef,
        /// Output format (`--json` is `--format json`).
        #[arg(long, value_parser = trimmed_enum::<Format>())]
        format: Option<Format>,
        /// With `--format csv` or `markdown`: one row per repetition
        /// instead of per point.
        #[arg(long)]
        reps: bool,
    },
    /// Compare two runs, or a saved baseline and a run: the ratio B/A at
    /// every point they share, with its interval and whether it changed.
    #[command(display_order = 10)]
    Compare {
        /// The reference: a run id, `last`, or a baseline's name.
        a: String,
        /// The run compared with it: a run id, `last`, or a baseline's name.
        b: String,
        /// Output format (`--json` is `--format json`).
        #[arg(long, value_parser = trimmed_enum::<Format>())]
        format: Option<Format>,
        /// Changes smaller than this (in %) are within noise, not marked,
        /// even when the interval excludes 1: runs minutes apart drift by a
        /// few % that the repetitions of one run do not see.
        #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = parse_pct)]
        noise: u32,
    },
    /// Name a stored run as a baseline to compare later runs with, list the
    /// baselines, or delete one.
    #[command(display_order = 11)]
    Baseline {
        /// What to do.
        #[command(subcommand)]
        action: BaselineCmd,
    },
    /// Copy runs of this store (--db) to another, each run at most once
    /// (known by its identity, whatever its id there): to gather the runs
    /// of several machines in one store.
    #[command(display_order = 13)]
    Push {
        /// Run ids, `last` or `all`; none means all.
        #[arg(allow_negative_numbers = true, value_parser = parse_runs_arg)]
        runs: Vec<RunsArg>,
        /// The store to copy them to, a file or a server's URL as --db
        /// takes (created if absent).
        #[arg(long, value_name = "PATH|URL", value_parser = StoreParser)]
        to: Location,
    },
    /// Copy runs of another store into this one (--db), each run at most
    /// once.
    #[command(display_order = 14)]
    Pull {
        /// Run ids (of the other store), `last` or `all`; none means all.
        #[arg(allow_negative_numbers = true, value_parser = parse_runs_arg)]
        runs: Vec<RunsArg>,
        /// The store to copy them from, a file or a server's URL.
        #[arg(long, value_name = "PATH|URL", value_parser = StoreParser)]
        from: Location,
    },
    /// List the machines whose runs the store holds, with their facts.
    #[command(display_order = 15)]
    Machines,
    /// One figure (a point's throughput) across the git revisions of the
    /// stored runs, per machine: each revision against the one before, with
    /// its interval, changes beyond the noise marked.
    #[command(display_order = 16)]
    History {
        /// The study whose points to follow, as `show` names it.
        #[arg(long)]
        bench: String,
        /// The lock (or strategy) of the points.
        #[arg(long)]
        lock: String,
        /// The points' thread count.
        #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
        threads: u32,
        /// Only the runs of this machine: its identity (the first characters
        /// of a derived one will do) or its host name (`locklab machines`).
        #[arg(long)]
        machine: Option<String>,
        /// Output format (`--json` is `--format json`).
        #[arg(long, value_parser = trimmed_enum::<Format>())]
        format: Option<Format>,
        /// Changes smaller than this (in %) are within noise, not marked.
        #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = parse_pct)]
        noise: u32,
        /// Also write the history as an HTML page (self-contained, in the
        /// report's style).
        #[arg(long, value_name = "FILE.html")]
        out: Option<PathBuf>,
    },
    /// Write one self-contained HTML report of stored runs (verdicts,
    /// tables, charts, machine, commands).
    #[command(display_order = 12)]
    Report {
        /// Run ids, or `last`; none means the newest run.
        #[arg(allow_negative_numbers = true, value_parser = parse_run)]
        runs: Vec<RunRef>,
        /// Output HTML file.
        #[arg(long, value_name = "FILE.html")]
        out: PathBuf,
    },
    /// Plot a run's chart (its study's: throughput against threads, time
    /// per lock, …) to an SVG file.
    #[command(display_order = 9)]
    Plot {
        /// Run id, or `last`.
        #[arg(allow_negative_numbers = true, value_parser = parse_run)]
        run: RunRef,
        /// Output SVG file.
        #[arg(long, value_name = "FILE.svg")]
        out: PathBuf,
        /// Logarithmic value axis (throughput, or time per operation).
        #[arg(long)]
        log: bool,
        /// Which points (the values and their help come from the studies
        /// that plot: see [`Cli::command_line`]).
        #[arg(long)]
        bench: Option<String>,
    },
}

/// Runs named for `push` and `pull`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsArg {
    /// A run id.
    Id(i64),
    /// The newest run.
    Last,
    /// Every run.
    All,
}

fn parse_runs_arg(s: &str) -> Result<RunsArg, String> {
    if s.trim() == "all" {
        return Ok(RunsArg::All);
    }
    match parse_run(s) {
        Ok(RunRef::Id(id)) => Ok(RunsArg::Id(id)),
        Ok(RunRef::Last) => Ok(RunsArg::Last),
        Err(_) => Err(format!(
            "'{}' is not a run: allowed a positive integer id, `last` or `all` (`locklab runs` \
             lists them)",
            s.trim()
        )),
    }
}

/// How `show`, `compare` and `locks` print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables and the verdict, for a person.
    Text,
    /// One JSON object.
    Json,
    /// Comma-separated values with a header row, one row per point.
    Csv,
    /// A Markdown table to paste into an issue or a README.
    Markdown,
}

impl Cli {
    /// The format asked for: `--format`, else `json` with `--json`, else
    /// text; `--json` with another `--format` is refused.
    pub fn format(&self, asked: Option<Format>) -> Result<Format, String> {
        match (asked, self.json) {
            (None, false) => Ok(Format::Text),
            (None, true) | (Some(Format::Json), _) => Ok(Format::Json),
            (Some(f), false) => Ok(f),
            (Some(f), true) => Err(format!(
                "--json with --format {}: give one of them",
                clap::ValueEnum::to_possible_value(&f)
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default()
            )),
        }
    }
}

/// `baseline`'s actions.
#[derive(Debug, Subcommand)]
pub enum BaselineCmd {
    /// Save run RUN under NAME (replacing a baseline of that name).
    Save {
        /// The baseline's name: letters, digits, `-`, `_`, `.`; not a number
        /// nor `last`.
        name: String,
        /// Run id, or `last`.
        #[arg(allow_negative_numbers = true, value_parser = parse_run)]
        run: RunRef,
    },
    /// List the baselines.
    List,
    /// Delete a baseline (the run stays).
    Delete {
        /// The baseline's name.
        name: String,
    },
}

impl Cli {
    /// The command line: the derived one, with `plot --bench` taking the
    /// names of the studies that plot and saying what each draws.
    pub fn command_line() -> clap::Command {
        use clap::CommandFactory;
        let names = crate::front::catalog::plottable();
        let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let listed = match quoted.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        let draws: Vec<String> = crate::front::catalog::all()
            .iter()
            .filter_map(|s| s.plot_help())
            .map(str::to_string)
            .collect();
        let mut help = format!("Which points: {listed} (default: the first the run has)");
        if !draws.is_empty() {
            help = format!("{help}. {}", draws.join("; "));
        }
        let cmd = Cli::command().mut_subcommand("plot", |plot| {
            plot.mut_arg("bench", |a| {
                a.value_parser(Trimmed(clap::builder::PossibleValuesParser::new(names)))
                    .help(help)
            })
        });
        numbers_take_any_value(cmd).mut_subcommands(groups_need_a_subcommand)
    }

    /// Parses the arguments as [`Cli::command_line`] defines them.
    pub fn try_parse_args(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
        use clap::FromArgMatches;
        let matches = Cli::command_line().try_get_matches_from(args)?;
        Cli::from_arg_matches(&matches)
    }
}

/// Every numeric option (an option marked `allow_negative_numbers`, in
/// this tree and the studies' arguments alike) takes any value that starts
/// with `-` as its value, in `cmd` and all its subcommands. clap itself
/// takes `-1` as a number but `-inf`, `-.5` or `-x` as an unknown flag, and
/// refuses it without naming the option it was given to; taken as a value,
/// it reaches the option's parser, whose message names the option, the
/// value and what is allowed. (A positional run id keeps clap's own rule,
/// so that a flag after it is still a flag.)
fn numbers_take_any_value(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.is_allow_negative_numbers_set() && !a.is_positional() {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    })
    .mut_subcommands(numbers_take_any_value)
}

/// A command group (`baseline` and the groups of the studies' commands)
/// given without its subcommand is refused in one line that lists the subcommands (clap's
/// "requires a subcommand" error, which `main` prints on one line), not
/// with a page of help; in `cmd` and all its subcommands. `locklab` alone
/// still prints the help: that is how one starts.
fn groups_need_a_subcommand(cmd: clap::Command) -> clap::Command {
    let cmd = if cmd.is_subcommand_required_set() {
        cmd.arg_required_else_help(false)
    } else {
        cmd
    };
    cmd.mut_subcommands(groups_need_a_subcommand)
}

/// Parses a store's location (`--db`, `push --to`, `pull --from`): a
/// server's URL or a file's path, which may be any bytes. A URL that does
/// not parse is refused without quoting its password (clap's own message
/// would quote the value as given).
#[derive(Debug, Clone, Copy)]
pub struct StoreParser;

impl clap::builder::TypedValueParser for StoreParser {
    type Value = Location;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Location, clap::Error> {
        Location::parse(value).map_err(|msg| {
            let flag = arg.and_then(|a| a.get_long()).unwrap_or("db");
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("--{flag} {msg}\n"),
            )
            .with_cmd(cmd)
        })
    }
}
