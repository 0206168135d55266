//! `leave`: the device's IRQs are not touched.

use super::{Decision, DeviceContext};

/// Every vector left as it is.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    ctx.device.vectors.iter().map(|_| Decision::leave("strategy leave: not touched")).collect()
}
