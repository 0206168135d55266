//! The state file `ROOT/run/irqwise/state.json`: what the daemon last planned and applied, when
//! and why. One type, [`StateFile`], is both what the daemon writes and what `irqwise status`,
//! `claim` and `reload` read back (serde both ways; every field added since the first version
//! reads as absent from older files). Written atomically (`Root::replace_own_file`, below the
//! root and through no symlink), so a reader sees the previous or the new state, never half of
//! one; world-readable, so monitoring reads it without root. Compact: CPU sets are kernel list
//! strings (`"0-3,8"`) and JSON has no indentation, so the file grows with the number of IRQs,
//! not with IRQs × CPUs. `schemas/status.schema.json` describes it (tests/json_schemas.rs
//! validates the file the daemon writes and those of earlier versions, tests/data/state/). A
//! file that does not read as this type (another program's, a newer field's wrong type) is
//! refused by the commands ([`StateError::Parse`], naming it); the daemon never reads the file,
//! it only replaces it.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::claims::HeldClaim;
use super::counters::{Counters, RecentChange};
use super::ledger::Repeated;
use super::once::SaidOnce;
use super::respect::LeftToOther;
use crate::apply::ApplyReport;
use crate::cpuset::CpuSet;
use crate::plan::grouping::GroupingChoice;
use crate::plan::refine::Moved;
use crate::plan::{DevicePlan, Plan, Summary};
use crate::sysfs::processes::ProcessIdentity;
use crate::sysfs::Root;
use crate::topology::claims::RefusedClaim;

/// Where the state file lives, relative to the root.
pub(crate) const STATE_FILE: &str = "run/irqwise/state.json";
/// The most bytes a reader reads of the state file (it grows with the IRQs of the machine).
pub(crate) const STATE_FILE_LIMIT: u64 = 256 << 20;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a state file irqwise wrote ({source}); expected the JSON of `irqwise run`")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot encode the state: {0}")]
    Encode(serde_json::Error),
}

/// The state file: written by the daemon after every pass with its fields borrowed from the
/// daemon's records, read back owned (`StateFile<'static>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StateFile<'a> {
    /// The version of this document ([`crate::JSON_SCHEMA`]).
    #[serde(default)]
    pub schema: u32,
    pub pid: u32,
    /// The daemon's process as `status` checks it is still the one running under `pid`; absent
    /// in files of versions that did not record it.
    #[serde(default)]
    pub process: Option<Cow<'a, ProcessIdentity>>,
    /// Unix seconds.
    pub started: u64,
    pub last_pass: u64,
    /// Passes since start (the initial one is 1).
    pub passes: u64,
    /// Why the last pass ran (`start`, `cpu`, `device`, `link eth0 up`, `reload`, ...).
    pub triggers: Cow<'a, [String]>,
    pub summary: Summary,
    pub status: Cow<'a, str>,
    /// The last pass's error, if it failed (the plan and report are then the previous ones).
    pub error: Option<Cow<'a, str>>,
    /// Why the daemon is degraded (the last pass failed, or all its writes did); absent when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<Cow<'a, str>>,
    /// Why the last reload was rejected (the previous configuration is still in force); absent
    /// after a successful reload and before the first.
    #[serde(default)]
    pub config_error: Option<Cow<'a, str>>,
    #[serde(default)]
    pub config_sources: Cow<'a, [PathBuf]>,
    pub plan: PlanEntries<'a>,
    /// Writes that ended the same way pass after pass (logged once, counted here).
    #[serde(default)]
    pub repeated: Cow<'a, [Repeated]>,
    #[serde(default)]
    pub report: ReportEntries<'a>,
    /// Since start (the same counters as the metrics file); absent in files of versions
    /// without counters.
    #[serde(default)]
    pub counters: Option<Cow<'a, Counters>>,
    /// The last writes, oldest first.
    #[serde(default)]
    pub recent_changes: Cow<'a, [RecentChange]>,
    /// The runtime claims the last pass held (`irqwise claims`).
    #[serde(default)]
    pub claims: Cow<'a, [HeldClaim]>,
    /// The live claims the last pass refused, each with why (with it no CPU would be left).
    #[serde(default)]
    pub refused_claims: Cow<'a, [RefusedClaim]>,
    /// The queues load refinement keeps away from home (`balance = "load"`).
    #[serde(default)]
    pub away_from_home: Cow<'a, [Moved]>,
    /// IRQs left to other writers (`on_drift = "respect"`), each with who most likely set it.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    pub left_to_others: Cow<'a, [LeftToOther]>,
}

