//! Homes: the machine as it is when every present CPU is online.
//!
//! Placement is computed twice: once over this "home" machine, which does not change when a CPU
//! goes offline, and once over the CPUs usable now. Planning queues against homes is what lets a
//! hotplug event move only the IRQs that lived on the CPU that left.
//!
//! An offline x86 CPU shows no `topology/` in sysfs and the kernel drops it from its siblings'
//! masks, so the home machine's masks come from what was seen while the CPU was online
//! ([`TopologyMemory`]); without a memory an offline CPU counts as a core, cluster and cache of its
//! own.

use std::collections::BTreeMap;

use super::{Cpu, Topology};
use crate::cpuset::CpuSet;

/// The masks of every CPU as last seen while it was online, kept across passes by the daemon,
/// and the machine as first seen this boot ([`FirstSight`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyMemory {
    seen: BTreeMap<u32, Cpu>,
    first: Option<FirstSight>,
}

/// What `group_cpus_evenly()` read of the machine, as irqwise first saw it this boot: the present
/// CPUs and each possible CPU's node, online state and SMT and cluster masks. The kernel spreads a
/// device's managed IRQs once, when the driver allocates them, and keeps those masks while CPUs
/// are hot-added (a CPU that was not present gets its firmware node then) or come online (its
/// siblings' masks grow); for devices that were there at first sight, this is the machine their
/// masks were computed on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FirstSight {
    pub present: CpuSet,
    /// Every possible CPU then: `node`, `node_source`, `online`, `core`, `cluster` are kept.
    pub cpus: BTreeMap<u32, Cpu>,
}

impl FirstSight {
    /// The spreading inputs of `topo`.
    pub fn of(topo: &Topology) -> FirstSight {
        let cpus = topo
            .cpus
            .values()
            .map(|c| {
                let mut k = Cpu::bare(c.id);
                (k.present, k.online, k.node, k.node_source) = (c.present, c.online, c.node, c.node_source);
                (k.core, k.cluster) = (c.core.clone(), c.cluster.clone());
                k
            })
            .collect::<Vec<_>>();
        FirstSight { present: topo.present.clone(), cpus: cpus.into_iter().map(|c| (c.id, c)).collect() }
    }

    /// Whether `topo` spreads differently from this sight for some device: its present CPUs, a
    /// CPU's node or an SMT or cluster mask differ.
    pub(crate) fn differs_from(&self, topo: &Topology) -> bool {
        self.present != topo.present
            || topo.cpus.values().any(|c| match self.cpus.get(&c.id) {
                Some(k) => k.node != c.node || k.core != c.core || k.cluster != c.cluster,
                None => true,
            })
    }

    /// Makes this sight's masks that equal `topo`'s clones of them (see `remember`).
    fn share_sets(&mut self, topo: &Topology) {
        for k in self.cpus.values_mut() {
            if let Some(c) = topo.cpus.get(&k.id) {
                adopt_all(k, c);
            }
        }
    }

    /// `now` as it was at this sight: its present CPUs and every CPU's node, online state and SMT
    /// and cluster masks from then, the nodes' CPU sets recomputed; everything else from `now`.
    pub fn topology(&self, now: &Topology) -> Topology {
        let mut t = now.clone();
        t.present = self.present.intersection(&now.possible);
        for c in t.cpus.values_mut() {
            if let Some(k) = self.cpus.get(&c.id) {
                (c.present, c.online, c.node, c.node_source) = (k.present, k.online, k.node, k.node_source);
                (c.core, c.cluster) = (k.core.clone(), k.cluster.clone());
            }
        }
        t.online = t.cpus.values().filter(|c| c.online).map(|c| c.id).collect();
        for (&id, node) in &mut t.nodes {
            node.cpus = t.cpus.values().filter(|c| c.node == Some(id)).map(|c| c.id).collect();
        }
        t
    }
}

/// `mine` becomes a clone of `theirs` when the two are equal sets held apart.
fn adopt(mine: &mut Option<CpuSet>, theirs: Option<&CpuSet>) {
    if let (Some(m), Some(t)) = (mine.as_ref(), theirs) {
        if !m.shares_words(t) && m == t {
            *mine = Some(t.clone());
        }
    }
}

/// Each mask of `mine` that equals the same mask of `theirs` becomes a clone of it.
fn adopt_all(mine: &mut Cpu, theirs: &Cpu) {
    adopt(&mut mine.core, theirs.core.as_ref());
    adopt(&mut mine.cluster, theirs.cluster.as_ref());
    adopt(&mut mine.llc, theirs.llc.as_ref());
    adopt(&mut mine.package, theirs.package.as_ref());
    adopt(&mut mine.die, theirs.die.as_ref());
}

