//! `numa-hop` (the NIC default): queues in NUMA-hop order from the device's node, the order of
//! the kernel's `cpumask_local_spread()` (by default one thread of every physical core before
//! any SMT sibling), shared with every other NUMA-hop device through [`super::allocator`].

use std::collections::{BTreeMap, BTreeSet};

use super::allocator::{allocate, Demand};
use super::context::QueueAllocation;
use super::{managed, misc_decision, queue_index, Decision, DeviceContext, Reason};
use crate::choices::SpreadOrder;
use crate::cpuset::CpuSet;

/// The order the policy asks for (cores-first by default).
fn order_kind(ctx: &DeviceContext) -> SpreadOrder {
    ctx.policy.order.unwrap_or(SpreadOrder::CoresFirst)
}

/// Queues sharing a CPU (`queues_per_cpu`, at least 1).
fn per_cpu(ctx: &DeviceContext) -> u32 {
    ctx.policy.queues_per_cpu.unwrap_or(1).max(1)
}

/// The device's claim on the machine for the allocator, and the unit key of each of its units
/// in order. Units are `queue / queues_per_cpu` over the queue indexes irqwise places (not the
/// kernel-managed ones), weighted by their distinct queues. The order is computed over the home
/// machine within the CPUs the device may use there, so banned and isolated CPUs do not take a
/// core's first-thread slot.
pub(crate) fn demand(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> (Demand, Vec<u32>) {
    let per_cpu = per_cpu(ctx);
    let mut queues: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for v in &ctx.device.vectors {
        if let Some(q) = queue_index(v).filter(|_| !managed::is_managed(ctx, v, known_managed)) {
            queues.entry(q / per_cpu).or_default().insert(q);
        }
    }
    let mut blocks = ctx.groupings().order_blocks(ctx.home, ctx.node, order_kind(ctx), &ctx.home_usable);
    if blocks.is_empty() && !ctx.home_usable.is_empty() {
        // `hops` from a node without CPUs lists nothing: take the CPUs in id order.
        blocks = vec![ctx.home_usable.iter().collect()].into();
    }
    let demand = Demand {
        node: ctx.node,
        bdf: ctx.device.bdf.clone(),
        blocks,
        usable: ctx.usable.clone(),
        weights: queues.values().map(|q| q.len() as u32).collect(),
        spill: ctx.policy.spill,
    };
    (demand, queues.into_keys().collect())
}

/// The words reasons use for the device's order: `cores-first order from node 1`.
pub(crate) fn order_words(ctx: &DeviceContext) -> String {
    let from = ctx.node.map_or("no node".to_string(), |n| format!("node {n}"));
    format!("{} order from {from}", order_kind(ctx).as_str())
}

/// The allocation of this device alone, for a context planned without the machine-wide step.
fn alone(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> QueueAllocation {
    let (demand, keys) = demand(ctx, known_managed);
    let mut result = allocate(ctx.home, std::slice::from_ref(&demand));
    let assignments = result.devices.pop().unwrap_or_default();
    QueueAllocation {
        units: keys.into_iter().zip(assignments).collect(),
        load: std::rc::Rc::new(result.load),
        order_words: order_words(ctx),
    }
}

/// Queue IRQs go where the allocator put their unit (rx i and tx i together); non-queue IRQs get
/// the misc target. Guarantees every queue IRQ irqwise places one usable CPU when `ctx.usable`
/// is non-empty.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    place_with(ctx, &BTreeSet::new())
}

/// [`place`], with the IRQs learned to be kernel-managed left out of the allocation.
pub(crate) fn place_with(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Vec<Decision> {
    let own;
    let alloc = if let Some(a) = &ctx.queues {
        a
    } else {
        own = alone(ctx, known_managed);
        &own
    };
    let per_cpu = per_cpu(ctx);
    ctx.device
        .vectors
        .iter()
        .map(|v| match queue_index(v) {
            Some(q) => match alloc.units.get(&(q / per_cpu)) {
                Some(a) => {
                    let count = alloc.load.get(&a.cpu).copied().unwrap_or(1);
                    let s = if count == 1 { "" } else { "s" };
                    // "queue Q: CPU C (home H; least loaded in ORDER, N queues there)", or for a
                    // queue off its home "(home H offline; nearest: RING, N queues there)".
                    let why = Reason::new().text("queue ").num(q).text(": CPU ").num(a.cpu).text(" (home ").num(a.home);
                    let why = match &a.displaced {
                        None => why.text("; least loaded in ").text(&alloc.order_words),
                        Some(ring) => {
                            let gone = if ctx.topo.online.contains(a.home) { "not usable" } else { "offline" };
                            why.text(" ").text(gone).text("; nearest: ").text(ring)
                        }
                    };
                    let why = why.text(", ").num(count).text(" queue").text(s).text(" there)").done();
                    Decision::fixed(&CpuSet::single(a.cpu), why)
                }
                None => Decision::leave("kernel-managed: not placed by irqwise"),
            },
            None => misc_decision(ctx, v),
        })
        .collect()
}
