//! The daemon: an initial pass, then one pass per burst of triggers, telling systemd and the
//! journal what it did.
//!
//! Guarantees:
//! - Every pass re-reads the devices and every current mask, so drift of any kind (a driver
//!   rewriting its masks, the kernel resetting an IRQ to all CPUs after an offline, an operator's
//!   edit) is restored by the next pass. The CPU topology is re-read when it may have changed (a
//!   CPU event, lost events, a reload, the reconcile timer, an isolation file, the start and
//!   every retry) and kept from the last pass when only devices and links changed, which cannot
//!   change it: each pass plans what a full pass on the same machine plans (`tests/incremental.rs`).
//! - A pass that changes nothing logs nothing (debug aside); it still updates `STATUS=` and the
//!   state file.
//! - A failed pass (unreadable topology, ...) is logged and the daemon keeps the placement it had.
//! - `SIGHUP`: `RELOADING=1` + `MONOTONIC_USEC=`, reload (an invalid config is logged error by
//!   error and the previous one kept), pass, `READY=1`. `SIGTERM`/`SIGINT`: `STOPPING=1`, restore
//!   the masks found at start when `restore_on_exit`, return.
//! - The watchdog is pinged from the loop itself: a pass that hangs stops the pings.
//! - With `on_drift = "respect"`, an IRQ whose mask another owner changed (not the kernel's
//!   CPU-offline fallback, not a driver's reset) is left as they set it and reported once, until
//!   its device goes away or the configuration is reloaded ([`respect`]).
//! - Every NIC's transmit steering is written with its IRQs, each change logged once; a failure
//!   that repeats pass after pass is said once.
//! - Counters ([`counters`]) run from start to stop, across reloads; after every pass they go to
//!   the state file and, at most once per second, to `metrics_file` ([`metrics_file`]).

pub mod catalog;
pub mod counters;
pub mod files;
pub mod ledger;
pub mod logging;
pub mod malloc;
pub mod metrics_file;
pub mod notify;
pub mod originals;
pub mod peers;
pub mod rescan;
pub mod respect;
pub mod state;

use std::collections::{BTreeSet, VecDeque};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio::time::{interval, Interval, MissedTickBehavior};

use crate::apply::{apply_plan, apply_xps, AffinityWriter, ApplyReport, ProcIrq, XpsChange, XpsOutcome};
use crate::config::{Config, ConfigPaths, OnDrift};
use crate::engine::{load_config_with_warnings, plan_discovered, EngineError, PlannedPass};
use crate::events::files::{WatchHow, WatchTarget};
use crate::events::{Batch, Debouncer, EventConfig, EventSources, EventsError, Trigger};
use crate::plan::{Plan, Summary};
use crate::sysfs::Root;
use crate::topology::{memory_file, TopologyMemory};
use rescan::Rescan;

use counters::{Counters, DeviceLabels, RecentChange, RECENT_CHANGES};
use ledger::{Drift, Ledger, Loudness};
use metrics_file::Pacer;
use notify::Notifier;
use originals::Originals;
use respect::{KernelDefaults, RespectNews, Respected};
use state::StateRecord;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Events(#[from] EventsError),
}

/// When to retry a pass that left the daemon degraded: 1 s after the first, doubling up to the
/// reconcile interval; forgotten once a pass succeeds. A pass run for another reason in between
/// does not move the scheduled attempt.
struct Backoff {
    delay: Option<std::time::Duration>,
    at: Option<tokio::time::Instant>,
    armed: bool,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff { delay: None, at: None, armed: false }
    }

    /// After any pass: schedules the next attempt when degraded (first one 1 s away, then twice
    /// the last delay, at most `cap`), clears the schedule when not.
    fn after_pass(&mut self, degraded: bool, cap: std::time::Duration) {
        if !degraded {
            (self.delay, self.at, self.armed) = (None, None, false);
            return;
        }
        if self.armed {
            return;
        }
        let next = self.delay.map_or(std::time::Duration::from_secs(1), |d| (d * 2).min(cap.max(d)));
        self.delay = Some(next);
        self.at = Some(tokio::time::Instant::now() + next);
        self.armed = true;
    }

    /// Resolves at the scheduled attempt (never when none is scheduled) and disarms it.
    async fn wait(&mut self) {
        match self.at {
            Some(at) => {
                tokio::time::sleep_until(at).await;
                self.armed = false;
                self.at = None;
            }
            None => std::future::pending().await,
        }
    }
}

