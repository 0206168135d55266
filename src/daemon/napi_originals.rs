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
    let linking = linking_interfaces(plan);
    for view in plan.devices.iter_mut().flat_map(|d| d.napi.iter_mut()) {
        let Some(entry) = record.get(&entry_key(record, view, linking.contains(&view.ifindex))) else { continue };
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
/// with none, and those of interfaces gone: a device that left the machine (not planned and not
/// `present`), or one planned whose instances are all on other interfaces now. A device that is
/// not planned (a NIC frees its IRQs at link down, so a pass finds nothing of it to place) or
/// reports no instance while it is still there keeps them: the instances its link up makes get
/// the entries of the ones they replace, not their values then as originals.
/// Returns whether the record changed.
pub(crate) fn note_napi(
    record: &mut BTreeMap<NapiKey, OriginalNapi>,
    plan: &Plan,
    present: &dyn Fn(&str) -> bool,
) -> bool {
    let mut interfaces: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for d in &plan.devices {
        interfaces.entry(d.bdf.as_str()).or_default().extend(d.napi.iter().map(|v| v.ifindex));
    }
    let before = record.len();
    record.retain(|&(ifindex, _), o| match interfaces.get(o.device.as_str()) {
        Some(seen) => seen.is_empty() || seen.contains(&ifindex),
        None => present(&o.device),
    });
    let mut changed = record.len() != before;
    let linking = linking_interfaces(plan);
    for d in &plan.devices {
        for view in &d.napi {
            changed |= note_instance(record, d, view, linking.contains(&view.ifindex));
        }
    }
    changed
}

/// The interfaces of `plan` whose driver links queues to their instances (some instance serves
/// a queue the kernel names): there an instance serving none is one whose queue is disabled.
fn linking_interfaces(plan: &Plan) -> BTreeSet<u32> {
    plan.devices.iter().flat_map(|d| &d.napi).filter(|v| v.queue.is_some()).map(|v| v.ifindex).collect()
}

/// The entries of interface `ifindex`.
fn of_interface(
    record: &BTreeMap<NapiKey, OriginalNapi>,
    ifindex: u32,
) -> impl Iterator<Item = (&NapiKey, &OriginalNapi)> {
    record.range((ifindex, NapiSlot::Rx(0))..=(ifindex, NapiSlot::Position(u32::MAX)))
}

/// The entry `view` is kept by: its slot's, but for an instance serving no queue on an interface
/// whose driver links them (`linking`): one whose queue `ethtool -L` disabled, which the kernel
/// keeps (6.13's persistent NAPI config) and gives the queue again when it is enabled. It keeps
/// the entry of the queue it served (the one that last saw it); a rank of its own only when it
/// has none (its queue was disabled before irqwise first saw it; [`adopt_rank_entry`]).
fn entry_key(record: &BTreeMap<NapiKey, OriginalNapi>, view: &NapiView, linking: bool) -> NapiKey {
    let key = (view.ifindex, view.slot);
    if !linking || !matches!(view.slot, NapiSlot::Position(_)) {
        return key;
    }
    of_interface(record, view.ifindex).find(|(_, o)| o.napi_id == view.id).map_or(key, |(k, _)| *k)
}

/// Moves the rank entry of `view`'s instance (made while its queue was disabled, see
/// [`entry_key`]) to the queue it serves now, under that queue's entry where there is one (its
/// values are older). Whether the record changed.
fn adopt_rank_entry(record: &mut BTreeMap<NapiKey, OriginalNapi>, view: &NapiView, linking: bool) -> bool {
    if !linking || matches!(view.slot, NapiSlot::Position(_)) {
        return false;
    }
    let stray = of_interface(record, view.ifindex)
        .find(|(k, o)| matches!(k.1, NapiSlot::Position(_)) && o.napi_id == view.id)
        .map(|(k, _)| *k);
    let Some(mut o) = stray.and_then(|k| record.remove(&k)) else { return false };
    if let Some(entry) = record.get_mut(&(view.ifindex, view.slot)) {
        entry.settings = o.settings.overlay(&entry.settings);
    } else {
        o.slot = view.slot;
        record.insert(o.key(), o);
    }
    true
}

/// [`note_napi`] for one instance (`linking`: its interface links queues to instances): whether
/// its entry changed.
fn note_instance(
    record: &mut BTreeMap<NapiKey, OriginalNapi>,
    d: &crate::plan::DevicePlan,
    view: &NapiView,
    linking: bool,
) -> bool {
    let mut changed = adopt_rank_entry(record, view, linking);
    let key = entry_key(record, view, linking);
    if let Some(p) = view.profile.as_ref().filter(|p| p.action == Action::Set) {
        let current = without(&p.write, &p.restore).keys_of(&view.settings, view.threaded);
        if !current.is_empty() {
            let entry = record.entry(key).or_insert_with(|| {
                changed = true;
                OriginalNapi {
                    device: d.bdf.clone(),
                    interface: d.name.clone(),
                    ifindex: key.0,
                    slot: key.1,
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
    use crate::apply::napi_socket::NapiSocketError;
    use crate::apply::napi_write::NapiWriter;
    use crate::devices::napi::{NapiInstance, QueueKind, QueueNapi};

    fn settings(defer: u32, gro: u64) -> NapiSettings {
        NapiSettings { defer_hard_irqs: Some(defer), gro_flush_timeout: Some(gro), irq_suspend_timeout: Some(0) }
    }

    /// A plan of one NIC (eth0, ifindex 3) whose instance `id` serves receive queue `queue`,
    /// has `now` and is configured for `want` (all of it to write where it differs).
    fn plan(instances: &[(u32, u32, NapiSettings, NapiProfile)]) -> Plan {
        let slots: Vec<_> = instances.iter().map(|&(id, q, now, want)| (id, NapiSlot::Rx(q), now, want)).collect();
        plan_of(&slots)
    }

    /// [`plan`] with each instance's slot given (a rank: it serves no queue).
    fn plan_of(instances: &[(u32, NapiSlot, NapiSettings, NapiProfile)]) -> Plan {
        let mut dp = crate::plan::test_plans::nic("0000:81:00.0", Vec::new());
        dp.name = Some("eth0".into());
        dp.napi = instances
            .iter()
            .map(|&(id, slot, now, want)| {
                let write = differing(&want, &now, Some(NapiThreaded::Disabled));
                NapiView {
                    id,
                    ifindex: 3,
                    slot,
                    irq: None,
                    queue: match slot {
                        NapiSlot::Rx(q) | NapiSlot::Tx(q) => Some(q),
                        NapiSlot::Position(_) => None,
                    },
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
        crate::plan::test_plans::plan_of(vec![dp])
    }

    /// [`note_napi`] on a machine where no device is left but those planned.
    fn note(record: &mut BTreeMap<NapiKey, OriginalNapi>, plan: &Plan) -> bool {
        note_napi(record, plan, &|_| false)
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
        assert!(note(&mut record, &plan(&[(8193, 0, settings(0, 0), profile(Some(3), None, None))])));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(0), None, None));
        // Another writer set defer 9 and the pass writes it again, with gro now: defer keeps its
        // first value, gro joins; the threaded mode is recorded in the config's words.
        let again = plan(&[(8193, 0, settings(9, 7), profile(Some(3), Some(50_000), Some(NapiMode::On)))]);
        assert!(note(&mut record, &again));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(0), Some(7), Some(NapiMode::Off)));
        assert!(!note(&mut record, &again), "nothing new");
        // The device left the plan and the machine: its entries go.
        assert!(note(&mut record, &Plan::default()));
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
        note(
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
            note(&mut record, &plan(&instances));
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
        assert!(note(&mut record, &elsewhere));
        assert!(record.is_empty(), "{record:#?}");
    }

    #[test]
    fn a_key_the_config_drops_is_given_back_and_forgotten_once_the_instance_holds_it() {
        let both = profile(Some(3), Some(50_000), None);
        let mut record = BTreeMap::new();
        note(&mut record, &plan(&[(8193, 0, settings(1, 20_000), both)]));
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
        assert!(!note(&mut record, &p));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(1), Some(20_000), None));
        let back = NapiSettings { gro_flush_timeout: Some(20_000), ..held };
        let mut p = plan(&[(8193, 0, back, profile(Some(3), None, None))]);
        give_back_napi(&record, &mut p);
        assert_eq!(p.devices[0].napi[0].profile.as_ref().map(|p| p.action), Some(Action::Keep), "nothing to give back");
        assert!(note(&mut record, &p));
        assert_eq!(record[&(3, NapiSlot::Rx(0))].settings, profile(Some(1), None, None));
        // No [napi] at all: defer goes back too (the instance had no profile), then the entry.
        let mut p = plan(&[(8194, 0, back, NapiProfile::default())]);
        give_back_napi(&record, &mut p);
        let planned = p.devices[0].napi[0].profile.clone().unwrap_or_else(|| panic!("no profile"));
        assert_eq!((planned.action, planned.write), (Action::Set, profile(Some(1), None, None)));
        let original = NapiSettings { defer_hard_irqs: Some(1), ..back };
        assert!(note(&mut record, &plan(&[(8194, 0, original, NapiProfile::default())])));
        assert!(record.is_empty(), "{record:#?}");
    }

    /// The kernel's report of eth0 (ifindex 3) whose driver links no queue (vmxnet3): `n`
    /// instances from `first`.
    fn unlinked_report(first: u32, n: u32) -> NetdevReport {
        let mut r = report(first, n);
        r.queues.clear();
        r
    }

    #[test]
    fn an_entry_outlives_its_interfaces_link_down_and_goes_to_the_instance_made_at_link_up() {
        // vmxnet3: 8 instances serving no queue the kernel names, so kept by rank; the last
        // (rank 7) had its own values before irqwise.
        let want = profile(Some(3), Some(50_000), None);
        let eth0 = |first: u32, before: NapiSettings| {
            let instances: Vec<_> = (0..8)
                .map(|r| (first + r, NapiSlot::Position(r), if r == 7 { before } else { settings(0, 0) }, want))
                .collect();
            plan_of(&instances)
        };
        let on_the_machine = |_: &str| true;
        let mut record = BTreeMap::new();
        assert!(note_napi(&mut record, &eth0(8193, settings(1, 20_000)), &on_the_machine));
        assert_eq!(record.len(), 8);
        // Link down: the NIC frees its IRQs, so a pass plans it not at all (it has no IRQ in
        // use), then with no instance; it is still on the machine.
        note_napi(&mut record, &Plan::default(), &on_the_machine);
        let mut down = eth0(8193, settings(0, 0));
        down.devices[0].napi.clear();
        note_napi(&mut record, &down, &on_the_machine);
        assert_eq!(record.len(), 8, "the link down keeps every entry: {record:#?}");
        // Link up: new instances, at the kernel's defaults (another writer zeroed the old ones).
        note_napi(&mut record, &eth0(8205, settings(0, 0)), &on_the_machine);
        assert_eq!(record[&(3, NapiSlot::Position(7))].napi_id, 8212);
        let mut kernel = Kernel { set: BTreeMap::new(), gone: Vec::new() };
        restore_napi(&record, Some(&unlinked_report(8205, 8)), &mut kernel);
        let held: Vec<_> =
            kernel.set.iter().map(|(&id, (s, _))| (id, s.defer_hard_irqs, s.gro_flush_timeout)).collect();
        let expected: Vec<_> =
            (0..8).map(|r| if r == 7 { (8212, Some(1), Some(20_000)) } else { (8205 + r, Some(0), Some(0)) }).collect();
        assert_eq!(held, expected, "each instance back at its slot's values from before irqwise");
        // The device leaves the machine: then its entries go.
        assert!(note_napi(&mut record, &Plan::default(), &|_| false));
        assert!(record.is_empty(), "{record:#?}");
    }

    #[test]
    fn the_instances_of_disabled_queues_keep_their_queues_entries_and_add_none() {
        // virtio-net: 4 queues, each linked to its instance; rxq 2 had its own defer.
        let want = profile(Some(3), None, None);
        let zero = settings(0, 0);
        let all4 = |q2: NapiSettings| {
            plan_of(
                &(0..4).map(|q| (8201 + q, NapiSlot::Rx(q), if q == 2 { q2 } else { zero }, want)).collect::<Vec<_>>(),
            )
        };
        let mut record = BTreeMap::new();
        note(&mut record, &all4(settings(2, 30_000)));
        // ethtool -L 1: the kernel keeps the other instances, serving no queue (zeroed by
        // another writer, then given the profile again).
        let one = plan_of(&[
            (8201, NapiSlot::Rx(0), zero, want),
            (8202, NapiSlot::Position(0), zero, want),
            (8203, NapiSlot::Position(1), zero, want),
            (8204, NapiSlot::Position(2), zero, want),
        ]);
        note(&mut record, &one);
        note(&mut record, &all4(zero));
        let keys: Vec<_> = record.keys().copied().collect();
        assert_eq!(keys, (0..4).map(|q| (3, NapiSlot::Rx(q))).collect::<Vec<_>>(), "{record:#?}");
        let mut kernel = Kernel { set: BTreeMap::new(), gone: Vec::new() };
        restore_napi(&record, Some(&report(8201, 4)), &mut kernel);
        let defer: Vec<_> = kernel.set.iter().map(|(&id, (s, _))| (id, s.defer_hard_irqs)).collect();
        assert_eq!(defer, vec![(8201, Some(0)), (8202, Some(0)), (8203, Some(2)), (8204, Some(0))]);

        // First seen serving no queue (its queue disabled before irqwise started): its entry
        // moves to the queue it serves once enabled, where nothing is written any more.
        let mut record = BTreeMap::new();
        note(
            &mut record,
            &plan_of(&[(8201, NapiSlot::Rx(0), zero, want), (8202, NapiSlot::Position(0), settings(7, 0), want)]),
        );
        let held = settings(3, 0);
        note(&mut record, &plan_of(&[(8201, NapiSlot::Rx(0), held, want), (8202, NapiSlot::Rx(1), held, want)]));
        let keys: Vec<_> = record.keys().copied().collect();
        assert_eq!(keys, vec![(3, NapiSlot::Rx(0)), (3, NapiSlot::Rx(1))], "{record:#?}");
        assert_eq!(record[&(3, NapiSlot::Rx(1))].settings, profile(Some(7), None, None));
    }
}
