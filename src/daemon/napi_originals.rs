//! The NAPI settings instances had before irqwise first wrote them (`[napi]`), kept beside the
//! masks in `originals.json`, given back when the config stops asking for a key, and written
//! back at stop with `restore_on_exit`.
//!
//! One entry per slot of an interface ([`NapiKey`]: its `ifindex` and the queue the instance
//! serves, or its rank where the driver links no queue), not per instance id: a reset that
//! renumbers the instances (`ethtool -L`, a link flap) maps the new instance to the same entry,
//! and restore writes to whatever instance serves the slot then. Each entry holds only the keys
//! irqwise wrote, each as first seen, and goes when none is held any more or its interface is
//! gone: at most one entry per queue of a live interface.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::apply::napi_write::NapiWriter;
use crate::choices::{NapiMode, NapiProfile};
use crate::devices::napi::{NapiSettings, NapiSlot, NapiThreaded, NetdevReport};
use crate::plan::napi_profile::NapiProfilePlan;
use crate::plan::{Action, NapiView, Plan};

/// What an entry is kept by: the interface (its `ifindex`, which a reset keeps and no other
/// interface takes while it lives; a name can be given to another) and the slot on it.
pub(crate) type NapiKey = (u32, NapiSlot);

/// One slot's settings before irqwise first wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OriginalNapi {
    /// The PCI address of the NIC.
    pub device: String,
    pub interface: Option<String>,
    pub ifindex: u32,
    pub slot: NapiSlot,
    /// The instance that served the slot when last seen (restored by it when the kernel cannot
    /// say which serves it at stop).
    pub napi_id: u32,
    /// The keys irqwise wrote, as they were.
    pub settings: NapiProfile,
}

impl OriginalNapi {
    pub(crate) fn key(&self) -> NapiKey {
        (self.ifindex, self.slot)
    }
}

/// The keys of `p` that `mask` does not set.
fn without(p: &NapiProfile, mask: &NapiProfile) -> NapiProfile {
    let (s, m) = (&p.settings, &mask.settings);
    NapiProfile {
        settings: NapiSettings {
            defer_hard_irqs: s.defer_hard_irqs.filter(|_| m.defer_hard_irqs.is_none()),
            gro_flush_timeout: s.gro_flush_timeout.filter(|_| m.gro_flush_timeout.is_none()),
            irq_suspend_timeout: s.irq_suspend_timeout.filter(|_| m.irq_suspend_timeout.is_none()),
        },
        threaded: p.threaded.filter(|_| mask.threaded.is_none()),
    }
}

/// The keys of `p` whose value the instance (`settings`, `threaded`) holds otherwise; a key the
/// kernel does not report is not among them (it cannot be written).
fn differing(p: &NapiProfile, settings: &NapiSettings, threaded: Option<NapiThreaded>) -> NapiProfile {
    let s = &p.settings;
    let differs = |want: Option<u64>, now: Option<u64>| want.filter(|w| now.is_some_and(|n| n != *w));
    NapiProfile {
        settings: NapiSettings {
            defer_hard_irqs: differs(s.defer_hard_irqs.map(u64::from), settings.defer_hard_irqs.map(u64::from))
                .and(s.defer_hard_irqs),
            gro_flush_timeout: differs(s.gro_flush_timeout, settings.gro_flush_timeout),
            irq_suspend_timeout: differs(s.irq_suspend_timeout, settings.irq_suspend_timeout),
        },
        threaded: p.threaded.filter(|m| threaded.is_some_and(|t| t != m.kernel())),
    }
}

/// What the config asks of `view` (nothing without a profile).
fn desired(view: &NapiView) -> NapiProfile {
    view.profile.as_ref().map(|p| p.desired).unwrap_or_default()
}

/// The keys `held` for `view` that the config no longer asks and the instance holds otherwise
/// than before irqwise: to write back.
fn to_give_back(held: &NapiProfile, view: &NapiView) -> NapiProfile {
    differing(&without(held, &desired(view)), &view.settings, view.threaded)
}

/// Adds to every instance of `plan` the keys of its record the config no longer asks for and
/// that differ from their originals, to be written back (`restore`, and in `write`, with
/// `action` set). Guarantees: a key the config asks is never given back; an instance with
/// nothing to give back is unchanged.
pub(crate) fn give_back_napi(record: &BTreeMap<NapiKey, OriginalNapi>, plan: &mut Plan) {
    for view in plan.devices.iter_mut().flat_map(|d| d.napi.iter_mut()) {
        let Some(entry) = record.get(&(view.ifindex, view.slot)) else { continue };
        let back = to_give_back(&entry.settings, view);
        if back.is_empty() {
            continue;
        }
        let p = view.profile.get_or_insert_with(|| NapiProfilePlan {
            desired: NapiProfile::default(),
            write: NapiProfile::default(),
            restore: NapiProfile::default(),
            action: Action::Keep,
            unsupported: Vec::new(),
        });
        p.restore = back;
        p.write = p.write.overlay(&back);
        p.action = Action::Set;
    }
}

