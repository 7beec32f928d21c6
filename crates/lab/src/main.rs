//! `locklab`: the lab's command line. See `locklab --help` and the README.

use locklab_lab::front::cli::Cli;
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Arguments as the OS gave them: a path that is not UTF-8 (`--db`,
    // `--out`, `--csv`, `--config`) is a path all the same, and clap
    // refuses such bytes anywhere else with one line, below.
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_args(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::from(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    },
                );
            }
            if e.kind() == ErrorKind::InvalidUtf8 {
                // clap's text names neither the flag nor the bytes.
                locklab_lab::core::out::note(&format!(
                    "error: {} (see `locklab --help`)",
                    not_utf8(&args)
                ));
                return ExitCode::from(2);
            }
            // One line: clap's first line names the value and the flag,
            // and the indented lines right under it say what is missing
            // or allowed ("  --csv <FILE>", "  [possible values: …]"); the
            // rest is a hint we fold into a short suffix.
            let text = e.render().to_string();
            let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
            let first = lines.next().unwrap_or("error: bad arguments");
            let detail: Vec<&str> = lines
                .take_while(|l| l.starts_with("  "))
                .map(str::trim)
                .collect();
            if detail.is_empty() {
                locklab_lab::core::out::note(&format!("{first} (see `locklab --help`)"));
            } else {
                locklab_lab::core::out::note(&format!(
                    "{first} {} (see `locklab --help`)",
                    detail.join(", ")
                ));
            }
            return ExitCode::from(2);
        }
    };
    // The command line as text, for the run's record: a path that is not
    // UTF-8 is kept with its bad bytes replaced.
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Notes wait until the command is under way: a refusal is one line.
    locklab_lab::core::out::hold_notes();
    match locklab_lab::front::commands::run(cli, &argv) {
        Ok(code) => {
            locklab_lab::core::out::release_notes();
            ExitCode::from(code as u8)
        }
        Err(e) => {
            if e.code == locklab_lab::core::error::EXIT_INPUT {
                locklab_lab::core::out::drop_held_notes();
            } else {
                locklab_lab::core::out::release_notes();
            }
            locklab_lab::core::out::note(&format!(
                "locklab: {}",
                locklab_lab::core::error::one_line(&e.msg)
            ));
            ExitCode::from(e.code as u8)
        }
    }
}

/// Which argument is not UTF-8, and what is allowed there.
fn not_utf8(args: &[OsString]) -> String {
    let Some(i) = args.iter().skip(1).position(|a| a.to_str().is_none()) else {
        return "an argument is not valid UTF-8".to_string();
    };
    let bad = args[i + 1].to_string_lossy();
    // The flag it belongs to: the argument itself (`--locks=…`) or the one
    // before (`--locks …`).
    let (flag, shown) = match bad.strip_prefix("--").and_then(|f| f.split_once('=')) {
        Some((f, value)) => (Some(format!("--{f}")), value.to_string()),
        None => (
            args.get(i)
                .filter(|_| i >= 1)
                .and_then(|p| p.to_str())
                .filter(|p| p.starts_with('-'))
                .map(str::to_string),
            bad.to_string(),
        ),
    };
    match flag {
        Some(f) => format!(
            "the value of {f}, '{shown}', is not valid UTF-8: allowed text \
             (only paths, as of --db, --out, --csv and --config, may be any bytes)"
        ),
        None => format!(
            "the argument '{shown}' is not valid UTF-8: allowed text \
             (only paths, as of --db, --out, --csv and --config, may be any bytes)"
        ),
    }
}
