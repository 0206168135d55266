//! What a NIC driver does to its queue IRQs' masks and NAPI instances when it resets its queues
//! (link down/up, `ethtool -L`, an XDP program attached or removed, a reset after an error) or a
//! CPU comes and goes, on a given kernel. A placement daemon's work depends on it: where the
//! kernel keeps a mask, a reset is no reason to write; where the driver writes its own spread,
//! irqwise places the queues again.
//!
//! Pure: a driver name, what its modules import and a kernel version in, a rule with its source
//! out. The imports decide where a module could be read ([`reset_rule_of`]: a driver importing
//! `netif_set_affinity_auto` has the core keep its masks, whatever the version number says); the
//! table by version stands in only where none could. Every rule names the kernel change or the
//! observation it rests on; tests/vm proves those on the kernels it boots.

use serde::Serialize;

use super::facts::{DriverFacts, FactSource, Import};
use super::KernelVersion;

/// Who keeps a queue IRQ's mask across the driver's resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum MaskKeeper {
    /// The net core stores the mask written to `/proc/irq` in the NAPI instance's config and
    /// applies it again whenever the driver sets the instance's IRQ (`netif_set_affinity_auto()`,
    /// bd7c00605ee0, 6.15).
    #[serde(rename = "core-keeps")]
    Core,
    /// The driver sets only the affinity hint (`irq_update_affinity_hint()`) and leaves the mask
    /// alone when it reopens: the mask lasts as long as the IRQ's vector.
    #[serde(rename = "hint-only")]
    HintOnly,
    /// The driver keeps its vectors across link down/up and XDP changes and has no channel
    /// change: the IRQ core keeps the mask (seen on the kernels tests/vm boots).
    #[serde(rename = "vectors-kept")]
    Vectors,
    /// The driver writes its own spread as the mask (`irq_set_affinity_hint()`): irqwise places
    /// the queues again after it does.
    #[serde(rename = "driver-spreads")]
    DriverSpread,
    /// Nothing is known of this driver: a reset that reallocates its vectors loses the mask,
    /// and irqwise places it again.
    #[serde(rename = "unknown")]
    Unknown,
}

impl MaskKeeper {
    /// The word plans use (`core-keeps`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MaskKeeper::Core => "core-keeps",
            MaskKeeper::HintOnly => "hint-only",
            MaskKeeper::Vectors => "vectors-kept",
            MaskKeeper::DriverSpread => "driver-spreads",
            MaskKeeper::Unknown => "unknown",
        }
    }

    /// Whether a reset leaves the mask irqwise wrote in place (a write after one is needless).
    pub fn keeps_mask(self) -> bool {
        matches!(self, MaskKeeper::Core | MaskKeeper::HintOnly | MaskKeeper::Vectors)
    }
}

/// What a driver does on a kernel, and why irqwise believes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResetRule {
    /// Who keeps the mask.
    pub mask: MaskKeeper,
    /// Whether its NAPI instances keep their ids (and per-instance settings) across a reset:
    /// persistent NAPI config (`netif_napi_add_config()`, 86e25f40aa1e, 6.13); `None`: unknown.
    pub napi_ids_kept: Option<bool>,
    /// The change or observation the rule rests on, for the plan's reader.
    pub why: &'static str,
    /// Where `mask` was learnt: `module` (the driver's imports decided it, whatever the version
    /// number), `version` (the table by the kernel's version: no module could tell), `unknown`.
    pub source: FactSource,
    /// Whether the driver writes its own XPS maps (`netif_set_xps_queue`, `__netif_set_xps_queue`)
    /// when it sets up its queues: its `xps_cpus` are read again after a reset. `None`: unknown.
    pub xps_rewritten: Option<bool>,
    /// Where `xps_rewritten` was learnt.
    pub xps_source: FactSource,
    /// Whether the driver may write when a CPU hotplug breaks one of its IRQs' masks: the kernel
    /// notifies it (from 7.0, dd9f6d30c640) and it registers an affinity notifier
    /// (`irq_set_affinity_notifier`; bnxt_en restarts a queue). `None`: unknown.
    pub hotplug_writes: Option<bool>,
}

