//! Computing a [`Plan`]: per device, the strategy its policy names, then the managed-IRQ step,
//! then a comparison with the current masks.
//!
//! Pure: everything comes in as data. Guarantees: no queue IRQ is ever given an empty set (when
//! a device has no usable CPU at all, its IRQs are skipped with that reason), and managed IRQs
//! are only predicted, never set.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::{grouping, Action, DevicePlan, Placement, Plan, QueueDisagreement, QueueSource};
use crate::choices::StrategyName;
use crate::config::RuleRef;
use crate::devices::napi::KernelQueue;
use crate::devices::{Device, DeviceClass, IrqVector, QueuePattern, QueueRole, Recognition};
use crate::kernel::facts::Fact;
use crate::kernel::GroupRules;
use crate::policy::Policy;
use crate::strategy::allocator::allocate;
use crate::strategy::{decide, numa_hop, Decision, DeviceContext, GroupingCache, Machine, QueueAllocation};
use crate::topology::locality::classify_mask;
use crate::topology::{home_topology, Topology};

/// Machine-wide inputs of planning.
#[derive(Debug, Clone)]
pub struct PlanContext<'a> {
    pub topo: &'a Topology,
    /// The machine with every present CPU online, with the masks the daemon saw while they were
    /// ([`crate::topology::TopologyMemory`]); `None`: derived from `topo` alone.
    pub home: Option<&'a Topology>,
    /// The machine as first seen this boot, when it spreads differently from now (CPUs hot-added
    /// or brought online since): kernel-managed IRQs allocated before then were spread on it.
    pub first: Option<&'a Topology>,
    /// The running kernel's `group_cpus_evenly()` rules as its BTF or version says (for
    /// managed-IRQ prediction and cluster-group); the managed NVMe masks may show others
    /// ([`super::grouping`]).
    pub group_rules: GroupRules,
    /// The cluster-grouping fact `group_rules`' algorithm came from; `None`: the version's.
    pub group_fact: Option<&'a Fact<bool>>,
    /// Keep isolated and nohz_full CPUs free of device IRQs.
    pub respect_isolation: bool,
    /// IRQs learned to be kernel-managed from failed writes (EIO/EPERM).
    pub known_managed: &'a BTreeSet<u32>,
    /// The queue each IRQ serves as the kernel's netdev netlink family says, where it says:
    /// over what the IRQ's name says.
    pub kernel_queues: &'a BTreeMap<u32, KernelQueue>,
}

/// One device made ready for planning: names read with the rule's pattern, impossible queue
/// indexes bounded, its strategy chosen.
struct Prepared<'a> {
    dev: Cow<'a, Device>,
    policy: &'a Policy,
    strategy: StrategyName,
    /// Queue IRQs whose name said another queue than the kernel.
    disagreements: Vec<QueueDisagreement>,
    range_warning: Option<String>,
}

/// Sets every placement's `current_locality`: how far its current mask can put the IRQ from its
/// desired CPUs (from the device's node for an IRQ without desired CPUs). Run once the desired
/// masks are final ([`build_plan`] leaves it unset).
pub(crate) fn locate_current(plan: &mut Plan, topo: &Topology) {
    for d in &mut plan.devices {
        for p in &mut d.irqs {
            p.current_locality = p.current.as_ref().and_then(|c| classify_mask(topo, c, p.desired.as_ref(), d.node));
        }
    }
}

