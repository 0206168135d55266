//! What the running kernel does, as facts, each with where it was learnt: the kernel's own type
//! information (`btf`), its driver modules' imported symbols (`module`), what the machine's
//! masks show (`observed`), or, as the last resort, its version number (`version`). A fact no
//! source can tell is `unknown`; a probe that fails says `unknown`, never a guess.
//!
//! Pure: the readers (`crate::probe::discover`) fill a [`KernelFacts`] once per read; planning
//! asks it. Each [`Feature`] names the BTF sign that shows it and the version rule that stands in
//! where BTF cannot tell ([`FEATURES`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::KernelVersion;

/// Where a fact was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FactSource {
    /// The running kernel's BTF (`/sys/kernel/btf/vmlinux`): the types it was built with.
    Btf,
    /// A driver module's imported symbols (its `.ko` below `lib/modules/RELEASE`).
    Module,
    /// What the machine shows (the masks the kernel gave its managed IRQs).
    Observed,
    /// The kernel's version number: the last resort.
    Version,
    /// No source could tell.
    Unknown,
}

impl FactSource {
    /// The word `topology` and plans use.
    pub fn as_str(self) -> &'static str {
        match self {
            FactSource::Btf => "btf",
            FactSource::Module => "module",
            FactSource::Observed => "observed",
            FactSource::Version => "version",
            FactSource::Unknown => "unknown",
        }
    }
}

/// One fact: a value and where it comes from, or unknown. Invariant: `value` is `None` exactly
/// when `source` is [`FactSource::Unknown`]; `evidence` says what was seen (or why nothing was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact<T> {
    value: Option<T>,
    source: FactSource,
    evidence: String,
}

impl<T: Copy> Fact<T> {
    /// A fact learnt from `source` (not [`FactSource::Unknown`]: use [`Fact::unknown`]).
    pub fn known(value: T, source: FactSource, evidence: impl Into<String>) -> Fact<T> {
        let value = (source != FactSource::Unknown).then_some(value);
        Fact { value, source, evidence: evidence.into() }
    }

    /// From the kernel's BTF.
    pub fn btf(value: T, evidence: impl Into<String>) -> Fact<T> {
        Fact::known(value, FactSource::Btf, evidence)
    }

    /// From a driver module's imports.
    pub fn module(value: T, evidence: impl Into<String>) -> Fact<T> {
        Fact::known(value, FactSource::Module, evidence)
    }

    /// From what the machine shows (the hook for the observed grouping rule).
    pub fn observed(value: T, evidence: impl Into<String>) -> Fact<T> {
        Fact::known(value, FactSource::Observed, evidence)
    }

    /// From the kernel's version number.
    pub fn version(value: T, evidence: impl Into<String>) -> Fact<T> {
        Fact::known(value, FactSource::Version, evidence)
    }

    /// Unknown, and why.
    pub fn unknown(why: impl Into<String>) -> Fact<T> {
        Fact { value: None, source: FactSource::Unknown, evidence: why.into() }
    }

    /// The value; `None` when unknown.
    pub fn value(&self) -> Option<T> {
        self.value
    }

    /// Where the value comes from.
    pub fn source(&self) -> FactSource {
        self.source
    }

    /// What was seen, or why nothing could be.
    pub fn evidence(&self) -> &str {
        &self.evidence
    }

    /// This fact, or `other()` when this one is unknown. Its evidence is kept after `other`'s:
    /// why the better source could not tell.
    pub fn or_else(self, other: impl FnOnce() -> Fact<T>) -> Fact<T> {
        if self.value.is_some() {
            return self;
        }
        let mut next = other();
        if !self.evidence.is_empty() {
            next.evidence = format!("{} ({})", next.evidence, self.evidence);
        }
        next
    }
}

