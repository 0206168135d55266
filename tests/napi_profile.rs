//! `[napi]`: per-instance interrupt mitigation, from the configuration (errors located, tables
//! layered by queue) through planning (only the keys that differ and the kernel takes; one
//! warning per device for keys it cannot take, one for a kernel older than the feature) to the
//! applier (each write read back; gone, unverified and refused told apart). Planned from
//! samples built in memory; the real kernel's napi-set is in tests/napi_socket.rs and the VM's
//! 41-napi-profile.

#[path = "common/config_text.rs"]
mod config_text;
#[path = "common/daemon_fixture.rs"]
mod daemon_fixture;
#[path = "common/fixture.rs"]
mod fixture;
#[path = "common/memory_devices.rs"]
mod memory_devices;
#[path = "common/schema_check.rs"]
mod schema_check;

use std::collections::{BTreeMap, BTreeSet};

use config_text::{assert_one_error, parse_ok};
use irqwise::apply::napi_socket::NapiSocketError;
use irqwise::apply::napi_write::{apply_napi, NapiOutcome, NapiWriter};
use irqwise::choices::{NapiMode, NapiProfile};
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::devices::napi::{
    InterfaceState, NapiInstance, NapiSettings, NapiThreaded, NetdevReport, NetdevView, QueueKind, QueueNapi,
};
use irqwise::devices::{Device, QueueRole};
use irqwise::events::Trigger;
use irqwise::plan::from_sample::{plan_sample, PassMemory};
use irqwise::plan::{Action, NapiView, Plan};
use irqwise::sample::Sample;
use irqwise::topology::synthetic::SyntheticMachine;

const IFINDEX: u32 = 3;
const ZEROS: NapiSettings =
    NapiSettings { defer_hard_irqs: Some(0), gro_flush_timeout: Some(0), irq_suspend_timeout: Some(0) };

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A NIC on node 1, interface eth0: misc IRQ 100, queues 0-3 on IRQs 101-104.
fn nic() -> Device {
    let all = cpus("0-7");
    let mut vectors = vec![memory_devices::vector(100, QueueRole::Misc, None, &all)];
    vectors.extend((0..4).map(|q| memory_devices::vector(101 + q, QueueRole::RxTx, Some(q), &all)));
    let mut dev = memory_devices::nic("0000:81:00.0", Some(1), Some("eth0"), vectors);
    dev.driver = Some("ice".into());
    dev
}

/// Instances 8193.. serving queues 0-3, each with `settings` and `threaded`.
fn reported(settings: NapiSettings, threaded: Option<NapiThreaded>) -> NetdevView {
    let mut report = NetdevReport::default();
    for q in 0..4u32 {
        let id = 8193 + q;
        report.napis.push(NapiInstance { ifindex: IFINDEX, id, irq: Some(101 + q), pid: None, threaded, settings });
        for kind in [QueueKind::Rx, QueueKind::Tx] {
            report.queues.push(QueueNapi { ifindex: IFINDEX, id: q, kind, napi: Some(id) });
        }
    }
    NetdevView::Reported(report)
}

fn sample(config: Config, kernel: &str, netdev: NetdevView) -> Sample {
    let mut topology = SyntheticMachine::new(2, 2, 2).build();
    topology.kernel = Some(kernel.into());
    let mut s = Sample::in_memory(config, topology, vec![nic()]);
    s.interfaces =
        BTreeMap::from([("eth0".to_string(), InterfaceState { ifindex: Some(IFINDEX), threaded: Some(false) })]);
    s.netdev = netdev;
    s
}

fn plan(s: &Sample) -> Plan {
    let known = BTreeSet::new();
    plan_sample(s, PassMemory { topology: None, known_managed: &known }).plan
}

fn instance(p: &Plan, id: u32) -> &NapiView {
    p.devices.iter().flat_map(|d| &d.napi).find(|n| n.id == id).unwrap_or_else(|| panic!("no instance {id}"))
}

