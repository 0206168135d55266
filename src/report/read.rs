//! Reading what a report is built from, through a [`Root`]: the interrupt counts of
//! `/proc/interrupts` and each IRQ's `effective_affinity_list`.

use std::collections::BTreeMap;

use super::counts::{parse_counts, InterruptCounts};
use super::softirqs::parse_net_rx;
use super::LandingError;
use crate::cpuset::CpuSet;
use crate::sysfs::Root;

/// Where the counts are, relative to the root.
pub(crate) const PROC_INTERRUPTS: &str = "proc/interrupts";
/// Where the softirq counts are, relative to the root.
pub(crate) const PROC_SOFTIRQS: &str = "proc/softirqs";

/// One read of `ROOT/proc/interrupts`, and a warning per line that could not be read.
/// Guarantees: a missing or unreadable file, or one without CPU columns, is an error naming it.
pub(crate) fn read_counts(root: &Root) -> Result<(InterruptCounts, Vec<String>), LandingError> {
    let path = root.path(PROC_INTERRUPTS);
    let bytes =
        root.read_bytes_optional(PROC_INTERRUPTS)?.ok_or_else(|| LandingError::Missing { path: path.clone() })?;
    let text = String::from_utf8_lossy(&bytes);
    let (counts, bad) = parse_counts(&text).map_err(|source| LandingError::Header { path: path.clone(), source })?;
    let warnings = bad
        .iter()
        .map(|b| format!("{}:{}: {} ({:?}); that IRQ is not counted", path.display(), b.line_no, b.problem, b.line))
        .collect();
    Ok((counts, warnings))
}

/// `proc/irq/N/effective_affinity_list` of each of `irqs` that has one; an unreadable or
/// malformed file is left out with a warning.
pub(crate) fn read_effective(root: &Root, irqs: impl IntoIterator<Item = u32>) -> (BTreeMap<u32, CpuSet>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    for irq in irqs {
        match root.read_cpulist_optional(format!("proc/irq/{irq}/effective_affinity_list")) {
            Ok(Some(set)) => {
                out.insert(irq, set);
            }
            Ok(None) => {}
            Err(e) => warnings.push(e.to_string()),
        }
    }
    (out, warnings)
}

/// The `NET_RX` softirqs per CPU of `ROOT/proc/softirqs`; `Err` with a warning naming the file
/// when it is missing, unreadable or malformed (the report goes on without them).
pub(crate) fn read_net_rx(root: &Root) -> Result<BTreeMap<u32, u64>, String> {
    let path = root.path(PROC_SOFTIRQS);
    match root.read_bytes_optional(PROC_SOFTIRQS) {
        Ok(Some(bytes)) => parse_net_rx(&String::from_utf8_lossy(&bytes))
            .map_err(|e| format!("{}: {e}; NET_RX shares are not shown", path.display())),
        Ok(None) => Err(format!("{}: missing; NET_RX shares are not shown", path.display())),
        Err(e) => Err(format!("{e}; NET_RX shares are not shown")),
    }
}