/// Plans every device; `policies[i]` belongs to `devices[i]` (missing entries = class defaults).
/// Steps: prepare each device; set up each device's context; allocate the queues of every
/// NUMA-hop device together ([`crate::strategy::allocator`]); decide and compare each IRQ. A
/// device whose node (configured or its own) does not exist on this machine adds a warning, and
/// so does a NIC with IRQs left alone because their names were not recognised (one per device).
pub fn build_plan(ctx: &PlanContext, devices: &[Device], policies: &[Policy]) -> Plan {
    let default = &Policy::default();
    let derived;
    let home = if let Some(h) = ctx.home {
        h
    } else {
        derived = home_topology(ctx.topo, None);
        &derived
    };
    let groupings = GroupingCache::default();
    let mut machine = Machine {
        now: ctx.topo,
        home,
        first: ctx.first,
        group_rules: ctx.group_rules,
        respect_isolation: ctx.respect_isolation,
        groupings: &groupings,
    };
    let prepared: Vec<Prepared> = devices
        .iter()
        .enumerate()
        .map(|(i, d)| prepare(d, policies.get(i).unwrap_or(default), ctx.kernel_queues))
        .collect();
    // The rule the managed NVMe masks show, before anything is predicted with it.
    let shown: Vec<_> = prepared.iter().map(|p| (p.dev.as_ref(), p.policy, p.strategy)).collect();
    let observed = grouping::observe(&machine, &shown, ctx.known_managed, ctx.group_rules);
    let (rules, choice) = grouping::decide(ctx.group_rules, ctx.group_fact, &observed);
    machine.group_rules = rules;
    let mut contexts: Vec<_> =
        prepared.iter().map(|p| DeviceContext::new(&machine, &p.dev, p.policy, p.strategy)).collect();
    allocate_queues(&machine, &mut contexts, &prepared, ctx.known_managed);
    let mut warnings = Vec::new();
    let devices: Vec<DevicePlan> = prepared
        .iter()
        .zip(contexts)
        .map(|(p, (dctx, setup))| {
            let (plan, device_warnings) = plan_device(ctx, p, &dctx, setup);
            warnings.extend(device_warnings);
            plan
        })
        .collect();
    let queue_disagreements = prepared.iter().flat_map(|p| p.disagreements.iter().cloned()).collect();
    warnings.extend(choice.finding.clone());
    Plan {
        kernel: ctx.topo.kernel.clone(),
        grouping: Some(choice),
        devices,
        warnings,
        queue_disagreements,
        notices: Vec::new(),
    }
}

/// Reads the names with the rule's `queue_pattern` if it has one, bounds queue indexes and
/// picks the strategy (the rule's, else the device's default).
fn prepare<'a>(dev: &'a Device, policy: &'a Policy, kernel_queues: &BTreeMap<u32, KernelQueue>) -> Prepared<'a> {
    let taught = policy.queue_pattern.as_ref().map(|(pattern, rule)| with_rule_pattern(dev, pattern, rule));
    let (told, disagreements) = with_kernel_queues(taught.as_ref().unwrap_or(dev), kernel_queues);
    let taught = told.or(taught);
    let (bounded, range_warning) = bound_queue_indexes(taught.as_ref().unwrap_or(dev));
    let dev = match (bounded, taught) {
        (Some(d), _) | (None, Some(d)) => Cow::Owned(d),
        (None, None) => Cow::Borrowed(dev),
    };
    let strategy = policy.strategy.unwrap_or_else(|| crate::strategy::default_for_device(&dev));
    Prepared { dev, policy, strategy, disagreements, range_warning }
}

/// Gives every NUMA-hop device with a usable CPU its share of the machine-wide allocation.
fn allocate_queues(
    machine: &Machine,
    contexts: &mut [(DeviceContext, crate::strategy::Setup)],
    prepared: &[Prepared],
    known_managed: &BTreeSet<u32>,
) {
    let hop: Vec<usize> = (0..prepared.len())
        .filter(|&i| prepared[i].strategy == StrategyName::NumaHop && !contexts[i].0.usable.is_empty())
        .collect();
    let claims: Vec<_> = hop.iter().map(|&i| numa_hop::demand(&contexts[i].0, known_managed)).collect();
    let demands: Vec<_> = claims.iter().map(|(d, _)| d.clone()).collect();
    let result = allocate(machine.home, &demands);
    let load = std::rc::Rc::new(result.load);
    for ((&i, (_, keys)), assignments) in hop.iter().zip(claims).zip(result.devices) {
        let dctx = &mut contexts[i].0;
        let order_words = numa_hop::order_words(dctx);
        let units = keys.into_iter().zip(assignments).collect();
        dctx.queues = Some(QueueAllocation { units, load: load.clone(), order_words });
    }
}

