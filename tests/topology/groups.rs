//! Topology discovery reads each group's masks once, by the group's lowest CPU, and every CPU of
//! the group shares that one set (`topology::discover::groups`): memory linear in the groups,
//! and a machine of 256-CPU nodes reads most of its package, die and cache files once per node.

use crate::sysfs_tree;

use std::fs;
use std::path::Path;

use irqwise::cpuset::CpuSet;
use irqwise::sysfs::Root;
use irqwise::topology::discover::{read_topology_keeping, read_topology_with_warnings, reread_topology};
use irqwise::topology::synthetic::SyntheticMachine;
use irqwise::topology::Topology;

const CPU: &str = "sys/devices/system/cpu";

/// 4 nodes × 8 cores × 2 threads (CPUs 0-63; siblings N and N + 32; node 0 is CPUs 0-7 and
/// 32-39), 2-core clusters. Discovery reads CPUs in chunks of 32 in parallel, each chunk taking
/// the groups the chunks before it read: CPUs 32-63 are all covered by CPUs 0-31.
fn shape() -> Topology {
    let mut topo = SyntheticMachine { cores_per_cluster: 2, ..SyntheticMachine::new(4, 8, 2) }.build();
    topo.kernel = Some("6.12.0".into());
    topo
}

fn machine(dir: &Path) -> Topology {
    let topo = shape();
    sysfs_tree::write_topology(dir, &topo);
    topo
}

fn garble(dir: &Path, rel: &str) {
    fs::write(dir.join(rel), "not a CPU list\n").unwrap();
}

#[test]
fn a_cpu_in_an_earlier_cpus_group_takes_that_set_without_reading_its_own_file() {
    let dir = tempfile::tempdir().unwrap();
    let written = machine(dir.path());
    // CPU 41 is CPU 9's SMT sibling; CPU 33 is in node 0's package, die and LLC (CPU 0's).
    garble(dir.path(), &format!("{CPU}/cpu41/topology/core_cpus_list"));
    garble(dir.path(), &format!("{CPU}/cpu33/topology/package_cpus_list"));
    garble(dir.path(), &format!("{CPU}/cpu33/topology/die_cpus_list"));
    garble(dir.path(), &format!("{CPU}/cpu33/cache/index3/shared_cpu_list"));
    let (topo, warnings) = read_topology_with_warnings(&Root::new(dir.path())).unwrap();
    assert!(warnings.is_empty(), "files of CPUs covered by an earlier CPU's group were read: {warnings:?}");
    assert_eq!(topo.cpus, written.cpus, "every CPU's masks as the kernel shows them");
}

#[test]
fn the_lowest_cpu_of_a_group_still_reads_its_files() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    garble(dir.path(), &format!("{CPU}/cpu2/topology/cluster_cpus_list"));
    let (topo, warnings) = read_topology_with_warnings(&Root::new(dir.path())).unwrap();
    let paths: Vec<String> = warnings.iter().map(|w| w.path.display().to_string()).collect();
    assert_eq!(paths.len(), 1, "{warnings:?}");
    assert!(paths[0].ends_with("cpu2/topology/cluster_cpus_list"), "{paths:?}");
    assert_eq!(topo.cpus[&2].cluster, None, "the unreadable level is unknown for CPU 2");
    // CPU 3 (same chunk) reads its own and vouches for 34 and 35.
    assert_eq!(topo.cpus[&3].cluster, Some(CpuSet::parse_list("2-3,34-35").unwrap()));
    assert!(topo.cpus[&35].cluster.as_ref().unwrap().shares_words(topo.cpus[&3].cluster.as_ref().unwrap()));
}

#[test]
fn every_cpu_of_a_group_shares_one_set() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    let topo = irqwise::topology::discover::read_topology(&Root::new(dir.path())).unwrap();
    let llc = |c: u32| topo.cpus[&c].llc.clone().unwrap();
    let core = |c: u32| topo.cpus[&c].core.clone().unwrap();
    for c in [1, 7, 32, 39] {
        assert!(llc(c).shares_words(&llc(0)), "CPU {c}'s LLC is CPU 0's set, not a copy");
    }
    assert!(core(41).shares_words(&core(9)));
    assert!(topo.cpus[&13].package.as_ref().unwrap().shares_words(topo.cpus[&8].package.as_ref().unwrap()));
    assert!(!llc(8).shares_words(&llc(0)), "another node's LLC is another set");
}

#[test]
fn a_reread_after_hotplug_keeps_the_groups_shared_and_equal_to_a_full_read() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    let root = Root::new(dir.path());
    let (before, _, reads) = read_topology_keeping(&root).unwrap();
    // CPU 3 goes offline as x86 shows it: out of the online list and every other CPU's masks,
    // its own topology and cache directories gone.
    let mut offline = shape();
    offline.online.remove(3);
    for cpu in offline.cpus.values_mut() {
        for mask in
            [&mut cpu.core, &mut cpu.cluster, &mut cpu.die, &mut cpu.package, &mut cpu.llc].into_iter().flatten()
        {
            mask.remove(3);
        }
    }
    let c3 = offline.cpus.get_mut(&3).unwrap();
    (c3.online, c3.core, c3.cluster, c3.die, c3.package, c3.llc) = (false, None, None, None, None, None);
    let again = tempfile::tempdir().unwrap();
    sysfs_tree::write_topology(again.path(), &offline);
    let root = Root::new(again.path());
    let (reread, warnings, _) = reread_topology(&root, &before, reads, &CpuSet::single(3)).unwrap();
    let (full, full_warnings) = read_topology_with_warnings(&root).unwrap();
    assert_eq!(reread, full, "the edited neighbours are what a full read gives");
    assert_eq!(warnings, full_warnings);
    let llc = |c: u32| reread.cpus[&c].llc.clone().unwrap();
    assert!(!llc(0).contains(3));
    for c in [1, 2, 32, 39] {
        assert!(llc(c).shares_words(&llc(0)), "CPU {c}'s edited LLC is CPU 0's edited set");
    }
}

#[test]
fn an_offline_cpu_reads_its_own_files_whatever_a_mask_says_of_it() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    // CPU 40 (CPU 8's sibling) offline as x86 shows it, but still in the masks of the others (a
    // kernel that forgot to clear them): it keeps no masks of its own.
    fs::write(dir.path().join(format!("{CPU}/online")), "0-39,41-63\n").unwrap();
    fs::write(dir.path().join(format!("{CPU}/cpu40/online")), "0\n").unwrap();
    fs::remove_dir_all(dir.path().join(format!("{CPU}/cpu40/topology"))).unwrap();
    fs::remove_dir_all(dir.path().join(format!("{CPU}/cpu40/cache"))).unwrap();
    let topo = irqwise::topology::discover::read_topology(&Root::new(dir.path())).unwrap();
    let c40 = &topo.cpus[&40];
    assert!(!c40.online);
    assert_eq!((&c40.core, &c40.package, &c40.llc), (&None, &None, &None), "not CPU 8's sets");
    assert_eq!(topo.sibling_mask(40), CpuSet::new(), "x86: an offline CPU's sibling mask is empty");
}
