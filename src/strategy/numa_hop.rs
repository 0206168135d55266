//! `numa-hop` (the NIC default): queue i on the i-th usable CPU in NUMA-hop order from the
//! device's node, the order of the kernel's `cpumask_local_spread()` (by default one thread of
//! every physical core before any SMT sibling).

use super::{misc_decision, queue_index, Decision, DeviceContext};
use crate::cpuset::CpuSet;
use crate::kernel::{spread_order, SpreadOrder};

/// Queue IRQs walk the order, `queues_per_cpu` to a CPU, wrapping when there are more queues
/// than CPUs (rx i and tx i share CPU i); non-queue IRQs get the misc target. Guarantees every
/// queue IRQ one usable CPU when `ctx.usable` is non-empty.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    let order_kind = ctx.policy.order.unwrap_or(SpreadOrder::CoresFirst);
    let order: Vec<u32> =
        spread_order(ctx.topo, ctx.node, order_kind).into_iter().filter(|c| ctx.usable.contains(*c)).collect();
    // spread_order lists online CPUs only; `usable` may hold CPUs it skipped (never, but be safe).
    let order = if order.is_empty() { ctx.usable.iter().collect() } else { order };
    let per_cpu = ctx.policy.queues_per_cpu.unwrap_or(1).max(1);
    let from = ctx.node.map_or("no node".to_string(), |n| format!("node {n}"));
    ctx.device
        .vectors
        .iter()
        .map(|v| match queue_index(v) {
            Some(q) if !order.is_empty() => {
                let slot = (q / per_cpu) as usize % order.len();
                let reason = format!("queue {q}: CPU #{slot} in {} order from {from}", order_kind.as_str());
                Decision::fixed(&CpuSet::single(order[slot]), reason)
            }
            _ => misc_decision(ctx, v),
        })
        .collect()
}