const PROFILE: &str = "[napi]\ndefer_hard_irqs = 3\ngro_flush_timeout = \"50us\"\nirq_suspend_timeout = \"2ms\"\n";

// ---------------------------------------------------------------- configuration

#[test]
fn napi_tables_read_as_the_kernel_takes_them_and_layer_by_queue() {
    let c = parse_ok(&format!(
        "{PROFILE}\n[[device]]\nmatch = {{ interface = \"eth0\" }}\n[[device.napi]]\nqueues = \"0-1\"\ndefer_hard_irqs = 5\nthreaded = \"on\"\n[[device.napi]]\nqueues = \"1\"\ngro_flush_timeout = \"200ns\"\n"
    ));
    assert_eq!(
        c.global.napi.settings,
        NapiSettings {
            defer_hard_irqs: Some(3),
            gro_flush_timeout: Some(50_000),
            irq_suspend_timeout: Some(2_000_000)
        }
    );
    let ranges = &c.rules[0].settings.napi;
    assert_eq!(ranges.len(), 2);
    assert_eq!(ranges[0].queues, Some(BTreeSet::from([0, 1])));
    assert_eq!(ranges[0].profile.threaded, Some(NapiMode::On));
    // One table written as [device.napi] is the same as one [[device.napi]].
    let single = parse_ok("[[device]]\nmatch = { driver = \"ice\" }\n[device.napi]\ndefer_hard_irqs = 1\n");
    assert_eq!(single.rules[0].settings.napi.len(), 1);
    assert_eq!(single.rules[0].settings.napi[0].queues, None);
    // A drop-in's [napi] keys win key by key over the main file's.
    let report = irqwise::config::parse_files(
        &[
            irqwise::config::SourceFile { path: "a.toml".into(), text: PROFILE.into() },
            irqwise::config::SourceFile { path: "b.toml".into(), text: "[napi]\ndefer_hard_irqs = 9\n".into() },
        ],
        &config_text::possible(),
    );
    let napi = report.config.unwrap().global.napi;
    assert_eq!((napi.settings.defer_hard_irqs, napi.settings.gro_flush_timeout), (Some(9), Some(50_000)));
}

#[test]
fn every_bad_napi_value_is_one_error_at_its_place() {
    assert_one_error("[napi]\ndefer_hard_irqs = -1\n", 2, 19, &["napi.defer_hard_irqs", "-1", "0 to 2147483647"]);
    assert_one_error("[napi]\ndefer_hard_irqs = 2147483648\n", 2, 19, &["2147483648", "the kernel's limit"]);
    assert_one_error(
        "[napi]\ngro_flush_timeout = \"5m\"\n",
        2,
        21,
        &["napi.gro_flush_timeout", "\"5m\"", "ns, us, ms or s"],
    );
    assert_one_error(
        "[napi]\nirq_suspend_timeout = \"11s\"\n",
        2,
        23,
        &["napi.irq_suspend_timeout", "\"0ns\" to \"10s\""],
    );
    assert_one_error("[napi]\nthreaded = \"maybe\"\n", 2, 12, &["`maybe`", "`off`", "`on`", "`busy-poll`"]);
    assert_one_error("[napi]\nqueues = \"0-3\"\n", 2, 1, &["unknown field `queues`", "`defer_hard_irqs`"]);
    assert_one_error(
        "[[device]]\nmatch = { pci = \"*\" }\n[device.napi]\nqueues = \"3-1\"\n",
        4,
        11,
        &["napi.queues", "3-1"],
    );
}

// ---------------------------------------------------------------- planning

