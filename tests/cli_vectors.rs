//! The whole path on every golden vector: the vector's machine is written out as the sysfs tree a
//! kernel would show (offline CPUs without `topology/`, as on a real system), read back by
//! topology discovery inside the real `irqwise` binary, and `spread groups` / `spread numa`
//! must print exactly the kernel's results.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/sysfs_tree.rs"]
mod sysfs_tree;
#[path = "common/vectors.rs"]
mod vectors;

use std::path::Path;

use irqwise::cpuset::CpuSet;
use irqwise::topology::{OfflineMasks, Topology};
use serde_json::Value;

use vectors::Case;

/// The kernel release whose rules give this vector variant.
fn kernel_for(algorithm: &str, sort: &str) -> &'static str {
    match (algorithm, sort) {
        ("cluster_aware", _) => "7.0",
        ("mainline", "heapsort-v5.1") => "6.8",
        ("mainline", "heapsort-v6.9") => "6.9",
        ("mainline", "heapsort-v6.11") => "6.11",
        other => panic!("unknown variant {other:?}"),
    }
}

/// What sysfs shows: masks only for online CPUs; the arch decides what the kernel sees for the
/// others, exactly as the vector's `offline_topology_masks` says.
fn as_sysfs_shows(mut topo: Topology, offline_mode: &str) -> Topology {
    let (arch, mode) = match offline_mode {
        "empty" => ("x86_64", OfflineMasks::Empty),
        "self" => ("aarch64", OfflineMasks::SelfOnly),
        other => panic!("vector offline mode {other:?} has no sysfs form"),
    };
    topo.arch = Some(arch.into());
    topo.offline_masks = mode;
    for cpu in topo.cpus.values_mut().filter(|c| !c.online) {
        cpu.core = None;
        cpu.cluster = None;
    }
    topo
}

fn irqwise_json(root: &Path, args: &[&str]) -> Value {
    let out = bin::irqwise(root).args(args).output().expect("run");
    assert!(out.status.success(), "irqwise {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("irqwise {args:?}: bad JSON: {e}"))
}

/// A CPU list string (a set: a group) or an array of ids (an order).
fn cpus_of(v: &Value) -> Vec<u32> {
    if let Some(list) = v.as_str() {
        return irqwise::cpuset::CpuSet::parse_list(list).expect("a CPU list").iter().collect();
    }
    v.as_array().expect("array").iter().map(|c| c.as_u64().expect("cpu id") as u32).collect()
}

fn check_vector_file(file: &str) -> usize {
    let vf = vectors::load(file);
    let topo = as_sysfs_shows(vf.topology.to_topology(), &vf.topology.offline_topology_masks);
    let dir = tempfile::tempdir().expect("tempdir");
    sysfs_tree::write_topology(dir.path(), &topo);
    let mut checked = 0;
    for case in &vf.cases {
        match case {
            Case::Groups(g) => {
                for r in &g.results {
                    let kernel = kernel_for(&r.algorithm, &r.sort);
                    let n = g.numgrps.to_string();
                    let out =
                        irqwise_json(dir.path(), &["spread", "groups", "--groups", &n, "--kernel", kernel, "--json"]);
                    let got: Vec<CpuSet> = out["groups"]
                        .as_array()
                        .expect("groups")
                        .iter()
                        .map(|g| cpus_of(g).into_iter().collect())
                        .collect();
                    assert_eq!(
                        got, r.groups,
                        "{file} numgrps={} {}/{} (kernel {kernel})",
                        g.numgrps, r.algorithm, r.sort
                    );
                    checked += 1;
                }
            }
            Case::Spread(s) => {
                let node = s.node.to_string();
                for (order, want) in [
                    ("kernel", &s.cpumask_local_spread),
                    ("hops", &s.for_each_numa_hop_mask),
                    ("legacy", &s.cpumask_local_spread_legacy),
                ] {
                    let out =
                        irqwise_json(dir.path(), &["spread", "numa", "--node", &node, "--order", order, "--json"]);
                    assert_eq!(&cpus_of(&out["order"]), want, "{file} node {node} order {order}");
                    checked += 1;
                }
            }
        }
    }
    checked
}

#[test]
fn every_vector_through_sysfs_discovery_and_the_cli() {
    let index = vectors::index();
    let mut total = 0;
    for entry in &index.files {
        let n = check_vector_file(&entry.file);
        println!("{}: {n} results reproduced through the CLI", entry.file);
        assert!(n > 0, "{}: no cases", entry.file);
        total += n;
    }
    println!("{total} results in all");
}

#[test]
fn default_kernel_rules_come_from_the_roots_osrelease() {
    let vf = vectors::load("t01_1node_8cpu_nosmt.json");
    let mut topo = as_sysfs_shows(vf.topology.to_topology(), "empty");
    let dir = tempfile::tempdir().expect("tempdir");
    for (release, want_algorithm) in [("6.1.0-57-amd64", "mainline"), ("7.0.0-1-amd64", "cluster")] {
        topo.kernel = Some(release.into());
        sysfs_tree::write_topology(dir.path(), &topo);
        let out = irqwise_json(dir.path(), &["spread", "groups", "--groups", "8", "--json"]);
        let major_minor: String = release.split('.').take(2).collect::<Vec<_>>().join(".");
        assert_eq!(out["kernel"], major_minor.as_str());
        assert_eq!(out["algorithm"], want_algorithm);
        assert_eq!(out["groups"].as_array().expect("groups").len(), 8);
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let vf = vectors::load("t07_uneven_nodes_8_3_5.json");
    sysfs_tree::write_topology(dir.path(), &as_sysfs_shows(vf.topology.to_topology(), "empty"));
    for (args, needle) in [
        (vec!["spread", "numa", "--node", "9"], "--node 9"),
        (vec!["spread", "groups", "--groups", "0"], "--groups 0"),
        (vec!["spread", "groups", "--groups", "2", "--kernel", "six"], "\"six\""),
    ] {
        let out = bin::irqwise(dir.path()).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
