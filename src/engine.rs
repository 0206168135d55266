//! One pass: discover the machine, resolve config per device, plan, and apply the plan.
//!
//! The CLI's `plan`/`apply` and the daemon share these two functions, so a daemon pass and a
//! one-shot `apply` always agree. Guarantee: [`apply_plan`] writes only `Set` placements and
//! carries on past every per-IRQ failure.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::apply::{apply_writes, AffinityWrite, AffinityWriter, FailureClass, WriteOutcome};
use crate::config::{Config, DeviceClassName};
use crate::cpuset::CpuSet;
use crate::devices::{discover_devices, Device, DeviceClass, DevicesError};
use crate::plan::{build_plan, Plan, PlanContext, StrategyName};
use crate::policy::{resolve, unmatched_rules, DeviceFacts};
use crate::strategy::cluster_group::GroupRules;
use crate::strategy::KernelVersion;
use crate::sysfs::Root;
use crate::topology::{Topology, TopologyError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Devices(#[from] DevicesError),
}

/// The kernel grouping rules when the release is unknown: those of current kernels.
const FALLBACK_KERNEL: KernelVersion = KernelVersion { major: 6, minor: 11 };

/// Everything one planning pass saw and decided.
#[derive(Debug)]
pub struct PlannedPass {
    pub topology: Topology,
    pub devices: Vec<Device>,
    pub plan: Plan,
}

/// What config matching sees of a device.
pub fn device_facts(d: &Device) -> DeviceFacts {
    let class = match d.class {
        DeviceClass::Nic => DeviceClassName::Nic,
        DeviceClass::Nvme => DeviceClassName::Nvme,
        DeviceClass::Other => DeviceClassName::Other,
    };
    let mut facts = DeviceFacts::new(d.bdf.clone(), class);
    facts.driver = d.driver.clone();
    facts.interfaces = d.interfaces.clone();
    facts.nvme_model = d.nvme.as_ref().and_then(|n| n.model.clone());
    facts.nvme_serial = d.nvme.as_ref().and_then(|n| n.serial.clone());
    facts
}

/// udev properties (`E:KEY=VALUE` lines of udevd's database) of the PCI device and of its
/// network interfaces; empty where udevd does not run. Later sources win per key.
pub fn udev_properties(root: &Root, d: &Device) -> BTreeMap<String, String> {
    let mut files = vec![format!("run/udev/data/+pci:{}", d.bdf)];
    for ifname in &d.interfaces {
        if let Ok(Some(index)) = root.read_optional(format!("sys/class/net/{ifname}/ifindex")) {
            files.push(format!("run/udev/data/n{}", index.trim()));
        }
    }
    let mut props = BTreeMap::new();
    for text in files.iter().filter_map(|f| root.read_optional(f).ok().flatten()) {
        for (k, v) in text.lines().filter_map(|l| l.strip_prefix("E:")).filter_map(|kv| kv.split_once('=')) {
            props.insert(k.to_string(), v.to_string());
        }
    }
    props
}

/// The machine's possible CPUs, which config CPU lists are validated against, as topology
/// discovery reads them: a root without `cpu/possible` (older kernels, trimmed dumps) gives the
/// `cpuN` directories. The CLI and the daemon both validate against this set.
pub fn possible_cpus(root: &Root) -> Result<CpuSet, TopologyError> {
    Topology::discover_possible(root)
}

/// Grouping rules of the root's kernel (`osrelease`), else of current kernels.
pub fn group_rules(topo: &Topology) -> GroupRules {
    GroupRules::for_kernel(kernel_version(topo).unwrap_or(FALLBACK_KERNEL))
}

/// The root's kernel version; `None` when `osrelease` is absent or not a version.
fn kernel_version(topo: &Topology) -> Option<KernelVersion> {
    topo.kernel.as_deref().and_then(|k| KernelVersion::parse(k).ok())
}

/// The plan warning for a kernel release that is there but not a version (the managed-IRQ
/// predictions then follow [`FALLBACK_KERNEL`]'s rules and may be wrong).
fn kernel_warning(root: &Root, topo: &Topology) -> Option<String> {
    let release = topo.kernel.as_deref().filter(|_| kernel_version(topo).is_none())?;
    Some(format!(
        "{}: {release:?} is not a kernel version (expected MAJOR.MINOR...); predicting with the grouping rules of {FALLBACK_KERNEL}",
        root.path("proc/sys/kernel/osrelease").display()
    ))
}

/// Discovers topology and devices under `root` and plans them with `config`.
pub fn plan_pass(root: &Root, config: &Config, known_managed: &BTreeSet<u32>) -> Result<PlannedPass, EngineError> {
    let topology = Topology::discover(root)?;
    let discovery = discover_devices(root, &topology)?;
    let facts: Vec<DeviceFacts> = discovery
        .devices
        .iter()
        .map(|d| DeviceFacts { properties: udev_properties(root, d), ..device_facts(d) })
        .collect();
    let policies: Vec<_> = facts.iter().map(|f| resolve(config, f)).collect();
    let ctx = PlanContext {
        topo: &topology,
        group_rules: group_rules(&topology),
        respect_isolation: config.global.respect_isolation,
        known_managed,
    };
    let mut plan = build_plan(&ctx, &discovery.devices, &policies);
    plan.warnings.extend(kernel_warning(root, &topology));
    plan.warnings.extend(discovery.warnings.iter().map(|w| w.to_string()));
    plan.warnings.extend(unmatched_rules(config, &facts).into_iter().map(|r| format!("rule at {r} matches no device")));
    Ok(PlannedPass { topology, devices: discovery.devices, plan })
}

/// How one planned write ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum ChangeResult {
    Written,
    /// ENOSPC on the desired CPUs; the node's CPUs were written instead.
    WrittenFallback,
    /// EIO/EPERM or a read-only file: the kernel manages it (remembered for later passes).
    Managed,
    /// The IRQ disappeared (device removed) between plan and write.
    Gone,
    Failed {
        class: FailureClass,
        error: String,
    },
}

