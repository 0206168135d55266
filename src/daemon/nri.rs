//! The daemon's side of the NRI plugin (`nri = true`, [`crate::events::nri`]): the claims the
//! runtime's containers ask for ([`super::nri_claims`]) written as runtime claims, and the
//! connection's news said once.
//!
//! Guarantees:
//! - each claim wanted is a file `/run/irqwise/claims/nri:…` with the container's cpuset and,
//!   when this daemon sees the container's process, its pid and start time (the claim then ends
//!   with the container even if the runtime's stop is never heard); a file already saying the
//!   same is left as it is (its age keeps its place in the admission order); the claims' watch
//!   runs the pass, never this code;
//! - once a Synchronize was taken, every `nri:` claim it does not ask for is removed; before
//!   that, those an earlier daemon left are kept (the runtime's first Synchronize decides);
//! - with `nri = false`, `nri:` claims an earlier daemon left are removed at start;
//! - a line names the pod and container (`namespace/pod/container`) and the reason, never an
//!   annotation's value beyond CRI-O's word, an environment or a label; the connection's
//!   problems and an annotation not followed are each said once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::nri_claims::{plan, Why, OWNER_PREFIX};
use super::nri_link::NriEvent;
use super::parts::Daemon;
use crate::cpuset::CpuSet;
use crate::events::nri::{self, NriNote, NriProblem};
use crate::sysfs::processes::process_identity;
use crate::topology::claims::{render_claim, Claim};
use crate::topology::discover::claims::CLAIMS_DIR;

/// A claim file's owner is NRI's.
fn is_nri_owner(name: &str) -> bool {
    name.starts_with(OWNER_PREFIX)
}

impl Daemon {
    /// At start: with `nri`, connects to the runtime's socket below the root; without, removes
    /// the `nri:` claims an earlier daemon left.
    pub(super) fn open_nri(&mut self) {
        if !self.config.global.nri {
            for owner in self.nri_claim_files() {
                self.remove_nri_claim(&owner, "nri is off (nri = false)");
            }
            return;
        }
        let path = self.root.path(&self.config.global.nri_socket);
        self.nri.socket = path.display().to_string();
        tracing::info!(
            "NRI: connecting to the container runtime at {} as plugin {}-{}",
            self.nri.socket,
            nri::PLUGIN_INDEX,
            nri::PLUGIN_NAME
        );
        match nri::start(path) {
            Ok(source) => self.nri.source = Some(source),
            Err(e) => tracing::warn!("NRI: {e}; irqwise runs on without it"),
        }
    }

    /// Takes the plugin's note or change.
    pub(super) fn nri_event(&mut self, event: NriEvent) {
        match event {
            NriEvent::Note(note) => self.nri_note(note),
            NriEvent::Changed => self.nri_update(),
        }
    }

    /// Says what the connection did, each problem once.
    fn nri_note(&mut self, note: NriNote) {
        match note {
            NriNote::Synchronized { runtime, version, pods, containers } => {
                self.nri.link.worked();
                let again = self.nri.synchronized_once;
                let (runtime, version) = (crate::text::printable(&runtime), crate::text::printable(&version));
                tracing::info!(
                    "NRI: {} {runtime} {version} at {}: {pods} pod(s), {containers} container(s) synchronized",
                    if again { "connected again to" } else { "registered with" },
                    self.nri.socket
                );
                self.nri.synchronized_once = true;
            }
            NriNote::Unavailable(problem) => {
                if self.nri.link.failed(problem.clone()) {
                    let retry = format!("retried every {:?} at most; irqwise runs on without it", nri::MAX_BACKOFF);
                    let socket = &self.nri.socket;
                    // The runtime's words (a method's name, its refusal) may hold anything.
                    let words = |why: &str| crate::text::printable(why).into_owned();
                    match &problem {
                        NriProblem::Absent => tracing::warn!(
                            "NRI: no runtime socket at {socket} (no containerd or CRI-O here, or NRI off in it); {retry}"
                        ),
                        NriProblem::Refused(why) => tracing::warn!("NRI: cannot connect to {socket}: {}; {retry}", words(why)),
                        NriProblem::Rejected(why) => {
                            tracing::warn!("NRI: the runtime at {socket} refused the plugin: {}; {retry}", words(why));
                        }
                        NriProblem::Lost(why) => tracing::warn!(
                            "NRI: the connection to the runtime at {socket} ended ({}); the claims stay until its next Synchronize; {retry}",
                            words(why)
                        ),
                        NriProblem::Garbage(why) => tracing::warn!(
                            "NRI: the runtime at {socket} sent what is not NRI ({}): connection dropped; {retry}",
                            words(why)
                        ),
                        NriProblem::Silent => tracing::warn!(
                            "NRI: the runtime at {socket} did not configure and synchronize the plugin in time; {retry}"
                        ),
                        NriProblem::Shutdown => tracing::info!(
                            "NRI: the runtime at {socket} shuts down; the claims stay until its next Synchronize"
                        ),
                    }
                }
            }
            NriNote::LeftOut(n) => {
                if self.nri.left_out.failed(()) {
                    tracing::warn!(
                        "NRI: the runtime reports more than {} pods or {} containers: {n} and any more are not followed",
                        nri::view::MAX_PODS,
                        nri::view::MAX_CONTAINERS
                    );
                }
            }
        }
    }