/// One device's plan, and its warnings (its node does not exist on this machine; IRQs left alone
/// for unrecognised names): decide with its strategy, then compare each decision with the
/// current mask.
fn plan_device(
    ctx: &PlanContext,
    p: &Prepared,
    dctx: &DeviceContext,
    setup: crate::strategy::Setup,
) -> (DevicePlan, Vec<String>) {
    let (dev, policy, strategy) = (&*p.dev, p.policy, p.strategy);
    let notes: Vec<&str> =
        setup.note.iter().map(String::as_str).chain(policy.voided.iter().map(|(_, n)| n.as_str())).collect();
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let decisions = decide(strategy, dctx, note.as_deref(), ctx.known_managed);
    let irqs = dev.vectors.iter().zip(decisions).map(|(v, d)| place(ctx, dctx, v, d)).collect();
    let plan = DevicePlan {
        bdf: dev.bdf.clone(),
        class: dev.class,
        driver: dev.driver.clone(),
        name: dev.name.clone(),
        node: dctx.node,
        strategy,
        rules: policy.matched_rules.iter().map(std::string::ToString::to_string).collect(),
        irqs,
        xps: None,
        napi_threads: Vec::new(),
        resets: None,
        napi: Vec::new(),
    };
    let warnings =
        setup.warning.into_iter().chain(p.range_warning.clone()).chain(unrecognised_warning(dev, &plan)).collect();
    (plan, warnings)
}

/// `dev` with every queue index that no device of its vector count can have (a name from a hostile
/// or broken source: `nvme0q4294967295`) turned into a vector left alone, and the warning saying
/// so; `None` when every index is in range. Guarantees every queue index is below the vector
/// count, so no index sizes an allocation beyond the device's own size.
fn bound_queue_indexes(dev: &Device) -> (Option<Device>, Option<String>) {
    let vectors = dev.vectors.len();
    let out_of_range = |v: &IrqVector| v.queue.is_some_and(|q| q as usize >= vectors);
    let Some(first) = dev.vectors.iter().find(|v| out_of_range(v)) else { return (None, None) };
    let warning = format!(
        "{}: irq {} ({:?}) names queue {}, but the device has only {vectors} vectors: left alone",
        dev.bdf,
        first.irq,
        first.name.as_deref().unwrap_or(""),
        first.queue.unwrap_or_default()
    );
    let mut dev = dev.clone();
    for v in dev.vectors.iter_mut().filter(|v| out_of_range(v)) {
        let index = v.queue.unwrap_or_default();
        (v.role, v.queue, v.recognised) = (QueueRole::Misc, None, Recognition::IndexOutOfRange { index, vectors });
    }
    (Some(dev), Some(warning))
}

/// `dev` with every vector whose queue the kernel names taking it from the kernel (`None`: no
/// vector is named), and the vectors whose name said another queue.
fn with_kernel_queues(dev: &Device, kernel: &BTreeMap<u32, KernelQueue>) -> (Option<Device>, Vec<QueueDisagreement>) {
    if kernel.is_empty() || !dev.vectors.iter().any(|v| kernel.contains_key(&v.irq)) {
        return (None, Vec::new());
    }
    let mut dev = dev.clone();
    let mut disagreements = Vec::new();
    for v in &mut dev.vectors {
        let Some(k) = kernel.get(&v.irq) else { continue };
        let named = matches!(v.role, QueueRole::Rx | QueueRole::Tx | QueueRole::RxTx).then_some(v.queue).flatten();
        if let Some(name_queue) = named.filter(|&q| q != k.queue) {
            disagreements.push(QueueDisagreement {
                bdf: dev.bdf.clone(),
                irq: v.irq,
                name: v.name.clone(),
                kernel_queue: k.queue,
                name_queue,
            });
        }
        // A role the name gave is kept (it may say rx where the instance also serves tx);
        // where it gave none, the kernel's.
        if named.is_none() {
            v.role = k.role;
        }
        (v.queue, v.recognised) = (Some(k.queue), Recognition::Kernel { napi: k.napi });
    }
    (Some(dev), disagreements)
}

