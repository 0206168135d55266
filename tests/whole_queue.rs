//! Placing the whole queue, planned from samples built in memory: queue identity from the
//! kernel's netdev netlink report (it wins over the IRQ's name, and a disagreement is kept), and
//! NAPI threads on the CPUs of their instance's IRQ (from netlink, or from a driver's queue
//! order), after the guard (a banned CPU is out of the thread's set as of the IRQ's).
//!
//! The machine: `SyntheticMachine::new(2, 2, 2)`, x86 numbering (siblings N / N+4): node 1
//! holds cores {2,6} and {3,7}, so a node-1 NIC's queues 0 and 1 go to CPUs 2 and 3
//! (hand-derived from the spec, as in tests/sample_plan.rs).

#[path = "common/memory_devices.rs"]
mod memory_devices;

use std::collections::{BTreeMap, BTreeSet};

use irqwise::choices::NapiThreads;
use irqwise::config::Config;
use irqwise::cpuset::CpuSet;
use irqwise::devices::napi::{
    InterfaceState, NapiInstance, NapiSettings, NapiThread, NapiThreaded, NetdevReport, NetdevView, QueueKind,
    QueueNapi,
};
use irqwise::devices::{Device, QueueRole};
use irqwise::plan::from_sample::{plan_sample, PassMemory};
use irqwise::plan::{Action, Plan, QueueSource, ThreadPlacement};
use irqwise::sample::Sample;
use irqwise::topology::synthetic::SyntheticMachine;

const IFINDEX: u32 = 3;

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A NIC of `driver` on node 1, interface eth0: misc IRQ 100, rx queues 0 and 1 named on IRQs
/// 101 and 102.
fn nic(driver: &str) -> Device {
    let all = cpus("0-7");
    let vectors = vec![
        memory_devices::vector(100, QueueRole::Misc, None, &all),
        memory_devices::vector(101, QueueRole::Rx, Some(0), &all),
        memory_devices::vector(102, QueueRole::Rx, Some(1), &all),
    ];
    let mut dev = memory_devices::nic("0000:81:00.0", Some(1), Some("eth0"), vectors);
    dev.driver = Some(driver.into());
    dev
}

fn sample(config: Config, dev: Device) -> Sample {
    let mut s = Sample::in_memory(config, SyntheticMachine::new(2, 2, 2).build(), vec![dev]);
    s.interfaces =
        BTreeMap::from([("eth0".to_string(), InterfaceState { ifindex: Some(IFINDEX), threaded: Some(true) })]);
    s
}

/// The kernel's report: NAPI instance `napi` polled from `irq` serves rx and tx queue `queue`.
fn reported(instances: &[(u32, Option<u32>, u32)]) -> NetdevView {
    let mut report = NetdevReport::default();
    for &(napi, irq, queue) in instances {
        report.napis.push(NapiInstance {
            ifindex: IFINDEX,
            id: napi,
            irq,
            pid: None,
            threaded: None,
            settings: NapiSettings::default(),
        });
        for kind in [QueueKind::Rx, QueueKind::Tx] {
            report.queues.push(QueueNapi { ifindex: IFINDEX, id: queue, kind, napi: Some(napi) });
        }
    }
    NetdevView::Reported(report)
}

/// Thread `napi/eth0-ID` with pid `pid`, allowed on every CPU.
fn thread(pid: u32, napi_id: u32) -> NapiThread {
    NapiThread { pid, interface: "eth0".into(), napi_id, current: Some(cpus("0-7")), last_cpu: Some(0) }
}

fn plan(s: &Sample) -> Plan {
    let known = BTreeSet::new();
    plan_sample(s, PassMemory { topology: None, known_managed: &known }).plan
}

fn placement(plan: &Plan, irq: u32) -> &irqwise::plan::Placement {
    plan.find_irq(irq).map_or_else(|| panic!("irq {irq} is not in {plan:?}"), |(_, p)| p)
}

fn thread_of(plan: &Plan, pid: u32) -> &ThreadPlacement {
    plan.devices.iter().flat_map(|d| &d.napi_threads).find(|t| t.pid == pid).unwrap_or_else(|| panic!("pid {pid}"))
}

