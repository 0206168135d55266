//! The `irqwise` command line: parse, dispatch, turn errors into messages and exit codes.
//!
//! Exit codes: 0 success, 1 a runtime failure (unreadable system, failed writes), 2 usage or
//! configuration errors, 4 changes pending (`plan --exit-code`).

use std::process::ExitCode;

use clap::Parser;

use irqwise::cli::args::{Cli, Command, SpreadCommand};
use irqwise::cli::{self, CliError, Outcome};

fn run(cli: Cli) -> Result<Outcome, CliError> {
    let root = irqwise::sysfs::Root::new(&cli.global.root);
    let paths = cli::config_paths(cli.global.config.as_deref());
    let ok = |text: String| Outcome { text, exit: 0 };
    match cli.command {
        Command::Topology { json } => cli::topology(&root, json).map(ok),
        Command::Spread { what: SpreadCommand::Numa { node, order, json } } => {
            cli::spread_numa(&root, node, order, json).map(ok)
        }
        Command::Spread { what: SpreadCommand::Groups { groups, kernel, json } } => {
            cli::spread_groups(&root, groups, kernel.as_deref(), json).map(ok)
        }
        Command::Plan { json, changed, exit_code } => {
            cli::plan(&root, &paths, cli::PlanView { json, changed, exit_code })
        }
        Command::Apply { dry_run, json } => cli::apply(&root, &paths, dry_run, json),
        Command::Report { interval, json, watch, between_samples } => {
            cli::report(&root, &paths, &cli::ReportRequest { interval, json, watch, between_samples })
        }
        Command::CheckConfig { paths: files } => cli::check_config(&root, &paths, &files),
        Command::Snapshot { out } => cli::snapshot(&root, &out).map(ok),
        Command::Run { once } => cli::run(&root, &paths, cli.global.log_format, once),
        Command::Status { json } => cli::status(&root, json),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(Outcome { text, exit }) => {
            print!("{text}");
            ExitCode::from(exit)
        }
        Err(e) => {
            eprintln!("irqwise: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
