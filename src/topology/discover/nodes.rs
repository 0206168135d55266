//! NUMA node directories: `node/nodeN/{cpulist,distance}`.

use std::collections::BTreeMap;

use super::TopologyError;
use super::{numbered_ids, NODE_DIR};
use crate::cpuset::CpuSet;
use crate::sysfs::{parse_cpulist_at, Root, SysfsError};

/// What one `nodeN` directory says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NodeDir {
    /// `cpulist` (or the hex `cpumap`); `None` when neither file exists.
    pub cpus: Option<CpuSet>,
    /// `distance`, one entry per node directory in ascending id; empty when the file is absent.
    pub distance: Vec<u32>,
}

/// Every `nodeN` directory, by id. No `node/` directory (non-NUMA kernel) gives an empty map.
/// A distance row whose length is not the number of nodes is an error naming the file and row.
pub(super) fn read_nodes(root: &Root) -> Result<BTreeMap<u32, NodeDir>, TopologyError> {
    let ids = numbered_ids(root, NODE_DIR, "node")?;
    let mut nodes = BTreeMap::new();
    for &id in &ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = read_node_cpus(root, &dir)?;
        let rel = format!("{dir}/distance");
        let distance = match root.read_small_optional(&rel)? {
            Some(text) => {
                let row = parse_distance_row(root, &rel, &text)?;
                if row.len() != ids.len() {
                    return Err(TopologyError::Inconsistent {
                        path: root.path(&rel).display().to_string(),
                        problem: format!(
                            "distance row {text:?} has {} entries, expected {} (one per node: {})",
                            row.len(),
                            ids.len(),
                            ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
                        ),
                    });
                }
                row
            }
            None => Vec::new(),
        };
        nodes.insert(id, NodeDir { cpus, distance });
    }
    Ok(nodes)
}

/// `cpulist`, else the hex `cpumap`, else `None`.
fn read_node_cpus(root: &Root, dir: &str) -> Result<Option<CpuSet>, SysfsError> {
    let list = format!("{dir}/cpulist");
    if let Some(text) = root.read_small_optional(&list)? {
        return parse_cpulist_at(&root.path(&list), &text).map(Some);
    }
    let map = format!("{dir}/cpumap");
    match root.read_small_optional(&map)? {
        Some(text) => {
            CpuSet::parse_mask(&text).map(Some).map_err(|source| SysfsError::CpuList { path: root.path(&map), source })
        }
        None => Ok(None),
    }
}

/// A `distance` row: whitespace-separated decimal numbers (`10 21 21`).
fn parse_distance_row(root: &Root, rel: &str, text: &str) -> Result<Vec<u32>, SysfsError> {
    text.split_whitespace()
        .map(|tok| {
            tok.parse::<u32>().map_err(|_| SysfsError::Parse {
                path: root.path(rel),
                content: text.into(),
                expected: "whitespace-separated decimal distances",
            })
        })
        .collect()
}
