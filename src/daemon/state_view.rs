//! What `irqwise status` prints of the state file ([`render_status`]) and whether the daemon
//! that wrote it still runs ([`is_writer`]). The file and its type are [`super::state`].

use std::collections::BTreeMap;

use super::counters::{Counters, RecentChange};
use super::state::StateFile;
use crate::sysfs::processes::ProcessIdentity;

/// Whether `now`, the process running under the state file's pid, is the daemon that wrote it:
/// the process the file names (name and start time), or in a file that names none, irqwise.
pub(crate) fn is_writer(state: &StateFile, now: &ProcessIdentity) -> bool {
    state.process.as_deref().map_or(now.comm == crate::sysfs::processes::DAEMON_NAME, |p| p == now)
}

/// The human summary of `irqwise status`; `now` in unix seconds, `alive` whether `pid` runs.
pub(crate) fn render_status(s: &StateFile, now: u64, alive: bool) -> String {
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
    for c in s.claims.iter() {
        out.push_str(&format!("claim {}: {} kept free of device IRQs\n", c.owner, c.describe()));
    }
    for r in s.refused_claims.iter() {
        out.push_str(&format!("claim {} refused: {}\n", crate::text::printable(&r.owner), r.reason));
    }
    for l in s.left_to_others.iter() {
        out.push_str(&format!(
            "left to {} (on_drift = respect): irq {} ({}) of {} on {}\n",
            crate::text::printable(&l.owner),
            l.irq,
            crate::text::printable(l.name.as_deref().unwrap_or("-")),
            l.device,
            l.mask
        ));
    }
    for m in s.away_from_home.iter() {
        out.push_str(&format!("away from home by load: irq {} of {}: home {}, {}\n", m.irq, m.device, m.home, m.why));
    }
    for r in s.repeated.iter() {
        let name = r.name.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "irq {} ({name}) -> {}: {} in each of the last {} passes (logged once)\n",
            r.irq, r.target, r.outcome, r.count
        ));
    }
    for d in s.plan.devices.entries() {
        let name = d.name.as_deref().unwrap_or("-");
        let driver = d.driver.as_deref().unwrap_or("-");
        out.push_str(&format!("\n{} {name} ({driver}): {}\n", d.bdf, d.strategy));
        for p in &d.irqs {
            let cpus = p.desired.as_ref().or(p.current.as_ref()).map_or_else(|| "?".to_string(), ToString::to_string);
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
