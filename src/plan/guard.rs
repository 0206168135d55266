//! The guard: every movable IRQ kept off the CPUs device interrupts must avoid (banned, isolated,
//! nohz_full), not only those of the devices irqwise places. irqbalance does this for its banned
//! list, and tuned and CRI-O rely on it.
//!
//! Pure: runs on a built [`Plan`]. An IRQ left alone (strategy `leave`, a name not recognised, an
//! unbound device) or of no device at all, whose mask holds such CPUs, is set to its mask without
//! them, or, when nothing would be left, to the allowed CPUs of its node. Kernel-managed IRQs are
//! never written; the plan says which tool keeps them off isolated CPUs.

use std::collections::{BTreeMap, BTreeSet};

use super::{Action, DevicePlan, Placement, Plan};
use crate::choices::StrategyName;
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, LooseIrq};

/// CPUs device interrupts must avoid, by source, in the words reasons use (`banned`,
/// `isolated`, `nohz_full`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forbidden {
    pub sources: Vec<(String, CpuSet)>,
}

impl Forbidden {
    /// Every forbidden CPU.
    pub fn cpus(&self) -> CpuSet {
        self.sources.iter().fold(CpuSet::new(), |acc, (_, s)| acc.union(s))
    }

    /// How `cpus` are forbidden: `banned CPUs 2-3, isolated CPUs 8`.
    pub(crate) fn describe(&self, cpus: &CpuSet) -> String {
        let parts: Vec<String> = self
            .sources
            .iter()
            .map(|(why, s)| (why, s.intersection(cpus)))
            .filter(|(_, s)| !s.is_empty())
            .map(|(why, s)| format!("{why} CPUs {s}"))
            .collect();
        parts.join(", ")
    }
}

/// What the guard needs of the machine.
#[derive(Debug, Clone)]
pub struct GuardInput<'a> {
    pub forbidden: Forbidden,
    /// Online CPUs not forbidden.
    pub allowed: CpuSet,
    /// Each node's CPUs.
    pub nodes: &'a BTreeMap<u32, CpuSet>,
    /// Devices (PCI addresses) the guard leaves alone: a rule's `guard = false`, and devices passed
    /// through to a guest, whose IRQs follow its vCPUs.
    pub exempt: &'a BTreeSet<String>,
    /// IRQs the kernel refused to move (a write failed with EIO or EPERM).
    pub refused: &'a BTreeSet<u32>,
}

/// The pseudo-device the plan lists IRQs of no device under.
pub(crate) const LOOSE_DEVICE: &str = crate::devices::NO_DEVICE;

/// Applies the guard to `plan` and adds the loose IRQs it acts on as one device entry
/// ([`LOOSE_DEVICE`]). Guarantees: only `skip` placements of non-exempt devices and loose IRQs
/// change; a changed placement is `set` to a non-empty mask without forbidden CPUs; a managed
/// IRQ is never `set`.
pub fn guard(plan: &mut Plan, loose: &[LooseIrq], input: &GuardInput) {
    let forbidden = input.forbidden.cpus();
    if forbidden.is_empty() {
        return;
    }
    for d in plan.devices.iter_mut().filter(|d| !input.exempt.contains(&d.bdf)) {
        let node = d.node;
        for p in &mut d.irqs {
            guard_one(p, node, &forbidden, input);
        }
    }
    let mut irqs = Vec::new();
    for l in loose {
        let v = &l.vector;
        if !v.current.as_ref().is_some_and(|c| c.intersects(&forbidden)) {
            continue;
        }
        let mut p = Placement {
            irq: v.irq,
            name: v.name.clone(),
            role: v.role,
            queue: None,
            recognised: v.recognised.clone(),
            queue_source: None,
            managed: v.managed,
            current: v.current.clone(),
            current_locality: None,
            desired: v.current.clone(),
            hint: v.hint.clone(),
            action: if v.managed { Action::Managed } else { Action::Skip },
            reason: "no device: placed by no strategy".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        };
        if input.refused.contains(&v.irq) {
            p.reason = "the kernel refuses to move it (a write failed)".into();
        } else {
            guard_one(&mut p, l.node, &forbidden, input);
        }
        irqs.push(p);
    }
    if !irqs.is_empty() {
        plan.devices.push(DevicePlan {
            bdf: LOOSE_DEVICE.into(),
            class: DeviceClass::Other,
            driver: None,
            name: Some("IRQs of no device".into()),
            node: None,
            strategy: StrategyName::Leave,
            rules: Vec::new(),
            irqs,
            xps: None,
            napi_threads: Vec::new(),
            resets: None,
            napi: Vec::new(),
        });
    }
}

