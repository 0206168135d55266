//! `irqwise apply [--dry-run] [--json]`: one pass of read, plan and apply, then exit.

use std::collections::BTreeSet;

use super::{to_json_text, CliError, Outcome};
use crate::apply::blocked::{writes_blocked, WritesBlocked};
use crate::apply::napi_write::{HostNapi, NapiChange, NapiOutcome};
use crate::apply::threads::{ThreadChange, ThreadOutcome};
use crate::apply::{apply_whole, ApplyReport, Change, WriteOutcome, XpsChange, XpsOutcome};
use crate::choices::NapiProfile;
use crate::config::{load_config, ConfigPaths};
use crate::cpuset::CpuSet;
use crate::pass::plan_pass_refined;
use crate::plan::napi_profile::describe;
use crate::sysfs::Root;
use crate::text::printable;

/// Exit status of `apply` when not one IRQ could be written, all for one cause of the machine or
/// the sandbox (a read-only `/proc/irq`, no permission): see [`writes_blocked`].
pub const EXIT_NOTHING_WRITTEN: u8 = 6;

/// `apply --json`: the report, and the diagnosis when nothing could be written.
#[derive(serde::Serialize)]
struct ApplyOutput<'a> {
    #[serde(flatten)]
    report: &'a crate::apply::ApplyReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    writes_blocked: Option<&'a crate::apply::blocked::WritesBlocked>,
}

/// One write `apply --dry-run --json` would make: the fields of a change of `apply --json`, with
/// `"result": "would_write"` and the set as `new`.
#[derive(serde::Serialize)]
struct DryChange<'a> {
    irq: u32,
    irq_name: Option<&'a str>,
    device: &'a str,
    device_name: Option<&'a str>,
    driver: Option<&'a str>,
    queue: Option<u32>,
    strategy: crate::choices::StrategyName,
    reason: &'a str,
    old: Option<&'a CpuSet>,
    wanted: Option<&'a CpuSet>,
    result: &'static str,
    new: Option<&'a CpuSet>,
}

/// `apply --dry-run --json`: the document of `apply --json` (apply.schema.json) for the writes
/// the pass would make, none made: `dry_run` true, each change `would_write`, the summary as
/// planned (`written` 0).
#[derive(serde::Serialize)]
struct DryRunOutput<'a> {
    dry_run: bool,
    changes: Vec<DryChange<'a>>,
    summary: crate::plan::Summary,
    learned_managed: [u32; 0],
}

fn dry_run_document(plan: &crate::plan::Plan) -> DryRunOutput<'_> {
    let changes = plan
        .writes()
        .map(|(d, p)| DryChange {
            irq: p.irq,
            irq_name: p.name.as_deref(),
            device: &d.bdf,
            device_name: d.name.as_deref(),
            driver: d.driver.as_deref(),
            queue: p.queue,
            strategy: d.strategy,
            reason: &p.reason,
            old: p.current.as_ref(),
            wanted: p.desired.as_ref(),
            result: "would_write",
            new: p.desired.as_ref(),
        })
        .collect();
    DryRunOutput { dry_run: true, changes, summary: plan.summary(), learned_managed: [] }
}

/// `irqwise apply [--dry-run] [--json]`: exit 0 when every IRQ ended as planned or was
/// correctly left alone, 1 when a write failed unexpectedly, [`EXIT_NOTHING_WRITTEN`] when every
/// write failed for one cause of the machine (said in one line, not one per IRQ).
pub fn apply(root: &Root, paths: &ConfigPaths, dry_run: bool, json: bool) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    let pass = plan_pass_refined(root, &config, &BTreeSet::new(), &super::daemon_moves(root))?;
    if dry_run {
        return Ok(Outcome::ok(if json {
            to_json_text(&dry_run_document(&pass.plan))
        } else {
            dry_run_text(&pass.plan)
        }));
    }
    let report = apply_whole(&pass.plan, root, &mut HostNapi::default());
    let blocked = writes_blocked(&report);
    let exit = match (&blocked, report.all_ok()) {
        (Some(_), _) => EXIT_NOTHING_WRITTEN,
        (None, ok) => u8::from(!ok),
    };
    if json {
        let out = ApplyOutput { report: &report, writes_blocked: blocked.as_ref() };
        return Ok(Outcome::with_exit(to_json_text(&out), exit));
    }
    Ok(Outcome::with_exit(report_text(&report, blocked.as_ref()), exit))
}

/// `apply --dry-run`: each IRQ and transmit queue the pass would write, then the counts.
fn dry_run_text(plan: &crate::plan::Plan) -> String {
    let mut text = String::new();
    for (d, p) in plan.writes() {
        let cpus = p.desired.as_ref().map(CpuSet::to_list_string).unwrap_or_default();
        text.push_str(&format!(
            "would write irq {} ({}, {}): {cpus}\n",
            p.irq,
            p.name.as_deref().unwrap_or("-"),
            d.bdf
        ));
    }
    for (d, x) in plan.devices.iter().filter_map(|d| Some((d, d.xps.as_ref()?))) {
        for q in x.writes() {
            let interface = x.interface.as_deref().unwrap_or(&d.bdf);
            text.push_str(&format!("would write xps {interface} tx-{}: {}\n", q.txq, q.desired.to_mask_string()));
        }
    }
    let s = plan.summary();
    let xps = plan.devices.iter().filter_map(|d| d.xps.as_ref()).map(|x| x.writes().count()).sum::<usize>();
    let xps = if xps > 0 { format!("; xps_cpus of {xps} tx queue(s) to write") } else { String::new() };
    text.push_str(&format!(
        "dry run: {} to write, {} kept, {} managed, {} skipped{xps}\n",
        s.set, s.kept, s.managed, s.skipped
    ));
    text
}

