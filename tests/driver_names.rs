//! Acceptance: every driver of the name table, with fixture devices named exactly as the driver
//! names its IRQs (tests/data/irq_names/drivers.txt), reads back the role and queue of every
//! vector through discovery; sideband vectors are never queues. A NIC whose driver irqwise does
//! not know is left alone with one warning, and placed like any NIC once a rule's
//! `queue_pattern` teaches its names.
//!
//! `IRQWISE_CORPUS_ROOT=DIR cargo test --test driver_names -- --ignored write_corpus_root` writes
//! every corpus device into one fixture root: `irqwise plan --root DIR` of any build then shows
//! how that build reads each corpus name (each IRQ row's NAME and QUEUE).

#[path = "common/acceptance.rs"]
mod acceptance;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use acceptance::fixture::FixtureRoot;
use acceptance::*;
use irqwise::devices::discover::discover_devices;
use irqwise::devices::name_table::DRIVERS;
use irqwise::devices::{QueueRole, Recognition};
use irqwise::sysfs::Root;
use irqwise::topology::discover::read_topology;

/// One corpus device: driver, PCI class, address, interface, and (name, role, queue) per vector.
struct CorpusDevice {
    driver: String,
    class: u32,
    bdf: String,
    ifname: Option<String>,
    what: String,
    vectors: Vec<(String, QueueRole, Option<u32>)>,
}

fn role(word: &str) -> QueueRole {
    match word {
        "rx" => QueueRole::Rx,
        "tx" => QueueRole::Tx,
        "rxtx" => QueueRole::RxTx,
        "io" => QueueRole::Io,
        "admin" => QueueRole::Admin,
        "misc" => QueueRole::Misc,
        other => panic!("corpus: unknown role {other:?}"),
    }
}

/// The corpus file, parsed. Vector lines are `<name>  <role> [queue]`: the name is everything
/// before the last run of two or more spaces ahead of the role.
fn corpus() -> Vec<CorpusDevice> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/irq_names/drivers.txt");
    let text = fs::read_to_string(&path).unwrap();
    let mut out: Vec<CorpusDevice> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("device ") {
            let f: Vec<&str> = rest.splitn(6, ' ').collect();
            out.push(CorpusDevice {
                driver: f[0].into(),
                class: u32::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap(),
                bdf: f[2].into(),
                ifname: (f[3] != "-").then(|| f[3].to_string()),
                what: f[4..].join(" "),
                vectors: Vec::new(),
            });
            continue;
        }
        let body = line.trim();
        let cut = body.rfind("  ").unwrap_or_else(|| panic!("corpus line without role: {line:?}"));
        let (name, tail) = (body[..cut].trim_end(), body[cut..].trim());
        let mut words = tail.split_whitespace();
        let r = role(words.next().unwrap());
        let q = words.next().map(|q| q.parse().unwrap());
        out.last_mut().expect("vector before any device").vectors.push((name.to_string(), r, q));
    }
    out
}

/// Writes `devices` into the root at `dir` (which has CPUs already).
fn write_devices(dir: &Path, devices: &[&CorpusDevice]) -> FixtureRoot {
    let mut fx = FixtureRoot::at(dir);
    for d in devices {
        let names: Vec<&str> = d.vectors.iter().map(|(n, _, _)| n.as_str()).collect();
        fx.msi_device(&d.bdf, d.class, &d.driver, Some(0), &names);
        if let Some(ifname) = &d.ifname {
            fx.net_interface(&d.bdf, ifname);
        }
    }
    fx
}

/// Discovers the corpus devices of `driver` and checks every vector's role, queue and source.
fn check_driver(driver: &str) {
    let all = corpus();
    let mine: Vec<&CorpusDevice> = all.iter().filter(|d| d.driver == driver).collect();
    assert!(!mine.is_empty(), "no corpus device for driver {driver}");
    let dir = cpu_root(1, 4, 1, "6.12.0");
    write_devices(dir.path(), &mine);
    let root = Root::new(dir.path());
    let found = discover_devices(&root, &node_topology_of(&root)).unwrap();
    for want in &mine {
        let dev = found.devices.iter().find(|d| d.bdf == want.bdf).expect("device discovered");
        assert_eq!(dev.vectors.len(), want.vectors.len(), "{} {}", want.driver, want.what);
        for (v, (name, role, queue)) in dev.vectors.iter().zip(&want.vectors) {
            assert_eq!(v.name.as_deref(), Some(name.as_str()));
            assert_eq!((v.role, v.queue), (*role, *queue), "{driver} ({}): {name:?}", want.what);
            assert!(
                matches!(v.recognised, Recognition::Table { .. }),
                "{driver}: {name:?} recognised as {:?}",
                v.recognised
            );
            if matches!(role, QueueRole::Misc | QueueRole::Admin) {
                assert_eq!(v.queue, None, "{driver}: sideband {name:?} must not be a queue");
            }
        }
    }
}

fn node_topology_of(root: &Root) -> irqwise::topology::Topology {
    read_topology(root).unwrap()
}

