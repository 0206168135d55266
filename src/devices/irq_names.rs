//! IRQ action names: parsing `/proc/interrupts` and reading a queue role out of a name.
//!
//! Both functions here are pure: they take text and return data.

use std::collections::BTreeMap;

use super::{DeviceClass, QueueRole};

/// One problem found in `/proc/interrupts` text: the 1-based line number and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line_no: usize,
    pub line: String,
    pub problem: &'static str,
}

/// Action names per numbered IRQ from `/proc/interrupts` text.
///
/// Guarantees: only numbered IRQ lines (`  N: ...`) appear in the map; lines for IRQs without an
/// action (counts and chip columns only) map to an empty list; architecture lines (`NMI:`,
/// `LOC:`, ...) are ignored. The action list is the text after the last run of two or more
/// spaces following the chip name (the kernel prints `"  %s"` before the first action and
/// `", %s"` before the others), so names with single spaces (`PCIe PME`) survive.
pub fn parse_proc_interrupts(text: &str) -> (BTreeMap<u32, Vec<String>>, Vec<BadLine>) {
    let mut names = BTreeMap::new();
    let mut bad = Vec::new();
    let mut lines = text.lines().enumerate();
    let ncpus = match lines.next() {
        Some((_, header)) if header.split_whitespace().all(|t| t.starts_with("CPU")) => {
            header.split_whitespace().count()
        }
        Some((_, header)) => {
            bad.push(BadLine { line_no: 1, line: header.into(), problem: "expected a header of CPU columns" });
            return (names, bad);
        }
        None => return (names, bad),
    };
    for (i, line) in lines {
        let Some((label, rest)) = line.split_once(':') else {
            if !line.trim().is_empty() {
                bad.push(BadLine { line_no: i + 1, line: line.into(), problem: "expected \"IRQ: counts...\"" });
            }
            continue;
        };
        let label = label.trim();
        if !label.bytes().all(|b| b.is_ascii_digit()) {
            continue; // NMI, LOC, ERR, MIS, IPI0...
        }
        let Ok(irq) = label.parse::<u32>() else {
            bad.push(BadLine { line_no: i + 1, line: line.into(), problem: "IRQ number out of range" });
            continue;
        };
        names.insert(irq, actions_after_counts(rest, ncpus));
    }
    (names, bad)
}

/// The action names in the part of a line after `N:`, skipping up to `ncpus` count columns.
fn actions_after_counts(rest: &str, ncpus: usize) -> Vec<String> {
    let s = skip_counts(rest, ncpus);
    // Skip the chip name, then find the last gap of 2+ whitespace characters.
    let s = s.trim_start();
    let chip_end = s.find(char::is_whitespace).unwrap_or(s.len());
    let after_chip = &s[chip_end..];
    let Some(start) = last_wide_gap_end(after_chip) else { return Vec::new() };
    let field = after_chip[start..].trim_end();
    if field.is_empty() || looks_like_chip_column(field) {
        return Vec::new();
    }
    field.split(", ").map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect()
}

/// `s` after up to `n` leading count columns: each is optional whitespace then a non-empty run of
/// ASCII digits ending at whitespace or at the end; the first other token stops the skip.
/// Guarantees: the same as [`skip_counts_by_char`], byte by byte while the text is ASCII (a
/// 1024-CPU line has 1024 columns), character by character from the first non-ASCII byte on.
fn skip_counts(s: &str, n: usize) -> &str {
    let b = s.as_bytes();
    let mut pos = 0;
    for done in 0..n {
        let mut i = pos;
        while b.get(i).is_some_and(|&c| is_whitespace_byte(c)) {
            i += 1;
        }
        let digits = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        match b.get(i) {
            // Unicode whitespace (or not): leave it to the character-wise rules.
            Some(&c) if !c.is_ascii() => return skip_counts_by_char(&s[pos..], n - done),
            Some(&c) if !is_whitespace_byte(c) => return &s[pos..],
            _ if i == digits => return &s[pos..],
            _ => pos = i,
        }
    }
    &s[pos..]
}

/// The ASCII bytes `char::is_whitespace` accepts (also vertical tab, unlike
/// `u8::is_ascii_whitespace`).
fn is_whitespace_byte(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// [`skip_counts`] by Unicode characters: trim whitespace, take the token up to the next
/// whitespace, stop at an empty or non-digit token.
fn skip_counts_by_char(mut s: &str, n: usize) -> &str {
    for _ in 0..n {
        let t = s.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        if end == 0 || !t[..end].bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        s = &t[end..];
    }
    s
}

/// Byte offset just past the last run of at least two whitespace characters, if any.
fn last_wide_gap_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = b.len();
    while i >= 2 {
        if b[i - 1].is_ascii_whitespace() && b[i - 2].is_ascii_whitespace() {
            return Some(i);
        }
        i -= 1;
    }
    None
}

