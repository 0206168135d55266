//! `cluster-group` (the NVMe default): queue i gets group i of the kernel's
//! `group_cpus_evenly()` for the device's queue count, which is exactly the CPU set blk-mq sends
//! to hardware queue i.

use super::{misc_decision, queue_index, Decision, DeviceContext, Reason};

/// Queue i (of any queue role) gets group i within the CPUs the device may use (keeping its
/// offline ones while one is online, so hotplug does not rewrite it), or the misc target when
/// that group has no usable CPU; non-queue IRQs get the misc target.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    let grouping = ctx.queue_grouping();
    ctx.device
        .vectors
        .iter()
        .map(|v| match queue_index(v) {
            Some(q) => {
                let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
                let inside = ctx.stable(&group);
                if inside.is_empty() {
                    let why = format!("queue {q}: group {q} ({group}) has no usable CPU, using {}", ctx.misc.why);
                    Decision::fixed(&ctx.misc.cpus, why)
                } else {
                    let (set, index, size) = grouping.locate(q);
                    let why = Reason::new().text("queue ").num(q).text(": group ");
                    let why = if grouping.sets.len() > 1 {
                        why.num(index).text(" of IRQ set ").num(set).text(" (").num(size).text(" queues)")
                    } else {
                        why.num(q).text(" of ").num(grouping.queues)
                    };
                    let why = why.text(" (kernel grouping)").done();
                    Decision::fixed(&inside, why)
                }
            }
            None => misc_decision(ctx, v),
        })
        .collect()
}