/// The plan as the state keeps it: every IRQ's action and CPUs, as list strings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanEntries<'a> {
    pub devices: Devices<'a>,
    #[serde(default)]
    pub warnings: Cow<'a, [String]>,
    /// The kernel's grouping rule the plan predicted with (`status` says when no rule fits);
    /// absent in files of versions that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouping: Option<GroupingEntry<'a>>,
}

/// The grouping rule of the plan ([`GroupingChoice`]) as the state file has it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GroupingEntry<'a> {
    pub rule: Cow<'a, str>,
    pub heapsort: Cow<'a, str>,
    pub source: Cow<'a, str>,
    pub evidence: Cow<'a, str>,
    /// Present when the managed masks fit no rule irqwise knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<Cow<'a, str>>,
}

impl<'a> GroupingEntry<'a> {
    /// `g`, borrowed.
    pub fn of(g: &'a GroupingChoice) -> GroupingEntry<'a> {
        GroupingEntry {
            rule: Cow::Borrowed(g.rule),
            heapsort: Cow::Borrowed(g.heapsort),
            source: Cow::Borrowed(g.source.as_str()),
            evidence: Cow::Borrowed(&g.evidence),
            finding: g.finding.as_deref().map(Cow::Borrowed),
        }
    }
}

impl<'a> PlanEntries<'a> {
    /// The warnings of `plan`; its devices are filled in by [`StateWriter::write`] from the
    /// encodings it keeps.
    pub fn of(plan: &'a Plan) -> PlanEntries<'a> {
        PlanEntries {
            devices: Devices::Encoded(Cow::Borrowed(&[])),
            warnings: Cow::Borrowed(&plan.warnings),
            grouping: plan.grouping.as_ref().map(GroupingEntry::of),
        }
    }
}

/// The devices of the plan: encoded [`DeviceEntry`]s when written (most devices are the same
/// from one pass to the next: [`EncodedDevices`]), the entries themselves when read.
#[derive(Debug, Clone)]
pub(crate) enum Devices<'a> {
    Encoded(Cow<'a, [Box<RawValue>]>),
    Read(Vec<DeviceEntry<'a>>),
}

impl Devices<'_> {
    /// The devices read from a file (none in a state being written).
    pub fn entries(&self) -> &[DeviceEntry<'_>] {
        match self {
            Devices::Read(entries) => entries,
            Devices::Encoded(_) => &[],
        }
    }
}

impl Serialize for Devices<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Devices::Encoded(raw) => raw.serialize(s),
            Devices::Read(entries) => entries.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Devices<'_> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<DeviceEntry<'static>>::deserialize(d).map(Devices::Read)
    }
}

/// One device of the plan in the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DeviceEntry<'a> {
    pub bdf: Cow<'a, str>,
    pub name: Option<Cow<'a, str>>,
    pub driver: Option<Cow<'a, str>>,
    pub strategy: Cow<'a, str>,
    #[serde(default)]
    pub node: Option<u32>,
    pub irqs: Vec<IrqEntry<'a>>,
}

/// One IRQ of a device in the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IrqEntry<'a> {
    pub irq: u32,
    pub name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub queue: Option<u32>,
    pub action: Cow<'a, str>,
    pub current: Option<Cpus<'a>>,
    pub desired: Option<Cpus<'a>>,
}

/// The last pass's writes as the state keeps them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ReportEntries<'a> {
    pub changes: Vec<ChangeEntry<'a>>,
}

/// One write of the last pass in the state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChangeEntry<'a> {
    pub irq: u32,
    pub result: Cow<'a, str>,
    pub old: Option<Cpus<'a>>,
    pub new: Option<Cpus<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Cow<'a, str>>,
}

/// A CPU set as the state file has it: the kernel's list string (`"0-3,8"`), formatted straight
/// into the output and parsed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cpus<'a>(pub Cow<'a, CpuSet>);

impl std::fmt::Display for Cpus<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Cpus<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Cpus<'_> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        CpuSet::parse_list(&text)
            .map(|set| Cpus(Cow::Owned(set)))
            .map_err(|e| serde::de::Error::custom(format!("CPU list {text:?}: {e}")))
    }
}

