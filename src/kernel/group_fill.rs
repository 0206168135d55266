//! The mechanics shared by the node and cluster levels of `group_cpus_evenly()`: proportional
//! group counts (`alloc_groups_to_nodes()`) and filling groups siblings-first
//! (`assign_cpus_to_groups()`, `grp_spread_init_one()`), all in lib/group_cpus.c.

use super::heapsort::{kernel_heapsort, SortEntry, SortVariant};
use crate::cpuset::CpuSet;
use crate::topology::Topology;

/// The kernel's `UINT_MAX` "no CPUs here" entry; it sorts as -1 (see [`super::heapsort`]).
pub(crate) const SENTINEL: u32 = u32::MAX;

/// `alloc_groups_to_nodes()`: sorts `entries` (val = CPU count or [`SENTINEL`]) with the
/// kernel heapsort and overwrites each real entry's `val` with its group count
/// `max(1, floor(g * cnt / rem))`, walking in sorted order with running remainders.
///
/// Guarantees on consistent input (`rem` = sum of real counts, `1 <= g <=` number of real
/// entries or more): every real entry gets `1 <= q <= cnt` and the counts add up to `g`.
/// Arithmetic is the kernel's 32-bit unsigned arithmetic, so inconsistent input cannot panic.
pub(crate) fn allocate_groups(entries: &mut [SortEntry], groups: u32, cpus: u32, sort: SortVariant) {
    kernel_heapsort(entries, sort);
    let (mut g, mut rem) = (groups, cpus);
    for e in entries.iter_mut().filter(|e| e.val != SENTINEL) {
        let cnt = e.val;
        let q = g.wrapping_mul(cnt).checked_div(rem).unwrap_or(0).max(1);
        e.val = q;
        rem = rem.wrapping_sub(cnt);
        g = g.wrapping_sub(q);
    }
}

/// The `numgrps` groups being filled and the shared group cursor `curgrp`.
pub(crate) struct GroupFiller<'a> {
    topo: &'a Topology,
    groups: Vec<CpuSet>,
    cursor: usize,
}

impl<'a> GroupFiller<'a> {
    /// `numgrps` empty groups, cursor at 0.
    pub(crate) fn new(topo: &'a Topology, numgrps: usize) -> Self {
        GroupFiller { topo, groups: vec![CpuSet::new(); numgrps], cursor: 0 }
    }

    pub(crate) fn numgrps(&self) -> usize {
        self.groups.len()
    }

    pub(crate) fn set_cursor(&mut self, start: usize) {
        self.cursor = start;
    }

    pub(crate) fn into_groups(self) -> Vec<CpuSet> {
        self.groups
    }

    /// Adds a whole node to the current group and advances, wrapping at `numgrps` (the
    /// `numgrps <= nodes` branch of `__group_cpus_evenly()`).
    pub(crate) fn add_whole(&mut self, cpus: &CpuSet) {
        if self.cursor >= self.groups.len() {
            self.cursor = 0;
        }
        self.groups[self.cursor].extend_with(cpus);
        self.cursor += 1;
        if self.cursor == self.groups.len() {
            self.cursor = 0;
        }
    }

    /// `assign_cpus_to_groups()`: fills `q` consecutive groups from `cpus` (consumed), the
    /// first `ncpus mod q` of them with one CPU more; wraps the cursor before each fill.
    pub(crate) fn assign(&mut self, ncpus: usize, cpus: &mut CpuSet, q: usize) {
        if q == 0 || self.groups.is_empty() {
            return;
        }
        let base = ncpus / q;
        let mut extra = ncpus - q * base;
        for _ in 0..q {
            let mut size = base;
            if extra > 0 {
                size += 1;
                extra -= 1;
            }
            if self.cursor >= self.groups.len() {
                self.cursor = 0;
            }
            fill_siblings_first(self.topo, &mut self.groups[self.cursor], cpus, size);
            self.cursor += 1;
        }
    }
}

/// `grp_spread_init_one()`: moves `size` CPUs from `cpus` into `group`, each time the lowest
/// CPU followed by its SMT siblings still in `cpus` (sibling mask read as the kernel has it).
/// Stops early when `cpus` runs out.
fn fill_siblings_first(topo: &Topology, group: &mut CpuSet, cpus: &mut CpuSet, mut size: usize) {
    while size > 0 {
        let Some(c) = cpus.first() else { return };
        cpus.remove(c);
        group.insert(c);
        size -= 1;
        if size == 0 {
            break;
        }
        for s in &topo.sibling_mask(c) {
            if size == 0 {
                break;
            }
            if cpus.remove(s) {
                group.insert(s);
                size -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(vals: &[u32]) -> Vec<SortEntry> {
        vals.iter().enumerate().map(|(i, &val)| SortEntry { id: i as u32, val }).collect()
    }

    #[test]
    fn allocation_matches_spec_example_8_3_5() {
        // Nodes of 8, 3, 5 CPUs and 4 groups → node1: 1, node2: 1, node0: 2.
        let mut e = entries(&[8, 3, 5]);
        allocate_groups(&mut e, 4, 16, SortVariant::S3);
        let by_id: Vec<(u32, u32)> = e.iter().map(|e| (e.id, e.val)).collect();
        assert_eq!(by_id, [(1, 1), (2, 1), (0, 2)]);
    }

    #[test]
    fn sentinels_keep_their_value() {
        let mut e = entries(&[4, SENTINEL, 4]);
        allocate_groups(&mut e, 3, 8, SortVariant::S1);
        assert_eq!(e.iter().filter(|e| e.val == SENTINEL).count(), 1);
        assert_eq!(e.iter().filter(|e| e.val != SENTINEL).map(|e| e.val).sum::<u32>(), 3);
    }

    #[test]
    fn assign_gives_extra_cpus_to_the_first_groups() {
        // One node of 40 CPUs without siblings, 11 groups: 7 groups of 4, then 3s.
        let topo = Topology::default();
        let mut filler = GroupFiller::new(&topo, 11);
        let mut cpus = CpuSet::first_n(40);
        filler.assign(40, &mut cpus, 11);
        let sizes: Vec<usize> = filler.into_groups().iter().map(CpuSet::len).collect();
        assert_eq!(sizes, [4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3]);
        assert!(cpus.is_empty());
    }
}