/// A kernel behaviour irqwise needs to know. JSON names it by its row's `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// `group_cpus_evenly()` groups CPUs by cluster within a node (89802ca36c96, 7.0).
    ClusterGrouping,
    /// `isolcpus=io_queue` exists (`HK_TYPE_IO_QUEUE`): without it the kernel skips the flag and
    /// the CPUs get domain isolation only.
    IoQueueIsolation,
    /// NAPI instances keep their ids and settings across resets (`struct napi_config`, 6.13).
    NapiConfig,
    /// The net core keeps a NIC IRQ's mask for the drivers that ask (`napi_config`'s
    /// `affinity_mask`, bd7c00605ee0, 6.15).
    CoreKeptAffinity,
    /// `threaded` per NAPI instance through `napi-set` (`NETDEV_A_NAPI_THREADED`, 6.17).
    NapiThreaded,
    /// Threaded busy polling (`NETDEV_NAPI_THREADED_BUSY_POLL`, c18d4b190a46, 6.19).
    NapiBusyPoll,
    /// RX queues leased to a container's netkit device (`NETDEV_A_QUEUE_LEASE`, 7.0).
    QueueLease,
    /// Housekeeping masks change at run time; `HK_TYPE_DOMAIN` includes isolated cpuset
    /// partitions (`HK_TYPE_DOMAIN_BOOT`, d16738a4e79e, 7.0).
    RuntimeHousekeeping,
    /// A read of `smp_affinity` takes the descriptor's lock: before it, a read right after a
    /// write may return the old mask (9ea2b810d51a, 6.19).
    AffinityReadLocked,
    /// An offline that breaks an IRQ's mask notifies the driver, which may write (dd9f6d30c640, 7.0).
    HotplugNotifiesDriver,
    /// Where `isolcpus=domain` and `nohz_full` would leave no present CPU for housekeeping, the
    /// kernel ignores the later of the two on the command line (185bccc79797, 6.19; before it
    /// both apply).
    NohzFullYieldsToDomain,
}

impl Serialize for Feature {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(row(*self).name)
    }
}

/// What in BTF shows a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BtfSign {
    /// Enumerator `name` in the enum that holds `anchor` (an enumerator every kernel with that
    /// enum has): the anchor's enum without `name` says no; no anchor says nothing.
    Enumerator { name: &'static str, anchor: &'static str },
    /// Member `member` of `struct name` (or of an anonymous struct or union within it): the
    /// struct without it says no; no such struct says nothing.
    Member { strukt: &'static str, member: &'static str },
    /// `struct name` exists; when `anchor` exists but it does not, no.
    Struct { name: &'static str, anchor: &'static str },
    /// A function of these names has BTF: yes. None does: nothing (a static function may be
    /// inlined away).
    Func { any_of: &'static [&'static str] },
    /// BTF cannot show it.
    Nothing,
}

/// What the version number says of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionRule {
    /// From this release on.
    Since(KernelVersion),
    /// In no release up to this one (a series not merged by then); later ones unknown.
    NotThrough(KernelVersion),
}

/// One feature: its name and how each source tells it.
#[derive(Debug, Clone, Copy)]
pub struct FeatureRow {
    pub feature: Feature,
    /// Its name in `topology` and JSON.
    pub name: &'static str,
    /// What it is, for humans.
    pub what: &'static str,
    pub btf: BtfSign,
    pub version: VersionRule,
}

const fn v(major: u32, minor: u32) -> KernelVersion {
    KernelVersion { major, minor }
}

