//! The journal lines of a pass, rendered in one place: the record ([`super::record`]) decides
//! which to say and in what order, this file says how each reads. What the pass's collaborators
//! found (claims taken and released, load moves, fights, IRQs left to other owners, NAPI drift)
//! comes here as values ([`super::adjust::Adjusted`]), as do the writes of the apply, the files
//! the pass could not save ([`Unsaved`]) and the pass's own news ([`PassNews`]: failed, working
//! again, degraded, blocked, its summary).
//!
//! Guarantee: one INFO entry per applied change carrying `MESSAGE_ID`, `IRQ`, `IRQ_NAME`,
//! `DEVICE`, `DRIVER`, `QUEUE` (only for an IRQ that serves a queue), `CPUS_OLD`, `CPUS_NEW`,
//! `STRATEGY`, `REASON`; every other entry about an IRQ carries `MESSAGE_ID`, `IRQ`, `DEVICE` and
//! `DRIVER` too; one per transmit-steering change carrying `MESSAGE_ID`, `DEVICE`, `INTERFACE`,
//! `DRIVER`, `TXQ`, `XPS_OLD`, `XPS_NEW`.

use super::catalog;
use super::ledger::{Drift, ManagedNews};
use crate::apply::blocked::WritesBlocked;
use crate::apply::{Change, WriteOutcome, XpsChange, XpsOutcome};
use crate::plan::{DevicePlan, Plan, Summary};
use crate::text::printable;

pub(super) fn list(set: Option<&crate::cpuset::CpuSet>) -> String {
    set.map_or_else(|| "?".to_string(), super::super::cpuset::CpuSet::to_list_string)
}

/// A change that ended as it did last pass: at debug level only (it was logged when it started;
/// the state file counts the repeats). The same fields as [`log_change`]'s failure entry.
pub(crate) fn log_change_quietly(c: &Change) {
    let error = c.result.error().unwrap_or("widened again");
    tracing::debug!(
        irq = c.irq,
        irq_name = c.irq_name.as_deref().unwrap_or(""),
        device = c.device.as_str(),
        driver = c.driver.as_deref().unwrap_or(""),
        queue = c.queue,
        "irq {} again: {}",
        c.irq,
        printable(error)
    );
}

/// Logs one change of a pass, each kind with its `MESSAGE_ID` (see [`super::catalog`]): INFO
/// with every journal field for a write, WARN with the error class for a failure, INFO for an
/// IRQ learned to be kernel-managed or gone. Every entry carries `IRQ`, `IRQ_NAME`, `DEVICE`,
/// `DRIVER`; `QUEUE` only when the IRQ serves a queue (absent, not empty, otherwise).
pub(crate) fn log_change(c: &Change) {
    let who = printable(c.device_name.as_deref().unwrap_or(&c.device));
    let irq_name = c.irq_name.as_deref().unwrap_or("");
    let shown_name = printable(irq_name);
    let driver = c.driver.as_deref().unwrap_or("");
    let old = list(c.old.as_ref());
    match &c.result {
        WriteOutcome::Written { cpus, .. } | WriteOutcome::WrittenFallback { cpus, .. } => {
            let new = cpus.to_list_string();
            let fallback = match &c.result {
                WriteOutcome::WrittenFallback { step, .. } => format!(" (no vectors left there: widened to {step})"),
                _ => String::new(),
            };
            tracing::info!(
                message_id = catalog::MAPPING_APPLIED,
                irq = c.irq,
                irq_name,
                device = c.device.as_str(),
                driver,
                queue = c.queue,
                cpus_old = old.as_str(),
                cpus_new = new.as_str(),
                strategy = c.strategy.as_str(),
                reason = c.reason.as_str(),
                "irq {} ({shown_name}) of {who}: {old} -> {new}{fallback}",
                c.irq
            );
        }
        WriteOutcome::Managed { .. } => tracing::info!(
            message_id = catalog::IRQ_MANAGED,
            irq = c.irq,
            irq_name,
            device = c.device.as_str(),
            driver,
            queue = c.queue,
            "irq {} of {who}: the kernel refused the write (kernel-managed); left alone from now on",
            c.irq
        ),
        WriteOutcome::Gone { .. } => tracing::info!(
            message_id = catalog::IRQ_GONE,
            irq = c.irq,
            irq_name,
            device = c.device.as_str(),
            driver,
            queue = c.queue,
            "irq {} of {who}: gone before it was written",
            c.irq
        ),
        // Nothing changed: nothing to tell anyone (the counters have it).
        WriteOutcome::Held { .. } => tracing::debug!(
            irq = c.irq,
            device = c.device.as_str(),
            "irq {} of {who}: already where it belongs when it was to be written; not written",
            c.irq
        ),
        // A CPU event's pass follows: nothing to tell anyone.
        WriteOutcome::Overtaken { .. } => tracing::debug!(
            irq = c.irq,
            device = c.device.as_str(),
            "irq {} of {who}: its CPUs went offline before it was written; the CPU event's pass places it",
            c.irq
        ),
        WriteOutcome::Failed { class, error } => {
            let class_name = serde_json::to_value(class).ok().and_then(|v| v.as_str().map(String::from));
            let wanted = list(c.wanted.as_ref());
            tracing::warn!(
                message_id = catalog::WRITE_FAILED,
                irq = c.irq,
                irq_name,
                device = c.device.as_str(),
                driver,
                queue = c.queue,
                cpus_old = old.as_str(),
                cpus_wanted = wanted.as_str(),
                class = class_name.as_deref().unwrap_or("other"),
                error = error.as_str(),
                "irq {} of {who}: write failed ({class:?}): {}",
                c.irq,
                printable(error)
            );
        }
    }
}

