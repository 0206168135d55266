//! irqwise: places device interrupts on the CPUs the kernel itself would choose.
//!
//! Pure core (`cpuset`, `topology` types, `strategy`, `plan`) and thin I/O shell (`sysfs`,
//! discovery, `apply`, `snapshot`).

pub mod apply;
pub mod cli;
pub mod cpuset;
pub mod snapshot;
pub mod strategy;
pub mod sysfs;
pub mod topology;
