//! `cluster-group` (the NVMe default): queue i gets group i of the kernel's
//! `group_cpus_evenly()` for the device's queue count, which is exactly the CPU set blk-mq sends
//! to hardware queue i.

use super::{misc_decision, queue_index, Decision, DeviceContext};

/// Queue i (of any queue role) gets group i within the usable CPUs, or the misc target when that
/// group has no usable CPU; non-queue IRQs get the misc target.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    let grouping = ctx.queue_grouping();
    ctx.device
        .vectors
        .iter()
        .map(|v| match queue_index(v) {
            Some(q) => {
                let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
                let inside = &group & &ctx.usable;
                if inside.is_empty() {
                    let why = format!("queue {q}: group {q} ({group}) has no usable CPU, using {}", ctx.misc.why);
                    Decision::fixed(&ctx.misc.cpus, why)
                } else {
                    Decision::fixed(&inside, format!("queue {q}: group {q} of {} (kernel grouping)", grouping.queues))
                }
            }
            None => misc_decision(ctx, v),
        })
        .collect()
}
