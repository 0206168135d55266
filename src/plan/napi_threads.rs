//! The NAPI threads of NICs running threaded NAPI, placed with their queue: each thread gets the
//! CPUs of the IRQ of its NAPI instance, so a queue's receive processing runs where its interrupt
//! fires (with threaded NAPI the IRQ's CPU runs only the hard interrupt).
//!
//! Which IRQ a thread's instance has: the kernel's netdev netlink family where it names the
//! instance's IRQ, or the queue it serves; else, for a driver that adds one instance per queue in
//! queue order ([`NAPI_IN_QUEUE_ORDER`]), the thread's rank among its interface's threads by NAPI
//! id. A thread that cannot be attributed is listed and left alone.
//!
//! Pure: runs on a plan whose IRQ masks are final (after the guard).

use std::collections::BTreeMap;

use super::{Action, DevicePlan, Placement, Plan, QueueSource, ThreadPlacement};
use crate::choices::NapiThreads;
use crate::devices::napi::{InterfaceNapis, NapiThread, NetdevView, QueueKind};
use crate::devices::{Device, DeviceClass, QueueRole};
use crate::policy::Policy;
use crate::sample::Sample;

/// Drivers that add one NAPI instance per receive queue, in queue order, each polled from that
/// queue's IRQ: vmxnet3 (`vmxnet3_probe()` adds `rx_queue[i].napi` for i in order when every
/// queue has its own MSI-X vector, transmit completions polled in the same instance). Their
/// instances get consecutive ids in that order, so the i-th thread by id serves queue i.
pub const NAPI_IN_QUEUE_ORDER: &[&str] = &["vmxnet3"];

/// Plans the NAPI threads of every NIC of `plan` (`plan.devices[i]` is `sample.devices[i]`,
/// decided by `policies[i]`).
pub fn plan_napi_threads(plan: &mut Plan, sample: &Sample, policies: &[Policy]) {
    if sample.napi_threads.is_empty() {
        return;
    }
    let report = sample.netdev.report();
    for ((dp, dev), policy) in plan.devices.iter_mut().zip(&sample.devices).zip(policies) {
        if dev.class != DeviceClass::Nic {
            continue;
        }
        for interface in &dev.interfaces {
            let ifindex = sample.interfaces.get(interface).and_then(|s| s.ifindex);
            let index = report.zip(ifindex).map(|(r, i)| r.interface(i));
            let by_pid: BTreeMap<u32, u32> =
                index.iter().flat_map(InterfaceNapis::instances).filter_map(|n| Some((n.pid?, n.id))).collect();
            // Each thread with its name as read, and the NAPI id the kernel reports for its pid.
            let mut threads: Vec<(String, NapiThread)> = sample
                .napi_threads
                .iter()
                .filter(|t| &t.interface == interface)
                .map(|t| (thread_name(t), with_reported_id(t, &by_pid)))
                .collect();
            threads.sort_by_key(|(_, t)| t.napi_id);
            // A thread's rank in queue order: among every instance the kernel reports for the
            // interface (6.17 threads single instances: the threads alone skip queues), else
            // among the threads (an interface's switch threads every instance).
            let instances = index.as_ref().map(InterfaceNapis::ids).unwrap_or_default();
            for (i, (name, t)) in threads.into_iter().enumerate() {
                let rank = if instances.is_empty() { Some(i) } else { instances.binary_search(&t.napi_id).ok() };
                let found = instance_irq(t.napi_id, rank, index.as_ref(), dev, dp);
                dp.napi_threads.push(place_thread(&t, name, found, dp, policy.napi_threads));
            }
        }
    }
}

/// The name `t` runs under (`napi/IF-ID`, as read): a pid is moved only while it runs it.
fn thread_name(t: &NapiThread) -> String {
    format!("napi/{}-{}", t.interface, t.napi_id)
}

/// `t` with the NAPI id of the instance the kernel reports its pid for (6.10 and later; `by_pid`
/// of its interface), which wins over the id its name gives (a name cut at 15 characters by a
/// kernel before 5.17 ends in part of the id).
fn with_reported_id(t: &NapiThread, by_pid: &BTreeMap<u32, u32>) -> NapiThread {
    NapiThread { napi_id: by_pid.get(&t.pid).copied().unwrap_or(t.napi_id), ..t.clone() }
}

/// The IRQ of NAPI instance `napi_id` (of rank `rank` in queue order) and how it was found: the
/// kernel names it, or the queue the kernel says the instance serves, or (a driver adding one
/// instance per queue in queue order, [`NAPI_IN_QUEUE_ORDER`]) the receive queue of its rank.
pub(super) fn instance_irq(
    napi_id: u32,
    rank: Option<usize>,
    index: Option<&InterfaceNapis>,
    dev: &Device,
    dp: &DevicePlan,
) -> Option<(u32, &'static str)> {
    let owns = |irq: u32| dp.irqs.iter().any(|p| p.irq == irq);
    if let Some(index) = index {
        if let Some(irq) = index.instance(napi_id).and_then(|n| n.irq).filter(|&i| owns(i)) {
            return Some((irq, "netlink"));
        }
        if let Some((kind, q)) = index.lowest_queue(napi_id) {
            if let Some(p) = queue_irq(dp, q, kind) {
                return Some((p.irq, "netlink"));
            }
        }
    }
    let ordered = dev.driver.as_deref().is_some_and(|d| NAPI_IN_QUEUE_ORDER.contains(&d));
    let q = u32::try_from(rank?).ok()?;
    ordered.then(|| queue_irq(dp, q, QueueKind::Rx)).flatten().map(|p| (p.irq, "driver-order"))
}

