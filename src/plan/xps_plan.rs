//! A NIC's transmit steering in the plan: per tx queue, the CPUs of the IRQ that serves it, its
//! `xps_cpus` now and as [`crate::strategy::xps_sets::xps_sets`] wants it, or why XPS is left alone.
//!
//! Pure: computed from the device's plan and its tx queues as read. Guarantee: queues are
//! planned only when every tx queue has a queue IRQ of its own with CPUs to go to, no queue
//! belongs to a traffic class other than 0, and every `xps_cpus` could be read.

use serde::Serialize;

use super::{Action, DevicePlan};
use crate::cpuset::CpuSet;
use crate::devices::net_queues::{NetQueues, XpsState};
use crate::devices::QueueRole;
use crate::strategy::xps_sets::xps_sets;
use crate::topology::Topology;

/// One transmit queue's steering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxQueuePlan {
    pub txq: u32,
    /// The CPUs of the IRQ that serves the queue (where its completions interrupt).
    pub irq_cpus: CpuSet,
    /// `xps_cpus` as read.
    pub current: CpuSet,
    /// The CPUs that should transmit on this queue.
    pub desired: CpuSet,
    /// `keep` or `set`.
    pub action: Action,
    /// The `xps_cpus` file, relative to the root (through no symlink). Not in the JSON: a
    /// snapshot's copy of a device lives elsewhere than the device.
    #[serde(skip)]
    pub file: String,
}

/// One NIC's transmit steering: the queues, or why XPS is left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct XpsPlan {
    /// The interface whose tx queues these are.
    pub interface: Option<String>,
    /// Why transmit steering is left as it is; `None` when `queues` is the plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<TxQueuePlan>,
}

impl XpsPlan {
    /// XPS left alone, for `reason`.
    pub fn skip(interface: Option<&str>, reason: impl Into<String>) -> XpsPlan {
        XpsPlan { interface: interface.map(String::from), skipped: Some(reason.into()), queues: Vec::new() }
    }

    /// Queues whose `xps_cpus` is to be written.
    pub fn writes(&self) -> impl Iterator<Item = &TxQueuePlan> {
        self.queues.iter().filter(|q| q.action == Action::Set)
    }
}

/// The plan of `device`'s transmit steering from its IRQ placements and `queues` (its one
/// interface's tx queues; `None` when sysfs shows none), every online CPU of `topo` a sender.
pub(crate) fn plan_xps(topo: &Topology, device: &DevicePlan, queues: Option<&NetQueues>) -> XpsPlan {
    let Some(queues) = queues else {
        return XpsPlan::skip(device.name.as_deref(), "the interface shows no tx queues in sysfs");
    };
    let interface = Some(queues.interface.as_str());
    let mut current = Vec::new();
    for q in &queues.tx {
        match &q.xps {
            XpsState::Cpus(set) => current.push(set.clone()),
            XpsState::Absent => {
                let why =
                    format!("tx-{} has no xps_cpus (a kernel without CONFIG_XPS, or a single-queue device)", q.index);
                return XpsPlan::skip(interface, why);
            }
            XpsState::Unreadable(e) => return XpsPlan::skip(interface, format!("tx-{}/xps_cpus: {e}", q.index)),
        }
    }
    if let Some((q, tc)) =
        queues.tx.iter().find_map(|q| Some((q.index, q.traffic_class.as_deref()?)).filter(|(_, tc)| *tc != "0"))
    {
        let why = format!("the device uses traffic classes (tx-{q}/traffic_class is {tc:?}): XPS is per class there");
        return XpsPlan::skip(interface, why);
    }
    let mut anchors = Vec::new();
    for q in &queues.tx {
        match irq_cpus(device, q.index) {
            Ok(cpus) => anchors.push(cpus),
            Err(why) => return XpsPlan::skip(interface, why),
        }
    }
    let sets = xps_sets(topo, &topo.online, &anchors);
    let planned = queues
        .tx
        .iter()
        .zip(anchors)
        .zip(sets)
        .zip(current)
        .map(|(((q, irq_cpus), desired), current)| TxQueuePlan {
            txq: q.index,
            irq_cpus,
            action: if current == desired { Action::Keep } else { Action::Set },
            current,
            desired,
            file: queues.xps_path(q.index),
        })
        .collect();
    XpsPlan { interface: interface.map(String::from), skipped: None, queues: planned }
}

/// Re-plans `x` where some queues' IRQs sit elsewhere than planned (IRQs left to another
/// owner): `moved` gives those queues' IRQ CPUs by tx queue index; every online CPU of `topo`
/// a sender, as in [`plan_xps`]. Guarantees the same rule over the IRQs as they are.
pub(crate) fn re_anchor(topo: &Topology, x: &mut XpsPlan, moved: &std::collections::BTreeMap<u32, CpuSet>) {
    if x.skipped.is_some() || !x.queues.iter().any(|q| moved.contains_key(&q.txq)) {
        return;
    }
    for q in &mut x.queues {
        if let Some(cpus) = moved.get(&q.txq).filter(|c| !c.is_empty()) {
            q.irq_cpus = cpus.clone();
        }
    }
    let anchors: Vec<CpuSet> = x.queues.iter().map(|q| q.irq_cpus.clone()).collect();
    for (q, desired) in x.queues.iter_mut().zip(xps_sets(topo, &topo.online, &anchors)) {
        q.action = if q.current == desired { Action::Keep } else { Action::Set };
        q.desired = desired;
    }
}

