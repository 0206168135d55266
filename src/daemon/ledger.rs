//! What the daemon remembers between passes about the IRQs it places: what it put there (to
//! recognise drift), which writes keep failing the same way (to say so once, then count), which
//! devices' managed IRQs it already reported, and which plan warnings it already logged. The
//! masks to restore on exit are kept on disk, see [`super::originals`].
//!
//! Pure bookkeeping: every function takes plans and reports as data and returns what is news;
//! the caller logs it. Invariant: only IRQs present in the latest plan are remembered.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::apply::{ApplyReport, Change, WriteOutcome};
use crate::cpuset::CpuSet;
use crate::plan::{Action, Placement, Plan};

/// An IRQ the daemon had placed whose mask someone (a driver, the kernel, an operator) changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Drift {
    pub irq: u32,
    pub name: Option<String>,
    /// What the daemon had put there.
    pub placed: CpuSet,
    /// What the pass found instead (`None`: unreadable).
    pub found: Option<CpuSet>,
}

/// The drift someone else made: not that of IRQs placed on CPUs that went offline or came
/// back since the last pass (`hotplugged`: the kernel's CPU-offline fallback moves them, and a
/// CPU back by the time the pass reads it hides that; the pass places them again as usual).
pub(crate) fn others_drift(drift: Vec<Drift>, hotplugged: &CpuSet) -> Vec<Drift> {
    drift.into_iter().filter(|d| !d.placed.intersects(hotplugged)).collect()
}

/// A device whose kernel-managed IRQs are to be reported (first sight, or the match changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManagedNews {
    pub device: String,
    pub managed: usize,
    /// How many of them irqwise predicted (the others' placement is the driver's choice).
    pub predicted: usize,
    /// IRQs whose actual mask differs from the predicted one.
    pub mismatched: Vec<u32>,
    /// IRQs whose prediction is uncertain (and no mismatch where it can be checked), with the
    /// first one's reason.
    pub uncertain: Vec<u32>,
    pub uncertain_reason: Option<String>,
}

/// A write that ends the same way pass after pass (the same failure class, or the same ENOSPC
/// widening) for the same target: logged loudly the first time, then counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct Repeated {
    pub irq: u32,
    pub name: Option<String>,
    /// The CPUs the write asked for.
    pub target: String,
    /// How it ended: a failure class (`novectors`, `invalid`, ...) or `widened to <step>`.
    pub outcome: String,
    /// Passes that ended this way in a row.
    pub count: u64,
}

/// How loudly to log one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loudness {
    /// News: a write, or a failure seen for the first time.
    Loud,
    /// The same failure as last pass: at debug level only.
    Quiet,
    /// A success after `n` passes of the same failure.
    Recovered(u64),
}

#[derive(Debug, Default)]
pub(crate) struct Ledger {
    placed: BTreeMap<u32, CpuSet>,
    repeated: BTreeMap<u32, Repeated>,
    /// Per device: (some IRQ mismatched, some prediction uncertain) when last reported.
    managed_reported: BTreeMap<String, (bool, bool)>,
    warned: BTreeSet<String>,
}

