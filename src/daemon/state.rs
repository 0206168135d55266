//! The state file `ROOT/run/irqwise/state.json`: what the daemon last planned and applied, when
//! and why. Written atomically (`Root::replace_own_file`, below the root and through no symlink), so a reader sees the previous or the new
//! state, never half of one; world-readable, so monitoring reads it without root. Compact: CPU
//! sets are kernel list strings (`"0-3,8"`) and JSON has no indentation, so the file grows with
//! the number of IRQs, not with IRQs × CPUs.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::value::RawValue;

use super::claims::HeldClaim;
use super::counters::{Counters, RecentChange};
use super::once::SaidOnce;
use crate::apply::ApplyReport;
use crate::cpuset::CpuSet;
use crate::plan::refine::Moved;
use crate::plan::{DevicePlan, Plan, Summary};
use crate::sysfs::processes::ProcessIdentity;
use crate::sysfs::Root;
use crate::topology::claims::RefusedClaim;

/// Where the state file lives, relative to the root.
pub(crate) const STATE_FILE: &str = "run/irqwise/state.json";

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

/// What the daemon writes after every pass.
#[derive(Debug, Serialize)]
pub(crate) struct StateRecord<'a> {
    /// The version of this document ([`crate::JSON_SCHEMA`]).
    pub schema: u32,
    pub pid: u32,
    /// The daemon's process as `status` checks it is still the one running under `pid`.
    pub process: Option<&'a ProcessIdentity>,
    /// Unix seconds.
    pub started: u64,
    pub last_pass: u64,
    /// Passes since start (the initial one is 1).
    pub passes: u64,
    /// Why the last pass ran (`start`, `cpu`, `device`, `link eth0 up`, `reload`, ...).
    pub triggers: &'a [String],
    pub summary: Summary,
    pub status: &'a str,
    /// The last pass's error, if it failed (the plan and report are then the previous ones).
    pub error: Option<&'a str>,
    /// Why the daemon is degraded (the last pass failed, or all its writes did); absent when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<&'a str>,
    /// Why the last reload was rejected (the previous configuration is still in force); absent
    /// after a successful reload and before the first.
    pub config_error: Option<&'a str>,
    pub config_sources: &'a [PathBuf],
    pub plan: PlanState<'a>,
    /// Writes that ended the same way pass after pass (logged once, counted here).
    pub repeated: Vec<super::ledger::Repeated>,
    pub report: ReportState<'a>,
    /// Since start (the same counters as the metrics file).
    pub counters: &'a Counters,
    /// The last writes, oldest first.
    pub recent_changes: &'a [RecentChange],
    /// The runtime claims the last pass held (`irqwise claims`).
    pub claims: &'a [HeldClaim],
    /// The live claims the last pass refused, each with why (with it no CPU would be left).
    pub refused_claims: &'a [RefusedClaim],
    /// The queues load refinement keeps away from home (`balance = "load"`).
    pub away_from_home: &'a [Moved],
    /// IRQs left to other writers (`on_drift = "respect"`), each with who most likely set it.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub left_to_others: &'a [super::respect::LeftToOther],
}

/// The plan as the state keeps it: every IRQ's action and CPUs, as list strings. The devices
/// come encoded ([`EncodedDevices`]): most of them are the same from one pass to the next.
#[derive(Debug, Serialize)]
pub(crate) struct PlanState<'a> {
    pub devices: &'a [Box<RawValue>],
    pub warnings: &'a [String],
    /// The kernel's grouping rule the plan predicted with (`status` says when no rule fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grouping: Option<&'a crate::plan::grouping::GroupingChoice>,
}

#[derive(Debug, Serialize)]
pub struct DeviceState<'a> {
    pub bdf: &'a str,
    pub name: Option<&'a str>,
    pub driver: Option<&'a str>,
    pub strategy: &'static str,
    pub node: Option<u32>,
    pub irqs: Vec<IrqState<'a>>,
}

#[derive(Debug, Serialize)]
pub struct IrqState<'a> {
    pub irq: u32,
    pub name: Option<&'a str>,
    pub queue: Option<u32>,
    pub action: &'static str,
    pub current: Option<List<'a>>,
    pub desired: Option<List<'a>>,
}

/// The last pass's writes as the state keeps them.
#[derive(Debug, Serialize)]
pub(crate) struct ReportState<'a> {
    pub changes: Vec<ChangeState<'a>>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ChangeState<'a> {
    pub irq: u32,
    pub result: &'static str,
    pub old: Option<List<'a>>,
    pub new: Option<List<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
}

/// A CPU set as the state file writes it: the kernel's list string (`"0-3,8"`), formatted
/// straight into the output.
#[derive(Debug)]
pub struct List<'a>(&'a CpuSet);

impl Serialize for List<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

fn list(set: Option<&CpuSet>) -> Option<List<'_>> {
    set.map(List)
}

