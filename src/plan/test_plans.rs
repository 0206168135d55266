//! The builders of plans for unit tests: every test that needs a [`DevicePlan`] or a [`Plan`]
//! starts from one of these and changes only what it tests, so a new field of either is one edit
//! here, not one in every test file.

use crate::choices::StrategyName;
use crate::devices::DeviceClass;

use super::{DevicePlan, Placement, Plan, ThreadPlacement};

/// Device `bdf` of `class` with `irqs`, and nothing else known: no driver, name, node, rules,
/// NAPI or transmit steering; placed by `numa-hop`.
pub(crate) fn device(bdf: &str, class: DeviceClass, irqs: Vec<Placement>) -> DevicePlan {
    DevicePlan {
        bdf: bdf.into(),
        class,
        driver: None,
        name: None,
        node: None,
        strategy: StrategyName::NumaHop,
        rules: Vec::new(),
        irqs,
        xps: None,
        napi_threads: Vec::new(),
        resets: None,
        napi: Vec::new(),
    }
}

/// NIC `bdf` with `irqs`: driver `ice`, interface `eth0`, node 0, placed by `numa-hop`.
pub(crate) fn nic(bdf: &str, irqs: Vec<Placement>) -> DevicePlan {
    device(bdf, DeviceClass::Nic, irqs).with_driver("ice").with_name("eth0").with_node(Some(0))
}

/// NVMe drive `bdf` with `irqs`: driver `nvme`, name `nvme0`, node 0, placed by `cluster-group`.
pub(crate) fn nvme(bdf: &str, irqs: Vec<Placement>) -> DevicePlan {
    device(bdf, DeviceClass::Nvme, irqs)
        .with_driver("nvme")
        .with_name("nvme0")
        .with_node(Some(0))
        .with_strategy(StrategyName::ClusterGroup)
}

/// The plan of these devices, with no kernel, warnings or notices.
pub(crate) fn plan_of(devices: Vec<DevicePlan>) -> Plan {
    Plan { devices, ..Plan::default() }
}

/// Changes to one field of a device plan, each returning the changed plan.
impl DevicePlan {
    /// With driver `driver`.
    pub(crate) fn with_driver(self, driver: &str) -> Self {
        DevicePlan { driver: Some(driver.into()), ..self }
    }

    /// With name (interface or block device) `name`.
    pub(crate) fn with_name(self, name: &str) -> Self {
        DevicePlan { name: Some(name.into()), ..self }
    }

    /// On node `node` (`None`: not known).
    pub(crate) fn with_node(self, node: Option<u32>) -> Self {
        DevicePlan { node, ..self }
    }

    /// Placed by `strategy`.
    pub(crate) fn with_strategy(self, strategy: StrategyName) -> Self {
        DevicePlan { strategy, ..self }
    }

    /// With these NAPI threads.
    pub(crate) fn with_napi_threads(self, napi_threads: Vec<ThreadPlacement>) -> Self {
        DevicePlan { napi_threads, ..self }
    }
}
