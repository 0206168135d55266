//! `leave`: the device's IRQs are not touched.

use super::{Decision, DeviceContext};
use crate::devices::Device;

/// Drivers that hand a device's interrupts to a guest or a user-space driver: whoever opened the
/// device placed them (a VM's vCPU pinning, DPDK), so moving them breaks that placement.
pub(crate) const PASSTHROUGH_DRIVERS: &[&str] = &["vfio-pci", "uio_pci_generic", "igb_uio", "pci-stub"];

/// Why `device`'s interrupts belong to someone other than irqwise, if they do: bound to a
/// passthrough driver, or to no driver at all.
pub(crate) fn owner_elsewhere(device: &Device) -> Option<String> {
    match device.driver.as_deref() {
        None => Some("no driver is bound: whoever uses the device owns its IRQs".into()),
        Some(d) if PASSTHROUGH_DRIVERS.contains(&d) => {
            Some(format!("bound to {d} (passthrough): the guest or user-space driver owns its IRQs"))
        }
        Some(_) => None,
    }
}

/// Every vector left as it is; the reason says whose the IRQs are when the device is passed
/// through and no rule chose `leave`.
pub fn place(ctx: &DeviceContext) -> Vec<Decision> {
    let why = match (ctx.policy.strategy, owner_elsewhere(ctx.device)) {
        (None, Some(owner)) => format!("left alone by default: {owner}"),
        (None, None) => format!("left alone by default for class {}", ctx.device.class.as_str()),
        (Some(_), _) => "strategy leave: not touched".to_string(),
    };
    ctx.device.vectors.iter().map(|_| Decision::leave(&why)).collect()
}