/// `set` borrowed as the state file writes it.
fn cpus(set: Option<&CpuSet>) -> Option<Cpus<'_>> {
    set.map(|s| Cpus(Cow::Borrowed(s)))
}

impl<'a> DeviceEntry<'a> {
    /// What the state file says of device `d` (borrowed from the plan: the file of a machine
    /// with thousands of IRQs is written without a copy of each).
    pub fn of(d: &'a DevicePlan) -> DeviceEntry<'a> {
        let irq = |p: &'a crate::plan::Placement| IrqEntry {
            irq: p.irq,
            name: p.name.as_deref().map(Cow::Borrowed),
            queue: p.queue,
            action: Cow::Borrowed(p.action.as_str()),
            current: cpus(p.current.as_ref()),
            desired: cpus(p.desired.as_ref()),
        };
        DeviceEntry {
            bdf: Cow::Borrowed(&d.bdf),
            name: d.name.as_deref().map(Cow::Borrowed),
            driver: d.driver.as_deref().map(Cow::Borrowed),
            strategy: Cow::Borrowed(d.strategy.as_str()),
            node: d.node,
            irqs: d.irqs.iter().map(irq).collect(),
        }
    }
}

/// Whether devices `a` and `b` read the same in the state file (every field [`DeviceEntry`]
/// takes is equal).
fn same_state(a: &DevicePlan, b: &DevicePlan) -> bool {
    a.bdf == b.bdf
        && a.name == b.name
        && a.driver == b.driver
        && a.strategy == b.strategy
        && a.node == b.node
        && a.irqs.len() == b.irqs.len()
        && a.irqs.iter().zip(&b.irqs).all(|(p, q)| {
            p.irq == q.irq
                && p.name == q.name
                && p.queue == q.queue
                && p.action == q.action
                && p.current == q.current
                && p.desired == q.desired
        })
}

/// The state file's devices, each encoded as JSON, kept between passes. A pass after one event
/// changes a few devices of a machine's hundred; the others are not encoded again (encoding
/// every CPU list of a 1,024-CPU machine was an eighth of such a pass).
///
/// Invariant: `devices[i]` is the encoding of device `i` of the plan last given to
/// [`EncodedDevices::update`] (empty before the first).
#[derive(Debug, Default)]
pub(crate) struct EncodedDevices {
    devices: Vec<Box<RawValue>>,
}

impl EncodedDevices {
    /// Encodes the devices of `plan`, reusing the encoding of each device that reads the same as
    /// the device at its index in `encoded`, the plan of the last update (or `plan` itself when
    /// the pass planned nothing new).
    pub fn update(&mut self, encoded: &Plan, plan: &Plan) -> Result<&[Box<RawValue>], serde_json::Error> {
        let kept =
            if self.devices.len() == encoded.devices.len() { std::mem::take(&mut self.devices) } else { Vec::new() };
        let mut kept = kept.into_iter().zip(&encoded.devices);
        let mut devices = Vec::with_capacity(plan.devices.len());
        for d in &plan.devices {
            let json = match kept.next() {
                Some((json, before)) if same_state(before, d) => json,
                _ => serde_json::value::to_raw_value(&DeviceEntry::of(d))?,
            };
            devices.push(json);
        }
        self.devices = devices;
        Ok(&self.devices)
    }
}

impl<'a> ReportEntries<'a> {
    /// The writes of `report`, borrowed.
    pub fn of(report: &'a ApplyReport) -> ReportEntries<'a> {
        let changes = report
            .changes
            .iter()
            .map(|c| ChangeEntry {
                irq: c.irq,
                result: Cow::Borrowed(c.result.result_word()),
                old: cpus(c.old.as_ref()),
                new: cpus(c.new_cpus()),
                error: c.result.error().map(Cow::Borrowed),
            })
            .collect();
        ReportEntries { changes }
    }
}

/// Writes the state file after every pass, keeping its buffer and its devices' encodings
/// between passes; a failure to write it is said once until it works again.
#[derive(Debug, Default)]
pub(crate) struct StateWriter {
    buf: Vec<u8>,
    encoded: EncodedDevices,
    /// The plan the last pass replaced, until the file has compared it with the new one.
    replaced: Option<Plan>,
    failed: SaidOnce,
}

impl StateWriter {
    /// The plan a pass replaced: the next write reuses the encoding of each of its devices that
    /// reads the same in the new plan.
    pub fn replaced(&mut self, plan: Plan) {
        self.replaced = Some(plan);
    }

