//! The state file as `irqwise status` reads it back ([`read_state`]), and the text it prints
//! ([`render_status`]). The daemon writes the file ([`super::state`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::claims::HeldClaim;
use super::counters::{Counters, RecentChange};
use super::state::{StateError, STATE_FILE};
use crate::plan::Summary;
use crate::sysfs::processes::ProcessIdentity;
use crate::sysfs::Root;

/// The most bytes `status` reads of the state file (it grows with the IRQs of the machine).
pub(crate) const STATE_FILE_LIMIT: u64 = 256 << 20;

/// What `irqwise status` reads back: the parts of [`super::state::StateRecord`] it shows.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct StateView {
    pub pid: u32,
    /// Absent in state files of versions that did not record it.
    #[serde(default)]
    pub process: Option<ProcessIdentity>,
    pub started: u64,
    pub last_pass: u64,
    pub passes: u64,
    pub triggers: Vec<String>,
    pub summary: Summary,
    pub status: String,
    pub error: Option<String>,
    #[serde(default)]
    pub degraded: Option<String>,
    /// Absent in state files of versions that did not record it.
    #[serde(default)]
    pub config_error: Option<String>,
    pub plan: PlanView,
    /// Absent in state files of versions without counters.
    #[serde(default)]
    pub counters: Option<Counters>,
    #[serde(default)]
    pub recent_changes: Vec<RecentChange>,
    #[serde(default)]
    pub repeated: Vec<RepeatedView>,
    /// Absent in state files of versions without claims.
    #[serde(default)]
    pub claims: Vec<HeldClaim>,
    /// The live claims the last pass refused; absent in state files of versions without.
    #[serde(default)]
    pub refused_claims: Vec<crate::topology::claims::RefusedClaim>,
    /// Absent in state files of versions without load refinement.
    #[serde(default)]
    pub away_from_home: Vec<crate::plan::refine::Moved>,
    /// Absent in state files of versions that did not name other writers.
    #[serde(default)]
    pub left_to_others: Vec<super::respect::LeftToOther>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RepeatedView {
    pub irq: u32,
    pub name: Option<String>,
    pub target: String,
    pub outcome: String,
    pub count: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanView {
    pub devices: Vec<DeviceView>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Absent in state files of versions that did not record it.
    #[serde(default)]
    pub grouping: Option<GroupingView>,
}

/// The part of the plan's grouping rule `status` shows: the finding, when the kernel's managed
/// masks fit no rule irqwise knows.
#[derive(Debug, Clone, Deserialize)]
pub struct GroupingView {
    #[serde(default)]
    pub finding: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DeviceView {
    pub bdf: String,
    pub name: Option<String>,
    pub driver: Option<String>,
    pub strategy: String,
    pub irqs: Vec<PlacementView>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PlacementView {
    pub irq: u32,
    pub name: Option<String>,
    pub action: String,
    pub desired: Option<String>,
    pub current: Option<String>,
}

/// Whether `now`, the process running under the state file's pid, is the daemon that wrote it:
/// the process the file names (name and start time), or in a file that names none, irqwise.
pub(crate) fn is_writer(view: &StateView, now: &ProcessIdentity) -> bool {
    view.process.as_ref().map_or(now.comm == crate::sysfs::processes::DAEMON_NAME, |p| p == now)
}

/// Reads the state file as raw text (`status --json`) and parsed (`status`). `Ok(None)` when it
/// does not exist: the daemon is not running.
pub(crate) fn read_state(root: &Root) -> Result<Option<(String, StateView)>, StateError> {
    let path = root.path(STATE_FILE);
    let text = match crate::sysfs::read_regular_file(&path, STATE_FILE_LIMIT) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Read { path, source }),
    };
    let view = serde_json::from_str(&text).map_err(|source| StateError::Parse { path, source })?;
    Ok(Some((text, view)))
}

/// The human summary of `irqwise status`; `now` in unix seconds, `alive` whether `pid` runs.
pub(crate) fn render_status(s: &StateView, now: u64, alive: bool) -> String {
    let mut out = String::new();
    if alive {
        out.push_str(&format!("irqwise is running (pid {}) for {}\n", s.pid, ago(now, s.started)));
    } else {
        out.push_str(&format!("irqwise is not running: process {} is gone; this is the state it left\n", s.pid));
    }
    out.push_str(&format!(
        "last pass: {} ago (pass {}), because of: {}\n",
        ago(now, s.last_pass),
        s.passes,
        s.triggers.join(", ")
    ));
    out.push_str(&format!("{}; {} written in that pass\n", s.status, s.summary.written));
    if let Some(e) = &s.error {
        out.push_str(&format!("last pass failed: {e}\n"));
    }
    if let Some(d) = s.degraded.as_deref().filter(|_| s.error.is_none()) {
        out.push_str(&format!("degraded: {d}\n"));
    }
    if let Some(e) = &s.config_error {
        out.push_str(&format!("last reload rejected, previous configuration kept: {}\n", e.replace('\n', "; ")));
    }
    if let Some(f) = s.plan.grouping.as_ref().and_then(|g| g.finding.as_deref()) {
        out.push_str(&format!("kernel grouping: {}\n", crate::text::printable(f)));
    }
    for c in &s.claims {
        out.push_str(&format!("claim {}: {} kept free of device IRQs\n", c.owner, c.describe()));
    }
    for r in &s.refused_claims {
        out.push_str(&format!("claim {} refused: {}\n", crate::text::printable(&r.owner), r.reason));
    }
    for l in &s.left_to_others {
        out.push_str(&format!(
            "left to {} (on_drift = respect): irq {} ({}) of {} on {}\n",
            crate::text::printable(&l.owner),
            l.irq,
            crate::text::printable(l.name.as_deref().unwrap_or("-")),
            l.device,
            l.mask
        ));
    }
    for m in &s.away_from_home {
        out.push_str(&format!("away from home by load: irq {} of {}: home {}, {}\n", m.irq, m.device, m.home, m.why));
    }
    for r in &s.repeated {
        let name = r.name.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "irq {} ({name}) -> {}: {} in each of the last {} passes (logged once)\n",
            r.irq, r.target, r.outcome, r.count
        ));
    }
    for d in &s.plan.devices {
        let name = d.name.as_deref().unwrap_or("-");
        let driver = d.driver.as_deref().unwrap_or("-");
        out.push_str(&format!("\n{} {name} ({driver}): {}\n", d.bdf, d.strategy));
        for p in &d.irqs {
            let cpus = p.desired.as_deref().or(p.current.as_deref()).unwrap_or("?");
            let pname = p.name.as_deref().unwrap_or("-");
            out.push_str(&format!("  irq {:>5} {pname:<24} {:<8} {cpus}\n", p.irq, p.action));
        }
    }
    if let Some(counters) = &s.counters {
        out.push_str(&render_status_section(counters, &s.recent_changes, now));
    }
    out
}

