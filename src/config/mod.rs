//! Configuration: `/etc/irqwise/irqwise.toml` plus systemd-style drop-ins, validated with
//! `file:line:column` errors.
//!
//! Lookup (see [`ConfigPaths`]): the main file (optional; absent means defaults), then every
//! `*.toml` drop-in from `/usr/lib/irqwise/conf.d`, `/run/irqwise/conf.d` and
//! `/etc/irqwise/conf.d`. A drop-in masks one of the same file name in a lower directory (`/etc`
//! over `/run` over `/usr/lib`); the survivors apply in lexical order of file name. `[global]`
//! keys: the last file that sets a key wins. `[[device]]` rules: the main file's first, then each
//! drop-in's, in that order; [`crate::policy::resolve`] applies the matching ones key by key, later
//! over earlier.
//!
//! Reading files is the only I/O here (`load.rs`: [`load()`], [`check`], [`load_config`]); parsing,
//! validation and merging of text are pure ([`parse_files`]).

mod duration;
mod error;
mod file_ctx;
mod glob;
mod key_spec;
mod key_types;
mod keys;
mod load;
mod merge;
mod schema;
mod validate;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::choices::{Balance, NapiProfile, NapiThreads, Spill, SpreadOrder, StrategyName};
use crate::cpuset::CpuSet;
use crate::devices::{DeviceClass, QueuePattern};

pub(crate) use duration::parse_duration;
pub use error::ConfigErrors;
pub use error::Location;
pub use error::{ConfigError, ConfigWarning};
pub use glob::Glob;
pub use glob::GlobError;
pub use key_spec::{DefaultValue, DurationRange, Effect, KeySpec, Kind, PathRule};
pub use keys::{global_schema, known_keys, Global, GLOBAL_KEYS};
pub(crate) use load::machine_shape;
pub use load::LoadError;
pub use load::{check, check_files, is_dropin_name, load, load_config, load_config_with_warnings, ConfigPaths};

pub use merge::CheckReport;
pub use merge::Masked;
pub use merge::{parse_files, SourceFile};

/// The validated, merged configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub global: Global,
    /// Rules in application order: main file first, then drop-ins in lexical order.
    pub rules: Vec<Rule>,
    /// Files that were read, in the order they were applied.
    pub sources: Vec<PathBuf>,
}

/// Where containerd and CRI-O listen for NRI plugins.
pub const DEFAULT_NRI_SOCKET: &str = "/var/run/nri/nri.sock";

/// `metrics_file = ...`: where the daemon writes its metrics for node_exporter's textfile
/// collector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MetricsFile {
    /// Not set: `/var/lib/prometheus/node-exporter/irqwise.prom` when that directory exists,
    /// else nowhere.
    #[default]
    Auto,
    /// `metrics_file = ""`: no metrics.
    Off,
    /// An absolute path ending in `.prom`.
    At(PathBuf),
}

/// How `balance = "load"` measures and moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BalanceKnobs {
    /// How often interrupt rates are sampled: each sample is the rate over this window
    /// (default 10 s, like irqbalance's interval).
    pub interval: Duration,
    /// How long a moved queue stays before it may return home or move again (default 5 min).
    pub hold: Duration,
    /// Moves (and returns) at most per minute, machine-wide (default 4).
    pub moves_per_minute: u32,
}

impl Default for BalanceKnobs {
    /// The knobs of the default `[global]`.
    fn default() -> Self {
        Global::default().balance_knobs()
    }
}

impl Global {
    /// `balance_interval`, `balance_hold` and `balance_moves_per_minute` together.
    pub fn balance_knobs(&self) -> BalanceKnobs {
        BalanceKnobs {
            interval: self.balance_interval,
            hold: self.balance_hold,
            moves_per_minute: self.balance_moves_per_minute,
        }
    }
}

/// One `[[device]]` rule: which devices it applies to and what it sets for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Where the rule's `[[device]]` header is.
    pub source: RuleRef,
    pub matcher: Match,
    pub settings: Settings,
}

/// A rule's match table. Invariant: at least one key is set. A device matches when every set
/// key matches (string keys are [`Glob`]s; a pattern without `*?[` compares exactly).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Match {
    /// PCI address, e.g. `0000:81:*`.
    pub pci: Option<Glob>,
    pub driver: Option<Glob>,
    /// Matches when any of the device's network interfaces matches.
    pub interface: Option<Glob>,
    pub class: Option<DeviceClass>,
    pub nvme_model: Option<Glob>,
    pub nvme_serial: Option<Glob>,
    /// udev properties (`property.ID_PATH = "..."`); each must be present and match.
    pub property: Vec<(String, Glob)>,
}

impl Match {
    pub fn is_empty(&self) -> bool {
        *self == Match::default()
    }
}

/// One `[device.napi]` table: its profile and the queues it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NapiRange {
    /// Queue indexes (`queues = "0-3"`); `None`: every queue of the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<std::collections::BTreeSet<u32>>,
    pub profile: NapiProfile,
}

