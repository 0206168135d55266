//! `irqwise report`: where interrupts actually land, measured from two reads of
//! `/proc/interrupts`.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use super::output::{write_stdout, OutputError, EXIT_BROKEN_PIPE};
use super::{to_json_text, CliError, Outcome};
use crate::config::load_config;
use crate::config::ConfigPaths;
use crate::pass::plan_pass;
use crate::plan::from_sample::PlannedPass;
use crate::report::read::{read_counts, read_effective};
use crate::report::{build_landing, render_table, InterruptCounts, Landing, LandingError};
use crate::sysfs::Root;

/// What the `report` command was asked for.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    pub interval: Duration,
    pub json: bool,
    pub watch: bool,
    /// A shell command run between the two reads instead of waiting `interval`.
    pub between_samples: Option<String>,
}

fn landing_error(e: LandingError) -> CliError {
    CliError::Failed(e.to_string())
}

/// The report of one interval: the plan (what irqwise would place where), then the two reads
/// `interval` apart (or around `between`), then the effective affinities.
fn measure(root: &Root, pass: &PlannedPass, first: &InterruptCounts, elapsed: Duration) -> Result<Landing, CliError> {
    let (second, mut warnings) = read_counts(root).map_err(landing_error)?;
    let irqs = pass.plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq));
    let (effective, more) = read_effective(root, irqs);
    warnings.extend(more);
    let mut landing = build_landing(&pass.plan, &pass.topology, first, &second, &effective, elapsed);
    landing.warnings.extend(warnings);
    Ok(landing)
}

/// Runs `cmd` with `sh -c`; a command that cannot start or fails is an error naming it.
fn run_between(cmd: &str) -> Result<(), CliError> {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .status()
        .map_err(|e| CliError::Failed(format!("--between-samples {cmd:?}: cannot run sh: {e}")))?;
    if !status.success() {
        return Err(CliError::Failed(format!("--between-samples {cmd:?}: {status}")));
    }
    Ok(())
}

/// `irqwise report [--interval D] [--json] [--watch]`.
pub fn report(root: &Root, paths: &ConfigPaths, req: &ReportRequest) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    if req.watch {
        if !std::io::stdout().is_terminal() {
            return Err(CliError::Usage(
                "--watch redraws the screen and needs a terminal; without one use --json or leave --watch out".into(),
            ));
        }
        return watch(root, &config, req.interval);
    }
    let pass = plan_pass(root, &config, &BTreeSet::new())?;
    let (first, first_warnings) = read_counts(root).map_err(landing_error)?;
    let elapsed = if let Some(cmd) = &req.between_samples {
        run_between(cmd)?;
        req.interval
    } else {
        let start = Instant::now();
        std::thread::sleep(req.interval);
        start.elapsed()
    };
    let mut landing = measure(root, &pass, &first, elapsed)?;
    landing.warnings.splice(0..0, first_warnings);
    let text = if req.json { to_json_text(&landing) } else { render_table(&landing) };
    Ok(Outcome::ok(text))
}

/// `--watch`: every `interval`, re-plans, reads the counts again and redraws the screen with the
/// interrupts since the previous read. Runs until interrupted or a read fails.
fn watch(root: &Root, config: &crate::config::Config, interval: Duration) -> Result<Outcome, CliError> {
    let (mut previous, _) = read_counts(root).map_err(landing_error)?;
    let mut taken = Instant::now();
    loop {
        std::thread::sleep(interval);
        let pass = plan_pass(root, config, &BTreeSet::new())?;
        let (next, _) = read_counts(root).map_err(landing_error)?;
        let elapsed = taken.elapsed();
        taken = Instant::now();
        let irqs = pass.plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq));
        let (effective, _) = read_effective(root, irqs);
        let landing = build_landing(&pass.plan, &pass.topology, &previous, &next, &effective, elapsed);
        // Home, clear the screen, then the table: a full redraw like top's. The table has the
        // same escaping of control characters as every other command's output.
        let table = render_table(&landing);
        let table = crate::text::printable_lines(&table);
        match write_stdout(&format!("\x1b[H\x1b[2J{table}(every {interval:?}; Ctrl-C stops)\n")) {
            Ok(()) => {}
            Err(OutputError::Closed) => return Ok(Outcome { exit: EXIT_BROKEN_PIPE, ..Outcome::default() }),
            Err(e) => return Err(CliError::Failed(e.to_string())),
        }
        previous = next;
    }
}
