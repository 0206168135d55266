//! The machine's CPUs and NUMA nodes: the model ([`model`]), read from sysfs by [`discover`],
//! shown by [`view`], or built in memory by [`synthetic`]; the CPUs kept free of device IRQs and
//! who asked for it in [`isolation`]; [`locality`] says how near a CPU is to a set of CPUs.

pub mod claims;
pub mod discover;
mod home;
pub mod isolation;
pub(crate) mod kubelet;
pub mod locality;
pub mod memory_file;
mod model;
pub mod synthetic;
pub mod view;

pub(crate) use home::FirstSight;
pub use home::{home_topology, TopologyMemory};
pub use isolation::Isolation;
pub(crate) use model::{round_robin_node, MAX_NUMNODES};
pub use model::{Cpu, NodeSource, NumaNode, OfflineMasks, Topology};
