//! Other owners' masks (`on_drift = "respect"`): an IRQ irqwise placed whose mask someone else
//! changed is left as they set it, reported once, until its device goes away or the
//! configuration is reloaded. The kernel's own rewrites are not someone else's: a CPU-offline
//! fallback and a driver's re-request of its IRQ are placed again as usual.
//!
//! Pure bookkeeping over plans; the daemon logs what [`Respected::observe`] returns.

use std::collections::BTreeMap;

use super::ledger::Drift;
use crate::cpuset::CpuSet;
use crate::plan::{Action, Placement, Plan};

/// Why an IRQ is no longer where irqwise put it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DriftCause {
    /// Every CPU of the placed mask went offline, and the kernel moved the IRQ to the online CPUs
    /// (`migrate_one_irq()`, kernel/irq/cpuhotplug.c), which it does not undo when they return.
    KernelFallback,
    /// The IRQ was requested anew (a driver reset, `ethtool -L`, a link flap) and starts on the
    /// online CPUs of `/proc/irq/default_smp_affinity` (`irq_setup_affinity()`,
    /// kernel/irq/manage.c), or the driver set its own affinity hint as the mask (virtio_net on
    /// every CPU hotplug).
    DriverReset,
    /// Anything else: an operator, tuned, CRI-O, a vendor script.
    Foreign,
}

/// What the kernel and the drivers write, for telling their rewrites apart from other owners'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KernelDefaults {
    pub online: CpuSet,
    /// `/proc/irq/default_smp_affinity` (`None`: unreadable; every CPU is assumed).
    pub default_affinity: Option<CpuSet>,
    /// Each IRQ's `affinity_hint`, where it has one.
    pub hints: BTreeMap<u32, CpuSet>,
    /// IRQs whose driver the kernel notified of this pass's CPU hotplug and which may write
    /// ([`super::fights::hotplug_writers`]): what they show is the driver's.
    pub hotplug_writers: std::collections::BTreeSet<u32>,
}

/// Why IRQ `irq`, placed on `placed`, now shows `found`. Guarantees `Foreign` only when no
/// kernel or driver rule explains the mask: the IRQ's driver was not notified of a hotplug this
/// pass, some placed CPU is online, `found` leaves out an online CPU outside `placed`, and it is
/// neither the default affinity's online CPUs nor the IRQ's hint.
pub(crate) fn classify(irq: u32, placed: &CpuSet, found: &CpuSet, k: &KernelDefaults) -> DriftCause {
    if k.hotplug_writers.contains(&irq) {
        return DriftCause::DriverReset;
    }
    if !placed.intersects(&k.online) {
        return DriftCause::KernelFallback;
    }
    // The fallback took every CPU online at the time: with one of the placed CPUs back online
    // (an offline and online within one debounce window) it is every other online CPU.
    if k.online.difference(placed).is_subset(found) {
        return DriftCause::KernelFallback;
    }
    let default = k.default_affinity.as_ref().map_or_else(|| k.online.clone(), |d| d.intersection(&k.online));
    if *found == default || k.hints.get(&irq).is_some_and(|h| !h.is_empty() && h == found) {
        return DriftCause::DriverReset;
    }
    DriftCause::Foreign
}

/// Turns a placement irqwise would write or keep into a `skip` that keeps the mask another
/// writer set, with `reason` (a kernel-managed or already skipped one is left as planned).
pub(crate) fn leave_as_set(p: &mut Placement, reason: String) {
    if p.action == Action::Set || p.action == Action::Keep {
        p.action = Action::Skip;
        p.desired = p.current.clone();
        p.fallbacks.clear();
        p.reason = reason;
    }
}

/// An IRQ left to another owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owned {
    pub irq: u32,
    pub name: Option<String>,
    /// The PCI address of its device.
    pub device: String,
    /// The mask the other owner set (the latest seen).
    pub mask: CpuSet,
    /// What irqwise had placed.
    pub placed: CpuSet,
    /// Who most likely set it: a known IRQ writer that ran when the drift was seen
    /// ([`super::peers::likely_writer`]); `None` when none did.
    pub owner: Option<String>,
}

impl Owned {
    /// The owner as the journal and `status` name it.
    pub fn owner_words(&self) -> String {
        self.owner.clone().unwrap_or_else(|| "another owner (no known IRQ writer runs)".to_string())
    }
}

/// An IRQ left to another writer, as the state file and `status` list it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LeftToOther {
    pub irq: u32,
    pub name: Option<String>,
    pub device: String,
    /// A known IRQ writer's name (`crio`, `tuned`, `one of crio, tuned`), or `unknown`.
    pub owner: String,
    /// The mask it set, as a kernel list string.
    pub mask: String,
}

/// What changed in the respected set this pass, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RespectNews {
    /// Newly left to another owner.
    Respected(Owned),
    /// Given back to irqwise: the other owner's CPUs all went offline (the kernel's fallback).
    Released(Owned),
}

/// The IRQs left to other owners. Invariant: only IRQs of the latest plan, on the same device.
#[derive(Debug, Default)]
pub(crate) struct Respected {
    owned: BTreeMap<u32, Owned>,
}