/// The CPUs of the IRQ(s) serving tx queue `txq`: its `tx` vectors, else its combined ones,
/// as planned (kernel-managed ones as predicted). Why not, when none serves it or it is left
/// alone.
fn irq_cpus(device: &DevicePlan, txq: u32) -> Result<CpuSet, String> {
    let serving =
        |role: QueueRole| -> Vec<_> { device.irqs.iter().filter(|p| p.role == role && p.queue == Some(txq)).collect() };
    let tx = serving(QueueRole::Tx);
    let vectors = if tx.is_empty() { serving(QueueRole::RxTx) } else { tx };
    if vectors.is_empty() {
        return Err(format!(
            "tx queue {txq} has no queue IRQ of its own, so its completions cannot be placed near its senders"
        ));
    }
    let mut cpus = CpuSet::new();
    for p in vectors {
        match (&p.desired, p.action) {
            (Some(d), Action::Set | Action::Keep | Action::Managed) if !d.is_empty() => cpus.extend_with(d),
            _ => return Err(format!("tx queue {txq}'s IRQ {} is left alone ({})", p.irq, p.reason)),
        }
    }
    Ok(cpus)
}

/// The table rows of a device's XPS plan, under its IRQ rows.
pub(super) fn render(x: &XpsPlan) -> String {
    let interface = x.interface.as_deref().unwrap_or("-");
    if let Some(why) = &x.skipped {
        return format!("  xps {interface}: left alone: {why}\n");
    }
    let mut out = format!("  xps {interface}: each CPU transmits on the queue whose IRQ is nearest\n");
    for q in &x.queues {
        let arrow = match q.action {
            Action::Set => format!("{} -> {}", show(&q.current), show(&q.desired)),
            _ => show(&q.current),
        };
        out.push_str(&format!(
            "    tx {:>4}  irq on {:<12} xps {:<30} {}\n",
            q.txq,
            show(&q.irq_cpus),
            arrow,
            q.action.as_str()
        ));
    }
    out
}

fn show(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".into()
    } else {
        set.to_list_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::synthetic::SyntheticMachine;
    use std::collections::BTreeMap;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// Tx queues whose IRQs sit on `irqs[i]`, with `xps_cpus` as the plan wants them.
    fn planned(topo: &Topology, irqs: &[u32]) -> XpsPlan {
        let anchors: Vec<CpuSet> = irqs.iter().map(|&c| CpuSet::single(c)).collect();
        let queues = (0u32..)
            .zip(anchors.iter().cloned().zip(xps_sets(topo, &topo.online, &anchors)))
            .map(|(txq, (irq_cpus, desired))| TxQueuePlan {
                txq,
                irq_cpus,
                current: desired.clone(),
                desired,
                action: Action::Keep,
                file: format!("tx-{txq}/xps_cpus"),
            })
            .collect();
        XpsPlan { interface: Some("eth0".into()), skipped: None, queues }
    }

    #[test]
    fn a_queue_whose_irq_moved_takes_the_cpus_near_where_it_went() {
        // 2 nodes × 2 cores, one thread: node 0 = 0-1, node 1 = 2-3.
        let topo = SyntheticMachine::new(2, 2, 1).build();
        let mut x = planned(&topo, &[0, 1]);
        assert!(!x.queues[1].desired.contains(2), "node 1's CPUs spread over both queues: {x:?}");
        re_anchor(&topo, &mut x, &BTreeMap::from([(1, CpuSet::single(3))]));
        let q1 = &x.queues[1];
        assert_eq!(q1.irq_cpus, set("3"));
        assert_eq!(q1.desired, set("2-3"), "node 1 follows the IRQ: {x:?}");
        assert_eq!(q1.action, Action::Set);
        assert_eq!(x.queues[0].desired, set("0-1"), "{x:?}");
    }

    #[test]
    fn re_anchoring_nothing_moved_or_a_skipped_plan_changes_nothing() {
        let topo = SyntheticMachine::new(2, 2, 1).build();
        let before = planned(&topo, &[0, 2]);
        let mut x = before.clone();
        re_anchor(&topo, &mut x, &BTreeMap::from([(7, CpuSet::single(3))]));
        assert_eq!(x, before, "no queue 7");
        let mut skipped = XpsPlan::skip(Some("eth0"), "xps = false");
        re_anchor(&topo, &mut skipped, &BTreeMap::from([(0, CpuSet::single(3))]));
        assert_eq!(skipped, XpsPlan::skip(Some("eth0"), "xps = false"));
    }

    #[test]
    fn a_queue_to_set_shows_its_change_and_a_kept_one_its_cpus() {
        let topo = SyntheticMachine::new(1, 4, 1).build();
        let mut x = planned(&topo, &[0, 2]);
        x.queues[1].current = set("0-3");
        x.queues[1].action = Action::Set;
        let text = render(&x);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[1].contains(&format!("xps {:<30} keep", show(&x.queues[0].desired))), "{text}");
        assert!(rows[2].contains(&format!("0-3 -> {}", show(&x.queues[1].desired))), "{text}");
        assert!(rows[2].ends_with(" set"), "{text}");
        assert_eq!(render(&XpsPlan::skip(None, "no interface")), "  xps -: left alone: no interface\n");
    }
}
