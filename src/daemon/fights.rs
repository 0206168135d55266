//! Fights (`on_drift = "restore"`): an IRQ that someone else keeps rewriting (tuned's scheduler
//! plugin, a vendor script in cron, a second balancer) would be restored at every pass, forever.
//! After [`FIGHT_RESTORES`] restores within [`FIGHT_WINDOW_SECS`], the next drift is a fight:
//! irqwise stops restoring that IRQ, says so once (naming a known IRQ writer that runs, when it
//! can tell), and leaves the mask as the other writer set it until the configuration is reloaded
//! (`SIGHUP`), the writer it named stops, the device goes away, or the other writer's CPUs all go
//! offline.
//!
//! What the kernel itself does is no other writer: from 7.0 a CPU hotplug that breaks an IRQ's
//! mask notifies its driver, which may write ([`hotplug_writers`]); before 6.19 a read right
//! after a write may return the old mask, so a drift is read once more first ([`read_again`]).
//! Both are decided from the kernel's facts (the version only where nothing else tells).
//!
//! Pure bookkeeping over plans and times; the daemon logs what [`Fights::observe`] returns.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::ledger::Drift;
use super::respect::{classify, leave_as_set, DriftCause, KernelDefaults};
use crate::cpuset::CpuSet;
use crate::kernel::facts::{Feature, KernelFacts};
use crate::plan::{Action, Plan};

/// The IRQs a driver may have written during a pass that follows a CPU hotplug (`hotplugged` not
/// empty): those of the devices whose reset rule says the kernel notifies their driver of a
/// broken mask and the driver writes (7.0, dd9f6d30c640; bnxt_en restarts a queue). Empty
/// outside hotplug passes.
pub(crate) fn hotplug_writers(plan: &Plan, hotplugged: &CpuSet) -> BTreeSet<u32> {
    if hotplugged.is_empty() {
        return BTreeSet::new();
    }
    plan.devices
        .iter()
        .filter(|d| d.resets.is_some_and(|r| r.hotplug_writes == Some(true)))
        .flat_map(|d| d.irqs.iter().map(|p| p.irq))
        .collect()
}

/// `drift` read once more where the kernel may show the old mask right after a write (before
/// 6.19, 9ea2b810d51a: [`Feature::AffinityReadLocked`] not known true): an IRQ that `read` now
/// finds on what irqwise placed is no drift, and its placement in `plan` becomes a `keep` of
/// it; the others keep the first read. On a kernel whose reads are locked, `drift` as it is.
pub(crate) fn read_again(
    plan: &mut Plan,
    drift: Vec<Drift>,
    facts: &KernelFacts,
    read: &dyn Fn(u32) -> Option<CpuSet>,
) -> Vec<Drift> {
    if facts.feature(Feature::AffinityReadLocked).value() == Some(true) {
        return drift;
    }
    let mut settled = BTreeSet::new();
    let drift = drift
        .into_iter()
        .filter(|d| {
            let now_placed = d.found.is_some() && read(d.irq).as_ref() == Some(&d.placed);
            if now_placed {
                settled.insert(d.irq);
            }
            !now_placed
        })
        .collect();
    for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()).filter(|p| settled.contains(&p.irq)) {
        p.current.clone_from(&p.desired);
        p.action = Action::Keep;
    }
    drift
}

/// Restores of one IRQ allowed within [`FIGHT_WINDOW_SECS`]; the next drift is a fight.
pub(crate) const FIGHT_RESTORES: usize = 3;
/// The window, in seconds (10 minutes).
pub(crate) const FIGHT_WINDOW_SECS: f64 = 600.0;

/// An IRQ irqwise stopped restoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fought {
    pub irq: u32,
    pub name: Option<String>,
    /// The PCI address of its device.
    pub device: String,
    /// The mask the other writer set (the latest seen).
    pub mask: CpuSet,
    /// What irqwise had placed.
    pub placed: CpuSet,
    /// Restores within the window before it stopped.
    pub restores: usize,
    /// A known IRQ writer that ran when the fight was found (its pid and name), if any.
    pub writer: Option<(u32, String)>,
}

/// What changed this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FightNews {
    /// Newly fought over: no longer restored.
    Stopped(Fought),
    /// Given back to irqwise: the writer it named stopped, or the other writer's CPUs went offline.
    Resumed(Fought, &'static str),
}

/// Restore times per IRQ, and the IRQs given up on. Invariant: only IRQs of the latest plan on the
/// same device; restore times within the window.
#[derive(Debug, Default)]
pub(crate) struct Fights {
    restores: BTreeMap<u32, VecDeque<f64>>,
    fought: BTreeMap<u32, Fought>,
}

