//! What the kernel says and does about each NIC of a plan: its NAPI instances as `napi-get`
//! reports them (id, IRQ, own threaded mode, thread), and what its driver does to masks and
//! NAPI ids across resets on the running kernel ([`crate::kernel::nic_resets`]).
//!
//! Pure: runs on a plan whose IRQ masks are final, beside the NAPI threads.

use super::napi_threads::instance_irq;
use super::{DevicePlan, NapiView, Plan};
use crate::devices::napi::{NapiSlot, NapiThreaded, NetdevReport};
use crate::devices::{Device, DeviceClass};
use crate::kernel::facts::{FactSource, Feature};
use crate::kernel::nic_resets::{reset_rule_of, MaskKeeper, ResetRule};
use crate::kernel::KernelVersion;
use crate::sample::Sample;

/// Fills `resets` and `napi` of every NIC of `plan` (`plan.devices[i]` is `sample.devices[i]`).
pub fn describe_nics(plan: &mut Plan, sample: &Sample) {
    let version = sample.topology.kernel.as_deref().and_then(|k| KernelVersion::parse(k).ok());
    let report = sample.netdev.report();
    for (dp, dev) in plan.devices.iter_mut().zip(&sample.devices) {
        if dev.class != DeviceClass::Nic {
            continue;
        }
        let facts = &sample.kernel_facts;
        let notifies = facts.feature(Feature::HotplugNotifiesDriver).value();
        dp.resets = dev.driver.as_deref().map(|d| reset_rule_of(net_driver(d), facts.driver(d), version, notifies));
        let Some(report) = report else { continue };
        dp.napi = napi_views(report, dev, sample, dp);
    }
}

/// The network driver of a NIC whose PCI function is bound to `driver`: a virtio NIC's function
/// is bound to `virtio-pci`, and its network device to `virtio_net`.
fn net_driver(driver: &str) -> &str {
    if driver == "virtio-pci" {
        "virtio_net"
    } else {
        driver
    }
}

/// `  resets: MASK, by SOURCE (WHY)`, and whether the driver rewrites its XPS maps (checked after
/// a reset) with where that was learnt.
fn reset_line(r: &ResetRule) -> String {
    let by = match r.source {
        FactSource::Module => "by its module",
        FactSource::Version => "by the kernel's version",
        _ => "by nothing known",
    };
    let xps = match (r.xps_rewritten, r.xps_source) {
        (Some(true), FactSource::Module) => "; its module writes XPS maps: xps_cpus checked after a reset",
        (Some(true), _) => "; it writes XPS maps (by the driver table): xps_cpus checked after a reset",
        _ => "",
    };
    format!("  resets: {}, {by} ({}){xps}\n", r.mask.as_str(), r.why)
}

/// The NAPI instances the kernel reports for `dev`'s interfaces, by id, each with its IRQ as a
/// NAPI thread of it would follow ([`instance_irq`]).
fn napi_views(report: &NetdevReport, dev: &Device, sample: &Sample, dp: &DevicePlan) -> Vec<NapiView> {
    let mut out = Vec::new();
    for interface in &dev.interfaces {
        let Some(ifindex) = sample.interfaces.get(interface).and_then(|s| s.ifindex) else { continue };
        let index = report.interface(ifindex);
        let slots = index.slots();
        for (rank, n) in index.instances().enumerate() {
            let irq = instance_irq(n.id, Some(rank), Some(&index), dev, dp).map(|(irq, _)| irq);
            out.push(NapiView {
                id: n.id,
                ifindex,
                slot: slots.get(&n.id).copied().unwrap_or(NapiSlot::Position(rank as u32)),
                irq,
                queue: index.lowest_queue(n.id).map(|(_, q)| q),
                threaded: n.threaded,
                pid: n.pid,
                settings: n.settings,
                profile: None,
            });
        }
    }
    out.sort_by_key(|v| v.id);
    out
}

/// The device lines of the table: `  resets: driver-spreads, by its module (ena writes ...)`
/// and `  napi: 4 instances, ids 8236-8239 (kept across resets); threaded: 8239 (pid 651)`.
pub(super) fn render(dp: &super::DevicePlan) -> String {
    let mut out = String::new();
    // A driver of which nothing is known gets no line: the JSON says `unknown`, the table stays short.
    if let Some(r) = dp
        .resets
        .filter(|r| r.mask != MaskKeeper::Unknown || r.napi_ids_kept.is_some() || r.source == FactSource::Module)
    {
        out.push_str(&reset_line(&r));
    }
    if let (Some(first), Some(last)) = (dp.napi.first(), dp.napi.last()) {
        let kept = match dp.resets.and_then(|r| r.napi_ids_kept) {
            Some(true) => " (kept across resets)",
            Some(false) => " (renumbered on every reset)",
            None => "",
        };
        let ids = if first.id == last.id { first.id.to_string() } else { format!("{}-{}", first.id, last.id) };
        let threaded: Vec<String> = dp
            .napi
            .iter()
            .filter(|n| n.threaded.is_some_and(NapiThreaded::is_threaded))
            .map(|n| match n.pid {
                Some(pid) => format!("{} (pid {pid})", n.id),
                None => n.id.to_string(),
            })
            .collect();
        let threaded = if threaded.is_empty() { String::new() } else { format!("; threaded: {}", threaded.join(", ")) };
        out.push_str(&format!("  napi: {} instances, ids {ids}{kept}{threaded}\n", dp.napi.len()));
        for line in dp.napi.iter().filter_map(super::napi_profile::render_instance) {
            out.push_str(&line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::nic_resets::reset_rule;

    #[test]
    fn the_table_says_the_rule_and_the_instances_in_two_lines() {
        let mut dp = crate::plan::test_plans::nic("0000:81:00.0", Vec::new());
        assert_eq!(render(&dp), "", "nothing known, nothing said");
        dp.resets = Some(reset_rule("r8169", KernelVersion::parse("6.15").ok()));
        assert_eq!(render(&dp), "", "an unknown driver gets no line");
        dp.resets = Some(reset_rule("bnxt_en", KernelVersion::parse("6.15").ok()));
        let view = |id, threaded, pid| NapiView {
            id,
            ifindex: 3,
            slot: NapiSlot::Position(id - 8193),
            irq: None,
            queue: None,
            threaded,
            pid,
            settings: crate::devices::napi::NapiSettings::default(),
            profile: None,
        };
        dp.napi = vec![
            view(8193, Some(NapiThreaded::Disabled), None),
            view(8194, Some(NapiThreaded::Enabled), Some(700)),
            view(8195, None, None),
        ];
        let text = render(&dp);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("  resets: hint-only, by the kernel's version (from 6.13 bnxt_en sets only the hint"),
            "{text}"
        );
        assert!(lines[0].ends_with("(by the driver table): xps_cpus checked after a reset"), "{text}");
        assert_eq!(lines[1], "  napi: 3 instances, ids 8193-8195 (kept across resets); threaded: 8194 (pid 700)");
        assert_eq!(net_driver("virtio-pci"), "virtio_net");
        assert_eq!(net_driver("ice"), "ice");
    }
}
