//! What the daemon counts since it started (passes, writes, drift, reloads) and what its last
//! pass left (IRQs per device and state), and the Prometheus text exposition of both.
//!
//! Pure: the daemon feeds plans and reports in; [`Counters::render`] returns the text that
//! `metrics_file` holds, and the state file carries the same counters for `irqwise status`.
//! Invariants: counters only grow while the daemon runs (a reload keeps them); every label set
//! of a counter whose values are known in advance (triggers, results, classes) is present from
//! the first pass on, at 0, so rates and alerts work before the first event.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::apply::napi_write::NapiOutcome;
use crate::apply::threads::ThreadOutcome;
use crate::apply::{ApplyReport, WriteOutcome};
use crate::plan::{Action, DevicePlan, Plan, QueueSource};

use super::metric_labels::{
    names, BLOCKED_CLASSES, FAILURE_CLASSES, IRQ_STATES, NAPI_RESULTS, QUEUE_SOURCES, RELOAD_RESULTS, THREAD_RESULTS,
    THREAD_STATES, TRIGGERS, WRITE_RESULTS, XPS_RESULTS,
};

/// How many recent writes the state file keeps for `irqwise status`.
pub(crate) const RECENT_CHANGES: usize = 10;

/// One write of a pass, as `irqwise status` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecentChange {
    /// Seconds since the Unix epoch.
    pub at: u64,
    pub pass: u64,
    pub irq: u32,
    pub irq_name: Option<String>,
    /// The device's name, else its PCI address.
    pub device: String,
    pub old: Option<String>,
    /// The CPUs now in place, when written.
    pub new: Option<String>,
    /// One of [`WRITE_RESULTS`].
    pub result: String,
}

impl RecentChange {
    /// `c`, written in pass `pass` at `at`.
    pub fn of(c: &crate::apply::Change, pass: u64, at: u64) -> RecentChange {
        RecentChange {
            at,
            pass,
            irq: c.irq,
            irq_name: c.irq_name.clone(),
            device: c.device_name.clone().unwrap_or_else(|| c.device.clone()),
            old: c.old.as_ref().map(super::super::cpuset::CpuSet::to_list_string),
            new: c.result.wrote().then(|| c.new_cpus()).flatten().map(super::super::cpuset::CpuSet::to_list_string),
            result: c.result.result_word().to_string(),
        }
    }
}

/// The labels of a per-device series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DeviceLabels {
    /// The interface or controller name, else the PCI address.
    pub device: String,
    pub driver: String,
    /// `nic`, `nvme` or `other`.
    pub class: String,
}

impl DeviceLabels {
    pub fn of(d: &DevicePlan) -> DeviceLabels {
        DeviceLabels {
            device: d.name.clone().unwrap_or_else(|| d.bdf.clone()),
            driver: d.driver.clone().unwrap_or_default(),
            class: d.class.as_str().to_string(),
        }
    }
}

/// A counter or gauge of one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCount {
    #[serde(flatten)]
    pub labels: DeviceLabels,
    pub value: u64,
}

/// One device after the last pass: IRQs per state and managed IRQs off their prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceState {
    #[serde(flatten)]
    pub labels: DeviceLabels,
    /// IRQs per state of [`IRQ_STATES`].
    pub irqs: BTreeMap<String, u64>,
    pub mismatched: u64,
    /// Kernel-managed IRQs whose prediction is uncertain (it depends on a CPU node irqwise
    /// cannot know) and agrees where it can be checked; never counted in `mismatched`.
    #[serde(default)]
    pub uncertain: u64,
}

/// The mask writes of one IRQ since the daemon started (a `held` mask is not a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqWrites {
    pub irq: u32,
    /// Its name in `/proc/interrupts`.
    pub name: Option<String>,
    #[serde(flatten)]
    pub labels: DeviceLabels,
    pub writes: u64,
}

/// The last pass: when it ended, how long it took, whether it worked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LastPass {
    /// Seconds since the Unix epoch.
    pub timestamp: f64,
    pub duration_seconds: f64,
    pub ok: bool,
    /// Files and directories the pass opened (absent in states written before it was kept).
    #[serde(default)]
    pub files_opened: u64,
}

