//! IRQ action names from `/proc/interrupts` text. Pure: text in, data out. What a name means is
//! read by [`super::recognise`].

use std::collections::BTreeMap;

/// One problem found in `/proc/interrupts` text: the 1-based line number and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line_no: usize,
    pub line: String,
    pub problem: &'static str,
}

/// Action names per numbered IRQ from `/proc/interrupts` text.
///
/// Guarantees: only numbered IRQ lines (`  N: ...`) appear in the map, the first line of an IRQ
/// listed twice (a problem reported) winning; lines for IRQs without an
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
        if names.contains_key(&irq) {
            bad.push(BadLine {
                line_no: i + 1,
                line: line.into(),
                problem: "IRQ listed twice (its first line is used)",
            });
            continue;
        }
        let (actions, problem) = actions_after_counts(rest, ncpus);
        if let Some(problem) = problem {
            bad.push(BadLine { line_no: i + 1, line: line.into(), problem });
        }
        names.insert(irq, actions);
    }
    (names, bad)
}

/// The action names in the part of a line after `N:`, skipping up to `ncpus` count columns, and
/// what was odd about the line when it is not laid out as the kernel lays it out.
///
/// A line without the kernel's two spaces before the actions (single spaces throughout: a
/// hand-made or re-formatted capture) is read as its tokens after the chip's columns (the hwirq
/// and trigger), with a problem saying so, rather than dropped as an IRQ without an action.
fn actions_after_counts(rest: &str, ncpus: usize) -> (Vec<String>, Option<&'static str>) {
    let s = skip_counts(rest, ncpus);
    // Skip the chip name, then find the last gap of 2+ whitespace characters.
    let s = s.trim_start();
    let chip_end = s.find(char::is_whitespace).unwrap_or(s.len());
    let after_chip = &s[chip_end..];
    let Some(start) = last_wide_gap_end(after_chip) else { return single_spaced_actions(after_chip) };
    let field = after_chip[start..].trim_end();
    if field.is_empty() || looks_like_chip_column(field) {
        return (Vec::new(), None);
    }
    (split_action_list(field), None)
}

/// The actions of a line whose columns after the chip are single-spaced: the tokens after the
/// hwirq and trigger columns; none (and nothing odd) when only those columns are there.
fn single_spaced_actions(after_chip: &str) -> (Vec<String>, Option<&'static str>) {
    let tokens: Vec<&str> = after_chip.split_whitespace().skip_while(|t| looks_like_chip_column(t)).collect();
    if tokens.is_empty() {
        return (Vec::new(), None);
    }
    let problem =
        "no two spaces before the action names, as the kernel prints them; read as the words after the chip's columns";
    (split_action_list(&tokens.join(" ")), Some(problem))
}

/// The names of an action list (`"PCIe PME, pciehp"`).
fn split_action_list(field: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_single_spaced_line_is_read_and_said() {
        let text = "CPU0 CPU1\n 24: 1 0 PCI-MSI 524288-edge eth0-TxRx-0\n 25: 0 0 IO-APIC 9-fasteoi\n 26: 3 1 ITS-MSI 524289 Edge nvme0q1, extra\n";
        let (names, bad) = parse_proc_interrupts(text);
        assert_eq!(names.get(&24).map(Vec::as_slice), Some(&["eth0-TxRx-0".to_string()][..]));
        assert_eq!(names.get(&25).map(Vec::len), Some(0), "chip columns only: no action, nothing odd");
        assert_eq!(names.get(&26).cloned().unwrap_or_default(), ["nvme0q1", "extra"]);
        let lines: Vec<usize> = bad.iter().map(|b| b.line_no).collect();
        assert_eq!(lines, [2, 4], "{bad:?}");
        assert!(bad[0].problem.contains("two spaces"));
    }

    #[test]
    fn each_kind_of_bad_line_is_said_with_its_own_line_number() {
        let text = "CPU0\n 24:  1  PCI-MSI 1-edge  a\nno colon here\n 24:  1  PCI-MSI 1-edge  b\n 99999999999:  1  PCI-MSI 1-edge  c\n";
        let (names, bad) = parse_proc_interrupts(text);
        assert_eq!(names.get(&24).cloned().unwrap_or_default(), ["a"], "the first line of IRQ 24 is used");
        let said: Vec<(usize, &str)> = bad.iter().map(|b| (b.line_no, b.problem)).collect();
        assert_eq!(
            said,
            [
                (3, "expected \"IRQ: counts...\""),
                (4, "IRQ listed twice (its first line is used)"),
                (5, "IRQ number out of range")
            ]
        );
    }

    #[test]
    fn proc_interrupts_bad_header_is_reported() {
        let (names, bad) = parse_proc_interrupts(" 24: 1 2 chip 0-edge x\n");
        assert!(names.is_empty());
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].line_no, 1);
    }
}