macro_rules! driver_tests {
    ($($test:ident => $driver:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_driver($driver);
            }
        )*

        /// Every driver of the table has a test above and devices in the corpus.
        #[test]
        fn every_table_entry_has_a_test() {
            let tested: BTreeSet<&str> = [$($driver),*].into_iter().collect();
            let corpus_drivers: BTreeSet<String> = corpus().into_iter().map(|d| d.driver).collect();
            for e in DRIVERS {
                let name = e.drivers[0];
                assert!(tested.contains(name), "table entry {name} has no driver test");
                assert!(corpus_drivers.contains(name), "table entry {name} has no corpus device");
            }
        }
    };
}

driver_tests! {
    mlx5_core => "mlx5_core",
    mlx4_core_counts_from_one => "mlx4_core",
    i40e_flow_director_is_not_a_queue => "i40e",
    ice_control_vsi_is_not_a_queue => "ice",
    iavf => "iavf",
    idpf => "idpf",
    ixgbe => "ixgbe",
    ixgbevf => "ixgbevf",
    igb => "igb",
    igc => "igc",
    e1000e => "e1000e",
    bnxt_en_split_rings_and_cut_names => "bnxt_en",
    bnx2x => "bnx2x",
    tg3_vector_zero_and_cut_names => "tg3",
    qede => "qede",
    ena => "ena",
    gve_tx_before_rx => "gve",
    virtio_pci => "virtio-pci",
    vmxnet3 => "vmxnet3",
    thunder_nicvf => "nicvf",
    octeontx2_pf => "rvu_nicpf",
    nfp => "nfp",
    liquidio => "LiquidIO",
    hns3_counts_in_twos => "hns3",
    hinic => "hinic",
    enic => "enic",
    mana => "mana",
    sfc => "sfc",
    cxgb4 => "cxgb4",
    be2net => "be2net",
    octeon_ep => "octeon_ep",
    octeon_ep_vf => "octeon_ep_vf",
    ionic => "ionic",
    nvme => "nvme",
    megaraid_sas => "megaraid_sas",
    mpt3sas => "mpt3sas",
    lpfc => "lpfc",
    smartpqi => "smartpqi",
    hisi_sas_v3_hw => "hisi_sas_v3_hw",
    qla2xxx => "qla2xxx",
}

#[test]
fn octeontx2_vf() {
    check_driver("rvu_nicvf");
}

const MADE_UP: &str = "0000:5a:00.0";

/// A 2-node root with one NIC of a driver irqwise does not know, named its own way.
fn made_up_nic() -> (tempfile::TempDir, Vec<u32>) {
    let dir = two_node_root("6.12.0");
    let mut fx = FixtureRoot::at(dir.path());
    fx.msi_device(MADE_UP, 0x020000, "foonic", Some(1), &["foonic-ctl", "foo-q0", "foo-q1", "foo-q2", "foo-q3"]);
    fx.net_interface(MADE_UP, "foo0");
    let irqs = fx.irqs_of(MADE_UP).to_vec();
    (dir, irqs)
}

fn affinity(root: &Path, irq: u32) -> String {
    fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list"))).unwrap().trim().to_string()
}