/// Counts since the daemon started, and the state of the last pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Seconds since the Unix epoch.
    pub started: u64,
    /// Passes per trigger of [`TRIGGERS`] (a pass with several triggers counts under each).
    pub passes: BTreeMap<String, u64>,
    /// Passes that failed (discovery or planning; the placement stayed as it was).
    pub pass_failures: u64,
    /// Attempted writes per result of [`WRITE_RESULTS`].
    pub writes: BTreeMap<String, u64>,
    /// Failed writes per class of [`FAILURE_CLASSES`].
    pub write_failures: BTreeMap<String, u64>,
    /// Transmit queues' `xps_cpus` writes per result (`written`, `failed`).
    #[serde(default)]
    pub xps_writes: BTreeMap<String, u64>,
    /// NAPI thread moves per result (`written`, `gone`, `failed`).
    #[serde(default)]
    pub thread_writes: BTreeMap<String, u64>,
    /// IRQs left to other writers now (`on_drift = "respect"`), by who most likely set them.
    #[serde(default)]
    pub left_by_owner: BTreeMap<String, u64>,
    /// NAPI instances' settings writes (`[napi]`) per result (`written`, `gone`, `unverified`,
    /// `failed`).
    #[serde(default)]
    pub napi_settings_writes: BTreeMap<String, u64>,
    /// NAPI threads after the last pass, per state (`placed`: on their IRQ's CPUs, `left`: left
    /// alone, `failed`: their move failed).
    #[serde(default)]
    pub napi_threads: BTreeMap<String, u64>,
    /// Queue IRQs of the last plan per source of their queue index (`netlink`, `name`).
    #[serde(default)]
    pub queue_identity: BTreeMap<String, u64>,
    /// Queue IRQs of the last plan whose name says another queue than the kernel.
    #[serde(default)]
    pub queue_disagreements: u64,
    /// IRQs someone else keeps rewriting that irqwise stopped restoring.
    #[serde(default)]
    pub fought_irqs: u64,
    /// Runtime claims the last pass held, and the CPUs they keep free together.
    #[serde(default)]
    pub claims: u64,
    #[serde(default)]
    pub claimed_cpus: u64,
    /// Live claims the last pass refused: with them no CPU would be left for device IRQs.
    #[serde(default)]
    pub claims_refused: u64,
    /// Queues moved off a hot CPU, and moved back home, by load refinement since start.
    #[serde(default)]
    pub load_moves: u64,
    #[serde(default)]
    pub load_returns: u64,
    /// Queue IRQs load refinement keeps away from home now.
    #[serde(default)]
    pub away_from_home: u64,
    /// 1 for the class that blocked every write of the last pass (`readonly`, `permission`).
    #[serde(default)]
    pub writes_blocked: BTreeMap<String, u64>,
    /// IRQs restored after someone else changed their mask, per device.
    pub drift_corrections: Vec<DeviceCount>,
    /// Reloads per result of [`RELOAD_RESULTS`].
    pub reloads: BTreeMap<String, u64>,
    pub last_pass: Option<LastPass>,
    /// Per device, after the last successful pass.
    pub devices: Vec<DeviceState>,
    /// Mask writes per IRQ of the last plan that irqwise wrote at least once since it started,
    /// by IRQ (a user of bnxt_en with TPH, where each write restarts a queue, sees the cost).
    #[serde(default)]
    pub irq_writes: Vec<IrqWrites>,
    /// IRQs this daemon wrote that are still in the plan: `placed`, not `kept`, while they stay.
    #[serde(skip)]
    moved: BTreeSet<u32>,
    /// Writes per IRQ since start (IRQs gone from the plan are forgotten).
    #[serde(skip)]
    writes_by_irq: BTreeMap<u32, u64>,
}

/// The counted kind of a pass trigger as the daemon describes it (`link eth0 up` → `link`);
/// anything unknown is `other`.
pub(crate) fn trigger_kind(why: &str) -> &'static str {
    let word = why.split_whitespace().next().unwrap_or("");
    names(TRIGGERS).find(|t| *t == word).unwrap_or("other")
}

