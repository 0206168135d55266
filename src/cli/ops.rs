//! The commands that plan, apply, check config and capture a machine.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{to_json_text, CliError};
use crate::apply::{apply_plan, apply_xps, ProcIrq, WriteOutcome, XpsOutcome};
use crate::config::{self, ConfigPaths};
use crate::engine::{load_config, machine, plan_pass};
use crate::sysfs::Root;

/// Text to print on stdout, problems to print on stderr, and the exit code they go with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub stderr: String,
    pub exit: u8,
}

impl Outcome {
    /// `text` on stdout, exit 0.
    pub fn ok(text: String) -> Outcome {
        Outcome { text, ..Outcome::default() }
    }

    /// `text` on stdout, exit `exit`.
    pub fn with_exit(text: String, exit: u8) -> Outcome {
        Outcome { text, exit, ..Outcome::default() }
    }
}

/// `--config DIR` or the system's directories.
pub fn config_paths(config_dir: Option<&Path>) -> ConfigPaths {
    config_dir.map_or_else(ConfigPaths::system, ConfigPaths::under)
}

/// Exit code of `plan --exit-code` when applying the plan would write something.
pub const EXIT_CHANGES_PENDING: u8 = 4;

/// How `irqwise plan` shows the plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanView {
    pub json: bool,
    /// Only placements to write and managed IRQs that differ from the prediction.
    pub changed: bool,
    /// Exit [`EXIT_CHANGES_PENDING`] when some placement is to be written.
    pub exit_code: bool,
}

/// `irqwise plan [--json] [--changed] [--exit-code]`.
pub fn plan(root: &Root, paths: &ConfigPaths, view: PlanView) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    let pass = plan_pass(root, &config, &BTreeSet::new())?;
    let plan = &pass.plan;
    let text = match (view.json, view.changed) {
        (true, true) => to_json_text(&plan.only_changes()),
        (true, false) => to_json_text(plan),
        (false, true) => plan.to_changes_table(),
        (false, false) => plan.to_table(),
    };
    let exit = if view.exit_code && plan.has_pending_writes() { EXIT_CHANGES_PENDING } else { 0 };
    Ok(Outcome { text, exit, ..Outcome::default() })
}

/// `irqwise apply [--dry-run] [--json]`: exit 0 when every IRQ ended as planned or was
/// correctly left alone, 1 when a write failed unexpectedly.
pub fn apply(root: &Root, paths: &ConfigPaths, dry_run: bool, json: bool) -> Result<Outcome, CliError> {
    let config = load_config(root, paths)?;
    let pass = plan_pass(root, &config, &BTreeSet::new())?;
    if dry_run {
        let mut text = String::new();
        for (d, p) in pass.plan.writes() {
            let cpus = p.desired.as_ref().map(|c| c.to_list_string()).unwrap_or_default();
            text.push_str(&format!(
                "would write irq {} ({}, {}): {cpus}\n",
                p.irq,
                p.name.as_deref().unwrap_or("-"),
                d.bdf
            ));
        }
        for (d, x) in pass.plan.devices.iter().filter_map(|d| Some((d, d.xps.as_ref()?))) {
            for q in x.writes() {
                let interface = x.interface.as_deref().unwrap_or(&d.bdf);
                text.push_str(&format!("would write xps {interface} tx-{}: {}\n", q.txq, q.desired.to_mask_string()));
            }
        }
        let s = pass.plan.summary();
        let xps = pass.plan.devices.iter().filter_map(|d| d.xps.as_ref()).map(|x| x.writes().count()).sum::<usize>();
        let xps = if xps > 0 { format!("; xps_cpus of {xps} tx queue(s) to write") } else { String::new() };
        text.push_str(&format!(
            "dry run: {} to write, {} kept, {} managed, {} skipped{xps}\n",
            s.set, s.kept, s.managed, s.skipped
        ));
        return Ok(Outcome::ok(if json { to_json_text(&pass.plan) } else { text }));
    }
    let mut report = apply_plan(&pass.plan, &ProcIrq::new(root.clone()));
    report.xps = apply_xps(&pass.plan, root);
    let exit = if report.all_ok() { 0 } else { 1 };
    if json {
        return Ok(Outcome::with_exit(to_json_text(&report), exit));
    }
    let mut text = String::new();
    for c in &report.changes {
        let old = c.old.as_ref().map_or("?".into(), |o| o.to_list_string());
        let line = match &c.result {
            WriteOutcome::Written { cpus, .. } => {
                format!("irq {} {}: {old} -> {cpus}", c.irq, c.irq_name.as_deref().unwrap_or("-"))
            }
            WriteOutcome::WrittenFallback { cpus, step, .. } => format!(
                "irq {} {}: {old} -> {cpus} (fallback: no vectors left on the chosen CPUs, widened to {step})",
                c.irq,
                c.irq_name.as_deref().unwrap_or("-")
            ),
            WriteOutcome::Managed { .. } => format!("irq {}: kernel-managed, left alone", c.irq),
            WriteOutcome::Gone { .. } => format!("irq {}: gone (device removed?), skipped", c.irq),
            WriteOutcome::Overtaken { .. } => format!("irq {}: its CPUs went offline meanwhile, skipped", c.irq),
            WriteOutcome::Failed { class, error } => format!("irq {}: FAILED ({class:?}): {error}", c.irq),
        };
        text.push_str(&line);
        text.push('\n');
    }
    for x in &report.xps {
        let interface = x.interface.as_deref().unwrap_or(&x.device);
        let old = if x.old.is_empty() { "-".to_string() } else { x.old.to_list_string() };
        let line = match &x.result {
            XpsOutcome::Written { new, .. } => format!("xps {interface} tx-{}: {old} -> {new}", x.txq),
            XpsOutcome::Failed { class, error } => format!("xps {interface} tx-{}: FAILED ({class:?}): {error}", x.txq),
        };
        text.push_str(&line);
        text.push('\n');
    }
    let s = report.summary;
    let xps_failed = report.xps.iter().filter(|x| x.is_failure()).count();
    let xps = match report.xps.len() {
        0 => String::new(),
        n => format!("; xps_cpus of {} tx queue(s) written, {xps_failed} failed", n - xps_failed),
    };
    text.push_str(&format!(
        "{} written, {} kept, {} managed, {} skipped, {} failed{xps}\n",
        s.written, s.kept, s.managed, s.skipped, s.failed
    ));
    Ok(Outcome::with_exit(text, exit))
}

