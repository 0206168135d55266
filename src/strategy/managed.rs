//! Kernel-managed IRQs: the step after every strategy. A managed queue IRQ can only be predicted,
//! never moved: the kernel spread it with `group_cpus_evenly()` (kernel/irq/affinity.c) when the
//! driver allocated it, queue i → group i.

use std::collections::BTreeSet;

use super::{queue_index, Decision, DeviceContext};
use crate::devices::{DeviceClass, IrqVector, QueueRole};

/// Replaces the decision of every queue IRQ whose placement the kernel computes with the kernel's
/// placement, flagging where the current mask or blk-mq's map differ from it. Other decisions
/// are returned unchanged.
pub fn predict(ctx: &DeviceContext, decisions: Vec<Decision>, known_managed: &BTreeSet<u32>) -> Vec<Decision> {
    ctx.device
        .vectors
        .iter()
        .zip(decisions)
        .map(|(v, d)| match queue_index(v) {
            Some(q) if is_predicted(ctx, v, known_managed) => prediction(ctx, v, q),
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

/// A managed I/O queue IRQ whose placement the kernel computes queue i → group i (NVMe). Other
/// managed IRQs (a NIC queue with a read-only mask) are reported with their current mask: their
/// vector-to-group mapping depends on the driver.
fn is_predicted(ctx: &DeviceContext, v: &IrqVector, known_managed: &BTreeSet<u32>) -> bool {
    v.role == QueueRole::Io && is_managed(ctx, v, known_managed)
}

/// Group `q` of the device's grouping, compared with the IRQ's mask and blk-mq's map.
fn prediction(ctx: &DeviceContext, v: &IrqVector, q: u32) -> Decision {
    let grouping = ctx.queue_grouping();
    let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
    let actual = v.current.as_ref();
    let blk_mq = ctx.device.nvme.as_ref().and_then(|n| n.blk_mq.get(q as usize));
    let mut mismatch = actual.is_some_and(|a| *a != group);
    let mut reason = format!("kernel-managed: expected group {q} of {} = {group}", grouping.queues);
    if let Some(a) = actual.filter(|a| **a != group) {
        reason.push_str(&format!("; kernel shows {a}"));
    }
    if let Some(m) = blk_mq.filter(|m| **m != group) {
        mismatch = true;
        reason.push_str(&format!("; blk-mq maps {m}"));
    }
    Decision { desired: Some(group), managed: true, reason, mismatch: Some(mismatch) }
}
