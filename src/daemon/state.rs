//! The state file `ROOT/run/irqwise/state.json`: what the daemon last planned and applied, when
//! and why. Written atomically (see [`super::files`]), so a reader sees the previous or the new
//! state, never half of one; world-readable, so monitoring reads it without root. Compact: CPU
//! sets are kernel list strings (`"0-3,8"`) and JSON has no indentation, so the file grows with
//! the number of IRQs, not with IRQs × CPUs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::counters::{render_status_section, Counters, RecentChange};
use crate::apply::{ApplyReport, WriteOutcome};
use crate::cpuset::CpuSet;
use crate::plan::{DevicePlan, Plan, Summary};
use crate::sysfs::Root;

/// Where the state file lives, relative to the root.
pub const STATE_FILE: &str = "run/irqwise/state.json";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot create {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot rename {from} to {to}: {source}")]
    Rename { from: PathBuf, to: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a state file irqwise wrote ({source}); expected the JSON of `irqwise run`")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("cannot encode the state: {0}")]
    Encode(serde_json::Error),
}

/// What the daemon writes after every pass.
#[derive(Debug, Serialize)]
pub struct StateRecord<'a> {
    /// The version of this document ([`crate::JSON_SCHEMA`]).
    pub schema: u32,
    pub pid: u32,
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
}

/// The plan as the state keeps it: every IRQ's action and CPUs, as list strings. The devices
/// come encoded ([`EncodedDevices`]): most of them are the same from one pass to the next.
#[derive(Debug, Serialize)]
pub struct PlanState<'a> {
    pub devices: &'a [Box<RawValue>],
    pub warnings: &'a [String],
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
pub struct ReportState<'a> {
    pub changes: Vec<ChangeState<'a>>,
}

#[derive(Debug, Serialize)]
pub struct ChangeState<'a> {
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
pub struct EncodedDevices {
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
                result: match &c.result {
                    WriteOutcome::Written { .. } => "written",
                    WriteOutcome::WrittenFallback { .. } => "written_fallback",
                    WriteOutcome::Managed { .. } => "managed",
                    WriteOutcome::Gone { .. } => "gone",
                    WriteOutcome::Overtaken { .. } => "overtaken",
                    WriteOutcome::Failed { .. } => "failed",
                },
                old: list(c.old.as_ref()),
                new: list(c.new_cpus()),
                error: c.result.error(),
            })
            .collect();
        ReportState { changes }
    }
}

/// Writes `record` to `ROOT/run/irqwise/state.json` atomically, mode 0644, encoding it in `buf`
/// (kept by the caller between passes: a large machine's file is a megabyte, grown anew each
/// pass otherwise).
pub fn write_state(root: &Root, record: &StateRecord, buf: &mut Vec<u8>) -> Result<(), StateError> {
    let path = root.path(STATE_FILE);
    buf.clear();
    serde_json::to_writer(&mut *buf, record).map_err(StateError::Encode)?;
    buf.push(b'\n');
    super::files::replace_atomically(&path, buf, 0o644).map_err(|(path, source)| StateError::Write { path, source })
}

/// The most bytes `status` reads of the state file (it grows with the IRQs of the machine).
pub const STATE_FILE_LIMIT: u64 = 256 << 20;