/// `irqwise check-config [PATHS] [--strict] [--json]`: every error and warning of every file in
/// file order on stderr (or all of it as JSON on stdout), a one-line verdict on stdout. Exit 0
/// when usable (warnings allowed, unless `strict`), 2 otherwise.
pub fn check_config(
    root: &Root,
    paths: &ConfigPaths,
    files: &[PathBuf],
    strict: bool,
    json: bool,
) -> Result<Outcome, CliError> {
    let machine = machine(root)?;
    let report = if files.is_empty() { config::check(paths, &machine) } else { config::check_files(files, &machine) };
    let ok = report.is_ok() && (!strict || report.warnings.is_empty());
    let exit = if ok { 0 } else { 2 };
    if json {
        let located = |at: Option<&config::Location>, message: String| {
            serde_json::json!({
                "file": at.map(|a| a.path.display().to_string()),
                "line": at.map(|a| a.line),
                "column": at.map(|a| a.column),
                "message": message,
            })
        };
        let doc = serde_json::json!({
            "ok": ok,
            "errors": report.errors.iter().map(|e| located(e.location(), e.to_string())).collect::<Vec<_>>(),
            "warnings": report.warnings.iter().map(|w| located(Some(w.location()), w.to_string())).collect::<Vec<_>>(),
            "sources": report.sources,
            "masked": report.masked.iter().map(|m| serde_json::json!({"path": m.path, "by": m.by})).collect::<Vec<_>>(),
        });
        return Ok(Outcome::with_exit(to_json_text(&doc), exit));
    }
    let mut stderr = String::new();
    for e in &report.errors {
        stderr.push_str(&format!("error: {e}\n"));
    }
    for w in &report.warnings {
        stderr.push_str(&format!("{w}\n"));
    }
    for m in &report.masked {
        stderr.push_str(&format!("note: {} is masked by {}\n", m.path.display(), m.by.display()));
    }
    let sources: Vec<String> = report.sources.iter().map(|p| p.display().to_string()).collect();
    let verdict = match (report.is_ok(), report.warnings.len()) {
        (false, _) => format!("invalid ({} error(s))", report.errors.len()),
        (true, 0) => "ok".to_string(),
        (true, n) if strict => format!("invalid with --strict ({n} warning(s))"),
        (true, n) => format!("ok with {n} warning(s)"),
    };
    let text = format!(
        "{verdict}: {} file(s){}{}\n",
        sources.len(),
        if sources.is_empty() { "" } else { ": " },
        sources.join(", ")
    );
    Ok(Outcome { text, stderr, exit })
}

/// `irqwise snapshot OUT`.
pub fn snapshot(root: &Root, out: &Path) -> Result<String, CliError> {
    let report = crate::snapshot::snapshot(root, out).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut text = format!(
        "snapshot of {} written to {}: {} files, {} links, {} directories, {} skipped\n",
        root.base().display(),
        out.display(),
        report.files_copied,
        report.links_created,
        report.dirs_created,
        report.skipped.len()
    );
    for s in &report.skipped {
        text.push_str(&format!("skipped {}: {}\n", s.path.display(), s.reason));
    }
    text.push_str(&format!("use it with: irqwise --root {} plan\n", out.display()));
    Ok(text)
}