/// The state of every IRQ of every device of `plan` after `report` was applied; `wrote(irq)`
/// says whether irqwise has written that IRQ since it first saw it. Guarantees: every IRQ of
/// the plan is in exactly one state, so the states of a device sum to its IRQs.
pub(crate) fn device_states(plan: &Plan, report: &ApplyReport, wrote: impl Fn(u32) -> bool) -> Vec<DeviceState> {
    let outcomes: BTreeMap<u32, &WriteOutcome> = report.changes.iter().map(|c| (c.irq, &c.result)).collect();
    plan.devices
        .iter()
        .map(|d| {
            let mut irqs: BTreeMap<String, u64> = names(IRQ_STATES).map(|s| (s.to_string(), 0)).collect();
            for p in &d.irqs {
                let state = match (p.action, outcomes.get(&p.irq)) {
                    (Action::Keep, _) if wrote(p.irq) => "placed",
                    (Action::Keep, _) => "kept",
                    (Action::Managed, _) => "managed",
                    (Action::Skip, _) => "skipped",
                    (Action::Set, Some(WriteOutcome::Written { .. } | WriteOutcome::WrittenFallback { .. })) => {
                        "placed"
                    }
                    (Action::Set, Some(WriteOutcome::Held { .. })) if wrote(p.irq) => "placed",
                    (Action::Set, Some(WriteOutcome::Held { .. })) => "kept",
                    (Action::Set, Some(WriteOutcome::Managed { .. })) => "managed",
                    (Action::Set, Some(WriteOutcome::Gone { .. } | WriteOutcome::Overtaken { .. })) => "skipped",
                    (Action::Set, Some(WriteOutcome::Failed { .. }) | None) => "failed",
                };
                *irqs.entry(state.to_string()).or_default() += 1;
            }
            let mismatched = d.irqs.iter().filter(|p| p.mismatch == Some(true)).count() as u64;
            let uncertain = d.irqs.iter().filter(|p| p.is_uncertain()).count() as u64;
            DeviceState { labels: DeviceLabels::of(d), irqs, mismatched, uncertain }
        })
        .collect()
}

impl Counters {
    /// Zero counters for a daemon started at `started` (Unix seconds), every known label present.
    pub fn new(started: u64) -> Counters {
        let zeros = |values| names(values).map(|n| (n.to_string(), 0)).collect::<BTreeMap<_, _>>();
        Counters {
            started,
            passes: zeros(TRIGGERS),
            writes: zeros(WRITE_RESULTS),
            write_failures: zeros(FAILURE_CLASSES),
            xps_writes: zeros(XPS_RESULTS),
            thread_writes: zeros(THREAD_RESULTS),
            napi_settings_writes: zeros(NAPI_RESULTS),
            napi_threads: zeros(THREAD_STATES),
            queue_identity: zeros(QUEUE_SOURCES),
            writes_blocked: zeros(BLOCKED_CLASSES),
            reloads: zeros(RELOAD_RESULTS),
            ..Counters::default()
        }
    }

    /// Which class, if any, blocked every write of the last pass.
    pub(crate) fn record_blocked(&mut self, class: Option<crate::apply::FailureClass>) {
        let name = class.and_then(|c| serde_json::to_value(c).ok()).and_then(|v| v.as_str().map(String::from));
        for (k, v) in &mut self.writes_blocked {
            *v = u64::from(name.as_deref() == Some(k.as_str()));
        }
    }

    /// One pass triggered by `why` ended at `timestamp` (Unix seconds) after `duration`.
    /// One pass: why it ran, whether it worked, how long it took and how many files it opened.
    pub(crate) fn record_pass(&mut self, why: &[String], ok: bool, cost: (Duration, u64), timestamp: f64) {
        let (duration, files_opened) = cost;
        let kinds: BTreeSet<&str> = why.iter().map(|w| trigger_kind(w)).collect();
        for kind in kinds {
            *self.passes.entry(kind.to_string()).or_default() += 1;
        }
        if !ok {
            self.pass_failures += 1;
        }
        self.last_pass = Some(LastPass { timestamp, duration_seconds: duration.as_secs_f64(), ok, files_opened });
    }

