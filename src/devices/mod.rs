//! Devices: the model ([`model`]), the pure reading of IRQ names ([`irq_names`], the driver
//! table [`name_table`] and [`recognise`]), a NIC's transmit queues ([`net_queues`]), and discovery
//! from sysfs/procfs ([`discover`]).

pub mod discover;
pub mod irq_names;
mod model;
pub mod name_table;
pub mod napi;
pub mod net_queues;
pub mod recognise;

pub use irq_names::parse_proc_interrupts;
pub(crate) use model::NO_DEVICE;
pub use model::{Device, DeviceClass, IrqVector, LooseIrq, NvmeInfo, QueueRole, Recognition};
pub use recognise::QueuePatternError;
pub use recognise::Recognised;
pub use recognise::{recognise_device, NameContext, QueuePattern};
