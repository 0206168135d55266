//! The machine's CPUs and NUMA nodes: the model ([`model`]), read from sysfs by [`discover`],
//! shown by [`report`], or built in memory by [`synthetic`].

pub mod discover;
mod home;
pub mod memory_file;
mod model;
pub mod report;
pub mod synthetic;

pub use discover::TopologyError;
pub use home::{home_topology, FirstSight, TopologyMemory};
pub use model::{round_robin_node, Cpu, NodeSource, NumaNode, OfflineMasks, Topology, MAX_NUMNODES};
