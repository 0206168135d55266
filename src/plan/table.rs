//! Human rendering of a [`Plan`]: one block per device, one row per IRQ.

use super::{Action, Placement, Plan};
use crate::cpuset::CpuSet;

/// Appends `set` as a table shows it: its list, `-` when empty, `?` when unknown.
fn push_cpus(out: &mut String, set: Option<&CpuSet>) {
    match set {
        Some(s) if s.is_empty() => out.push('-'),
        // Writing to a String cannot fail.
        Some(s) => {
            let _ = s.write_list(out);
        }
        None => out.push('?'),
    }
}

/// How a device's IRQ names were read, one entry per table pattern or rule in order of first use,
/// each with its number of IRQs: `ice "ice-{if}-TxRx-{q}" (8), not recognised (1)`.
fn recognised_summary(irqs: &[Placement]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    // The group of the IRQ before: a device's IRQs mostly come in runs read the same way, and
    // an equal recognition has an equal label, so a run is worded once.
    let mut last: Option<(&crate::devices::Recognition, usize)> = None;
    for p in irqs {
        let g = match last {
            Some((r, g)) if *r == p.recognised => g,
            _ => {
                let label = p.recognised.to_string();
                groups.iter().position(|(l, _)| *l == label).unwrap_or_else(|| {
                    groups.push((label, 0));
                    groups.len() - 1
                })
            }
        };
        groups[g].1 += 1;
        last = Some((&p.recognised, g));
    }
    groups.iter().map(|(l, n)| format!("{l} ({n})")).collect::<Vec<_>>().join(", ")
}

/// The column titles of an IRQ row.
const HEADER: [&str; 6] = ["IRQ", "NAME", "QUEUE", "CURRENT -> DESIRED", "ACTION", "REASON"];

/// The first five cells of every IRQ row, in [`HEADER`] order, written one after another into
/// one buffer: a big machine's table has thousands of rows, and a `String` per cell cost more
/// than the rest of the table. The reason ends the line, so it needs no width and is written
/// straight into the table ([`push_reason`]).
#[derive(Default)]
struct Cells {
    text: String,
    /// Per row, where each of its cells ends in `text` (a row starts where the one before ends).
    ends: Vec<[usize; 5]>,
}

impl Cells {
    /// Appends the row of `p`.
    fn push(&mut self, p: &Placement) {
        let t = &mut self.text;
        let mut ends = [0; 5];
        t.push_str(itoa::Buffer::new().format(p.irq));
        ends[0] = t.len();
        t.push_str(p.name.as_deref().unwrap_or("-"));
        ends[1] = t.len();
        p.role.push_label(p.queue, t);
        ends[2] = t.len();
        push_cpus(t, p.current.as_ref());
        if !matches!(p.action, Action::Keep | Action::Skip) {
            t.push_str(" -> ");
            push_cpus(t, p.desired.as_ref());
        }
        ends[3] = t.len();
        t.push_str(p.action.as_str());
        ends[4] = t.len();
        self.ends.push(ends);
    }

    /// The cells of row `i`.
    fn row(&self, i: usize) -> [&str; 5] {
        let mut start = if i == 0 { 0 } else { self.ends[i - 1][4] };
        self.ends[i].map(|end| {
            let cell = &self.text[start..end];
            start = end;
            cell
        })
    }
}

/// The REASON cell of `p`, appended to `out`: its reason, then ` [driver hint 3]` when the
/// driver's `affinity_hint` names CPUs and irqwise places the IRQ elsewhere (so a reader sees
/// which driver choice the plan overrides).
fn push_reason(out: &mut String, p: &Placement) {
    out.push_str(&p.reason);
    if let (Some(hint), Some(want), Action::Set | Action::Keep) = (&p.hint, &p.desired, p.action) {
        if !hint.is_empty() && hint != want {
            out.push_str(" [driver hint ");
            out.push_str(&hint.to_list_string());
            out.push(']');
        }
    }
}

/// Appends `n` blanks to `out`.
fn pad(out: &mut String, n: usize) {
    const BLANKS: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let step = left.min(BLANKS.len());
        out.push_str(&BLANKS[..step]);
        left -= step;
    }
}

/// Appends `row` as one line to `out`, each cell padded to `widths` (the IRQ number
/// right-aligned) after two spaces of indent, then `last` (the reason); no trailing blanks, no
/// newline.
fn push_line(out: &mut String, row: &[&str], widths: &[usize], last: impl FnOnce(&mut String)) {
    let Some((first, rest)) = row.split_first() else { return };
    out.push_str("  ");
    pad(out, widths[0].saturating_sub(first.chars().count()));
    out.push_str(first);
    for (cell, w) in rest.iter().zip(&widths[1..]) {
        out.push(' ');
        out.push_str(cell);
        pad(out, w.saturating_sub(cell.chars().count()));
    }
    out.push(' ');
    last(out);
    out.truncate(out.trim_end().len());
}