#[test]
fn the_kernels_queue_wins_over_the_name_and_the_disagreement_is_kept() {
    // The names say 101 = queue 0 and 102 = queue 1; the kernel says the opposite.
    let mut s = sample(Config::default(), nic("ice"));
    s.netdev = reported(&[(8193, Some(101), 1), (8194, Some(102), 0)]);
    let p = plan(&s);
    assert_eq!(placement(&p, 101).queue, Some(1));
    assert_eq!(placement(&p, 102).queue, Some(0));
    assert_eq!(placement(&p, 101).queue_source, Some(QueueSource::Netlink));
    assert_eq!(placement(&p, 101).desired, Some(cpus("3")), "queue 1's CPU, as the kernel numbers it");
    assert_eq!(placement(&p, 102).desired, Some(cpus("2")));
    let mut seen: Vec<(u32, u32, u32)> =
        p.queue_disagreements.iter().map(|d| (d.irq, d.kernel_queue, d.name_queue)).collect();
    seen.sort_unstable();
    assert_eq!(seen, vec![(101, 1, 0), (102, 0, 1)]);
    let json = serde_json::to_value(&p).unwrap();
    let irqs = json["devices"][0]["irqs"].as_array().unwrap();
    let source = |irq: u32| irqs.iter().find(|i| i["irq"] == irq).map(|i| i["queue_source"].clone());
    assert_eq!(source(101), Some(serde_json::json!("netlink")));
    assert!(source(100).is_some_and(|s| s.is_null()), "the misc IRQ serves no queue: no source");
    assert_eq!(json["queue_disagreements"].as_array().map(Vec::len), Some(2));
}

#[test]
fn queues_the_kernel_does_not_name_are_told_by_name_without_disagreement() {
    let mut s = sample(Config::default(), nic("ice"));
    // The kernel names IRQ 101 only, with the queue its name says.
    s.netdev = reported(&[(8193, Some(101), 0), (8194, None, 1)]);
    let p = plan(&s);
    assert_eq!(placement(&p, 101).queue_source, Some(QueueSource::Netlink));
    assert_eq!(placement(&p, 102).queue_source, Some(QueueSource::Name));
    assert_eq!(placement(&p, 102).queue, Some(1));
    assert!(p.queue_disagreements.is_empty(), "{:?}", p.queue_disagreements);
    assert!(p.notices.is_empty(), "the kernel answered: {:?}", p.notices);
}

#[test]
fn threads_follow_the_irq_the_kernel_names_for_their_instance() {
    let mut s = sample(Config::default(), nic("ice"));
    s.netdev = reported(&[(8193, Some(101), 0), (8194, Some(102), 1)]);
    s.napi_threads = vec![thread(500, 8194), thread(501, 8193)];
    let p = plan(&s);
    let (t0, t1) = (thread_of(&p, 501), thread_of(&p, 500));
    assert_eq!((t0.irq, t0.by), (Some(101), Some("netlink")));
    assert_eq!((t1.irq, t1.by), (Some(102), Some("netlink")));
    assert_eq!(t0.desired, placement(&p, 101).desired);
    assert_eq!(t1.desired, placement(&p, 102).desired);
    assert_eq!(t0.desired, Some(cpus("2")));
    assert_eq!(t0.action, Action::Set);
    assert!(p.devices[0].napi_threads.iter().all(|t| t.action == Action::Set));
}

#[test]
fn a_thread_follows_its_instances_irq_even_when_no_queue_names_the_instance() {
    // The kernel lists the instance with its IRQ but no queue served by it (a queue list cut
    // short, or an instance between queues): the instance's own IRQ still answers.
    let mut s = sample(Config::default(), nic("ice"));
    let mut report = NetdevReport::default();
    report.napis.push(NapiInstance {
        ifindex: IFINDEX,
        id: 8193,
        irq: Some(102),
        pid: None,
        threaded: None,
        settings: NapiSettings::default(),
    });
    s.netdev = NetdevView::Reported(report);
    s.napi_threads = vec![thread(500, 8193)];
    let p = plan(&s);
    let t = thread_of(&p, 500);
    assert_eq!((t.irq, t.by), (Some(102), Some("netlink")), "{t:?}");
    assert_eq!(t.desired, placement(&p, 102).desired);
}

#[test]
fn an_instance_irq_of_another_device_is_not_followed_its_queue_is() {
    // The kernel names IRQ 999 (not this function's) for the instance serving queue 0.
    let mut s = sample(Config::default(), nic("ice"));
    s.netdev = reported(&[(8193, Some(999), 0)]);
    s.napi_threads = vec![thread(500, 8193)];
    let p = plan(&s);
    let t = thread_of(&p, 500);
    assert_eq!((t.irq, t.by), (Some(101), Some("netlink")), "queue 0's IRQ: {t:?}");
}

#[test]
fn vmxnet3_threads_follow_their_queue_in_id_order_without_netlink() {
    let mut s = sample(Config::default(), nic("vmxnet3"));
    s.netdev = NetdevView::Unavailable("no netdev family".into());
    // Ids as the kernel gives them, listed out of order: the lower id is queue 0.
    s.napi_threads = vec![thread(601, 8200), thread(600, 8199)];
    let p = plan(&s);
    assert_eq!(thread_of(&p, 600).irq, Some(101));
    assert_eq!(thread_of(&p, 601).irq, Some(102));
    assert_eq!(thread_of(&p, 600).by, Some("driver-order"));
    assert_eq!(thread_of(&p, 601).desired, Some(cpus("3")));
    assert_eq!(p.notices.len(), 1, "one notice says why names are read: {:?}", p.notices);
    assert!(p.notices[0].contains("no netdev family"), "{}", p.notices[0]);
    assert!(p.warnings.is_empty(), "an old kernel is not a problem: {:?}", p.warnings);
}

