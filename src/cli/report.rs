//! `irqwise report`: where interrupts actually land, measured from two reads of
//! `/proc/interrupts`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use super::output::{write_stdout, OutputError, EXIT_BROKEN_PIPE};
use super::{to_json_text, CliError, Outcome};
use crate::config::load_config;
use crate::config::ConfigPaths;
use crate::devices::discover::napi_threads::read_napi_threads;
use crate::devices::napi::{parse_thread_name, NapiThread};
use crate::pass::plan_pass_refined;
use crate::plan::from_sample::PlannedPass;
use crate::report::read::{read_counts, read_effective, read_net_rx};
use crate::report::softirqs::net_rx_shares;
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

/// The first read of an interval: interrupt counts and, where readable, `NET_RX` softirqs.
struct FirstRead {
    counts: InterruptCounts,
    net_rx: Option<BTreeMap<u32, u64>>,
    warnings: Vec<String>,
}

fn first_read(root: &Root) -> Result<FirstRead, CliError> {
    let (counts, mut warnings) = read_counts(root).map_err(landing_error)?;
    let net_rx = read_net_rx(root).map_err(|w| warnings.push(w)).ok();
    Ok(FirstRead { counts, net_rx, warnings })
}

/// The report of one interval: the plan (what irqwise would place where), then the two reads
/// `interval` apart (or around `between`), then the effective affinities and where each NAPI
/// thread last ran.
fn measure(root: &Root, pass: &PlannedPass, first: &FirstRead, elapsed: Duration) -> Result<Landing, CliError> {
    let (second, mut warnings) = read_counts(root).map_err(landing_error)?;
    let irqs = pass.plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq));
    let (effective, more) = read_effective(root, irqs);
    warnings.extend(more);
    let mut landing = build_landing(&pass.plan, &pass.topology, &first.counts, &second, &effective, elapsed);
    if let Some(before) = &first.net_rx {
        match read_net_rx(root) {
            Ok(after) => landing.net_rx = net_rx_shares(before, &after),
            Err(w) => warnings.push(w),
        }
    }
    refresh_threads(root, &mut landing);
    landing.warnings.extend(warnings);
    Ok(landing)
}

/// Each NAPI thread of `landing` as read again now (a thread that ended keeps what the plan read).
fn refresh_threads(root: &Root, landing: &mut Landing) {
    let threads = landing.devices.iter().flat_map(|d| &d.irqs).filter_map(|i| i.napi_thread.as_ref());
    let interfaces: BTreeSet<String> =
        threads.filter_map(|t| parse_thread_name(&t.name).map(|(interface, _)| interface.to_string())).collect();
    let now: BTreeMap<u32, NapiThread> = read_napi_threads(root, &interfaces).into_iter().map(|t| (t.pid, t)).collect();
    for t in landing.devices.iter_mut().flat_map(|d| &mut d.irqs).filter_map(|i| i.napi_thread.as_mut()) {
        if let Some(again) = now.get(&t.pid) {
            t.allowed.clone_from(&again.current);
            t.last_cpu = again.last_cpu;
        }
    }
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
    let pass = plan_pass_refined(root, &config, &BTreeSet::new(), &super::daemon_moves(root))?;
    let first = first_read(root)?;
    let elapsed = if let Some(cmd) = &req.between_samples {
        run_between(cmd)?;
        req.interval
    } else {
        let start = Instant::now();
        std::thread::sleep(req.interval);
        start.elapsed()
    };
    let mut landing = measure(root, &pass, &first, elapsed)?;
    landing.warnings.splice(0..0, first.warnings.iter().cloned());
    let text = if req.json { to_json_text(&landing) } else { render_table(&landing) };
    Ok(Outcome::ok(text))
}

/// `--watch`: every `interval`, re-plans, reads the counts again and redraws the screen with the
/// interrupts since the previous read. Runs until interrupted or a read fails.
fn watch(root: &Root, config: &crate::config::Config, interval: Duration) -> Result<Outcome, CliError> {
    let mut previous = first_read(root)?;
    let mut taken = Instant::now();
    loop {
        std::thread::sleep(interval);
        let pass = plan_pass_refined(root, config, &BTreeSet::new(), &super::daemon_moves(root))?;
        let elapsed = taken.elapsed();
        let mut landing = measure(root, &pass, &previous, elapsed)?;
        landing.warnings.clear();
        let next = first_read(root)?;
        taken = Instant::now();
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
