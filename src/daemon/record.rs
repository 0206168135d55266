//! The one bookkeeping path: every pass ends in one [`PassOutcome`], and [`Records::record`]
//! takes it to the ledger, the journal, the counters, the state file and the metrics file, in
//! that order. The record decides which news to say and when (each side channel that can fail
//! says so once, [`super::once`]); [`super::journal`] renders every line: nothing here logs.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::adjust::Adjusted;
use super::clock::{unix_now, unix_now_f64};
use super::counters::{Counters, DeviceLabels, RecentChange, RECENT_CHANGES};
use super::journal::{self, PassNews, Unsaved};
use super::journal_news;
use super::ledger::{others_drift, Ledger, Loudness};
use super::metrics_file::MetricsPublisher;
use super::napi_news::NapiNews;
use super::once::{SaidOnce, SaidOnceEach};
use super::state::{PlanEntries, ReportEntries, StateFile, StateWriter};
use crate::apply::blocked::{writes_blocked, WritesBlocked};
use crate::apply::threads::ThreadOutcome;
use crate::apply::{ApplyReport, FailureClass, WriteOutcome, XpsChange, XpsOutcome};
use crate::config::Config;
use crate::cpuset::CpuSet;
use crate::plan::{Plan, Summary};
use crate::sysfs::processes::{process_identity, ProcessIdentity};
use crate::sysfs::Root;

/// What one pass did.
#[derive(Debug)]
pub(crate) struct PassOutcome {
    pub number: u64,
    /// Why it ran (`start`, `cpu`, `link eth0 up`, ...).
    pub why: Vec<String>,
    pub took: Duration,
    /// Files and directories it opened, reading and writing.
    pub opened: u64,
    /// The plan applied and what the writes did, or why the pass failed (nothing was written).
    pub result: Result<Applied, String>,
    /// The CPUs that came or went before the pass read the machine: drift of IRQs placed on
    /// them is the kernel's CPU-offline fallback, not another owner's.
    pub hotplugged: CpuSet,
}

/// A plan and what applying it did.
#[derive(Debug)]
pub(crate) struct Applied {
    pub plan: Plan,
    pub report: ApplyReport,
    /// What a probe write found, when the pass probed (see [`crate::apply::blocked::probe`]).
    pub probe: Option<WritesBlocked>,
    /// What the pass's collaborators found while adjusting the plan.
    pub adjusted: Adjusted,
    /// The files the daemon keeps that the pass could not write (each said once).
    pub unsaved: Vec<Unsaved>,
}

/// Everything the daemon keeps of its passes.
pub(crate) struct Records {
    pub counters: Counters,
    pub ledger: Ledger,
    pub last_plan: Plan,
    pub last_report: ApplyReport,
    last_counts: Summary,
    /// The last [`RECENT_CHANGES`] writes, oldest first.
    recent: VecDeque<RecentChange>,
    /// The last pass's error, said once until the error changes or a pass works again.
    pass_failure: SaidOnce<String>,
    /// Why the last reload was rejected (`None` after a successful one).
    config_error: Option<String>,
    /// Transmit queues whose last `xps_cpus` write failed, with how.
    xps_failing: SaidOnceEach<(String, u32), FailureClass>,
    /// Moved NAPI threads, queue identity disagreements and notices.
    napi: NapiNews,
    /// NAPI instances' settings written (`[napi]`), and drift from them.
    pub napi_profiles: super::napi_profiles::NapiProfiles,
    /// The queues load refinement keeps away from home (for the state file).
    pub away: Vec<crate::plan::refine::Moved>,
    /// IRQs left to other writers (`on_drift = "respect"`), with who (for the state file).
    pub left_to_others: Vec<super::respect::LeftToOther>,
    /// The runtime claims this pass held (for the state file).
    pub claims: Vec<super::claims::HeldClaim>,
    /// The live claims this pass refused (for the state file).
    pub refused_claims: Vec<crate::topology::claims::RefusedClaim>,
    /// Not one IRQ could be written, for one cause of the machine (said once, by class).
    blocked: SaidOnce<FailureClass>,
    /// That diagnosis, while it holds.
    blocked_now: Option<WritesBlocked>,
    state: StateWriter,
    metrics: MetricsPublisher,
    started: u64,
    /// This process, as the state file names it for `status`.
    process: Option<ProcessIdentity>,
}

impl Records {
    /// Nothing recorded yet, for a daemon started at `started` (Unix seconds).
    pub fn new(started: u64) -> Records {
        Records {
            counters: Counters::new(started),
            ledger: Ledger::default(),
            last_plan: Plan::default(),
            last_report: ApplyReport::default(),
            last_counts: Summary::default(),
            recent: VecDeque::new(),
            pass_failure: SaidOnce::default(),
            config_error: None,
            xps_failing: SaidOnceEach::default(),
            napi: NapiNews::default(),
            napi_profiles: super::napi_profiles::NapiProfiles::default(),
            left_to_others: Vec::new(),
            claims: Vec::new(),
            refused_claims: Vec::new(),
            away: Vec::new(),
            blocked: SaidOnce::default(),
            blocked_now: None,
            state: StateWriter::default(),
            metrics: MetricsPublisher::default(),
            started,
            process: process_identity(std::process::id()),
        }
    }

