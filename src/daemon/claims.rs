//! The runtime claims as the daemon follows them (`irqwise claim`, files under
//! `/run/irqwise/claims`, see [`crate::topology::claims`]).
//!
//! Guarantees:
//! - every pass reads the claims afresh (they are isolation sources), so a claim written,
//!   changed or removed is planned by the next pass; the inotify watch on the directory runs
//!   that pass at once, the reconcile timer at the latest;
//! - a claim whose process exited is released: its file removed (unless it was rewritten since)
//!   and said once; the exit itself runs a pass at once, through a pidfd per claimed process
//!   (at start too: a claim whose process died while no daemon ran is released by the first pass);
//! - each claim taken, changed or released is logged once; the claims held are in the state
//!   file, so `irqwise claim` can wait until they are applied.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cpuset::{CpuSet, MAX_CPUS};
use crate::events::pidfd;
use crate::sysfs::processes::process_identity;
use crate::sysfs::Root;
use crate::topology::claims::{parse_claim, Claim, ClaimRead, RefusedClaim};
use crate::topology::discover::claims::CLAIMS_DIR;

/// A claim the last pass held, as the state file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeldClaim {
    pub owner: String,
    /// A kernel CPU list.
    pub cpus: String,
    pub pid: Option<u32>,
}

impl HeldClaim {
    fn of(claim: &Claim) -> HeldClaim {
        HeldClaim { owner: claim.owner.clone(), cpus: claim.cpus.to_list_string(), pid: claim.pid }
    }

    /// `CPUs 4-5 (pid 123)` for the log and `status`.
    pub fn describe(&self) -> String {
        match self.pid {
            Some(pid) => format!("CPUs {} while pid {pid} runs", self.cpus),
            None => format!("CPUs {} until released", self.cpus),
        }
    }
}

/// What changed among the claims this pass, for the journal ([`super::journal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimNews {
    /// A live claim newly refused (it would leave no CPU); it may have held until now.
    Refused { refused: RefusedClaim, held_until_now: bool },
    /// A claim newly held.
    Held(HeldClaim),
    /// A held claim whose CPUs or process changed.
    Changed { now: HeldClaim, was: HeldClaim },
    /// A held claim whose file was removed.
    Removed(HeldClaim),
    /// A claim whose process exited (`why`), its file removed: its `cpus` are free again.
    Released { owner: String, why: String, cpus: CpuSet },
    /// A claim whose process exited (`why`), but whose file at `path` could not be removed.
    Unremovable { owner: String, why: String, path: PathBuf, error: String },
}

/// What the daemon knows of the claims: those held, and a watch on each claimed process.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    held: BTreeMap<String, HeldClaim>,
    /// The live claims the last pass refused (with them no CPU would be left), by owner.
    refused: BTreeMap<String, RefusedClaim>,
    /// A task per claimed process, sending its pid on `exits` when it exits.
    watching: BTreeMap<u32, JoinHandle<()>>,
    exits: Option<mpsc::UnboundedSender<u32>>,
    /// How many processes may be watched at once (a pidfd each, [`super::descriptors`]).
    budget: usize,
    /// Whether claimed processes past `budget` went unwatched (said once, until all fit again).
    over_budget: bool,
}

impl Drop for Claims {
    fn drop(&mut self) {
        for task in self.watching.values() {
            task.abort();
        }
    }
}

impl Claims {
    /// From now on, each claimed process's exit is sent on `exits` (the event loop's; the
    /// watches are tasks of its runtime).
    /// At most `budget` processes are watched (a pidfd each); the exits of the others are seen
    /// by the reconcile timer.
    pub fn follow_exits(&mut self, exits: mpsc::UnboundedSender<u32>, budget: usize) {
        self.exits = Some(exits);
        self.budget = budget;
    }

    /// The claims the last pass held, by owner.
    pub fn held(&self) -> Vec<HeldClaim> {
        self.held.values().cloned().collect()
    }

    /// The live claims the last pass refused, by owner.
    pub fn refused(&self) -> Vec<RefusedClaim> {
        self.refused.values().cloned().collect()
    }

    /// The CPUs the held claims keep free together.
    pub fn cpus(&self) -> CpuSet {
        self.held.values().filter_map(|c| CpuSet::parse_list(&c.cpus).ok()).fold(CpuSet::new(), |acc, c| acc.union(&c))
    }