    /// Writes `state` to the state file under `root`, its devices those of `plan`.
    pub fn write(&mut self, root: &Root, plan: &Plan, state: StateFile<'_>) {
        // The plan the kept encodings were made from: the one this pass replaced, else (no new
        // plan) the current one.
        let replaced = self.replaced.take();
        let written =
            self.encoded.update(replaced.as_ref().unwrap_or(plan), plan).map_err(StateError::Encode).and_then(
                |devices| {
                    let plan = PlanEntries { devices: Devices::Encoded(Cow::Borrowed(devices)), ..state.plan };
                    write_state(root, &StateFile { plan, ..state }, &mut self.buf)
                },
            );
        match written {
            Ok(()) => {
                self.failed.worked();
            }
            Err(e) => {
                if self.failed.failed(()) {
                    tracing::warn!("state file not written: {e}");
                }
            }
        }
    }
}

/// Writes `state` to `ROOT/run/irqwise/state.json` atomically, mode 0644, encoding it in `buf`
/// (kept by the caller between passes: a large machine's file is a megabyte, grown anew each
/// pass otherwise).
pub(crate) fn write_state(root: &Root, state: &StateFile, buf: &mut Vec<u8>) -> Result<(), StateError> {
    buf.clear();
    serde_json::to_writer(&mut *buf, state).map_err(StateError::Encode)?;
    buf.push(b'\n');
    root.replace_own_file(Path::new(STATE_FILE), buf, 0o644, false)
        .map_err(|(path, source)| StateError::Write { path, source })
}

/// Reads the state file as raw text (`status --json`) and parsed (`status`). `Ok(None)` when it
/// does not exist: the daemon is not running.
pub(crate) fn read_state(root: &Root) -> Result<Option<(String, StateFile<'static>)>, StateError> {
    let path = root.path(STATE_FILE);
    let text = match crate::sysfs::read_regular_file(&path, STATE_FILE_LIMIT) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Read { path, source }),
    };
    let state = serde_json::from_str(&text).map_err(|source| StateError::Parse { path, source })?;
    Ok(Some((text, state)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{QueueRole, Recognition};
    use crate::plan::{Action, Placement};

    fn placement(irq: u32, current: &str, desired: &str) -> Placement {
        let set = |s: &str| CpuSet::parse_list(s).unwrap();
        Placement {
            irq,
            name: Some(format!("eth0-TxRx-{irq}")),
            role: QueueRole::RxTx,
            queue: Some(irq),
            recognised: Recognition::Table { driver: "ice", pattern: "{if}" },
            queue_source: None,
            managed: false,
            current: Some(set(current)),
            current_locality: None,
            desired: Some(set(desired)),
            hint: None,
            action: Action::Set,
            reason: "test".into(),
            fallbacks: Vec::new(),
            mismatch: None,
            uncertain: None,
        }
    }

    fn device(bdf: &str, irqs: Vec<Placement>) -> DevicePlan {
        crate::plan::test_plans::nic(bdf, irqs)
    }

    fn plan(devices: Vec<DevicePlan>) -> Plan {
        crate::plan::test_plans::plan_of(devices)
    }

    /// The devices as the state file lists them, encoded from scratch.
    fn fresh(plan: &Plan) -> Vec<String> {
        plan.devices.iter().map(|d| serde_json::to_string(&DeviceEntry::of(d)).unwrap()).collect()
    }

    fn texts(devices: &[Box<RawValue>]) -> Vec<String> {
        devices.iter().map(|d| d.get().to_string()).collect()
    }

    #[test]
    fn kept_encodings_equal_encoding_afresh_after_every_kind_of_change() {
        let a = plan(vec![
            device("0000:01:00.0", vec![placement(30, "0-3", "1"), placement(31, "0-3", "2")]),
            device("0000:02:00.0", vec![placement(40, "4-7", "5")]),
        ]);
        let mut encoded = EncodedDevices::default();
        assert_eq!(texts(encoded.update(&Plan::default(), &a).unwrap()), fresh(&a));

        // One mask read anew, one device's name, one IRQ gone, a device added in front.
        let mut b = a.clone();
        b.devices[0].irqs[1].current = Some(CpuSet::single(2));
        let mut c = b.clone();
        c.devices[1].name = Some("eth1".into());
        let mut d = c.clone();
        d.devices[0].irqs.pop();
        let mut e = d.clone();
        e.devices.insert(0, device("0000:00:1f.0", vec![placement(20, "0", "0")]));
        let mut before = a;
        for next in [b, c, d, e.clone(), e] {
            assert_eq!(texts(encoded.update(&before, &next).unwrap()), fresh(&next));
            before = next;
        }
        // A pass that planned nothing new compares the plan with itself.
        assert_eq!(texts(encoded.update(&before, &before).unwrap()), fresh(&before));
    }

    #[test]
    fn encodings_of_another_plan_are_not_reused() {
        let a = plan(vec![device("0000:01:00.0", vec![placement(30, "0-3", "1")])]);
        let mut b = a.clone();
        b.devices[0].irqs[0].desired = Some(CpuSet::single(3));
        let mut encoded = EncodedDevices::default();
        encoded.update(&Plan::default(), &a).unwrap();
        // Told that the kept encodings are of a plan with a different number of devices.
        let two = plan(vec![b.devices[0].clone(), b.devices[0].clone()]);
        assert_eq!(texts(encoded.update(&two, &b).unwrap()), fresh(&b));
    }

    /// A state file the daemon wrote with the previous types (`StateRecord` written, `StateView`
    /// read: before this type), on the fixture machine of tests/common/acceptance.rs.
    const PREVIOUS: &str = include_str!("../../tests/data/state/written-by-073bc2d.json");

    fn previous() -> serde_json::Value {
        serde_json::from_str(PREVIOUS).unwrap()
    }

    #[test]
    fn a_file_of_the_previous_writer_reads_and_writes_back_the_same_document() {
        let read: StateFile<'static> = serde_json::from_str(PREVIOUS).unwrap();
        assert!(!read.plan.devices.entries().is_empty() && read.counters.is_some());
        assert_eq!(serde_json::to_value(&read).unwrap(), previous(), "a field read or written differently");
        // Byte for byte: the same fields in the same order.
        assert_eq!(serde_json::to_string(&read).unwrap(), PREVIOUS.trim_end());
    }

    #[test]
    fn a_file_of_the_first_version_reads_with_its_later_fields_absent() {
        let mut old = previous();
        let later = [
            "schema",
            "process",
            "degraded",
            "config_error",
            "config_sources",
            "repeated",
            "report",
            "counters",
            "recent_changes",
            "claims",
            "refused_claims",
            "away_from_home",
            "left_to_others",
        ];
        for key in later {
            old.as_object_mut().unwrap().remove(key);
        }
        old["plan"].as_object_mut().unwrap().remove("warnings");
        for d in old["plan"]["devices"].as_array_mut().unwrap() {
            d.as_object_mut().unwrap().remove("node");
            for irq in d["irqs"].as_array_mut().unwrap() {
                irq.as_object_mut().unwrap().remove("queue");
            }
        }
        let read: StateFile<'static> = serde_json::from_value(old).unwrap();
        assert_eq!((read.schema, read.process.is_none(), read.counters.is_none()), (0, true, true));
        let shown = super::super::state_view::render_status(&read, read.last_pass, true);
        assert!(shown.contains(read.status.as_ref()) && shown.contains("0000:41:00.0"), "{shown}");
    }

    #[test]
    fn a_file_that_is_not_a_state_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert!(read_state(&root).unwrap().is_none(), "no file: no daemon");
        let path = dir.path().join(STATE_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut wrong = previous();
        wrong["plan"]["devices"][0]["irqs"][0]["desired"] = "0-".into();
        for text in ["{half".to_string(), r#"{"pid": "x"}"#.to_string(), wrong.to_string()] {
            std::fs::write(&path, &text).unwrap();
            let said = read_state(&root).unwrap_err().to_string();
            assert!(said.starts_with(&format!("{}: not a state file irqwise wrote", path.display())), "{said}");
        }
    }

    #[test]
    fn the_grouping_rule_reads_back_and_status_says_its_finding() {
        let mut with = previous();
        with["plan"]["grouping"] = serde_json::json!({
            "rule": "mainline", "heapsort": "6.11+", "source": "observed", "evidence": "masks of nvme0",
            "finding": "the masks fit no rule"
        });
        let read: StateFile<'static> = serde_json::from_value(with.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), with);
        let shown = super::super::state_view::render_status(&read, read.last_pass, true);
        assert!(shown.contains("kernel grouping: the masks fit no rule\n"), "{shown}");
    }
}
