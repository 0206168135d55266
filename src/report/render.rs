//! The human form of a [`Landing`]: one summary line per device, then one row per IRQ.

use super::landing::{IrqLanding, Landing, LocalityCounts, ThreadLanding};
use super::softirqs::NetRxCpu;
use crate::cpuset::CpuSet;

/// `part` of `whole` in whole percent, rounded down, so 100% means all of it; `None` for a
/// zero `whole`.
pub(crate) fn percent(part: u64, whole: u64) -> Option<u64> {
    (whole > 0).then(|| (u128::from(part) * 100 / u128::from(whole)) as u64)
}

/// A rate for people: whole numbers with thousands separators from 100 up, one decimal below.
pub(crate) fn rate_text(rate: f64) -> String {
    if rate >= 100.0 {
        let digits = format!("{rate:.0}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if rate == 0.0 {
        "0".into()
    } else {
        format!("{rate:.1}")
    }
}

/// The classes that got interrupts with their share: `desired 75%, node 25%`; `-` for none.
fn locality_text(l: &LocalityCounts) -> String {
    let total: u64 = l.entries().iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = l
        .entries()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {}%", percent(*n, total).unwrap_or(0)))
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

fn list(set: Option<&CpuSet>) -> String {
    set.map_or("-".into(), |s| if s.is_empty() { "-".into() } else { s.to_list_string() })
}

const HEADER: [&str; 8] = ["IRQ", "NAME", "QUEUE", "IRQ/S", "DESIRED", "EFFECTIVE", "FIRED ON", "LOCALITY"];

fn cells(i: &IrqLanding) -> [String; 8] {
    let fired: CpuSet = i.cpus.iter().map(|c| c.cpu).collect();
    [
        i.irq.to_string(),
        i.name.as_deref().unwrap_or("-").to_string(),
        i.role.label(i.queue),
        rate_text(i.rate),
        list(i.desired.as_ref()),
        list(i.effective.as_ref()),
        list(Some(&fired)),
        locality_text(&i.locality),
    ]
}

/// The summary line of a device: `eth0 (0000:81:00.0, ixgbe): 18,230 irq/s, 100% on desired
/// CPUs, 100% on node 1`; the shares only where they have a base.
pub(crate) fn device_line(d: &super::landing::DeviceLanding) -> String {
    let who = d.name.as_deref().unwrap_or(&d.bdf);
    let what = match (&d.name, &d.driver) {
        (Some(_), Some(drv)) => format!(" ({}, {drv})", d.bdf),
        (Some(_), None) => format!(" ({})", d.bdf),
        (None, Some(drv)) => format!(" ({drv})"),
        (None, None) => String::new(),
    };
    let mut line = format!("{who}{what}: {} irq/s", rate_text(d.rate));
    if let Some(p) = percent(d.locality.desired, d.with_desired) {
        line.push_str(&format!(", {p}% on desired CPUs"));
    }
    if let (Some(on), Some(node)) = (d.on_node, d.node) {
        if let Some(p) = percent(on, d.interrupts) {
            line.push_str(&format!(", {p}% on node {node}"));
        }
    }
    line
}

/// `  queue 0 (irq 30): thread napi/eth0-8193 (pid 312) last ran on CPU 3, allowed 3`.
fn thread_line(i: &IrqLanding, t: &ThreadLanding) -> String {
    let last = t.last_cpu.map_or("an unknown CPU".to_string(), |c| format!("CPU {c}"));
    format!(
        "  {} (irq {}): thread {} (pid {}) last ran on {last}, allowed {}\n",
        i.role.label(i.queue),
        i.irq,
        t.name,
        t.pid,
        list(t.allowed.as_ref())
    )
}

/// `NET_RX softirqs by CPU: 2 41%, 3 35%, 6 24%` (shares rounded down).
fn net_rx_line(cpus: &[NetRxCpu]) -> String {
    let parts: Vec<String> = cpus.iter().map(|c| format!("{} {}%", c.cpu, c.share_percent.floor() as u64)).collect();
    format!("NET_RX softirqs by CPU: {}\n", parts.join(", "))
}

/// The report as text: the interval, then per device its summary line and its IRQ rows under
/// one header, columns as wide as their widest cell, and a line per NAPI thread; then where
/// `NET_RX` softirqs ran and the warnings.
pub(crate) fn render_table(l: &Landing) -> String {
    let rows: Vec<Vec<[String; 8]>> = l.devices.iter().map(|d| d.irqs.iter().map(cells).collect()).collect();
    let header = HEADER.map(String::from);
    let mut widths = [0usize; 8];
    for row in std::iter::once(&header).chain(rows.iter().flatten()) {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String; 8]| {
        let mut out = format!("  {:>w$}", row[0], w = widths[0]);
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate().skip(1) {
            out.push(' ');
            if i == 3 {
                out.push_str(&format!("{cell:>w$}"));
            } else {
                out.push_str(cell);
                out.extend(std::iter::repeat_n(' ', w.saturating_sub(cell.chars().count())));
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let mut out = format!("interrupts over {:.1} s\n", l.interval_seconds);
    if !l.devices.is_empty() {
        out.push_str(&line(&header));
    }
    for (d, rows) in l.devices.iter().zip(&rows) {
        out.push_str(&device_line(d));
        out.push('\n');
        for row in rows {
            out.push_str(&line(row));
        }
        for i in &d.irqs {
            if let Some(t) = &i.napi_thread {
                out.push_str(&thread_line(i, t));
            }
        }
    }
    if !l.net_rx.is_empty() {
        out.push_str(&net_rx_line(&l.net_rx));
    }
    for w in &l.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_shares_read_naturally() {
        assert_eq!(rate_text(18_230.4), "18,230");
        assert_eq!(rate_text(1_000_000.0), "1,000,000");
        assert_eq!(rate_text(100.0), "100");
        assert_eq!(rate_text(2.5), "2.5");
        assert_eq!(rate_text(0.0), "0");
        assert_eq!(percent(999, 1000), Some(99), "100% only when all");
        assert_eq!(percent(1000, 1000), Some(100));
        assert_eq!(percent(1, 0), None);
    }

    #[test]
    fn locality_lists_the_classes_that_got_interrupts() {
        let l = LocalityCounts { desired: 3, remote: 1, ..LocalityCounts::default() };
        assert_eq!(locality_text(&l), "desired 75%, remote 25%");
        assert_eq!(locality_text(&LocalityCounts::default()), "-");
    }
}