    /// Every write of `report`, by result and failure class.
    pub(crate) fn record_writes(&mut self, report: &ApplyReport) {
        for c in &report.changes {
            if c.result.wrote() {
                self.moved.insert(c.irq);
                *self.writes_by_irq.entry(c.irq).or_default() += 1;
            }
            *self.writes.entry(c.result.result_word().to_string()).or_default() += 1;
            if let WriteOutcome::Failed { class, .. } = &c.result {
                let name = serde_json::to_value(class).ok().and_then(|v| v.as_str().map(String::from));
                *self.write_failures.entry(name.unwrap_or_else(|| "other".into())).or_default() += 1;
            }
        }
        for x in &report.xps {
            *self.xps_writes.entry(if x.is_failure() { "failed" } else { "written" }.to_string()).or_default() += 1;
        }
        for t in &report.threads {
            let result = match t.result {
                ThreadOutcome::Written { .. } => "written",
                ThreadOutcome::Gone => "gone",
                ThreadOutcome::Failed { .. } => "failed",
                ThreadOutcome::NotThisMachine => continue,
            };
            *self.thread_writes.entry(result.to_string()).or_default() += 1;
        }
        for n in &report.napi {
            let result = match n.result {
                NapiOutcome::Written => "written",
                NapiOutcome::Gone => "gone",
                NapiOutcome::Unverified { .. } => "unverified",
                NapiOutcome::Failed { .. } => "failed",
                NapiOutcome::NotThisMachine => continue,
            };
            *self.napi_settings_writes.entry(result.to_string()).or_default() += 1;
        }
    }

    /// The per-device states after `plan` was applied as `report` says (IRQs gone from the plan
    /// are forgotten).
    pub(crate) fn record_states(&mut self, plan: &Plan, report: &ApplyReport) {
        let present: BTreeSet<u32> = plan.devices.iter().flat_map(|d| d.irqs.iter().map(|p| p.irq)).collect();
        self.moved.retain(|irq| present.contains(irq));
        self.writes_by_irq.retain(|irq, _| present.contains(irq));
        self.irq_writes = plan
            .devices
            .iter()
            .flat_map(|d| d.irqs.iter().map(move |p| (d, p)))
            .filter_map(|(d, p)| {
                let writes = *self.writes_by_irq.get(&p.irq)?;
                Some(IrqWrites { irq: p.irq, name: p.name.clone(), labels: DeviceLabels::of(d), writes })
            })
            .collect();
        self.irq_writes.sort_by_key(|w| w.irq);
        self.devices = device_states(plan, report, |irq| self.moved.contains(&irq));
        let failed: BTreeSet<u32> = report.threads.iter().filter(|t| t.is_failure()).map(|t| t.pid).collect();
        for n in self.napi_threads.values_mut().chain(self.queue_identity.values_mut()) {
            *n = 0;
        }
        for t in plan.devices.iter().flat_map(|d| &d.napi_threads) {
            let state = match t.action {
                _ if failed.contains(&t.pid) => "failed",
                Action::Keep | Action::Set => "placed",
                Action::Skip | Action::Managed => "left",
            };
            *self.napi_threads.entry(state.to_string()).or_default() += 1;
        }
        for p in plan.devices.iter().flat_map(|d| &d.irqs) {
            let source = match p.queue_source {
                Some(QueueSource::Netlink) => "netlink",
                Some(QueueSource::Name) => "name",
                None => continue,
            };
            *self.queue_identity.entry(source.to_string()).or_default() += 1;
        }
        self.queue_disagreements = plan.queue_disagreements.len() as u64;
    }

    /// One drifted IRQ of the device `labels` was restored.
    pub(crate) fn record_drift(&mut self, labels: DeviceLabels) {
        if let Some(c) = self.drift_corrections.iter_mut().find(|c| c.labels == labels) {
            c.value += 1;
        } else {
            self.drift_corrections.push(DeviceCount { labels, value: 1 });
            self.drift_corrections.sort_by(|a, b| a.labels.cmp(&b.labels));
        }
    }

    /// A reload was applied, or rejected (the previous configuration kept).
    pub(crate) fn record_reload(&mut self, applied: bool) {
        *self.reloads.entry(if applied { "applied" } else { "rejected" }.to_string()).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Change, Effective, FailureClass, Verification};
    use crate::choices::StrategyName;
    use crate::cpuset::CpuSet;
    use crate::daemon::exposition::escape_label_value;
    use crate::devices::{QueueRole, Recognition};
    use crate::plan::Placement;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn placement(irq: u32, action: Action) -> Placement {
        Placement {
            irq,
            name: Some(format!("q{irq}")),
            role: QueueRole::RxTx,
            queue: Some(irq),
            recognised: Recognition::UnknownDriver { driver: None },
            queue_source: None,
            managed: action == Action::Managed,
            current: Some(set("0-3")),
            current_locality: None,
            desired: Some(set("1")),
            hint: None,
            action,
            reason: "test".into(),
            fallbacks: Vec::new(),
            mismatch: (action == Action::Managed).then_some(irq == 5),
            uncertain: None,
        }
    }

