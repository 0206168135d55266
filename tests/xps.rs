//! Transmit steering through the real binary against fixture roots: after `apply`, every online
//! CPU transmits on exactly one tx queue, the one whose IRQ is nearest to it by the topology the
//! fixture wrote (checked here from sysfs, not through irqwise); the steering follows the IRQs
//! when a CPU goes offline; traffic classes, missing files, several interfaces and `xps = false`
//! leave it alone with a reason; the daemon logs each change with its fields and puts the
//! original `xps_cpus` back on exit.

#[path = "common/bin.rs"]
mod bin;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use daemon_fixture::{affinity, write_config, Hotplug, Running};
use fixture::{FixtureRoot, NamingScheme};
use irqwise::cpuset::CpuSet;
use serde_json::Value;

const NIC: &str = "0000:81:00.0";
const TXQ: u32 = 8;

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// The machine: 2 nodes × 6 cores × 2 threads (24 CPUs; node 1 = 6-11,18-23), an ixgbe
/// NIC `eth1` on node 1 with 8 queue IRQs and 8 tx queues whose `xps_cpus` hold `xps`.
/// Returns the root and the queue IRQs in queue order.
fn nic_root(xps: &CpuSet) -> (tempfile::TempDir, Vec<u32>, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_cpu_topology(dir.path(), 2, 6, 2);
    let mut root = FixtureRoot::at(dir.path());
    root.nic(NIC, "ixgbe", "eth1", Some(1), TXQ, NamingScheme::TxRx);
    let queues = root.tx_queues(NIC, "eth1", TXQ, xps);
    let irqs = root.irqs_of(NIC)[..TXQ as usize].to_vec();
    (dir, irqs, queues)
}

/// `irqwise --root R --config C ARGS`: exit code, stdout, stderr.
fn irqwise(root: &Path, cfg: &Path, args: &[&str]) -> (i32, String, String) {
    let r = bin::ran(bin::irqwise_with(root, cfg).args(args));
    (r.code.unwrap_or(-1), r.stdout, r.stderr)
}

/// Every tx queue's `xps_cpus`, read as the kernel's hex mask.
fn xps_sets(queues: &Path) -> Vec<CpuSet> {
    (0..TXQ)
        .map(|q| {
            let text = fs::read_to_string(queues.join(format!("tx-{q}/xps_cpus"))).unwrap();
            CpuSet::parse_mask(text.trim()).unwrap()
        })
        .collect()
}

fn read_list(root: &Path, rel: &str) -> CpuSet {
    set(fs::read_to_string(root.join(rel)).unwrap().trim())
}

/// How near CPU `b` is to CPU `a` by what the fixture wrote: same CPU, SMT sibling
/// (`core_cpus_list`), same node (`node/nodeN/cpulist`), another node.
fn nearness(root: &Path, a: u32, b: u32) -> u8 {
    let core = read_list(root, &format!("sys/devices/system/cpu/cpu{a}/topology/core_cpus_list"));
    let node_of =
        |c: u32| (0..2).find(|n| read_list(root, &format!("sys/devices/system/node/node{n}/cpulist")).contains(c));
    match () {
        () if a == b => 0,
        () if core.contains(b) => 1,
        () if node_of(a) == node_of(b) => 2,
        () => 3,
    }
}

/// The rule, checked from sysfs alone: every online CPU in exactly one set, each in the set of
/// a queue whose IRQ is nearest to it, each queue's IRQ CPU in its own set (the queues here
/// never share a CPU), offline CPUs in none. Returns, per CPU, its queue.
fn check_rule(root: &Path, sets: &[CpuSet], irq_cpus: &[u32]) -> BTreeMap<u32, usize> {
    let online = read_list(root, "sys/devices/system/cpu/online");
    let mut queue_of = BTreeMap::new();
    for (q, s) in sets.iter().enumerate() {
        for c in s {
            assert!(online.contains(c), "offline CPU {c} in tx-{q}'s set {s}");
            assert!(queue_of.insert(c, q).is_none(), "CPU {c} in two sets: {sets:?}");
        }
    }
    assert_eq!(queue_of.keys().copied().collect::<CpuSet>(), online, "every online CPU sends on a queue: {sets:?}");
    for (&c, &q) in &queue_of {
        let best = irq_cpus.iter().map(|&a| nearness(root, c, a)).min().unwrap();
        assert_eq!(
            nearness(root, c, irq_cpus[q]),
            best,
            "CPU {c} sends on tx-{q} (IRQ on {}), not a nearest queue",
            irq_cpus[q]
        );
    }
    for (q, &c) in irq_cpus.iter().enumerate() {
        assert!(sets[q].contains(c), "tx-{q}'s IRQ CPU {c} not in its set {}", sets[q]);
    }
    queue_of
}

