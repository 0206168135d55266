//! What the daemon remembers between passes about the IRQs it places: the masks found when it
//! first saw each IRQ (for `restore_on_exit`), what it put there since (to recognise drift), which
//! devices' managed IRQs it already reported, and which plan warnings it already logged.
//!
//! Pure bookkeeping: every function takes plans and reports as data and returns what is news;
//! the caller logs it. Invariant: only IRQs present in the latest plan are remembered.

use std::collections::{BTreeMap, BTreeSet};

use crate::apply::ApplyReport;
use crate::cpuset::CpuSet;
use crate::plan::{Action, Plan};

/// An IRQ the daemon had placed whose mask someone (a driver, the kernel, an operator) changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub irq: u32,
    pub name: Option<String>,
    /// What the daemon had put there.
    pub placed: CpuSet,
    /// What the pass found instead (`None`: unreadable).
    pub found: Option<CpuSet>,
}

/// A device whose kernel-managed IRQs are to be reported (first sight, or the match changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedNews {
    pub device: String,
    pub managed: usize,
    /// IRQs whose actual mask differs from the predicted one.
    pub mismatched: Vec<u32>,
}

#[derive(Debug, Default)]
pub struct Ledger {
    originals: BTreeMap<u32, CpuSet>,
    placed: BTreeMap<u32, CpuSet>,
    changed: BTreeSet<u32>,
    managed_reported: BTreeMap<String, bool>,
    warned: BTreeSet<String>,
}