/// The table: a header row, then per device its line, its `names:` line and one row per IRQ,
/// every column as wide as its widest cell; then the counts and warnings of `whole` (the plan
/// before any filtering). Guarantees: columns line up whatever the lengths of names and masks.
pub(super) fn render(plan: &Plan, whole: &Plan) -> String {
    let mut cells = Cells::default();
    for p in plan.devices.iter().flat_map(|d| &d.irqs) {
        cells.push(p);
    }
    let mut widths = [0usize; 5];
    for (w, title) in widths.iter_mut().zip(HEADER) {
        *w = title.len();
    }
    for i in 0..cells.ends.len() {
        for (w, cell) in widths.iter_mut().zip(cells.row(i)) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Sized for the rows up front: a big machine's table is megabytes, grown by doubling it
    // would be copied about twice over.
    let irqs = plan.devices.iter().flat_map(|d| &d.irqs);
    let reasons: usize = irqs.clone().map(|p| p.reason.len()).sum();
    let row = widths.iter().sum::<usize>() + widths.len() + 3;
    let mut out = String::with_capacity(irqs.count() * row + reasons + 200 * plan.devices.len() + 4096);
    if !plan.devices.is_empty() {
        push_line(&mut out, &HEADER[..5], &widths, |out| out.push_str(HEADER[5]));
        out.push('\n');
    }
    let mut next_row = 0;
    for d in &plan.devices {
        let node = d.node.map_or("?".to_string(), |n| n.to_string());
        out.push_str(&format!(
            "{} {} {} ({}) node {} strategy {}{}\n",
            d.bdf,
            d.class.as_str(),
            d.name.as_deref().unwrap_or("-"),
            d.driver.as_deref().unwrap_or("no driver"),
            node,
            d.strategy.as_str(),
            if d.rules.is_empty() { String::new() } else { format!(" rules {}", d.rules.join(", ")) }
        ));
        out.push_str(&format!("  names: {}\n", recognised_summary(&d.irqs)));
        out.push_str(&super::napi_threads::render_identity(&d.irqs));
        out.push_str(&super::nic_kernel::render(d));
        for p in &d.irqs {
            push_line(&mut out, &cells.row(next_row), &widths, |out| push_reason(out, p));
            out.push('\n');
            next_row += 1;
        }
        if let Some(x) = &d.xps {
            out.push_str(&super::xps_plan::render(x));
        }
        out.push_str(&super::napi_threads::render_threads(&d.napi_threads));
    }
    let s = whole.summary();
    let uncertain = if s.uncertain > 0 { format!(", {} uncertain", s.uncertain) } else { String::new() };
    out.push_str(&format!(
        "{} IRQs on {} devices: {} to set, {} kept, {} kernel-managed ({} differ from prediction{uncertain}), {} skipped\n",
        s.irqs, s.devices, s.set, s.kept, s.managed, s.mismatched, s.skipped
    ));
    if let Some(g) = &whole.grouping {
        out.push_str(&g.line());
        out.push('\n');
    }
    for w in &whole.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    for n in &whole.notices {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{QueueRole, Recognition};
    use crate::plan::test_plans;

    fn placement(irq: u32, name: &str, current: &str, desired: &str, action: Action) -> Placement {
        let set = |s: &str| Some(CpuSet::parse_list(s).unwrap());
        Placement {
            irq,
            name: Some(name.into()),
            role: QueueRole::RxTx,
            queue: Some(0),
            recognised: Recognition::UnknownDriver { driver: None },
            queue_source: None,
            managed: false,
            current: set(current),
            current_locality: None,
            desired: set(desired),
            hint: None,
            action,
            reason: "because".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        }
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_start_with_a_header() {
        let long = "mlx5_comp63@pci:0000:81:00.0";
        let irqs =
            vec![placement(7, "a", "1", "1", Action::Keep), placement(12345, long, "0-15,32-47", "16", Action::Set)];
        let dev = test_plans::nic("0000:81:00.0", irqs).with_driver("mlx5_core").with_name("ens1").with_node(Some(1));
        let plan = test_plans::plan_of(vec![dev]);
        let text = plan.to_table();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("    IRQ NAME"), "{text}");
        let (short, wide) = (lines[3], lines[4]);
        assert!(short.starts_with("      7 a    "), "{text}");
        assert!(wide.starts_with(&format!("  12345 {long} rxtx 0")), "{text}");
        // The ACTION column starts at the same place in every row, header included.
        let col = |l: &str, word: &str| l.find(word).unwrap();
        assert_eq!(col(lines[0], "ACTION"), col(short, "keep"));
        assert_eq!(col(short, "keep"), col(wide, "set "));
        assert!(text.lines().all(|l| l == l.trim_end()), "no trailing blanks:\n{text}");
    }

    #[test]
    fn a_driver_hint_the_plan_overrides_is_marked_one_it_follows_is_not() {
        let hinted = |irq, desired: &str, hint: &str, action| Placement {
            hint: Some(CpuSet::parse_list(hint).unwrap()),
            ..placement(irq, "q", "0-7", desired, action)
        };
        let marker = |p: &Placement| {
            let mut reason = String::new();
            push_reason(&mut reason, p);
            reason
        };
        assert_eq!(marker(&hinted(1, "4", "2", Action::Set)), "because [driver hint 2]");
        assert_eq!(marker(&hinted(2, "4", "4", Action::Set)), "because", "hint followed");
        assert_eq!(marker(&hinted(3, "0-7", "", Action::Keep)), "because", "empty hint: none given");
        assert_eq!(marker(&hinted(4, "0-7", "3", Action::Skip)), "because", "left alone: not overridden");
    }

    #[test]
    fn the_summary_counts_uncertain_predictions_only_when_there_are_some() {
        let managed = |irq, uncertain: Option<&str>| Placement {
            managed: true,
            uncertain: uncertain.map(String::from),
            ..placement(irq, "q", "0-3", "0-3", Action::Keep)
        };
        let summary = |irqs: Vec<Placement>| {
            let text = test_plans::plan_of(vec![test_plans::nvme("0000:01:00.0", irqs)]).to_table();
            text.lines().find(|l| l.contains("IRQs on")).map(String::from).unwrap_or_default()
        };
        let certain = summary(vec![managed(1, None), managed(2, None)]);
        assert!(certain.contains("(0 differ from prediction)"), "{certain}");
        assert!(!certain.contains("uncertain"), "{certain}");
        let unsure = summary(vec![managed(1, Some("offline CPUs")), managed(2, None)]);
        assert!(unsure.contains("(0 differ from prediction, 1 uncertain)"), "{unsure}");
    }
}
