//! Human rendering of a [`Plan`]: one block per device, one row per IRQ.

use super::{Action, Placement, Plan};
use crate::cpuset::CpuSet;
use crate::devices::QueueRole;

fn cpus(set: &Option<CpuSet>) -> String {
    match set {
        Some(s) if s.is_empty() => "-".into(),
        Some(s) => s.to_list_string(),
        None => "?".into(),
    }
}

fn role(r: QueueRole, queue: Option<u32>) -> String {
    let name = match r {
        QueueRole::Admin => "admin",
        QueueRole::Io => "io",
        QueueRole::Rx => "rx",
        QueueRole::Tx => "tx",
        QueueRole::RxTx => "rxtx",
        QueueRole::Misc => "misc",
    };
    match queue {
        Some(q) => format!("{name} {q}"),
        None => name.into(),
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

pub(super) fn render(plan: &Plan) -> String {
    let mut out = String::new();
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
        for p in &d.irqs {
            let arrow = match p.action {
                Action::Keep | Action::Skip => cpus(&p.current),
                _ => format!("{} -> {}", cpus(&p.current), cpus(&p.desired)),
            };
            out.push_str(&format!(
                "  irq {:>5} {:<22} {:<8} {:<24} {:<7} {}\n",
                p.irq,
                p.name.as_deref().unwrap_or("-"),
                role(p.role, p.queue),
                arrow,
                format!("{:?}", p.action).to_lowercase(),
                p.reason
            ));
        }
        if let Some(x) = &d.xps {
            out.push_str(&super::xps::render(x));
        }
    }
    let s = plan.summary();
    out.push_str(&format!(
        "{} IRQs on {} devices: {} to set, {} kept, {} kernel-managed ({} differ from prediction), {} skipped\n",
        s.irqs, s.devices, s.set, s.kept, s.managed, s.mismatched, s.skipped
    ));
    for w in &plan.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