/// What `irqwise status` reads back: the parts of [`StateRecord`] it shows.
#[derive(Debug, Clone, Deserialize)]
pub struct StateView {
    pub pid: u32,
    pub started: u64,
    pub last_pass: u64,
    pub passes: u64,
    pub triggers: Vec<String>,
    pub summary: Summary,
    pub status: String,
    pub error: Option<String>,
    #[serde(default)]
    pub degraded: Option<String>,
    /// Absent in state files of versions that did not record it.
    #[serde(default)]
    pub config_error: Option<String>,
    pub plan: PlanView,
    /// Absent in state files of versions without counters.
    #[serde(default)]
    pub counters: Option<Counters>,
    #[serde(default)]
    pub recent_changes: Vec<RecentChange>,
    #[serde(default)]
    pub repeated: Vec<RepeatedView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RepeatedView {
    pub irq: u32,
    pub name: Option<String>,
    pub target: String,
    pub outcome: String,
    pub count: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanView {
    pub devices: Vec<DeviceView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeviceView {
    pub bdf: String,
    pub name: Option<String>,
    pub driver: Option<String>,
    pub strategy: String,
    pub irqs: Vec<PlacementView>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlacementView {
    pub irq: u32,
    pub name: Option<String>,
    pub action: String,
    pub desired: Option<String>,
    pub current: Option<String>,
}

/// Reads the state file as raw text (`status --json`) and parsed (`status`). `Ok(None)` when it
/// does not exist: the daemon is not running.
pub fn read_state(root: &Root) -> Result<Option<(String, StateView)>, StateError> {
    let path = root.path(STATE_FILE);
    let text = match crate::sysfs::read_regular_file(&path, STATE_FILE_LIMIT) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StateError::Read { path, source }),
    };
    let view = serde_json::from_str(&text).map_err(|source| StateError::Parse { path, source })?;
    Ok(Some((text, view)))
}

/// The human summary of `irqwise status`; `now` in unix seconds, `alive` whether `pid` runs.
pub fn render_status(s: &StateView, now: u64, alive: bool) -> String {
    let mut out = String::new();
    if alive {
        out.push_str(&format!("irqwise is running (pid {}) for {}\n", s.pid, ago(now, s.started)));
    } else {
        out.push_str(&format!("irqwise is not running: process {} is gone; this is the state it left\n", s.pid));
    }
    out.push_str(&format!(
        "last pass: {} ago (pass {}), because of: {}\n",
        ago(now, s.last_pass),
        s.passes,
        s.triggers.join(", ")
    ));
    out.push_str(&format!("{}; {} written in that pass\n", s.status, s.summary.written));
    if let Some(e) = &s.error {
        out.push_str(&format!("last pass failed: {e}\n"));
    }
    if let Some(d) = s.degraded.as_deref().filter(|_| s.error.is_none()) {
        out.push_str(&format!("degraded: {d}\n"));
    }
    if let Some(e) = &s.config_error {
        out.push_str(&format!("last reload rejected, previous configuration kept: {}\n", e.replace('\n', "; ")));
    }
    for r in &s.repeated {
        let name = r.name.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "irq {} ({name}) -> {}: {} in each of the last {} passes (logged once)\n",
            r.irq, r.target, r.outcome, r.count
        ));
    }
    for d in &s.plan.devices {
        let name = d.name.as_deref().unwrap_or("-");
        let driver = d.driver.as_deref().unwrap_or("-");
        out.push_str(&format!("\n{} {name} ({driver}): {}\n", d.bdf, d.strategy));
        for p in &d.irqs {
            let cpus = p.desired.as_deref().or(p.current.as_deref()).unwrap_or("?");
            let pname = p.name.as_deref().unwrap_or("-");
            out.push_str(&format!("  irq {:>5} {pname:<24} {:<8} {cpus}\n", p.irq, p.action));
        }
    }
    if let Some(counters) = &s.counters {
        out.push_str(&render_status_section(counters, &s.recent_changes, now));
    }
    out
}

/// "3 s", "2 min 5 s", "1 h 4 min" between `then` and `now` (0 when `then` is later).
fn ago(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::StrategyName;
    use crate::devices::{DeviceClass, QueueRole, Recognition};
    use crate::plan::{Action, Placement};

    fn placement(irq: u32, current: &str, desired: &str) -> Placement {
        let set = |s: &str| CpuSet::parse_list(s).unwrap();
        Placement {
            irq,
            name: Some(format!("eth0-TxRx-{irq}")),
            role: QueueRole::RxTx,
            queue: Some(irq),
            recognised: Recognition::Table { driver: "ice", pattern: "{if}" },
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
        DevicePlan {
            bdf: bdf.into(),
            class: DeviceClass::Nic,
            driver: Some("ice".into()),
            name: Some("eth0".into()),
            node: Some(0),
            strategy: StrategyName::NumaHop,
            rules: vec![],
            irqs,
            xps: None,
        }
    }

    fn plan(devices: Vec<DevicePlan>) -> Plan {
        Plan { kernel: None, devices, warnings: vec![] }
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

    #[test]
    fn durations_read_naturally() {
        assert_eq!(ago(100, 97), "3 s");
        assert_eq!(ago(1000, 875), "2 min 5 s");
        assert_eq!(ago(10_000, 10_000 - 3840), "1 h 4 min");
        assert_eq!(ago(5, 10), "0 s");
    }
}
