//! `group_cpus_evenly()`: mainline and cluster-aware (spec §2, §3).

use super::kernel_sort::SortVariant;
use super::KernelVersion;
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// Mainline grouping or the 2026 cluster-aware one (commit 89802ca36c96).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupAlgorithm {
    Mainline,
    ClusterAware,
}

/// The rules a given kernel release uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupRules {
    pub algorithm: GroupAlgorithm,
    pub sort: SortVariant,
}

impl GroupRules {
    /// < 6.9 → mainline S1; 6.9–6.10 → mainline S2; 6.11–6.19 → mainline S3; ≥ 7.0 → cluster S3.
    pub fn for_kernel(v: KernelVersion) -> GroupRules {
        let _ = v;
        todo!("rules by version")
    }
}

/// What `group_cpus_evenly(numgrps, &nummasks)` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grouping {
    /// Exactly `numgrps` sets; groups from `nummasks` on are empty.
    pub groups: Vec<CpuSet>,
    pub nummasks: usize,
    /// Groups filled by the present pass and by the possible-not-present pass.
    pub pass_groups: [usize; 2],
}

/// Splits the topology's possible CPUs into `numgrps` groups exactly as the kernel does.
/// `numgrps == 0` gives no groups.
pub fn group_cpus_evenly(topo: &Topology, numgrps: usize, rules: GroupRules) -> Grouping {
    let _ = (topo, numgrps, rules);
    todo!("group_cpus_evenly")
}