/// Records, for every instance `plan` is about to write for the config, the current value of
/// each key to be written that its slot has no record of; forgets the keys given back (the
/// config no longer asks for them and the instance holds them as they were), the entries left
/// with none, and those of interfaces gone (a device no longer planned, or one whose instances
/// are all on other interfaces now; a device reporting none, its link down, keeps them).
/// Returns whether the record changed.
pub(crate) fn note_napi(record: &mut BTreeMap<NapiKey, OriginalNapi>, plan: &Plan) -> bool {
    let mut interfaces: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for d in &plan.devices {
        interfaces.entry(d.bdf.as_str()).or_default().extend(d.napi.iter().map(|v| v.ifindex));
    }
    let before = record.len();
    record.retain(|&(ifindex, _), o| {
        interfaces.get(o.device.as_str()).is_some_and(|seen| seen.is_empty() || seen.contains(&ifindex))
    });
    let mut changed = record.len() != before;
    for d in &plan.devices {
        for view in &d.napi {
            changed |= note_instance(record, d, view);
        }
    }
    changed
}

/// [`note_napi`] for one instance: whether its entry changed.
fn note_instance(record: &mut BTreeMap<NapiKey, OriginalNapi>, d: &crate::plan::DevicePlan, view: &NapiView) -> bool {
    let key = (view.ifindex, view.slot);
    let mut changed = false;
    if let Some(p) = view.profile.as_ref().filter(|p| p.action == Action::Set) {
        let current = without(&p.write, &p.restore).keys_of(&view.settings, view.threaded);
        if !current.is_empty() {
            let entry = record.entry(key).or_insert_with(|| {
                changed = true;
                OriginalNapi {
                    device: d.bdf.clone(),
                    interface: d.name.clone(),
                    ifindex: view.ifindex,
                    slot: view.slot,
                    napi_id: view.id,
                    settings: NapiProfile::default(),
                }
            });
            let merged = current.overlay(&entry.settings);
            changed |= merged != entry.settings;
            entry.settings = merged;
        }
    }
    let Some(entry) = record.get_mut(&key) else { return changed };
    if entry.napi_id != view.id || entry.interface != d.name {
        (entry.napi_id, entry.interface) = (view.id, d.name.clone());
        changed = true;
    }
    let settled = without(&without(&entry.settings, &desired(view)), &to_give_back(&entry.settings, view));
    if !settled.is_empty() {
        entry.settings = without(&entry.settings, &settled);
        changed = true;
    }
    if entry.settings.is_empty() {
        record.remove(&key);
        changed = true;
    }
    changed
}

