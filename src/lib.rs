//! irqwise: places device interrupts on the CPUs the kernel itself would choose.
//!
//! Pure core (`cpuset`, `topology` types, `strategy`, `policy`, `plan`) and thin I/O shell
//! (`sysfs`, discovery, `devices`, `config` loading, `apply`, `snapshot`).

pub mod apply;
pub mod cli;
pub mod config;
pub mod cpuset;
pub mod daemon;
pub mod devices;
pub mod engine;
pub mod events;
pub mod plan;
pub mod policy;
pub mod snapshot;
pub mod strategy;
pub mod sysfs;
pub mod topology;
