//! Kernel-managed IRQs: the step after every strategy. A managed queue IRQ can only be predicted,
//! never moved: the kernel spread it with `group_cpus_evenly()` (kernel/irq/affinity.c,
//! `irq_create_affinity_masks()`) when the driver allocated it.
//!
//! Predicted: NVMe I/O queues (queue i → group i, per IRQ set), and storage HBAs whose vector
//! names carry the MSI-X index and whose managed vectors are known (read-only masks): the
//! leading unmanaged vectors are the driver's pre-vectors, the trailing ones its post-vectors,
//! and the rest are spread as one set. Other managed IRQs are reported with their current mask
//! and never claimed to match anything.
//!
//! The kernel spreads once, when the driver allocates the vectors, and keeps the masks: a CPU
//! hot-added or brought online later changes nothing. Predictions are made on the machine with
//! every present CPU online (the masks of CPUs offline now as they were seen online), and for
//! NVMe also on the machine as first seen this boot when that differs; a device takes the first
//! of these its masks agree with. Where the grouping depends on the node of a CPU irqwise cannot
//! know ([`Topology::unknown_node_cpus`]), the prediction is uncertain: only the CPUs whose
//! placement does not depend on it are compared.

use std::collections::BTreeSet;

use super::{queue_index, Decision, DeviceContext, QueueGrouping, Reason};
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, IrqVector, QueueRole};
use crate::topology::Topology;

/// Replaces the decision of every IRQ whose placement the kernel computes with the kernel's
/// placement (flagging where the current mask or blk-mq's map differ from it), and for storage
/// HBAs the decision of every managed IRQ with a report of where the driver put it. Other
/// decisions are returned unchanged.
pub(crate) fn predict(ctx: &DeviceContext, decisions: Vec<Decision>, known_managed: &BTreeSet<u32>) -> Vec<Decision> {
    let storage = ctx.device.class == DeviceClass::Storage;
    let layout = if storage { StorageLayout::of(ctx, known_managed) } else { None };
    let predicted = ctx.device.vectors.iter().any(|v| queue_index(v).is_some() && is_predicted(ctx, v, known_managed));
    let spread = predicted.then(|| Spread::choose(ctx, known_managed));
    ctx.device
        .vectors
        .iter()
        .zip(decisions)
        .map(|(v, d)| match (queue_index(v), &spread) {
            (Some(q), Some(spread)) if is_predicted(ctx, v, known_managed) => spread.prediction(ctx, v, q),
            (Some(q), _) if storage && is_managed(ctx, v, known_managed) => match &layout {
                Some(l) => l.prediction(v, q),
                None => chosen_by_driver(ctx, v),
            },
            (None, _) if storage && is_managed(ctx, v, known_managed) => chosen_by_driver(ctx, v),
            _ => d,
        })
        .collect()
}

/// What a prediction on one machine cannot know: the CPUs whose node is unknown, and the CPUs
/// whose group does not depend on them (`None`: none does).
struct Unknowns {
    reason: String,
    certain: Option<CpuSet>,
}

impl Unknowns {
    /// `None` when every CPU's node is known on `topo`. `group_cpus_evenly()` spreads the present
    /// CPUs first, so when only CPUs that are not present lack a node, the present CPUs' groups
    /// are still certain.
    fn of(topo: &Topology) -> Option<Unknowns> {
        let unknown = topo.unknown_node_cpus();
        if unknown.is_empty() {
            return None;
        }
        let arch = topo.arch.as_deref().unwrap_or("this architecture");
        if unknown.intersects(&topo.present) {
            let reason = format!("CPUs {unknown} have no node in sysfs");
            return Some(Unknowns { reason, certain: None });
        }
        let reason = format!(
            "CPUs {unknown} have no node in sysfs (possible, not present) and irqwise knows no rule giving them one on {arch}"
        );
        Some(Unknowns { reason, certain: Some(topo.present.clone()) })
    }

    /// Whether `a` and `b` differ where the prediction is certain.
    fn differ(this: Option<&Unknowns>, a: &CpuSet, b: &CpuSet) -> bool {
        match this.map(|u| &u.certain) {
            None => a != b,
            Some(None) => false,
            Some(Some(c)) => a.intersection(c) != b.intersection(c),
        }
    }
}