fn irq_cpus(root: &Path, irqs: &[u32]) -> Vec<u32> {
    irqs.iter()
        .map(|&i| {
            let a = affinity(root, i);
            assert_eq!(a.len(), 1, "irq {i} on one CPU: {a}");
            a.first().unwrap()
        })
        .collect()
}

fn plan_json(root: &Path, cfg: &Path) -> Value {
    let (code, out, err) = irqwise(root, cfg, &["plan", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn every_cpu_transmits_on_the_queue_whose_irq_is_nearest_and_it_follows_a_cpu_offline() {
    let (root, irqs, queues) = nic_root(&CpuSet::new());
    let cfg = tempfile::tempdir().unwrap();
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["apply"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("xps eth1 tx-0: - -> ") && out.contains("xps_cpus of 8 tx queue(s) written, 0 failed"),
        "{out}"
    );

    let cpus = irq_cpus(root.path(), &irqs);
    let sets = xps_sets(&queues);
    let queue_of = check_rule(root.path(), &sets, &cpus);
    let node1 = read_list(root.path(), "sys/devices/system/node/node1/cpulist");
    for c in &node1 {
        assert!(
            node1.contains(cpus[queue_of[&c]]),
            "node 1's CPU {c} sends on tx-{} whose IRQ is on node 0",
            queue_of[&c]
        );
    }
    let plan = plan_json(root.path(), cfg.path());
    let xps = &plan["devices"][0]["xps"];
    assert_eq!(xps["interface"], "eth1");
    for (q, s) in sets.iter().enumerate() {
        assert_eq!(xps["queues"][q]["action"], "keep", "after apply the plan keeps tx-{q}");
        assert_eq!(xps["queues"][q]["desired"], serde_json::json!(s.to_list_string()));
    }

    // Queue 0's CPU goes offline; the next pass moves its IRQ and the steering with it.
    let victim = cpus[0];
    Hotplug::new(root.path()).offline(victim, &irqs);
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["apply"]);
    assert_eq!(code, 0, "{out}{err}");
    let moved = irq_cpus(root.path(), &irqs);
    assert_ne!(moved[0], victim, "queue 0's IRQ left the offline CPU");
    let after = xps_sets(&queues);
    check_rule(root.path(), &after, &moved);
    assert!(after[0].contains(moved[0]), "tx-0's steering followed its IRQ to CPU {}: {}", moved[0], after[0]);
    assert!(after.iter().all(|s| !s.contains(victim)), "offline CPU {victim} sends on no queue: {after:?}");
}

#[test]
fn traffic_classes_missing_files_several_interfaces_and_xps_false_leave_it_alone() {
    let original = set("0-23");
    let untouched = |queues: &Path| assert!(xps_sets(queues).iter().all(|s| *s == original), "xps_cpus were written");

    // Traffic classes: tx-3 belongs to class 1.
    let (root, _, queues) = nic_root(&original);
    let cfg = tempfile::tempdir().unwrap();
    fs::write(queues.join("tx-3/traffic_class"), "1\n").unwrap();
    let (_, table, _) = irqwise(root.path(), cfg.path(), &["plan"]);
    assert!(
        table.contains("xps eth1: left alone: the device uses traffic classes (tx-3/traffic_class is \"1\")"),
        "{table}"
    );
    let skipped = plan_json(root.path(), cfg.path())["devices"][0]["xps"]["skipped"].as_str().unwrap().to_string();
    assert!(skipped.contains("traffic classes"), "{skipped}");
    let (code, out, err) = irqwise(root.path(), cfg.path(), &["apply"]);
    assert_eq!(code, 0, "{out}{err}");
    untouched(&queues);

    // No xps_cpus (a kernel without CONFIG_XPS).
    let (root, _, queues) = nic_root(&original);
    fs::remove_file(queues.join("tx-5/xps_cpus")).unwrap();
    let skipped = plan_json(root.path(), cfg.path())["devices"][0]["xps"]["skipped"].as_str().unwrap().to_string();
    assert!(skipped.contains("tx-5 has no xps_cpus"), "{skipped}");

    // Two interfaces on the function (a representor): which queues are whose is unknown.
    let (root, _, queues) = nic_root(&original);
    FixtureRoot::at(root.path()).net_interface(NIC, "eth1rep0");
    let skipped = plan_json(root.path(), cfg.path())["devices"][0]["xps"]["skipped"].as_str().unwrap().to_string();
    assert!(skipped.contains("several network interfaces (eth1, eth1rep0)"), "{skipped}");
    irqwise(root.path(), cfg.path(), &["apply"]);
    untouched(&queues);

    // xps = false globally; a rule turns it back on for this NIC.
    let (root, _, queues) = nic_root(&original);
    write_config(cfg.path(), "[global]\nxps = false\n");
    let x = &plan_json(root.path(), cfg.path())["devices"][0]["xps"];
    assert_eq!(x["skipped"], "xps = false");
    irqwise(root.path(), cfg.path(), &["apply"]);
    untouched(&queues);
    write_config(cfg.path(), "[global]\nxps = false\n\n[[device]]\nmatch = { driver = \"ixgbe\" }\nxps = true\n");
    let x = &plan_json(root.path(), cfg.path())["devices"][0]["xps"];
    assert!(x["skipped"].is_null() && x["queues"].as_array().unwrap().len() == TXQ as usize, "{x}");
}

#[test]
fn a_nic_placed_by_another_strategy_keeps_its_steering() {
    // XPS follows NUMA-hop queue IRQs only: under a rule's cluster-group or pin, whatever
    // steering the NIC has is its owner's.
    let original = set("0-23");
    for strategy in ["strategy = \"cluster-group\"", "strategy = \"pin\"\ncpus = \"3\""] {
        let (root, _, queues) = nic_root(&original);
        let cfg = tempfile::tempdir().unwrap();
        write_config(cfg.path(), &format!("[[device]]\nmatch = {{ driver = \"ixgbe\" }}\n{strategy}\n"));
        let dev = &plan_json(root.path(), cfg.path())["devices"][0];
        assert_ne!(dev["strategy"], "numa-hop", "{dev}");
        assert!(dev["xps"].is_null(), "no XPS plan under {strategy}: {}", dev["xps"]);
        let (code, out, err) = irqwise(root.path(), cfg.path(), &["apply"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(xps_sets(&queues).iter().all(|s| *s == original), "xps_cpus written under {strategy}");
    }
}

#[test]
fn the_daemon_logs_each_change_with_its_fields() {
    let (root, _, _) = nic_root(&set("0-23"));
    let cfg = tempfile::tempdir().unwrap();
    let (code, _, err) = irqwise(root.path(), cfg.path(), &["--log-format", "json", "run", "--once"]);
    assert_eq!(code, 0, "{err}");
    let entries: Vec<Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["txq"].is_number())
        .collect();
    assert_eq!(entries.len(), TXQ as usize, "one entry per tx queue:\n{err}");
    let f = &entries[0]["fields"];
    assert_eq!((f["device"].as_str(), f["interface"].as_str(), f["txq"].as_u64()), (Some(NIC), Some("eth1"), Some(0)));
    assert_eq!(f["xps_old"], "0-23");
    assert_eq!(f["message_id"], irqwise::daemon::catalog::XPS_APPLIED, "{f}");
    assert!(!f["xps_new"].as_str().unwrap().is_empty() && f["xps_new"] != "0-23", "{f}");
    assert!(f["message"].as_str().unwrap().starts_with("xps of eth1 tx-0: 0-23 -> "), "{f}");
}

#[tokio::test]
async fn restore_on_exit_puts_the_original_xps_cpus_back() {
    // As a driver leaves them at probe: queue i on CPU i.
    let (root, _, queues) = nic_root(&CpuSet::new());
    for q in 0..TXQ {
        fs::write(
            queues.join(format!("tx-{q}/xps_cpus")),
            format!("{}\n", fixture::kernel_mask(&CpuSet::single(q), 23)),
        )
        .unwrap();
    }
    let before = xps_sets(&queues);
    let cfg = tempfile::tempdir().unwrap();
    write_config(cfg.path(), "[global]\nrestore_on_exit = true\n");
    let mut d = Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    assert_ne!(xps_sets(&queues), before, "the daemon steered the queues");
    let originals = fs::read_to_string(root.path().join("run/irqwise/originals.json")).unwrap();
    assert!(originals.contains("\"xps\"") && originals.contains("tx-7/xps_cpus"), "{originals}");
    d.stop().await;
    assert_eq!(xps_sets(&queues), before, "restored on exit");
    assert!(!root.path().join("run/irqwise/originals.json").exists());
}