impl NapiRange {
    /// Whether it covers queue `queue` (an instance serving no known queue is covered only by
    /// a table without `queues`).
    pub fn covers(&self, queue: Option<u32>) -> bool {
        match (&self.queues, queue) {
            (None, _) => true,
            (Some(set), Some(q)) => set.contains(&q),
            (Some(_), None) => false,
        }
    }
}

/// What a rule sets; `None` leaves the key to earlier rules or the class default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Settings {
    pub strategy: Option<StrategyName>,
    /// Allowed CPUs: the strategy works inside this set. Invariant: non-empty after
    /// `exclude_cpus` and the global `banned_cpus`.
    pub cpus: Option<CpuSet>,
    pub exclude_cpus: Option<CpuSet>,
    /// CPUs for the device's non-queue vectors (NVMe admin queue `nvmeXq0`, NIC async/misc
    /// vector); these are ordinary IRQs even where the queue IRQs are kernel-managed.
    pub admin_cpus: Option<CpuSet>,
    /// Treat the device as if it sat on this NUMA node.
    pub node: Option<u32>,
    pub order: Option<SpreadOrder>,
    /// NIC: put this many queues on each CPU (spreads over fewer CPUs). Invariant: >= 1.
    pub queues_per_cpu: Option<u32>,
    /// How to read the queue index (and role) out of the device's IRQ names, tried before the
    /// driver table: for drivers irqwise does not know.
    pub queue_pattern: Option<QueuePattern>,
    /// NIC: align transmit steering with the queue IRQs (over the global `xps`).
    pub xps: Option<bool>,
    /// NUMA-hop: where queues go beyond the device's node (overrides the global `spill`).
    pub spill: Option<Spill>,
    /// NIC: what happens to its NAPI threads (overrides the global `napi_threads`).
    pub napi_threads: Option<NapiThreads>,
    /// Load refinement for the devices matched (overrides the global `balance`).
    pub balance: Option<Balance>,
    /// `[device.napi]` tables, in file order (a later one wins, key by key, on the queues both
    /// cover).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub napi: Vec<NapiRange>,
    /// `false`: the guard leaves this device's IRQs alone even on banned CPUs.
    pub guard: Option<bool>,
    /// `true`: isolated and nohz_full CPUs named in `cpus` are used (without it they are left out,
    /// with a warning).
    pub allow_isolated: Option<bool>,
    /// Settings this machine made void (`cpus` naming none of its CPUs), by key, with the words
    /// plan reasons give for the fallback.
    pub voided: Vec<(&'static str, String)>,
}

impl Settings {
    /// Whether the rule sets nothing at all (a setting this machine made void still counts as
    /// set: the rule is not a no-op on the machines that have those CPUs).
    pub fn is_empty(&self) -> bool {
        *self == Settings::default()
    }
}

/// What of the machine a configuration is validated against: CPU lists are cut to its possible
/// CPUs and node ids checked against its nodes, with a warning wherever a value names what this
/// machine lacks (one file serves every machine of a fleet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MachineShape {
    pub possible: CpuSet,
    /// Its NUMA node ids; `None` when unknown (no node check then).
    pub nodes: Option<std::collections::BTreeSet<u32>>,
}

impl MachineShape {
    /// A machine known by its possible CPUs only.
    pub fn with_cpus(possible: CpuSet) -> MachineShape {
        MachineShape { possible, nodes: None }
    }
}

/// `file:line` of a rule's `[[device]]` header; what `plan` prints as "decided by".
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleRef {
    pub path: PathBuf,
    pub line: usize,
}

impl fmt::Display for RuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

impl Serialize for RuleRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `guard = ...`: which IRQs irqwise keeps off banned and isolated CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GuardScope {
    /// Every movable IRQ, as irqbalance does with its banned list: the devices irqwise places,
    /// and every other IRQ (their masks lose the banned CPUs).
    #[default]
    All,
    /// Only the devices irqwise places.
    Placed,
}

/// `log_format = ...` and `--log-format`: where the daemon logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LogFormat {
    /// The journal when systemd started the process (it set `INVOCATION_ID` or `JOURNAL_STREAM`),
    /// else text on stderr (run by hand on a systemd host, the log belongs on the terminal); text
    /// too when the journal cannot be opened.
    #[default]
    Auto,
    /// The systemd journal, with structured fields.
    Journal,
    /// Human-readable lines on stderr.
    Text,
    /// One JSON object per line on stderr.
    Json,
}

/// `on_drift = ...`: what the daemon does when an IRQ it placed is found on other CPUs and
/// neither the kernel's CPU-offline fallback nor the driver's reset explains it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OnDrift {
    /// Put the IRQ back where irqwise placed it.
    #[default]
    Restore,
    /// Leave the other owner's mask, report it once, until the device goes away or the
    /// configuration is reloaded.
    Respect,
}
