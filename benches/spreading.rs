//! Spreading on a large synthetic machine: 8192 CPUs, 32 nodes (ring distances), 128 cores per
//! node, 2 threads per core, 4-core clusters.

use std::sync::LazyLock;

use irqwise::choices::SpreadOrder;
use irqwise::kernel::group_cpus::{group_cpus_evenly, GroupAlgorithm, GroupRules};
use irqwise::kernel::heapsort::SortVariant;
use irqwise::kernel::local_spread::spread_order;
use irqwise::topology::synthetic::{SyntheticDistance, SyntheticMachine};
use irqwise::topology::Topology;

fn main() {
    divan::main();
}

static MACHINE: LazyLock<Topology> = LazyLock::new(|| {
    SyntheticMachine {
        nodes: 32,
        cores_per_node: 128,
        threads_per_core: 2,
        cores_per_cluster: 4,
        distance: SyntheticDistance::Ring,
    }
    .build()
});

#[divan::bench(args = [64, 1024])]
fn group_cpus_evenly_mainline(bencher: divan::Bencher, groups: usize) {
    let topo = &*MACHINE;
    let rules = GroupRules { algorithm: GroupAlgorithm::Mainline, sort: SortVariant::S3 };
    bencher.bench(|| group_cpus_evenly(divan::black_box(topo), groups, rules));
}

#[divan::bench(args = [64, 1024])]
fn group_cpus_evenly_cluster_aware(bencher: divan::Bencher, groups: usize) {
    let topo = &*MACHINE;
    let rules = GroupRules { algorithm: GroupAlgorithm::ClusterAware, sort: SortVariant::S3 };
    bencher.bench(|| group_cpus_evenly(divan::black_box(topo), groups, rules));
}

#[divan::bench]
fn numa_order_kernel(bencher: divan::Bencher) {
    let topo = &*MACHINE;
    bencher.bench(|| spread_order(divan::black_box(topo), Some(5), SpreadOrder::Kernel));
}

#[divan::bench]
fn numa_order_cores_first(bencher: divan::Bencher) {
    let topo = &*MACHINE;
    bencher.bench(|| spread_order(divan::black_box(topo), Some(5), SpreadOrder::CoresFirst));
}
