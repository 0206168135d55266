//! Writes a synthetic root of NODES nodes × CORES cores × 2 threads (topology only) to DIR, for
//! measuring how memory and time grow with CPUs: `cargo run --release --example scale-root --
//! NODES CORES DIR`.

#[path = "../tests/common/sysfs_tree.rs"]
mod sysfs_tree;

use irqwise::topology::synthetic::SyntheticMachine;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(nodes), Some(cores), Some(dir)) =
        (args.get(1).and_then(|n| n.parse().ok()), args.get(2).and_then(|n| n.parse().ok()), args.get(3))
    else {
        eprintln!("usage: scale-root NODES CORES_PER_NODE DIR");
        std::process::exit(2);
    };
    let mut topo = SyntheticMachine::new(nodes, cores, 2).build();
    topo.kernel = Some("6.12.0".into());
    sysfs_tree::write_topology(std::path::Path::new(dir), &topo);
}
