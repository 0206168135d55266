//! Devices built in memory, for tests that plan without a root: a vector as a driver-table
//! recognised name gives it, and an `ice` NIC holding given vectors.
#![allow(dead_code)]

use irqwise::cpuset::CpuSet;
use irqwise::devices::{Device, DeviceClass, IrqVector, QueueRole, Recognition};

/// IRQ `irq` named `v{irq}`, recognised as `role` (queue `queue`), currently on `current`.
pub fn vector(irq: u32, role: QueueRole, queue: Option<u32>, current: &CpuSet) -> IrqVector {
    IrqVector {
        irq,
        name: Some(format!("v{irq}")),
        role,
        queue,
        recognised: Recognition::Table { driver: "test", pattern: "v{q}" },
        managed: false,
        current: Some(current.clone()),
        hint: None,
    }
}

/// An `ice` NIC at `bdf` on `node` with `vectors`, interface `interface` when given.
pub fn nic(bdf: &str, node: Option<u32>, interface: Option<&str>, vectors: Vec<IrqVector>) -> Device {
    Device {
        bdf: bdf.into(),
        class: DeviceClass::Nic,
        pci_class: 0x020000,
        vendor: None,
        device: None,
        driver: Some("ice".into()),
        name: interface.map(Into::into),
        interfaces: interface.into_iter().map(Into::into).collect(),
        node,
        local_cpus: None,
        vectors,
        nvme: None,
    }
}