#[test]
fn only_the_keys_that_differ_are_written_and_a_per_queue_table_wins_on_its_queues() {
    let config = parse_ok(&format!(
        "{PROFILE}\n[[device]]\nmatch = {{ interface = \"eth0\" }}\n[[device.napi]]\nqueues = \"0-1\"\ndefer_hard_irqs = 5\n"
    ));
    let mut netdev = reported(ZEROS, Some(NapiThreaded::Disabled));
    // Instance 8196 (queue 3) already holds the profile: nothing to write.
    if let NetdevView::Reported(r) = &mut netdev {
        r.napis[3].settings = NapiSettings {
            defer_hard_irqs: Some(3),
            gro_flush_timeout: Some(50_000),
            irq_suspend_timeout: Some(2_000_000),
        };
        // Instance 8195 (queue 2) differs in one key only.
        r.napis[2].settings.gro_flush_timeout = Some(50_000);
        r.napis[2].settings.irq_suspend_timeout = Some(2_000_000);
    }
    let p = plan(&sample(config, "7.2.13+deb14-amd64", netdev));
    let q0 = instance(&p, 8193).profile.as_ref().unwrap();
    assert_eq!(q0.action, Action::Set);
    assert_eq!(
        q0.write.settings,
        NapiSettings {
            defer_hard_irqs: Some(5),
            gro_flush_timeout: Some(50_000),
            irq_suspend_timeout: Some(2_000_000)
        }
    );
    let q2 = instance(&p, 8195).profile.as_ref().unwrap();
    assert_eq!(q2.write.settings, NapiSettings { defer_hard_irqs: Some(3), ..NapiSettings::default() });
    let q3 = instance(&p, 8196).profile.as_ref().unwrap();
    assert_eq!((q3.action, q3.write), (Action::Keep, NapiProfile::default()), "as configured: not written");
    assert!(!p.warnings.iter().any(|w| w.contains("[napi]")), "{:?}", p.warnings);
    assert_eq!(p.napi_writes().count(), 3);
    // The table shows each instance's current -> desired; JSON the same.
    let table = p.to_table();
    assert!(table.contains("napi 8193 (irq 101, queue 0): set: defer_hard_irqs 0 -> 5, gro_flush_timeout 0ns -> 50us, irq_suspend_timeout 0ns -> 2ms"), "{table}");
    assert!(table.contains("napi 8196 (irq 104, queue 3): as configured: defer_hard_irqs 3"), "{table}");
    let json = serde_json::to_value(&p).unwrap();
    let napi = &json["devices"][0]["napi"][0];
    assert_eq!(napi["settings"]["defer_hard_irqs"], 0);
    assert_eq!(napi["profile"]["desired"]["defer_hard_irqs"], 5);
    assert_eq!(napi["profile"]["write"]["gro_flush_timeout"], 50_000);
    assert_eq!(napi["profile"]["action"], "set");
    // plan --json's schema describes them (it refuses properties it does not name).
    let mut doc = json.clone();
    doc["schema"] = serde_json::json!(irqwise::JSON_SCHEMA);
    let wrong = schema_check::violations(&schema_check::schema("plan"), &doc);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn nothing_is_planned_without_a_napi_table_or_for_a_device_left_alone() {
    let p = plan(&sample(Config::default(), "7.2", reported(ZEROS, None)));
    assert!(p.devices[0].napi.iter().all(|n| n.profile.is_none()));
    assert_eq!(p.napi_writes().count(), 0);
    let leave = parse_ok(&format!("{PROFILE}\n[[device]]\nmatch = {{ interface = \"eth0\" }}\nstrategy = \"leave\"\n"));
    let p = plan(&sample(leave, "7.2", reported(ZEROS, None)));
    assert_eq!(p.napi_writes().count(), 0, "strategy = leave leaves its instances too");
}

#[test]
fn keys_the_kernel_cannot_take_are_one_warning_per_device_and_the_rest_applies() {
    // 6.13-6.16: the settings, no per-instance threaded.
    let config = parse_ok(&format!("{PROFILE}threaded = \"on\"\n"));
    let p = plan(&sample(config.clone(), "6.14.0-1-amd64", reported(ZEROS, None)));
    let view = instance(&p, 8193).profile.as_ref().unwrap();
    assert_eq!(view.action, Action::Set);
    assert_eq!(view.write.threaded, None);
    assert_eq!(view.unsupported.iter().map(|u| (u.key, u.needs)).collect::<Vec<_>>(), vec![("threaded", "6.17")]);
    let said: Vec<&String> = p.warnings.iter().filter(|w| w.contains("[napi]")).collect();
    assert_eq!(said.len(), 1, "one line for the device, not one per instance: {said:?}");
    assert!(said[0].contains("0000:81:00.0 (eth0)") && said[0].contains("threaded needs 6.17"), "{}", said[0]);
    // busy-poll before 6.19.
    let busy = parse_ok("[napi]\nthreaded = \"busy-poll\"\n");
    let p = plan(&sample(busy, "6.18.3", reported(ZEROS, Some(NapiThreaded::Disabled))));
    assert_eq!(instance(&p, 8193).profile.as_ref().unwrap().action, Action::Skip);
    assert!(p.warnings.iter().any(|w| w.contains("threaded needs 6.19")), "{:?}", p.warnings);
}

#[test]
fn a_kernel_older_than_the_feature_is_said_once_for_the_machine() {
    // 6.12: napi-get reports instances without their mitigation.
    let p = plan(&sample(parse_ok(PROFILE), "6.12.41+deb12-amd64", reported(NapiSettings::default(), None)));
    let said: Vec<&String> = p.warnings.iter().filter(|w| w.contains("needs 6.13")).collect();
    assert_eq!(said.len(), 1, "{:?}", p.warnings);
    assert!(said[0].contains("6.12.41+deb12-amd64"), "{}", said[0]);
    assert_eq!(p.napi_writes().count(), 0);
    // 6.1: no netdev family at all.
    let none = NetdevView::Unavailable("the kernel has no netdev netlink family (it came with 6.3)".into());
    let p = plan(&sample(parse_ok(PROFILE), "6.1.0-41-amd64", none.clone()));
    let said: Vec<&String> = p.warnings.iter().filter(|w| w.contains("needs 6.13")).collect();
    assert_eq!(said.len(), 1, "{:?}", p.warnings);
    assert!(said[0].contains("no netdev netlink family"), "{}", said[0]);
    // Without [napi], the old kernel says nothing of it.
    let p = plan(&sample(Config::default(), "6.1.0-41-amd64", none));
    assert!(!p.warnings.iter().any(|w| w.contains("napi")), "{:?}", p.warnings);
}

// ---------------------------------------------------------------- applying

/// A kernel stand-in: instances by id; `lies` reads back another value; `refuse` fails sets.
#[derive(Default)]
struct FakeKernel {
    instances: BTreeMap<u32, NapiInstance>,
    lies: BTreeSet<u32>,
    refuse: Option<NapiSocketError>,
    sets: Vec<u32>,
}

impl NapiWriter for FakeKernel {
    fn set(&mut self, id: u32, s: &NapiSettings, threaded: Option<NapiThreaded>) -> Result<(), NapiSocketError> {
        if let Some(e) = &self.refuse {
            return Err(e.clone());
        }
        self.sets.push(id);
        let n = self.instances.get_mut(&id).ok_or(NapiSocketError::Refused { op: "set", id, errno: 2 })?;
        n.settings.defer_hard_irqs = s.defer_hard_irqs.or(n.settings.defer_hard_irqs);
        n.settings.gro_flush_timeout = s.gro_flush_timeout.or(n.settings.gro_flush_timeout);
        n.settings.irq_suspend_timeout = s.irq_suspend_timeout.or(n.settings.irq_suspend_timeout);
        n.threaded = threaded.or(n.threaded);
        Ok(())
    }

    fn get(&mut self, id: u32) -> Result<NapiInstance, NapiSocketError> {
        let mut n = self.instances.get(&id).cloned().ok_or(NapiSocketError::Refused { op: "get", id, errno: 2 })?;
        if self.lies.contains(&id) {
            n.settings.defer_hard_irqs = Some(0);
        }
        Ok(n)
    }
}

#[test]
fn each_write_is_read_back_and_gone_unverified_and_refused_are_told_apart() {
    let netdev = reported(ZEROS, None);
    let p = plan(&sample(parse_ok(PROFILE), "7.2", netdev.clone()));
    let NetdevView::Reported(r) = netdev else { unreachable!() };
    let mut kernel = FakeKernel::default();
    // 8193 and 8194 exist; 8195 reads back another value; 8196 is gone.
    for n in r.napis.iter().filter(|n| n.id != 8196) {
        kernel.instances.insert(n.id, n.clone());
    }
    kernel.lies.insert(8195);
    let changes = apply_napi(&p, &mut kernel, true);
    let results: Vec<(u32, &NapiOutcome)> = changes.iter().map(|c| (c.napi_id, &c.result)).collect();
    assert_eq!(results[0], (8193, &NapiOutcome::Written));
    assert_eq!(results[1], (8194, &NapiOutcome::Written));
    assert!(matches!(results[2], (8195, NapiOutcome::Unverified { read }) if read.settings.defer_hard_irqs == Some(0)));
    assert_eq!(results[3], (8196, &NapiOutcome::Gone));
    assert_eq!(kernel.instances[&8193].settings.defer_hard_irqs, Some(3));
    assert_eq!(changes[0].old.settings, ZEROS, "the keys written, as they were");
    // apply --json's schema describes each outcome.
    let napi_schema = &schema_check::schema("apply")["properties"]["napi"];
    let wrong = schema_check::violations(napi_schema, &serde_json::to_value(&changes).unwrap());
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Another root: nothing is written.
    let mut untouched = FakeKernel::default();
    assert!(apply_napi(&p, &mut untouched, false).iter().all(|c| c.result == NapiOutcome::NotThisMachine));
    assert!(untouched.sets.is_empty());
    // A sandbox without CAP_NET_ADMIN: every instance fails alike, marked machine-wide.
    let mut sandboxed = FakeKernel {
        refuse: Some(NapiSocketError::Refused { op: "set", id: 8193, errno: 1 }),
        ..FakeKernel::default()
    };
    let changes = apply_napi(&p, &mut sandboxed, true);
    assert!(changes
        .iter()
        .all(|c| matches!(&c.result, NapiOutcome::Failed { machine: true, error } if error.contains("not permitted"))));
}

#[test]
fn a_kernel_older_than_the_feature_is_said_without_its_netdev_answers_too() {
    // A snapshot or `--root` of a 6.1 machine keeps no netdev answers (the kernel has no family
    // to ask), and a 6.3-6.7 kernel has the family without napi-get: neither reports an
    // instance, and the plan must still say why [napi] is not applied.
    let cases = [
        ("6.1.0-41-amd64", NetdevView::NotThisMachine),
        ("6.5.0-1-amd64", NetdevView::Reported(NetdevReport::default())),
    ];
    for (kernel, netdev) in cases {
        let p = plan(&sample(parse_ok(PROFILE), kernel, netdev));
        let said: Vec<&String> = p.warnings.iter().filter(|w| w.contains("[napi]")).collect();
        assert_eq!(said.len(), 1, "{kernel}: {:?}", p.warnings);
        assert!(said[0].contains("needs 6.13") && said[0].contains(kernel), "{}", said[0]);
        assert!(p.to_table().contains(&format!("warning: {}", said[0])), "{kernel}: the table says it");
        let json = serde_json::to_value(&p).unwrap();
        assert!(json["warnings"].as_array().unwrap().iter().any(|w| w == said[0].as_str()), "{kernel}: --json says it");
        assert_eq!(p.napi_writes().count(), 0);
    }
    // Without [napi], nothing of it.
    let p = plan(&sample(Config::default(), "6.1.0-41-amd64", NetdevView::NotThisMachine));
    assert!(!p.warnings.iter().any(|w| w.contains("napi")), "{:?}", p.warnings);
}

// ---------------------------------------------------------------- the daemon's originals

/// A generic-netlink dump as the kernel sends it: one message per entry (its attributes), then
/// `NLMSG_DONE`.
fn genl_dump(messages: &[Vec<(u16, Vec<u8>)>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (seq, attrs) in messages.iter().enumerate() {
        let mut body = vec![11u8, 1, 0, 0];
        for (kind, value) in attrs {
            body.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
            body.extend_from_slice(&kind.to_ne_bytes());
            body.extend_from_slice(value);
            body.resize(body.len().next_multiple_of(4), 0);
        }
        out.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        out.extend_from_slice(&0x20u16.to_ne_bytes());
        out.extend_from_slice(&2u16.to_ne_bytes());
        out.extend_from_slice(&(seq as u32).to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(&body);
    }
    out.extend_from_slice(&20u32.to_ne_bytes());
    out.extend_from_slice(&3u16.to_ne_bytes());
    out.extend_from_slice(&[0; 14]);
    out
}

/// The daemon fixture's NIC eth1 (ifindex 3) with its 8 queues served by instances `first`..,
/// each polled from its queue's IRQ and holding `defer` and `suspend`, as netdev netlink dumps
/// below the root (where a plan of another root reads them).
fn write_instances(root: &std::path::Path, irqs: &[u32], first: u32, defer: u32, suspend: u64) {
    use irqwise::devices::discover::netdev_netlink::{CAPTURED_NAPI_GET, CAPTURED_QUEUE_GET};
    let u32b = |v: u32| v.to_ne_bytes().to_vec();
    let u64b = |v: u64| v.to_ne_bytes().to_vec();
    let mut napis = Vec::new();
    let mut queues = Vec::new();
    for q in 0..8u32 {
        let id = first + q;
        napis.push(vec![
            (1, u32b(IFINDEX)),
            (2, u32b(id)),
            (3, u32b(irqs[q as usize])),
            (5, u32b(defer)),
            (6, u64b(0)),
            (7, u64b(suspend)),
        ]);
        for kind in [0, 1] {
            queues.push(vec![(1, u32b(q)), (2, u32b(IFINDEX)), (3, u32b(kind)), (4, u32b(id))]);
        }
    }
    std::fs::create_dir_all(root.join(CAPTURED_NAPI_GET).parent().unwrap()).unwrap();
    std::fs::write(root.join(CAPTURED_NAPI_GET), genl_dump(&napis)).unwrap();
    std::fs::write(root.join(CAPTURED_QUEUE_GET), genl_dump(&queues)).unwrap();
}

/// The daemon fixture (eth1, ifindex 3) with [napi] `config` and instances 8193.. at the
/// kernel's defaults; its IRQs.
fn napi_daemon_root(root: &std::path::Path, cfg: &std::path::Path, config: &str) -> Vec<u32> {
    let irqs = daemon_fixture::nic_root(root);
    std::fs::create_dir_all(root.join("sys/class/net/eth1")).unwrap();
    std::fs::write(root.join("sys/class/net/eth1/ifindex"), format!("{IFINDEX}\n")).unwrap();
    write_instances(root, &irqs, 8193, 0, 0);
    daemon_fixture::write_config(cfg, config);
    irqs
}

/// The NAPI entries of the daemon's `originals.json`.
fn napi_originals(root: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(root.join("run/irqwise/originals.json")).unwrap_or_default();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    doc["napi"].as_array().cloned().unwrap_or_default()
}

const SUSPENDING: &str = "[napi]\ndefer_hard_irqs = 3\nirq_suspend_timeout = \"2ms\"\n";

#[tokio::test(flavor = "current_thread")]
async fn a_reset_that_renumbers_the_instances_keeps_one_original_per_queue() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = napi_daemon_root(root.path(), cfg.path(), SUSPENDING);
    let mut d = daemon_fixture::Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    assert_eq!(napi_originals(root.path()).len(), 8, "one entry per instance written");
    // Three resets (ethtool -L, a link flap): the driver's instances come back under new ids,
    // at the kernel's defaults.
    for reset in 1..=3 {
        write_instances(root.path(), &irqs, 8193 + 8 * reset, 0, 0);
        d.trigger(Trigger::Reconcile).await;
    }
    let kept = napi_originals(root.path());
    assert_eq!(kept.len(), 8, "at most one entry per queue after 3 resets: {kept:#?}");
    let ids: BTreeSet<u64> = kept.iter().filter_map(|o| o["napi_id"].as_u64()).collect();
    assert_eq!(ids, (8217..8225).collect(), "each entry names the instance serving its queue now");
    d.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_key_removed_from_the_config_is_given_back_and_then_forgotten() {
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = napi_daemon_root(root.path(), cfg.path(), SUSPENDING);
    let mut d = daemon_fixture::Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    // The kernel holds what irqwise wrote (a root of another machine is never written: its
    // answers say it instead).
    write_instances(root.path(), &irqs, 8193, 3, 2_000_000);
    daemon_fixture::write_config(cfg.path(), "[napi]\ndefer_hard_irqs = 3\n");
    d.trigger(Trigger::Reload).await;
    let kept = napi_originals(root.path());
    assert!(kept.iter().all(|o| o["settings"]["irq_suspend_timeout"] == 0), "not given back yet: {kept:#?}");
    let daemon = d.stop().await;
    for view in daemon.last_plan().devices.iter().flat_map(|d| &d.napi) {
        let p = view.profile.as_ref().unwrap_or_else(|| panic!("instance {} has no profile", view.id));
        assert_eq!(p.action, Action::Set, "instance {}: {p:?}", view.id);
        assert_eq!(
            (p.write.settings.irq_suspend_timeout, p.write.settings.defer_hard_irqs),
            (Some(0), None),
            "instance {}: irq_suspend_timeout written back to what it was before irqwise, defer kept",
            view.id
        );
    }
    // The plan's JSON says what is given back, as its schema describes.
    let mut doc = serde_json::to_value(daemon.last_plan()).unwrap();
    assert_eq!(doc["devices"][0]["napi"][0]["profile"]["restore"], serde_json::json!({"irq_suspend_timeout": 0}));
    doc["schema"] = serde_json::json!(irqwise::JSON_SCHEMA);
    let wrong = schema_check::violations(&schema_check::schema("plan"), &doc);
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Once the kernel holds the original again, the key leaves the record; the rest stays.
    let (root, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let irqs = napi_daemon_root(root.path(), cfg.path(), SUSPENDING);
    let mut d = daemon_fixture::Running::start(root.path(), cfg.path());
    d.wait_passes(1).await;
    write_instances(root.path(), &irqs, 8193, 3, 2_000_000);
    daemon_fixture::write_config(cfg.path(), "[napi]\ndefer_hard_irqs = 3\n");
    d.trigger(Trigger::Reload).await;
    write_instances(root.path(), &irqs, 8193, 3, 0);
    d.trigger(Trigger::Reconcile).await;
    let kept = napi_originals(root.path());
    assert_eq!(kept.len(), 8, "{kept:#?}");
    assert!(
        kept.iter()
            .all(|o| o["settings"].get("irq_suspend_timeout").is_none() && o["settings"]["defer_hard_irqs"] == 0),
        "irq_suspend_timeout is no longer held, defer_hard_irqs is: {kept:#?}"
    );
    // Without [napi] at all, every key goes back, and the record empties once they are.
    daemon_fixture::write_config(cfg.path(), "");
    d.trigger(Trigger::Reload).await;
    write_instances(root.path(), &irqs, 8193, 0, 0);
    d.trigger(Trigger::Reconcile).await;
    assert_eq!(napi_originals(root.path()), Vec::<serde_json::Value>::new());
    d.stop().await;
}
