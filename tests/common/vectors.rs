//! Golden-vector loading (`tests/data/vectors/`, schema `kalgo-golden/1`): each file becomes a
//! [`Topology`] exactly as the kernel sees it plus its cases.
//!
//! Include with `#[path = "common/vectors.rs"] mod vectors;`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use irqwise::cpuset::CpuSet;
use irqwise::topology::{Cpu, NumaNode, OfflineMasks, Topology};
use serde::Deserialize;

/// `tests/data/vectors/`.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors")
}

#[derive(Debug, Deserialize)]
pub struct Index {
    pub schema: String,
    pub files: Vec<IndexEntry>,
}

#[derive(Debug, Deserialize)]
pub struct IndexEntry {
    pub file: String,
    pub description: String,
    pub group_cases: usize,
    pub spread_cases: usize,
}

/// `index.json`.
pub fn index() -> Index {
    let path = vectors_dir().join("index.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One vector file as stored.
#[derive(Debug, Deserialize)]
pub struct VectorFile {
    pub schema: String,
    pub name: String,
    pub description: String,
    pub topology: VectorTopology,
    pub cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
pub struct VectorTopology {
    pub nr_cpu_ids: u32,
    pub nr_node_ids: u32,
    pub offline_topology_masks: String,
    pub cpus: Vec<VectorCpu>,
    pub node_distance: Vec<Vec<u32>>,
    pub derived: Derived,
}

#[derive(Debug, Deserialize)]
pub struct VectorCpu {
    pub cpu: u32,
    pub node: u32,
    pub present: bool,
    pub online: bool,
}

#[derive(Debug, Deserialize)]
pub struct Derived {
    pub possible: CpuSet,
    pub present: CpuSet,
    pub online: CpuSet,
    pub nodes_with_online_cpus: Vec<u32>,
    pub topology_sibling_cpumask: BTreeMap<u32, CpuSet>,
    pub topology_cluster_cpumask: BTreeMap<u32, CpuSet>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "op")]
pub enum Case {
    #[serde(rename = "group_cpus_evenly")]
    Groups(GroupCase),
    #[serde(rename = "numa_spread")]
    Spread(SpreadCase),
}

#[derive(Debug, Deserialize)]
pub struct GroupCase {
    pub numgrps: usize,
    pub results: Vec<GroupResult>,
}

#[derive(Debug, Deserialize)]
pub struct GroupResult {
    /// `mainline` or `cluster_aware`.
    pub algorithm: String,
    /// `heapsort-v5.1`, `heapsort-v6.9` or `heapsort-v6.11`.
    pub sort: String,
    pub kernels: String,
    pub nummasks: usize,
    pub pass_groups: [usize; 2],
    pub groups: Vec<CpuSet>,
}

#[derive(Debug, Deserialize)]
pub struct SpreadCase {
    /// -1 = NUMA_NO_NODE.
    pub node: i64,
    pub nearest_cpu_node: i64,
    pub numa_levels: Vec<u32>,
    pub cpumask_local_spread: Vec<u32>,
    pub for_each_numa_hop_mask: Vec<u32>,
    pub hops: Vec<VectorHop>,
    pub cpumask_local_spread_legacy: Vec<u32>,
}

#[derive(Debug, Deserialize)]
pub struct VectorHop {
    pub level: usize,
    pub distance: u32,
    pub new_cpus: CpuSet,
}

/// Reads and parses one vector file of the index.
pub fn load(file: &str) -> VectorFile {
    let path = vectors_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads one vector file into the topology it describes and its cases.
pub fn load_topology_and_cases(file: &str) -> (Topology, Vec<Case>) {
    let v = load(file);
    (v.topology.to_topology(), v.cases)
}

impl VectorTopology {
    /// The kernel's view as a [`Topology`]: every possible CPU carries the vector's derived
    /// sibling and cluster masks (so the offline-mask mode is already applied), nodes
    /// `0..nr_node_ids` hold their possible CPUs and SLIT rows.
    pub fn to_topology(&self) -> Topology {
        let d = &self.derived;
        let mut topo = Topology {
            possible: d.possible.clone(),
            present: d.present.clone(),
            online: d.online.clone(),
            offline_masks: match self.offline_topology_masks.as_str() {
                "self" => OfflineMasks::SelfOnly,
                _ => OfflineMasks::Empty,
            },
            ..Default::default()
        };
        for vc in &self.cpus {
            let mut cpu = Cpu::bare(vc.cpu);
            cpu.present = vc.present;
            cpu.online = vc.online;
            cpu.node = Some(vc.node);
            cpu.core = Some(d.topology_sibling_cpumask.get(&vc.cpu).cloned().unwrap_or_default());
            cpu.cluster = Some(d.topology_cluster_cpumask.get(&vc.cpu).cloned().unwrap_or_default());
            topo.cpus.insert(vc.cpu, cpu);
        }
        for id in 0..self.nr_node_ids {
            let cpus = self.cpus.iter().filter(|c| c.node == id).map(|c| c.cpu).collect();
            let distance = self.node_distance.get(id as usize).cloned().unwrap_or_default();
            topo.nodes.insert(id, NumaNode { id, cpus, distance });
        }
        topo
    }
}