impl<'a> DeviceState<'a> {
    /// What the state file says of device `d` (borrowed from the plan: the file of a machine
    /// with thousands of IRQs is written without a copy of each).
    pub fn of(d: &'a DevicePlan) -> DeviceState<'a> {
        DeviceState {
            bdf: &d.bdf,
            name: d.name.as_deref(),
            driver: d.driver.as_deref(),
            strategy: d.strategy.as_str(),
            node: d.node,
            irqs: d
                .irqs
                .iter()
                .map(|p| IrqState {
                    irq: p.irq,
                    name: p.name.as_deref(),
                    queue: p.queue,
                    action: p.action.as_str(),
                    current: list(p.current.as_ref()),
                    desired: list(p.desired.as_ref()),
                })
                .collect(),
        }
    }
}

/// Whether devices `a` and `b` read the same in the state file (every field [`DeviceState`]
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
                _ => serde_json::value::to_raw_value(&DeviceState::of(d))?,
            };
            devices.push(json);
        }
        self.devices = devices;
        Ok(&self.devices)
    }
}

impl<'a> ReportState<'a> {
    pub fn of(report: &'a ApplyReport) -> ReportState<'a> {
        let changes = report
            .changes
            .iter()
            .map(|c| ChangeState {
                irq: c.irq,
                result: c.result.result_word(),
                old: list(c.old.as_ref()),
                new: list(c.new_cpus()),
                error: c.result.error(),
            })
            .collect();
        ReportState { changes }
    }
}

/// What a pass gives the state file (see [`StateRecord`] for each field).
#[derive(Debug)]
pub(crate) struct StateInputs<'a> {
    pub started: u64,
    pub process: Option<&'a ProcessIdentity>,
    pub passes: u64,
    pub triggers: &'a [String],
    pub summary: Summary,
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub degraded: Option<&'a str>,
    pub config_error: Option<&'a str>,
    pub config_sources: &'a [PathBuf],
    pub plan: &'a Plan,
    pub repeated: Vec<super::ledger::Repeated>,
    pub report: &'a ApplyReport,
    pub counters: &'a Counters,
    pub recent_changes: &'a [RecentChange],
    pub claims: &'a [HeldClaim],
    pub refused_claims: &'a [RefusedClaim],
    pub away: &'a [Moved],
    pub left_to_others: &'a [super::respect::LeftToOther],
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

    /// Writes the state of `inputs` to the state file under `root`.
    pub fn write(&mut self, root: &Root, inputs: StateInputs) {
        // The plan the kept encodings were made from: the one this pass replaced, else (no new
        // plan) the current one.
        let replaced = self.replaced.take();
        let written = self
            .encoded
            .update(replaced.as_ref().unwrap_or(inputs.plan), inputs.plan)
            .map_err(StateError::Encode)
            .and_then(|devices| {
                let record = StateRecord {
                    schema: crate::JSON_SCHEMA,
                    pid: std::process::id(),
                    process: inputs.process,
                    started: inputs.started,
                    last_pass: super::clock::unix_now(),
                    passes: inputs.passes,
                    triggers: inputs.triggers,
                    summary: inputs.summary,
                    status: inputs.status,
                    error: inputs.error,
                    degraded: inputs.degraded,
                    config_error: inputs.config_error,
                    config_sources: inputs.config_sources,
                    plan: PlanState {
                        devices,
                        warnings: &inputs.plan.warnings,
                        grouping: inputs.plan.grouping.as_ref(),
                    },
                    repeated: inputs.repeated,
                    report: ReportState::of(inputs.report),
                    counters: inputs.counters,
                    recent_changes: inputs.recent_changes,
                    claims: inputs.claims,
                    refused_claims: inputs.refused_claims,
                    away_from_home: inputs.away,
                    left_to_others: inputs.left_to_others,
                };
                write_state(root, &record, &mut self.buf)
            });
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

/// Writes `record` to `ROOT/run/irqwise/state.json` atomically, mode 0644, encoding it in `buf`
/// (kept by the caller between passes: a large machine's file is a megabyte, grown anew each
/// pass otherwise).
pub(crate) fn write_state(root: &Root, record: &StateRecord, buf: &mut Vec<u8>) -> Result<(), StateError> {
    buf.clear();
    serde_json::to_writer(&mut *buf, record).map_err(StateError::Encode)?;
    buf.push(b'\n');
    root.replace_own_file(Path::new(STATE_FILE), buf, 0o644, false)
        .map_err(|(path, source)| StateError::Write { path, source })
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
        crate::plan::test_nic_plan(bdf, irqs, Vec::new())
    }

    fn plan(devices: Vec<DevicePlan>) -> Plan {
        Plan { kernel: None, devices, warnings: vec![], ..Plan::default() }
    }

    /// The devices as the state file lists them, encoded from scratch.
    fn fresh(plan: &Plan) -> Vec<String> {
        plan.devices.iter().map(|d| serde_json::to_string(&DeviceState::of(d)).unwrap()).collect()
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
}
