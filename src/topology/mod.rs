//! The machine's CPUs and NUMA nodes: the model ([`model`]), read from sysfs by [`discover`],
//! shown by [`report`], or built in memory by [`synthetic`]; [`locality`] says how near a CPU is
//! to a set of CPUs.

pub mod discover;
pub mod locality;
mod model;
pub mod report;
pub mod synthetic;

pub use discover::TopologyError;
pub use model::{Cpu, NumaNode, OfflineMasks, Topology, MAX_NUMNODES};
