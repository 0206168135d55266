//! The Plan: for every IRQ of every device, where it is, where it should be, and what to do.
//!
//! A plan is data. It is computed by [`build::build_plan`] from a topology, the discovered
//! devices and their settings without touching the filesystem, then printed, serialized or
//! applied. Invariants: a `Set` placement always has a non-empty `desired` set of online CPUs;
//! a `Managed` placement is never written.

use serde::Serialize;

use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, QueueRole};

pub mod build;
mod table;

pub use crate::config::StrategyName;
pub use build::{build_plan, PlanContext};

/// What happens to one IRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Already where it should be.
    Keep,
    /// Write `desired` to `smp_affinity_list` (also when the current mask was unreadable).
    Set,
    /// The kernel owns it; `desired` is the kernel's expected placement, never written.
    Managed,
    /// Deliberately left alone (strategy `leave`, no usable CPU).
    Skip,
}

/// One IRQ's placement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    pub irq: u32,
    pub name: Option<String>,
    pub role: QueueRole,
    pub queue: Option<u32>,
    pub managed: bool,
    /// `smp_affinity_list` as read; `None` when unreadable.
    pub current: Option<CpuSet>,
    /// Where it should be (for managed IRQs: where the kernel should have put it).
    pub desired: Option<CpuSet>,
    pub action: Action,
    pub reason: String,
    /// Written instead of `desired` when the kernel has no free vectors there (ENOSPC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<CpuSet>,
    /// Managed IRQs: whether the kernel's actual mask differs from the prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<bool>,
}

/// One device's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DevicePlan {
    pub bdf: String,
    pub class: DeviceClass,
    pub driver: Option<String>,
    pub name: Option<String>,
    /// The node placement starts from (a rule's override, else the device's own).
    pub node: Option<u32>,
    pub strategy: StrategyName,
    /// Config rules that decided this device (`file:line`), in order.
    pub rules: Vec<String>,
    pub irqs: Vec<Placement>,
}

/// Counts of a plan's actions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    pub devices: usize,
    pub irqs: usize,
    pub set: usize,
    pub keep: usize,
    pub managed: usize,
    pub skip: usize,
    pub mismatched: usize,
}

/// The whole machine's plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub kernel: Option<String>,
    pub devices: Vec<DevicePlan>,
    /// Problems met while planning (devices skipped, rules matching nothing).
    pub warnings: Vec<String>,
}

impl Plan {
    pub fn summary(&self) -> PlanSummary {
        let mut s = PlanSummary { devices: self.devices.len(), ..PlanSummary::default() };
        for p in self.devices.iter().flat_map(|d| &d.irqs) {
            s.irqs += 1;
            match p.action {
                Action::Keep => s.keep += 1,
                Action::Set => s.set += 1,
                Action::Managed => s.managed += 1,
                Action::Skip => s.skip += 1,
            }
            s.mismatched += usize::from(p.mismatch == Some(true));
        }
        s
    }

    /// Placements to write, with their device.
    pub fn writes(&self) -> impl Iterator<Item = (&DevicePlan, &Placement)> {
        self.devices.iter().flat_map(|d| d.irqs.iter().map(move |p| (d, p))).filter(|(_, p)| p.action == Action::Set)
    }

    /// The human table printed by `irqwise plan`.
    pub fn to_table(&self) -> String {
        table::render(self)
    }
}