/// One row of the table: from kernel `since` on (and for every kernel when `None`), `driver`
/// behaves as `rule` says, until a later row of the same driver takes over. `rests_on`: the
/// import the behaviour needs; a module read without it rules the row out.
struct Row {
    driver: &'static str,
    since: Option<KernelVersion>,
    mask: MaskKeeper,
    napi_ids_kept: Option<bool>,
    why: &'static str,
    rests_on: Option<Import>,
}

const fn v(major: u32, minor: u32) -> Option<KernelVersion> {
    Some(KernelVersion { major, minor })
}

/// The rules, each driver's rows in ascending kernel order.
const ROWS: &[Row] = &[
    Row {
        driver: "ena",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "ena writes its affinity hint as the mask whenever it opens (irq_set_affinity_hint; \
              its 6.15 conversion de340d8206bf moved only the aRFS rmap to the core)",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "ena",
        since: v(6, 16),
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: Some(true),
        why: "ena writes its affinity hint as the mask whenever it opens (irq_set_affinity_hint); \
              persistent NAPI config from 6.16 (0f681b0ecd19)",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "gve",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "gve writes its affinity hint as the mask on every IRQ request (irq_set_affinity_hint \
              in gve_alloc_notify_blocks)",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "mana",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "mana sets its mask and hint on every IRQ request (irq_set_affinity_and_hint)",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "ice",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.13 (492a044508ad)",
        rests_on: None,
    },
    Row {
        driver: "ice",
        since: v(6, 15),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.15 (bd7c00605ee0, 4063af296762: netif_set_affinity_auto)",
        rests_on: Some(Import::AffinityAuto),
    },
    Row {
        driver: "idpf",
        since: v(6, 15),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.15 (bd7c00605ee0, deab38f8f011: netif_set_affinity_auto)",
        rests_on: Some(Import::AffinityAuto),
    },
    Row {
        driver: "iavf",
        since: v(6, 17),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.17 (b0ca7dc0e70e: netif_set_affinity_auto)",
        rests_on: Some(Import::AffinityAuto),
    },
    Row {
        driver: "bnxt_en",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "before 6.13 bnxt_en wrote its affinity hint as the mask whenever it opened",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "bnxt_en",
        since: v(6, 13),
        mask: MaskKeeper::HintOnly,
        napi_ids_kept: Some(true),
        why: "from 6.13 bnxt_en sets only the hint (fcf42409c6e1) and keeps NAPI config \
              (41936522749); with TPH (6.15) every mask write restarts an RX queue",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "nfp",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "before 6.13 nfp wrote its affinity hint as the mask whenever it opened",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "nfp",
        since: v(6, 13),
        mask: MaskKeeper::HintOnly,
        napi_ids_kept: Some(false),
        why: "from 6.13 nfp sets only the hint (d9e2e290f714)",
        rests_on: Some(Import::AffinityHint),
    },
    Row {
        driver: "mlx5_core",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.13 (2a3372cafe02)",
        rests_on: None,
    },
    Row {
        driver: "mlx4_en",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config for receive queues from 6.13 (c9191eaa7285)",
        rests_on: None,
    },
    Row {
        driver: "igb",
        since: v(6, 16),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.16 (fc0fb1f116e9)",
        rests_on: None,
    },
    Row {
        driver: "virtio_net",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "virtio_net writes its own spread as the masks at probe, on `ethtool -L` and on CPU \
              hotplug (virtnet_set_affinity); link down/up and XDP keep them",
        rests_on: None,
    },
    Row {
        driver: "virtio_net",
        since: v(6, 15),
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: Some(true),
        why: "virtio_net writes its own spread as the masks at probe, on `ethtool -L` and on CPU \
              hotplug (virtnet_set_affinity); link down/up and XDP keep them; persistent NAPI \
              config for receive queues from 6.15 (d5d715207e29)",
        rests_on: None,
    },
    Row {
        driver: "vmxnet3",
        since: None,
        mask: MaskKeeper::Vectors,
        napi_ids_kept: Some(false),
        why: "vmxnet3 keeps its vectors across link down/up and XDP and has no `ethtool -L`; its \
              NAPI ids change on every reset",
        rests_on: None,
    },
    Row {
        driver: "e1000e",
        since: None,
        mask: MaskKeeper::Vectors,
        napi_ids_kept: Some(false),
        why: "e1000e keeps its vectors across link down/up and has neither `ethtool -L` nor XDP; \
              its NAPI ids change on every reset",
        rests_on: None,
    },
];