impl Ledger {
    /// Before applying `plan`: remembers the first-seen mask of every new IRQ and returns the IRQs
    /// whose mask drifted from what the daemon placed while the plan still wants that placement.
    pub fn observe(&mut self, plan: &Plan) -> Vec<Drift> {
        let present: BTreeSet<u32> = plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq)).collect();
        self.originals.retain(|irq, _| present.contains(irq));
        self.placed.retain(|irq, _| present.contains(irq));
        self.changed.retain(|irq| present.contains(irq));
        let mut drift = Vec::new();
        for p in plan.devices.iter().flat_map(|d| &d.irqs) {
            if let Some(current) = &p.current {
                self.originals.entry(p.irq).or_insert_with(|| current.clone());
            }
            let Some(placed) = self.placed.get(&p.irq) else { continue };
            if p.action == Action::Set && p.desired.as_ref() == Some(placed) && p.current.as_ref() != Some(placed) {
                drift.push(Drift {
                    irq: p.irq,
                    name: p.name.clone(),
                    placed: placed.clone(),
                    found: p.current.clone(),
                });
            }
        }
        drift
    }

    /// After applying: remembers what is now on each IRQ the daemon places (written or kept).
    pub fn record(&mut self, plan: &Plan, report: &ApplyReport) {
        for p in plan.devices.iter().flat_map(|d| &d.irqs) {
            match (p.action, &p.current) {
                (Action::Keep, Some(current)) => {
                    self.placed.insert(p.irq, current.clone());
                }
                (Action::Set, _) => {}
                _ => {
                    self.placed.remove(&p.irq);
                }
            }
        }
        for c in &report.changes {
            match c.new_cpus() {
                Some(new) => {
                    self.placed.insert(c.irq, new.clone());
                    self.changed.insert(c.irq);
                }
                _ => {
                    self.placed.remove(&c.irq);
                }
            }
        }
    }

    /// Devices with kernel-managed IRQs that were not reported yet, or whose prediction match
    /// changed since they were.
    pub fn managed_news(&mut self, plan: &Plan) -> Vec<ManagedNews> {
        let mut news = Vec::new();
        let mut seen = BTreeSet::new();
        for d in &plan.devices {
            let managed: Vec<_> = d.irqs.iter().filter(|p| p.action == Action::Managed).collect();
            if managed.is_empty() {
                continue;
            }
            let mismatched: Vec<u32> = managed.iter().filter(|p| p.mismatch == Some(true)).map(|p| p.irq).collect();
            let device = d.name.clone().unwrap_or_else(|| d.bdf.clone());
            seen.insert(d.bdf.clone());
            if self.managed_reported.insert(d.bdf.clone(), !mismatched.is_empty()) != Some(!mismatched.is_empty()) {
                news.push(ManagedNews { device, managed: managed.len(), mismatched });
            }
        }
        self.managed_reported.retain(|bdf, _| seen.contains(bdf));
        news
    }

    /// Plan warnings not logged before.
    pub fn new_warnings(&mut self, plan: &Plan) -> Vec<String> {
        plan.warnings.iter().filter(|w| self.warned.insert((*w).clone())).cloned().collect()
    }

    /// Forgets logged warnings (after a reload, a rule's warning is news again).
    pub fn forget_warnings(&mut self) {
        self.warned.clear();
    }

    /// Whether the daemon has written `irq` since it first saw it (and the IRQ stayed present).
    pub fn wrote(&self, irq: u32) -> bool {
        self.changed.contains(&irq)
    }

    /// For `restore_on_exit`: every IRQ the daemon wrote, with the mask it had when first seen.
    pub fn restore_list(&self) -> Vec<(u32, CpuSet)> {
        self.changed.iter().filter_map(|irq| Some((*irq, self.originals.get(irq)?.clone()))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Change, Effective, Verification, WriteOutcome};
    use crate::devices::{DeviceClass, QueueRole, Recognition};
    use crate::plan::{DevicePlan, Placement, StrategyName};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn placement(irq: u32, current: &str, desired: &str, action: Action) -> Placement {
        Placement {
            irq,
            name: Some(format!("eth0-TxRx-{irq}")),
            role: QueueRole::Misc,
            queue: None,
            recognised: Recognition::Table { driver: "ixgbe", pattern: "{if}" },
            managed: action == Action::Managed,
            current: Some(set(current)),
            current_locality: None,
            desired: Some(set(desired)),
            hint: None,
            action,
            reason: "test".into(),
            fallbacks: Vec::new(),
            mismatch: None,
        }
    }

    fn plan(irqs: Vec<Placement>) -> Plan {
        let dev = DevicePlan {
            bdf: "0000:01:00.0".into(),
            class: DeviceClass::Nic,
            driver: Some("ice".into()),
            name: Some("eth0".into()),
            node: Some(0),
            strategy: StrategyName::NumaHop,
            rules: vec![],
            irqs,
        };
        Plan { kernel: None, devices: vec![dev], warnings: vec![] }
    }

    fn written(irq: u32, old: &str, new: &str) -> Change {
        Change {
            irq,
            irq_name: None,
            device: "0000:01:00.0".into(),
            device_name: None,
            driver: None,
            queue: None,
            strategy: StrategyName::NumaHop,
            reason: "test".into(),
            old: Some(set(old)),
            wanted: Some(set(new)),
            result: WriteOutcome::Written {
                cpus: set(new),
                verified: Verification { readback: Some(set(new)), matches: true, effective: Effective::Absent },
            },
        }
    }

    #[test]
    fn drift_is_reported_only_for_irqs_the_daemon_placed_and_still_wants_there() {
        let mut ledger = Ledger::default();
        let first = plan(vec![placement(30, "0-7", "2", Action::Set), placement(31, "3", "3", Action::Keep)]);
        assert!(ledger.observe(&first).is_empty(), "nothing placed yet");
        ledger.record(&first, &ApplyReport { changes: vec![written(30, "0-7", "2")], ..Default::default() });
        // 30 was reset by someone, 31 too; 30's wish is unchanged, 31's wish moved to 5.
        let second = plan(vec![placement(30, "0-7", "2", Action::Set), placement(31, "4", "5", Action::Set)]);
        let drift = ledger.observe(&second);
        assert_eq!(drift.len(), 1);
        assert_eq!((drift[0].irq, &drift[0].placed, &drift[0].found), (30, &set("2"), &Some(set("0-7"))));
    }

    #[test]
    fn restore_uses_the_first_seen_mask_of_written_irqs_only() {
        let mut ledger = Ledger::default();
        let first = plan(vec![placement(30, "0-7", "2", Action::Set), placement(31, "3", "3", Action::Keep)]);
        ledger.observe(&first);
        ledger.record(&first, &ApplyReport { changes: vec![written(30, "0-7", "2")], ..Default::default() });
        let second = plan(vec![placement(30, "5", "2", Action::Set), placement(31, "3", "3", Action::Keep)]);
        ledger.observe(&second);
        assert_eq!(ledger.restore_list(), vec![(30, set("0-7"))]);
        ledger.observe(&plan(vec![placement(31, "3", "3", Action::Keep)]));
        assert!(ledger.restore_list().is_empty(), "a vanished IRQ is forgotten");
    }

    #[test]
    fn managed_devices_are_reported_once_and_again_when_the_match_changes() {
        let mut ledger = Ledger::default();
        let mut p = plan(vec![placement(40, "0", "0", Action::Managed), placement(41, "1", "1", Action::Managed)]);
        p.devices[0].irqs[1].mismatch = Some(false);
        let news = ledger.managed_news(&p);
        assert_eq!(news, vec![ManagedNews { device: "eth0".into(), managed: 2, mismatched: vec![] }]);
        assert!(ledger.managed_news(&p).is_empty(), "not on every pass");
        p.devices[0].irqs[1].mismatch = Some(true);
        assert_eq!(ledger.managed_news(&p)[0].mismatched, vec![41]);
    }

    #[test]
    fn warnings_are_news_once_until_forgotten() {
        let mut ledger = Ledger::default();
        let mut p = plan(vec![]);
        p.warnings = vec!["rule at a:1 matches no device".into()];
        assert_eq!(ledger.new_warnings(&p).len(), 1);
        assert!(ledger.new_warnings(&p).is_empty());
        ledger.forget_warnings();
        assert_eq!(ledger.new_warnings(&p).len(), 1);
    }
}