impl Respected {
    /// Takes in this pass's drift: every [`DriftCause::Foreign`] drift becomes respected. Drops
    /// IRQs whose device went away, releases those whose other owner's CPUs all went offline,
    /// and turns every respected IRQ of `plan` into a `skip` that keeps its current mask.
    /// `owner` names who most likely wrote this pass's drift (asked only when there is some).
    pub(crate) fn observe(
        &mut self,
        plan: &mut Plan,
        drift: &[Drift],
        k: &KernelDefaults,
        owner: &mut dyn FnMut() -> Option<String>,
    ) -> Vec<RespectNews> {
        let mut news = Vec::new();
        let owners: BTreeMap<u32, &str> =
            plan.devices.iter().flat_map(|d| d.irqs.iter().map(move |p| (p.irq, d.bdf.as_str()))).collect();
        self.owned.retain(|irq, o| owners.get(irq) == Some(&o.device.as_str()));
        for d in drift {
            let Some(found) = &d.found else { continue };
            if self.owned.contains_key(&d.irq) || classify(d.irq, &d.placed, found, k) != DriftCause::Foreign {
                continue;
            }
            let Some(device) = owners.get(&d.irq) else { continue };
            let owned = Owned {
                irq: d.irq,
                name: d.name.clone(),
                device: device.to_string(),
                mask: found.clone(),
                placed: d.placed.clone(),
                owner: owner(),
            };
            news.push(RespectNews::Respected(owned.clone()));
            self.owned.insert(d.irq, owned);
        }
        for p in plan.devices.iter_mut().flat_map(|d| d.irqs.iter_mut()) {
            let Some(owned) = self.owned.get_mut(&p.irq) else { continue };
            if let Some(current) = &p.current {
                owned.mask = current.clone();
            }
            if !owned.mask.intersects(&k.online) {
                news.push(RespectNews::Released(owned.clone()));
                self.owned.remove(&p.irq);
                continue;
            }
            leave_as_set(p, format!("mask set by {}: left as it is (on_drift = respect)", owned.owner_words()));
        }
        news
    }

    /// Every IRQ left to another writer, for the state file.
    pub fn left(&self) -> Vec<LeftToOther> {
        self.owned
            .values()
            .map(|o| LeftToOther {
                irq: o.irq,
                name: o.name.clone(),
                device: o.device.clone(),
                owner: o.owner.clone().unwrap_or_else(|| "unknown".to_string()),
                mask: o.mask.to_list_string(),
            })
            .collect()
    }

    /// Whether `irq` is left to another owner.
    pub fn contains(&self, irq: u32) -> bool {
        self.owned.contains_key(&irq)
    }

    /// Forgets every respected IRQ (a reloaded configuration starts afresh).
    pub fn clear(&mut self) {
        self.owned.clear();
    }

    pub fn len(&self) -> usize {
        self.owned.len()
    }

    pub fn is_empty(&self) -> bool {
        self.owned.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn defaults(online: &str) -> KernelDefaults {
        KernelDefaults { online: set(online), default_affinity: Some(set("0-63")), ..KernelDefaults::default() }
    }

    #[test]
    fn the_kernels_and_drivers_rewrites_are_not_foreign() {
        let k = defaults("0-5,7-15");
        // CPU 6 went offline: the kernel moved the IRQ to every online CPU.
        assert_eq!(classify(30, &set("6"), &set("0-5,7-15"), &k), DriftCause::KernelFallback);
        // CPU 6 came back before the pass: the fallback mask lacks only CPU 6.
        let back = defaults("0-15");
        assert_eq!(classify(30, &set("6"), &set("0-5,7-15"), &back), DriftCause::KernelFallback);
        // A re-requested IRQ starts on the default affinity's online CPUs.
        let k = KernelDefaults { default_affinity: Some(set("0-3")), ..defaults("0-15") };
        assert_eq!(classify(30, &set("6"), &set("0-3"), &k), DriftCause::DriverReset);
        // virtio_net writes its hint as the mask.
        let mut k = defaults("0-15");
        k.hints.insert(30, set("9"));
        assert_eq!(classify(30, &set("6"), &set("9"), &k), DriftCause::DriverReset);
        assert_eq!(classify(31, &set("6"), &set("9"), &k), DriftCause::Foreign, "another IRQ's hint is not this one's");
        // Housekeeping CPUs only, as tuned or an operator writes them.
        assert_eq!(classify(30, &set("6"), &set("0-9,12-15"), &defaults("0-15")), DriftCause::Foreign);
        // ... unless the kernel notified the IRQ's driver of this pass's hotplug (bnxt_en on 7.0+).
        let k = KernelDefaults { hotplug_writers: [30].into(), ..defaults("0-15") };
        assert_eq!(classify(30, &set("6"), &set("0-9,12-15"), &k), DriftCause::DriverReset);
        assert_eq!(classify(31, &set("6"), &set("0-9,12-15"), &k), DriftCause::Foreign);
    }
}