/// Writes every recorded slot back to the instance serving it now (`now`, the kernel's report
/// at stop; without one, the instance last seen there); slots served by none (their interface
/// down or gone, their queue disabled) are skipped. Logs each failure and how many were
/// restored.
pub(crate) fn restore_napi(
    record: &BTreeMap<NapiKey, OriginalNapi>,
    now: Option<&NetdevReport>,
    writer: &mut dyn NapiWriter,
) {
    if record.is_empty() {
        return;
    }
    let serving = now.map(NetdevReport::by_slot);
    let (mut restored, mut gone) = (0, 0);
    for o in record.values() {
        let id = match &serving {
            Some(serving) => serving.get(&o.key()).copied(),
            None => Some(o.napi_id),
        };
        let Some(id) = id else {
            gone += 1;
            continue;
        };
        let s = &o.settings;
        match writer.set(id, &s.settings, s.threaded.map(NapiMode::kernel)) {
            Ok(()) => restored += 1,
            Err(e) if e.is_gone() => gone += 1,
            Err(e) => tracing::warn!(
                device = o.device.as_str(),
                napi_id = id,
                "napi instance {id} of {}: not restored: {e}",
                crate::text::printable(o.interface.as_deref().unwrap_or(&o.device))
            ),
        }
    }
    tracing::info!(
        "restored the settings of {restored} of {} NAPI instances to what they were before irqwise ({gone} gone since)",
        record.len()
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::apply::napi_write::NapiWriter;
    use crate::devices::discover::netdev_netlink::NapiSocketError;
    use crate::devices::napi::{NapiInstance, QueueKind, QueueNapi};

    fn settings(defer: u32, gro: u64) -> NapiSettings {
        NapiSettings { defer_hard_irqs: Some(defer), gro_flush_timeout: Some(gro), irq_suspend_timeout: Some(0) }
    }

    /// A plan of one NIC (eth0, ifindex 3) whose instance `id` serves receive queue `queue`,
    /// has `now` and is configured for `want` (all of it to write where it differs).
    fn plan(instances: &[(u32, u32, NapiSettings, NapiProfile)]) -> Plan {
        let mut dp = crate::plan::test_nic_plan("0000:81:00.0", Vec::new(), Vec::new());
        dp.name = Some("eth0".into());
        dp.napi = instances
            .iter()
            .map(|&(id, queue, now, want)| {
                let write = differing(&want, &now, Some(NapiThreaded::Disabled));
                NapiView {
                    id,
                    ifindex: 3,
                    slot: NapiSlot::Rx(queue),
                    irq: None,
                    queue: Some(queue),
                    threaded: Some(NapiThreaded::Disabled),
                    pid: None,
                    settings: now,
                    profile: (!want.is_empty()).then_some(NapiProfilePlan {
                        desired: want,
                        write,
                        restore: NapiProfile::default(),
                        action: if write.is_empty() { Action::Keep } else { Action::Set },
                        unsupported: Vec::new(),
                    }),
                }
            })
            .collect();
        Plan { devices: vec![dp], ..Plan::default() }
    }

    fn profile(defer: Option<u32>, gro: Option<u64>, threaded: Option<NapiMode>) -> NapiProfile {
        NapiProfile {
            settings: NapiSettings { defer_hard_irqs: defer, gro_flush_timeout: gro, irq_suspend_timeout: None },
            threaded,
        }
    }

    #[test]
    fn the_first_value_of_each_key_written_is_kept_and_devices_gone_are_dropped() {
        let mut record = BTreeMap::new();
        // First pass writes defer only: only defer is recorded, as it was.
        assert!(note_napi(&mut record, &plan(&[(8193, 0, settings(0, 0), profile(Some(3), None, None))])));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(0), None, None));
        // Another writer set defer 9 and the pass writes it again, with gro now: defer keeps its
        // first value, gro joins; the threaded mode is recorded in the config's words.
        let again = plan(&[(8193, 0, settings(9, 7), profile(Some(3), Some(50_000), Some(NapiMode::On)))]);
        assert!(note_napi(&mut record, &again));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(0), Some(7), Some(NapiMode::Off)));
        assert!(!note_napi(&mut record, &again), "nothing new");
        // The device left the plan: its entries go.
        assert!(note_napi(&mut record, &Plan::default()));
        assert!(record.is_empty());
    }

    /// A kernel stand-in that keeps what is set, with `gone` instances refusing.
    struct Kernel {
        set: BTreeMap<u32, (NapiSettings, Option<NapiThreaded>)>,
        gone: Vec<u32>,
    }

    impl NapiWriter for Kernel {
        fn set(&mut self, id: u32, s: &NapiSettings, t: Option<NapiThreaded>) -> Result<(), NapiSocketError> {
            if self.gone.contains(&id) {
                return Err(NapiSocketError::Refused { op: "set", id, errno: 2 });
            }
            self.set.insert(id, (*s, t));
            Ok(())
        }

        fn get(&mut self, id: u32) -> Result<NapiInstance, NapiSocketError> {
            Err(NapiSocketError::Socket(format!("not asked ({id})")))
        }
    }

    #[test]
    fn restore_writes_each_recorded_key_back_and_skips_instances_gone() {
        let mut record = BTreeMap::new();
        note_napi(
            &mut record,
            &plan(&[
                (8193, 0, settings(1, 20_000), profile(Some(3), Some(50_000), None)),
                (8194, 1, settings(0, 0), profile(Some(3), None, Some(NapiMode::On))),
            ]),
        );
        let mut kernel = Kernel { set: BTreeMap::new(), gone: vec![8194] };
        restore_napi(&record, None, &mut kernel);
        assert_eq!(kernel.set.len(), 1);
        let (s, t) = kernel.set[&8193];
        assert_eq!(
            (s.defer_hard_irqs, s.gro_flush_timeout, s.irq_suspend_timeout, t),
            (Some(1), Some(20_000), None, None)
        );
    }

    /// The kernel's report of eth0 (ifindex 3): instance `first + q` serves queue `q`.
    fn report(first: u32, queues: u32) -> NetdevReport {
        let mut r = NetdevReport::default();
        for q in 0..queues {
            let settings = NapiSettings::default();
            r.napis.push(NapiInstance { ifindex: 3, id: first + q, irq: None, pid: None, threaded: None, settings });
            for kind in [QueueKind::Rx, QueueKind::Tx] {
                r.queues.push(QueueNapi { ifindex: 3, id: q, kind, napi: Some(first + q) });
            }
        }
        r
    }

    #[test]
    fn a_reset_that_renumbers_the_instances_maps_them_to_the_same_entries_and_restore_follows() {
        let want = NapiProfile {
            settings: NapiSettings { irq_suspend_timeout: Some(2_000_000), ..NapiSettings::default() },
            threaded: None,
        };
        let mut record = BTreeMap::new();
        // 20 resets, each giving the 4 queues new instances at the kernel's defaults.
        for reset in 0..=20 {
            let first = 8193 + 4 * reset;
            let now = settings(0, 0);
            let instances: Vec<_> = (0..4).map(|q| (first + q, q, now, want)).collect();
            note_napi(&mut record, &plan(&instances));
        }
        assert_eq!(record.len(), 4, "one entry per queue: {record:#?}");
        // A reset after the last pass: at stop the kernel says which instance serves each queue.
        let mut kernel = Kernel { set: BTreeMap::new(), gone: Vec::new() };
        restore_napi(&record, Some(&report(9000, 4)), &mut kernel);
        assert_eq!(kernel.set.keys().copied().collect::<Vec<_>>(), vec![9000, 9001, 9002, 9003]);
        assert!(kernel.set.values().all(|(s, _)| s.irq_suspend_timeout == Some(0)), "{:?}", kernel.set);
        // Two queues left (ethtool -L 2): those are restored, the others were served by none.
        let mut kernel = Kernel { set: BTreeMap::new(), gone: Vec::new() };
        restore_napi(&record, Some(&report(9100, 2)), &mut kernel);
        assert_eq!(kernel.set.keys().copied().collect::<Vec<_>>(), vec![9100, 9101]);
        // The interface is gone (its device planned with instances on another interface only).
        let mut elsewhere = plan(&[(9500, 0, settings(0, 0), NapiProfile::default())]);
        elsewhere.devices[0].napi[0].ifindex = 4;
        assert!(note_napi(&mut record, &elsewhere));
        assert!(record.is_empty(), "{record:#?}");
    }

    #[test]
    fn a_key_the_config_drops_is_given_back_and_forgotten_once_the_instance_holds_it() {
        let both = profile(Some(3), Some(50_000), None);
        let mut record = BTreeMap::new();
        note_napi(&mut record, &plan(&[(8193, 0, settings(1, 20_000), both)]));
        // The kernel holds the profile; the config now sets defer only.
        let held =
            NapiSettings { defer_hard_irqs: Some(3), gro_flush_timeout: Some(50_000), irq_suspend_timeout: Some(0) };
        let mut p = plan(&[(8193, 0, held, profile(Some(3), None, None))]);
        give_back_napi(&record, &mut p);
        let planned = p.devices[0].napi[0].profile.clone().unwrap_or_else(|| panic!("no profile"));
        assert_eq!(
            (planned.action, planned.restore, planned.write),
            (Action::Set, profile(None, Some(20_000), None), profile(None, Some(20_000), None))
        );
        let table = p.to_table();
        assert!(
            table.contains("given back to what they were before irqwise: gro_flush_timeout 50us -> 20us"),
            "{table}"
        );
        // The write is noted without recording the given-back key again; it stays held until the
        // instance reads back its original.
        assert!(!note_napi(&mut record, &p));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(1), Some(20_000), None));
        let back = NapiSettings { gro_flush_timeout: Some(20_000), ..held };
        let mut p = plan(&[(8193, 0, back, profile(Some(3), None, None))]);
        give_back_napi(&record, &mut p);
        assert_eq!(p.devices[0].napi[0].profile.as_ref().map(|p| p.action), Some(Action::Keep), "nothing to give back");
        assert!(note_napi(&mut record, &p));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(1), None, None));
        // No [napi] at all: defer goes back too (the instance had no profile), then the entry.
        let mut p = plan(&[(8194, 0, back, NapiProfile::default())]);
        give_back_napi(&record, &mut p);
        let planned = p.devices[0].napi[0].profile.clone().unwrap_or_else(|| panic!("no profile"));
        assert_eq!((planned.action, planned.write), (Action::Set, profile(Some(1), None, None)));
        let original = NapiSettings { defer_hard_irqs: Some(1), ..back };
        assert!(note_napi(&mut record, &plan(&[(8194, 0, original, NapiProfile::default())])));
        assert!(record.is_empty(), "{record:#?}");
    }
}
