//! Where receive processing ran: the `NET_RX` row of `/proc/softirqs` (per CPU, since boot), and
//! each CPU's share of the `NET_RX` softirqs between two reads. With threaded NAPI most of a
//! queue's work runs in its thread instead, which the report shows per queue. Pure: text in,
//! counts out.

use std::collections::BTreeMap;

use serde::Serialize;

/// What is wrong with a `/proc/softirqs` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SoftirqsError {
    #[error("no CPU header line (expected \"CPU0 CPU1 ...\")")]
    NoHeader,
    #[error("no NET_RX line")]
    NoNetRx,
    #[error("NET_RX count {value:?} of column {column} is not a number")]
    BadCount { column: usize, value: String },
}

/// `NET_RX` softirqs per CPU, as the text gives them (the kernel lists every possible CPU).
/// Guarantees: one entry per CPU of the header; an error names what is missing or malformed.
pub(crate) fn parse_net_rx(text: &str) -> Result<BTreeMap<u32, u64>, SoftirqsError> {
    let mut lines = text.lines();
    let header = lines.next().ok_or(SoftirqsError::NoHeader)?;
    let cpus: Vec<u32> = header
        .split_whitespace()
        .map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()
        .ok_or(SoftirqsError::NoHeader)?;
    if cpus.is_empty() {
        return Err(SoftirqsError::NoHeader);
    }
    let row = lines.find_map(|l| l.trim_start().strip_prefix("NET_RX:")).ok_or(SoftirqsError::NoNetRx)?;
    let mut out = BTreeMap::new();
    let mut values = row.split_whitespace();
    for (column, cpu) in cpus.iter().enumerate() {
        let value = values.next().unwrap_or("");
        let n = value.parse().map_err(|_| SoftirqsError::BadCount { column, value: value.to_string() })?;
        out.insert(*cpu, n);
    }
    Ok(out)
}

/// One CPU's `NET_RX` softirqs between two reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NetRxCpu {
    pub cpu: u32,
    pub softirqs: u64,
    /// Its part of all CPUs' `NET_RX` softirqs in the interval, in percent.
    pub share_percent: f64,
}

/// The CPUs that ran `NET_RX` softirqs between `first` and `second`, ascending, with their
/// share. Guarantees: only CPUs in both reads with a positive difference; shares add up to 100
/// (up to rounding) when any CPU has one.
pub(crate) fn net_rx_shares(first: &BTreeMap<u32, u64>, second: &BTreeMap<u32, u64>) -> Vec<NetRxCpu> {
    let fired: Vec<(u32, u64)> = second
        .iter()
        .filter_map(|(cpu, n)| Some((*cpu, n.checked_sub(*first.get(cpu)?)?)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let total: u64 = fired.iter().map(|(_, n)| n).sum();
    fired
        .into_iter()
        .map(|(cpu, softirqs)| NetRxCpu { cpu, softirqs, share_percent: softirqs as f64 * 100.0 / total as f64 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "                    CPU0       CPU1       CPU2
          HI:          0          0          0
      NET_TX:          5          1          0
      NET_RX:        100         20          7
       BLOCK:          0          0          0
";

    #[test]
    fn net_rx_is_read_per_cpu_of_the_header() {
        let counts = parse_net_rx(TEXT).unwrap();
        assert_eq!(counts, BTreeMap::from([(0, 100), (1, 20), (2, 7)]));
    }

    #[test]
    fn what_is_missing_or_malformed_is_named() {
        assert_eq!(parse_net_rx(""), Err(SoftirqsError::NoHeader));
        assert_eq!(parse_net_rx("  HI: 0\n"), Err(SoftirqsError::NoHeader));
        assert_eq!(parse_net_rx("  CPU0\n  HI: 0\n"), Err(SoftirqsError::NoNetRx));
        let bad = parse_net_rx("  CPU0 CPU1\n NET_RX: 5 x\n");
        assert_eq!(bad, Err(SoftirqsError::BadCount { column: 1, value: "x".into() }));
        let short = parse_net_rx("  CPU0 CPU1\n NET_RX: 5\n");
        assert_eq!(short, Err(SoftirqsError::BadCount { column: 1, value: String::new() }));
    }

    #[test]
    fn shares_are_of_the_interval_and_skip_idle_or_vanished_cpus() {
        let first = BTreeMap::from([(0, 100), (1, 20), (2, 7), (3, 9)]);
        let second = BTreeMap::from([(0, 130), (1, 30), (2, 7), (4, 50)]);
        let shares = net_rx_shares(&first, &second);
        let cpus: Vec<(u32, u64)> = shares.iter().map(|s| (s.cpu, s.softirqs)).collect();
        assert_eq!(cpus, vec![(0, 30), (1, 10)], "CPU 2 ran none, 3 and 4 are in one read only");
        assert_eq!(shares[0].share_percent, 75.0);
        assert_eq!(shares[1].share_percent, 25.0);
        assert!(net_rx_shares(&second, &first).iter().all(|s| s.softirqs > 0), "no count goes backwards");
    }
}