impl TopologyMemory {
    /// Records every online CPU of `topo`. What its masks say about online CPUs is the truth
    /// now; about offline ones they say nothing (the kernel drops an offline CPU from its
    /// siblings' masks), so those members are kept from what was seen before.
    /// Returns whether anything changed (so a saved copy needs writing).
    pub fn remember(&mut self, topo: &Topology) -> bool {
        let before_len = self.seen.len();
        let mut changed = self.first.is_none();
        self.first.get_or_insert_with(|| FirstSight::of(topo));
        let offline = topo.possible.difference(&topo.online);
        let mut records = Vec::with_capacity(topo.online.len());
        for c in &topo.online {
            let Some(cpu) = topo.cpus.get(&c) else { continue };
            let mut record = cpu.clone();
            if let Some(old) = self.seen.get(&c) {
                let keep = |now: &mut Option<CpuSet>, then: &Option<CpuSet>| {
                    if let Some(gone) = then.as_ref().map(|t| t.intersection(&offline)).filter(|g| !g.is_empty()) {
                        *now = Some(now.as_ref().map_or_else(|| gone.clone(), |n| n.union(&gone)));
                    }
                };
                keep(&mut record.core, &old.core);
                keep(&mut record.cluster, &old.cluster);
                keep(&mut record.llc, &old.llc);
                keep(&mut record.package, &old.package);
                keep(&mut record.die, &old.die);
            }
            if self.seen.get(&c) != Some(&record) {
                changed = true;
                records.push((c, record));
            }
        }
        if !records.is_empty() {
            // Rebuilt from one sorted run (full nodes) rather than inserted CPU by CPU.
            let mut seen = std::mem::take(&mut self.seen);
            seen.extend(records);
            self.seen = seen.into_iter().collect();
        }
        // A memory read back from its file holds copies of its own: equal sets become the
        // topology's (at 8,192 CPUs, megabytes of SMT masks).
        for old in self.seen.values_mut() {
            if let Some(c) = topo.cpus.get(&old.id) {
                adopt_all(old, c);
            }
        }
        if let Some(first) = self.first.as_mut() {
            first.share_sets(topo);
        }
        changed || self.seen.len() != before_len
    }

    /// Every remembered CPU, by id.
    pub fn cpus(&self) -> impl Iterator<Item = &Cpu> {
        self.seen.values()
    }

    /// A memory holding these records (a saved copy read back); later records of the same CPU win.
    pub(crate) fn from_cpus(cpus: impl IntoIterator<Item = Cpu>) -> TopologyMemory {
        TopologyMemory { seen: cpus.into_iter().map(|c| (c.id, c)).collect(), first: None }
    }

    /// This memory with `first` as its first sight (a saved copy read back).
    pub(crate) fn with_first_sight(mut self, first: Option<FirstSight>) -> TopologyMemory {
        self.first = first;
        self
    }

    /// The machine as first seen this boot, when something has been remembered.
    pub(crate) fn first_sight(&self) -> Option<&FirstSight> {
        self.first.as_ref()
    }

    /// `now` as it was at first sight, when that differs from `now` in what spreading reads
    /// ([`FirstSight::differs_from`]); `None` otherwise.
    pub(crate) fn first_topology(&self, now: &Topology) -> Option<Topology> {
        self.first.as_ref().filter(|f| f.differs_from(now)).map(|f| f.topology(now))
    }

