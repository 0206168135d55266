//! One pass of the daemon: read the stale parts of the sample, plan it, leave other owners'
//! IRQs alone (`on_drift = "respect"`), apply the plan (the masks it changes recorded on disk
//! first), then hand the outcome to the record ([`super::record`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use super::fights::{hotplug_writers, read_again, FightNews};
use super::ledger::{others_drift, Drift};
use super::originals::{Originals, ORIGINALS_FILE};
use super::peers::process_exists;
use super::peers::{irq_writer_runs, known_irq_writer, likely_writer, running_peers, what_it_writes};
use super::record::{Applied, PassOutcome};
use super::respect::{classify, DriftCause, KernelDefaults, RespectNews};
use super::state::STATE_FILE;
use super::Daemon;
use crate::apply::blocked::{probe, probe_target};
use crate::apply::{apply_whole, AffinityWriter, ProcIrq};
use crate::config::OnDrift;
use crate::cpuset::CpuSet;
use crate::devices::QueueRole;
use crate::kernel::nic_resets::MaskKeeper;
use crate::plan::from_sample::{plan_sample_refined, PassMemory, PlannedPass};
use crate::sample::reader::ReadError;
use crate::sample::Sample;
use crate::topology::memory_file;

impl Daemon {
    /// One pass on the parts of the sample still current and the stale ones read again; never
    /// fails: errors are logged and the previous placement stays.
    pub(super) fn run_pass(&mut self, why: Vec<String>) {
        let number = *self.passes.borrow() + 1;
        if number == 1 {
            self.start_up();
        }
        let began = Instant::now();
        let opened_before = crate::sysfs::files_opened();
        // At the start and on a reload, writing is probed when the pass writes nothing.
        let probing = why.iter().any(|w| matches!(w.as_str(), "start" | "once" | "reload"));
        // After a pass that read everything the daemon idles: its code need not stay mapped.
        let idles_after = probing || why.iter().any(|w| w == "reconcile");
        let result = match self.read_and_plan() {
            Ok(planned) => Ok(self.apply(planned, probing)),
            Err(e) => Err(e.to_string()),
        };
        let hotplugged = self.reader.hotplugged().clone();
        let opened = crate::sysfs::files_opened() - opened_before;
        let outcome = PassOutcome { number, why, took: began.elapsed(), opened, result, hotplugged };
        self.records.record(outcome, &self.root, &self.config);
        super::malloc::give_back();
        if idles_after {
            super::resident::give_back_when_idle();
        }
        self.passes.send_replace(number);
    }

