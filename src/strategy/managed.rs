//! Kernel-managed IRQs: the step after every strategy. A managed queue IRQ can only be predicted,
//! never moved: the kernel spread it with `group_cpus_evenly()` (kernel/irq/affinity.c,
//! `irq_create_affinity_masks()`) when the driver allocated it.
//!
//! Predicted: NVMe I/O queues (queue i → group i, per IRQ set), and storage HBAs whose vector
//! names carry the MSI-X index and whose managed vectors are known (read-only masks): the
//! leading unmanaged vectors are the driver's pre-vectors, the trailing ones its post-vectors,
//! and the rest are spread as one set. Other managed IRQs are reported with their current mask
//! and never claimed to match anything.

use std::collections::BTreeSet;

use super::{queue_index, Decision, DeviceContext};
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, IrqVector, QueueRole};
use crate::kernel::group_cpus_evenly;

/// Replaces the decision of every IRQ whose placement the kernel computes with the kernel's
/// placement (flagging where the current mask or blk-mq's map differ from it), and for storage
/// HBAs the decision of every managed IRQ with a report of where the driver put it. Other
/// decisions are returned unchanged.
pub fn predict(ctx: &DeviceContext, decisions: Vec<Decision>, known_managed: &BTreeSet<u32>) -> Vec<Decision> {
    let storage = ctx.device.class == DeviceClass::Storage;
    let layout = if storage { StorageLayout::of(ctx, known_managed) } else { None };
    ctx.device
        .vectors
        .iter()
        .zip(decisions)
        .map(|(v, d)| match queue_index(v) {
            Some(q) if is_predicted(ctx, v, known_managed) => prediction(ctx, v, q),
            Some(q) if storage && is_managed(ctx, v, known_managed) => match &layout {
                Some(l) => l.prediction(v, q),
                None => chosen_by_driver(ctx, v),
            },
            None if storage && is_managed(ctx, v, known_managed) => chosen_by_driver(ctx, v),
            _ => d,
        })
        .collect()
}

/// Kernel-managed as far as we know: read-only mode, a failed write remembered, or the nvme
/// driver's I/O queues (it always allocates them with PCI_IRQ_AFFINITY).
pub fn is_managed(ctx: &DeviceContext, v: &IrqVector, known_managed: &BTreeSet<u32>) -> bool {
    let dev = ctx.device;
    v.managed
        || known_managed.contains(&v.irq)
        || (dev.class == DeviceClass::Nvme && dev.driver.as_deref() == Some("nvme") && v.role == QueueRole::Io)
}

/// A managed NVMe I/O queue IRQ, whose placement the kernel computes queue i → group i of its
/// IRQ set. Other managed IRQs of non-storage devices (a NIC queue with a read-only mask) are
/// reported with their current mask: their vector-to-group mapping depends on the driver.
fn is_predicted(ctx: &DeviceContext, v: &IrqVector, known_managed: &BTreeSet<u32>) -> bool {
    ctx.device.class != DeviceClass::Storage && v.role == QueueRole::Io && is_managed(ctx, v, known_managed)
}

/// A managed IRQ placed where the driver chose, reported as it is.
fn chosen_by_driver(ctx: &DeviceContext, v: &IrqVector) -> Decision {
    let driver = ctx.device.driver.as_deref().unwrap_or("its driver");
    Decision {
        desired: v.current.clone(),
        managed: true,
        reason: format!("kernel-managed: placement chosen by the driver ({driver}); irqwise predicts none here"),
        mismatch: None,
    }
}

/// Group `q` of the device's grouping, compared with the IRQ's mask and blk-mq's map.
fn prediction(ctx: &DeviceContext, v: &IrqVector, q: u32) -> Decision {
    let grouping = ctx.queue_grouping();
    let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
    let blk_mq = ctx.device.nvme.as_ref().and_then(|n| n.blk_mq.get(q as usize));
    let expected = if grouping.sets.len() > 1 {
        let (set, index, size) = grouping.locate(q);
        let kind = if set == 0 { "default (write)" } else { "read" };
        format!("group {index} of the {kind} set of {size} = {group}")
    } else {
        format!("group {q} of {} = {group}", grouping.queues)
    };
    compared(format!("kernel-managed: expected {expected}"), group, v.current.as_ref(), blk_mq)
}

/// The managed decision for `want`, flagged where the IRQ's mask or blk-mq's map differ.
fn compared(mut reason: String, want: CpuSet, actual: Option<&CpuSet>, blk_mq: Option<&CpuSet>) -> Decision {
    let mut mismatch = actual.is_some_and(|a| *a != want);
    if let Some(a) = actual.filter(|a| **a != want) {
        reason.push_str(&format!("; kernel shows {a}"));
    }
    if let Some(m) = blk_mq.filter(|m| **m != want) {
        mismatch = true;
        reason.push_str(&format!("; blk-mq maps {m}"));
    }
    Decision { desired: Some(want), managed: true, reason, mismatch: Some(mismatch) }
}

/// A storage HBA's vectors as `irq_create_affinity_masks()` laid them out: `pre` unmanaged
/// vectors, then `groups.len()` managed ones spread as one set, then unmanaged post-vectors.
struct StorageLayout {
    pre: u32,
    groups: Vec<CpuSet>,
}

impl StorageLayout {
    /// The layout when it can be known: every vector's MSI-X index read from its name (indexes
    /// 0..n, each once), every managed one known, and the managed ones one contiguous run.
    fn of(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Option<StorageLayout> {
        let n = ctx.device.vectors.len();
        let mut managed_at: Vec<Option<bool>> = vec![None; n];
        for v in &ctx.device.vectors {
            let slot = managed_at.get_mut(queue_index(v)? as usize)?;
            if slot.replace(v.managed || known_managed.contains(&v.irq)).is_some() {
                return None;
            }
        }
        let flags: Vec<bool> = managed_at.into_iter().collect::<Option<_>>()?;
        let pre = flags.iter().position(|&m| m)?;
        let run = flags[pre..].iter().take_while(|&&m| m).count();
        if flags[pre + run..].iter().any(|&m| m) {
            return None;
        }
        let groups = group_cpus_evenly(ctx.topo, run, ctx.group_rules).groups;
        Some(StorageLayout { pre: pre as u32, groups })
    }

    /// The kernel's mask for the vector of MSI-X index `q`.
    fn prediction(&self, v: &IrqVector, q: u32) -> Decision {
        let index = q - self.pre;
        let group = self.groups.get(index as usize).cloned().unwrap_or_default();
        let reason = format!(
            "kernel-managed: expected group {index} of {} = {group} (after {} pre-vectors)",
            self.groups.len(),
            self.pre
        );
        compared(reason, group, v.current.as_ref(), None)
    }
}