/// Logs one transmit-steering change: INFO with the journal fields for a write, WARN for a
/// failure (DEBUG when `quiet`: the same failure as the pass before).
pub(crate) fn log_xps_change(x: &XpsChange, quiet: bool) {
    let interface = x.interface.as_deref().unwrap_or("");
    let who = printable(if interface.is_empty() { &x.device } else { interface });
    let driver = x.driver.as_deref().unwrap_or("");
    let old = x.old.to_list_string();
    match &x.result {
        XpsOutcome::Written { new, matches, readback } => {
            let new = new.to_list_string();
            let differs = match (matches, readback) {
                (true, _) => String::new(),
                (false, Some(r)) => format!(" (read back as {})", r.to_list_string()),
                (false, None) => " (unreadable after the write)".to_string(),
            };
            tracing::info!(
                message_id = catalog::XPS_APPLIED,
                device = x.device.as_str(),
                interface,
                driver,
                txq = x.txq,
                xps_old = old.as_str(),
                xps_new = new.as_str(),
                "xps of {who} tx-{}: {} -> {}{differs}",
                x.txq,
                if old.is_empty() { "-" } else { &old },
                if new.is_empty() { "-" } else { &new }
            );
        }
        XpsOutcome::Failed { class, error } if quiet => {
            tracing::debug!(
                device = x.device.as_str(),
                txq = x.txq,
                "xps of {who} tx-{} again ({class:?}): {}",
                x.txq,
                printable(error)
            );
        }
        XpsOutcome::Failed { class, error } => tracing::warn!(
            message_id = catalog::WRITE_FAILED,
            device = x.device.as_str(),
            interface,
            txq = x.txq,
            class = ?class,
            "xps of {who} tx-{}: write failed ({class:?}): {}",
            x.txq,
            printable(error)
        ),
    }
}

/// An IRQ found off the CPUs irqwise placed it on, about to be restored; returns its device in
/// `plan`, if it has one there.
pub(crate) fn log_drift<'p>(d: &Drift, plan: &'p Plan) -> Option<&'p DevicePlan> {
    let found = d.found.as_ref().map_or("unreadable".into(), super::super::cpuset::CpuSet::to_list_string);
    let placed = d.placed.to_list_string();
    let (dev, p) = plan.find_irq(d.irq).map_or((None, None), |(dev, p)| (Some(dev), Some(p)));
    tracing::warn!(
        message_id = catalog::DRIFT_RESTORED,
        irq = d.irq,
        irq_name = d.name.as_deref().unwrap_or(""),
        device = dev.map_or("", |dev| dev.bdf.as_str()),
        driver = dev.and_then(|dev| dev.driver.as_deref()).unwrap_or(""),
        queue = p.and_then(|p| p.queue),
        cpus_placed = placed.as_str(),
        cpus_found = found.as_str(),
        "irq {} drifted from {placed} to {found}, restoring",
        d.irq
    );
    dev
}

/// A write that worked again after `n` passes that ended the same way.
pub(crate) fn log_recovered(c: &Change, n: u64) {
    tracing::info!(
        irq = c.irq,
        irq_name = c.irq_name.as_deref().unwrap_or(""),
        device = c.device.as_str(),
        driver = c.driver.as_deref().unwrap_or(""),
        queue = c.queue,
        "irq {}: written again after {n} passes that ended the same way",
        c.irq
    );
}

