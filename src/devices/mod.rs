//! Devices: the model ([`model`]), the pure reading of IRQ names ([`irq_names`]), and discovery
//! from sysfs/procfs ([`discover`]).

pub mod discover;
pub mod irq_names;
mod model;

pub use discover::{discover_devices, udev_properties, DeviceError, DevicesError, Discovery, PCI_DEVICES};
pub use irq_names::{classify, parse_proc_interrupts};
pub use model::{Device, DeviceClass, IrqVector, NvmeInfo, QueueRole};
