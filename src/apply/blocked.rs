//! When nothing can be written at all: every IRQ write of a pass failed for one cause that is
//! the machine's or the sandbox's, not the IRQs' (a read-only `/proc/irq`, no permission). Then
//! one diagnosis naming the likely cause and its fix says it, instead of one line per IRQ. A pass
//! that writes nothing can [`probe`] (an IRQ's own mask written back) to know it all the same.
//! Pure but [`probe`], which writes through the writer it is given.

use serde::Serialize;

use super::{AffinityWriter, ApplyReport, FailureClass, WriteOutcome};
use crate::cpuset::CpuSet;
use crate::plan::{Action, Plan};

/// Every IRQ write failed, all for one cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WritesBlocked {
    pub class: FailureClass,
    /// How many writes failed (all of the pass's).
    pub failed: usize,
    /// The first failure's error, as the kernel gave it (file, value, errno).
    pub example: String,
    /// The likely cause and its fix, for an operator.
    pub cause: &'static str,
    /// Found by a probe (an IRQ's own mask written back), not by the pass's writes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub probe: bool,
}

impl WritesBlocked {
    /// One line: `nothing written: all 27 IRQ writes failed: /proc/irq is read-only (EROFS): ...`.
    pub fn line(&self) -> String {
        if self.probe {
            return format!("IRQ affinities cannot be written: {} (probe: {})", self.cause, self.example);
        }
        format!(
            "nothing written: all {} IRQ write(s) failed the same way: {} (first: {})",
            self.failed, self.cause, self.example
        )
    }

    /// Why the daemon is degraded, for its status.
    pub fn status(&self) -> String {
        if self.probe {
            format!("IRQ affinities cannot be written: {}", self.cause)
        } else {
            format!("all {} writes of the last pass failed: {}", self.failed, self.cause)
        }
    }
}

/// The likely cause of a class of failure that blocks every write, and its fix; `None` for a
/// class that is about the IRQs (invalid sets, no vectors, gone, managed).
pub fn cause_of(class: FailureClass) -> Option<&'static str> {
    match class {
        FailureClass::ReadOnly => Some(
            "/proc/irq is read-only (EROFS): a systemd unit or drop-in sets ProtectKernelTunables=yes \
             (irqwise's own unit leaves it off: remove it from the drop-in), or irqwise runs in a container \
             that is not privileged (its /proc is mounted read-only: run the container privileged)",
        ),
        FailureClass::Permission => Some(
            "writing /proc/irq is not permitted (EACCES): irqwise is not running as root (uid 0), or a \
             security module (AppArmor, SELinux) denies it",
        ),
        _ => None,
    }
}

/// The diagnosis of `report`, when it wrote no IRQ and every IRQ write failed with one class
/// that [`cause_of`] explains. Guarantees: `None` as soon as one write succeeded or failed
/// otherwise, and when nothing was tried.
pub fn writes_blocked(report: &ApplyReport) -> Option<WritesBlocked> {
    let mut failed = 0;
    let mut first: Option<(FailureClass, &str)> = None;
    for c in &report.changes {
        match &c.result {
            WriteOutcome::Failed { class, error } => {
                failed += 1;
                match first {
                    None => first = Some((*class, error)),
                    Some((seen, _)) if seen != *class => return None,
                    Some(_) => {}
                }
            }
            WriteOutcome::Written { .. } | WriteOutcome::WrittenFallback { .. } | WriteOutcome::Held { .. } => {
                return None
            }
            WriteOutcome::Managed { .. } | WriteOutcome::Gone { .. } | WriteOutcome::Overtaken { .. } => {}
        }
    }
    let (class, example) = first?;
    Some(WritesBlocked { class, failed, example: example.to_string(), cause: cause_of(class)?, probe: false })
}

/// Whether writing works at all, for a pass that writes nothing (the daemon's start and reload):
/// IRQ `irq`'s own current mask `cpus` written back, which changes nothing. `Some` when that
/// fails for a cause [`cause_of`] explains.
pub fn probe(writer: &dyn AffinityWriter, irq: u32, cpus: &CpuSet) -> Option<WritesBlocked> {
    let e = writer.write(irq, cpus).err()?;
    let class = e.class();
    Some(WritesBlocked { class, failed: 1, example: e.to_string(), cause: cause_of(class)?, probe: true })
}

/// The IRQ a probe writes back: one of `plan` that is movable, already where it should be and
/// readable, on one CPU if any is (writing a wider mask again may let the kernel pick another
/// effective CPU).
pub fn probe_target(plan: &Plan) -> Option<(u32, CpuSet)> {
    let kept: Vec<(u32, CpuSet)> = plan
        .devices
        .iter()
        .flat_map(|d| &d.irqs)
        .filter(|p| !p.managed && p.action == Action::Keep)
        .filter_map(|p| Some((p.irq, p.current.clone()?)))
        .collect();
    kept.iter().find(|(_, c)| c.len() == 1).or(kept.first()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{Change, Verification};
    use crate::choices::StrategyName;
    use crate::plan::Summary;

    fn change(irq: u32, result: WriteOutcome) -> Change {
        Change {
            irq,
            irq_name: None,
            device: "0000:01:00.0".into(),
            device_name: None,
            driver: None,
            queue: None,
            strategy: StrategyName::NumaHop,
            reason: String::new(),
            old: None,
            wanted: None,
            result,
        }
    }

    fn report(results: Vec<WriteOutcome>) -> ApplyReport {
        let changes = results.into_iter().enumerate().map(|(i, r)| change(30 + i as u32, r)).collect();
        ApplyReport {
            changes,
            summary: Summary::default(),
            learned_managed: vec![],
            xps: vec![],
            threads: vec![],
            napi: vec![],
        }
    }

    fn failed(class: FailureClass) -> WriteOutcome {
        WriteOutcome::Failed { class, error: format!("{class:?} error") }
    }

    #[test]
    fn one_sandbox_cause_for_every_write_is_one_diagnosis() {
        let r = report(vec![failed(FailureClass::ReadOnly), failed(FailureClass::ReadOnly)]);
        let b = writes_blocked(&r).unwrap();
        assert_eq!((b.class, b.failed, b.example.as_str()), (FailureClass::ReadOnly, 2, "ReadOnly error"));
        assert!(b.line().contains("ProtectKernelTunables"), "{}", b.line());
        let managed = WriteOutcome::Managed { error: "EIO".into() };
        let r = report(vec![managed, failed(FailureClass::Permission)]);
        assert_eq!(writes_blocked(&r).map(|b| b.class), Some(FailureClass::Permission), "managed IRQs aside");
    }

    #[test]
    fn a_success_another_class_or_an_irq_cause_is_no_diagnosis() {
        let cpus = crate::cpuset::CpuSet::from_iter([1]);
        let verified =
            Verification { readback: Some(cpus.clone()), matches: true, effective: crate::apply::Effective::Absent };
        let written = WriteOutcome::Written { cpus, verified };
        assert_eq!(writes_blocked(&report(vec![failed(FailureClass::ReadOnly), written])), None);
        let mixed = vec![failed(FailureClass::ReadOnly), failed(FailureClass::Permission)];
        assert_eq!(writes_blocked(&report(mixed)), None);
        assert_eq!(writes_blocked(&report(vec![failed(FailureClass::NoVectors)])), None);
        assert_eq!(writes_blocked(&report(vec![])), None, "nothing tried");
    }
}