/// `apply`'s text: the diagnosis when nothing could be written (standing for every failure it
/// explains), a line per IRQ, transmit queue, thread and NAPI instance, then the counts.
fn report_text(report: &ApplyReport, blocked: Option<&WritesBlocked>) -> String {
    let mut lines: Vec<String> = blocked.map(WritesBlocked::line).into_iter().collect();
    // One diagnosis stands for every write it explains.
    let explained = |c: &Change| blocked.is_some() && matches!(c.result, WriteOutcome::Failed { .. });
    lines.extend(report.changes.iter().filter(|c| !explained(c)).map(change_line));
    let xps_explained = |x: &XpsChange| matches!((&x.result, blocked), (XpsOutcome::Failed { class, .. }, Some(b)) if *class == b.class);
    lines.extend(report.xps.iter().filter(|x| !xps_explained(x)).map(xps_line));
    lines.extend(report.threads.iter().map(thread_line));
    lines.extend(report.napi.iter().map(|n| printable(&napi_line(n)).into_owned()));
    let s = report.summary;
    let xps_failed = report.xps.iter().filter(|x| x.is_failure()).count();
    let xps = match report.xps.len() {
        0 => String::new(),
        n => format!("; xps_cpus of {} tx queue(s) written, {xps_failed} failed", n - xps_failed),
    };
    lines.push(format!(
        "{} written, {} kept, {} managed, {} skipped, {} failed{xps}",
        s.written, s.kept, s.managed, s.skipped, s.failed
    ));
    lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect()
}

/// One IRQ's line of `apply`.
fn change_line(c: &Change) -> String {
    let old = c.old.as_ref().map_or("?".into(), CpuSet::to_list_string);
    match &c.result {
        WriteOutcome::Written { cpus, .. } => {
            format!("irq {} {}: {old} -> {cpus}", c.irq, c.irq_name.as_deref().unwrap_or("-"))
        }
        WriteOutcome::WrittenFallback { cpus, step, .. } => format!(
            "irq {} {}: {old} -> {cpus} (fallback: no vectors left on the chosen CPUs, widened to {step})",
            c.irq,
            c.irq_name.as_deref().unwrap_or("-")
        ),
        WriteOutcome::Held { cpus } => format!("irq {}: already on {cpus}, not written", c.irq),
        WriteOutcome::Managed { .. } => format!("irq {}: kernel-managed, left alone", c.irq),
        WriteOutcome::Gone { .. } => format!("irq {}: gone (device removed?), skipped", c.irq),
        WriteOutcome::Overtaken { .. } => format!("irq {}: its CPUs went offline meanwhile, skipped", c.irq),
        WriteOutcome::Failed { class, error } => format!("irq {}: FAILED ({class:?}): {error}", c.irq),
    }
}

/// One transmit queue's line of `apply`.
fn xps_line(x: &XpsChange) -> String {
    let interface = x.interface.as_deref().unwrap_or(&x.device);
    let old = if x.old.is_empty() { "-".to_string() } else { x.old.to_list_string() };
    match &x.result {
        XpsOutcome::Written { new, .. } => format!("xps {interface} tx-{}: {old} -> {new}", x.txq),
        XpsOutcome::Failed { class, error } => format!("xps {interface} tx-{}: FAILED ({class:?}): {error}", x.txq),
    }
}

/// One NAPI thread's line of `apply`.
fn thread_line(t: &ThreadChange) -> String {
    let old = t.old.as_ref().map_or("?".into(), CpuSet::to_list_string);
    match &t.result {
        ThreadOutcome::Written { new } => format!("thread {} (pid {}): {old} -> {new}", t.name, t.pid),
        ThreadOutcome::Gone => format!("thread {} (pid {}): gone, skipped", t.name, t.pid),
        ThreadOutcome::NotThisMachine => {
            format!("thread {} (pid {}): not written (--root is not this machine's)", t.name, t.pid)
        }
        ThreadOutcome::Failed { class, error } => {
            format!("thread {} (pid {}): FAILED ({class:?}): {error}", t.name, t.pid)
        }
    }
}

/// One NAPI instance's line of `apply` (not yet made printable).
fn napi_line(n: &NapiChange) -> String {
    let whose = format!(
        "napi {} instance {}{}",
        n.interface.as_deref().unwrap_or(&n.device),
        n.napi_id,
        n.queue.map_or(String::new(), |q| format!(" (queue {q})"))
    );
    match &n.result {
        NapiOutcome::Written => format!("{whose}: {}", describe(&n.old, &n.new)),
        NapiOutcome::Gone => format!("{whose}: gone (recreated by a reset?), skipped"),
        NapiOutcome::NotThisMachine => format!("{whose}: not written (--root is not this machine's)"),
        NapiOutcome::Unverified { read } => format!(
            "{whose}: FAILED: wrote {}, read back {}",
            describe(&NapiProfile::default(), &n.new),
            describe(&NapiProfile::default(), read)
        ),
        NapiOutcome::Failed { error, .. } => format!("{whose}: FAILED: {error}"),
    }
}
