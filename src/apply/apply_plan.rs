//! Applying a whole [`Plan`]: one [`Change`] per planned write, and the pass's counts.
//!
//! Guarantee: [`apply_plan`] writes only `Set` placements and carries on past every per-IRQ
//! failure.

use serde::Serialize;

use super::{apply_writes, AffinityWrite, AffinityWriter, WriteOutcome};
use crate::choices::StrategyName;
use crate::cpuset::CpuSet;
use crate::plan::{Plan, Summary};

/// One IRQ the pass tried to move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub irq: u32,
    pub irq_name: Option<String>,
    pub device: String,
    pub device_name: Option<String>,
    pub driver: Option<String>,
    pub queue: Option<u32>,
    pub strategy: StrategyName,
    pub reason: String,
    pub old: Option<CpuSet>,
    /// What the plan asked to write (the fallback, if written instead, is in the result).
    pub wanted: Option<CpuSet>,
    /// Flattened: `"result": ...` and its fields beside the other keys.
    #[serde(flatten)]
    pub result: WriteOutcome,
}

impl Change {
    /// What is now in `smp_affinity_list` (the desired or the fallback set), if written.
    pub fn new_cpus(&self) -> Option<&CpuSet> {
        self.result.cpus()
    }
}

/// What applying a plan did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyReport {
    pub changes: Vec<Change>,
    pub summary: Summary,
    /// IRQs whose write failed with EIO/EPERM: the next plan treats them as managed.
    pub learned_managed: Vec<u32>,
    /// Transmit queues whose `xps_cpus` the pass tried to write (see [`super::xps_write::apply_xps`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub xps: Vec<super::xps_write::XpsChange>,
    /// NAPI threads the pass tried to move (see [`super::threads::apply_threads`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<super::threads::ThreadChange>,
    /// NAPI instances whose settings the pass wrote (see [`super::napi_write::apply_napi`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<super::napi_write::NapiChange>,
}

impl ApplyReport {
    /// True when every IRQ ended as planned or was correctly left alone, and every planned
    /// `xps_cpus` was written, and every planned NAPI thread moved and NAPI instance written (or
    /// gone).
    pub fn all_ok(&self) -> bool {
        self.summary.failed == 0
            && !self.xps.iter().any(super::xps_write::XpsChange::is_failure)
            && !self.threads.iter().any(super::threads::ThreadChange::is_failure)
            && !self.napi.iter().any(super::napi_write::NapiChange::is_failure)
    }
}

/// Writes every `Set` placement of `plan` through `writer`.
pub fn apply_plan(plan: &Plan, writer: &dyn AffinityWriter) -> ApplyReport {
    let todo: Vec<_> = plan.writes().collect();
    let writes: Vec<AffinityWrite> = todo
        .iter()
        .filter_map(|(_, p)| {
            p.desired.clone().map(|cpus| AffinityWrite { irq: p.irq, cpus, fallbacks: p.fallbacks.clone() })
        })
        .collect();
    let outcomes = apply_writes(writer, &writes);
    let mut report = ApplyReport { summary: plan.summary(), ..ApplyReport::default() };
    for ((dev, p), (_, result)) in todo.iter().zip(outcomes) {
        match &result {
            WriteOutcome::Written { .. } | WriteOutcome::WrittenFallback { .. } => report.summary.written += 1,
            WriteOutcome::Held { .. } => report.summary.kept += 1,
            WriteOutcome::Managed { .. } => {
                report.summary.managed += 1;
                report.learned_managed.push(p.irq);
            }
            WriteOutcome::Gone { .. } | WriteOutcome::Overtaken { .. } => report.summary.skipped += 1,
            WriteOutcome::Failed { .. } => report.summary.failed += 1,
        }
        report.changes.push(Change {
            irq: p.irq,
            irq_name: p.name.clone(),
            device: dev.bdf.clone(),
            device_name: dev.name.clone(),
            driver: dev.driver.clone(),
            queue: p.queue,
            strategy: dev.strategy,
            reason: p.reason.clone(),
            old: p.current.clone(),
            wanted: p.desired.clone(),
            result,
        });
    }
    report
}