    /// How many CPUs have been seen online.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no CPU has been seen online yet.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// `topo` with every present CPU online. Each present CPU's masks are the union of what `topo`
/// shows and what `memory` saw while it was online, limited to present CPUs. Guarantees:
/// `online == present`; the same `memory` and present set give the same home machine whichever
/// CPUs are offline, once every present CPU has been seen online.
pub fn home_topology(topo: &Topology, memory: Option<&TopologyMemory>) -> Topology {
    let mut home = topo.clone();
    home.online = topo.present.clone();
    for c in &topo.present {
        let Some(cpu) = home.cpus.get_mut(&c) else { continue };
        let seen = memory.and_then(|m| m.seen.get(&c));
        let merge = |now: &Option<CpuSet>, then: Option<&Option<CpuSet>>| -> Option<CpuSet> {
            let joined = match (now, then.and_then(Option::as_ref)) {
                (Some(a), Some(b)) => Some(a.union(b)),
                (Some(a), None) => Some(a.clone()),
                (None, Some(b)) => Some(b.clone()),
                (None, None) => None,
            };
            joined.map(|m| m.intersection(&topo.present)).filter(|m| !m.is_empty())
        };
        // A mask neither shows nor remembers ends up `None`: the CPU alone at that level.
        cpu.core = merge(&cpu.core, seen.map(|s| &s.core));
        cpu.cluster = merge(&cpu.cluster, seen.map(|s| &s.cluster));
        cpu.llc = merge(&cpu.llc, seen.map(|s| &s.llc));
        cpu.package = merge(&cpu.package, seen.map(|s| &s.package));
        cpu.die = merge(&cpu.die, seen.map(|s| &s.die));
        if cpu.node.is_none() {
            cpu.node = seen.and_then(|s| s.node);
        }
        cpu.online = true;
    }
    home
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::synthetic::SyntheticMachine;

    /// `topo` with `cpu` offline as x86 shows it: no masks for it, gone from its siblings' masks.
    fn offline_x86(topo: &Topology, cpu: u32) -> Topology {
        let mut t = topo.clone();
        t.online.remove(cpu);
        for c in t.cpus.values_mut() {
            if c.id == cpu {
                (c.online, c.core, c.cluster, c.llc, c.package, c.die) = (false, None, None, None, None, None);
            } else {
                for m in [&mut c.core, &mut c.cluster, &mut c.llc, &mut c.package, &mut c.die].into_iter().flatten() {
                    m.remove(cpu);
                }
            }
        }
        t
    }

    #[test]
    fn remembered_masks_restore_the_home_machine_of_an_offline_cpu() {
        let topo = SyntheticMachine::new(2, 3, 2).build();
        let mut memory = TopologyMemory::default();
        memory.remember(&topo);
        let down = offline_x86(&topo, 9);
        memory.remember(&down);
        assert_eq!(home_topology(&down, Some(&memory)), home_topology(&topo, Some(&memory)));
        assert_eq!(home_topology(&down, Some(&memory)).sibling_mask(3), [3, 9].into_iter().collect());
        assert_eq!(home_topology(&topo, None), topo, "all online: home is the machine itself");
    }

    /// Whether every mask of `a` is a clone of the same mask of `b` (or both are absent).
    fn shares_sets(a: &Cpu, b: &Cpu) -> bool {
        let same = |x: &Option<CpuSet>, y: &Option<CpuSet>| match (x, y) {
            (Some(x), Some(y)) => x.shares_words(y),
            (None, None) => true,
            _ => false,
        };
        same(&a.core, &b.core)
            && same(&a.cluster, &b.cluster)
            && same(&a.llc, &b.llc)
            && same(&a.package, &b.package)
            && same(&a.die, &b.die)
    }

    #[test]
    fn a_memory_read_back_shares_the_sets_of_the_machine_it_remembers() {
        let topo = SyntheticMachine::new(2, 3, 2).build();
        let mut memory = TopologyMemory::default();
        memory.remember(&topo);
        // As read back from its file: equal sets, none of them the topology's.
        let copy = |m: &Option<CpuSet>| m.as_ref().map(|s| s.iter().collect::<CpuSet>());
        let mut read_back = TopologyMemory::from_cpus(memory.cpus().map(|c| Cpu {
            core: copy(&c.core),
            cluster: copy(&c.cluster),
            llc: copy(&c.llc),
            package: copy(&c.package),
            die: copy(&c.die),
            ..c.clone()
        }))
        .with_first_sight(memory.first_sight().map(|f| {
            FirstSight {
                present: f.present.clone(),
                cpus: f
                    .cpus
                    .iter()
                    .map(|(&id, c)| (id, Cpu { core: copy(&c.core), cluster: copy(&c.cluster), ..c.clone() }))
                    .collect(),
            }
        }));
        let now = |m: &TopologyMemory, id: u32| m.seen.get(&id).cloned().expect("remembered");
        assert!(!now(&read_back, 3).core.unwrap().shares_words(topo.cpus[&3].core.as_ref().unwrap()));
        assert!(!read_back.remember(&topo), "nothing new was seen");
        for c in topo.cpus.values() {
            assert!(shares_sets(&now(&read_back, c.id), c), "CPU {}: {:?}", c.id, now(&read_back, c.id));
            let first = &read_back.first_sight().expect("first sight").cpus[&c.id];
            assert!(first.core.as_ref().unwrap().shares_words(c.core.as_ref().unwrap()), "first sight of CPU {}", c.id);
            assert!(first.cluster.as_ref().unwrap().shares_words(c.cluster.as_ref().unwrap()));
        }
        assert_eq!(read_back, memory, "sharing changes no value");
    }

    #[test]
    fn without_memory_an_offline_cpu_is_a_core_of_its_own() {
        let topo = SyntheticMachine::new(2, 3, 2).build();
        let home = home_topology(&offline_x86(&topo, 9), None);
        assert!(home.online.contains(9));
        assert_eq!(home.sibling_mask(9), CpuSet::single(9));
        assert_eq!(home.sibling_mask(3), CpuSet::single(3), "its sibling's mask lost it");
    }
}
