//! NVMe controller identity and its blk-mq map (`mq/<n>/cpu_list` or the `mq/<n>/cpuN` entries).

use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::devices::NvmeInfo;
use crate::sysfs::{Root, SysfsError};

/// More hardware queues than any NVMe controller can have (the spec allows 65535 I/O queues).
const MAX_HW_QUEUES: usize = 65536;

/// The first controller under `dir/nvme/` with its model, serial and the blk-mq map of its
/// first namespace that has one. `Ok(None)` when the device shows no controller (unbound).
pub(super) fn read_nvme(root: &Root, dir: &str) -> Result<Option<NvmeInfo>, SysfsError> {
    let Some(controller) = root.list_dir_optional(format!("{dir}/nvme"))?.into_iter().find(|c| c.starts_with("nvme"))
    else {
        return Ok(None);
    };
    let ctrl_dir = format!("{dir}/nvme/{controller}");
    let model = root.read_optional(format!("{ctrl_dir}/model"))?.map(|s| s.trim().to_string());
    let serial = root.read_optional(format!("{ctrl_dir}/serial"))?.map(|s| s.trim().to_string());

    // Namespace block devices: sys/block/nvmeXnY (the multipath head has no mq/), then the
    // controller's own children nvmeXnY / nvmeXcYnZ (hidden multipath paths).
    let mut candidates: Vec<(String, String)> = Vec::new();
    for ns in sorted_namespaces(root.list_dir_optional("sys/block")?, &controller) {
        candidates.push((format!("sys/block/{ns}"), ns));
    }
    for ns in sorted_namespaces(root.list_dir_optional(&ctrl_dir)?, &controller) {
        candidates.push((format!("{ctrl_dir}/{ns}"), ns));
    }
    for (path, ns) in candidates {
        let mq = format!("{path}/mq");
        if root.exists(&mq) {
            let blk_mq = read_blk_mq(root, &mq)?;
            let write_queues = read_write_queues(root)?;
            return Ok(Some(NvmeInfo { controller, model, serial, namespace: Some(ns), blk_mq, write_queues }));
        }
    }
    let write_queues = read_write_queues(root)?;
    Ok(Some(NvmeInfo { controller, model, serial, namespace: None, blk_mq: Vec::new(), write_queues }))
}

/// The nvme driver's `write_queues` module parameter; `None` when the module shows none (built
/// without it, or a vendor driver).
fn read_write_queues(root: &Root) -> Result<Option<u32>, SysfsError> {
    let path = "sys/module/nvme/parameters/write_queues";
    let Some(text) = root.read_optional(path)? else { return Ok(None) };
    text.trim().parse().map(Some).map_err(|_| SysfsError::Parse {
        path: root.path(path),
        content: text.trim().chars().take(64).collect(),
        expected: "a non-negative integer (the nvme driver's write_queues)",
    })
}

/// Names of `controller`'s namespaces (`nvme0n1`, `nvme0c1n2`; not partitions like `nvme0n1p1`),
/// ordered by namespace id.
fn sorted_namespaces(names: Vec<String>, controller: &str) -> Vec<String> {
    let mut found: Vec<(u32, u32, String)> = names
        .into_iter()
        .filter_map(|name| {
            let rest = name.strip_prefix(controller)?;
            let (path_idx, ns) = match rest.strip_prefix('c') {
                Some(r) => {
                    let (c, ns) = r.split_once('n')?;
                    (c.parse().ok()?, ns)
                }
                None => (0, rest.strip_prefix('n')?),
            };
            let ns = ns.parse::<u32>().ok()?;
            Some((ns, path_idx, name))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, _, n)| n).collect()
}

/// Hardware queue index → CPUs. Guarantees: index `n` holds `mq/<n>/`'s CPUs, from its `cpuN`
/// entries when present (complete even where `cpu_list` is truncated), else its `cpu_list` in
/// either format (`0-3` or `4, 5, 6, 7`).
fn read_blk_mq(root: &Root, mq: &str) -> Result<Vec<CpuSet>, SysfsError> {
    let mut map: Vec<CpuSet> = Vec::new();
    for entry in root.list_dir(mq)? {
        let Some(hctx) = entry.parse::<usize>().ok().filter(|&n| n < MAX_HW_QUEUES) else { continue };
        let dir = format!("{mq}/{entry}");
        let from_entries: CpuSet = root
            .list_dir_noting(&dir, |n| n.strip_prefix("cpu").is_some_and(|d| d.parse::<u32>().is_ok()))?
            .iter()
            .filter_map(|e| e.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()))
            .filter(|&cpu| cpu < MAX_CPUS)
            .collect();
        let cpus = if from_entries.is_empty() { root.read_cpulist(format!("{dir}/cpu_list"))? } else { from_entries };
        if map.len() <= hctx {
            map.resize(hctx + 1, CpuSet::new());
        }
        map[hctx] = cpus;
    }
    Ok(map)
}