/// Every feature, in the order `topology` lists them.
pub const FEATURES: &[FeatureRow] = &[
    FeatureRow {
        feature: Feature::ClusterGrouping,
        name: "cluster-grouping",
        what: "group_cpus_evenly() groups by cluster (89802ca36c96)",
        btf: BtfSign::Func { any_of: &["__try_group_cluster_cpus", "alloc_cluster_groups"] },
        version: VersionRule::Since(v(7, 0)),
    },
    FeatureRow {
        feature: Feature::IoQueueIsolation,
        name: "isolcpus-io-queue",
        what: "isolcpus=io_queue exists (HK_TYPE_IO_QUEUE)",
        btf: BtfSign::Enumerator { name: "HK_TYPE_IO_QUEUE", anchor: "HK_TYPE_MANAGED_IRQ" },
        version: VersionRule::NotThrough(v(7, 3)),
    },
    FeatureRow {
        feature: Feature::NapiConfig,
        name: "napi-config",
        what: "NAPI ids and settings persist across resets (struct napi_config, 86e25f40aa1e)",
        btf: BtfSign::Struct { name: "napi_config", anchor: "napi_struct" },
        version: VersionRule::Since(v(6, 13)),
    },
    FeatureRow {
        feature: Feature::CoreKeptAffinity,
        name: "core-kept-affinity",
        what: "the net core keeps NIC IRQ masks for drivers that ask (napi_config.affinity_mask, bd7c00605ee0)",
        btf: BtfSign::Member { strukt: "napi_config", member: "affinity_mask" },
        version: VersionRule::Since(v(6, 15)),
    },
    FeatureRow {
        feature: Feature::NapiThreaded,
        name: "napi-threaded",
        what: "threaded per NAPI instance (NETDEV_A_NAPI_THREADED, 2677010e7793)",
        btf: BtfSign::Enumerator { name: "NETDEV_A_NAPI_THREADED", anchor: "NETDEV_A_NAPI_ID" },
        version: VersionRule::Since(v(6, 17)),
    },
    FeatureRow {
        feature: Feature::NapiBusyPoll,
        name: "napi-busy-poll",
        what: "threaded busy polling (NETDEV_NAPI_THREADED_BUSY_POLL, c18d4b190a46)",
        btf: BtfSign::Enumerator { name: "NETDEV_NAPI_THREADED_BUSY_POLL", anchor: "NETDEV_NAPI_THREADED_ENABLED" },
        version: VersionRule::Since(v(6, 19)),
    },
    FeatureRow {
        feature: Feature::QueueLease,
        name: "queue-lease",
        what: "RX queues leased to a container (NETDEV_A_QUEUE_LEASE, a5546e18f77c)",
        btf: BtfSign::Enumerator { name: "NETDEV_A_QUEUE_LEASE", anchor: "NETDEV_A_QUEUE_ID" },
        version: VersionRule::Since(v(7, 0)),
    },
    FeatureRow {
        feature: Feature::RuntimeHousekeeping,
        name: "runtime-housekeeping",
        what: "housekeeping masks change at run time (HK_TYPE_DOMAIN_BOOT, d16738a4e79e)",
        btf: BtfSign::Enumerator { name: "HK_TYPE_DOMAIN_BOOT", anchor: "HK_TYPE_MANAGED_IRQ" },
        version: VersionRule::Since(v(7, 0)),
    },
    FeatureRow {
        feature: Feature::AffinityReadLocked,
        name: "affinity-read-locked",
        what: "a read of smp_affinity right after a write returns the new mask (9ea2b810d51a)",
        btf: BtfSign::Nothing,
        version: VersionRule::Since(v(6, 19)),
    },
    FeatureRow {
        feature: Feature::HotplugNotifiesDriver,
        name: "hotplug-notifies-driver",
        what: "an offline that breaks an IRQ's mask notifies its driver (dd9f6d30c640)",
        btf: BtfSign::Nothing,
        version: VersionRule::Since(v(7, 0)),
    },
    FeatureRow {
        feature: Feature::NohzFullYieldsToDomain,
        name: "nohz-full-yields-to-domain",
        what: "the later of isolcpus=domain and nohz_full is ignored where both would cover every present CPU (185bccc79797)",
        btf: BtfSign::Nothing,
        version: VersionRule::Since(v(6, 19)),
    },
];