#[test]
fn a_nic_of_an_unknown_driver_is_left_alone_with_one_warning() {
    let (dir, irqs) = made_up_nic();
    let config = empty_config();
    let before: Vec<String> = irqs.iter().map(|&i| affinity(dir.path(), i)).collect();
    let plan = plan_json(dir.path(), config.path());
    let dev = device(&plan, MADE_UP);
    for p in acceptance::irqs(dev) {
        assert_eq!(p["action"], "skip", "{p}");
        assert!(p["reason"].as_str().unwrap().contains("name not recognised for driver foonic"), "{p}");
        assert_eq!(p["recognised"]["by"], "unknown-driver", "{p}");
    }
    let warnings: Vec<&str> = plan["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    let mine: Vec<&&str> = warnings.iter().filter(|w| w.contains(MADE_UP)).collect();
    assert_eq!(mine.len(), 1, "{warnings:?}");
    assert!(mine[0].contains("5 of 5 IRQs") && mine[0].contains("queue_pattern"), "{}", mine[0]);

    run_ok(dir.path(), config.path(), &["apply"]);
    let after: Vec<String> = irqs.iter().map(|&i| affinity(dir.path(), i)).collect();
    assert_eq!(after, before, "nothing written");
}

#[test]
fn a_queue_pattern_rule_teaches_the_names() {
    let (dir, irqs) = made_up_nic();
    let config = config_with("[[device]]\nmatch = { driver = \"foonic\" }\nqueue_pattern = 'foo-q(?P<queue>\\d+)'\n");
    let plan = plan_json(dir.path(), config.path());
    let dev = device(&plan, MADE_UP);
    let ps = acceptance::irqs(dev);
    // The control vector matches no pattern: left alone; the queues are spread from node 1.
    assert_eq!(ps[0]["action"], "skip");
    let order: Vec<u32> = node_order(dir.path(), 1);
    for (q, p) in ps[1..].iter().enumerate() {
        assert_eq!((p["role"].as_str(), p["queue"].as_u64()), (Some("rxtx"), Some(q as u64)), "{p}");
        assert_eq!(p["recognised"]["by"], "rule", "{p}");
        assert_eq!(set_of(&p["desired"]), cpus(&order[q].to_string()), "queue {q}: {p}");
    }
    run_ok(dir.path(), config.path(), &["apply"]);
    for (q, irq) in irqs[1..].iter().enumerate() {
        assert_eq!(affinity(dir.path(), *irq), order[q].to_string(), "queue {q} written");
    }
    let table = run_ok(dir.path(), config.path(), &["plan"]);
    assert!(table.contains("names: not recognised (1), rule ") && table.contains("(?P<queue>\\d+)' (4)"), "{table}");
}

/// The first CPUs of the cores-first order from `node` on a fixture root: one thread of each of
/// the node's cores (lowest CPU of each core), read from the fixture's own files.
fn node_order(root: &Path, node: u32) -> Vec<u32> {
    let mut firsts: Vec<u32> = node_cpus(root, node).iter().map(|c| core_of(root, c).first().unwrap()).collect();
    firsts.sort_unstable();
    firsts.dedup();
    firsts
}

#[test]
fn a_bad_queue_pattern_is_a_located_config_error() {
    let (dir, _) = made_up_nic();
    let config = config_with("[[device]]\nmatch = { driver = \"foonic\" }\nqueue_pattern = 'foo-q\\d+'\n");
    let out = irqwise(dir.path(), config.path()).arg("check-config").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(err.contains("50-test.toml:3:17: queue_pattern = \"foo-q\\\\d+\" has no named group `queue`"), "{err}");
}

/// Writes every corpus device into `$IRQWISE_CORPUS_ROOT` (a 1-node, 4-CPU machine) for
/// comparing how irqwise builds read the corpus names (`irqwise plan --root DIR`).
#[test]
#[ignore]
fn write_corpus_root() {
    let dir = std::env::var("IRQWISE_CORPUS_ROOT").expect("IRQWISE_CORPUS_ROOT");
    let dir = Path::new(&dir);
    acceptance::fixture::write_cpu_topology(dir, 1, 4, 1);
    write_file(dir, "proc/sys/kernel/osrelease", "6.12.0\n");
    let all = corpus();
    write_devices(dir, &all.iter().collect::<Vec<_>>());
}

#[test]
fn pin_needs_no_names_every_irq_of_an_unknown_driver_goes_to_the_cpus() {
    // pin places by device, not by queue: a vector whose name says nothing is pinned like the
    // others (without admin_cpus there is no separate place for non-queue vectors).
    let (dir, irqs) = made_up_nic();
    let config = config_with("[[device]]\nmatch = { driver = \"foonic\" }\nstrategy = \"pin\"\ncpus = \"2-3\"\n");
    let plan = plan_json(dir.path(), config.path());
    let ps = acceptance::irqs(device(&plan, MADE_UP));
    assert_eq!(ps.len(), irqs.len());
    for p in ps {
        assert_eq!(p["action"], "set", "{p}");
        assert_eq!(set_of(&p["desired"]), cpus("2-3"), "{p}");
    }
}

#[test]
fn a_nic_between_drivers_is_left_alone_without_a_warning() {
    // Unbound (being removed or probed): its IRQs belong to no driver irqwise could be taught.
    let (dir, irqs) = made_up_nic();
    fs::remove_file(dir.path().join(format!("sys/bus/pci/devices/{MADE_UP}/driver"))).unwrap();
    let plan = plan_json(dir.path(), empty_config().path());
    let dev = device(&plan, MADE_UP);
    assert!(dev["driver"].is_null(), "{dev}");
    assert_eq!(acceptance::irqs(dev).len(), irqs.len());
    assert!(acceptance::irqs(dev).iter().all(|p| p["action"] == "skip"), "{dev}");
    let warnings: Vec<&str> = plan["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().all(|w| !w.contains(MADE_UP)), "{warnings:?}");
}

#[test]
fn a_nic_passed_through_is_left_alone_without_a_warning() {
    // Bound to vfio-pci: its IRQs are named vfio-msix[N](BDF) and belong to the guest.
    let dir = two_node_root("6.12.0");
    let mut fx = FixtureRoot::at(dir.path());
    let names: Vec<String> = (0..4).map(|n| format!("vfio-msix[{n}]({MADE_UP})")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    fx.msi_device(MADE_UP, 0x020000, "vfio-pci", Some(1), &names);
    let plan = plan_json(dir.path(), empty_config().path());
    let dev = device(&plan, MADE_UP);
    assert_eq!(dev["strategy"], "leave", "{dev}");
    assert!(acceptance::irqs(dev).iter().all(|p| p["action"] == "skip"), "{dev}");
    let warnings: Vec<&str> = plan["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().all(|w| !w.contains(MADE_UP)), "{warnings:?}");
}