/// Guards one placement on a device of node `node`: a left-alone IRQ on forbidden CPUs loses
/// them; a managed one gets a note.
fn guard_one(p: &mut Placement, node: Option<u32>, forbidden: &CpuSet, input: &GuardInput) {
    let Some(current) = p.current.clone() else { return };
    let on = current.intersection(forbidden);
    if on.is_empty() {
        return;
    }
    let words = input.forbidden.describe(&on);
    match p.action {
        Action::Managed => {
            p.reason = format!(
                "{}; on {words}: kernel-managed IRQs cannot be moved (the kernel's isolcpus=managed_irq keeps them off isolated CPUs)",
                p.reason
            );
        }
        Action::Skip if !input.refused.contains(&p.irq) => {
            let kept = current.difference(forbidden);
            let (desired, why) = if kept.is_empty() {
                let local = node.and_then(|n| input.nodes.get(&n)).map(|c| c.intersection(&input.allowed));
                match local.filter(|l| !l.is_empty()) {
                    Some(l) => (
                        l,
                        format!(
                            "guard: every CPU of its mask is forbidden ({words}): the allowed CPUs of node {}",
                            node.unwrap_or_default()
                        ),
                    ),
                    None => (
                        input.allowed.clone(),
                        format!("guard: every CPU of its mask is forbidden ({words}): every allowed CPU"),
                    ),
                }
            } else {
                (kept, format!("guard: {words} removed"))
            };
            if desired.is_empty() {
                return;
            }
            p.reason = format!("{why} (was: {})", p.reason);
            p.desired = Some(desired);
            p.action = Action::Set;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{IrqVector, QueueRole, Recognition};

    fn cpus(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn placement(irq: u32, current: &str, action: Action) -> Placement {
        Placement {
            irq,
            name: None,
            role: QueueRole::Misc,
            queue: None,
            recognised: Recognition::UnknownDriver { driver: None },
            queue_source: None,
            managed: action == Action::Managed,
            current: Some(cpus(current)),
            current_locality: None,
            desired: None,
            hint: None,
            action,
            reason: "left alone".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        }
    }

    /// An ACPI IRQ of no device, movable, on `current`.
    fn loose_irq(irq: u32, current: &str) -> LooseIrq {
        let vector = IrqVector {
            irq,
            name: Some("acpi".into()),
            role: QueueRole::Misc,
            queue: None,
            recognised: Recognition::UnknownDriver { driver: None },
            managed: false,
            current: Some(cpus(current)),
            hint: None,
        };
        LooseIrq { vector, node: None }
    }

    /// A left-alone storage device at 0000:01:00.0 on `node` with `irqs`.
    fn storage_device(node: Option<u32>, irqs: Vec<Placement>) -> DevicePlan {
        crate::plan::test_plans::device("0000:01:00.0", DeviceClass::Storage, irqs)
            .with_node(node)
            .with_strategy(StrategyName::Leave)
    }

    #[test]
    fn left_alone_and_loose_irqs_lose_forbidden_cpus_managed_ones_are_only_noted() {
        let nodes: BTreeMap<u32, CpuSet> = [(0, cpus("0-3")), (1, cpus("4-7"))].into_iter().collect();
        let input = GuardInput {
            forbidden: Forbidden { sources: vec![("banned".into(), cpus("2-3")), ("isolated".into(), cpus("6-7"))] },
            allowed: cpus("0-1,4-5"),
            nodes: &nodes,
            exempt: &BTreeSet::new(),
            refused: &BTreeSet::new(),
        };
        let dev = storage_device(
            Some(1),
            vec![
                placement(30, "0-7", Action::Skip),
                placement(31, "6-7", Action::Skip),
                placement(32, "6", Action::Managed),
                placement(33, "0-1", Action::Skip),
            ],
        );
        let mut plan = crate::plan::test_plans::plan_of(vec![dev]);
        let loose = [loose_irq(9, "2"), loose_irq(10, "0")];
        guard(&mut plan, &loose, &input);
        let d = &plan.devices[0].irqs;
        assert_eq!((d[0].action, d[0].desired.clone()), (Action::Set, Some(cpus("0-1,4-5"))));
        assert!(d[0].reason.starts_with("guard: banned CPUs 2-3, isolated CPUs 6-7 removed"), "{}", d[0].reason);
        assert_eq!(d[1].desired, Some(cpus("4-5")), "all forbidden: the allowed CPUs of its node");
        assert_eq!(d[2].action, Action::Managed);
        assert!(d[2].reason.contains("isolcpus=managed_irq"));
        assert_eq!(d[3].action, Action::Skip, "no forbidden CPU: untouched");
        let l = &plan.devices[1];
        assert_eq!(l.bdf, LOOSE_DEVICE);
        assert_eq!(l.irqs.len(), 1, "only the loose IRQ on a forbidden CPU is listed");
        assert_eq!(l.irqs[0].desired, Some(cpus("0-1,4-5")));
    }

    /// An IRQ the kernel refused to move (EIO/EPERM) stays where it is even on forbidden CPUs,
    /// a device's as well as one of no device, while the same IRQs not refused are moved.
    #[test]
    fn refused_irqs_on_forbidden_cpus_are_left_where_the_kernel_keeps_them() {
        let nodes: BTreeMap<u32, CpuSet> = [(0, cpus("0-3"))].into_iter().collect();
        let run = |refused: &BTreeSet<u32>| {
            let input = GuardInput {
                forbidden: Forbidden { sources: vec![("isolated".into(), cpus("2-3"))] },
                allowed: cpus("0-1"),
                nodes: &nodes,
                exempt: &BTreeSet::new(),
                refused,
            };
            let dev = storage_device(Some(0), vec![placement(40, "2-3", Action::Skip)]);
            let mut plan = crate::plan::test_plans::plan_of(vec![dev]);
            guard(&mut plan, &[loose_irq(9, "2-3")], &input);
            let [device, loose] = [&plan.devices[0].irqs[0], &plan.devices[1].irqs[0]].map(Clone::clone);
            (device, loose)
        };
        let (device, loose) = run(&[40, 9].into_iter().collect());
        assert_eq!((device.action, device.desired.clone()), (Action::Skip, None), "{}", device.reason);
        assert_eq!(device.reason, "left alone", "the device IRQ's reason is its strategy's");
        assert_eq!((loose.action, loose.desired.clone()), (Action::Skip, Some(cpus("2-3"))));
        assert_eq!(loose.reason, "the kernel refuses to move it (a write failed)");
        // The same IRQs, not refused: both are moved off the isolated CPUs.
        let (device, loose) = run(&BTreeSet::new());
        assert_eq!((device.action, device.desired), (Action::Set, Some(cpus("0-1"))));
        assert_eq!((loose.action, loose.desired), (Action::Set, Some(cpus("0-1"))));
    }
}