/// The machine an NVMe device's vectors are predicted on, its grouping, what it cannot know, and
/// the words for it when it is not the machine now.
struct Spread {
    grouping: QueueGrouping,
    unknowns: Option<Unknowns>,
    note: Option<String>,
}

impl Spread {
    /// The machine with every present CPU online, unless the device's masks disagree with it and
    /// agree with the machine as first seen this boot, or with the machine as it is now (present
    /// CPUs offline with the masks the kernel gives them: on x86 an offline CPU's cluster mask is
    /// empty, which makes 7.0's cluster-aware grouping fall back for its whole node, so a spread
    /// while CPUs were offline at boot, `nosmt` or `maxcpus=`, differs from one with every CPU up).
    fn choose(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Spread {
        Spread::fitting(ctx, known_managed).unwrap_or_else(|| Spread::on(ctx, ctx.home, None))
    }

    /// The first of the machines of [`Spread::choose`] the device's masks agree with, if any.
    fn fitting(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Option<Spread> {
        let home = Spread::on(ctx, ctx.home, None);
        if home.fits(ctx, known_managed) {
            return Some(home);
        }
        if let Some(first) = ctx.first {
            let then = Spread::on(ctx, first, Some(first_sight_words(first, ctx.home)));
            if then.fits(ctx, known_managed) {
                return Some(then);
            }
        }
        let offline = ctx.topo.present.difference(&ctx.topo.online);
        if offline.is_empty() {
            return None;
        }
        let words = format!("spread while CPUs {offline} were offline, as now");
        let now = Spread::on(ctx, ctx.topo, Some(words));
        now.fits(ctx, known_managed).then_some(now)
    }

    fn on(ctx: &DeviceContext, topo: &Topology, note: Option<String>) -> Spread {
        Spread { grouping: ctx.queue_grouping_on(topo), unknowns: Unknowns::of(topo), note }
    }

    /// Every predicted vector's mask and blk-mq entry agree with this grouping where it is certain.
    fn fits(&self, ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> bool {
        ctx.device.vectors.iter().filter(|v| is_predicted(ctx, v, known_managed)).all(|v| {
            let Some(q) = queue_index(v) else { return true };
            let group = self.grouping.groups.get(q as usize).cloned().unwrap_or_default();
            let blk_mq = ctx.device.nvme.as_ref().and_then(|n| n.blk_mq.get(q as usize));
            let u = self.unknowns.as_ref();
            !v.current.as_ref().is_some_and(|a| Unknowns::differ(u, a, &group))
                && !blk_mq.is_some_and(|m| Unknowns::differ(u, m, &group))
        })
    }

    /// Group `q` of the grouping, compared with the IRQ's mask and blk-mq's map.
    fn prediction(&self, ctx: &DeviceContext, v: &IrqVector, q: u32) -> Decision {
        let grouping = &self.grouping;
        let group = grouping.groups.get(q as usize).cloned().unwrap_or_default();
        let blk_mq = ctx.device.nvme.as_ref().and_then(|n| n.blk_mq.get(q as usize));
        // Written piece by piece into one string: a machine has thousands of these each pass.
        let why = Reason::new().text("kernel-managed: expected group ");
        let why = if grouping.sets.len() > 1 {
            let (set, index, size) = grouping.locate(q);
            let kind = if set == 0 { "default (write)" } else { "read" };
            why.num(index).text(" of the ").text(kind).text(" set of ").num(size)
        } else {
            why.num(q).text(" of ").num(grouping.queues)
        };
        let why = why.text(" = ").cpus(&group);
        let why = match &self.note {
            Some(n) => why.text(" (").text(n).text(")"),
            None => why,
        };
        compared(why, group, v.current.as_ref(), blk_mq, self.unknowns.as_ref())
    }
}

/// What `ctx.device`'s managed queue masks say of the grouping rule its context has (issue
/// #63): `None` when it shows none to go by (no predicted queue with a mask read, or CPUs whose
/// node irqwise cannot know), else whether a machine it may have been spread on (those
/// [`Spread::choose`] tries) reproduces every mask and blk-mq entry, and how many queue masks
/// were compared.
pub(crate) fn reproduces(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Option<(bool, usize)> {
    let shown = ctx
        .device
        .vectors
        .iter()
        .filter(|v| v.current.is_some() && queue_index(v).is_some() && is_predicted(ctx, v, known_managed))
        .count();
    if shown == 0 || Unknowns::of(ctx.home).is_some() {
        return None;
    }
    Some((Spread::fitting(ctx, known_managed).is_some(), shown))
}

/// How the machine as first seen this boot differs from `now`, for reasons: "spread as first
/// seen this boot, before CPUs 8 were added".
fn first_sight_words(first: &Topology, now: &Topology) -> String {
    let added = now.present.difference(&first.present);
    let removed = first.present.difference(&now.present);
    let mut what = Vec::new();
    if !added.is_empty() {
        what.push(format!("CPUs {added} were added"));
    }
    if !removed.is_empty() {
        what.push(format!("CPUs {removed} were removed"));
    }
    if what.is_empty() {
        what.push("CPUs came online or changed node".to_string());
    }
    format!("spread on the machine as first seen this boot, before {}", what.join(" and "))
}

/// Kernel-managed as far as we know: read-only mode, a failed write remembered, or the nvme
/// driver's I/O queues (it always allocates them with PCI_IRQ_AFFINITY).
pub(crate) fn is_managed(ctx: &DeviceContext, v: &IrqVector, known_managed: &BTreeSet<u32>) -> bool {
    let dev = ctx.device;
    v.managed
        || known_managed.contains(&v.irq)
        || (dev.class == DeviceClass::Nvme && dev.driver.as_deref() == Some("nvme") && v.role == QueueRole::Io)
}

/// A managed NVMe I/O queue IRQ, whose placement the kernel computes queue i → group i of its
/// IRQ set. Other managed IRQs of non-storage devices (a NIC queue with a read-only mask) are
/// reported with their current mask: their vector-to-group mapping depends on the driver.
fn is_predicted(ctx: &DeviceContext, v: &IrqVector, known_managed: &BTreeSet<u32>) -> bool {
    ctx.device.class != DeviceClass::Storage && v.role == QueueRole::Io && is_managed(ctx, v, known_managed)
}

/// A managed IRQ placed where the driver chose, reported as it is.
fn chosen_by_driver(ctx: &DeviceContext, v: &IrqVector) -> Decision {
    let driver = ctx.device.driver.as_deref().unwrap_or("its driver");
    Decision {
        desired: v.current.clone(),
        managed: true,
        reason: format!("kernel-managed: placement chosen by the driver ({driver}); irqwise predicts none here"),
        mismatch: None,
        uncertain: None,
    }
}

/// The managed decision for `want`, flagged where the IRQ's mask or blk-mq's map differ from it
/// on the CPUs whose placement irqwise can know; uncertain (with the reason) where `unknowns`
/// says it cannot know all of it.
fn compared(
    mut why: Reason,
    want: CpuSet,
    actual: Option<&CpuSet>,
    blk_mq: Option<&CpuSet>,
    unknowns: Option<&Unknowns>,
) -> Decision {
    let mismatch = actual.is_some_and(|a| Unknowns::differ(unknowns, a, &want))
        || blk_mq.is_some_and(|m| Unknowns::differ(unknowns, m, &want));
    if let Some(a) = actual.filter(|a| **a != want) {
        why = why.text("; kernel shows ").cpus(a);
    }
    if let Some(m) = blk_mq.filter(|m| **m != want) {
        why = why.text("; blk-mq maps ").cpus(m);
    }
    let uncertain = unknowns.map(|u| u.reason.clone());
    if let Some(u) = &uncertain {
        why = why.text("; uncertain: ").text(u);
    }
    Decision { desired: Some(want), managed: true, reason: why.done(), mismatch: Some(mismatch), uncertain }
}

/// A storage HBA's vectors as `irq_create_affinity_masks()` laid them out: `pre` unmanaged
/// vectors, then `groups.len()` managed ones spread as one set, then unmanaged post-vectors.
struct StorageLayout {
    pre: u32,
    groups: Vec<CpuSet>,
    unknowns: Option<Unknowns>,
}

impl StorageLayout {
    /// The layout when it can be known: every vector's MSI-X index read from its name (indexes
    /// 0..n, each once), every managed one known, and the managed ones one contiguous run.
    fn of(ctx: &DeviceContext, known_managed: &BTreeSet<u32>) -> Option<StorageLayout> {
        let n = ctx.device.vectors.len();
        let mut managed_at: Vec<Option<bool>> = vec![None; n];
        for v in &ctx.device.vectors {
            let slot = managed_at.get_mut(queue_index(v)? as usize)?;
            if slot.replace(v.managed || known_managed.contains(&v.irq)).is_some() {
                return None;
            }
        }
        let flags: Vec<bool> = managed_at.into_iter().collect::<Option<_>>()?;
        let pre = flags.iter().position(|&m| m)?;
        let run = flags[pre..].iter().take_while(|&&m| m).count();
        if flags[pre + run..].iter().any(|&m| m) {
            return None;
        }
        let groups = ctx.groupings().groups(ctx.home, run, ctx.group_rules).as_ref().clone();
        Some(StorageLayout { pre: pre as u32, groups, unknowns: Unknowns::of(ctx.home) })
    }

    /// The kernel's mask for the vector of MSI-X index `q`.
    fn prediction(&self, v: &IrqVector, q: u32) -> Decision {
        let index = q - self.pre;
        let group = self.groups.get(index as usize).cloned().unwrap_or_default();
        let why = Reason::new().text("kernel-managed: expected group ").num(index).text(" of ").num(self.groups.len());
        let why = why.text(" = ").cpus(&group).text(" (after ").num(self.pre).text(" pre-vectors)");
        compared(why, group, v.current.as_ref(), None, self.unknowns.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::StrategyName;
    use crate::devices::{Device, NvmeInfo, Recognition};
    use crate::kernel::{GroupRules, KernelVersion};
    use crate::policy::Policy;
    use crate::strategy::context::{GroupingCache, Machine};
    use crate::topology::synthetic::SyntheticMachine;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// An nvme drive of two I/O queues whose masks are `masks`, blk-mq's map `blk_mq`.
    fn drive(masks: &[&str], blk_mq: &[&str]) -> Device {
        let vectors = (0u32..)
            .zip(masks)
            .map(|(q, m)| IrqVector {
                irq: 40 + q,
                name: Some(format!("nvme0q{}", q + 1)),
                role: QueueRole::Io,
                queue: Some(q),
                recognised: Recognition::UnknownDriver { driver: None },
                managed: false,
                current: Some(set(m)),
                hint: None,
            })
            .collect();
        Device {
            bdf: "0000:02:00.0".into(),
            class: DeviceClass::Nvme,
            pci_class: 0x010802,
            vendor: None,
            device: None,
            driver: Some("nvme".into()),
            name: Some("nvme0".into()),
            interfaces: vec![],
            node: Some(0),
            local_cpus: None,
            vectors,
            nvme: Some(NvmeInfo {
                controller: "nvme0".into(),
                model: None,
                serial: None,
                namespace: None,
                blk_mq: blk_mq.iter().map(|s| set(s)).collect(),
                write_queues: None,
            }),
        }
    }

    /// The predictions for `dev` on a machine of 4 single-thread cores first seen with only 2.
    fn predicted(dev: &Device) -> Vec<Decision> {
        let (home, first) = (SyntheticMachine::new(1, 4, 1).build(), SyntheticMachine::new(1, 2, 1).build());
        let groupings = GroupingCache::default();
        let machine = Machine {
            now: &home,
            home: &home,
            first: Some(&first),
            group_rules: GroupRules::for_kernel(KernelVersion { major: 6, minor: 1 }),
            respect_isolation: true,
            groupings: &groupings,
        };
        let policy = Policy::default();
        let (ctx, _) = DeviceContext::new(&machine, dev, &policy, StrategyName::ClusterGroup);
        let leave = dev.vectors.iter().map(|_| Decision::leave("placed by the strategy")).collect();
        predict(&ctx, leave, &BTreeSet::new())
    }

    #[test]
    fn masks_spread_over_the_machine_as_first_seen_are_predicted_on_it_without_a_blk_mq_map() {
        // group_cpus_evenly(2): on 4 cores {0,1},{2,3}; on the 2 first seen {0},{1}.
        let ds = predicted(&drive(&["0", "1"], &[]));
        let got: Vec<_> = ds.iter().map(|d| (d.desired.clone(), d.mismatch)).collect();
        assert_eq!(got, [(Some(set("0")), Some(false)), (Some(set("1")), Some(false))], "{ds:?}");
        assert!(ds.iter().all(|d| d.managed && d.reason.contains("CPUs 2-3 were added")), "{ds:?}");
        // Masks as the machine is now: predicted on it, with one set's words.
        let ds = predicted(&drive(&["0-1", "2-3"], &[]));
        assert_eq!(ds[1].desired, Some(set("2-3")));
        assert!(ds[1].reason.starts_with("kernel-managed: expected group 1 of 2 = 2-3"), "{:?}", ds[1]);
    }

    #[test]
    fn masks_spread_while_cpus_were_offline_are_predicted_on_the_machine_as_now() {
        // 4 cores x 2 threads (x86: siblings N and N+4), booted with nosmt: 4-7 present, offline,
        // with the empty masks x86 gives offline CPUs. 7.0's cluster-aware grouping of 4 queues
        // takes one SMT pair each on the machine with every CPU up, but falls back to plain
        // grouping when a probed CPU's cluster mask is empty: {0,1},{2,3},{4,5},{6,7}.
        let home = SyntheticMachine::new(1, 4, 2).build();
        let mut now = home.clone();
        for c in 0..8 {
            let cpu = now.cpus.get_mut(&c).unwrap();
            if c >= 4 {
                cpu.online = false;
                cpu.core = None;
                cpu.cluster = None;
            } else {
                cpu.core = Some(CpuSet::single(c));
                cpu.cluster = Some(CpuSet::single(c));
            }
        }
        now.online = set("0-3");
        let groupings = GroupingCache::default();
        let machine = Machine {
            now: &now,
            home: &home,
            first: None,
            group_rules: GroupRules::for_kernel(KernelVersion { major: 7, minor: 0 }),
            respect_isolation: true,
            groupings: &groupings,
        };
        let policy = Policy::default();
        let masks = ["0-1", "2-3", "4-5", "6-7"];
        let dev = drive(&masks, &masks);
        let (ctx, _) = DeviceContext::new(&machine, &dev, &policy, StrategyName::ClusterGroup);
        let leave = dev.vectors.iter().map(|_| Decision::leave("placed by the strategy")).collect();
        let ds = predict(&ctx, leave, &BTreeSet::new());
        let got: Vec<_> = ds.iter().map(|d| (d.desired.clone(), d.mismatch)).collect();
        let want: Vec<_> = masks.iter().map(|m| (Some(set(m)), Some(false))).collect();
        assert_eq!(got, want, "{ds:?}");
        assert!(ds.iter().all(|d| d.reason.contains("spread while CPUs 4-7 were offline, as now")), "{ds:?}");
        // Masks spread with every CPU up are predicted on that machine, without the note.
        let home_groups = ctx.queue_grouping_on(&home).groups;
        let up: Vec<String> = home_groups.iter().take(4).map(CpuSet::to_list_string).collect();
        assert_ne!(up, masks, "the two machines must group differently for this test to mean anything");
        let dev = drive(&up.iter().map(String::as_str).collect::<Vec<_>>(), &[]);
        let (ctx, _) = DeviceContext::new(&machine, &dev, &policy, StrategyName::ClusterGroup);
        let leave = dev.vectors.iter().map(|_| Decision::leave("placed by the strategy")).collect();
        let ds = predict(&ctx, leave, &BTreeSet::new());
        assert!(ds.iter().all(|d| d.mismatch == Some(false) && !d.reason.contains("as now")), "{ds:?}");
    }

    #[test]
    fn a_blk_mq_map_that_disagrees_keeps_the_prediction_on_the_machine_now() {
        // The masks fit either machine's grouping only with blk-mq's map agreeing: here the
        // masks say "first seen" but blk-mq says "now", so neither fits and now is predicted.
        let ds = predicted(&drive(&["0", "1"], &["0-1", "2-3"]));
        assert_eq!(ds[0].desired, Some(set("0-1")), "{ds:?}");
        assert!(ds.iter().all(|d| d.mismatch == Some(true)), "the masks differ from it: {ds:?}");
    }
}
