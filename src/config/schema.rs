//! The file format as serde sees it: every key optional, unknown keys rejected, values kept with
//! their byte spans so validation can point at them. Nothing here is checked beyond TOML types.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::LogFormat;
use crate::devices::DeviceClass;
use crate::kernel::SpreadOrder;
use crate::strategy::StrategyName;

/// One config file (main file or drop-in).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub global: Option<RawGlobal>,
    #[serde(default)]
    pub device: Vec<Spanned<RawRule>>,
}

/// `[global]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGlobal {
    pub banned_cpus: Option<Spanned<String>>,
    pub respect_isolation: Option<bool>,
    pub reconcile_interval: Option<Spanned<String>>,
    pub debounce: Option<Spanned<String>>,
    pub restore_on_exit: Option<bool>,
    pub log_format: Option<LogFormat>,
    pub metrics_file: Option<Spanned<String>>,
}

/// One `[[device]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    #[serde(rename = "match")]
    pub matcher: Option<Spanned<RawMatch>>,
    pub strategy: Option<Spanned<StrategyName>>,
    pub cpus: Option<Spanned<String>>,
    pub exclude_cpus: Option<Spanned<String>>,
    pub admin_cpus: Option<Spanned<String>>,
    pub node: Option<u32>,
    pub order: Option<SpreadOrder>,
    pub queues_per_cpu: Option<Spanned<u32>>,
    pub queue_pattern: Option<Spanned<String>>,
}

/// `[device.match]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMatch {
    pub pci: Option<Spanned<String>>,
    pub driver: Option<Spanned<String>>,
    pub interface: Option<Spanned<String>>,
    pub class: Option<DeviceClass>,
    pub nvme_model: Option<Spanned<String>>,
    pub nvme_serial: Option<Spanned<String>>,
    pub property: Option<BTreeMap<String, Spanned<String>>>,
}