/// One IRQ the pass tried to move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub irq: u32,
    pub irq_name: Option<String>,
    pub device: String,
    pub device_name: Option<String>,
    pub driver: Option<String>,
    pub queue: Option<u32>,
    pub strategy: StrategyName,
    pub reason: String,
    pub old: Option<CpuSet>,
    /// What is now in `smp_affinity_list` (the desired or the fallback set), if written.
    pub new: Option<CpuSet>,
    /// Flattened: `"result": "failed", "class": ..., "error": ...` beside the other keys.
    #[serde(flatten)]
    pub result: ChangeResult,
}

/// Counts of one applied pass. `kept`/`managed`/`skipped` come from the plan; `managed` also
/// counts IRQs learned to be managed by a failed write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ApplySummary {
    pub written: usize,
    pub kept: usize,
    pub managed: usize,
    pub skipped: usize,
    pub failed: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    pub changes: Vec<Change>,
    pub summary: ApplySummary,
    /// IRQs whose write failed with EIO/EPERM: the next plan treats them as managed.
    pub learned_managed: Vec<u32>,
}

impl ApplyReport {
    /// True when every IRQ ended as planned or was correctly left alone.
    pub fn all_ok(&self) -> bool {
        self.summary.failed == 0
    }
}

/// Writes every `Set` placement of `plan` through `writer`.
pub fn apply_plan(plan: &Plan, writer: &dyn AffinityWriter) -> ApplyReport {
    let todo: Vec<_> = plan.writes().collect();
    let writes: Vec<AffinityWrite> = todo
        .iter()
        .filter_map(|(_, p)| {
            p.desired.clone().map(|cpus| AffinityWrite { irq: p.irq, cpus, fallback: p.fallback.clone() })
        })
        .collect();
    let outcomes = apply_writes(writer, &writes);
    let s = plan.summary();
    let mut report = ApplyReport {
        summary: ApplySummary { kept: s.keep, managed: s.managed, skipped: s.skip, ..ApplySummary::default() },
        ..ApplyReport::default()
    };
    for ((dev, p), (_, outcome)) in todo.iter().zip(outcomes) {
        let (result, new) = match outcome {
            WriteOutcome::Written { cpus, .. } => (ChangeResult::Written, Some(cpus)),
            WriteOutcome::WrittenFallback { cpus, .. } => (ChangeResult::WrittenFallback, Some(cpus)),
            WriteOutcome::Failed { class: FailureClass::Managed, .. } => (ChangeResult::Managed, None),
            WriteOutcome::Failed { class: FailureClass::Gone, .. } => (ChangeResult::Gone, None),
            WriteOutcome::Failed { class, error } => (ChangeResult::Failed { class, error }, None),
        };
        match &result {
            ChangeResult::Written | ChangeResult::WrittenFallback => report.summary.written += 1,
            ChangeResult::Managed => {
                report.summary.managed += 1;
                report.learned_managed.push(p.irq);
            }
            ChangeResult::Gone => report.summary.skipped += 1,
            ChangeResult::Failed { .. } => report.summary.failed += 1,
        }
        report.changes.push(Change {
            irq: p.irq,
            irq_name: p.name.clone(),
            device: dev.bdf.clone(),
            device_name: dev.name.clone(),
            driver: dev.driver.clone(),
            queue: p.queue,
            strategy: dev.strategy,
            reason: p.reason.clone(),
            old: p.current.clone(),
            new,
            result,
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udev_properties_come_from_the_pci_and_net_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Root::new(dir.path());
        std::fs::create_dir_all(dir.path().join("run/udev/data")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("sys/class/net/eth7")).expect("mkdir");
        std::fs::write(dir.path().join("sys/class/net/eth7/ifindex"), "7\n").expect("write");
        std::fs::write(
            dir.path().join("run/udev/data/+pci:0000:81:00.0"),
            "I:1\nE:ID_PATH=pci-0000:81:00.0\nE:X=pci\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("run/udev/data/n7"), "E:ID_NET_NAME_PATH=enp129s0\nE:X=net\nG:junk\n")
            .expect("write");
        let d = Device {
            bdf: "0000:81:00.0".into(),
            class: DeviceClass::Nic,
            pci_class: 0x020000,
            vendor: None,
            device: None,
            driver: Some("ice".into()),
            name: Some("eth7".into()),
            interfaces: vec!["eth7".into()],
            node: Some(1),
            local_cpus: None,
            vectors: Vec::new(),
            nvme: None,
        };
        let props = udev_properties(&root, &d);
        assert_eq!(props.get("ID_PATH").map(String::as_str), Some("pci-0000:81:00.0"));
        assert_eq!(props.get("ID_NET_NAME_PATH").map(String::as_str), Some("enp129s0"));
        assert_eq!(props.get("X").map(String::as_str), Some("net"), "the interface's entry is read last");
        assert_eq!(props.len(), 3);
    }
}