#[test]
fn a_thread_that_cannot_be_attributed_is_listed_and_left_alone() {
    let mut s = sample(Config::default(), nic("ice"));
    s.netdev = NetdevView::Unavailable("refused".into());
    s.napi_threads = vec![thread(700, 8193)];
    let p = plan(&s);
    let t = thread_of(&p, 700);
    assert_eq!((t.action, t.irq, t.desired.as_ref()), (Action::Skip, None, None));
    assert!(t.reason.contains("cannot be told"), "{}", t.reason);
    assert_eq!(p.devices[0].napi_threads.len(), 1, "listed");
}

#[test]
fn napi_threads_leave_keeps_every_thread_where_it_is() {
    let mut config = Config::default();
    config.global.napi_threads = NapiThreads::Leave;
    let mut s = sample(config, nic("ice"));
    s.netdev = reported(&[(8193, Some(101), 0)]);
    s.napi_threads = vec![thread(800, 8193)];
    let p = plan(&s);
    let t = thread_of(&p, 800);
    assert_eq!((t.action, t.irq), (Action::Skip, Some(101)), "attributed, and left");
}

#[test]
fn a_banned_cpu_leaves_the_threads_set_as_it_leaves_the_irqs() {
    let mut config = Config::default();
    config.global.banned_cpus = cpus("2");
    let mut s = sample(config, nic("ice"));
    s.netdev = reported(&[(8193, Some(101), 0), (8194, Some(102), 1)]);
    s.napi_threads = vec![thread(900, 8193), thread(901, 8194)];
    let p = plan(&s);
    for (pid, irq) in [(900, 101), (901, 102)] {
        let t = thread_of(&p, pid);
        assert_eq!(t.desired, placement(&p, irq).desired, "pid {pid} follows irq {irq}");
        assert!(!t.desired.as_ref().is_some_and(|d| d.contains(2)), "CPU 2 is banned: {t:?}");
    }
}

#[test]
fn a_thread_already_on_its_irqs_cpus_is_kept() {
    let mut s = sample(Config::default(), nic("ice"));
    s.netdev = reported(&[(8193, Some(101), 0)]);
    let mut t = thread(1000, 8193);
    t.current = Some(cpus("2"));
    s.napi_threads = vec![t];
    let p = plan(&s);
    assert_eq!(thread_of(&p, 1000).action, Action::Keep);
}