/// The drivers that write their own XPS maps, as Debian's 7.2 modules import
/// `netif_set_xps_queue` (virtio_net `__netif_set_xps_queue`): what stands in where no module
/// can be read. mlx4's Ethernet half is bound as `mlx4_core`.
const XPS_WRITERS: [&str; 9] = ["gve", "mlx4_core", "mlx4_en", "ixgbe", "i40e", "nfp", "bnxt_en", "virtio_net", "ice"];

/// The drivers that register an IRQ affinity notifier, as Debian's 7.2 modules import
/// `irq_set_affinity_notifier`: what stands in where no module can be read.
const NOTIFIED: [&str; 3] = ["bnxt_en", "i40e", "ionic"];

/// Whether `driver` may write on a hotplug that breaks a mask: the kernel notifies drivers
/// (`notifies`: the fact of [`crate::kernel::facts::Feature::HotplugNotifiesDriver`]) and it has
/// a notifier (`imports`: its modules' answer; else the table).
pub fn hotplug_writes(driver: &str, notifies: Option<bool>, imports: Option<bool>) -> Option<bool> {
    let imports = imports.or_else(|| NOTIFIED.contains(&driver).then_some(true));
    match (notifies, imports) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// Why the core keeps the masks of a driver whose module imports `netif_set_affinity_auto`. Its
/// NAPI instances keep their ids: the core stores the mask in their persistent config.
const CORE_BY_IMPORT: &str = "its module imports netif_set_affinity_auto: the net core keeps the mask \
                              written to /proc/irq and applies it again on every IRQ request (bd7c00605ee0)";

/// Why a driver whose module does not import what its version row rests on gets no rule.
const RULED_OUT_BY_IMPORT: &str = "its module imports none of what the version's rule rests on \
                                   (netif_set_affinity_auto, __irq_apply_affinity_hint): a reset may \
                                   lose the mask, and irqwise places it again";

/// The rule of a driver the table does not know.
const NO_RULE: &str = "no rule for this driver: a reset may lose the mask, and irqwise places it again";

/// What `driver` does on `kernel` (`None`: unknown, the rows without a version apply), by the
/// table alone. A driver the table does not know gets [`MaskKeeper::Unknown`].
pub fn reset_rule(driver: &str, kernel: Option<KernelVersion>) -> ResetRule {
    reset_rule_of(driver, None, kernel, None)
}

/// What `driver` does on `kernel`, from what its modules import (`modules`, as probed; `None`:
/// not probed) where they tell, else from the table by version. Guarantees: a module importing
/// `netif_set_affinity_auto` is [`MaskKeeper::Core`] on any kernel; a row whose import a read
/// module lacks never applies; `source` is `module` exactly when an import decided the mask.
/// `notifies`: whether the kernel notifies drivers of a hotplug that breaks a mask.
pub fn reset_rule_of(
    driver: &str,
    modules: Option<&DriverFacts>,
    kernel: Option<KernelVersion>,
    notifies: Option<bool>,
) -> ResetRule {
    let told = |i: Import| modules.and_then(|m| m.imports(i).value());
    let hotplug_writes = hotplug_writes(driver, notifies, told(Import::AffinityNotifier));
    let (xps_rewritten, xps_source) = match told(Import::XpsQueue) {
        Some(v) => (Some(v), FactSource::Module),
        None if XPS_WRITERS.contains(&driver) => (Some(true), FactSource::Version),
        None => (None, FactSource::Unknown),
    };
    let rule = |mask, napi_ids_kept, why, source| ResetRule {
        mask,
        napi_ids_kept,
        why,
        source,
        xps_rewritten,
        xps_source,
        hotplug_writes,
    };
    if told(Import::AffinityAuto) == Some(true) {
        return rule(MaskKeeper::Core, Some(true), CORE_BY_IMPORT, FactSource::Module);
    }
    let rows = || ROWS.iter().filter(|r| r.driver == driver);
    let ruled_out = |r: &Row| r.rests_on.is_some_and(|i| told(i) == Some(false));
    let applies = |r: &&Row| match (r.since, kernel) {
        (None, _) => true,
        (Some(since), Some(k)) => k >= since,
        (Some(_), None) => false,
    };
    let by_version = rows().rev().find(applies);
    let chosen = rows().rev().filter(|r| !ruled_out(r)).find(applies);
    match chosen {
        // The module ruled out what the version alone would have said.
        _ if by_version.is_some_and(ruled_out) => {
            let napi = chosen.and_then(|r| r.napi_ids_kept);
            match chosen.filter(|r| r.mask != MaskKeeper::Unknown) {
                Some(r) => rule(r.mask, napi, r.why, FactSource::Module),
                None => rule(MaskKeeper::Unknown, napi, RULED_OUT_BY_IMPORT, FactSource::Module),
            }
        }
        Some(r) => {
            // The import it rests on is there and every version of the driver does the same.
            let confirmed = r.rests_on.is_some_and(|i| told(i) == Some(true))
                && rows().filter(|o| !ruled_out(o)).all(|o| o.mask == r.mask);
            let source = if confirmed { FactSource::Module } else { FactSource::Version };
            rule(r.mask, r.napi_ids_kept, r.why, source)
        }
        None => rule(MaskKeeper::Unknown, None, NO_RULE, FactSource::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(major: u32, minor: u32) -> Option<KernelVersion> {
        Some(KernelVersion { major, minor })
    }

    #[test]
    fn the_core_keeps_masks_of_the_converted_drivers_from_their_kernel_on() {
        for driver in ["ice", "idpf"] {
            assert_eq!(reset_rule(driver, k(6, 15)).mask, MaskKeeper::Core, "{driver}");
            assert_eq!(reset_rule(driver, k(7, 2)).mask, MaskKeeper::Core, "{driver}");
            assert_ne!(reset_rule(driver, k(6, 14)).mask, MaskKeeper::Core, "{driver}");
        }
        assert_eq!(reset_rule("iavf", k(6, 16)).mask, MaskKeeper::Unknown);
        assert_eq!(reset_rule("iavf", k(6, 17)).mask, MaskKeeper::Core);
        assert!(reset_rule("ice", k(7, 0)).why.contains("bd7c00605ee0"));
        // ena's 6.15 conversion moved only its aRFS rmap: it still writes its hint as the mask.
        assert_eq!(reset_rule("ena", k(7, 2)).mask, MaskKeeper::DriverSpread);
        assert_eq!(reset_rule("ena", k(6, 15)).napi_ids_kept, None);
        assert_eq!(reset_rule("ena", k(6, 16)).napi_ids_kept, Some(true));
    }

    #[test]
    fn bnxt_and_nfp_stopped_overwriting_masks_in_6_13() {
        for driver in ["bnxt_en", "nfp"] {
            assert_eq!(reset_rule(driver, k(6, 12)).mask, MaskKeeper::DriverSpread, "{driver}");
            assert_eq!(reset_rule(driver, k(6, 13)).mask, MaskKeeper::HintOnly, "{driver}");
        }
        assert!(reset_rule("bnxt_en", k(6, 15)).why.contains("TPH"));
        assert_eq!(reset_rule("bnxt_en", k(6, 13)).napi_ids_kept, Some(true));
    }

    #[test]
    fn the_emulated_nics_follow_what_tests_vm_saw() {
        assert_eq!(reset_rule("virtio_net", k(6, 1)).mask, MaskKeeper::DriverSpread);
        assert_eq!(reset_rule("virtio_net", k(7, 2)).mask, MaskKeeper::DriverSpread);
        assert_eq!(reset_rule("virtio_net", k(6, 14)).napi_ids_kept, None);
        assert_eq!(reset_rule("virtio_net", k(6, 15)).napi_ids_kept, Some(true));
        for driver in ["vmxnet3", "e1000e"] {
            let r = reset_rule(driver, k(7, 2));
            assert_eq!((r.mask, r.napi_ids_kept), (MaskKeeper::Vectors, Some(false)), "{driver}");
        }
    }

    #[test]
    fn an_unknown_driver_or_kernel_keeps_nothing_it_cannot_show() {
        let r = reset_rule("r8169", k(7, 2));
        assert_eq!((r.mask, r.napi_ids_kept), (MaskKeeper::Unknown, None));
        assert!(!r.mask.keeps_mask());
        // Without a kernel version only the versionless rows apply.
        assert_eq!(reset_rule("ice", None).mask, MaskKeeper::Unknown);
        assert_eq!(reset_rule("bnxt_en", None).mask, MaskKeeper::DriverSpread);
        assert!(MaskKeeper::Core.keeps_mask() && MaskKeeper::HintOnly.keeps_mask() && MaskKeeper::Vectors.keeps_mask());
        assert!(!MaskKeeper::DriverSpread.keeps_mask());
    }

    #[test]
    fn json_says_the_words_of_the_table() {
        for k in
            [MaskKeeper::Core, MaskKeeper::HintOnly, MaskKeeper::Vectors, MaskKeeper::DriverSpread, MaskKeeper::Unknown]
        {
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::from(k.as_str()));
        }
    }

    /// A driver whose one module was read with `imports`.
    fn read(imports: &[Import]) -> DriverFacts {
        use crate::kernel::facts::{ModuleFacts, ModuleState};
        let state = ModuleState::Read { path: "m.ko".into(), imports: imports.to_vec() };
        DriverFacts { modules: vec![ModuleFacts { name: "m".into(), state }] }
    }

    #[test]
    fn the_imports_decide_where_a_module_was_read_and_the_version_only_where_none_was() {
        let auto = read(&[Import::AffinityAuto, Import::XpsQueue]);
        // A backport: the core keeps ice's masks on a kernel numbered 6.12 (or 5.14).
        for kernel in [k(6, 12), k(5, 14), None] {
            let r = reset_rule_of("ice", Some(&auto), kernel, None);
            assert_eq!((r.mask, r.source, r.napi_ids_kept), (MaskKeeper::Core, FactSource::Module, Some(true)));
            assert_eq!((r.xps_rewritten, r.xps_source), (Some(true), FactSource::Module));
        }
        // A driver the table does not know, importing it: the core keeps its masks too.
        assert_eq!(reset_rule_of("newnic", Some(&auto), k(7, 2), None).mask, MaskKeeper::Core);
        // A 7.x-numbered kernel whose ice does not import it: not the core's.
        let old_ice = read(&[Import::AffinityHint]);
        let r = reset_rule_of("ice", Some(&old_ice), k(7, 2), None);
        assert_eq!((r.mask, r.source), (MaskKeeper::Unknown, FactSource::Module), "{r:?}");
        assert!(r.why.contains("netif_set_affinity_auto"), "{}", r.why);
        assert_eq!(r.xps_rewritten, Some(false), "read, without netif_set_xps_queue");
        // No module: the version, and said so.
        let r = reset_rule_of("ice", None, k(7, 2), None);
        assert_eq!((r.mask, r.source, r.xps_source), (MaskKeeper::Core, FactSource::Version, FactSource::Version));
        let unread = DriverFacts { modules: vec![] };
        assert_eq!(reset_rule_of("ice", Some(&unread), k(6, 12), None).mask, MaskKeeper::Unknown);
    }

    #[test]
    fn ena_gve_and_mana_apply_their_hints_and_the_import_says_so_on_any_kernel() {
        let hint = read(&[Import::AffinityHint]);
        for driver in ["ena", "gve", "mana"] {
            for kernel in [k(6, 1), k(7, 2), None] {
                let r = reset_rule_of(driver, Some(&hint), kernel, None);
                assert_eq!((r.mask, r.source), (MaskKeeper::DriverSpread, FactSource::Module), "{driver}");
                assert_eq!(reset_rule(driver, kernel).mask, MaskKeeper::DriverSpread, "{driver} by the table");
            }
            // Read without the import: it cannot apply a hint, whatever the table says.
            let r = reset_rule_of(driver, Some(&read(&[])), k(7, 2), None);
            assert_eq!((r.mask, r.source), (MaskKeeper::Unknown, FactSource::Module), "{driver}");
        }
        // bnxt_en imports the same symbol before and after 6.13: the version tells which.
        let r = reset_rule_of("bnxt_en", Some(&hint), k(6, 15), None);
        assert_eq!((r.mask, r.source), (MaskKeeper::HintOnly, FactSource::Version));
    }

    #[test]
    fn the_xps_writers_are_known_from_their_imports_else_from_the_table() {
        for driver in ["gve", "mlx4_core", "ixgbe", "i40e", "nfp", "bnxt_en", "virtio_net"] {
            let r = reset_rule(driver, k(7, 2));
            assert_eq!((r.xps_rewritten, r.xps_source), (Some(true), FactSource::Version), "{driver}");
        }
        let r = reset_rule("ena", k(7, 2));
        assert_eq!((r.xps_rewritten, r.xps_source), (None, FactSource::Unknown));
        let r = reset_rule_of("ena", Some(&read(&[Import::AffinityHint])), k(7, 2), None);
        assert_eq!((r.xps_rewritten, r.xps_source), (Some(false), FactSource::Module));
    }

    #[test]
    fn a_driver_writes_on_hotplug_only_with_a_notifier_on_a_kernel_that_notifies() {
        let notifier = read(&[Import::AffinityHint, Import::AffinityNotifier]);
        assert_eq!(reset_rule_of("bnxt_en", Some(&notifier), k(7, 2), Some(true)).hotplug_writes, Some(true));
        assert_eq!(reset_rule_of("bnxt_en", Some(&notifier), k(6, 12), Some(false)).hotplug_writes, Some(false));
        assert_eq!(reset_rule_of("bnxt_en", Some(&read(&[])), k(7, 2), Some(true)).hotplug_writes, Some(false));
        // No module: the table of notifier drivers; a kernel that cannot tell: unknown.
        assert_eq!(reset_rule_of("i40e", None, k(7, 2), Some(true)).hotplug_writes, Some(true));
        assert_eq!(reset_rule_of("ena", None, k(7, 2), Some(true)).hotplug_writes, None);
        assert_eq!(reset_rule_of("bnxt_en", None, None, None).hotplug_writes, None);
    }

    #[test]
    fn every_drivers_rows_ascend_by_kernel() {
        for w in ROWS.windows(2) {
            if w[0].driver == w[1].driver {
                assert!(w[1].since.is_some() && w[0].since < w[1].since, "{} rows out of order", w[0].driver);
            }
        }
    }
}