/// True for hwirq / trigger columns (`2-edge`, `524288`, `Edge`, `-fasteoi`) that show up last
/// on a line whose IRQ has no action.
fn looks_like_chip_column(field: &str) -> bool {
    let lower = field.to_ascii_lowercase();
    let word = lower.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches('-');
    let trigger = matches!(word, "" | "edge" | "level" | "fasteoi" | "simple");
    trigger && !field.contains(' ')
}

/// The queue role and 0-based queue index of one IRQ action name on a device of `class`.
///
/// Guarantees: never fails; anything unrecognised is `(Misc, None)`; a queue index is returned
/// only with `Io`, `Rx`, `Tx` or `RxTx`. NVMe names are read only on NVMe devices, NIC schemes
/// only on NICs; virtio-blk (`virtioN-req.Q`) is recognised on any class.
pub fn classify(name: &str, class: DeviceClass) -> (QueueRole, Option<u32>) {
    let name = name.trim();
    if let Some(found) = classify_virtio(name) {
        return found;
    }
    match class {
        DeviceClass::Nvme => classify_nvme(name),
        DeviceClass::Nic => classify_nic(name),
        DeviceClass::Other => (QueueRole::Misc, None),
    }
}

/// `nvmeXq0` → admin; `nvmeXqN` → I/O queue N-1.
fn classify_nvme(name: &str) -> (QueueRole, Option<u32>) {
    let parsed = name.strip_prefix("nvme").and_then(|r| r.split_once('q')).and_then(|(ctrl, q)| {
        let ctrl_ok = !ctrl.is_empty() && ctrl.bytes().all(|b| b.is_ascii_digit());
        ctrl_ok.then(|| number(q)).flatten()
    });
    match parsed {
        Some(0) => (QueueRole::Admin, None),
        Some(n) => (QueueRole::Io, Some(n - 1)),
        None => (QueueRole::Misc, None),
    }
}

/// `virtioN-input.Q` / `-output.Q` (virtio-net), `virtioN-req.Q` (virtio-blk), `virtioN-config`.
fn classify_virtio(name: &str) -> Option<(QueueRole, Option<u32>)> {
    let rest = name.strip_prefix("virtio")?;
    let (idx, what) = rest.split_once('-')?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let Some((kind, q)) = what.split_once('.') else { return Some((QueueRole::Misc, None)) };
    let role = match kind {
        "input" => QueueRole::Rx,
        "output" => QueueRole::Tx,
        "req" => QueueRole::Io,
        _ => return Some((QueueRole::Misc, None)),
    };
    Some(number(q).map_or((QueueRole::Misc, None), |q| (role, Some(q))))
}

/// The common NIC schemes: mlx5, and `<prefix><sep><kind><sep>N` suffixes of ice, i40e, ixgbe,
/// igb, igc, e1000e, bnxt (`-TxRx-N`, `-rx-N`, `-tx-N`), ena (`-Tx-Rx-N`), vmxnet3 (`-rxtx-N`),
/// qede (`-fp-N`), hinic (`_qpN`, `_rxqN`, `_txqN`) and gve (`gve-ntfy-blkN@pci:...`).
fn classify_nic(name: &str) -> (QueueRole, Option<u32>) {
    // mlx5 (and mlx5 sub-functions): "mlx5_comp7@pci:0000:81:00.0", "mlx5_async0@pci:...".
    let base = name.split_once('@').map_or(name, |(b, _)| b);
    if let Some(n) = base.strip_prefix("mlx5_comp").and_then(number) {
        return (QueueRole::RxTx, Some(n));
    }
    if let Some(n) = base.strip_prefix("gve-ntfy-blk").and_then(number) {
        return (QueueRole::RxTx, Some(n));
    }
    // "<prefix>-<kind>-N": split off the trailing number, then match the kind case-insensitively.
    if let Some((head, n)) = name.rsplit_once('-').and_then(|(h, n)| number(n).map(|n| (h, n))) {
        let lower = head.to_ascii_lowercase();
        let kinds: [(&str, QueueRole); 6] = [
            ("-tx-rx", QueueRole::RxTx),
            ("-txrx", QueueRole::RxTx),
            ("-rxtx", QueueRole::RxTx),
            ("-fp", QueueRole::RxTx),
            ("-rx", QueueRole::Rx),
            ("-tx", QueueRole::Tx),
        ];
        for (suffix, role) in kinds {
            if lower.ends_with(suffix) && lower.len() > suffix.len() {
                return (role, Some(n));
            }
        }
    }
    // hinic: "<if>_qp3", "<if>_rxq3", "<if>_txq3".
    if let Some((_, tail)) = name.rsplit_once('_') {
        let hinic: [(&str, QueueRole); 3] = [("qp", QueueRole::RxTx), ("rxq", QueueRole::Rx), ("txq", QueueRole::Tx)];
        for (kind, role) in hinic {
            if let Some(n) = tail.strip_prefix(kind).and_then(number) {
                return (role, Some(n));
            }
        }
    }
    (QueueRole::Misc, None)
}