/// The placement of the IRQ serving queue `q` of kind `kind` (a combined queue serves both).
fn queue_irq(dp: &DevicePlan, q: u32, kind: QueueKind) -> Option<&Placement> {
    let fits = |role: QueueRole| match kind {
        QueueKind::Rx => matches!(role, QueueRole::Rx | QueueRole::RxTx),
        QueueKind::Tx => matches!(role, QueueRole::Tx | QueueRole::RxTx),
    };
    dp.irqs.iter().find(|p| p.queue == Some(q) && fits(p.role))
}

/// `t` placed on the final CPUs of IRQ `found` (those written or kept; for an IRQ left alone,
/// where it is).
fn place_thread(
    t: &NapiThread,
    name: String,
    found: Option<(u32, &'static str)>,
    dp: &DevicePlan,
    how: NapiThreads,
) -> ThreadPlacement {
    let irq = found.map(|(irq, _)| irq);
    let p = irq.and_then(|irq| dp.irqs.iter().find(|p| p.irq == irq));
    let target = p.and_then(|p| match p.action {
        Action::Set | Action::Keep => p.desired.clone(),
        Action::Managed | Action::Skip => p.current.clone(),
    });
    let (action, desired, reason) = match (how, &target) {
        (NapiThreads::Leave, _) => (Action::Skip, None, "napi_threads = leave".to_string()),
        (_, None) if irq.is_none() => {
            (Action::Skip, None, "the IRQ of its NAPI instance cannot be told: left alone".to_string())
        }
        (_, None) => (Action::Skip, None, "its IRQ's CPUs are not known: left alone".to_string()),
        (_, Some(cpus)) if cpus.is_empty() => (Action::Skip, None, "its IRQ has no CPU to follow".to_string()),
        (_, Some(cpus)) => {
            let irq = irq.unwrap_or_default();
            let action = if t.current.as_ref() == Some(cpus) { Action::Keep } else { Action::Set };
            (action, Some(cpus.clone()), format!("follows irq {irq} of its NAPI instance"))
        }
    };
    ThreadPlacement {
        pid: t.pid,
        name,
        napi_id: t.napi_id,
        irq,
        by: found.map(|(_, by)| by),
        current: t.current.clone(),
        desired,
        action,
        reason,
        last_cpu: t.last_cpu,
    }
}

/// Why NIC queues are told by IRQ names on this machine, when the kernel could not be asked.
pub fn identity_notice(sample: &Sample) -> Option<String> {
    let NetdevView::Unavailable(why) = &sample.netdev else { return None };
    sample.devices.iter().any(|d| d.class == DeviceClass::Nic).then(|| {
        format!("the kernel's netdev netlink family cannot be asked ({why}): NIC queues are told by their IRQ names")
    })
}

/// The queue each IRQ of `sample`'s NICs serves as the kernel says it (see
/// [`crate::devices::napi::queues_by_irq`]), for all of them.
pub fn kernel_queues(sample: &Sample) -> BTreeMap<u32, crate::devices::napi::KernelQueue> {
    let Some(report) = sample.netdev.report() else { return BTreeMap::new() };
    let mut out = BTreeMap::new();
    for dev in sample.devices.iter().filter(|d| d.class == DeviceClass::Nic) {
        for interface in &dev.interfaces {
            let Some(ifindex) = sample.interfaces.get(interface).and_then(|s| s.ifindex) else { continue };
            for (irq, q) in crate::devices::napi::queues_by_irq(report, ifindex) {
                if dev.vectors.iter().any(|v| v.irq == irq) {
                    out.insert(irq, q);
                }
            }
        }
    }
    out
}

/// `  queue identity: netlink 6, name 2` for a device some of whose queues the kernel
/// identified; empty when every queue was told by its name (the `names:` line says how).
pub(super) fn render_identity(irqs: &[Placement]) -> String {
    let count = |s: QueueSource| irqs.iter().filter(|p| p.queue_source == Some(s)).count();
    let (netlink, name) = (count(QueueSource::Netlink), count(QueueSource::Name));
    if netlink == 0 {
        return String::new();
    }
    format!("  queue identity: netlink {netlink}, name {name}\n")
}

/// One line per NAPI thread: `  thread napi/eth0-8193 (pid 312) irq 30 by driver-order: 0-7 ->
/// 3 set (follows irq 30 of its NAPI instance)`.
pub(super) fn render_threads(threads: &[ThreadPlacement]) -> String {
    let cpus = |c: Option<&crate::cpuset::CpuSet>| c.map_or("?".to_string(), crate::cpuset::CpuSet::to_list_string);
    let mut out = String::new();
    for t in threads {
        let irq = t.irq.map_or("?".to_string(), |i| i.to_string());
        let by = t.by.map_or(String::new(), |b| format!(" by {b}"));
        let arrow = match t.action {
            Action::Set => format!("{} -> {}", cpus(t.current.as_ref()), cpus(t.desired.as_ref())),
            _ => cpus(t.current.as_ref()),
        };
        let action = format!("{:?}", t.action).to_lowercase();
        out.push_str(&format!("  thread {} (pid {}) irq {irq}{by}: {arrow} {action} ({})\n", t.name, t.pid, t.reason));
    }
    out
}
