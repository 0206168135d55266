//! `pin`: every IRQ on the configured CPUs.

use super::{misc_decision, queue_index, Decision, DeviceContext};

/// Every vector on the CPUs of the rule's `cpus` the device may use (offline ones kept while one
/// is online); with `admin_cpus`, non-queue vectors go there instead.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    let admin = ctx.policy.admin_cpus.is_some();
    ctx.device
        .vectors
        .iter()
        .map(|v| match queue_index(v) {
            None if admin => misc_decision(ctx, v),
            _ => Decision::fixed(&ctx.stable(&ctx.home_usable), "pinned to the configured CPUs".into()),
        })
        .collect()
}
