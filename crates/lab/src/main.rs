//! `locklab`: the lab's command line. See `locklab --help` and the README.

use clap::Parser;
use locklab_lab::cli::Cli;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(&argv) {
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
                eprintln!("{first} (see `locklab --help`)");
            } else {
                eprintln!("{first} {} (see `locklab --help`)", detail.join(", "));
            }
            return ExitCode::from(2);
        }
    };
    match locklab_lab::commands::run(cli, &argv) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("locklab: {e}");
            ExitCode::from(e.code as u8)
        }
    }
}