    /// Before the first pass: what an earlier daemon of this boot left (temporary files of one
    /// that did not finish, the record of original masks, the topology memory).
    fn start_up(&mut self) {
        for line in super::container::diagnose(&super::container::ContainerFacts::read(&self.root)) {
            tracing::warn!("{line}");
        }
        let removed = [STATE_FILE, ORIGINALS_FILE, memory_file::MEMORY_FILE]
            .iter()
            .map(|rel| self.root.remove_stale_temps(Path::new(rel), process_exists))
            .sum::<usize>();
        if removed > 0 {
            tracing::info!("removed {removed} temporary file(s) left by a process that did not finish");
        }
        let (originals, problem) = Originals::load(&self.root);
        for e in problem.into_iter().chain(originals.unreadable_entries(&self.root)) {
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

    /// Reads the sample (what is stale of it) and plans it; when the topology cannot be read,
    /// on the last one that could (saying so in the plan's warnings) rather than giving up.
    fn read_and_plan(&mut self) -> Result<PlannedPass, ReadError> {
        let sample = self.reader.read(&self.root, self.config.clone())?;
        if self.memory.remember(&sample.topology) {
            self.save_memory();
        }
        let memory = PassMemory { topology: Some(&self.memory), known_managed: &self.known_managed };
        let mut planned = plan_sample_refined(&sample, memory, self.balancer.moved());
        // The claims as planned: those that hold, and those refused (they would leave no CPU).
        self.claims.observe(&self.root, &sample.isolation.claims, &planned.refused_claims);
        self.records.claims = self.claims.held();
        self.records.refused_claims = self.claims.refused();
        self.records.counters.claims = self.records.claims.len() as u64;
        self.records.counters.claims_refused = self.records.refused_claims.len() as u64;
        self.records.counters.claimed_cpus = self.claims.cpus().len() as u64;
        self.balancer.take_candidates(std::mem::take(&mut planned.load_candidates));
        self.records.away = self.balancer.moved().values().cloned().collect();
        self.records.counters.load_moves = self.balancer.moves;
        self.records.counters.load_returns = self.balancer.returns;
        self.records.counters.away_from_home = self.records.away.len() as u64;
        // Drift from what this daemon placed, read once for the three rules that judge it.
        let drift = self.records.ledger.drift(&planned.plan);
        let proc_irq = ProcIrq::new(self.root.clone());
        let drift = read_again(&mut planned.plan, drift, &sample.kernel_facts, &|irq| proc_irq.read_current(irq).ok());
        self.note_kernel_rewrites(&planned, &sample, &drift);
        let drift = others_drift(drift, self.reader.hotplugged());
        if self.config.global.on_drift == OnDrift::Respect {
            self.respect_owners(&mut planned, &sample, &drift);
        } else {
            self.stop_fights(&mut planned, &sample, &drift);
        }
        let respect = self.config.global.on_drift == OnDrift::Respect;
        self.originals.give_back_napi(&mut planned.plan);
        self.records.napi_profiles.observe(&mut planned.plan, respect);
        self.irqbalance.leave_banned(&mut planned.plan);
        self.last_forbidden = planned.forbidden.cpus();
        self.reader.give_back(sample.devices);
        Ok(planned)
    }

    /// Saves the topology memory for a restart and for `irqwise plan`; a failure is said once.
    fn save_memory(&mut self) {
        let bytes = memory_file::encode(&self.root, &self.memory);
        match self.root.replace_own_file(Path::new(memory_file::MEMORY_FILE), &bytes, 0o644, true) {
            Ok(()) => {
                self.memory_failed.worked();
            }
            Err((path, e)) => {
                if self.memory_failed.failed(()) {
                    tracing::warn!(
                        "cannot write {}: {e}; a restart while CPUs are offline may move queues",
                        path.display()
                    );
                }
            }
        }
    }

    /// What the kernel and drivers write, for telling their rewrites from other owners'.
    fn kernel_defaults(&self, planned: &PlannedPass, sample: &Sample) -> KernelDefaults {
        KernelDefaults {
            online: planned.topology.online.clone(),
            default_affinity: sample.default_affinity.clone(),
            hints: sample
                .devices
                .iter()
                .flat_map(|d| &d.vectors)
                .filter_map(|v| Some((v.irq, v.hint.clone()?)))
                .collect(),
            hotplug_writers: hotplug_writers(&planned.plan, self.reader.hotplugged()),
        }
    }

    /// The drifted IRQs whose mask is the kernel's CPU-offline fallback (every placed CPU offline
    /// now, or the mask is exactly the other online CPUs: the CPU came back before the read)
    /// although no CPU event reached this pass in time (a storm of them), or, for a driver that
    /// writes its own spread as the masks ([`MaskKeeper::DriverSpread`]: virtio_net on `ethtool
    /// -L` and CPU hotplug), its hint or the default affinity: placed again without a drift
    /// warning, as the hotplug rule of [`others_drift`] does with the event in time. For other
    /// drivers a mask of every online CPU stays drift: an operator writes that too.
    fn note_kernel_rewrites(&mut self, planned: &PlannedPass, sample: &Sample, drift: &[Drift]) {
        let online = &planned.topology.online;
        let fallback = |placed: &CpuSet, found: &CpuSet| {
            !placed.intersects(online) || (!found.is_empty() && *found == online.difference(placed))
        };
        let defaults = self.kernel_defaults(planned, sample);
        let spreads = |irq: u32| {
            planned.plan.find_irq(irq).and_then(|(d, _)| d.resets).is_some_and(|r| r.mask == MaskKeeper::DriverSpread)
        };
        // Its hint, or every online CPU (a queue it dropped; the default affinity).
        let driver = |d: &Drift, found: &CpuSet| {
            spreads(d.irq) && classify(d.irq, &d.placed, found, &defaults) != DriftCause::Foreign
        };
        self.records.kernel_rewrites = drift
            .iter()
            .filter(|d| d.found.as_ref().is_some_and(|f| fallback(&d.placed, f) || driver(d, f)))
            .map(|d| d.irq)
            .collect();
    }

    /// Counts this pass's restores of IRQs someone else moved; an IRQ restored too often is left
    /// to the other writer, said once ([`fights`](super::fights)).
    fn stop_fights(&mut self, planned: &mut PlannedPass, sample: &Sample, drift: &[Drift]) {
        let defaults = self.kernel_defaults(planned, sample);
        let root = self.root.clone();
        let now = self.started_at.elapsed().as_secs_f64();
        let mut writer = || known_irq_writer(&root);
        let runs = |pid: u32, name: &str| irq_writer_runs(&root, pid, name);
        let news = self.fights.observe(&mut planned.plan, drift, &defaults, now, &mut writer, &runs);
        self.records.counters.fought_irqs = self.fights.len() as u64;
        for n in news {
            match n {
                FightNews::Stopped(f) => {
                    let who = f.writer.as_ref().map_or_else(
                        || "no known IRQ tuner runs (a script, another daemon?)".to_string(),
                        |(pid, name)| format!("{name} (pid {pid}) runs and writes {}", what_it_writes(name)),
                    );
                    tracing::warn!(
                        message_id = super::catalog::FIGHT_DETECTED,
                        irq = f.irq,
                        irq_name = f.name.as_deref().unwrap_or(""),
                        device = f.device.as_str(),
                        cpus_placed = f.placed.to_list_string().as_str(),
                        cpus_found = f.mask.to_list_string().as_str(),
                        writer = f.writer.as_ref().map_or("", |(_, name)| name.as_str()),
                        "irq {} ({}) of {}: someone else keeps writing it ({} -> {} after {} restores in {} minutes; {who}); no longer restored, left as they set it until SIGHUP",
                        f.irq,
                        crate::text::printable(f.name.as_deref().unwrap_or("")),
                        f.device,
                        f.placed,
                        f.mask,
                        f.restores,
                        super::fights::FIGHT_WINDOW_SECS / 60.0
                    );
                }
                FightNews::Resumed(f, why) => tracing::info!(
                    irq = f.irq,
                    device = f.device.as_str(),
                    "irq {} of {}: {why}; irqwise places it again",
                    f.irq,
                    f.device
                ),
            }
        }
    }

    /// Takes this pass's drift into the respected set (logging each IRQ newly left to another
    /// owner, and each given back), and turns every respected IRQ of the plan into a `skip` that
    /// keeps its mask; transmit steering follows those IRQs where they are.
    fn respect_owners(&mut self, planned: &mut PlannedPass, sample: &Sample, drift: &[Drift]) {
        let defaults = self.kernel_defaults(planned, sample);
        let root = self.root.clone();
        let mut peers: Option<Option<String>> = None;
        // Read /proc once per pass, and only when some drift needs an owner.
        let mut owner = || peers.get_or_insert_with(|| likely_writer(&running_peers(&root))).clone();
        let news = self.respected.observe(&mut planned.plan, drift, &defaults, &mut owner);
        self.records.left_to_others = self.respected.left();
        self.records.counters.left_by_owner = BTreeMap::new();
        for l in &self.records.left_to_others {
            *self.records.counters.left_by_owner.entry(l.owner.clone()).or_default() += 1;
        }
        for d in &mut planned.plan.devices {
            let moved: BTreeMap<u32, CpuSet> = d
                .irqs
                .iter()
                .filter(|p| self.respected.contains(p.irq))
                .filter(|p| matches!(p.role, QueueRole::Tx | QueueRole::RxTx))
                .filter_map(|p| Some((p.queue?, p.current.clone()?)))
                .collect();
            if let Some(x) = d.xps.as_mut().filter(|_| !moved.is_empty()) {
                crate::plan::xps_plan::re_anchor(&planned.topology, x, &moved);
            }
        }
        for news in news {
            match news {
                RespectNews::Respected(o) => tracing::warn!(
                    irq = o.irq,
                    device = o.device.as_str(),
                    writer = o.owner.as_deref().unwrap_or(""),
                    "irq {} ({}) of {}: moved from {} to {} by {}; left as it is (on_drift = respect) until the device goes away or the configuration is reloaded",
                    o.irq,
                    crate::text::printable(o.name.as_deref().unwrap_or("")),
                    o.device,
                    o.placed,
                    o.mask,
                    o.owner_words()
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
    }

    /// Writes the plan: the original masks of what it changes are on disk before the first
    /// write that changes them; the IRQs written are read again by the next pass.
    fn apply(&mut self, planned: PlannedPass, probing: bool) -> Applied {
        let plan = planned.plan;
        let root = &self.root;
        // IRQs of no device stay recorded: the guard moved them, restore_on_exit puts them back.
        let present = |bdf: &str| {
            bdf == crate::devices::NO_DEVICE || root.exists(format!("{}/{bdf}", crate::devices::discover::PCI_DEVICES))
        };
        if self.originals.note_plan(&plan, &present) {
            match self.originals.save(&self.root) {
                Ok(()) => {
                    self.originals_failed.worked();
                }
                Err(e) => {
                    if self.originals_failed.failed(()) {
                        tracing::warn!("{e}; restore_on_exit would not know these IRQs' masks after a restart");
                    }
                }
            }
        }
        let report = apply_whole(&plan, &self.root, &mut self.napi_writer);
        // What a write leaves (its mask, the effective mask the kernel picked) is read again.
        self.reader.stale_irqs(plan.writes().map(|(_, p)| p.irq));
        self.known_managed.extend(report.learned_managed.iter().copied());
        let probe = if probing && report.changes.is_empty() {
            probe_target(&plan).and_then(|(irq, cpus)| probe(&ProcIrq::new(self.root.clone()), irq, &cpus))
        } else {
            None
        };
        Applied { plan, report, probe }
    }
}
