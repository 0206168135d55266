//! One pass of the daemon: read the stale parts of the sample, plan it, adjust the plan (claims,
//! load refinement, fights, other owners' IRQs with `on_drift = "respect"`, NAPI drift,
//! irqbalance's banned CPUs: their news kept as values in [`Adjusted`]), apply it (the masks it
//! changes recorded on disk first), then hand the outcome to the record ([`super::record`]),
//! which keeps it and says it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use super::adjust::Adjusted;
use super::fights::{hotplug_writers, read_again, FightNews};
use super::journal::Unsaved;
use super::ledger::{others_drift, Drift};
use super::originals::{Originals, ORIGINALS_FILE};
use super::parts::Daemon;
use super::peers::process_exists;
use super::peers::{irq_writer_runs, known_irq_writer, likely_writer, running_peers};
use super::record::{Applied, PassOutcome};
use super::respect::{classify, DriftCause, KernelDefaults, LeftToOther, RespectNews};
use super::state::STATE_FILE;
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
            Ok((planned, adjusted, unsaved)) => Ok(self.apply(planned, adjusted, unsaved, probing)),
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

    /// Reads the sample (what is stale of it), plans it and adjusts the plan; when the topology
    /// cannot be read, on the last one that could (saying so in the plan's warnings) rather
    /// than giving up.
    /// A failure to save the topology memory comes back as news, said once.
    fn read_and_plan(&mut self) -> Result<(PlannedPass, Adjusted, Vec<Unsaved>), ReadError> {
        let sample = self.reader.read(&self.root, self.config.clone())?;
        let mut unsaved = Vec::new();
        if self.memory.remember(&sample.topology) {
            unsaved.extend(self.save_memory());
        }
        let memory = PassMemory { topology: Some(&self.memory), known_managed: &self.known_managed };
        let mut planned = plan_sample_refined(&sample, memory, self.balancer.moved());
        let adjusted = self.adjust(&mut planned, &sample);
        self.reader.give_back(sample.devices);
        Ok((planned, adjusted, unsaved))
    }

    /// The collaborators adjust the plan; what they found comes back as one value, said and
    /// kept by the record after the apply.
    fn adjust(&mut self, planned: &mut PlannedPass, sample: &Sample) -> Adjusted {
        // The claims as planned: those that hold, and those refused (they would leave no CPU).
        let claim_news = self.claims.observe(&self.root, &sample.isolation.claims, &planned.refused_claims);
        self.balancer.take_candidates(std::mem::take(&mut planned.load_candidates));
        // Drift from what this daemon placed, read once for the three rules that judge it.
        let drift = self.records.ledger.drift(&planned.plan);
        let proc_irq = ProcIrq::new(self.root.clone());
        let drift = read_again(&mut planned.plan, drift, &sample.kernel_facts, &|irq| proc_irq.read_current(irq).ok());
        let kernel_rewrites = self.kernel_rewrites(planned, sample, &drift);
        let drift = others_drift(drift, self.reader.hotplugged());
        let respect = self.config.global.on_drift == OnDrift::Respect;
        let (fights, respected) = if respect {
            (None, Some(self.respect_owners(planned, sample, &drift)))
        } else {
            (Some(self.stop_fights(planned, sample, &drift)), None)
        };
        self.originals.give_back_napi(&mut planned.plan);
        let napi = self.records.napi_profiles.judge(&planned.plan, respect);
        napi.leave_in(&mut planned.plan);
        self.irqbalance.leave_banned(&mut planned.plan);
        self.last_forbidden = planned.forbidden.cpus();
        Adjusted {
            claim_news,
            claims: self.claims.held(),
            refused_claims: self.claims.refused(),
            claimed_cpus: self.claims.cpus().len() as u64,
            away: self.balancer.moved().values().cloned().collect(),
            load_moves: self.balancer.moves,
            load_returns: self.balancer.returns,
            kernel_rewrites,
            fights,
            respect: respected,
            napi,
        }
    }

    /// Saves the topology memory for a restart and for `irqwise plan`; a failure comes back to
    /// be said, once.
    fn save_memory(&mut self) -> Option<Unsaved> {
        let bytes = memory_file::encode(&self.root, &self.memory);
        match self.root.replace_own_file(Path::new(memory_file::MEMORY_FILE), &bytes, 0o644, true) {
            Ok(()) => {
                self.memory_failed.worked();
                None
            }
            Err((path, e)) => self.memory_failed.failed(()).then(|| Unsaved::Memory { path, error: e.to_string() }),
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
    fn kernel_rewrites(&self, planned: &PlannedPass, sample: &Sample, drift: &[Drift]) -> BTreeSet<u32> {
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
        drift
            .iter()
            .filter(|d| d.found.as_ref().is_some_and(|f| fallback(&d.placed, f) || driver(d, f)))
            .map(|d| d.irq)
            .collect()
    }

    /// Counts this pass's restores of IRQs someone else moved; an IRQ restored too often is left
    /// to the other writer ([`fights`](super::fights)): what changed, and how many are fought.
    fn stop_fights(&mut self, planned: &mut PlannedPass, sample: &Sample, drift: &[Drift]) -> (Vec<FightNews>, u64) {
        let defaults = self.kernel_defaults(planned, sample);
        let root = self.root.clone();
        let now = self.started_at.elapsed().as_secs_f64();
        let mut writer = || known_irq_writer(&root);
        let runs = |pid: u32, name: &str| irq_writer_runs(&root, pid, name);
        let news = self.fights.observe(&mut planned.plan, drift, &defaults, now, &mut writer, &runs);
        (news, self.fights.len() as u64)
    }

    /// Takes this pass's drift into the respected set, and turns every respected IRQ of the plan
    /// into a `skip` that keeps its mask; transmit steering follows those IRQs where they are.
    /// What changed (IRQs newly left to another owner, and given back), and all those left.
    fn respect_owners(
        &mut self,
        planned: &mut PlannedPass,
        sample: &Sample,
        drift: &[Drift],
    ) -> (Vec<RespectNews>, Vec<LeftToOther>) {
        let defaults = self.kernel_defaults(planned, sample);
        let root = self.root.clone();
        let mut peers: Option<Option<String>> = None;
        // Read /proc once per pass, and only when some drift needs an owner.
        let mut owner = || peers.get_or_insert_with(|| likely_writer(&running_peers(&root))).clone();
        let news = self.respected.observe(&mut planned.plan, drift, &defaults, &mut owner);
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
        (news, self.respected.left())
    }

    /// Writes the plan: the original masks of what it changes are on disk before the first
    /// write that changes them (a failure to save them joins `unsaved`, said once); the IRQs
    /// written are read again by the next pass.
    fn apply(&mut self, planned: PlannedPass, adjusted: Adjusted, mut unsaved: Vec<Unsaved>, probing: bool) -> Applied {
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
                        unsaved.push(Unsaved::Originals(e.to_string()));
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
        Applied { plan, report, probe, adjusted, unsaved }
    }
}
