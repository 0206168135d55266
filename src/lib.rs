//! irqwise: places device interrupts on the CPUs the kernel itself would choose.
//!
//! Pure core (`cpuset`, `topology` types, `strategy`) and thin I/O shell (`sysfs`, discovery).

pub mod cpuset;
pub mod events;
pub mod strategy;
pub mod sysfs;
pub mod topology;
