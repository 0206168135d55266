//! irqwise: places device interrupts on the CPUs the kernel itself would choose.
//!
//! Pure core, no I/O: [`cpuset`], the [`topology`] and [`devices`] models, the kernel's own
//! algorithms ([`kernel`]), device strategies ([`strategy`]), [`policy`] and [`plan`]. The shell
//! around it: [`sysfs`] (every read and write under a root), discovery
//! ([`topology::discover`], [`devices::discover`]), [`config`] loading, [`apply`], [`engine`]
//! (one pass), [`events`], [`daemon`], [`snapshot`], [`landing`] (where interrupts land, pure
//! but for its reads) and the [`cli`] on top.

pub mod apply;
pub mod choices;
pub mod cli;
pub mod config;
pub mod cpuset;
pub mod daemon;
pub mod devices;
pub mod events;
pub mod import_irqbalance;
pub mod kernel;
pub mod pass;
pub mod plan;
pub mod policy;
pub mod report;
pub mod sample;
pub mod snapshot;
pub mod strategy;
pub mod sysfs;
pub mod text;
pub mod topology;

/// The version of every JSON document irqwise writes (plan, apply, status and its state file,
/// topology, spread, check-config), its first key: tools check it before reading the rest.
pub const JSON_SCHEMA: u32 = 1;