/// `dev` with every vector whose name matches the rule's `queue_pattern` read by it; the others
/// keep what the driver table made of them.
fn with_rule_pattern(dev: &Device, pattern: &QueuePattern, rule: &RuleRef) -> Device {
    let mut dev = dev.clone();
    for v in &mut dev.vectors {
        let names = v.name.as_deref().unwrap_or_default();
        if let Some((role, queue)) = names.split(", ").find_map(|n| pattern.recognise(n)) {
            let by = Recognition::Rule { rule: rule.to_string(), pattern: pattern.to_string() };
            (v.role, v.queue, v.recognised) = (role, Some(queue), by);
        }
    }
    dev
}

/// The one warning for a device some of whose IRQs are left alone because their names were not
/// recognised, naming the first such IRQ and how to teach irqwise the names. A device left alone
/// gets none: one with no driver bound is between drivers (being removed, unbound or probed), one
/// bound to a passthrough driver (vfio-pci) is a guest's, and a `leave` rule asked for it; their
/// IRQs belong to nobody irqwise could be taught.
fn unrecognised_warning(dev: &Device, plan: &DevicePlan) -> Option<String> {
    dev.driver.as_ref()?;
    if plan.strategy == crate::choices::StrategyName::Leave {
        return None;
    }
    let left: Vec<&Placement> = plan
        .irqs
        .iter()
        .zip(&dev.vectors)
        .filter(|(p, v)| {
            let impossible = matches!(v.recognised, Recognition::IndexOutOfRange { .. });
            p.action == Action::Skip && dev.class == DeviceClass::Nic && !v.recognised.is_recognised() && !impossible
        })
        .map(|(p, _)| p)
        .collect();
    let first = left.first()?;
    let driver = dev.driver.as_deref().unwrap_or_default();
    Some(format!(
        "{} ({driver}): {} of {} IRQs left alone because irqwise does not recognise their names for driver {driver} (e.g. irq {} {:?}); a [[device]] rule with queue_pattern can teach it",
        dev.bdf,
        left.len(),
        dev.vectors.len(),
        first.irq,
        first.name.as_deref().unwrap_or("")
    ))
}

/// Compares a decision with the IRQ's current mask; a placement to write gets its ENOSPC
/// fallbacks from `dctx`.
fn place(ctx: &PlanContext, dctx: &DeviceContext, v: &IrqVector, d: Decision) -> Placement {
    let managed = d.managed || v.managed || ctx.known_managed.contains(&v.irq);
    // An unreadable current mask is still written: the target is known, and the writer
    // classifies whatever is wrong with the file (gone, not writable, ...) instead of the IRQ
    // being silently skipped with a success exit.
    let action = match (&d.desired, &v.current) {
        _ if managed => Action::Managed,
        (None, _) => Action::Skip,
        (Some(want), Some(have)) if want == have => Action::Keep,
        (Some(_), _) => Action::Set,
    };
    let reason = match (action, &v.current) {
        (Action::Set, None) => format!("{}; current affinity unreadable", d.reason),
        (Action::Managed, _) if !d.managed => "kernel-managed: cannot be moved".to_string(),
        _ => d.reason,
    };
    let fallbacks = match (&action, &d.desired) {
        (Action::Set, Some(want)) => dctx.fallbacks(want),
        _ => Vec::new(),
    };
    let desired = if managed && !d.managed { v.current.clone() } else { d.desired };
    Placement {
        irq: v.irq,
        name: v.name.clone(),
        role: v.role,
        queue: v.queue,
        recognised: v.recognised.clone(),
        queue_source: v.queue.map(|_| match v.recognised {
            Recognition::Kernel { .. } => QueueSource::Netlink,
            _ => QueueSource::Name,
        }),
        managed,
        current: v.current.clone(),
        current_locality: None,
        desired,
        hint: v.hint.clone(),
        action,
        reason,
        fallbacks,
        mismatch: d.mismatch,
        uncertain: d.uncertain,
    }
}
