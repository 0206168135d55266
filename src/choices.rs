//! The vocabulary a configuration chooses from and the planner carries out: which strategy
//! places a device ([`StrategyName`]), in which order CPUs are taken from a node
//! ([`SpreadOrder`]) and where queues go beyond it ([`Spill`]).
//!
//! Names only, each with its one spelling: config, policy, strategies, plans and the command
//! line all import them from here, so none of those layers has to reach into another for a word.

use serde::{Deserialize, Serialize};

use crate::devices::napi::{NapiSettings, NapiThreaded};
use crate::devices::DeviceClass;

/// `strategy = ...` in the config, and the strategy a plan names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyName {
    /// Queue i on the i-th CPU in NUMA-hop order from the device's node.
    NumaHop,
    /// Queue i on group i of the kernel's `group_cpus_evenly()`.
    ClusterGroup,
    /// Every IRQ on a fixed CPU list.
    Pin,
    /// Not touched.
    Leave,
}

impl StrategyName {
    /// The config spelling (`numa-hop`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyName::NumaHop => "numa-hop",
            StrategyName::ClusterGroup => "cluster-group",
            StrategyName::Pin => "pin",
            StrategyName::Leave => "leave",
        }
    }

    /// The class default: NICs by NUMA hop, NVMe by kernel groups, others (storage HBAs, whose
    /// drivers spread their reply queues themselves, and everything else) untouched.
    pub(crate) fn default_for(class: DeviceClass) -> StrategyName {
        match class {
            DeviceClass::Nic => StrategyName::NumaHop,
            DeviceClass::Nvme => StrategyName::ClusterGroup,
            DeviceClass::Storage | DeviceClass::Other => StrategyName::Leave,
        }
    }
}

/// Which order to list CPUs in: the one vocabulary of the config's `order` key, the CLI's
/// `--order` and plan reasons (spelled `kernel`, `hops`, `legacy`, `cores-first`). The orders
/// themselves are computed by [`crate::kernel::local_spread`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SpreadOrder {
    /// `cpumask_local_spread(i, node)` for i = 0..online-1 (v6.3+).
    Kernel,
    /// `for_each_numa_hop_mask(node)` concatenated; empty for CPU-less nodes.
    Hops,
    /// pre-6.3 `cpumask_local_spread`: local node's online CPUs, then all others ascending.
    Legacy,
    /// The kernel's hops, but within each hop one thread of every physical core first.
    CoresFirst,
}

impl SpreadOrder {
    /// The name the command line and plan reasons use (`kernel`, `hops`, `legacy`, `cores-first`).
    pub fn as_str(self) -> &'static str {
        match self {
            SpreadOrder::Kernel => "kernel",
            SpreadOrder::Hops => "hops",
            SpreadOrder::Legacy => "legacy",
            SpreadOrder::CoresFirst => "cores-first",
        }
    }
}

/// Whether a device's queues are refined by measured load (`balance = ...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// The deterministic plan, exactly.
    #[default]
    Off,
    /// The plan, with a queue moved off a CPU measured hot onto a cool CPU no farther from the
    /// device (see `plan::refine`).
    Load,
}

impl Balance {
    /// The config spelling (`off`, `load`).
    pub fn as_str(self) -> &'static str {
        match self {
            Balance::Off => "off",
            Balance::Load => "load",
        }
    }
}

/// What irqwise does with the NAPI threads of a NIC running threaded NAPI (`napi_threads = ...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum NapiThreads {
    /// Each thread gets the CPUs of the IRQ of its NAPI instance: the queue's work runs where
    /// its interrupt fires.
    #[default]
    Follow,
    /// Threads are left where the scheduler and their owners put them.
    Leave,
}

impl NapiThreads {
    /// The config spelling (`follow`, `leave`).
    pub fn as_str(self) -> &'static str {
        match self {
            NapiThreads::Follow => "follow",
            NapiThreads::Leave => "leave",
        }
    }
}

/// Where queues go once a device has used its node's CPUs (`spill = ...`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Spill {
    /// Queue i takes the hop of the i-th CPU of the device's order, as the kernel's
    /// `cpumask_local_spread()` would: beyond the node's CPUs, the next hop.
    #[default]
    Kernel,
    /// Every queue stays on the device's first hop (its node), balanced by count.
    Local,
}

impl Spill {
    /// The config spelling (`kernel`, `local`).
    pub fn as_str(self) -> &'static str {
        match self {
            Spill::Kernel => "kernel",
            Spill::Local => "local",
        }
    }
}

/// A NAPI instance's threaded mode as a `[napi]` table asks for it (`threaded = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NapiMode {
    /// Polled in softirq context (the kernel's default).
    Off,
    /// Polled by the instance's own kernel thread (6.17).
    On,
    /// Its thread also busy-polls (6.19).
    BusyPoll,
}

impl NapiMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NapiMode::Off => "off",
            NapiMode::On => "on",
            NapiMode::BusyPoll => "busy-poll",
        }
    }

    /// The config's word for a kernel threaded mode (`None` for a value irqwise does not know).
    pub fn of(t: NapiThreaded) -> Option<NapiMode> {
        match t {
            NapiThreaded::Disabled => Some(NapiMode::Off),
            NapiThreaded::Enabled => Some(NapiMode::On),
            NapiThreaded::BusyPoll => Some(NapiMode::BusyPoll),
            NapiThreaded::Other(_) => None,
        }
    }

    /// The value the kernel's `napi-set` takes for it.
    pub fn kernel(self) -> NapiThreaded {
        match self {
            NapiMode::Off => NapiThreaded::Disabled,
            NapiMode::On => NapiThreaded::Enabled,
            NapiMode::BusyPoll => NapiThreaded::BusyPoll,
        }
    }
}

/// What a `[napi]` table writes to each NAPI instance it covers: every key `None` is left as
/// the kernel has it (nothing is set unless configured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NapiProfile {
    /// `defer_hard_irqs`, `gro_flush_timeout` and `irq_suspend_timeout` (nanoseconds).
    #[serde(flatten)]
    pub settings: NapiSettings,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threaded: Option<NapiMode>,
}

impl NapiProfile {
    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty() && self.threaded.is_none()
    }

    /// The keys `self` sets, with the values an instance has (`settings`, `threaded`): what a
    /// write of `self` changes, as it was (or as it reads back).
    pub fn keys_of(&self, settings: &NapiSettings, threaded: Option<NapiThreaded>) -> NapiProfile {
        let w = &self.settings;
        NapiProfile {
            settings: NapiSettings {
                defer_hard_irqs: w.defer_hard_irqs.and(settings.defer_hard_irqs),
                gro_flush_timeout: w.gro_flush_timeout.and(settings.gro_flush_timeout),
                irq_suspend_timeout: w.irq_suspend_timeout.and(settings.irq_suspend_timeout),
            },
            threaded: self.threaded.and(threaded.and_then(NapiMode::of)),
        }
    }

    /// `self` with every key `later` sets replaced by `later`'s.
    pub fn overlay(&self, later: &NapiProfile) -> NapiProfile {
        let s = &later.settings;
        NapiProfile {
            settings: NapiSettings {
                defer_hard_irqs: s.defer_hard_irqs.or(self.settings.defer_hard_irqs),
                gro_flush_timeout: s.gro_flush_timeout.or(self.settings.gro_flush_timeout),
                irq_suspend_timeout: s.irq_suspend_timeout.or(self.settings.irq_suspend_timeout),
            },
            threaded: later.threaded.or(self.threaded),
        }
    }
}
