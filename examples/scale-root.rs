//! Writes the scale-measurement root to DIR: NODES nodes (one package each) × CORES cores × 2
//! threads, a 32-queue `ice` NIC and a 32-queue NVMe controller per node (at 32 nodes × 128
//! cores: 8,192 CPUs and 2,112 IRQs), without `proc/interrupts`. `cargo run --release --example
//! scale-root -- NODES CORES DIR`; `make bench` measures `plan` on it at 1k to 8k CPUs. Optional
//! further arguments NICS NIC_QUEUES NVMES NVME_QUEUES CORES_PER_CLUSTER change the devices and
//! clusters: `8 64 DIR 64 64 32 128 4` is the 8,288-IRQ machine of `benches/plan.rs` (without
//! its `proc/interrupts`).

#[path = "../tests/common/big_machine.rs"]
mod big_machine;
#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(nodes), Some(cores), Some(dir)) =
        (args.get(1).and_then(|n| n.parse().ok()), args.get(2).and_then(|n| n.parse().ok()), args.get(3))
    else {
        eprintln!("usage: scale-root NODES CORES_PER_NODE DIR");
        std::process::exit(2);
    };
    let extra = |i: usize, default: u32| args.get(i).and_then(|n| n.parse().ok()).unwrap_or(default);
    let shape = big_machine::BigMachine {
        nodes,
        cores_per_node: cores,
        cores_per_cluster: extra(8, 1),
        nics: extra(4, nodes),
        nic_queues: extra(5, 32),
        nvmes: extra(6, nodes),
        nvme_queues: extra(7, 32),
        interrupts: false,
    };
    shape.write(std::path::Path::new(dir));
}