/// The row of `feature`.
pub fn row(feature: Feature) -> &'static FeatureRow {
    // Every feature has a row (the test below): the first row is never reached as a fallback.
    FEATURES.iter().find(|r| r.feature == feature).unwrap_or(&FEATURES[0])
}

/// What the version number `kernel` says of `row`: known, or unknown with why.
pub fn by_version(row: &FeatureRow, kernel: Option<KernelVersion>) -> Fact<bool> {
    let Some(k) = kernel else {
        return Fact::unknown("no kernel version to go by");
    };
    match row.version {
        VersionRule::Since(since) => Fact::version(k >= since, format!("kernel {k} {} {since}", cmp(k >= since))),
        VersionRule::NotThrough(last) if k <= last => {
            Fact::version(false, format!("in no kernel up to {last}; this is {k}"))
        }
        VersionRule::NotThrough(last) => Fact::unknown(format!("kernel {k} is newer than {last}, the last known")),
    }
}

fn cmp(at_least: bool) -> &'static str {
    if at_least {
        ">="
    } else {
        "<"
    }
}

/// A symbol a NIC driver's module may import, each saying what the driver does to its IRQs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Import {
    /// `netif_set_affinity_auto`: the net core keeps the driver's masks.
    AffinityAuto,
    /// `__irq_apply_affinity_hint`: the driver sets affinity hints (`irq_set_affinity_hint` also
    /// writes the hint as the mask; `irq_update_affinity_hint` does not: the import is the same).
    AffinityHint,
    /// `netif_set_xps_queue` or `__netif_set_xps_queue` (virtio_net): the driver writes its own
    /// XPS maps.
    XpsQueue,
    /// `irq_set_affinity_notifier`: the driver is told when a mask changes (and may act, e.g.
    /// restart a queue; from 7.0 also when an offline breaks the mask).
    AffinityNotifier,
}

/// Every import irqwise looks for, in the order `topology` lists them.
pub const IMPORTS: [Import; 4] =
    [Import::AffinityAuto, Import::AffinityHint, Import::XpsQueue, Import::AffinityNotifier];

impl Import {
    /// The symbol the module imports (the first of [`Import::symbols`]).
    pub fn symbol(self) -> &'static str {
        self.symbols()[0]
    }

    /// The symbols any of which the module imports.
    pub fn symbols(self) -> &'static [&'static str] {
        match self {
            Import::AffinityAuto => &["netif_set_affinity_auto"],
            Import::AffinityHint => &["__irq_apply_affinity_hint"],
            Import::XpsQueue => &["netif_set_xps_queue", "__netif_set_xps_queue"],
            Import::AffinityNotifier => &["irq_set_affinity_notifier"],
        }
    }
}

/// What was found of one module of a driver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ModuleState {
    /// Read: the file (relative to the root) and the imports looked for that it has.
    Read { path: String, imports: Vec<Import> },
    /// Built into the kernel (`modules.builtin`): no file, its imports unknown.
    Builtin,
    /// Neither a file nor built in, or no module directory to look in.
    Missing { why: String },
    /// A file that could not be read or parsed.
    Unreadable { path: String, error: String },
}

/// One module of a driver and what was found of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleFacts {
    /// The module's name (`ice`, `virtio_net`).
    pub name: String,
    #[serde(flatten)]
    pub state: ModuleState,
}

/// What a NIC driver's modules import. A driver may be several modules (`mlx4_core` and
/// `mlx4_en`): an import is seen when any read module has it, absent only when every module was
/// read and none has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverFacts {
    pub modules: Vec<ModuleFacts>,
}

