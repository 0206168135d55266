//! The daemon: an initial pass, then one pass per burst of triggers, telling systemd and the
//! journal what it did.
//!
//! A pass ([`pass`]) reads the stale parts of its sample of the machine, plans the sample, applies
//! the plan, and hands one [`record::PassOutcome`] to the one step that records it ([`record`]:
//! counters, ledger, journal, state file, metrics). This module is the event loop around it.
//!
//! Guarantees:
//! - Every pass plans the whole machine from a sample whose parts are read again when an event
//!   can have changed them (the CPU topology after a CPU event, a device after its device or link
//!   event, an IRQ's masks after a write or a CPU event touching them; everything at the start,
//!   on a reload, on the reconcile timer, on lost events, after a failed pass): each pass plans
//!   what a full pass on the same machine plans (`tests/incremental.rs`), and drift of any kind
//!   is restored by the next pass that reads it, the reconcile timer's at the latest.
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
//!   that repeats pass after pass is said once ([`once`], like every failing side channel).
//! - Counters ([`counters`]) run from start to stop, across reloads; after every pass they go to
//!   the state file and, at most once per second, to `metrics_file` ([`metrics_file`]).

mod adjust;
mod backoff;
mod balance;
pub mod catalog;
pub(crate) mod claims;
mod clock;
mod container;
pub mod counters;
mod descriptors;
mod exposition;
mod fights;
mod irqbalance_answers;
mod irqbalance_protocol;
mod irqbalance_socket;
mod irqbalance_socket_file;
mod journal;
mod journal_news;
mod ledger;
pub mod lock;
pub mod logging;
pub mod malloc;
mod metric_labels;
pub mod metric_table;
pub mod metrics_file;
mod napi_news;
mod napi_originals;
mod napi_profiles;
pub mod notify;
mod nri;
mod nri_claims;
mod nri_link;
mod once;
pub mod originals;
mod parts;
mod pass;
pub(crate) mod peers;
mod record;
mod reload;
mod rescan;
pub mod resident;
mod respect;
mod sources;
pub mod state;
pub(crate) mod state_view;

use std::time::Instant;

use tokio::sync::mpsc;
use tokio::time::{interval, Interval, MissedTickBehavior};

use crate::events::{Batch, Debouncer, EventConfig, Trigger};
use backoff::Backoff;
pub(crate) use clock::unix_now;
pub use parts::Daemon;
use rescan::describe;
pub use sources::DaemonError;

impl Daemon {
    /// `irqwise run`: warns about irqbalance, starts the event sources (kernel uevents and
    /// rtnetlink when they can be opened, signals, the reconcile timer) and runs the loop.
    pub async fn run(&mut self) -> Result<(), DaemonError> {
        for pid in peers::irqbalance_pids(&self.root) {
            tracing::warn!(
                "irqbalance (pid {pid}) is running: it will fight irqwise over IRQ placement; stop and disable it (systemctl disable --now irqbalance)"
            );
        }
        // The claims' directory exists before it is watched, so a first claim is seen at once.
        let claims = std::path::Path::new(crate::topology::discover::claims::CLAIMS_DIR);
        if let Err((path, e)) = self.root.make_own_dir(claims) {
            tracing::warn!("cannot create {}: {e}; `irqwise claim` cannot be used", path.display());
        }
        if self.config.global.irqbalance_socket {
            self.open_irqbalance_socket();
        }
        self.open_nri();
        let events = EventConfig {
            reconcile_interval: Some(self.config.global.reconcile_interval),
            kernel_timer: true,
            watch_files: sources::isolation_files(&self.root, self.config.global.kubelet_cpu_manager_state.as_deref()),
            watch_config: self.watch_config.then(|| sources::config_watch(&self.paths)),
            ..EventConfig::default()
        };
        let (_sources, triggers) = sources::start(events, &self.reconcile)?;
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
        let (exit_tx, mut claim_exits) = mpsc::unbounded_channel::<u32>();
        self.claims.follow_exits(exit_tx, descriptors::raise_for_claims());
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
            let metrics_due = self.records.metrics_due();
            let recheck_due = self.recheck_due();
            let balance_due = self.balancer.due(&self.config.global.balance_knobs());
            tokio::select! {
                batch = batches.recv() => match batch {
                    Some(batch) if !batch.stop => self.handle(batch),
                    _ => break,
                },
                () = tick(&mut watchdog) => self.notifier.watchdog(),
                Some(pid) = claim_exits.recv() => {
                    self.run_pass(vec![format!("claim pid {pid} exited")]);
                    self.notifier.status(&self.status_text());
                }
                () = retry.wait() => {
                    self.pass(vec!["retry".into()]);
                    self.notifier.status(&self.status_text());
                }
                () = deadline(recheck_due) => {
                    self.pass(vec!["recheck".into()]);
                    self.notifier.status(&self.status_text());
                }
                () = deadline(balance_due) => {
                    if self.balancer.sample(&self.root, &self.config.global.balance_knobs()) {
                        self.run_pass(vec!["balance".into()]);
                        self.notifier.status(&self.status_text());
                    }
                }
                () = deadline(metrics_due) => self.records.publish_metrics(&self.root, &self.config),
                Some(request) = next_request(&mut self.irqbalance.requests) => self.answer_irqbalance(request),
                event = nri_link::next(&mut self.nri.source) => self.nri_event(event),
            }
        }
        collector.abort();
        // A metrics write still held back by the once-per-second limit is made before stopping.
        if let Some(due) = self.records.metrics_due() {
            deadline(Some(due)).await;
            self.records.publish_metrics(&self.root, &self.config);
        }
        self.shutdown();
    }

    /// One batch: reload first if asked, then one pass, which re-reads what the batch's events
    /// made stale.
    pub fn handle(&mut self, batch: Batch) {
        let why = describe(&batch);
        self.rescan.note(&self.root, &batch, &mut self.reader, self.config.global.reconcile_full_every);
        if batch.reload {
            self.notifier.reloading();
            self.reload();
            self.nri_update();
            self.run_pass(why);
            self.notifier.ready(&self.status_text());
        } else {
            self.run_pass(why);
            self.notifier.status(&self.status_text());
        }
    }

    /// One full pass (everything read again); never fails: errors are logged and the previous
    /// placement stays.
    pub fn pass(&mut self, why: Vec<String>) {
        self.reader.stale_everything();
        self.run_pass(why);
    }

    /// `STOPPING=1`, then (with `restore_on_exit`) writes back the masks the IRQs had before
    /// irqwise first changed them (this daemon or an earlier one of the same boot) and forgets
    /// the record.
    fn shutdown(&mut self) {
        self.notifier.stopping();
        self.close_irqbalance();
        if self.config.global.restore_on_exit {
            self.originals.restore(&self.root, &self.records.last_plan);
        }
    }
}

/// The next command of irqbalance's socket; never, when it is not open.
async fn next_request(
    requests: &mut Option<mpsc::Receiver<irqbalance_socket::Request>>,
) -> Option<irqbalance_socket::Request> {
    match requests {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
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
