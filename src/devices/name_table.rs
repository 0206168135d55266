//! What each driver calls its IRQs: per driver, the patterns of its vector names, which of them
//! are queues (and how the number in the name maps to a queue index) and which are sideband
//! vectors (misc, mailbox, flow director, control, async events, management).
//!
//! Pure data; [`super::recognise`] reads names with it. Every entry names the kernel file that
//! builds the names and the kernel versions whose format it covers (read in Linux 6.1 and 6.12).
//!
//! Template placeholders: `{if}` one of the device's network interfaces (any interface-like
//! word when the device shows none), `{bdf}` a PCI address (`0000:81:00.0`), `{q}` the number
//! that gives the queue index, `{n}` any other number, `{*}` any word without white space.
//! Patterns are tried in order and the first that matches wins, so sideband patterns that share
//! a queue pattern's tail (`i40e-<bdf>:fdir-TxRx-0`) come first.

use super::QueueRole;

/// One driver's naming knowledge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverNames {
    /// The names the device's `driver` link shows (`pci_driver.name`); the first is the entry's
    /// name in plans.
    pub drivers: &'static [&'static str],
    /// The kernel file (below `drivers/`) that formats the names.
    pub source: &'static str,
    /// Which kernels use this format, and what changed between versions.
    pub history: &'static str,
    /// The driver keeps at most this many characters of a name (its buffer is one longer); a name
    /// of exactly this length may have lost its tail, so its number is taken from the vector's
    /// position among the driver's vectors instead of from the name.
    pub limit: Option<usize>,
    pub patterns: &'static [NamePattern],
}

/// One name pattern of a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamePattern {
    pub template: &'static str,
    pub kind: NameKind,
}

/// What a vector with a matching name serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A queue vector: its role and how `{q}` maps to the queue index.
    Queue(QueueRole, QueueIndex),
    /// A vector that serves no queue (placed like a misc vector); the word says what it is.
    Sideband(&'static str),
    /// The NVMe admin queue (placed like a misc vector, with `admin_cpus`).
    Admin,
}

/// How the number in a queue vector's name maps to a 0-based queue index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueIndex {
    /// The number is the index.
    Same,
    /// Counted from 1 (`mlx4-1@...` is queue 0); a 0 does not match.
    OneBased,
    /// Counted in steps of two (hns3 increments its combined counter twice per vector); an odd
    /// number does not match.
    Halved,
    /// tx vectors numbered after the rx vectors (bnxt split rings: `-tx-8` is tx ring 0 when
    /// the device has 8 rx vectors): the number minus the device's rx vectors of this driver.
    AfterRx,
    /// Notify blocks serving tx queues first, then rx (gve): with `n` blocks on the device,
    /// block `b < n/2` is tx queue `b`, the rest rx queue `b - n/2`. The role is decided here.
    TxThenRx,
    /// tg3 tx: vector 0 carries tx ring 0 when only rx is spread (RSS without TSS); with TSS
    /// the tx rings start at vector 1. So 0 stays 0 and any other number counts from 1.
    FromOneButZero,
}

use NameKind::{Queue, Sideband};
use QueueIndex::{AfterRx, FromOneButZero, Halved, OneBased, Same, TxThenRx};
use QueueRole::{Io, Rx, RxTx, Tx};

/// Shorthand for table rows.
const fn q(template: &'static str, role: QueueRole, index: QueueIndex) -> NamePattern {
    NamePattern { template, kind: Queue(role, index) }
}

/// Shorthand for a sideband row.
const fn side(template: &'static str, what: &'static str) -> NamePattern {
    NamePattern { template, kind: Sideband(what) }
}

/// The `<if>-TxRx-N` / `-rx-N` / `-tx-N` family (ixgbe, ixgbevf, igb, igc) plus the bare `<if>`
/// misc vector.
const INTEL_IF: &[NamePattern] = &[
    q("{if}-TxRx-{q}", RxTx, Same),
    q("{if}-rx-{q}", Rx, Same),
    q("{if}-tx-{q}", Tx, Same),
    side("{if}-unused", "unused"),
    side("{if}", "misc"),
];