    fn plan(name: &str) -> Plan {
        let irqs = vec![
            placement(1, Action::Set),
            placement(2, Action::Set),
            placement(3, Action::Keep),
            placement(4, Action::Keep),
            placement(5, Action::Managed),
            placement(6, Action::Skip),
        ];
        let dev = crate::plan::test_plans::nic("0000:01:00.0", irqs).with_driver("ixgbe").with_name(name);
        crate::plan::test_plans::plan_of(vec![dev])
    }

    fn change(irq: u32, result: WriteOutcome) -> Change {
        Change {
            irq,
            irq_name: None,
            device: "0000:01:00.0".into(),
            device_name: None,
            driver: None,
            queue: None,
            strategy: StrategyName::NumaHop,
            reason: "test".into(),
            old: None,
            wanted: None,
            result,
        }
    }

    fn written(irq: u32) -> Change {
        let verified = Verification { readback: Some(set("1")), matches: true, effective: Effective::Absent };
        change(irq, WriteOutcome::Written { cpus: set("1"), verified })
    }

    fn report() -> ApplyReport {
        let failed = WriteOutcome::Failed { class: FailureClass::Invalid, error: "ELOOP".into() };
        let xps = |txq, result| crate::apply::XpsChange {
            device: "0000:01:00.0".into(),
            interface: Some("eth0".into()),
            driver: None,
            txq,
            old: CpuSet::new(),
            result,
        };
        let xps = vec![
            xps(0, crate::apply::XpsOutcome::Written { new: set("1"), readback: Some(set("1")), matches: true }),
            xps(1, crate::apply::XpsOutcome::Written { new: set("2"), readback: Some(set("2")), matches: true }),
            xps(2, crate::apply::XpsOutcome::Failed { class: FailureClass::Permission, error: "EPERM".into() }),
        ];
        ApplyReport { changes: vec![written(1), change(2, failed)], xps, ..ApplyReport::default() }
    }

    /// The sample lines of `text` as `name{labels} value`.
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn every_irq_has_one_state_and_earlier_writes_count_as_placed() {
        let states = device_states(&plan("eth0"), &report(), |irq| irq == 4);
        let irqs = &states[0].irqs;
        let get = |s: &str| irqs[s];
        assert_eq!((get("placed"), get("kept"), get("managed"), get("skipped"), get("failed")), (2, 1, 1, 1, 1));
        assert_eq!(irqs.values().sum::<u64>(), 6);
        assert_eq!(states[0].mismatched, 1);
        assert_eq!(states[0].uncertain, 0);
    }

    #[test]
    fn uncertain_predictions_count_apart_from_mismatches() {
        let mut p = plan("eth0");
        let mut agreeing = placement(7, Action::Managed);
        agreeing.mismatch = Some(false);
        p.devices[0].irqs.push(agreeing);
        for irq in p.devices[0].irqs.iter_mut().filter(|i| i.action == Action::Managed) {
            irq.uncertain = Some("CPUs 8-11 have no node in sysfs".into());
        }
        let states = device_states(&p, &report(), |_| false);
        // IRQ 5 mismatches where it can be checked: a mismatch; IRQ 7 agrees: uncertain only.
        assert_eq!((states[0].mismatched, states[0].uncertain), (1, 1));
        let mut c = Counters::new(1);
        c.devices = states;
        let text = c.render("0.1.0");
        let want = "irqwise_managed_uncertain_irqs{device=\"eth0\",driver=\"ixgbe\",class=\"nic\"} 1";
        assert!(samples(&text).contains(&want), "missing {want:?} in\n{text}");
    }