    /// The last pass's error, when it failed.
    pub fn last_error(&self) -> Option<&str> {
        self.pass_failure.current().map(String::as_str)
    }

    /// Why the daemon is not doing its job, if it is not: the last pass failed, or every write
    /// of it failed.
    pub fn degraded(&self) -> Option<String> {
        if let Some(e) = self.last_error() {
            return Some(format!("the last pass failed: {e}"));
        }
        if let Some(b) = &self.blocked_now {
            return Some(b.status());
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

    /// A reload ended: applied (`None`), or rejected with the reason.
    pub fn reloaded(&mut self, rejected: Option<String>) {
        self.counters.record_reload(rejected.is_none());
        self.config_error = rejected;
    }

    /// When the metrics file held back by its once-per-second limit is due.
    pub(crate) fn metrics_due(&self) -> Option<Instant> {
        self.metrics.due()
    }

    /// Writes the metrics file now, or when its once-per-second limit allows.
    pub(crate) fn publish_metrics(&mut self, root: &Root, config: &Config) {
        self.metrics.publish(root, &config.global.metrics_file, &self.counters);
    }

    /// Records one pass: its news in the journal, its counts, the state and metrics files.
    pub fn record(&mut self, outcome: PassOutcome, root: &Root, config: &Config) {
        let PassOutcome { number, why, took, opened, result, hotplugged } = outcome;
        let was_degraded = self.degraded().is_some();
        let ok = result.is_ok();
        match result {
            Err(error) => {
                if self.pass_failure.failed(error.clone()) {
                    journal::say_pass(&PassNews::Failed { number, why: &why, error: &error });
                }
            }
            Ok(applied) => {
                applied.unsaved.iter().for_each(journal::say_unsaved);
                journal_news::say_adjusted(&applied.adjusted);
                self.take_adjusted(&applied.adjusted);
                if self.pass_failure.worked() {
                    journal::say_pass(&PassNews::WorksAgain { number });
                }
                self.applied(number, &why, applied, &hotplugged);
            }
        }
        self.counters.record_pass(&why, ok, (took, opened), unix_now_f64());
        if let (false, Some(why)) = (was_degraded, self.degraded()) {
            if self.last_error().is_none() {
                journal::say_pass(&PassNews::Degraded { why: &why });
            }
        }
        let status = self.status_text();
        let degraded = self.degraded();
        self.recent.make_contiguous();
        let state = StateFile {
            schema: crate::JSON_SCHEMA,
            pid: std::process::id(),
            process: self.process.as_ref().map(Cow::Borrowed),
            started: self.started,
            last_pass: unix_now(),
            passes: number,
            triggers: Cow::Borrowed(&why),
            summary: self.last_counts,
            status: Cow::Borrowed(&status),
            error: self.pass_failure.current().map(|e| Cow::Borrowed(e.as_str())),
            degraded: degraded.as_deref().map(Cow::Borrowed),
            config_error: self.config_error.as_deref().map(Cow::Borrowed),
            config_sources: Cow::Borrowed(&config.sources),
            plan: PlanEntries::of(&self.last_plan),
            repeated: Cow::Owned(self.ledger.repeated()),
            report: ReportEntries::of(&self.last_report),
            counters: Some(Cow::Borrowed(&self.counters)),
            recent_changes: Cow::Borrowed(self.recent.as_slices().0),
            claims: Cow::Borrowed(&self.claims),
            refused_claims: Cow::Borrowed(&self.refused_claims),
            away_from_home: Cow::Borrowed(&self.away),
            left_to_others: Cow::Borrowed(&self.left_to_others),
        };
        self.state.write(root, &self.last_plan, state);
        self.publish_metrics(root, config);
    }

    /// Keeps what a pass's collaborators found, for the state file and the counters.
    fn take_adjusted(&mut self, a: &Adjusted) {
        self.claims = a.claims.clone();
        self.refused_claims = a.refused_claims.clone();
        self.counters.claims = self.claims.len() as u64;
        self.counters.claims_refused = self.refused_claims.len() as u64;
        self.counters.claimed_cpus = a.claimed_cpus;
        self.away = a.away.clone();
        self.counters.load_moves = a.load_moves;
        self.counters.load_returns = a.load_returns;
        self.counters.away_from_home = self.away.len() as u64;
        if let Some((_, fought)) = &a.fights {
            self.counters.fought_irqs = *fought;
        }
        if let Some((_, left)) = &a.respect {
            self.left_to_others = left.clone();
            self.counters.left_by_owner = BTreeMap::new();
            for l in left {
                *self.counters.left_by_owner.entry(l.owner.clone()).or_default() += 1;
            }
        }
        self.napi_profiles.take(&a.napi);
    }

    /// The news of an applied plan, in the order an operator reads them: new plan warnings,
    /// drift, transmit steering, each write, kernel-managed devices, the pass's summary.
    fn applied(&mut self, number: u64, why: &[String], applied: Applied, hotplugged: &CpuSet) {
        let Applied { plan, report, probe, adjusted, .. } = applied;
        for w in self.ledger.new_warnings(&plan) {
            journal::say_pass(&PassNews::PlanWarning(&w));
        }
        for d in others_drift(self.ledger.observe(&plan), hotplugged) {
            if adjusted.kernel_rewrites.contains(&d.irq) {
                journal::say_pass(&PassNews::KernelRewrite(&d));
                continue;
            }
            let dev = journal::log_drift(&d, &plan);
            if let Some(dev) = dev {
                self.counters.record_drift(DeviceLabels::of(dev));
            }
        }
        let blocked = self.say_blocked(&report, probe);
        self.log_xps(&report.xps);
        journal_news::say_thread_news(&self.napi.record(&plan, &report.threads));
        journal_news::say_napi_writes(&self.napi_profiles.record(&report.napi));
        let targets: BTreeMap<u32, &CpuSet> =
            plan.writes().filter_map(|(_, p)| Some((p.irq, p.desired.as_ref()?))).collect();
        for c in &report.changes {
            let target = targets.get(&c.irq).copied().cloned().unwrap_or_default();
            // One diagnosis stands for every failure it explains.
            if blocked && matches!(c.result, WriteOutcome::Failed { .. }) {
                let _ = self.ledger.loudness(c, &target);
                journal::log_change_quietly(c);
                continue;
            }
            match self.ledger.loudness(c, &target) {
                Loudness::Loud => journal::log_change(c),
                Loudness::Quiet => journal::log_change_quietly(c),
                Loudness::Recovered(n) => {
                    journal::log_recovered(c, n);
                    journal::log_change(c);
                }
            }
        }
        self.ledger.record(&plan, &report);
        for news in self.ledger.managed_news(&plan) {
            // The ledger names a device by its name, else its PCI address.
            let dev = plan.devices.iter().find(|d| d.name.as_deref().unwrap_or(&d.bdf) == news.device);
            let bdf = dev.map_or(news.device.as_str(), |d| d.bdf.as_str());
            let driver = dev.and_then(|d| d.driver.as_deref());
            journal::log_managed_news(&news, bdf, driver.unwrap_or(""));
        }
        let r = report.summary;
        self.last_counts = r;
        let threads_moved = report.threads.iter().any(|t| matches!(t.result, ThreadOutcome::Written { .. }))
            || report.napi.iter().any(|n| !n.is_failure());
        if !report.changes.is_empty() || report.xps.iter().any(|x| !x.is_failure()) || threads_moved {
            let status = self.last_counts.status_line();
            journal::say_pass(&PassNews::Summary { number, why, summary: &r, status: &status });
        }
        self.counters.record_writes(&report);
        self.counters.record_states(&plan, &report);
        let at = unix_now();
        // A mask found already in place changed nothing: not a change to list.
        for c in report.changes.iter().filter(|c| !matches!(c.result, crate::apply::WriteOutcome::Held { .. })) {
            if self.recent.len() == RECENT_CHANGES {
                self.recent.pop_front();
            }
            self.recent.push_back(RecentChange::of(c, number, at));
        }
        self.state.replaced(std::mem::replace(&mut self.last_plan, plan));
        self.last_report = report;
    }

    /// Says once when not one IRQ of `report` could be written for one cause of the machine
    /// ([`writes_blocked`]), and once when writing works again; whether it is blocked now.
    fn say_blocked(&mut self, report: &ApplyReport, probe: Option<WritesBlocked>) -> bool {
        let now = writes_blocked(report).or(probe);
        match &now {
            Some(b) if self.blocked.failed(b.class) => journal::say_pass(&PassNews::WritesBlocked(b)),
            Some(_) => {}
            None if report.summary.written > 0 && self.blocked.worked() => {
                journal::say_pass(&PassNews::WritableAgain { written: report.summary.written });
            }
            None => {}
        }
        // A pass that tried no write keeps what the last one that did (or a probe) found.
        if now.is_some() || report.summary.written > 0 || report.summary.failed > 0 {
            self.blocked_now = now;
        }
        self.counters.record_blocked(self.blocked_now.as_ref().map(|b| b.class));
        self.blocked_now.is_some()
    }

    /// Logs each transmit-steering change: a write at INFO, a failure at WARN the first time it
    /// happens and at DEBUG while it repeats; the first success after failures says so.
    fn log_xps(&mut self, changes: &[XpsChange]) {
        for x in changes {
            let key = (x.device.clone(), x.txq);
            match &x.result {
                XpsOutcome::Failed { class, .. } => {
                    // A write blocked for the same cause as every IRQ's is in that one diagnosis.
                    let covered = self.blocked_now.as_ref().is_some_and(|b| b.class == *class);
                    let quiet = !self.xps_failing.failed(key, *class) || covered;
                    journal::log_xps_change(x, quiet);
                }
                XpsOutcome::Written { .. } => {
                    if self.xps_failing.worked(&key) {
                        journal::say_pass(&PassNews::XpsWrittenAgain(x));
                    }
                    journal::log_xps_change(x, false);
                }
            }
        }
    }
}