/// Decodes the hex of a capture in tests/data/netlink.
fn capture(file: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(format!("{}/tests/data/netlink/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let t: String = text.split_whitespace().collect();
    (0..t.len()).step_by(2).map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap()).collect()
}

/// The 6.12 guest's answer for its vmxnet3 eth0 (ifindex 2): instances 8193-8200 with their
/// threads' pids (8193 is pid 453, 8194 pid 452), no IRQ, no queue naming an instance.
fn vmxnet3_612() -> irqwise::devices::napi::NetdevReport {
    let dumps = irqwise::devices::napi::NetdevDumps {
        napi_get: capture("napi-get-6.12-vmxnet3.hex"),
        queue_get: capture("queue-get-6.12-vmxnet3.hex"),
    };
    dumps.report().unwrap()
}

#[test]
fn the_612_vmxnet3_answer_names_threads_but_no_irq() {
    let r = vmxnet3_612();
    let eth0: Vec<(u32, Option<u32>, Option<u32>)> =
        r.napis.iter().filter(|n| n.ifindex == 2).map(|n| (n.id, n.irq, n.pid)).collect();
    assert_eq!(eth0.len(), 8);
    assert!(eth0.contains(&(8193, None, Some(453))) && eth0.contains(&(8200, None, Some(446))), "{eth0:?}");
    assert_eq!(r.queues.iter().filter(|q| q.ifindex == 2).count(), 16, "rx-0..7 and tx-0..7");
    assert!(r.queues.iter().all(|q| q.napi.is_none()), "no queue names its instance on 6.12");
    assert!(irqwise::devices::napi::queues_by_irq(&r, 2).is_empty(), "so no IRQ is told by the kernel");
}

#[test]
fn the_kernels_pid_to_instance_wins_over_a_cut_thread_name() {
    let mut s = sample(Config::default(), nic("vmxnet3"));
    s.interfaces.get_mut("eth0").unwrap().ifindex = Some(2);
    s.netdev = NetdevView::Reported(vmxnet3_612());
    // pid 452 runs instance 8194 (queue 1) but its name, cut as kernels before 5.17 cut
    // kthread names, says 81: by name it would sort first and take queue 0.
    s.napi_threads = vec![thread(453, 8193), thread(452, 81)];
    let p = plan(&s);
    assert_eq!((thread_of(&p, 453).irq, thread_of(&p, 453).by), (Some(101), Some("driver-order")));
    assert_eq!(thread_of(&p, 452).irq, Some(102), "queue 1's IRQ, as the kernel's id says");
    assert_eq!(thread_of(&p, 452).name, "napi/eth0-81", "moved only while it runs the name it had");
    assert!(p.queue_disagreements.is_empty() && p.notices.is_empty());
}

#[test]
fn a_thread_of_one_instance_made_threaded_follows_the_queue_of_its_rank_among_all_instances() {
    // 6.17: `napi-set threaded` on instance 8195 alone (queue 1 of 8193..8196 here, the driver
    // adding one per queue in queue order). Its rank among the threads (0) would say queue 0.
    let mut s = sample(Config::default(), nic("vmxnet3"));
    s.interfaces.get_mut("eth0").unwrap().threaded = Some(false);
    let mut report = NetdevReport::default();
    for id in 8193..=8196 {
        let (threaded, pid) =
            if id == 8195 { (NapiThreaded::Enabled, Some(700)) } else { (NapiThreaded::Disabled, None) };
        report.napis.push(NapiInstance {
            ifindex: IFINDEX,
            id,
            irq: None,
            pid,
            threaded: Some(threaded),
            settings: NapiSettings::default(),
        });
    }
    s.netdev = NetdevView::Reported(report);
    s.napi_threads = vec![thread(700, 8195)];
    let p = plan(&s);
    // Instances 8193, 8194 are queues 0 and 1 of this 2-queue NIC; 8195 would be queue 2, which
    // it does not have: the thread cannot be attributed and is left alone, not put on queue 0.
    assert_eq!(thread_of(&p, 700).irq, None, "{:?}", thread_of(&p, 700));
    assert_eq!(thread_of(&p, 700).action, Action::Skip);
    // Instance 8194 threaded instead: queue 1's IRQ.
    let NetdevView::Reported(r) = &mut s.netdev else { unreachable!() };
    for n in &mut r.napis {
        (n.threaded, n.pid) =
            if n.id == 8194 { (Some(NapiThreaded::Enabled), Some(700)) } else { (Some(NapiThreaded::Disabled), None) };
    }
    s.napi_threads = vec![thread(700, 8194)];
    let p = plan(&s);
    assert_eq!((thread_of(&p, 700).irq, thread_of(&p, 700).by), (Some(102), Some("driver-order")));
    assert_eq!(thread_of(&p, 700).desired, placement(&p, 102).desired);
    // The plan lists every instance with its own mode, its thread and the IRQ of its queue.
    let napi = &p.devices[0].napi;
    assert_eq!(napi.iter().map(|n| n.id).collect::<Vec<_>>(), [8193, 8194, 8195, 8196]);
    let n = napi.iter().find(|n| n.id == 8194).unwrap();
    assert_eq!((n.irq, n.threaded, n.pid), (Some(102), Some(NapiThreaded::Enabled), Some(700)));
    assert_eq!(napi.iter().find(|n| n.id == 8193).unwrap().irq, Some(101));
    assert_eq!(napi.iter().find(|n| n.id == 8196).unwrap().irq, None, "no queue 3 on this NIC");
}

#[test]
fn each_nic_says_what_its_driver_does_across_resets_on_the_running_kernel() {
    let resets = |driver: &str, kernel: &str| {
        let mut s = sample(Config::default(), nic(driver));
        s.topology.kernel = Some(kernel.into());
        let p = plan(&s);
        let r = p.devices[0].resets.expect("a NIC has a reset rule");
        (r.mask.as_str(), r.napi_ids_kept)
    };
    assert_eq!(resets("ice", "7.2.13+deb14-amd64"), ("core-keeps", Some(true)));
    assert_eq!(resets("ice", "6.14.3"), ("unknown", Some(true)));
    assert_eq!(resets("ice", "6.12.118+deb12-amd64"), ("unknown", None));
    // A virtio NIC's PCI function is bound to virtio-pci; its rule is virtio_net's.
    assert_eq!(resets("virtio-pci", "7.2.13+deb14-amd64"), ("driver-spreads", Some(true)));
    assert_eq!(resets("vmxnet3", "6.1.0-57-amd64"), ("vectors-kept", Some(false)));
    assert_eq!(resets("bnxt_en", "6.12.0"), ("driver-spreads", None));
    assert_eq!(resets("bnxt_en", "6.15.0"), ("hint-only", Some(true)));
}