    /// Takes a pass's reading of the claim files and the claims its plan refused: releases the
    /// ended ones, watches the processes of the live ones (a refused claim's file is removed when
    /// its process exits too); what changed comes back as news (a refusal once, when it begins).
    pub fn observe(&mut self, root: &Root, read: &[ClaimRead], refused: &[RefusedClaim]) -> Vec<ClaimNews> {
        let mut now = BTreeMap::new();
        let mut refused_now = BTreeMap::new();
        let mut news = Vec::new();
        for c in read {
            match &c.ended {
                Some(why) => news.extend(release_ended(root, c, why)),
                None => match refused.iter().find(|r| r.owner == c.claim.owner) {
                    Some(r) => {
                        refused_now.insert(r.owner.clone(), r.clone());
                    }
                    None => {
                        now.insert(c.claim.owner.clone(), HeldClaim::of(&c.claim));
                    }
                },
            }
        }
        for (owner, r) in &refused_now {
            if self.refused.get(owner) != Some(r) {
                news.push(ClaimNews::Refused { refused: r.clone(), held_until_now: self.held.contains_key(owner) });
            }
        }
        for (owner, claim) in &now {
            match self.held.get(owner) {
                None => news.push(ClaimNews::Held(claim.clone())),
                Some(was) if was != claim => news.push(ClaimNews::Changed { now: claim.clone(), was: was.clone() }),
                Some(_) => {}
            }
        }
        let ended = |owner: &str| read.iter().any(|c| c.claim.owner == owner && c.ended.is_some());
        for (owner, was) in &self.held {
            if !now.contains_key(owner) && !ended(owner) && !refused_now.contains_key(owner) {
                news.push(ClaimNews::Removed(was.clone()));
            }
        }
        self.held = now;
        self.refused = refused_now;
        self.watch(read);
        news
    }

    /// Watches the process of every held claim that has one, and no other.
    fn watch(&mut self, read: &[ClaimRead]) {
        let Some(exits) = self.exits.clone() else { return };
        // The held claims' processes first, then the refused ones' (their files go when they
        // exit), within the budget of descriptors.
        let live = read.iter().filter(|c| c.ended.is_none());
        let (held, refused): (Vec<&ClaimRead>, Vec<&ClaimRead>) =
            live.partition(|c| self.held.contains_key(&c.claim.owner));
        let mut wanted: BTreeMap<u32, Option<u64>> = BTreeMap::new();
        let mut unwatched = 0usize;
        for c in held.into_iter().chain(refused) {
            let Some(pid) = c.claim.pid else { continue };
            if wanted.len() < self.budget || wanted.contains_key(&pid) {
                wanted.insert(pid, c.claim.pid_start);
            } else {
                unwatched += 1;
            }
        }
        if unwatched > 0 && !self.over_budget {
            tracing::warn!(
                "{unwatched} claimed process(es) past the {} irqwise can watch (one descriptor each, RLIMIT_NOFILE): their exits are seen by the reconcile timer",
                self.budget
            );
        }
        self.over_budget = unwatched > 0;
        self.watching.retain(|pid, task| {
            let keep = wanted.contains_key(pid) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for (&pid, &start) in &wanted {
            if self.watching.contains_key(&pid) {
                continue;
            }
            let exits = exits.clone();
            let task = match pidfd::open(pid) {
                // Opened first, checked second: the pidfd is of the process checked.
                Ok(fd) if start.is_none_or(|s| process_identity(pid).is_some_and(|p| p.start == s)) => {
                    tokio::spawn(async move {
                        if let Err(e) = pidfd::exited(fd).await {
                            tracing::warn!(
                                "cannot wait for pid {pid} of a claim ({e}); its exit is seen by the reconcile timer"
                            );
                            return;
                        }
                        let _ = exits.send(pid);
                    })
                }
                Ok(_) => tokio::spawn(async move {
                    let _ = exits.send(pid);
                }),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => tokio::spawn(async move {
                    let _ = exits.send(pid);
                }),
                Err(e) => {
                    tracing::warn!(
                        "cannot watch pid {pid} of a claim (pidfd_open: {e}); its exit is seen by the reconcile timer"
                    );
                    tokio::spawn(std::future::pending::<()>())
                }
            };
            self.watching.insert(pid, task);
        }
    }
}

/// Removes the file of a claim whose process exited, unless it now names another process (a
/// writer replaced it since it was read); what came of it, as news for the journal.
fn release_ended(root: &Root, c: &ClaimRead, why: &str) -> Option<ClaimNews> {
    let rel = format!("{CLAIMS_DIR}/{}", c.claim.owner);
    let any_cpu = CpuSet::first_n(MAX_CPUS);
    let still =
        root.read_small_optional(&rel).ok().flatten().and_then(|t| parse_claim(&c.claim.owner, &t, &any_cpu).ok());
    if still.is_some_and(|now| now.pid != c.claim.pid) {
        return None;
    }
    let (owner, why) = (c.claim.owner.clone(), why.to_string());
    Some(match root.remove_own_file(Path::new(&rel)) {
        Ok(()) => ClaimNews::Released { owner, why, cpus: c.claim.cpus.clone() },
        Err((path, e)) => ClaimNews::Unremovable { owner, why, path, error: e.to_string() },
    })
}