/// What a pass learned about a device's kernel-managed IRQs (`bdf`, bound to `driver`): not
/// predicted (the driver's choice), as predicted, uncertain, or off the prediction.
pub(crate) fn log_managed_news(news: &ManagedNews, bdf: &str, driver: &str) {
    if news.predicted == 0 {
        tracing::info!(
            device = bdf,
            driver,
            managed_irqs = news.managed,
            "{}: {} IRQs are kernel-managed; placement chosen by the driver (not predicted)",
            news.device,
            news.managed
        );
    } else if news.mismatched.is_empty() && news.uncertain.is_empty() {
        let of = if news.predicted < news.managed { format!(" for {}", news.predicted) } else { String::new() };
        tracing::info!(
            message_id = catalog::MANAGED_VERIFIED,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            "{}: {} IRQs are kernel-managed; predicted placement matches{of}",
            news.device,
            news.managed
        );
    } else if news.mismatched.is_empty() {
        let irqs: Vec<String> = news.uncertain.iter().map(u32::to_string).collect();
        let reason = news.uncertain_reason.as_deref().unwrap_or("unknown");
        tracing::info!(
            message_id = catalog::MANAGED_UNCERTAIN,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            uncertain_irqs = irqs.join(" "),
            reason,
            "{}: {} IRQs are kernel-managed; predicted placement matches where it can be known; IRQ(s) {} uncertain: {}",
            news.device,
            news.managed,
            irqs.join(", "),
            reason
        );
    } else {
        let irqs: Vec<String> = news.mismatched.iter().map(u32::to_string).collect();
        tracing::warn!(
            message_id = catalog::MANAGED_MISMATCH,
            device = bdf,
            driver,
            managed_irqs = news.managed,
            mismatched_irqs = irqs.join(" "),
            "{}: {} IRQs are kernel-managed; IRQ(s) {} are not where the kernel's spreading predicts",
            news.device,
            news.managed,
            irqs.join(", ")
        );
    }
}

/// What the record ([`super::record`]) found worth saying of a pass as a whole, beside its
/// collaborators' news and its writes: the record decides when (a failure once, the first
/// success after it), this says how it reads.
#[derive(Debug)]
pub(crate) enum PassNews<'a> {
    /// Pass `number`, run for `why`, failed with `error`: nothing was written.
    Failed { number: u64, why: &'a [String], error: &'a str },
    /// Pass `number` worked after passes that failed.
    WorksAgain { number: u64 },
    /// The daemon became degraded for `why` while its passes still run.
    Degraded { why: &'a str },
    /// A new warning of the plan.
    PlanWarning(&'a str),
    /// An IRQ the kernel (CPU-offline fallback) or its driver moved: placed again, not drift.
    KernelRewrite(&'a Drift),
    /// Not one IRQ of the pass could be written, for one cause of the machine.
    WritesBlocked(&'a WritesBlocked),
    /// IRQ affinities were written again (`written` of them) after that.
    WritableAgain { written: usize },
    /// A transmit queue's `xps_cpus` was written after failing.
    XpsWrittenAgain(&'a XpsChange),
    /// Pass `number`, run for `why`, changed something: its counts and the status line.
    Summary { number: u64, why: &'a [String], summary: &'a Summary, status: &'a str },
}

/// Says one [`PassNews`].
pub(crate) fn say_pass(news: &PassNews<'_>) {
    match news {
        PassNews::Failed { number, why, error } => tracing::error!(
            message_id = catalog::PASS_FAILED,
            pass = number,
            triggers = why.join(", "),
            error,
            "pass {number} ({}) failed, keeping the current placement: {error}",
            why.join(", ")
        ),
        PassNews::WorksAgain { number } => tracing::info!("pass {number} succeeded again"),
        PassNews::Degraded { why } => tracing::error!(
            message_id = catalog::PASS_FAILED,
            "degraded: {why}; retrying with backoff (the warnings above say why each write failed)"
        ),
        PassNews::PlanWarning(w) => tracing::warn!("{}", printable(w)),
        PassNews::KernelRewrite(d) => tracing::info!(
            irq = d.irq,
            "irq {} moved from {} to {} by the kernel (CPU-offline fallback) or its driver; placed again",
            d.irq,
            d.placed,
            list(d.found.as_ref())
        ),
        PassNews::WritesBlocked(b) => tracing::warn!(
            message_id = catalog::WRITES_BLOCKED,
            class = ?b.class,
            failed = b.failed,
            cause = b.cause,
            error = b.example.as_str(),
            "{}",
            printable(&b.line())
        ),
        PassNews::WritableAgain { written } => {
            tracing::info!("IRQ affinities can be written again ({written} written)");
        }
        PassNews::XpsWrittenAgain(x) => {
            tracing::info!(device = x.device.as_str(), txq = x.txq, "xps of tx-{}: written again", x.txq);
        }
        PassNews::Summary { number, why, summary, status } => tracing::info!(
            message_id = catalog::PASS_SUMMARY,
            pass = number,
            triggers = why.join(", "),
            written = summary.written,
            failed = summary.failed,
            status,
            "pass {number} ({}): {} written, {} failed; {status}",
            why.join(", "),
            summary.written,
            summary.failed
        ),
    }
}

/// A file the daemon keeps for a restart that a pass could not write.
#[derive(Debug)]
pub(crate) enum Unsaved {
    /// The topology memory, at `path`.
    Memory { path: std::path::PathBuf, error: String },
    /// The record of original masks (the error names the file).
    Originals(String),
}

/// Says one [`Unsaved`], with what it costs.
pub(crate) fn say_unsaved(u: &Unsaved) {
    match u {
        Unsaved::Memory { path, error } => {
            tracing::warn!(
                "cannot write {}: {error}; a restart while CPUs are offline may move queues",
                path.display()
            );
        }
        Unsaved::Originals(error) => {
            tracing::warn!("{error}; restore_on_exit would not know these IRQs' masks after a restart");
        }
    }
}
