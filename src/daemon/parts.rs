//! The daemon's one struct, [`Daemon`]: what it holds between passes, made at start, and what it
//! answers about itself. The event loop ([`super`]), a pass ([`super::pass`]), a reload
//! ([`super::reload`]) and the event sources' handlers ([`super::nri`],
//! [`super::irqbalance_answers`]) work on it from the files above this one.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::clock::unix_now;
use super::irqbalance_socket::IrqbalanceSocket;
use super::notify::Notifier;
use super::nri_link::Nri;
use super::once::{SaidOnce, SaidOnceEach};
use super::originals::Originals;
use super::record::Records;
use super::rescan::Rescan;
use super::respect::Respected;
use super::{balance, claims, counters, fights};
use crate::apply::ApplyReport;
use crate::config::{Config, ConfigPaths};
use crate::plan::Plan;
use crate::sample::reader::SampleReader;
use crate::sysfs::Root;
use crate::topology::TopologyMemory;

/// The running daemon's memory. See the module documentation for its guarantees.
pub struct Daemon {
    pub(super) root: Root,
    pub(super) paths: ConfigPaths,
    pub(super) config: Arc<Config>,
    /// The parts of the machine's sample read so far, and what events made stale since.
    pub(super) reader: SampleReader,
    /// Turns event batches into what `reader` must read again.
    pub(super) rescan: Rescan,
    /// Every CPU's masks as last seen online: queue homes stay put while CPUs come and go.
    pub(super) memory: TopologyMemory,
    pub(super) memory_failed: SaidOnce,
    /// IRQs learned to be kernel-managed from failed writes.
    pub(super) known_managed: BTreeSet<u32>,
    /// IRQs left to other owners (`on_drift = "respect"`).
    pub(super) respected: Respected,
    /// Load refinement (`balance = "load"`): its samples and the queues away from home.
    pub(super) balancer: balance::Balancer,
    /// The runtime claims held, and a watch on each claimed process.
    pub(super) claims: claims::Claims,
    /// IRQs someone else keeps rewriting (`on_drift = "restore"`): restored a few times, then left.
    pub(super) fights: fights::Fights,
    /// When the daemon started, for the fights' window (monotonic).
    pub(super) started_at: std::time::Instant,
    /// The masks to restore on exit, as recorded on disk.
    pub(super) originals: Originals,
    /// Writes NAPI instances' settings (`[napi]`): one netdev socket, kept while it works.
    pub(super) napi_writer: crate::apply::napi_write::HostNapi,
    pub(super) originals_failed: SaidOnce,
    /// What passes did: counters, ledger, the last plan and report, the state and metrics files.
    pub(super) records: Records,
    /// The debounce window and the reconcile period in force: a reload changes them.
    pub(super) debounce: watch::Sender<std::time::Duration>,
    pub(super) reconcile: watch::Sender<std::time::Duration>,
    /// `--log-format` was given: the configuration's `log_format` does not apply.
    pub(super) log_format_pinned: bool,
    /// `run --watch-config`: a change of the configuration files reloads them.
    pub(super) watch_config: bool,
    /// irqbalance's control socket (`irqbalance_socket = true`) and what its clients set.
    pub(super) irqbalance: IrqbalanceSocket,
    /// The NRI plugin (`nri = true`): the runtime's view and the claims it asks for.
    pub(super) nri: Nri,
    /// The CPUs the last pass kept free of device IRQs (irqbalance's "banned" CPUs).
    pub(super) last_forbidden: crate::cpuset::CpuSet,
    /// Configuration warnings already logged.
    pub(super) config_warned: SaidOnceEach<String>,
    pub(super) passes: watch::Sender<u64>,
    pub(super) notifier: Notifier,
}

impl Daemon {
    /// A daemon for `root` with an already loaded `config`; nothing is read or written yet.
    pub fn new(root: Root, paths: ConfigPaths, config: Config) -> Daemon {
        let (debounce, reconcile) = (config.global.debounce, config.global.reconcile_interval);
        Daemon {
            root,
            paths,
            config: Arc::new(config),
            reader: SampleReader::holding(),
            rescan: Rescan::default(),
            memory: TopologyMemory::default(),
            memory_failed: SaidOnce::default(),
            known_managed: BTreeSet::new(),
            respected: Respected::default(),
            fights: fights::Fights::default(),
            claims: claims::Claims::default(),
            balancer: balance::Balancer::default(),
            started_at: std::time::Instant::now(),
            originals: Originals::default(),
            napi_writer: crate::apply::napi_write::HostNapi::default(),
            originals_failed: SaidOnce::default(),
            records: Records::new(unix_now()),
            debounce: watch::channel(debounce).0,
            reconcile: watch::channel(reconcile).0,
            log_format_pinned: false,
            watch_config: false,
            irqbalance: IrqbalanceSocket::default(),
            nri: Nri::default(),
            last_forbidden: crate::cpuset::CpuSet::new(),
            config_warned: SaidOnceEach::default(),
            passes: watch::channel(0).0,
            notifier: Notifier::new(),
        }
    }

    /// The counters since start (what the metrics file and `status` show).
    pub fn counters(&self) -> &counters::Counters {
        &self.records.counters
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn last_plan(&self) -> &Plan {
        &self.records.last_plan
    }

    /// When the follow-up pass of a read the kernel refused is due (see
    /// [`crate::sample::reader`]); the loop runs it as a `recheck` pass.
    pub fn recheck_due(&self) -> Option<Instant> {
        self.reader.recheck_due()
    }

    pub fn last_report(&self) -> &ApplyReport {
        &self.records.last_report
    }

    /// The last pass's error, when it failed.
    pub fn last_error(&self) -> Option<&str> {
        self.records.last_error()
    }

    /// Passes completed so far; the receiver sees each new count (tests wait on it).
    pub fn passes(&self) -> watch::Receiver<u64> {
        self.passes.subscribe()
    }

    /// Why the daemon is not doing its job, if it is not: the last pass failed (the topology
    /// could not be read), or every write of it failed.
    pub fn degraded(&self) -> Option<String> {
        self.records.degraded()
    }

    /// `STATUS=` and the state file's status: the counts, or `degraded: ...` with the reason.
    pub fn status_text(&self) -> String {
        self.records.status_text()
    }

    /// The debounce window and reconcile period in force (a reload changes them).
    pub fn windows(&self) -> (std::time::Duration, std::time::Duration) {
        (*self.debounce.borrow(), *self.reconcile.borrow())
    }

    /// Marks the log format as given on the command line (`--log-format`): a reload leaves it.
    pub(crate) fn pin_log_format(&mut self) {
        self.log_format_pinned = true;
    }

    /// `run --watch-config`: the configuration files and drop-in directories are watched, and a
    /// change reloads them as `SIGHUP` does (a Kubernetes ConfigMap update, which no one signals).
    pub(crate) fn watch_config(&mut self) {
        self.watch_config = true;
    }
}
