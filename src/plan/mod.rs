//! The Plan: for every IRQ of every device, where it is, where it should be, and what to do.
//!
//! A plan is data. It is computed by [`build::build_plan`] from a topology, the discovered
//! devices and their settings without touching the filesystem, then printed, serialized or
//! applied. Invariants: a `Set` placement always has a `desired` set holding at least one online
//! CPU (it may keep offline ones: a mask with a queue's home CPUs is stable across hotplug);
//! a `Managed` placement is never written.

use serde::{Deserialize, Serialize};

use crate::choices::StrategyName;
use crate::cpuset::CpuSet;
use crate::devices::napi::{NapiSettings, NapiSlot, NapiThreaded};
use crate::devices::{DeviceClass, QueueRole, Recognition};
pub use crate::kernel::nic_resets::ResetRule;
use crate::strategy::Fallback;
use crate::topology::locality::Locality;

pub mod build;
pub mod from_sample;
pub mod grouping;
pub mod guard;
pub(crate) mod held_claims;
pub mod napi_profile;
pub mod napi_threads;
pub mod nic_kernel;
pub mod refine;
mod table;
#[cfg(test)]
pub(crate) mod test_plans;
pub(crate) mod xps_plan;

pub(crate) use build::locate_current;
pub use build::{build_plan, PlanContext};

/// What happens to one IRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Already where it should be.
    Keep,
    /// Write `desired` to `smp_affinity_list` (also when the current mask was unreadable).
    Set,
    /// The kernel owns it; `desired` is the kernel's expected placement, never written.
    Managed,
    /// Deliberately left alone (strategy `leave`, no usable CPU).
    Skip,
}

impl Action {
    /// The name JSON and tables use (`keep`, `set`, `managed`, `skip`).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Keep => "keep",
            Action::Set => "set",
            Action::Managed => "managed",
            Action::Skip => "skip",
        }
    }
}

/// One IRQ's placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub irq: u32,
    pub name: Option<String>,
    pub role: QueueRole,
    pub queue: Option<u32>,
    /// How the role and queue were read from the name (driver table entry, rule, or nothing),
    /// or taken from the kernel's netdev netlink family.
    pub recognised: Recognition,
    /// Where a queue IRQ's queue index comes from: the kernel (`netlink`) or its name (`name`);
    /// absent for IRQs that serve no queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_source: Option<QueueSource>,
    pub managed: bool,
    /// `smp_affinity_list` as read; `None` when unreadable.
    pub current: Option<CpuSet>,
    /// How far `current` can put the IRQ from `desired` (the farthest class of its CPUs; without
    /// a desired set, relative to the device's node); `None` when it cannot be said.
    pub current_locality: Option<Locality>,
    /// Where it should be (for managed IRQs: where the kernel should have put it).
    pub desired: Option<CpuSet>,
    /// The driver's `affinity_hint`, `None` when it gives none.
    pub hint: Option<CpuSet>,
    pub action: Action,
    pub reason: String,
    /// Written instead of `desired`, in order, while the kernel has no free vectors (ENOSPC):
    /// each wider than the last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<Fallback>,
    /// Managed IRQs: whether the kernel's actual mask differs from the prediction (where the
    /// prediction is uncertain, only on the CPUs whose placement irqwise can know).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<bool>,
    /// Managed IRQs whose prediction depends on what irqwise cannot know (the node of a CPU sysfs
    /// does not place): why. Absent when the prediction is certain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertain: Option<String>,
}

impl Placement {
    /// A prediction irqwise cannot fully check that showed no mismatch where it can.
    pub(crate) fn is_uncertain(&self) -> bool {
        self.uncertain.is_some() && self.mismatch != Some(true)
    }
}

/// Where a queue IRQ's queue index comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueSource {
    /// The kernel's netdev netlink family (`queue-get`, `napi-get`).
    Netlink,
    /// The IRQ's name, read with the driver table or a rule's `queue_pattern`.
    Name,
}

/// A queue IRQ whose name says another queue than the kernel does; the kernel's is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueDisagreement {
    pub bdf: String,
    pub irq: u32,
    pub name: Option<String>,
    /// The queue the kernel says the IRQ serves.
    pub kernel_queue: u32,
    /// The queue its name says.
    pub name_queue: u32,
}

/// One NAPI thread of a NIC running threaded NAPI, and where it should run: on the CPUs of the
/// IRQ of its NAPI instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadPlacement {
    pub pid: u32,
    /// `napi/IF-ID`.
    pub name: String,
    pub napi_id: u32,
    /// The IRQ of its NAPI instance; `None` when it cannot be told (the thread is left alone).
    pub irq: Option<u32>,
    /// How the IRQ was found: `netlink` (the kernel names the instance's IRQ or queue) or
    /// `driver-order` (the driver adds one instance per queue, in queue order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<&'static str>,
    /// `Cpus_allowed_list` as read.
    pub current: Option<CpuSet>,
    pub desired: Option<CpuSet>,
    /// `keep`, `set` or `skip` (never `managed`).
    pub action: Action,
    pub reason: String,
    /// The CPU it last ran on, as read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_cpu: Option<u32>,
}

