//! A CPU's last-level cache from `cpuN/cache/index*/{level,type,shared_cpu_list}`.

use super::numbered_ids;
use crate::cpuset::CpuSet;
use crate::sysfs::{parse_cpulist_at, Root, SysfsError};

/// The CPUs sharing the highest-level Unified or Data cache of the CPU whose cache directory is
/// `dir`. `None` when there is no cache directory, no such cache, or that cache does not say
/// which CPUs share it (old kernels give only `level` and `type`). Instruction caches never count.
pub(super) fn last_level_cache(root: &Root, dir: &str) -> Result<Option<CpuSet>, SysfsError> {
    let mut best: Option<(u32, String)> = None;
    for idx in numbered_ids(root, dir, "index")? {
        let index = format!("{dir}/index{idx}");
        // The type first: an instruction cache's level is not read at all.
        let kind = root.read_small_optional(format!("{index}/type"))?.unwrap_or_default();
        if !matches!(kind.trim(), "Unified" | "Data") {
            continue;
        }
        let Some(level) = root.read_number_optional::<u32>(format!("{index}/level"), "a cache level (integer)")? else {
            continue;
        };
        if best.as_ref().is_none_or(|(l, _)| level > *l) {
            best = Some((level, index));
        }
    }
    let Some((_, index)) = best else { return Ok(None) };
    let list = format!("{index}/shared_cpu_list");
    if let Some(text) = root.read_small_optional(&list)? {
        return parse_cpulist_at(&root.path(&list), &text).map(Some);
    }
    let map = format!("{index}/shared_cpu_map");
    match root.read_small_optional(&map)? {
        Some(text) => {
            CpuSet::parse_mask(&text).map(Some).map_err(|source| SysfsError::CpuList { path: root.path(&map), source })
        }
        None => Ok(None),
    }
}
