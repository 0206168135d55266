//! The NAPI settings instances had before irqwise first wrote them (`[napi]`), kept beside the
//! masks in `originals.json` and written back at stop with `restore_on_exit`.
//!
//! One entry per instance id (NAPI ids are unique on a machine), holding only the keys irqwise
//! wrote, each as first seen. An instance recreated under another id by a reset starts a new
//! entry from the kernel's fresh values; entries of devices that went away are dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::apply::napi_write::NapiWriter;
use crate::choices::NapiProfile;
use crate::plan::Plan;

/// One instance's settings before irqwise first wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OriginalNapi {
    /// The PCI address of the NIC.
    pub device: String,
    pub interface: Option<String>,
    pub napi_id: u32,
    /// The keys irqwise wrote, as they were.
    pub settings: NapiProfile,
}

/// Records, for every instance `plan` is about to write, the current value of each key to be
/// written that has no record yet; drops the entries of devices the plan no longer has.
/// Returns whether the record changed.
pub(crate) fn note_napi(record: &mut BTreeMap<u32, OriginalNapi>, plan: &Plan) -> bool {
    let present: std::collections::BTreeSet<&str> = plan.devices.iter().map(|d| d.bdf.as_str()).collect();
    let before = record.len();
    record.retain(|_, o| present.contains(o.device.as_str()));
    let mut changed = record.len() != before;
    for (d, view) in plan.napi_writes() {
        let Some(p) = &view.profile else { continue };
        let current = p.write.keys_of(&view.settings, view.threaded);
        let entry = record.entry(view.id).or_insert_with(|| {
            changed = true;
            OriginalNapi {
                device: d.bdf.clone(),
                interface: d.name.clone(),
                napi_id: view.id,
                settings: NapiProfile::default(),
            }
        });
        let merged = current.overlay(&entry.settings);
        if merged != entry.settings {
            entry.settings = merged;
            changed = true;
        }
    }
    changed
}

/// Writes every recorded instance back (those gone since are skipped); logs each failure and
/// how many were restored.
pub(crate) fn restore_napi(record: &BTreeMap<u32, OriginalNapi>, writer: &mut dyn NapiWriter) {
    if record.is_empty() {
        return;
    }
    let (mut restored, mut gone) = (0, 0);
    for o in record.values() {
        let s = &o.settings;
        match writer.set(o.napi_id, &s.settings, s.threaded.map(crate::choices::NapiMode::kernel)) {
            Ok(()) => restored += 1,
            Err(e) if e.is_gone() => gone += 1,
            Err(e) => tracing::warn!(
                device = o.device.as_str(),
                napi_id = o.napi_id,
                "napi instance {} of {}: not restored: {e}",
                o.napi_id,
                o.interface.as_deref().unwrap_or(&o.device)
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
    use crate::choices::NapiMode;
    use crate::devices::discover::netdev_netlink::NapiSocketError;
    use crate::devices::napi::{NapiInstance, NapiSettings, NapiThreaded};
    use crate::plan::napi_profile::NapiProfilePlan;
    use crate::plan::{Action, NapiView};

    fn settings(defer: u32, gro: u64) -> NapiSettings {
        NapiSettings { defer_hard_irqs: Some(defer), gro_flush_timeout: Some(gro), irq_suspend_timeout: Some(0) }
    }

    /// A plan of one NIC whose instance `id` has `now` and is to get `write`.
    fn plan(instances: &[(u32, NapiSettings, NapiProfile)]) -> Plan {
        let mut dp = crate::plan::test_nic_plan("0000:81:00.0", Vec::new(), Vec::new());
        dp.napi = instances
            .iter()
            .map(|&(id, now, write)| NapiView {
                id,
                irq: None,
                queue: None,
                threaded: Some(NapiThreaded::Disabled),
                pid: None,
                settings: now,
                profile: Some(NapiProfilePlan {
                    desired: write,
                    write,
                    action: if write.is_empty() { Action::Keep } else { Action::Set },
                    unsupported: Vec::new(),
                }),
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
        assert!(note_napi(&mut record, &plan(&[(8193, settings(0, 0), profile(Some(3), None, None))])));
        assert_eq!(record[&8193].settings, profile(Some(0), None, None));
        // Another writer set defer 9 and the pass writes it again, with gro now: defer keeps its
        // first value, gro joins; the threaded mode is recorded in the config's words.
        let again = plan(&[(8193, settings(9, 7), profile(Some(3), Some(50_000), Some(NapiMode::On)))]);
        assert!(note_napi(&mut record, &again));
        assert_eq!(record[&8193].settings, profile(Some(0), Some(7), Some(NapiMode::Off)));
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
                (8193, settings(1, 20_000), profile(Some(3), Some(50_000), None)),
                (8194, settings(0, 0), profile(Some(3), None, Some(NapiMode::On))),
            ]),
        );
        let mut kernel = Kernel { set: BTreeMap::new(), gone: vec![8194] };
        restore_napi(&record, &mut kernel);
        assert_eq!(kernel.set.len(), 1);
        let (s, t) = kernel.set[&8193];
        assert_eq!(
            (s.defer_hard_irqs, s.gro_flush_timeout, s.irq_suspend_timeout, t),
            (Some(1), Some(20_000), None, None)
        );
    }
}