/// The running daemon's memory. See the module documentation for its guarantees.
pub struct Daemon {
    root: Root,
    paths: ConfigPaths,
    config: Config,
    known_managed: BTreeSet<u32>,
    ledger: Ledger,
    last_plan: Plan,
    last_report: ApplyReport,
    last_counts: Summary,
    last_error: Option<String>,
    config_error: Option<String>,
    /// What the last passes read of the machine, and what events made stale since.
    rescan: Rescan,
    /// Every CPU's masks as last seen online: queue homes stay put while CPUs come and go.
    memory: TopologyMemory,
    memory_failed: bool,
    /// The debounce window and the reconcile period in force: a reload changes them.
    debounce: watch::Sender<std::time::Duration>,
    reconcile: watch::Sender<std::time::Duration>,
    /// `--log-format` was given: the configuration's `log_format` does not apply.
    log_format_pinned: bool,
    /// The masks to restore on exit, as recorded on disk.
    originals: Originals,
    originals_failed: bool,
    /// Configuration warnings already logged.
    config_warned: std::collections::BTreeSet<String>,
    started: u64,
    passes: watch::Sender<u64>,
    notifier: Notifier,
    state_failed: bool,
    /// The state file's encoding buffer, kept between passes.
    state_buf: Vec<u8>,
    /// The state file's devices as last encoded (most stay the same from pass to pass).
    encoded: state::EncodedDevices,
    /// The plan the last pass replaced, until the state file has compared it with the new one.
    replaced_plan: Option<Plan>,
    /// IRQs left to other owners (`on_drift = "respect"`).
    respected: Respected,
    /// Transmit queues whose last `xps_cpus` write failed, with how (said once).
    xps_failing: std::collections::BTreeMap<(String, u32), crate::apply::FailureClass>,
    counters: Counters,
    /// The last [`RECENT_CHANGES`] writes, oldest first.
    recent: VecDeque<RecentChange>,
    metrics_pacer: Pacer,
    /// The metrics file that last failed to be written (said once until it works again).
    metrics_failed: Option<std::path::PathBuf>,
    /// Stale temporary copies of the metrics file were looked for.
    metrics_cleaned: bool,
}

/// Seconds since the Unix epoch (0 if the clock is before it): the one wall clock of the state
/// file and `status`.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// [`unix_now`] with its fraction, for the metrics' timestamps.
fn unix_now_f64() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Why a batch ran a pass, in words for the log and the state file.
pub fn describe(batch: &Batch) -> Vec<String> {
    let mut why = Vec::new();
    let flags = [
        (batch.reload, "reload"),
        (batch.cpus_changed, "cpu"),
        (batch.devices_changed, "device"),
        (batch.overflow, "overflow"),
        (batch.reconcile, "reconcile"),
        (batch.isolation, "isolation"),
    ];
    why.extend(flags.iter().filter(|(on, _)| *on).map(|(_, w)| w.to_string()));
    for (ifindex, link) in &batch.links {
        let name = link.name.clone().unwrap_or_else(|| format!("#{ifindex}"));
        why.push(format!("link {name} {}", if link.up { "up" } else { "down" }));
    }
    why
}

impl Daemon {
    /// A daemon for `root` with an already loaded `config`; nothing is read or written yet.
    pub fn new(root: Root, paths: ConfigPaths, config: Config) -> Daemon {
        let (debounce, reconcile) = (config.global.debounce, config.global.reconcile_interval);
        let started = unix_now();
        Daemon {
            root,
            paths,
            config,
            known_managed: BTreeSet::new(),
            ledger: Ledger::default(),
            last_plan: Plan::default(),
            last_report: ApplyReport::default(),
            last_counts: Summary::default(),
            last_error: None,
            config_error: None,
            rescan: Rescan::new(),
            memory: TopologyMemory::default(),
            memory_failed: false,
            debounce: watch::channel(debounce).0,
            reconcile: watch::channel(reconcile).0,
            log_format_pinned: false,
            originals: Originals::default(),
            originals_failed: false,
            config_warned: std::collections::BTreeSet::new(),
            started,
            passes: watch::channel(0).0,
            notifier: Notifier::new(),
            state_failed: false,
            state_buf: Vec::new(),
            encoded: state::EncodedDevices::default(),
            replaced_plan: None,
            respected: Respected::default(),
            xps_failing: std::collections::BTreeMap::new(),
            counters: Counters::new(started),
            recent: VecDeque::new(),
            metrics_pacer: Pacer::default(),
            metrics_failed: None,
            metrics_cleaned: false,
        }
    }