impl Ledger {
    /// Before applying `plan`: forgets IRQs that are gone and returns the IRQs whose mask drifted
    /// from what the daemon placed while the plan still wants that placement.
    pub(crate) fn observe(&mut self, plan: &Plan) -> Vec<Drift> {
        let present: BTreeSet<u32> = plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq)).collect();
        self.placed.retain(|irq, _| present.contains(irq));
        self.repeated.retain(|irq, _| present.contains(irq));
        self.drift(plan)
    }

    /// The IRQs of `plan` whose mask drifted from what the daemon placed while the plan still
    /// wants that placement; remembers nothing.
    pub fn drift(&self, plan: &Plan) -> Vec<Drift> {
        let mut drift = Vec::new();
        for p in plan.devices.iter().flat_map(|d| &d.irqs) {
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
                }
                _ => {
                    self.placed.remove(&c.irq);
                }
            }
        }
    }

    /// How loudly to log change `c`, counting a write that ends as it did last pass: the first
    /// failure (or ENOSPC widening) of an IRQ and target is [`Loudness::Loud`], the same again
    /// [`Loudness::Quiet`]; a plain write after repeats is [`Loudness::Recovered`].
    pub(crate) fn loudness(&mut self, c: &Change, target: &CpuSet) -> Loudness {
        let outcome = match &c.result {
            WriteOutcome::Failed { class, .. } => serde_json::to_value(class)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| format!("{class:?}")),
            WriteOutcome::WrittenFallback { step, .. } => format!("widened to {step}"),
            WriteOutcome::Written { .. } => {
                return match self.repeated.remove(&c.irq) {
                    Some(r) => Loudness::Recovered(r.count),
                    None => Loudness::Loud,
                };
            }
            WriteOutcome::Managed { .. }
            | WriteOutcome::Gone { .. }
            | WriteOutcome::Overtaken { .. }
            | WriteOutcome::Held { .. } => {
                self.repeated.remove(&c.irq);
                return Loudness::Loud;
            }
        };
        let target = target.to_list_string();
        match self.repeated.get_mut(&c.irq) {
            Some(r) if r.target == target && r.outcome == outcome => {
                r.count += 1;
                Loudness::Quiet
            }
            _ => {
                let r = Repeated { irq: c.irq, name: c.irq_name.clone(), target, outcome, count: 1 };
                self.repeated.insert(c.irq, r);
                Loudness::Loud
            }
        }
    }

    /// Writes that ended the same way more than once in a row, by IRQ.
    pub fn repeated(&self) -> Vec<Repeated> {
        self.repeated.values().filter(|r| r.count > 1).cloned().collect()
    }

    /// Devices with kernel-managed IRQs that were not reported yet, or whose prediction match
    /// changed since they were.
    pub(crate) fn managed_news(&mut self, plan: &Plan) -> Vec<ManagedNews> {
        let mut news = Vec::new();
        let mut seen = BTreeSet::new();
        for d in &plan.devices {
            let managed: Vec<_> = d.irqs.iter().filter(|p| p.action == Action::Managed).collect();
            if managed.is_empty() {
                continue;
            }
            let mismatched: Vec<u32> = managed.iter().filter(|p| p.mismatch == Some(true)).map(|p| p.irq).collect();
            let unsure: Vec<&&Placement> = managed.iter().filter(|p| p.is_uncertain()).collect();
            let device = d.name.clone().unwrap_or_else(|| d.bdf.clone());
            seen.insert(d.bdf.clone());
            let state = (!mismatched.is_empty(), !unsure.is_empty());
            if self.managed_reported.insert(d.bdf.clone(), state) != Some(state) {
                let predicted = managed.iter().filter(|p| p.mismatch.is_some()).count();
                news.push(ManagedNews {
                    device,
                    managed: managed.len(),
                    predicted,
                    mismatched,
                    uncertain: unsure.iter().map(|p| p.irq).collect(),
                    uncertain_reason: unsure.first().and_then(|p| p.uncertain.clone()),
                });
            }
        }
        self.managed_reported.retain(|bdf, _| seen.contains(bdf));
        news
    }

    /// Plan warnings not logged before.
    pub(crate) fn new_warnings(&mut self, plan: &Plan) -> Vec<String> {
        plan.warnings.iter().filter(|w| self.warned.insert((*w).clone())).cloned().collect()
    }

    /// Forgets logged warnings (after a reload, a rule's warning is news again).
    pub(crate) fn forget_warnings(&mut self) {
        self.warned.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Change, Effective, FailureClass, Verification, WriteOutcome};
    use crate::choices::StrategyName;
    use crate::devices::{QueueRole, Recognition};

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
            queue_source: None,
            managed: action == Action::Managed,
            current: Some(set(current)),
            current_locality: None,
            desired: Some(set(desired)),
            hint: None,
            action,
            reason: "test".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        }
    }

    fn plan(irqs: Vec<Placement>) -> Plan {
        crate::plan::test_plans::plan_of(vec![crate::plan::test_plans::nic("0000:01:00.0", irqs)])
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
    fn a_failure_is_loud_once_then_counted_until_its_outcome_changes() {
        let mut ledger = Ledger::default();
        let failed =
            |class| Change { result: WriteOutcome::Failed { class, error: "no".into() }, ..written(30, "0-7", "2") };
        let target = set("2");
        assert_eq!(ledger.loudness(&failed(FailureClass::NoVectors), &target), Loudness::Loud);
        for _ in 0..9 {
            assert_eq!(ledger.loudness(&failed(FailureClass::NoVectors), &target), Loudness::Quiet);
        }
        assert_eq!(ledger.repeated()[0].count, 10);
        assert_eq!(ledger.repeated()[0].outcome, "novectors");
        assert_eq!(ledger.loudness(&failed(FailureClass::Invalid), &target), Loudness::Loud, "another class is news");
        assert_eq!(ledger.loudness(&failed(FailureClass::Invalid), &set("3")), Loudness::Loud, "another target too");
        assert_eq!(ledger.loudness(&failed(FailureClass::Invalid), &set("3")), Loudness::Quiet);
        assert_eq!(ledger.loudness(&written(30, "0-7", "3"), &set("3")), Loudness::Recovered(2));
        assert!(ledger.repeated().is_empty());
    }

    #[test]
    fn managed_devices_are_reported_once_and_again_when_the_match_changes() {
        let mut ledger = Ledger::default();
        let mut p = plan(vec![placement(40, "0", "0", Action::Managed), placement(41, "1", "1", Action::Managed)]);
        p.devices[0].irqs[1].mismatch = Some(false);
        let news = ledger.managed_news(&p);
        assert_eq!(
            news,
            vec![ManagedNews {
                device: "eth0".into(),
                managed: 2,
                predicted: 1,
                mismatched: vec![],
                uncertain: vec![],
                uncertain_reason: None
            }]
        );
        assert!(ledger.managed_news(&p).is_empty(), "not on every pass");
        p.devices[0].irqs[1].mismatch = Some(true);
        assert_eq!(ledger.managed_news(&p)[0].mismatched, vec![41]);
        // An uncertain prediction that agrees where it can be checked is news, and not a mismatch.
        p.devices[0].irqs[1].mismatch = Some(false);
        p.devices[0].irqs[1].uncertain = Some("CPUs 8-11 have no node in sysfs".into());
        let news = ledger.managed_news(&p);
        assert_eq!((news[0].mismatched.clone(), news[0].uncertain.clone()), (vec![], vec![41]));
        assert_eq!(news[0].uncertain_reason.as_deref(), Some("CPUs 8-11 have no node in sysfs"));
        assert!(ledger.managed_news(&p).is_empty());
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
