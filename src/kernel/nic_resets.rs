//! What a NIC driver does to its queue IRQs' masks and NAPI instances when it resets its queues
//! (link down/up, `ethtool -L`, an XDP program attached or removed, a reset after an error) or a
//! CPU comes and goes, on a given kernel. A placement daemon's work depends on it: where the
//! kernel keeps a mask, a reset is no reason to write; where the driver writes its own spread,
//! irqwise places the queues again.
//!
//! Pure: a driver name and a kernel version in, a rule with its source out. Every rule names the
//! kernel change or the observation it rests on; tests/vm proves those on the kernels it boots.

use serde::Serialize;

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
}

/// One row of the table: from kernel `since` on (and for every kernel when `None`), `driver`
/// behaves as `rule` says, until a later row of the same driver takes over.
struct Row {
    driver: &'static str,
    since: Option<KernelVersion>,
    mask: MaskKeeper,
    napi_ids_kept: Option<bool>,
    why: &'static str,
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
    },
    Row {
        driver: "ena",
        since: v(6, 16),
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: Some(true),
        why: "ena writes its affinity hint as the mask whenever it opens (irq_set_affinity_hint); \
              persistent NAPI config from 6.16 (0f681b0ecd19)",
    },
    Row {
        driver: "ice",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.13 (492a044508ad)",
    },
    Row {
        driver: "ice",
        since: v(6, 15),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.15 (bd7c00605ee0, 4063af296762: netif_set_affinity_auto)",
    },
    Row {
        driver: "idpf",
        since: v(6, 15),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.15 (bd7c00605ee0, deab38f8f011: netif_set_affinity_auto)",
    },
    Row {
        driver: "iavf",
        since: v(6, 17),
        mask: MaskKeeper::Core,
        napi_ids_kept: Some(true),
        why: "the net core keeps the mask from 6.17 (b0ca7dc0e70e: netif_set_affinity_auto)",
    },
    Row {
        driver: "bnxt_en",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "before 6.13 bnxt_en wrote its affinity hint as the mask whenever it opened",
    },
    Row {
        driver: "bnxt_en",
        since: v(6, 13),
        mask: MaskKeeper::HintOnly,
        napi_ids_kept: Some(true),
        why: "from 6.13 bnxt_en sets only the hint (fcf42409c6e1) and keeps NAPI config \
              (41936522749); with TPH (6.15) every mask write restarts an RX queue",
    },
    Row {
        driver: "nfp",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "before 6.13 nfp wrote its affinity hint as the mask whenever it opened",
    },
    Row {
        driver: "nfp",
        since: v(6, 13),
        mask: MaskKeeper::HintOnly,
        napi_ids_kept: Some(false),
        why: "from 6.13 nfp sets only the hint (d9e2e290f714)",
    },
    Row {
        driver: "mlx5_core",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.13 (2a3372cafe02)",
    },
    Row {
        driver: "mlx4_en",
        since: v(6, 13),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config for receive queues from 6.13 (c9191eaa7285)",
    },
    Row {
        driver: "igb",
        since: v(6, 16),
        mask: MaskKeeper::Unknown,
        napi_ids_kept: Some(true),
        why: "persistent NAPI config from 6.16 (fc0fb1f116e9)",
    },
    Row {
        driver: "virtio_net",
        since: None,
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: None,
        why: "virtio_net writes its own spread as the masks at probe, on `ethtool -L` and on CPU \
              hotplug (virtnet_set_affinity); link down/up and XDP keep them",
    },
    Row {
        driver: "virtio_net",
        since: v(6, 15),
        mask: MaskKeeper::DriverSpread,
        napi_ids_kept: Some(true),
        why: "virtio_net writes its own spread as the masks at probe, on `ethtool -L` and on CPU \
              hotplug (virtnet_set_affinity); link down/up and XDP keep them; persistent NAPI \
              config for receive queues from 6.15 (d5d715207e29)",
    },
    Row {
        driver: "vmxnet3",
        since: None,
        mask: MaskKeeper::Vectors,
        napi_ids_kept: Some(false),
        why: "vmxnet3 keeps its vectors across link down/up and XDP and has no `ethtool -L`; its \
              NAPI ids change on every reset",
    },
    Row {
        driver: "e1000e",
        since: None,
        mask: MaskKeeper::Vectors,
        napi_ids_kept: Some(false),
        why: "e1000e keeps its vectors across link down/up and has neither `ethtool -L` nor XDP; \
              its NAPI ids change on every reset",
    },
];

/// What `driver` does on `kernel` (`None`: unknown, the rows without a version apply). A driver
/// the table does not know gets [`MaskKeeper::Unknown`].
pub fn reset_rule(driver: &str, kernel: Option<KernelVersion>) -> ResetRule {
    let applies = |r: &&Row| match (r.since, kernel) {
        (None, _) => true,
        (Some(since), Some(k)) => k >= since,
        (Some(_), None) => false,
    };
    ROWS.iter().rev().filter(|r| r.driver == driver).find(applies).map_or(
        ResetRule {
            mask: MaskKeeper::Unknown,
            napi_ids_kept: None,
            why: "no rule for this driver: a reset may lose the mask, and irqwise places it again",
        },
        |r| ResetRule { mask: r.mask, napi_ids_kept: r.napi_ids_kept, why: r.why },
    )
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

    #[test]
    fn every_drivers_rows_ascend_by_kernel() {
        for w in ROWS.windows(2) {
            if w[0].driver == w[1].driver {
                assert!(w[1].since.is_some() && w[0].since < w[1].since, "{} rows out of order", w[0].driver);
            }
        }
    }
}