/// A plain decimal number (no sign, no spaces).
fn number(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceClass::{Nic, Nvme, Other};
    use QueueRole::*;

    #[test]
    fn classify_table() {
        // (name, class, expected role, expected queue): each row from the driver's naming scheme.
        let table: &[(&str, DeviceClass, QueueRole, Option<u32>)] = &[
            ("nvme0q0", Nvme, Admin, None),
            ("nvme0q1", Nvme, Io, Some(0)),
            ("nvme12q64", Nvme, Io, Some(63)),
            ("nvmeq1", Nvme, Misc, None),
            ("nvme0q", Nvme, Misc, None),
            ("nvme0q1", Nic, Misc, None),
            ("virtio0-input.0", Nic, Rx, Some(0)),
            ("virtio3-output.15", Nic, Tx, Some(15)),
            ("virtio0-config", Nic, Misc, None),
            ("virtio0-control", Nic, Misc, None),
            ("virtio4-input", Other, Misc, None),
            ("virtio1-req.2", Other, Io, Some(2)),
            ("virtio3-rx", Other, Misc, None),
            ("ice-eth2-TxRx-5", Nic, RxTx, Some(5)),
            ("i40e-ens1f0-TxRx-0", Nic, RxTx, Some(0)),
            ("eth0-TxRx-11", Nic, RxTx, Some(11)),
            ("eth0-rxtx-3", Nic, RxTx, Some(3)),
            ("eth0-rx-0", Nic, Rx, Some(0)),
            ("eth0-tx-1", Nic, Tx, Some(1)),
            ("eth0", Nic, Misc, None),
            ("eth0-event-4", Nic, Misc, None),
            ("ens5-Tx-Rx-7", Nic, RxTx, Some(7)),
            ("ena-mgmnt@pci:0000:00:05.0", Nic, Misc, None),
            ("mlx5_comp7@pci:0000:81:00.0", Nic, RxTx, Some(7)),
            ("mlx5_async0@pci:0000:81:00.0", Nic, Misc, None),
            ("mlx5_comp7@pci:0000:81:00.0", Other, Misc, None),
            ("eno1-fp-2", Nic, RxTx, Some(2)),
            ("enp3s0_qp4", Nic, RxTx, Some(4)),
            ("enp3s0_rxq1", Nic, Rx, Some(1)),
            ("gve-ntfy-blk9@pci:0000:00:04.0", Nic, RxTx, Some(9)),
            ("ice-0000:81:00.0:misc", Nic, Misc, None),
            ("-tx-3", Nic, Misc, None),
            ("eth0-TxRx-x", Nic, Misc, None),
            ("eth0-TxRx-99999999999", Nic, Misc, None),
            ("", Nic, Misc, None),
        ];
        for &(name, class, role, queue) in table {
            assert_eq!(classify(name, class), (role, queue), "{name:?} on {class:?}");
        }
    }

    #[test]
    fn proc_interrupts_formats() {
        let text = "\
           CPU0       CPU1       CPU2       CPU3
  0:         40          0          0          0   IO-APIC   2-edge      timer
  8:          0          0          0          0   IO-APIC   8-edge      rtc0
 24:          1          0          0          0  IR-PCI-MSIX-0000:00:03.0   0-edge      virtio0-input.0
 25:          5          0          0          7  PCI-MSI 524288-edge      nvme0q0
 26:          0          0          0          0  PCI-MSI 458752-edge      PCIe PME, pciehp
 27:          0          0          0          0  ITS-MSI 524289 Edge      nvme0q1
 28:          0          0          0          0  IO-APIC  16-fasteoi   ehci_hcd:usb1, eth0
 29:          0          0          0          0  IO-APIC   9-fasteoi
 30:          3          1          0          0  PCI-MSI-edge      eth1-TxRx-0
NMI:          0          0          0          0   Non-maskable interrupts
ERR:          0
";
        let (names, bad) = parse_proc_interrupts(text);
        assert!(bad.is_empty(), "{bad:?}");
        let get = |irq: u32| names.get(&irq).cloned().unwrap_or_default();
        assert_eq!(get(0), ["timer"]);
        assert_eq!(get(8), ["rtc0"]);
        assert_eq!(get(24), ["virtio0-input.0"]);
        assert_eq!(get(25), ["nvme0q0"]);
        assert_eq!(get(26), ["PCIe PME", "pciehp"]);
        assert_eq!(get(27), ["nvme0q1"]);
        assert_eq!(get(28), ["ehci_hcd:usb1", "eth0"]);
        assert!(get(29).is_empty());
        assert_eq!(get(30), ["eth1-TxRx-0"]);
        assert_eq!(names.len(), 9);
    }

    proptest::proptest! {
        #[test]
        fn skip_counts_bytewise_equals_charwise(
            s in "[ \t\x0b\n0-9a\u{a0}\u{2003}\u{85}é]{0,40}",
            n in 0usize..8,
        ) {
            proptest::prop_assert_eq!(skip_counts(&s, n), skip_counts_by_char(&s, n));
        }
    }

    #[test]
    fn proc_interrupts_bad_header_is_reported() {
        let (names, bad) = parse_proc_interrupts(" 24: 1 2 chip 0-edge x\n");
        assert!(names.is_empty());
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].line_no, 1);
    }
}
