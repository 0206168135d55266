//! Reading each topology group's masks once, not once per CPU, and sharing them.
//!
//! Every level's mask is a group the kernel builds mutually: x86 `set_cpu_sibling_map()` links
//! both CPUs of each pair it matches (SMT core, L2 cluster, die, package), the cache sharing
//! maps (`cache_shared_cpu_map_setup()`) are set for every CPU of the leaf's range, and arm64's
//! `update_siblings_masks()` sets both sides too; a CPU going offline leaves every mask. So when
//! CPU `a`'s mask at a level holds CPU `b`, `b`'s mask at that level is the same set, and `b`'s
//! file need not be read: its `topology/*_list` of that level, or for the last-level cache its
//! whole `cache/` directory (a listing and up to six files). On a machine of 256-CPU nodes that
//! skips most of the package, die and cache reads and half the core reads (x86 SMT siblings are
//! N and N + cores).
//!
//! Only online CPUs (the global `online` list) are covered: the kernel's masks hold online CPUs
//! only, and an offline CPU's own files (absent on x86, the CPU alone on arm64) say what the
//! kernel keeps for it, whatever a mask claims.
//!
//! A CPU takes the set of the *lowest* CPU whose mask holds it (the one a scan in id order
//! meets first), so what discovery returns does not depend on the order the reader threads ran
//! in. Sets are interned: equal sets share one allocation, which keeps memory linear in the
//! groups instead of quadratic in the CPUs (a 8,192-CPU set is 1 KB; every CPU keeps five).

use crate::cpuset::hasher::WordHashSet;
use crate::cpuset::CpuSet;
use crate::topology::Cpu;

/// The levels whose masks are shared, in [`Level::ALL`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Core,
    Cluster,
    Die,
    Package,
    Llc,
}

impl Level {
    pub(super) const ALL: [Level; 5] = [Level::Core, Level::Cluster, Level::Die, Level::Package, Level::Llc];

    fn index(self) -> usize {
        self as usize
    }

    /// The CPU's mask at this level.
    pub(super) fn of(self, cpu: &mut Cpu) -> &mut Option<CpuSet> {
        match self {
            Level::Core => &mut cpu.core,
            Level::Cluster => &mut cpu.cluster,
            Level::Die => &mut cpu.die,
            Level::Package => &mut cpu.package,
            Level::Llc => &mut cpu.llc,
        }
    }
}

/// The masks learnt so far. Invariant: `covering[l][c]`, when set, is an interned set holding
/// `c`, read for a CPU below `c`'s position in the scan.
#[derive(Debug, Default)]
pub(super) struct GroupSets {
    /// Per level, indexed by CPU id: the set that CPU takes instead of reading its own file.
    covering: [Vec<Option<CpuSet>>; 5],
    /// Every distinct set learnt, at any level.
    interned: WordHashSet<CpuSet>,
    /// The CPUs a set may cover: the online ones (the kernel's masks hold online CPUs only; an
    /// offline CPU reads its own files, whatever another CPU's mask says of it). Empty: nothing
    /// is covered (re-reads after CPU events, or no global `online` list).
    coverable: CpuSet,
}

impl GroupSets {
    /// Sets that cover the CPUs of `online` (the global `online` list).
    pub(super) fn sharing(online: CpuSet) -> GroupSets {
        GroupSets { coverable: online, ..GroupSets::default() }
    }

    /// Sets that never cover a CPU: each CPU reads its own files (still interned).
    pub(super) fn reading_every_cpu() -> GroupSets {
        GroupSets::default()
    }

    /// The set CPU `id` takes at `level` without reading, if a CPU scanned before holds it.
    pub(super) fn covering(&self, level: Level, id: u32) -> Option<&CpuSet> {
        self.covering[level.index()].get(id as usize)?.as_ref()
    }

    /// Takes CPU `cpu`'s masks as read: each is replaced by the equal interned set, and the
    /// CPUs a newly seen set holds are covered by it at its level (unless covered already).
    pub(super) fn learn(&mut self, cpu: &mut Cpu) {
        let id = cpu.id;
        for level in Level::ALL {
            let Some(mask) = level.of(cpu).as_mut() else { continue };
            if let Some(shared) = self.interned.get(mask) {
                *mask = shared.clone();
            } else {
                self.interned.insert(mask.clone());
            }
            if self.coverable.is_empty() {
                continue;
            }
            let covering = &mut self.covering[level.index()];
            // Only sets holding the CPU itself vouch for the others (a mask without it, which
            // the kernel never shows, says nothing about them).
            if !mask.contains(id) || covering.get(id as usize).is_some_and(Option::is_some) {
                continue;
            }
            for member in mask.iter().filter(|&m| self.coverable.contains(m)) {
                let i = member as usize;
                if covering.len() <= i {
                    covering.resize(i + 1, None);
                }
                covering[i].get_or_insert_with(|| mask.clone());
            }
        }
    }

    /// `set`, or the equal set already interned.
    pub(super) fn intern(&mut self, set: CpuSet) -> CpuSet {
        if let Some(shared) = self.interned.get(&set) {
            return shared.clone();
        }
        self.interned.insert(set.clone());
        set
    }
}