impl Fights {
    /// Takes this pass's drift at time `now` (seconds, any monotonic origin): each drift by
    /// someone else ([`DriftCause::Foreign`]) is a restore this pass will make, unless the IRQ had
    /// [`FIGHT_RESTORES`] restores within the window already: then it is fought over. Every fought
    /// IRQ of `plan` becomes a `skip` that keeps its current mask. `writer` names a known IRQ
    /// writer that runs (asked only when a fight starts); `writer_running` tells whether a named
    /// writer still runs.
    pub(crate) fn observe(
        &mut self,
        plan: &mut Plan,
        drift: &[Drift],
        k: &KernelDefaults,
        now: f64,
        writer: &mut dyn FnMut() -> Option<(u32, String)>,
        writer_running: &dyn Fn(u32, &str) -> bool,
    ) -> Vec<FightNews> {
        let mut news = Vec::new();
        let owners: BTreeMap<u32, &str> =
            plan.devices.iter().flat_map(|d| d.irqs.iter().map(move |p| (p.irq, d.bdf.as_str()))).collect();
        self.fought.retain(|irq, f| owners.get(irq) == Some(&f.device.as_str()));
        self.restores.retain(|irq, _| owners.contains_key(irq));
        for times in self.restores.values_mut() {
            while times.front().is_some_and(|t| now - t > FIGHT_WINDOW_SECS) {
                times.pop_front();
            }
        }
        for d in drift {
            let Some(found) = &d.found else { continue };
            if self.fought.contains_key(&d.irq) || classify(d.irq, &d.placed, found, k) != DriftCause::Foreign {
                continue;
            }
            let Some(device) = owners.get(&d.irq) else { continue };
            let times = self.restores.entry(d.irq).or_default();
            if times.len() < FIGHT_RESTORES {
                times.push_back(now);
                continue;
            }
            let fought = Fought {
                irq: d.irq,
                name: d.name.clone(),
                device: device.to_string(),
                mask: found.clone(),
                placed: d.placed.clone(),
                restores: times.len(),
                writer: writer(),
            };
            self.restores.remove(&d.irq);
            news.push(FightNews::Stopped(fought.clone()));
            self.fought.insert(d.irq, fought);
        }
        for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()) {
            let Some(f) = self.fought.get_mut(&p.irq) else { continue };
            if let Some(current) = &p.current {
                f.mask = current.clone();
            }
            let why = if !f.mask.intersects(&k.online) {
                Some("the CPUs the other writer gave it are all offline")
            } else if f.writer.as_ref().is_some_and(|(pid, name)| !writer_running(*pid, name)) {
                Some("the writer it was fought over with stopped")
            } else {
                None
            };
            if let Some(why) = why {
                news.push(FightNews::Resumed(f.clone(), why));
                self.fought.remove(&p.irq);
                continue;
            }
            let who = f.writer.as_ref().map_or_else(|| "someone else".to_string(), |(_, name)| name.clone());
            let reason = format!(
                "{who} keeps writing it ({} restores in {} minutes): left as they set it until SIGHUP",
                f.restores,
                FIGHT_WINDOW_SECS / 60.0
            );
            leave_as_set(p, reason);
        }
        news
    }

    /// Forgets every fight and restore (a reloaded configuration starts afresh).
    pub fn clear(&mut self) {
        self.fought.clear();
        self.restores.clear();
    }

    /// How many IRQs are given up on now.
    pub fn len(&self) -> usize {
        self.fought.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{DeviceClass, QueueRole, Recognition};
    use crate::kernel::nic_resets::reset_rule_of;
    use crate::kernel::KernelVersion;
    use crate::plan::Placement;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// IRQ 30 of 0000:01:00.0, placed on 2, found on `current`.
    fn plan(current: &str) -> Plan {
        let p = Placement {
            irq: 30,
            name: Some("eth0-TxRx-0".into()),
            role: QueueRole::RxTx,
            queue: Some(0),
            recognised: Recognition::UnknownDriver { driver: None },
            queue_source: None,
            managed: false,
            current: Some(set(current)),
            current_locality: None,
            desired: Some(set("2")),
            hint: None,
            action: if current == "2" { Action::Keep } else { Action::Set },
            reason: "queue 0".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        };
        crate::plan::test_plans::plan_of(vec![crate::plan::test_plans::device(
            "0000:01:00.0",
            DeviceClass::Nic,
            vec![p],
        )])
    }

    fn drift(found: &str) -> Vec<Drift> {
        vec![Drift { irq: 30, name: None, placed: set("2"), found: Some(set(found)) }]
    }

    fn k() -> KernelDefaults {
        KernelDefaults { online: set("0-7"), default_affinity: Some(set("0-7")), ..KernelDefaults::default() }
    }

    #[test]
    fn three_restores_in_the_window_then_the_irq_is_left_to_the_other_writer() {
        let mut f = Fights::default();
        let asked = std::cell::Cell::new(0);
        let mut writer = || {
            asked.set(asked.get() + 1);
            Some((812, "tuned".to_string()))
        };
        for t in [0.0, 1.0, 2.0] {
            let mut p = plan("5");
            assert!(f.observe(&mut p, &drift("5"), &k(), t, &mut writer, &|_, _| true).is_empty());
            assert_eq!(p.devices[0].irqs[0].action, Action::Set, "restore at {t}");
        }
        let mut p = plan("5");
        let news = f.observe(&mut p, &drift("5"), &k(), 3.0, &mut writer, &|_, _| true);
        let [FightNews::Stopped(fought)] = news.as_slice() else { panic!("{news:?}") };
        assert_eq!((fought.restores, fought.writer.clone()), (3, Some((812, "tuned".to_string()))));
        assert_eq!((p.devices[0].irqs[0].action, p.devices[0].irqs[0].desired.clone()), (Action::Skip, Some(set("5"))));
        // Later passes leave it, and say nothing more.
        let mut p = plan("6");
        assert!(f.observe(&mut p, &[], &k(), 4.0, &mut writer, &|_, _| true).is_empty());
        assert_eq!(p.devices[0].irqs[0].action, Action::Skip);
        assert_eq!(asked.get(), 1, "the writer is looked for once, when the fight starts");
        // The named writer stopped: the IRQ is placed again.
        let mut p = plan("6");
        let news = f.observe(&mut p, &[], &k(), 5.0, &mut writer, &|_, _| false);
        assert!(matches!(news.as_slice(), [FightNews::Resumed(_, _)]), "{news:?}");
        assert_eq!(p.devices[0].irqs[0].action, Action::Set);
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn restores_spread_beyond_the_window_are_no_fight_nor_are_the_kernels_rewrites() {
        let mut f = Fights::default();
        let mut writer = || None;
        for t in [0.0, 400.0, 800.0, 1200.0, 1600.0] {
            let mut p = plan("5");
            assert!(f.observe(&mut p, &drift("5"), &k(), t, &mut writer, &|_, _| true).is_empty(), "at {t}");
        }
        // The kernel's CPU-offline fallback (every online CPU) is never counted.
        let mut f = Fights::default();
        for t in 0..10 {
            let mut p = plan("0-7");
            assert!(f.observe(&mut p, &drift("0-7"), &k(), f64::from(t), &mut writer, &|_, _| true).is_empty());
        }
        // Cleared by a reload: counting starts again.
        let mut f = Fights::default();
        for t in [0.0, 1.0, 2.0] {
            f.observe(&mut plan("5"), &drift("5"), &k(), t, &mut writer, &|_, _| true);
        }
        f.clear();
        assert!(f.observe(&mut plan("5"), &drift("5"), &k(), 3.0, &mut writer, &|_, _| true).is_empty());
    }

    /// The plan of [`plan`], its NIC bound to bnxt_en on a kernel that notifies (`notifies`).
    fn bnxt_plan(current: &str, notifies: Option<bool>) -> Plan {
        let mut p = plan(current);
        let version = KernelVersion::parse("7.2").ok();
        p.devices[0].resets = Some(reset_rule_of("bnxt_en", None, version, notifies));
        p
    }

    #[test]
    fn a_write_in_a_hotplug_pass_by_a_notified_driver_is_no_fight() {
        let mut writer = || None;
        for (notifies, hotplugged, fights) in
            [(Some(true), "7", false), (Some(true), "", true), (Some(false), "7", true), (None, "7", true)]
        {
            let mut f = Fights::default();
            let mut news = Vec::new();
            for t in 0..5 {
                let mut p = bnxt_plan("5", notifies);
                let k = KernelDefaults { hotplug_writers: hotplug_writers(&p, &set(hotplugged)), ..k() };
                news.extend(f.observe(&mut p, &drift("5"), &k, f64::from(t), &mut writer, &|_, _| true));
            }
            assert_eq!(!news.is_empty(), fights, "notifies {notifies:?}, hotplugged {hotplugged:?}: {news:?}");
        }
    }

    #[test]
    fn a_drift_read_again_on_the_placed_mask_is_none_where_reads_may_be_stale() {
        use crate::kernel::facts::KernelFacts;
        let read = |_irq: u32| Some(set("2"));
        for (kernel, kept) in [("6.12", true), ("6.18", true), ("7.0", false)] {
            let facts = KernelFacts::from_version(KernelVersion::parse(kernel).ok());
            let mut p = plan("5");
            let left = read_again(&mut p, drift("5"), &facts, &read);
            assert_eq!(left.is_empty(), kept, "{kernel}");
            let irq = &p.devices[0].irqs[0];
            let want = if kept { (Action::Keep, Some(set("2"))) } else { (Action::Set, Some(set("5"))) };
            assert_eq!((irq.action, irq.current.clone()), want, "{kernel}");
        }
        // Read again and still elsewhere: the drift stays, with what the first read found.
        let facts = KernelFacts::from_version(KernelVersion::parse("6.12").ok());
        let left = read_again(&mut plan("5"), drift("5"), &facts, &|_| Some(set("6")));
        assert_eq!(left, drift("5"));
    }
}
