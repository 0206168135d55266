//! The machine's CPUs and NUMA nodes: the model ([`model`]), read from sysfs by [`discover`],
//! shown by [`view`], or built in memory by [`synthetic`]; the CPUs kept free of device IRQs and
//! who asked for it in [`isolation`]; [`locality`] says how near a CPU is to a set of CPUs.

pub mod discover;
mod home;
pub mod isolation;
pub mod locality;
pub mod memory_file;
mod model;
pub mod synthetic;
pub mod view;

pub use home::{home_topology, FirstSight, TopologyMemory};
pub use isolation::Isolation;
pub use model::{round_robin_node, Cpu, NodeSource, NumaNode, OfflineMasks, Topology, MAX_NUMNODES};