impl DriverFacts {
    /// Whether the driver imports `import`, from its modules: `module` when told, else unknown.
    pub fn imports(&self, import: Import) -> Fact<bool> {
        let symbol = import.symbols().join(" or ");
        let mut unread = Vec::new();
        for m in &self.modules {
            match &m.state {
                ModuleState::Read { path, imports } if imports.contains(&import) => {
                    return Fact::module(true, format!("{path} imports {symbol}"));
                }
                ModuleState::Read { .. } => {}
                ModuleState::Builtin => unread.push(format!("{} is built into the kernel", m.name)),
                ModuleState::Missing { why } => unread.push(format!("{}: {why}", m.name)),
                ModuleState::Unreadable { path, .. } => unread.push(format!("{path} unreadable")),
            }
        }
        if self.modules.is_empty() {
            return Fact::unknown("no module of this driver known");
        }
        if unread.is_empty() {
            let names: Vec<&str> = self.modules.iter().map(|m| m.name.as_str()).collect();
            return Fact::module(false, format!("{} imports no {symbol}", names.join(", ")));
        }
        Fact::unknown(unread.join("; "))
    }
}

/// How the kernel's BTF was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum BtfState {
    /// Read and walked: `types` types.
    Read {
        path: String,
        types: u32,
    },
    Absent {
        path: String,
    },
    /// Present but unreadable or not valid BTF (one message naming the file and what was wrong).
    Unreadable {
        path: String,
        error: String,
    },
    /// Not looked for (a sample built in memory).
    NotProbed,
}

/// Everything irqwise knows of the running kernel's behaviour, each fact with its source (as
/// JSON: `crate::probe::view::facts_json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFacts {
    /// The kernel version the version rules went by.
    pub version: Option<String>,
    pub btf: BtfState,
    /// Where the modules were looked for (relative to the root), or why nowhere.
    pub modules_dir: Result<String, String>,
    features: BTreeMap<Feature, Fact<bool>>,
    /// NIC drivers (as the PCI device names its driver) and their modules.
    pub drivers: BTreeMap<String, DriverFacts>,
}

impl KernelFacts {
    /// Facts from `btf` (each feature's answer from BTF, unknown where it could not tell),
    /// else from `version`; `drivers` as probed.
    pub fn decide(
        version: Option<KernelVersion>,
        btf_state: BtfState,
        btf: impl Fn(&FeatureRow) -> Fact<bool>,
        modules_dir: Result<String, String>,
        drivers: BTreeMap<String, DriverFacts>,
    ) -> KernelFacts {
        let features = FEATURES.iter().map(|r| (r.feature, btf(r).or_else(|| by_version(r, version)))).collect();
        KernelFacts { version: version.map(|v| v.to_string()), btf: btf_state, modules_dir, features, drivers }
    }

    /// Facts from `version` alone: a sample built in memory, where nothing was probed.
    pub fn from_version(version: Option<KernelVersion>) -> KernelFacts {
        KernelFacts::decide(
            version,
            BtfState::NotProbed,
            |_| Fact::unknown("BTF not probed"),
            Err("modules not probed".into()),
            BTreeMap::new(),
        )
    }

    /// The fact of `feature`.
    pub fn feature(&self, feature: Feature) -> &Fact<bool> {
        // decide() fills every feature; the map is never without one.
        self.features.get(&feature).unwrap_or(&UNKNOWN)
    }

    /// Replaces the fact of `feature` (e.g. the grouping rule the managed masks show).
    pub fn set_feature(&mut self, feature: Feature, fact: Fact<bool>) {
        self.features.insert(feature, fact);
    }

    /// Every feature with its row and fact, in [`FEATURES`] order.
    pub fn features(&self) -> impl Iterator<Item = (&'static FeatureRow, &Fact<bool>)> {
        FEATURES.iter().map(|r| (r, self.feature(r.feature)))
    }

    /// What `driver`'s modules import, if it was probed.
    pub fn driver(&self, driver: &str) -> Option<&DriverFacts> {
        self.drivers.get(driver)
    }
}

/// The fact of a feature missing from the map (never, by construction).
static UNKNOWN: Fact<bool> = Fact { value: None, source: FactSource::Unknown, evidence: String::new() };