    #[test]
    fn writes_are_counted_per_irq_while_the_irq_stays_and_a_held_mask_is_no_write() {
        let mut c = Counters::new(1);
        let held = change(2, WriteOutcome::Held { cpus: set("1") });
        for _ in 0..2 {
            c.record_writes(&ApplyReport { changes: vec![written(1), held.clone()], ..ApplyReport::default() });
            c.record_states(&plan("eth0"), &report());
        }
        assert_eq!(c.writes["written"], 2);
        assert_eq!(c.writes["held"], 2);
        assert_eq!(c.irq_writes.len(), 1, "{:?}", c.irq_writes);
        assert_eq!((c.irq_writes[0].irq, c.irq_writes[0].writes), (1, 2));
        let text = c.render("0.1.0");
        let want = "irqwise_irq_writes_total{irq=\"1\",name=\"q1\",device=\"eth0\",driver=\"ixgbe\",class=\"nic\"} 2";
        assert!(samples(&text).contains(&want), "missing {want:?} in\n{text}");
        assert!(!text.contains("irq=\"2\""), "a held mask was not written:\n{text}");
        // An IRQ gone from the plan is forgotten, and so is its series.
        let mut gone = plan("eth0");
        gone.devices[0].irqs.retain(|p| p.irq != 1);
        c.record_states(&gone, &ApplyReport::default());
        assert!(c.irq_writes.is_empty());
        assert!(!c.render("0.1.0").contains("irqwise_irq_writes_total{"));
    }

