//! The `irqwise` command line: parse, dispatch, turn errors into messages and exit codes.
//!
//! Exit codes: 0 success, 1 a runtime failure (unreadable system, failed writes), 2 usage or
//! configuration errors, 3 not running (`status`) or settings left untranslated
//! (`import-irqbalance`), 4 changes pending (`plan --exit-code`), 5 another daemon runs on
//! this root (`run`), 141 stdout's reader went away (`irqwise plan | head -1`).

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::ExitCode;

use clap::Parser;

use irqwise::cli::args::{AdviseCommand, Cli, Command, SpreadCommand};
use irqwise::cli::{self, CliError, Outcome};

fn run(cli: Cli) -> Result<Outcome, CliError> {
    let root = irqwise::sysfs::Root::new(&cli.global.root);
    // A mistyped --root or --config must not plan "nothing" and succeed.
    if !matches!(cli.command, Command::Status { .. }) {
        cli::require_root(&root)?;
    }
    if let Some(dir) = &cli.global.config {
        cli::require_config_dir(dir)?;
    }
    let paths = cli::config_paths(cli.global.config.as_deref());
    let ok = Outcome::ok;
    match cli.command {
        Command::Topology { json } => cli::topology(&root, &paths, json).map(ok),
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
        Command::CheckConfig { paths: files, strict, json } => cli::check_config(&root, &paths, &files, strict, json),
        Command::ImportIrqbalance { file } => cli::import_irqbalance(&root, file.as_deref()),
        Command::Snapshot { out } => cli::snapshot(&root, &out).map(ok),
        Command::Advise { what: AdviseCommand::Boot { json } } => cli::advise(&root, &paths, json),
        Command::Run { once, watch_config } => cli::run(&root, &paths, cli.global.log_format, once, watch_config),
        Command::Status { json } => cli::status(&root, json),
        Command::Claim { cpus, owner, pid, timeout } => {
            cli::claim(&root, &paths, &owner, &cpus, pid, std::time::Duration::from_secs(timeout))
        }
        Command::Release { owner, timeout } => cli::release(&root, &owner, std::time::Duration::from_secs(timeout)),
        Command::Claims { json } => cli::claims(&root, json),
        Command::Diff { a, b, json } => cli::diff_roots(&root, &paths, &a, &b, json),
        Command::Reload { pid, timeout } => cli::reload(&root, &paths, pid, std::time::Duration::from_secs(timeout)),
    }
}

fn main() -> ExitCode {
    cli::output::emit(run(Cli::parse()))
}
