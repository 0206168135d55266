//! A network interface's transmit queues as sysfs shows them (`queues/tx-N/`): what transmit
//! steering (XPS) is planned from.
//!
//! Plain data; `discover::net_queues` reads it. Paths are relative to the root and go through
//! no symlink (`sys/devices/…/net/IF/queues`, not `sys/class/net/IF`), so they can be written.

use serde::Serialize;

use crate::cpuset::CpuSet;

/// What a tx queue's `xps_cpus` showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "cpus")]
pub enum XpsState {
    /// The CPUs that transmit on this queue (empty: no map).
    Cpus(CpuSet),
    /// No `xps_cpus` file, or the kernel answered ENOENT reading it (a kernel without
    /// CONFIG_XPS, or a single-queue device).
    Absent,
    /// Present but unreadable or not a hex mask: what was wrong.
    Unreadable(String),
}

/// One transmit queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxQueue {
    /// N of `tx-N`.
    pub index: u32,
    pub xps: XpsState,
    /// `traffic_class` as read (the kernel prints `0` for every queue of a device without
    /// traffic classes, `T` or `T-S` with them); `None` when the file is absent; an unreadable
    /// file is `Some` of the error.
    pub traffic_class: Option<String>,
}

/// The transmit queues of one interface. Invariant: `tx` sorted by index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetQueues {
    pub interface: String,
    /// `sys/devices/…/net/IF/queues`, relative to the root, through no symlink.
    pub dir: String,
    pub tx: Vec<TxQueue>,
}

impl NetQueues {
    /// The `xps_cpus` file of tx queue `index`, relative to the root.
    pub(crate) fn xps_path(&self, index: u32) -> String {
        format!("{}/tx-{index}/xps_cpus", self.dir)
    }
}