/// "3 s", "2 min 5 s", "1 h 4 min" between `then` and `now` (0 when `then` is later).
fn ago(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// The part of `irqwise status` that comes from the counters: totals since start and the last
/// writes, newest first; `now` in Unix seconds for their ages. Guarantees: every counter the
/// metrics file has a total for is in the text.
pub(crate) fn render_status_section(c: &Counters, recent: &[RecentChange], now: u64) -> String {
    let sum = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    let nonzero = |m: &BTreeMap<String, u64>| {
        let parts: Vec<String> = m.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    };
    let mut out = String::from("\nsince start:\n");
    out.push_str(&format!(
        "  passes by trigger{}; {} failed\n",
        if c.passes.values().all(|n| *n == 0) { " none".to_string() } else { nonzero(&c.passes) },
        c.pass_failures
    ));
    out.push_str(&format!("  writes: {}{}\n", sum(&c.writes), nonzero(&c.writes)));
    if sum(&c.write_failures) > 0 {
        out.push_str(&format!("  failed writes by class{}\n", nonzero(&c.write_failures)));
    }
    out.push_str(&irq_writes_line(&c.irq_writes));
    if sum(&c.napi_settings_writes) > 0 {
        out.push_str(&format!(
            "  napi settings writes: {}{}\n",
            sum(&c.napi_settings_writes),
            nonzero(&c.napi_settings_writes)
        ));
    }
    let drift: u64 = c.drift_corrections.iter().map(|d| d.value).sum();
    let by_device: Vec<String> =
        c.drift_corrections.iter().map(|d| format!("{} {}", d.labels.device, d.value)).collect();
    out.push_str(&format!(
        "  drift corrections: {drift}{}\n",
        if by_device.is_empty() { String::new() } else { format!(" ({})", by_device.join(", ")) }
    ));
    out.push_str(&format!("  reloads: {}{}\n", sum(&c.reloads), nonzero(&c.reloads)));
    if let Some(last) = &c.last_pass {
        out.push_str(&format!(
            "  last pass took {:.1} ms and opened {} files\n",
            last.duration_seconds * 1000.0,
            last.files_opened
        ));
    }
    if recent.is_empty() {
        out.push_str("last changes: none\n");
        return out;
    }
    out.push_str(&format!("last {} change(s), newest first:\n", recent.len()));
    for r in recent.iter().rev() {
        let old = r.old.as_deref().unwrap_or("?");
        let what = match &r.new {
            Some(new) => format!("{old} -> {new}"),
            None => format!("{old}, {}", r.result),
        };
        out.push_str(&format!(
            "  {} s ago, pass {}: irq {} {} of {}: {what}\n",
            now.saturating_sub(r.at),
            r.pass,
            r.irq,
            r.irq_name.as_deref().unwrap_or("-"),
            r.device
        ));
    }
    out
}

/// `  IRQs written: 8, 11 writes (most: irq 37 x3, irq 38 x2, ...)`: the IRQs of the last plan
/// irqwise wrote, the five written most first; `  IRQs written: none` when it wrote none.
fn irq_writes_line(writes: &[super::counters::IrqWrites]) -> String {
    if writes.is_empty() {
        return "  IRQs written: none\n".to_string();
    }
    let total: u64 = writes.iter().map(|w| w.writes).sum();
    let mut most: Vec<&super::counters::IrqWrites> = writes.iter().collect();
    most.sort_by(|a, b| b.writes.cmp(&a.writes).then(a.irq.cmp(&b.irq)));
    let shown: Vec<String> = most.iter().take(5).map(|w| format!("irq {} x{}", w.irq, w.writes)).collect();
    let more = if most.len() > 5 { ", ..." } else { "" };
    format!("  IRQs written: {}, {total} writes (most: {}{more})\n", writes.len(), shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_irqs_written_most_come_first() {
        let w = |irq, writes| super::super::counters::IrqWrites {
            irq,
            name: None,
            labels: super::super::counters::DeviceLabels {
                device: "eth0".into(),
                driver: "bnxt_en".into(),
                class: "nic".into(),
            },
            writes,
        };
        assert_eq!(irq_writes_line(&[]), "  IRQs written: none\n");
        let many: Vec<_> = (30..37).map(|irq| w(irq, 1)).chain([w(40, 3), w(41, 2)]).collect();
        assert_eq!(
            irq_writes_line(&many),
            "  IRQs written: 9, 12 writes (most: irq 40 x3, irq 41 x2, irq 30 x1, irq 31 x1, irq 32 x1, ...)\n"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(ago(100, 97), "3 s");
        assert_eq!(ago(1000, 875), "2 min 5 s");
        assert_eq!(ago(10_000, 10_000 - 3840), "1 h 4 min");
        assert_eq!(ago(5, 10), "0 s");
    }
}
