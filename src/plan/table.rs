//! Human rendering of a [`Plan`]: one block per device, one row per IRQ.

use super::{Action, Placement, Plan};
use crate::cpuset::CpuSet;

fn cpus(set: Option<&CpuSet>) -> String {
    match set {
        Some(s) if s.is_empty() => "-".into(),
        Some(s) => s.to_list_string(),
        None => "?".into(),
    }
}

/// How a device's IRQ names were read, one entry per table pattern or rule in order of first use,
/// each with its number of IRQs: `ice "ice-{if}-TxRx-{q}" (8), not recognised (1)`.
fn recognised_summary(irqs: &[Placement]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for p in irqs {
        let label = p.recognised.to_string();
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => groups.push((label, 1)),
        }
    }
    groups.iter().map(|(l, n)| format!("{l} ({n})")).collect::<Vec<_>>().join(", ")
}

/// The column titles of an IRQ row.
const HEADER: [&str; 6] = ["IRQ", "NAME", "QUEUE", "CURRENT -> DESIRED", "ACTION", "REASON"];

/// One IRQ row's cells, in [`HEADER`] order.
fn cells(p: &Placement) -> [String; 6] {
    let arrow = match p.action {
        Action::Keep | Action::Skip => cpus(p.current.as_ref()),
        _ => format!("{} -> {}", cpus(p.current.as_ref()), cpus(p.desired.as_ref())),
    };
    [
        p.irq.to_string(),
        p.name.as_deref().unwrap_or("-").to_string(),
        p.role.label(p.queue),
        arrow,
        format!("{:?}", p.action).to_lowercase(),
        p.reason.clone() + &hint_marker(p),
    ]
}

/// ` [driver hint 3]` when the driver's `affinity_hint` names CPUs and irqwise places the IRQ
/// elsewhere (so a reader sees which driver choice the plan overrides); empty otherwise.
fn hint_marker(p: &Placement) -> String {
    match (&p.hint, &p.desired, p.action) {
        (Some(hint), Some(want), Action::Set | Action::Keep) if !hint.is_empty() && hint != want => {
            format!(" [driver hint {}]", hint.to_list_string())
        }
        _ => String::new(),
    }
}

/// `row` as one line with each cell padded to `widths` (the IRQ number right-aligned), two
/// spaces of indent, no trailing blanks.
fn line(row: &[String; 6], widths: &[usize; 6]) -> String {
    let mut out = format!("  {:>w$}", row[0], w = widths[0]);
    for (cell, w) in row.iter().zip(widths).skip(1) {
        out.push(' ');
        out.push_str(cell);
        out.extend(std::iter::repeat_n(' ', w.saturating_sub(cell.chars().count())));
    }
    out.truncate(out.trim_end().len());
    out
}

/// The table: a header row, then per device its line, its `names:` line and one row per IRQ,
/// every column as wide as its widest cell; then the counts and warnings of `whole` (the plan
/// before any filtering). Guarantees: columns line up whatever the lengths of names and masks.
pub(super) fn render(plan: &Plan, whole: &Plan) -> String {
    let rows: Vec<Vec<[String; 6]>> = plan.devices.iter().map(|d| d.irqs.iter().map(cells).collect()).collect();
    let header = HEADER.map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter().flatten()) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    if !plan.devices.is_empty() {
        out.push_str(&line(&header, &widths));
        out.push('\n');
    }
    for (d, rows) in plan.devices.iter().zip(&rows) {
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
        for row in rows {
            out.push_str(&line(row, &widths));
            out.push('\n');
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
    use crate::choices::StrategyName;
    use crate::devices::{DeviceClass, QueueRole, Recognition};
    use crate::plan::DevicePlan;

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
        let dev = DevicePlan {
            bdf: "0000:81:00.0".into(),
            class: DeviceClass::Nic,
            driver: Some("mlx5_core".into()),
            name: Some("ens1".into()),
            node: Some(1),
            strategy: StrategyName::NumaHop,
            rules: vec![],
            irqs: vec![
                placement(7, "a", "1", "1", Action::Keep),
                placement(12345, long, "0-15,32-47", "16", Action::Set),
            ],
            xps: None,
            napi_threads: Vec::new(),
        };
        let plan = Plan { kernel: None, devices: vec![dev], warnings: vec![], ..Plan::default() };
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
        let marker = |p: &Placement| cells(p)[5].clone();
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
            let dev = DevicePlan {
                bdf: "0000:01:00.0".into(),
                class: DeviceClass::Nvme,
                driver: Some("nvme".into()),
                name: Some("nvme0".into()),
                node: Some(0),
                strategy: StrategyName::ClusterGroup,
                rules: vec![],
                irqs,
                xps: None,
                napi_threads: Vec::new(),
            };
            let text = Plan { devices: vec![dev], ..Plan::default() }.to_table();
            text.lines().find(|l| l.contains("IRQs on")).map(String::from).unwrap_or_default()
        };
        let certain = summary(vec![managed(1, None), managed(2, None)]);
        assert!(certain.contains("(0 differ from prediction)"), "{certain}");
        assert!(!certain.contains("uncertain"), "{certain}");
        let unsure = summary(vec![managed(1, Some("offline CPUs")), managed(2, None)]);
        assert!(unsure.contains("(0 differ from prediction, 1 uncertain)"), "{unsure}");
    }
}