    #[test]
    fn the_exposition_names_labels_and_counts_every_series() {
        let mut c = Counters::new(1_700_000_000);
        c.record_pass(&["start".into()], true, (Duration::from_millis(2500), 700), 1_700_000_000.5);
        c.record_pass(
            &["cpu".into(), "link eth0 up".into(), "link eth1 down".into()],
            false,
            (Duration::ZERO, 41),
            1.0,
        );
        c.record_writes(&report());
        c.record_drift(DeviceLabels::of(&plan("eth0").devices[0]));
        c.record_drift(DeviceLabels::of(&plan("eth0").devices[0]));
        c.record_reload(false);
        c.devices = device_states(&plan("eth0"), &report(), |_| false);
        let text = c.render("0.1.0");
        let s = samples(&text);
        for want in [
            "irqwise_build_info{version=\"0.1.0\"} 1",
            "irqwise_start_time_seconds 1700000000",
            "irqwise_passes_total{trigger=\"start\"} 1",
            "irqwise_passes_total{trigger=\"cpu\"} 1",
            "irqwise_passes_total{trigger=\"link\"} 1",
            "irqwise_passes_total{trigger=\"reconcile\"} 0",
            "irqwise_pass_failures_total 1",
            "irqwise_writes_total{result=\"written\"} 1",
            "irqwise_writes_total{result=\"failed\"} 1",
            "irqwise_writes_total{result=\"managed\"} 0",
            "irqwise_write_failures_total{class=\"invalid\"} 1",
            "irqwise_write_failures_total{class=\"novectors\"} 0",
            "irqwise_xps_writes_total{result=\"written\"} 2",
            "irqwise_xps_writes_total{result=\"failed\"} 1",
            "irqwise_drift_corrections_total{device=\"eth0\",driver=\"ixgbe\",class=\"nic\"} 2",
            "irqwise_config_reloads_total{result=\"rejected\"} 1",
            "irqwise_config_reloads_total{result=\"applied\"} 0",
            "irqwise_last_pass_timestamp_seconds 1",
            "irqwise_last_pass_duration_seconds 0",
            "irqwise_last_pass_success 0",
            "irqwise_last_pass_files_opened 41",
            "irqwise_irqs{device=\"eth0\",driver=\"ixgbe\",class=\"nic\",state=\"placed\"} 1",
            "irqwise_irqs{device=\"eth0\",driver=\"ixgbe\",class=\"nic\",state=\"failed\"} 1",
            "irqwise_managed_mismatched_irqs{device=\"eth0\",driver=\"ixgbe\",class=\"nic\"} 1",
            "irqwise_managed_uncertain_irqs{device=\"eth0\",driver=\"ixgbe\",class=\"nic\"} 0",
        ] {
            assert!(s.contains(&want), "missing {want:?} in\n{text}");
        }
        // One HELP and one TYPE per metric, before its samples, and every sample's metric declared.
        let mut declared = BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert!(declared.insert(name.to_string()), "{name} declared twice");
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(declared.contains(name), "{name} used before its TYPE");
            }
        }
        let counters: Vec<&String> =
            declared.iter().filter(|n| text.contains(&format!("# TYPE {n} counter"))).collect();
        assert!(counters.iter().all(|n| n.ends_with("_total")), "{counters:?}");
    }

    #[test]
    fn label_values_escape_quotes_backslashes_and_newlines() {
        assert_eq!(escape_label_value(r#"e"t\h0"#), r#"e\"t\\h0"#);
        assert_eq!(escape_label_value("a\nb"), "a\\nb");
        let mut c = Counters::new(0);
        c.devices = device_states(&plan(r#"we"ird\nic"#), &ApplyReport::default(), |_| false);
        let text = c.render("0.1.0");
        assert!(
            text.contains(r#"irqwise_managed_mismatched_irqs{device="we\"ird\\nic",driver="ixgbe",class="nic"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn trigger_kinds_are_bounded() {
        assert_eq!(trigger_kind("link eth0 up"), "link");
        assert_eq!(trigger_kind("reconcile"), "reconcile");
        assert_eq!(trigger_kind("something new"), "other");
    }

    #[test]
    fn napi_threads_and_queue_identity_are_counted_per_state_and_source() {
        use crate::apply::threads::{ThreadChange, ThreadOutcome};
        use crate::plan::{QueueDisagreement, QueueSource, ThreadPlacement};
        let mut p = plan("eth0");
        p.devices[0].irqs[0].queue_source = Some(QueueSource::Netlink);
        p.devices[0].irqs[1].queue_source = Some(QueueSource::Name);
        p.devices[0].irqs[2].queue_source = Some(QueueSource::Name);
        let thread = |pid: u32, action: Action| ThreadPlacement {
            pid,
            name: format!("napi/eth0-{pid}"),
            napi_id: pid,
            irq: Some(1),
            by: Some("netlink"),
            current: Some(set("0-3")),
            desired: Some(set("1")),
            action,
            reason: String::new(),
            last_cpu: None,
        };
        p.devices[0].napi_threads = vec![thread(10, Action::Set), thread(11, Action::Keep), thread(12, Action::Skip)];
        p.devices[0].napi_threads.push(thread(13, Action::Set));
        p.queue_disagreements =
            vec![QueueDisagreement { bdf: "0000:01:00.0".into(), irq: 1, name: None, kernel_queue: 1, name_queue: 0 }];
        let moved = |pid: u32, result: ThreadOutcome| ThreadChange {
            device: "0000:01:00.0".into(),
            pid,
            name: format!("napi/eth0-{pid}"),
            irq: Some(1),
            old: None,
            result,
        };
        let mut r = report();
        r.threads = vec![
            moved(10, ThreadOutcome::Written { new: set("1") }),
            moved(13, ThreadOutcome::Failed { class: FailureClass::Permission, error: "EPERM".into() }),
            moved(14, ThreadOutcome::Gone),
            moved(15, ThreadOutcome::NotThisMachine),
        ];
        let mut c = Counters::new(0);
        c.record_writes(&r);
        c.record_states(&p, &r);
        let text = c.render("0.1.0");
        let s = samples(&text);
        for want in [
            "irqwise_napi_thread_writes_total{result=\"written\"} 1",
            "irqwise_napi_thread_writes_total{result=\"failed\"} 1",
            "irqwise_napi_thread_writes_total{result=\"gone\"} 1",
            "irqwise_napi_threads{state=\"placed\"} 2",
            "irqwise_napi_threads{state=\"left\"} 1",
            "irqwise_napi_threads{state=\"failed\"} 1",
            "irqwise_queue_identity{source=\"netlink\"} 1",
            "irqwise_queue_identity{source=\"name\"} 2",
            "irqwise_queue_identity_disagreements 1",
        ] {
            assert!(s.contains(&want), "missing {want:?} in\n{text}");
        }
        // The next plan has none: the gauges go back to 0, the counters stay.
        c.record_states(&plan("eth0"), &report());
        let text = c.render("0.1.0");
        let s = samples(&text);
        for want in [
            "irqwise_napi_threads{state=\"placed\"} 0",
            "irqwise_queue_identity_disagreements 0",
            "irqwise_napi_thread_writes_total{result=\"written\"} 1",
        ] {
            assert!(s.contains(&want), "missing {want:?} in\n{text}");
        }
    }
}
