//! Per-CPU interrupt counts from `/proc/interrupts` text, and the difference between two reads.
//! Pure: text in, data out.

use std::collections::BTreeMap;

/// One read of `/proc/interrupts`: the CPU of each count column (the kernel prints a column per
/// online CPU, titled `CPUn`) and the counts of every numbered IRQ, one per column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct InterruptCounts {
    /// Column → CPU number, in the order of the header.
    pub cpus: Vec<u32>,
    /// IRQ → its count on each CPU of `cpus` (same length and order).
    pub irqs: BTreeMap<u32, Vec<u64>>,
}

/// A line of `/proc/interrupts` that could not be read: 1-based number, the line, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadCountLine {
    pub line_no: usize,
    pub line: String,
    pub problem: &'static str,
}

/// The header is not a row of `CPUn` titles: nothing else in the file can be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected header {header:?}, expected CPU column titles (\"CPU0 CPU1 ...\")")]
pub(crate) struct HeaderError {
    pub header: String,
}

/// Parses the counts of every numbered IRQ line. Guarantees: architecture lines (`NMI:`,
/// `LOC:`, ...) are skipped; a numbered line with fewer than one count per CPU column is
/// reported and skipped, never half-read; an empty text has no CPUs and no IRQs.
pub(crate) fn parse_counts(text: &str) -> Result<(InterruptCounts, Vec<BadCountLine>), HeaderError> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else { return Ok((InterruptCounts::default(), Vec::new())) };
    let cpus: Option<Vec<u32>> =
        header.split_whitespace().map(|t| t.strip_prefix("CPU").and_then(|n| n.parse().ok())).collect();
    let cpus = cpus.filter(|c| !c.is_empty()).ok_or_else(|| HeaderError { header: header.to_string() })?;
    let mut irqs = BTreeMap::new();
    let mut bad = Vec::new();
    for (i, line) in lines {
        let Some((label, rest)) = line.split_once(':') else { continue };
        let label = label.trim();
        if label.is_empty() || !label.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(irq) = label.parse::<u32>() else {
            bad.push(BadCountLine { line_no: i + 1, line: line.into(), problem: "IRQ number out of range" });
            continue;
        };
        let counts: Vec<u64> = rest.split_whitespace().take(cpus.len()).map_while(|t| t.parse().ok()).collect();
        if counts.len() != cpus.len() {
            bad.push(BadCountLine { line_no: i + 1, line: line.into(), problem: "expected one count per CPU column" });
            continue;
        }
        irqs.insert(irq, counts);
    }
    Ok((InterruptCounts { cpus, irqs }, bad))
}

/// The kernel's per-CPU IRQ counters are `unsigned int` (`kstat_irqs`), printed as decimals.
const COUNTER_WRAP: u64 = 1 << 32;

/// Interrupts between two reads of one counter. Guarantees: a counter that went down either
/// wrapped at 2^32 (it was in the upper half before) or restarted from zero (the IRQ was freed
/// and allocated again), and is counted accordingly; never negative.
pub(crate) fn counter_delta(before: u64, after: u64) -> u64 {
    if after >= before {
        after - before
    } else if (COUNTER_WRAP / 2..COUNTER_WRAP).contains(&before) {
        COUNTER_WRAP - before + after
    } else {
        after
    }
}

/// Interrupts per IRQ and CPU between `first` and `second`, for the CPUs with a column in both
/// reads (a CPU that came or went between them has no baseline). IRQs only in `second` count
/// from zero (they were requested between the reads); IRQs only in `first` are gone. Returns
/// the deltas (IRQ → CPU → interrupts, CPUs with none left out) and the CPUs left out.
pub(crate) fn deltas(
    first: &InterruptCounts,
    second: &InterruptCounts,
) -> (BTreeMap<u32, BTreeMap<u32, u64>>, Vec<u32>) {
    let before_col: BTreeMap<u32, usize> = first.cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
    let skipped: Vec<u32> = second
        .cpus
        .iter()
        .chain(&first.cpus)
        .copied()
        .filter(|c| !(first.cpus.contains(c) && second.cpus.contains(c)))
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    let mut out = BTreeMap::new();
    for (&irq, after) in &second.irqs {
        let before = first.irqs.get(&irq);
        let mut per_cpu = BTreeMap::new();
        for (&cpu, &now) in second.cpus.iter().zip(after) {
            let Some(&col) = before_col.get(&cpu) else { continue };
            let then = before.and_then(|b| b.get(col)).copied().unwrap_or(0);
            let n = counter_delta(then, now);
            if n > 0 {
                per_cpu.insert(cpu, n);
            }
        }
        out.insert(irq, per_cpu);
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "            CPU0       CPU1       CPU4
   0:         44          0          0  IR-IO-APIC    2-edge      timer
  38:       1000         20          5  IR-PCI-MSIX-0000:81:00.0    0-edge      eth0-TxRx-0
  39:          0  4294967290         0  IR-PCI-MSIX-0000:81:00.0    1-edge      eth0-TxRx-1
 NMI:          0          0          0   Non-maskable interrupts
  40:          1          2
";

    #[test]
    fn counts_follow_the_cpu_columns_and_skip_architecture_lines() {
        let (c, bad) = parse_counts(TEXT).unwrap();
        assert_eq!(c.cpus, vec![0, 1, 4]);
        assert_eq!(c.irqs[&38], vec![1000, 20, 5]);
        assert_eq!(c.irqs[&39], vec![0, 4294967290, 0]);
        assert!(!c.irqs.contains_key(&40), "a short line is not half-read");
        assert_eq!(bad.len(), 1);
        assert_eq!((bad[0].line_no, bad[0].problem), (6, "expected one count per CPU column"));
    }

    #[test]
    fn a_header_without_cpu_titles_is_refused() {
        assert!(parse_counts("hello world\n  1: 2\n").is_err());
        assert_eq!(parse_counts("").unwrap().0, InterruptCounts::default());
    }

    #[test]
    fn deltas_handle_wraps_restarts_and_cpus_that_came_or_went() {
        let (a, _) = parse_counts(TEXT).unwrap();
        let later = "            CPU0       CPU1       CPU5
  38:       1500         20          9  IR-PCI-MSIX-0000:81:00.0    0-edge      eth0-TxRx-0
  39:          0         10          0  IR-PCI-MSIX-0000:81:00.0    1-edge      eth0-TxRx-1
  41:          3          0          0  IR-PCI-MSIX-0000:81:00.0    2-edge      eth0-TxRx-2
";
        let (b, _) = parse_counts(later).unwrap();
        let (d, skipped) = deltas(&a, &b);
        assert_eq!(skipped, vec![4, 5]);
        assert_eq!(d[&38], BTreeMap::from([(0, 500)]));
        // 4294967290 → 10: wrapped at 2^32, 16 interrupts.
        assert_eq!(d[&39], BTreeMap::from([(1, 16)]));
        assert_eq!(d[&41], BTreeMap::from([(0, 3)]));
        assert!(!d.contains_key(&0), "IRQ 0 is gone from the second read");
        assert_eq!(counter_delta(500, 20), 20, "a restarted counter counts from zero");
    }
}