/// One device's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DevicePlan {
    pub bdf: String,
    pub class: DeviceClass,
    pub driver: Option<String>,
    pub name: Option<String>,
    /// The node placement starts from (a rule's override, else the device's own).
    pub node: Option<u32>,
    pub strategy: StrategyName,
    /// Config rules that decided this device (`file:line`), in order.
    pub rules: Vec<String>,
    pub irqs: Vec<Placement>,
    /// A NIC placed by NUMA hop: its transmit steering (`None`: not planned for this device).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xps: Option<xps_plan::XpsPlan>,
    /// A NIC running threaded NAPI: its NAPI threads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub napi_threads: Vec<ThreadPlacement>,
    /// A NIC: what its driver does to masks and NAPI ids across resets on this kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets: Option<ResetRule>,
    /// A NIC: its NAPI instances as the kernel reports them (`napi-get`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<NapiView>,
}

/// One NAPI instance of a NIC as the kernel reports it, with the IRQ that schedules it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NapiView {
    pub id: u32,
    /// Its interface's `ifindex`, and its slot there: what a reset that renumbers the instances
    /// leaves (the daemon's key for the settings it gives back). Not in the JSON: `queue` and
    /// the device say it.
    #[serde(skip)]
    pub ifindex: u32,
    #[serde(skip)]
    pub slot: NapiSlot,
    /// Its IRQ: the one the kernel names, else the IRQ of the queue the kernel says it serves.
    pub irq: Option<u32>,
    /// The lowest receive queue it serves (a transmit queue when it serves none).
    pub queue: Option<u32>,
    /// Its own threaded mode (6.17 and later): `disabled`, `enabled`, `busy-poll`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threaded: Option<NapiThreaded>,
    /// The pid of its thread, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its interrupt mitigation as read (6.13 and later; empty before).
    #[serde(skip_serializing_if = "NapiSettings::is_empty")]
    pub settings: NapiSettings,
    /// What the config's `[napi]` tables ask of it, and what a pass writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<napi_profile::NapiProfilePlan>,
}

/// The counts of one pass: the plan's actions ([`Plan::summary`]), and once applied what the
/// writes did (`written`, `failed`; an IRQ learned to be managed or found gone moves from `set`
/// to `managed` or `skipped`). The one summary of plans, apply reports, `STATUS=` and the state
/// file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub devices: usize,
    pub irqs: usize,
    /// Placements the plan writes.
    pub set: usize,
    /// Already where they should be.
    pub kept: usize,
    pub managed: usize,
    pub skipped: usize,
    /// Managed IRQs whose kernel placement differs from the prediction.
    pub mismatched: usize,
    /// Managed IRQs whose prediction is uncertain and not a mismatch where it can be checked.
    #[serde(default)]
    pub uncertain: usize,
    /// Writes that succeeded (0 until applied).
    pub written: usize,
    /// Writes that failed (0 until applied).
    pub failed: usize,
}

impl Summary {
    /// IRQs where irqwise wants them: written this pass or already there.
    pub fn placed(&self) -> usize {
        self.written + self.kept
    }

    /// The one-line `STATUS=`: "42 IRQs on 5 devices: 30 placed, 12 kernel-managed, 0 failed".
    pub(crate) fn status_line(&self) -> String {
        let skipped = if self.skipped > 0 { format!(", {} left alone", self.skipped) } else { String::new() };
        format!(
            "{} IRQs on {} devices: {} placed, {} kernel-managed{skipped}, {} failed",
            self.irqs,
            self.devices,
            self.placed(),
            self.managed,
            self.failed
        )
    }
}

/// The whole machine's plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub kernel: Option<String>,
    /// The kernel's grouping rule the managed predictions use, and where it comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grouping: Option<grouping::GroupingChoice>,
    pub devices: Vec<DevicePlan>,
    /// Problems met while planning (devices skipped, rules matching nothing).
    pub warnings: Vec<String>,
    /// Queue IRQs whose name says another queue than the kernel (which wins).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queue_disagreements: Vec<QueueDisagreement>,
    /// What a user should know that is not a problem (the kernel cannot say which IRQ serves
    /// which queue, so names are read).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

impl Plan {
    pub fn summary(&self) -> Summary {
        let mut s = Summary { devices: self.devices.len(), ..Summary::default() };
        for p in self.devices.iter().flat_map(|d| &d.irqs) {
            s.irqs += 1;
            match p.action {
                Action::Keep => s.kept += 1,
                Action::Set => s.set += 1,
                Action::Managed => s.managed += 1,
                Action::Skip => s.skipped += 1,
            }
            s.mismatched += usize::from(p.mismatch == Some(true));
            s.uncertain += usize::from(p.is_uncertain());
        }
        s
    }