    /// The counters since start (what the metrics file and `status` show).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn last_plan(&self) -> &Plan {
        &self.last_plan
    }

    /// When the follow-up pass of a topology read the kernel refused is due (see
    /// [`rescan`](self::rescan)); the loop runs it as a `recheck` pass.
    pub fn recheck_due(&self) -> Option<Instant> {
        self.rescan.recheck_due()
    }

    pub fn last_report(&self) -> &ApplyReport {
        &self.last_report
    }

    /// The last pass's error, when it failed.
    pub fn last_error(&self) -> Option<&str> {
        self.last_error.as_deref()
    }

    /// Passes completed so far; the receiver sees each new count (tests wait on it).
    pub fn passes(&self) -> watch::Receiver<u64> {
        self.passes.subscribe()
    }

    /// `irqwise run`: warns about irqbalance, starts the event sources (kernel uevents and
    /// rtnetlink when they can be opened, signals, the reconcile timer) and runs the loop.
    pub async fn run(&mut self) -> Result<(), DaemonError> {
        for pid in peers::irqbalance_pids(&self.root) {
            tracing::warn!(
                "irqbalance (pid {pid}) is running: it will fight irqwise over IRQ placement; stop and disable it (systemctl disable --now irqbalance)"
            );
        }
        let events = EventConfig {
            reconcile_interval: Some(self.config.global.reconcile_interval),
            watch_files: isolation_files(&self.root),
            ..EventConfig::default()
        };
        let (_sources, triggers) = start_sources(events, &self.reconcile)?;
        self.run_with(triggers).await;
        Ok(())
    }

    /// The loop on an injected trigger stream: initial pass, `READY=1`, then one pass per
    /// debounced batch until a stop (or the end of the stream), then `STOPPING=1` and restore.
    pub async fn run_with(&mut self, triggers: mpsc::Receiver<Trigger>) {
        let mut debouncer = Debouncer::adjustable(triggers, self.debounce.subscribe());
        // The debouncer runs in its own task: a batch half-collected when the watchdog ticks is
        // never dropped (its future is not cancel-safe).
        let (batch_tx, mut batches) = mpsc::channel::<Batch>(1);
        let collector = tokio::spawn(async move {
            while let Some(batch) = debouncer.next_batch().await {
                if batch_tx.send(batch).await.is_err() {
                    return;
                }
            }
        });
        self.pass(vec!["start".into()]);
        // READY=1 even when degraded: boot must not wait for a machine irqwise cannot read;
        // STATUS= says what is wrong and passes are retried with backoff.
        self.notifier.ready(&self.status_text());
        let mut retry = Backoff::new();
        let mut watchdog = notify::watchdog_period().map(|period| {
            let mut timer = interval(period);
            timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
            timer
        });
        loop {
            retry.after_pass(self.degraded().is_some(), self.config.global.reconcile_interval);
            let metrics_due = self.metrics_pacer.due();
            let recheck_due = self.recheck_due();
            tokio::select! {
                batch = batches.recv() => match batch {
                    Some(batch) if !batch.stop => self.handle(batch),
                    _ => break,
                },
                _ = tick(&mut watchdog) => self.notifier.watchdog(),
                _ = retry.wait() => {
                    self.pass(vec!["retry".into()]);
                    self.notifier.status(&self.status_text());
                }
                _ = deadline(recheck_due) => {
                    self.pass(vec!["recheck".into()]);
                    self.notifier.status(&self.status_text());
                }
                _ = deadline(metrics_due) => self.publish_metrics(),
            }
        }
        collector.abort();
        // A metrics write still held back by the once-per-second limit is made before stopping.
        if self.metrics_pacer.due().is_some() {
            deadline(self.metrics_pacer.due()).await;
            self.publish_metrics();
        }
        self.shutdown();
    }

    /// One batch: reload first if asked, then one pass, which re-reads the topology unless the
    /// batch holds only device and link events.
    pub fn handle(&mut self, batch: Batch) {
        let why = describe(&batch);
        self.rescan.note(&self.root, &batch);
        if batch.reload {
            self.notifier.reloading();
            self.reload();
            self.run_pass(why);
            self.notifier.ready(&self.status_text());
        } else {
            self.run_pass(why);
            self.notifier.status(&self.status_text());
        }
    }

    /// Reloads the configuration; on any error logs each one and keeps the current config. The
    /// outcome goes to the state file (`config_error`), where `irqwise reload` reads it.
    pub fn reload(&mut self) {
        match load_config_with_warnings(&self.root, &self.paths) {
            Ok((config, warnings)) => {
                self.note_config_warnings(&warnings);
                self.apply_global(&config.global);
                tracing::info!("configuration reloaded from {} file(s)", config.sources.len());
                self.config = config;
                self.ledger.forget_warnings();
                if !self.respected.is_empty() {
                    tracing::info!(
                        "{} IRQ(s) left to other owners are placed again under the reloaded configuration",
                        self.respected.len()
                    );
                }
                self.respected.clear();
                self.counters.record_reload(true);
                self.config_error = None;
            }
            Err(EngineError::Config(errors)) => {
                for e in &errors.0 {
                    tracing::error!("{e}");
                }
                tracing::error!(
                    message_id = catalog::CONFIG_REJECTED,
                    config_errors = errors.0.len(),
                    "configuration not reloaded ({} error(s)); keeping the previous one",
                    errors.0.len()
                );
                self.counters.record_reload(false);
                let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
                self.config_error = Some(lines.join("\n"));
            }
            Err(e) => {
                tracing::error!(
                    message_id = catalog::CONFIG_REJECTED,
                    error = %e,
                    "configuration not reloaded: {e}; keeping the previous one"
                );
                self.counters.record_reload(false);
                self.config_error = Some(e.to_string());
            }
        }
    }

    /// Why the daemon is not doing its job, if it is not: the last pass failed (the topology
    /// could not be read), or every write of it failed.
    pub fn degraded(&self) -> Option<String> {
        if let Some(e) = &self.last_error {
            return Some(format!("the last pass failed: {e}"));
        }
        let r = &self.last_counts;
        (r.failed > 0 && r.written == 0).then(|| format!("all {} writes of the last pass failed", r.failed))
    }

    /// `STATUS=` and the state file's status: the counts, or `degraded: ...` with the reason.
    pub fn status_text(&self) -> String {
        match self.degraded() {
            Some(why) => format!("degraded: {why}; {}", self.last_counts.status_line()),
            None => self.last_counts.status_line(),
        }
    }

    /// Puts a reloaded `[global]` into force where it is not read at each pass: the debounce
    /// window (from the next batch), the reconcile period (restarted now) and the log sink.
    fn apply_global(&mut self, new: &crate::config::Global) {
        let old = &self.config.global;
        if new.debounce != old.debounce {
            self.debounce.send_replace(new.debounce);
            tracing::info!("debounce is now {:?} (was {:?})", new.debounce, old.debounce);
        }
        if new.reconcile_interval != old.reconcile_interval {
            self.reconcile.send_replace(new.reconcile_interval);
            tracing::info!("reconcile_interval is now {:?} (was {:?})", new.reconcile_interval, old.reconcile_interval);
        }
        if new.log_format != old.log_format {
            if self.log_format_pinned {
                tracing::info!("log_format in the configuration does not apply: --log-format was given");
            } else {
                match logging::switch(new.log_format) {
                    Ok(sink) => tracing::info!("log format is now {sink:?}"),
                    Err(e) => tracing::error!("log_format not applied: {e}; the log stays where it was"),
                }
            }
        }
    }

    /// The debounce window and reconcile period in force (a reload changes them).
    pub fn windows(&self) -> (std::time::Duration, std::time::Duration) {
        (*self.debounce.borrow(), *self.reconcile.borrow())
    }

    /// Marks the log format as given on the command line (`--log-format`): a reload leaves it.
    pub fn pin_log_format(&mut self) {
        self.log_format_pinned = true;
    }

    /// Logs the configuration's warnings not logged before (at start; on reload only new ones:
    /// a fleet file's CPUs this machine lacks are said once).
    pub fn note_config_warnings(&mut self, warnings: &[crate::config::ConfigWarning]) {
        for w in warnings {
            let text = w.to_string();
            if self.config_warned.insert(text.clone()) {
                tracing::warn!("{}", crate::text::printable(&text));
            }
        }
    }

    /// One full pass (the topology re-read too); never fails: errors are logged and the
    /// previous placement stays.
    pub fn pass(&mut self, why: Vec<String>) {
        self.rescan.everything();
        self.run_pass(why);
    }

    /// One pass, on the kept topology while it is current; never fails.
    fn run_pass(&mut self, why: Vec<String>) {
        let number = *self.passes.borrow() + 1;
        if number == 1 {
            let removed = files::remove_stale_temps(&self.root.path(state::STATE_FILE))
                + files::remove_stale_temps(&self.root.path(originals::ORIGINALS_FILE))
                + files::remove_stale_temps(&self.root.path(memory_file::MEMORY_FILE));
            if removed > 0 {
                tracing::info!("removed {removed} temporary file(s) left by a process that did not finish");
            }
            let (originals, problem) = Originals::load(&self.root);
            if let Some(e) = problem {
                tracing::warn!("{e}");
            }
            if !originals.is_empty() {
                tracing::info!(
                    "{} IRQ(s) irqwise changed earlier this boot keep their recorded original masks",
                    originals.len()
                );
            }
            self.originals = originals;
            match memory_file::load(&self.root) {
                Ok(Some(memory)) => self.memory = memory,
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
        let was_degraded = self.degraded().is_some();
        let began = Instant::now();
        let ok = match self.plan() {
            Err(e) => {
                let message = e.to_string();
                if self.last_error.as_deref() != Some(message.as_str()) {
                    tracing::error!(
                        message_id = catalog::PASS_FAILED,
                        pass = number,
                        triggers = why.join(", "),
                        error = message.as_str(),
                        "pass {number} ({}) failed, keeping the current placement: {message}",
                        why.join(", ")
                    );
                }
                self.last_error = Some(message);
                false
            }
            Ok(planned) => {
                if self.last_error.take().is_some() {
                    tracing::info!("pass {number} succeeded again");
                }
                let planned = self.respect_owners(planned);
                self.rescan.give_back(planned.devices);
                self.apply(number, &why, planned.plan);
                true
            }
        };
        self.counters.record_pass(&why, ok, began.elapsed(), unix_now_f64());
        if let (false, Some(why)) = (was_degraded, self.degraded()) {
            if self.last_error.is_none() {
                tracing::error!(
                    message_id = catalog::PASS_FAILED,
                    "degraded: {why}; retrying with backoff (the warnings above say why each write failed)"
                );
            }
        }
        self.write_state(number, &why);
        self.publish_metrics();
        self.passes.send_replace(number);
    }

    /// Saves the topology memory for a restart and for `irqwise plan`; a failure is said once.
    fn save_memory(&mut self) {
        let bytes = memory_file::encode(&self.root, &self.memory);
        match files::write_atomically(&self.root.path(memory_file::MEMORY_FILE), &bytes, 0o644) {
            Ok(()) => self.memory_failed = false,
            Err((path, e)) => {
                if !self.memory_failed {
                    tracing::warn!(
                        "cannot write {}: {e}; a restart while CPUs are offline may move queues",
                        path.display()
                    );
                }
                self.memory_failed = true;
            }
        }
    }

    /// Discovers and plans: on what was read before where no event made it stale, else on a
    /// fresh read; when the topology cannot be read, on the last one that could (saying so in
    /// the plan's warnings) rather than giving up the pass.
    fn plan(&mut self) -> Result<PlannedPass, EngineError> {
        let (topology, warnings, discovery) = self.rescan.read(&self.root)?;
        if self.memory.remember(&topology) {
            self.save_memory();
        }
        Ok(plan_discovered(
            &self.root,
            &self.config,
            &self.known_managed,
            topology,
            Some(&self.memory),
            warnings,
            discovery,
        ))
    }

    fn apply(&mut self, number: u64, why: &[String], plan: Plan) {
        for w in self.ledger.new_warnings(&plan) {
            tracing::warn!("{}", crate::text::printable(&w));
        }
        let drift = self.ledger.observe(&plan);
        for d in self.others_drift(drift) {
            let found = d.found.map_or("unreadable".into(), |f| f.to_list_string());
            let placed = d.placed.to_list_string();
            let (dev, p) = plan.find_irq(d.irq).map_or((None, None), |(dev, p)| (Some(dev), Some(p)));
            tracing::warn!(
                message_id = catalog::DRIFT_RESTORED,
                irq = d.irq,
                irq_name = d.name.as_deref().unwrap_or(""),
                device = dev.map_or("", |dev| dev.bdf.as_str()),
                driver = dev.and_then(|dev| dev.driver.as_deref()).unwrap_or(""),
                queue = p.and_then(|p| p.queue),
                cpus_placed = placed.as_str(),
                cpus_found = found.as_str(),
                "irq {} drifted from {placed} to {found}, restoring",
                d.irq
            );
            if let Some(dev) = dev {
                self.counters.record_drift(DeviceLabels::of(dev));
            }
        }
        // The originals are on disk before the first write that changes them.
        let root = &self.root;
        // IRQs of no device stay recorded: the guard moved them, restore_on_exit puts them back.
        let present = |bdf: &str| {
            bdf == crate::devices::NO_DEVICE || root.exists(format!("{}/{bdf}", crate::devices::discover::PCI_DEVICES))
        };
        if self.originals.note_plan(&plan, &present) {
            if let Err(e) = self.originals.save(&self.root) {
                if !self.originals_failed {
                    tracing::warn!("{e}; restore_on_exit would not know these IRQs' masks after a restart");
                }
                self.originals_failed = true;
            } else {
                self.originals_failed = false;
            }
        }
        let mut report = apply_plan(&plan, &ProcIrq::new(self.root.clone()));
        // What a write leaves (its mask, the effective mask the kernel picked) is read again.
        self.rescan.wrote(plan.writes().map(|(_, p)| p.irq));
        report.xps = apply_xps(&plan, &self.root);
        self.log_xps(&report.xps);
        let targets: std::collections::BTreeMap<u32, &crate::cpuset::CpuSet> =
            plan.writes().filter_map(|(_, p)| Some((p.irq, p.desired.as_ref()?))).collect();
        for c in &report.changes {
            let target = targets.get(&c.irq).copied().cloned().unwrap_or_default();
            match self.ledger.loudness(c, &target) {
                Loudness::Loud => logging::log_change(c),
                Loudness::Quiet => logging::log_change_quietly(c),
                Loudness::Recovered(n) => {
                    logging::log_recovered(c, n);
                    logging::log_change(c);
                }
            }
        }
        self.ledger.record(&plan, &report);
        self.known_managed.extend(report.learned_managed.iter().copied());
        for news in self.ledger.managed_news(&plan) {
            // The ledger names a device by its name, else its PCI address.
            let dev = plan.devices.iter().find(|d| d.name.as_deref().unwrap_or(&d.bdf) == news.device);
            let bdf = dev.map_or(news.device.as_str(), |d| d.bdf.as_str());
            let driver = dev.and_then(|d| d.driver.as_deref());
            logging::log_managed_news(&news, bdf, driver.unwrap_or(""));
        }
        let r = report.summary;
        self.last_counts = r;
        if !report.changes.is_empty() || report.xps.iter().any(|x| !x.is_failure()) {
            let status = self.last_counts.status_line();
            tracing::info!(
                message_id = catalog::PASS_SUMMARY,
                pass = number,
                triggers = why.join(", "),
                written = r.written,
                failed = r.failed,
                status = status.as_str(),
                "pass {number} ({}): {} written, {} failed; {status}",
                why.join(", "),
                r.written,
                r.failed
            );
        }
        self.counters.record_writes(&report);
        self.counters.record_states(&plan, &report);
        let at = unix_now();
        for c in &report.changes {
            if self.recent.len() == RECENT_CHANGES {
                self.recent.pop_front();
            }
            self.recent.push_back(RecentChange::of(c, number, at));
        }
        self.replaced_plan = Some(std::mem::replace(&mut self.last_plan, plan));
        self.last_report = report;
    }

    /// The drift someone else made: not that of IRQs placed on CPUs that went offline or came
    /// back since the last pass (the kernel's CPU-offline fallback moves them, and a CPU back by
    /// the time the pass reads it hides that; the pass places them again as usual).
    fn others_drift(&self, drift: Vec<Drift>) -> Vec<Drift> {
        let hotplugged = self.rescan.hotplugged();
        drift.into_iter().filter(|d| !d.placed.intersects(hotplugged)).collect()
    }

    /// With `on_drift = "respect"`: takes this pass's drift into the respected set (logging each
    /// IRQ newly left to another owner, and each given back), and turns every respected IRQ of
    /// the plan into a `skip` that keeps its mask. Otherwise the plan as it is.
    fn respect_owners(&mut self, mut planned: PlannedPass) -> PlannedPass {
        if self.config.global.on_drift != OnDrift::Respect {
            return planned;
        }
        let defaults = KernelDefaults {
            online: planned.topology.online.clone(),
            default_affinity: self
                .root
                .read_small_optional("proc/irq/default_smp_affinity")
                .ok()
                .flatten()
                .and_then(|t| crate::cpuset::CpuSet::parse_mask(t.trim()).ok()),
            hints: planned
                .devices
                .iter()
                .flat_map(|d| &d.vectors)
                .filter_map(|v| Some((v.irq, v.hint.clone()?)))
                .collect(),
        };
        let drift = self.others_drift(self.ledger.drift(&planned.plan));
        let news = self.respected.observe(&mut planned.plan, &drift, &defaults);
        // Transmit steering follows the IRQs where they are, other owners' included.
        for d in &mut planned.plan.devices {
            let moved: std::collections::BTreeMap<u32, crate::cpuset::CpuSet> = d
                .irqs
                .iter()
                .filter(|p| self.respected.contains(p.irq))
                .filter(|p| matches!(p.role, crate::devices::QueueRole::Tx | crate::devices::QueueRole::RxTx))
                .filter_map(|p| Some((p.queue?, p.current.clone()?)))
                .collect();
            if let Some(x) = d.xps.as_mut().filter(|_| !moved.is_empty()) {
                crate::plan::xps::re_anchor(&planned.topology, x, &moved);
            }
        }
        for news in news {
            match news {
                RespectNews::Respected(o) => tracing::warn!(
                    irq = o.irq,
                    device = o.device.as_str(),
                    "irq {} ({}) of {}: moved from {} to {} by another owner; left as it is (on_drift = respect) until the device goes away or the configuration is reloaded",
                    o.irq,
                    crate::text::printable(o.name.as_deref().unwrap_or("")),
                    o.device,
                    o.placed,
                    o.mask
                ),
                RespectNews::Released(o) => tracing::info!(
                    irq = o.irq,
                    device = o.device.as_str(),
                    "irq {} of {}: the CPUs another owner gave it ({}) are all offline; irqwise places it again",
                    o.irq,
                    o.device,
                    o.mask
                ),
            }
        }
        planned
    }

    /// Logs each transmit-steering change: a write at INFO, a failure at WARN the first time it
    /// happens and at DEBUG while it repeats; the first success after failures says so.
    fn log_xps(&mut self, changes: &[XpsChange]) {
        for x in changes {
            let key = (x.device.clone(), x.txq);
            match &x.result {
                XpsOutcome::Failed { class, .. } => {
                    let quiet = self.xps_failing.insert(key, *class) == Some(*class);
                    logging::log_xps_change(x, quiet);
                }
                XpsOutcome::Written { .. } => {
                    if self.xps_failing.remove(&key).is_some() {
                        tracing::info!(device = x.device.as_str(), txq = x.txq, "xps of tx-{}: written again", x.txq);
                    }
                    logging::log_xps_change(x, false);
                }
            }
        }
    }

    fn write_state(&mut self, number: u64, why: &[String]) {
        let status = self.status_text();
        let degraded = self.degraded();
        // The plan the kept encodings were made from: the one this pass replaced, else (no new
        // plan) the current one.
        let replaced = self.replaced_plan.take();
        let written = self
            .encoded
            .update(replaced.as_ref().unwrap_or(&self.last_plan), &self.last_plan)
            .map_err(state::StateError::Encode)
            .and_then(|devices| {
                let record = StateRecord {
                    schema: crate::JSON_SCHEMA,
                    pid: std::process::id(),
                    started: self.started,
                    last_pass: unix_now(),
                    passes: number,
                    triggers: why,
                    summary: self.last_counts,
                    status: &status,
                    error: self.last_error.as_deref(),
                    degraded: degraded.as_deref(),
                    config_error: self.config_error.as_deref(),
                    config_sources: &self.config.sources,
                    plan: state::PlanState { devices, warnings: &self.last_plan.warnings },
                    repeated: self.ledger.repeated(),
                    report: state::ReportState::of(&self.last_report),
                    counters: &self.counters,
                    recent_changes: self.recent.make_contiguous(),
                };
                state::write_state(&self.root, &record, &mut self.state_buf)
            });
        match written {
            Ok(()) => self.state_failed = false,
            Err(e) if !self.state_failed => {
                tracing::warn!("state file not written: {e}");
                self.state_failed = true;
            }
            Err(_) => {}
        }
    }

    /// Writes the metrics file (when one is configured or the default directory exists), unless
    /// the last write was less than a second ago: then it is due at the end of that second and
    /// the loop calls this again. A failure is logged once per path until a write works.
    fn publish_metrics(&mut self) {
        let Some(path) = metrics_file::resolve(&self.root, &self.config.global.metrics_file) else {
            self.metrics_pacer.forget_pending();
            return;
        };
        let now = Instant::now();
        if !self.metrics_pacer.offer(now) {
            return;
        }
        if !self.metrics_cleaned {
            // Temporary copies a killed daemon left are never *.prom, but litter the directory.
            files::remove_stale_temps(&path);
            self.metrics_cleaned = true;
        }
        self.metrics_pacer.wrote(now);
        match metrics_file::write_atomically(&path, &self.counters.render(env!("CARGO_PKG_VERSION"))) {
            Ok(()) => self.metrics_failed = None,
            Err(e) if self.metrics_failed.as_ref() != Some(&path) => {
                tracing::warn!("metrics not written: {e}");
                self.metrics_failed = Some(path);
            }
            Err(_) => {}
        }
    }

    /// `STOPPING=1`, then (with `restore_on_exit`) writes back the masks the IRQs had before
    /// irqwise first changed them (this daemon or an earlier one of the same boot) and forgets
    /// the record.
    fn shutdown(&mut self) {
        self.notifier.stopping();
        if !self.config.global.restore_on_exit {
            return;
        }
        let writer = ProcIrq::new(self.root.clone());
        let todo = self.originals.restore_list();
        let mut restored = 0;
        for (irq, cpus) in &todo {
            match writer.write(*irq, cpus) {
                Ok(_) => restored += 1,
                Err(e) => {
                    let (dev, p) = self.last_plan.find_irq(*irq).map_or((None, None), |(d, p)| (Some(d), Some(p)));
                    tracing::warn!(
                        irq,
                        irq_name = p.and_then(|p| p.name.as_deref()).unwrap_or(""),
                        device = dev.map_or("", |d| d.bdf.as_str()),
                        driver = dev.and_then(|d| d.driver.as_deref()).unwrap_or(""),
                        queue = p.and_then(|p| p.queue),
                        "irq {irq}: not restored to {} ({:?}): {e}",
                        cpus.to_list_string(),
                        e.class()
                    )
                }
            }
        }
        if !todo.is_empty() {
            tracing::info!("restored {restored} of {} IRQs to the masks they had before irqwise", todo.len());
        }
        let xps = self.originals.restore_xps_list();
        let mut restored = 0;
        for (o, cpus) in &xps {
            match crate::apply::xps::write_xps(&self.root, &o.file, cpus) {
                Ok(_) => restored += 1,
                Err(e) => tracing::warn!(
                    device = o.device.as_str(),
                    txq = o.txq,
                    "xps of tx-{}: not restored ({:?}): {e}",
                    o.txq,
                    e.class()
                ),
            }
        }
        if !xps.is_empty() {
            tracing::info!(
                "restored the xps_cpus of {restored} of {} tx queues to what they were before irqwise",
                xps.len()
            );
        }
        self.originals.clear(&self.root);
    }
}

/// The files whose changes run a pass: irqbalance's environment files (in their directories,
/// so that files created later are seen) and the root cgroup's isolated CPUs.
pub fn isolation_files(root: &Root) -> Vec<WatchTarget> {
    use crate::topology::discover::isolation::{CGROUP_ISOLATED, IRQBALANCE_FILES};
    let mut targets: Vec<WatchTarget> =
        IRQBALANCE_FILES.iter().map(|f| WatchTarget { path: root.path(f), how: WatchHow::InDirectory }).collect();
    targets.push(WatchTarget { path: root.path(CGROUP_ISOLATED), how: WatchHow::Itself });
    targets
}

/// Waits until `at`; forever when there is nothing to wait for.
async fn deadline(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

/// Waits for the next watchdog tick; forever when the watchdog is off.
async fn tick(timer: &mut Option<Interval>) {
    match timer {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Starts the sources; a netlink source that cannot be opened (not root, no netlink in this
/// namespace) is dropped with a warning, and the daemon runs on the rest.
fn start_sources(
    mut events: EventConfig,
    reconcile: &watch::Sender<std::time::Duration>,
) -> Result<(EventSources, mpsc::Receiver<Trigger>), DaemonError> {
    loop {
        match EventSources::start_adjustable(&events, Some(reconcile.subscribe())) {
            Ok(started) => return Ok(started),
            Err(e @ EventsError::UeventMonitor(_)) if events.kernel_uevents => {
                tracing::warn!(
                    "{e}; running without kernel uevents (CPU and device hotplug are seen by the reconcile timer only)"
                );
                events.kernel_uevents = false;
            }
            Err(e @ EventsError::Rtnetlink(_)) if events.rtnetlink => {
                tracing::warn!("{e}; running without link events");
                events.rtnetlink = false;
            }
            Err(e @ (EventsError::Inotify(_) | EventsError::Register { what: "the inotify descriptor", .. }))
                if !events.watch_files.is_empty() =>
            {
                tracing::warn!("{e}; isolation changes are seen by the reconcile timer only");
                events.watch_files.clear();
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::LinkState;

    #[test]
    fn a_batch_is_described_by_every_reason_it_carries() {
        let mut batch = Batch { cpus_changed: true, reconcile: true, ..Batch::default() };
        batch.links.insert(3, LinkState { name: Some("eth1".into()), up: false });
        batch.links.insert(4, LinkState { name: None, up: true });
        assert_eq!(describe(&batch), vec!["cpu", "reconcile", "link eth1 down", "link #4 up"]);
    }
}