    /// The view changed (or the configuration): writes the claims it asks for and removes those
    /// it no longer asks for.
    pub(super) fn nri_update(&mut self) {
        let Some(source) = self.nri.source.as_mut() else { return };
        let topology = self.reader.topology();
        let siblings = |cpu: u32| {
            let mut s = topology.map_or_else(CpuSet::new, |t| t.sibling_mask(cpu));
            s.insert(cpu);
            s
        };
        let (wanted, synced) = {
            let view = source.view.borrow_and_update();
            if view.left_out == 0 {
                self.nri.left_out.worked();
            }
            (plan(&view, self.config.global.nri_exclusive_cpus, &siblings), view.synced)
        };
        let skipped: BTreeMap<String, String> =
            wanted.skipped.iter().map(|s| (s.container_id.clone(), s.reason.clone())).collect();
        for s in &wanted.skipped {
            if self.nri.skipped.get(&s.container_id) != Some(&s.reason) {
                let key = nri::view::IRQ_ANNOTATION;
                tracing::info!("NRI: container {} is annotated {key} but {}: nothing claimed", s.who, s.reason);
            }
        }
        self.nri.skipped = skipped;
        let mut alive = BTreeSet::new();
        for w in &wanted.wanted {
            let identity = w.pid.and_then(|p| process_identity(p).map(|id| (p, id.start)));
            if let Some((p, _)) = identity {
                alive.insert(p);
            } else if w.pid.is_some_and(|p| self.nri.seen_alive.contains(&p)) {
                continue; // its process ended: the claim went with it
            }
            let claim = Claim {
                owner: w.owner.clone(),
                cpus: w.cpus.clone(),
                pid: identity.map(|i| i.0),
                pid_start: identity.map(|i| i.1),
            };
            self.write_nri_claim(&claim, &w.who, &w.why);
        }
        self.nri.seen_alive = alive;
        if synced {
            let keep: BTreeSet<&str> = wanted.wanted.iter().map(|w| w.owner.as_str()).collect();
            for owner in self.nri_claim_files() {
                if !keep.contains(owner.as_str()) {
                    self.remove_nri_claim(&owner, "the runtime no longer runs it, or it no longer asks");
                }
            }
        }
        // Claims released by their process's exit are forgotten here too: `held` stays as small
        // as the claims' directory.
        let files = self.nri_claim_files();
        self.nri.held.retain(|owner, _| files.contains(owner));
    }

    /// The `nri:` claim files under the claims' directory.
    fn nri_claim_files(&self) -> Vec<String> {
        let names = self.root.list_dir_optional(CLAIMS_DIR).unwrap_or_default();
        names.into_iter().filter(|n| is_nri_owner(n)).collect()
    }

    /// Writes `claim` unless its file already says the same.
    fn write_nri_claim(&mut self, claim: &Claim, who: &str, why: &Why) {
        let rel = format!("{CLAIMS_DIR}/{}", claim.owner);
        let text = render_claim(claim);
        if self.root.read_small_optional(&rel).ok().flatten().as_deref() == Some(text.as_str()) {
            self.nri.held.insert(claim.owner.clone(), (who.to_string(), why.clone()));
            return;
        }
        match self.root.replace_own_file(Path::new(&rel), text.as_bytes(), 0o644, false) {
            Ok(()) => {
                let pid = claim.pid.map_or_else(String::new, |p| format!(" while pid {p} runs"));
                tracing::info!(
                    claim = claim.owner.as_str(),
                    cpus = claim.cpus.to_list_string().as_str(),
                    "NRI: container {who} ({}): CPUs {}{pid} claimed as {}",
                    why.describe(),
                    claim.cpus,
                    claim.owner
                );
                self.nri.held.insert(claim.owner.clone(), (who.to_string(), why.clone()));
            }
            Err((path, e)) => tracing::warn!("NRI: container {who}: cannot write {}: {e}", path.display()),
        }
    }

    /// Removes the claim of `owner`, saying whose it was.
    fn remove_nri_claim(&mut self, owner: &str, why: &str) {
        let rel = format!("{CLAIMS_DIR}/{owner}");
        let whose = match self.nri.held.remove(owner) {
            Some((who, _)) => format!("container {who}"),
            None => "a container".into(),
        };
        match self.root.remove_own_file(Path::new(&rel)) {
            Ok(()) => tracing::info!(claim = owner, "NRI: claim {owner} of {whose} released ({why})"),
            Err((path, e)) => tracing::warn!("NRI: cannot remove {}: {e}", path.display()),
        }
    }
}
