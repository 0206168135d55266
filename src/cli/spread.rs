//! `irqwise spread numa|groups`: the kernel's spreading orders and groups on this machine.

use serde_json::json;

use super::{to_json_text, CliError};
use crate::choices::SpreadOrder;
use crate::cpuset::MAX_CPUS;
use crate::kernel::{group_cpus_evenly, spread_order, GroupAlgorithm, GroupRules};
use crate::sample::kernel_release::{kernel_version, OSRELEASE};
use crate::sysfs::Root;
use crate::topology::discover::read_topology;

/// `irqwise spread numa --node N [--order ...] [--json]`.
pub fn spread_numa(root: &Root, node: i64, order: SpreadOrder, json: bool) -> Result<String, CliError> {
    let topo = read_topology(root)?;
    // Node 0 of a machine without NUMA information stands for "all CPUs".
    let start = if node == -1 {
        None
    } else {
        let n = u32::try_from(node).ok().filter(|&n| topo.has_node(n)).ok_or_else(|| {
            let list = topo.nodes.keys().map(std::string::ToString::to_string).collect::<Vec<_>>().join(", ");
            CliError::NoSuchNode { node, known: if list.is_empty() { "0 (no NUMA)".into() } else { list } }
        })?;
        Some(n).filter(|_| !topo.nodes.is_empty())
    };
    let cpus = spread_order(&topo, start, order);
    if json {
        return Ok(to_json_text(&json!({ "node": node, "order": cpus })));
    }
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    Ok(format!("node {node} ({}): {}\n", order.as_str(), list.join(" ")))
}

/// `irqwise spread groups --groups N [--kernel X.Y] [--json]`.
pub fn spread_groups(root: &Root, groups: usize, kernel: Option<&str>, json: bool) -> Result<String, CliError> {
    if groups == 0 {
        return Err(CliError::ZeroGroups(groups));
    }
    if groups > MAX_CPUS as usize {
        return Err(CliError::TooManyGroups(groups));
    }
    let topo = read_topology(root)?;
    let version = kernel_version(&topo, kernel, &root.path(OSRELEASE))?;
    let rules = GroupRules::for_kernel(version);
    let grouping = group_cpus_evenly(&topo, groups, rules);
    let algorithm = match rules.algorithm {
        GroupAlgorithm::Mainline => "mainline",
        GroupAlgorithm::ClusterAware => "cluster",
    };
    if json {
        return Ok(to_json_text(&json!({
            "kernel": version.to_string(),
            "algorithm": algorithm,
            "sort": format!("{:?}", rules.sort),
            "nummasks": grouping.nummasks,
            "groups": grouping.groups,
        })));
    }
    let mut out = format!("kernel {version}: {algorithm} group_cpus_evenly, sort {:?}\n", rules.sort);
    for (i, g) in grouping.groups.iter().enumerate() {
        out.push_str(&format!("group {i:>4}: {}\n", if g.is_empty() { "(empty)".into() } else { g.to_list_string() }));
    }
    Ok(out)
}