    /// The placement of `irq`, with its device.
    pub fn find_irq(&self, irq: u32) -> Option<(&DevicePlan, &Placement)> {
        self.devices.iter().find_map(|d| d.irqs.iter().find(|p| p.irq == irq).map(|p| (d, p)))
    }

    /// Placements to write, with their device.
    pub fn writes(&self) -> impl Iterator<Item = (&DevicePlan, &Placement)> {
        self.devices.iter().flat_map(|d| d.irqs.iter().map(move |p| (d, p))).filter(|(_, p)| p.action == Action::Set)
    }

    /// Whether applying the plan would write anything (some placement or NAPI thread is `Set`).
    pub(crate) fn has_pending_writes(&self) -> bool {
        self.writes().next().is_some()
            || self.devices.iter().flat_map(|d| &d.napi_threads).any(|t| t.action == Action::Set)
            || self.napi_writes().next().is_some()
    }

    /// NAPI instances whose settings a pass writes, with their device.
    pub fn napi_writes(&self) -> impl Iterator<Item = (&DevicePlan, &NapiView)> {
        self.devices
            .iter()
            .flat_map(|d| d.napi.iter().map(move |n| (d, n)))
            .filter(|(_, n)| n.profile.as_ref().is_some_and(|p| p.action == Action::Set))
    }

    /// The plan reduced to what needs attention: placements to write and kernel-managed ones that
    /// differ from the prediction, each device kept only if it has such a placement. Kernel,
    /// warnings unchanged.
    pub(crate) fn only_changes(&self) -> Plan {
        let devices = self
            .devices
            .iter()
            .filter_map(|d| {
                let irqs: Vec<Placement> =
                    d.irqs.iter().filter(|p| p.action == Action::Set || p.mismatch == Some(true)).cloned().collect();
                let napi_threads: Vec<ThreadPlacement> =
                    d.napi_threads.iter().filter(|t| t.action == Action::Set).cloned().collect();
                let napi_set = d.napi.iter().any(|n| n.profile.as_ref().is_some_and(|p| p.action == Action::Set));
                (!irqs.is_empty() || !napi_threads.is_empty() || napi_set).then(|| DevicePlan {
                    irqs,
                    napi_threads,
                    ..d.clone()
                })
            })
            .collect();
        Plan {
            kernel: self.kernel.clone(),
            grouping: self.grouping.clone(),
            devices,
            warnings: self.warnings.clone(),
            queue_disagreements: self.queue_disagreements.clone(),
            notices: self.notices.clone(),
        }
    }

    /// The human table printed by `irqwise plan`.
    pub fn to_table(&self) -> String {
        table::render(self, self)
    }

    /// The table of [`Plan::only_changes`], with the counts and warnings of the whole plan.
    pub(crate) fn to_changes_table(&self) -> String {
        table::render(&self.only_changes(), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NAPI thread `pid` of eth0 with `action`.
    fn thread(pid: u32, action: Action) -> ThreadPlacement {
        ThreadPlacement {
            pid,
            name: format!("napi/eth0-{pid}"),
            napi_id: pid,
            irq: Some(pid),
            by: Some("netlink"),
            current: Some(CpuSet::single(0)),
            desired: Some(CpuSet::single(1)),
            action,
            reason: String::new(),
            last_cpu: None,
        }
    }

    #[test]
    fn only_changes_keeps_the_threads_to_move_and_drops_the_others_and_quiet_devices() {
        let nic = |bdf: &str, threads| test_plans::nic(bdf, Vec::new()).with_napi_threads(threads);
        let plan = test_plans::plan_of(vec![
            nic("0000:01:00.0", vec![thread(10, Action::Keep), thread(11, Action::Set), thread(12, Action::Skip)]),
            nic("0000:02:00.0", vec![thread(20, Action::Keep)]),
        ]);
        assert!(plan.has_pending_writes());
        let changes = plan.only_changes();
        assert_eq!(changes.devices.len(), 1, "a device with nothing to do is left out");
        let pids: Vec<u32> = changes.devices[0].napi_threads.iter().map(|t| t.pid).collect();
        assert_eq!((changes.devices[0].bdf.as_str(), pids), ("0000:01:00.0", vec![11]));
    }

    #[test]
    fn each_action_is_named_as_its_json_says() {
        for a in [Action::Keep, Action::Set, Action::Managed, Action::Skip] {
            let json = serde_json::to_value(a).unwrap();
            assert_eq!(json.as_str(), Some(a.as_str()), "{a:?}");
        }
    }

    #[test]
    fn status_line_has_the_documented_shape() {
        let c = Summary { devices: 5, irqs: 42, kept: 27, written: 3, managed: 12, ..Summary::default() };
        assert_eq!(c.status_line(), "42 IRQs on 5 devices: 30 placed, 12 kernel-managed, 0 failed");
        let c = Summary { skipped: 2, ..c };
        assert_eq!(c.status_line(), "42 IRQs on 5 devices: 30 placed, 12 kernel-managed, 2 left alone, 0 failed");
    }
}
