//! irqwise: places device interrupts on the CPUs the kernel itself would choose.
//!
//! A pass reads a [`sample`] of the machine, plans it with pure code ([`plan`]) and applies the
//! plan ([`apply`]). Pure core, no I/O: [`cpuset`], the [`topology`] and [`devices`] models, the
//! [`choices`] a configuration makes, the kernel's own algorithms ([`kernel`]), [`config`]
//! validation, [`policy`], device strategies ([`strategy`]), the [`sample`] and the [`plan`]. The
//! shell around it: [`sysfs`] (every read and write under a root), discovery
//! ([`topology::discover`], [`devices::discover`]), the sample's reader ([`sample::reader`]),
//! [`apply`], [`pass`] (the command line's pass), [`events`], [`daemon`], [`snapshot`],
//! [`report`] (where interrupts land, pure but for its reads) and the [`cli`] on top.
//! `ARCHITECTURE.md` has the map: the floors, what each may import, where each command lives.

// Nothing outside tests unwraps, expects or panics on what it reads or is told: every input
// error is a value with a message (`Cargo.toml` has the other lints; these only bind the library
// and the binary, not the tests).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod advise;
pub mod apply;
pub mod choices;
pub mod cli;
pub mod config;
pub mod cpuset;
pub mod daemon;
pub mod devices;
pub mod diff;
pub mod events;
pub mod import_irqbalance;
pub mod kernel;
pub mod pass;
pub mod plan;
pub mod policy;
pub mod probe;
pub mod report;
pub mod sample;
pub mod snapshot;
pub mod strategy;
pub mod sysfs;
pub mod text;
pub mod topology;

/// The version of every JSON document irqwise writes (plan, apply, status and its state file,
/// topology, spread, check-config), its first key: tools check it before reading the rest.
pub const JSON_SCHEMA: u32 = 2;