/// Every driver irqwise knows, in no particular order. Invariant (checked by a test): no driver
/// name appears twice, and every template has exactly one `{q}` when it is a queue pattern and
/// none when it is sideband.
pub const DRIVERS: &[DriverNames] = &[
    DriverNames {
        drivers: &["mlx5_core"],
        source: "net/ethernet/mellanox/mlx5/core/pci_irq.c (irq_set_name, MLX5_IRQ_NAME_FORMAT_STR)",
        history: "unchanged 6.1-6.12; mlx5_combined0 when the device has a single vector",
        limit: None,
        patterns: &[
            q("mlx5_comp{q}@pci:{bdf}", RxTx, Same),
            side("mlx5_async{n}@pci:{bdf}", "async events"),
            side("mlx5_combined{n}@pci:{bdf}", "async events and completions"),
            side("mlx5_sf_ctrl{n}@pci:{bdf}", "sub-function control"),
            side("mlx5_sf_comp{n}@pci:{bdf}", "sub-function completions"),
        ],
    },
    DriverNames {
        drivers: &["mlx4_core"],
        source: "net/ethernet/mellanox/mlx4/eq.c (mlx4_assign_eq, mlx4_init_eq_table)",
        history: "unchanged 6.1-6.12; completion vectors count from 1 (0 is the async EQ)",
        limit: None,
        patterns: &[
            q("mlx4-{q}@{bdf}", RxTx, OneBased),
            side("mlx4-async@pci:{bdf}", "async events"),
            side("mlx4_core@pci:{bdf}", "legacy single vector"),
        ],
    },
    DriverNames {
        drivers: &["i40e"],
        source: "net/ethernet/intel/i40e/i40e_main.c (i40e_vsi_request_irq_msix, i40e_vsi_open, i40e_setup_misc_vector)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            side("i40e-{bdf}:fdir-TxRx-{n}", "flow director"),
            side("i40e-{bdf}:misc", "misc"),
            q("i40e-{if}-TxRx-{q}", RxTx, Same),
            q("i40e-{if}-rx-{q}", Rx, Same),
            q("i40e-{if}-tx-{q}", Tx, Same),
        ],
    },
    DriverNames {
        drivers: &["ice"],
        source: "net/ethernet/intel/ice/ice_main.c (ice_vsi_req_irq_msix, ice_vsi_open, ice_vsi_open_ctrl, ice_req_irq_msix_misc)",
        history: "unchanged 6.1-6.12; the ll_ts vector (E830 timestamps) is new in 6.12",
        limit: None,
        patterns: &[
            side("ice-{bdf}:ctrl-TxRx-{n}", "control VSI (flow director)"),
            side("ice-{bdf}:ctrl-rx-{n}", "control VSI (flow director)"),
            side("ice-{bdf}:ctrl-tx-{n}", "control VSI (flow director)"),
            side("ice-{bdf}:misc", "misc"),
            side("ice-{bdf}:ll_ts", "low-latency timestamps"),
            q("ice-{if}-TxRx-{q}", RxTx, Same),
            q("ice-{if}-rx-{q}", Rx, Same),
            q("ice-{if}-tx-{q}", Tx, Same),
        ],
    },
    DriverNames {
        drivers: &["iavf"],
        source: "net/ethernet/intel/iavf/iavf_main.c (iavf_request_traffic_irqs, iavf_request_misc_irq)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            side("iavf-{bdf}:mbx", "mailbox"),
            q("iavf-{if}-TxRx-{q}", RxTx, Same),
            q("iavf-{if}-rx-{q}", Rx, Same),
            q("iavf-{if}-tx-{q}", Tx, Same),
        ],
    },
    DriverNames {
        drivers: &["idpf"],
        source: "net/ethernet/intel/idpf/idpf_txrx.c (idpf_vport_intr_req_irq), idpf_lib.c (idpf_mb_intr_req_irq)",
        history: "driver new in 6.7; the number is the vector index within the vport",
        limit: None,
        patterns: &[
            side("idpf-Mailbox-{n}", "mailbox"),
            q("idpf-{if}-TxRx-{q}", RxTx, Same),
            q("idpf-{if}-Rx-{q}", Rx, Same),
            q("idpf-{if}-Tx-{q}", Tx, Same),
        ],
    },
    DriverNames {
        drivers: &["ixgbe"],
        source: "net/ethernet/intel/ixgbe/ixgbe_main.c (ixgbe_request_msix_irqs)",
        history: "unchanged 6.1-6.12; the last vector (link, mailbox) is named after the interface",
        limit: None,
        patterns: INTEL_IF,
    },
    DriverNames {
        drivers: &["ixgbevf"],
        source: "net/ethernet/intel/ixgbevf/ixgbevf_main.c (ixgbevf_request_msix_irqs)",
        history: "unchanged 6.1-6.12; the last vector (mailbox) is named after the interface",
        limit: None,
        patterns: INTEL_IF,
    },
    DriverNames {
        drivers: &["igb"],
        source: "net/ethernet/intel/igb/igb_main.c (igb_request_msix)",
        history: "unchanged 6.1-6.12; vector 0 (link, mailbox) is named after the interface",
        limit: None,
        patterns: INTEL_IF,
    },
    DriverNames {
        drivers: &["igc"],
        source: "net/ethernet/intel/igc/igc_main.c (igc_request_msix)",
        history: "unchanged 6.1-6.12; vector 0 (link) is named after the interface",
        limit: None,
        patterns: INTEL_IF,
    },
    DriverNames {
        drivers: &["e1000e"],
        source: "net/ethernet/intel/e1000e/netdev.c (e1000_request_msix)",
        history: "unchanged 6.1-6.12; an interface name of 11 or more characters makes all three vectors plain `<if>`",
        limit: None,
        patterns: &[q("{if}-rx-{q}", Rx, Same), q("{if}-tx-{q}", Tx, Same), side("{if}", "misc")],
    },
    DriverNames {
        drivers: &["bnxt_en"],
        source: "net/ethernet/broadcom/bnxt/bnxt.c (bnxt_setup_msix), bnxt.h (struct bnxt_irq)",
        history: "names cut to 17 characters up to 6.1 (name[IFNAMSIZ + 2]); IFNAMSIZ + 17 in 6.12. \
                  Split rings number tx after rx",
        limit: Some(17),
        patterns: &[q("{if}-TxRx-{q}", RxTx, Same), q("{if}-rx-{q}", Rx, Same), q("{if}-tx-{q}", Tx, AfterRx)],
    },
    DriverNames {
        drivers: &["bnx2x"],
        source: "net/ethernet/broadcom/bnx2x/bnx2x_cmn.c (bnx2x_req_msix_irqs)",
        history: "unchanged 6.1-6.12; vector 0 (slow path) is named after the interface",
        limit: None,
        patterns: &[q("{if}-fp-{q}", RxTx, Same), side("{if}", "slow path")],
    },
    DriverNames {
        drivers: &["tg3"],
        source: "net/ethernet/broadcom/tg3.c (tg3_request_irq, tg3_mem_rx_acquire, tg3_mem_tx_acquire)",
        history: "unchanged 6.1-6.12; names cut to 15 characters (IFNAMSIZ); vector 0 carries no rx ring under RSS",
        limit: Some(15),
        patterns: &[
            q("{if}-txrx-{q}", RxTx, OneBased),
            q("{if}-rx-{q}", Rx, OneBased),
            q("{if}-tx-{q}", Tx, FromOneButZero),
            side("{if}-{n}", "link and misc"),
            side("{if}", "single vector"),
        ],
    },
    DriverNames {
        drivers: &["qede"],
        source: "net/ethernet/qlogic/qede/qede_main.c (qede_req_msix_irqs), qed/qed_main.c (qed_init_pci, slow path)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("{if}-fp-{q}", RxTx, Same), side("sp-{n}-{*}", "slow path")],
    },
    DriverNames {
        drivers: &["ena"],
        source: "net/ethernet/amazon/ena/ena_netdev.c (ena_setup_mgmnt_intr, ena_setup_io_intr)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("{if}-Tx-Rx-{q}", RxTx, Same), side("ena-mgmnt@pci:{bdf}", "management")],
    },
    DriverNames {
        drivers: &["gve"],
        source: "net/ethernet/google/gve/gve_main.c (gve_alloc_notify_blocks), gve.h (gve_tx_idx_to_ntfy, gve_rx_idx_to_ntfy)",
        history: "`<if>-ntfy-block.N` and `<if>-mgmnt` up to 6.1; `gve-ntfy-blkN@pci:<bdf>` and \
                  `gve-mgmnt@pci:<bdf>` in 6.12. Blocks serve tx queues first, then rx",
        limit: None,
        patterns: &[
            q("gve-ntfy-blk{q}@pci:{bdf}", RxTx, TxThenRx),
            side("gve-mgmnt@pci:{bdf}", "management"),
            q("{if}-ntfy-block.{q}", RxTx, TxThenRx),
            side("{if}-mgmnt", "management"),
        ],
    },
    DriverNames {
        drivers: &["virtio-pci"],
        source: "virtio/virtio_pci_common.c (vp_request_msix_vectors), net/virtio_net.c (virtnet_alloc_queues), block/virtio_blk.c",
        history: "unchanged 6.1-6.12; one shared `virtqueues` vector when per-queue vectors are not available",
        limit: None,
        patterns: &[
            q("virtio{n}-input.{q}", Rx, Same),
            q("virtio{n}-output.{q}", Tx, Same),
            q("virtio{n}-req.{q}", Io, Same),
            side("virtio{n}-config", "configuration changes"),
            side("virtio{n}-virtqueues", "all queues on one vector"),
            side("virtio{n}-control", "control queue"),
        ],
    },
    DriverNames {
        drivers: &["vmxnet3"],
        source: "net/vmxnet3/vmxnet3_drv.c (vmxnet3_request_irqs)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            q("{if}-rxtx-{q}", RxTx, Same),
            q("{if}-rx-{q}", Rx, Same),
            q("{if}-tx-{q}", Tx, Same),
            side("{if}-event-{n}", "events"),
            side("{if}", "single vector"),
        ],
    },
    DriverNames {
        drivers: &["nicvf", "thunder-nicvf"],
        source: "net/ethernet/cavium/thunder/nicvf_main.c (nicvf_register_interrupts, nicvf_register_misc_interrupt)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            q("{if}-rxtx-{q}", RxTx, Same),
            q("{if}-sq-{q}", Tx, Same),
            side("{if}-rbdr-{n}", "receive buffer refill"),
            side("{if}-qset-err-{n}", "queue set errors"),
            side("NICVF Mbox", "mailbox"),
        ],
    },
    DriverNames {
        drivers: &["rvu_nicpf", "rvu_nicvf"],
        source: "net/ethernet/marvell/octeontx2/nic/otx2_pf.c (otx2_open, otx2_register_mbox_intr), otx2_vf.c",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            q("{if}-rxtx-{q}", RxTx, Same),
            side("{if}-qerr", "queue errors"),
            side("RVUPFAF Mbox", "mailbox"),
            side("RVUVFAF Mbox", "mailbox"),
            side("RVUPF_VF Mbox{n}", "VF mailbox"),
            side("RVUPF{n}_VF Mbox{n}", "VF mailbox"),
            side("RVUPF{n}_ME{n}", "VF master enable"),
            side("RVUPF{n}_FLR{n}", "VF function reset"),
        ],
    },
    DriverNames {
        drivers: &["nfp"],
        source: "net/ethernet/netronome/nfp/nfp_net_common.c (nfp_net_prepare_vector, nfp_net_aux_irq_request)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("{if}-rxtx-{q}", RxTx, Same), side("{if}-lsc", "link state"), side("{if}-exn", "exceptions")],
    },
    DriverNames {
        drivers: &["LiquidIO", "LiquidIO_VF"],
        source: "net/ethernet/cavium/liquidio/lio_core.c (octeon_setup_interrupt)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            q("LiquidIO{n}-pf{n}-rxtx-{q}", RxTx, Same),
            q("LiquidIO{n}-vf{n}-rxtx-{q}", RxTx, Same),
            side("LiquidIO{n}-pf{n}-aux", "misc"),
        ],
    },
    DriverNames {
        drivers: &["hns3"],
        source: "net/ethernet/hisilicon/hns3/hns3_enet.c (hns3_nic_init_irq), hns3pf/hclge_main.c, hns3vf/hclgevf_main.c (misc)",
        history: "unchanged 6.1-6.12; the combined counter is incremented twice per vector, so TxRx numbers are even",
        limit: None,
        patterns: &[
            q("hns3-{bdf}-TxRx-{q}", RxTx, Halved),
            q("hns3-{bdf}-Rx-{q}", Rx, Same),
            q("hns3-{bdf}-Tx-{q}", Tx, Same),
            side("hclge-misc-{bdf}", "misc"),
            side("hclgevf-misc-{bdf}", "misc"),
        ],
    },
    DriverNames {
        drivers: &["hinic"],
        source: "net/ethernet/huawei/hinic/hinic_rx.c (rx_request_irq), hinic_tx.c (tx_request_irq)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("{if}_rxq{q}", Rx, Same), q("{if}_txq{q}", Tx, Same)],
    },
    DriverNames {
        drivers: &["enic"],
        source: "net/ethernet/cisco/enic/enic_main.c (enic_request_intr)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[
            q("{if}-rx-{q}", Rx, Same),
            q("{if}-tx-{q}", Tx, Same),
            side("{if}-err", "errors"),
            side("{if}-notify", "notifications"),
        ],
    },
    DriverNames {
        drivers: &["mana"],
        source: "net/ethernet/microsoft/mana/gdma_main.c (mana_gd_setup_irqs)",
        history: "unchanged 6.1-6.12; vector 0 is the hardware channel, mana_qN is vector N+1",
        limit: None,
        patterns: &[q("mana_q{q}@pci:{bdf}", RxTx, Same), side("mana_hwc@pci:{bdf}", "hardware channel")],
    },
    DriverNames {
        drivers: &["sfc"],
        source: "net/ethernet/sfc/efx_channels.c (efx_get_channel_name), ptp.c, tc_counters.c",
        history: "unchanged 6.1-6.12; plain `<if>-N` when rx and tx share channels (the default)",
        limit: None,
        patterns: &[
            q("{if}-rx-{q}", Rx, Same),
            q("{if}-tx-{q}", Tx, Same),
            q("{if}-xdp-{q}", Tx, Same),
            side("{if}-ptp", "PTP"),
            side("{if}-mae", "match-action counters"),
            q("{if}-{q}", RxTx, Same),
        ],
    },
    DriverNames {
        drivers: &["cxgb4"],
        source: "net/ethernet/chelsio/cxgb4/cxgb4_main.c (request_msix_queue_irqs, setup_non_data_intr, setup_fw_sge_queues)",
        history: "`<if>-RxN` in 6.1-6.12; older kernels named queues `<if> (queue N)`",
        limit: None,
        patterns: &[
            q("{if}-Rx{q}", RxTx, Same),
            q("{if} (queue {q})", RxTx, Same),
            side("{if}-FWeventq", "firmware events"),
            side("{if}-mirrorrxq{n}", "mirror receive"),
            side("{if}", "non-data (errors)"),
        ],
    },
    DriverNames {
        drivers: &["be2net"],
        source: "net/ethernet/emulex/benet/be_main.c (be_msix_register)",
        history: "unchanged 6.1-6.12; event queue 0 also takes async events",
        limit: None,
        patterns: &[q("{if}-q{q}", RxTx, Same)],
    },
    DriverNames {
        drivers: &["octeon_ep"],
        source: "net/ethernet/marvell/octeon_ep/octep_main.c (octep_request_irqs), octep_cn9k_pf.c, octep_cnxk_pf.c",
        history: "driver new in 6.4",
        limit: None,
        patterns: &[q("{if}-q{q}", RxTx, Same), side("{if}-epf_{*}", "PF events")],
    },
    DriverNames {
        drivers: &["octeon_ep_vf"],
        source: "net/ethernet/marvell/octeon_ep_vf/octep_vf_main.c (octep_vf_request_irqs)",
        history: "driver new in 6.9",
        limit: None,
        patterns: &[q("{if}-q{q}", RxTx, Same)],
    },
    DriverNames {
        drivers: &["ionic"],
        source: "net/ethernet/pensando/ionic/ionic_lif.c (ionic_request_irq), ionic_dev.c (ionic_q_init)",
        history: "unchanged 6.1-6.12; queue names cut to 8 characters; the PCI address stands for the \
                  interface until it is registered",
        limit: None,
        patterns: &[
            q("ionic-{if}-L{n}-rx{q}", RxTx, Same),
            q("ionic-{if}-L{n}-tx{q}", Tx, Same),
            side("ionic-{bdf}-L{n}-admin", "admin queue"),
            side("ionic-{if}-L{n}-admin", "admin queue"),
            side("ionic-{bdf}-L{n}-notif", "notify queue"),
            side("ionic-{if}-L{n}-notif", "notify queue"),
            q("ionic-{bdf}-L{n}-rx{q}", RxTx, Same),
        ],
    },
    DriverNames {
        drivers: &["nvme"],
        source: "nvme/host/pci.c (queue_request_irq)",
        history: "unchanged 6.1-6.12; queue 0 is the admin queue; also used for any NVMe-class device",
        limit: None,
        patterns: &[NamePattern { template: "nvme{n}q0", kind: NameKind::Admin }, q("nvme{n}q{q}", Io, OneBased)],
    },
    DriverNames {
        drivers: &["megaraid_sas"],
        source: "scsi/megaraid/megaraid_sas_base.c (megasas_setup_irqs_msix)",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("megasas{n}-msix{q}", Io, Same)],
    },
    DriverNames {
        drivers: &["mpt3sas"],
        source: "scsi/mpt3sas/mpt3sas_base.c (_base_request_irq)",
        history: "unchanged 6.1-6.12; `mpt2sasN-msixM` for SAS2 controllers",
        limit: None,
        patterns: &[
            q("mpt3sas{n}-msix{q}", Io, Same),
            q("mpt2sas{n}-msix{q}", Io, Same),
            side("mpt3sas{n}", "single vector"),
            side("mpt2sas{n}", "single vector"),
        ],
    },
    DriverNames {
        drivers: &["lpfc"],
        source: "scsi/lpfc/lpfc_init.c (lpfc_sli4_enable_msix), lpfc_version.h",
        history: "unchanged 6.1-6.12",
        limit: None,
        patterns: &[q("lpfc:{q}", Io, Same)],
    },
    DriverNames {
        drivers: &["smartpqi"],
        source: "scsi/smartpqi/smartpqi_init.c (pqi_request_irqs)",
        history: "unchanged 6.1-6.12; every queue group's vector has the same name, so no index",
        limit: None,
        patterns: &[side("smartpqi", "queue group (no index in the name)")],
    },
    DriverNames {
        drivers: &["hisi_sas_v3_hw"],
        source: "scsi/hisi_sas/hisi_sas_v3_hw.c (interrupt_preinit_v3_hw, interrupt_init_v3_hw)",
        history: "unchanged 6.1-6.12; completion queue vectors carry no index",
        limit: None,
        patterns: &[
            side("hisi_sas_v3_hw cq", "completion queue (no index in the name)"),
            side("hisi_sas_v3_hw phy", "PHY events"),
            side("hisi_sas_v3_hw channel", "channel events"),
            side("hisi_sas_v3_hw fatal", "fatal errors"),
        ],
    },
    DriverNames {
        drivers: &["qla2xxx"],
        source: "scsi/qla2xxx/qla_isr.c (msix_entries, qla24xx_enable_msix)",
        history: "unchanged 6.1-6.12; response queue vectors carry no index",
        limit: None,
        patterns: &[
            side("qla2xxx (default)", "default"),
            side("qla2xxx (rsp_q)", "response queue (no index in the name)"),
            side("qla2xxx (atio_q)", "target-mode queue"),
            side("qla2xxx (qpair_multiq)", "queue pair (no index in the name)"),
        ],
    },
];

/// The entry for a device's driver: its own entry, else for an NVMe-class device the `nvme`
/// entry (vendor drivers keep the nvme names). `None`: irqwise knows nothing about the names of
/// this driver's vectors.
pub(crate) fn entry_for(driver: Option<&str>, nvme_class: bool) -> Option<&'static DriverNames> {
    let by_name = |d: &str| DRIVERS.iter().find(|e| e.drivers.contains(&d));
    driver.and_then(by_name).or_else(|| nvme_class.then(|| by_name("nvme")).flatten())
}