#[cfg(test)]
mod tests {
    use super::*;

    fn k(major: u32, minor: u32) -> Option<KernelVersion> {
        Some(KernelVersion { major, minor })
    }

    #[test]
    fn every_feature_has_one_row_and_a_distinct_name() {
        for r in FEATURES {
            assert_eq!(row(r.feature).name, r.name);
            assert_eq!(FEATURES.iter().filter(|o| o.name == r.name || o.feature == r.feature).count(), 1, "{}", r.name);
            assert_eq!(serde_json::to_value(r.feature).unwrap(), serde_json::Value::from(r.name));
        }
    }

    #[test]
    fn btf_decides_and_the_version_stands_in_only_where_it_cannot() {
        let facts = KernelFacts::decide(
            k(6, 1),
            BtfState::Read { path: "sys/kernel/btf/vmlinux".into(), types: 3 },
            |r| match r.feature {
                Feature::ClusterGrouping => Fact::btf(true, "FUNC __try_group_cluster_cpus"),
                _ => Fact::unknown("no sign"),
            },
            Err("none".into()),
            BTreeMap::new(),
        );
        // A backport: BTF says cluster grouping although the version is 6.1.
        let c = facts.feature(Feature::ClusterGrouping);
        assert_eq!((c.value(), c.source()), (Some(true), FactSource::Btf));
        let t = facts.feature(Feature::NapiThreaded);
        assert_eq!((t.value(), t.source()), (Some(false), FactSource::Version));
        assert!(t.evidence().contains("6.1 < 6.17") && t.evidence().contains("no sign"), "{}", t.evidence());
        let io = facts.feature(Feature::IoQueueIsolation);
        assert_eq!((io.value(), io.source()), (Some(false), FactSource::Version));
        let newer = KernelFacts::from_version(k(7, 4));
        assert_eq!(newer.feature(Feature::IoQueueIsolation).source(), FactSource::Unknown);
        assert_eq!(newer.feature(Feature::ClusterGrouping).value(), Some(true));
        let none = KernelFacts::from_version(None);
        assert!(none.features().all(|(_, f)| f.source() == FactSource::Unknown && f.value().is_none()));
    }

    #[test]
    fn the_observed_hook_replaces_a_fact() {
        let mut facts = KernelFacts::from_version(k(6, 12));
        facts.set_feature(Feature::ClusterGrouping, Fact::observed(true, "every managed mask of nvme0"));
        let c = facts.feature(Feature::ClusterGrouping);
        assert_eq!((c.value(), c.source()), (Some(true), FactSource::Observed));
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["source"], "observed");
    }

    #[test]
    fn a_drivers_import_is_absent_only_when_every_module_was_read() {
        let read = |name: &str, imports: Vec<Import>| ModuleFacts {
            name: name.into(),
            state: ModuleState::Read { path: format!("{name}.ko"), imports },
        };
        let mlx4 = DriverFacts {
            modules: vec![read("mlx4_core", vec![Import::AffinityHint]), read("mlx4_en", vec![Import::XpsQueue])],
        };
        assert_eq!(mlx4.imports(Import::XpsQueue).value(), Some(true));
        assert_eq!(mlx4.imports(Import::AffinityHint).value(), Some(true));
        let auto = mlx4.imports(Import::AffinityAuto);
        assert_eq!((auto.value(), auto.source()), (Some(false), FactSource::Module));
        let half = DriverFacts {
            modules: vec![
                read("mlx4_core", vec![]),
                ModuleFacts { name: "mlx4_en".into(), state: ModuleState::Builtin },
            ],
        };
        assert_eq!(half.imports(Import::XpsQueue).source(), FactSource::Unknown);
        assert!(half.imports(Import::XpsQueue).evidence().contains("built into"));
        assert_eq!(DriverFacts { modules: vec![] }.imports(Import::XpsQueue).value(), None);
    }
}
