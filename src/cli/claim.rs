//! `irqwise claim --cpus LIST --owner NAME [--pid PID]` and `irqwise release --owner NAME`:
//! write or remove a claim file (`ROOT/run/irqwise/claims/NAME`, the format in
//! [`crate::topology::claims`]), then wait until the running daemon's state file shows the
//! pass that applied it, like `reload`: when the command returns, the IRQs have left the CPUs
//! (or come back). Without a running daemon the file is written all the same: the daemon's
//! first pass takes it.

use std::path::Path;
use std::time::Duration;

use super::{CliError, Outcome};
use crate::config::{load_config, Config, ConfigPaths};
use crate::daemon::claims::HeldClaim;
use crate::daemon::state::{read_state, StateFile};
use crate::daemon::state_view::is_writer;
use crate::plan::held_claims::hold_claims;
use crate::sysfs::processes::process_identity;
use crate::sysfs::Root;
use crate::topology::claims::{claim_cpus, owner_problem, render_claim, Claim, ClaimRead, RefusedClaim};
use crate::topology::discover::claims::CLAIMS_DIR;
use crate::topology::discover::isolation::read_isolation_configured;
use crate::topology::discover::kubelet::KubeletMemory;
use crate::topology::discover::read_topology;
use crate::topology::Topology;

/// The lock `claim` holds while it checks and writes, beside the claims directory (a file in it
/// would wake the daemon's watch).
const CLAIMS_LOCK: &str = "run/irqwise/claims.lock";

/// How often the state file (or the claims lock) is polled while waiting.
const POLL: Duration = Duration::from_millis(10);

/// The least `claim` waits for the claims lock, even with `--timeout 0`.
const LOCK_WAIT_AT_LEAST: Duration = Duration::from_secs(1);

/// `irqwise claim`: exit 0 once the daemon holds the claim (or no daemon runs), 2 for a bad
/// owner, CPU list or pid, 1 when the claim cannot hold (with it, beside the bans, the isolated
/// CPUs and the older claims, no online CPU would be left for device IRQs: the daemon would
/// refuse it) or the daemon did not take it in time. Claims are checked and written one at a
/// time (a lock beside the claims directory), so two at once cannot both pass the check.
pub fn claim(
    root: &Root,
    paths: &ConfigPaths,
    owner: &str,
    cpus: &str,
    pid: Option<u32>,
    timeout: Duration,
) -> Result<Outcome, CliError> {
    if let Some(problem) = owner_problem(owner) {
        return Err(CliError::Usage(format!("--owner: {problem}")));
    }
    let topo = read_topology(root)?;
    let cpus = claim_cpus(cpus, &topo.possible).map_err(|e| CliError::Usage(format!("--cpus {cpus}: {e}")))?;
    let pid_start = match pid {
        None => None,
        Some(p) => Some(
            process_identity(p)
                .ok_or_else(|| CliError::Usage(format!("--pid {p}: no such process (no /proc/{p})")))?
                .start,
        ),
    };
    let mut stderr = String::new();
    // The daemon plans with the configuration it loaded; one that cannot be loaded here is
    // checked against the defaults, and said.
    let config = load_config(root, paths).unwrap_or_else(|e| {
        stderr.push_str(&format!("warning: configuration not usable ({e}); the claim is checked without its bans\n"));
        Config::default()
    });
    let claim = Claim { owner: owner.to_string(), cpus, pid, pid_start };
    let lock = lock_claims(root, timeout)?;
    if let Some(refused) = refused_beside_the_others(root, &config, &topo, &claim) {
        return Err(CliError::Failed(format!("{}; not claimed", refused.reason)));
    }
    let daemon = running_daemon(root);
    let rel = format!("{CLAIMS_DIR}/{owner}");
    root.replace_own_file(Path::new(&rel), render_claim(&claim).as_bytes(), 0o644, false)
        .map_err(|(path, e)| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    drop(lock);
    let life = pid.map_or_else(|| "until released".to_string(), |p| format!("while pid {p} runs"));
    let said = format!("claimed CPUs {} for {owner} ({life})", claim.cpus);
    let want = HeldClaim { owner: owner.to_string(), cpus: claim.cpus.to_list_string(), pid };
    let taken = |s: &StateFile<'static>| s.claims.contains(&want) || s.refused_claims.iter().any(|r| r.owner == owner);
    let mut outcome = finish(root, daemon, timeout, &said, owner, taken)?;
    if let Some(state) = running_daemon(root) {
        if let Some(r) = state.refused_claims.iter().find(|r| r.owner == owner && !state.claims.contains(&want)) {
            // Refused by the daemon after all (its configuration or the isolation changed since
            // the check): the file goes, so the claim does not come alive later unannounced.
            let _ = root.remove_own_file(Path::new(&rel));
            return Err(CliError::Failed(format!(
                "irqwise (pid {}) refused it: {}; the claim file is removed",
                state.pid, r.reason
            )));
        }
    }
    outcome.stderr.insert_str(0, &stderr);
    Ok(outcome)
}

/// Takes the lock every `claim` holds while it checks the claims and writes its own, waiting
/// for it at most `timeout` (and at least [`LOCK_WAIT_AT_LEAST`]: another `claim` holds it for
/// the milliseconds of its check); released when dropped (or the process ends). Past that, an
/// error naming the lock file: a process that holds it for good (a hung hook) cannot make
/// `claim`, and the container start waiting on it, hang.
fn lock_claims(root: &Root, timeout: Duration) -> Result<std::fs::File, CliError> {
    let rel = Path::new(CLAIMS_LOCK);
    let file = root
        .open_own_file(rel, 0o644)
        .map_err(|(path, e)| CliError::Failed(format!("cannot open {}: {e}", path.display())))?;
    let patience = timeout.max(LOCK_WAIT_AT_LEAST);
    let deadline = super::deadline_after(patience);
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) if !super::is_past(deadline) => {
                std::thread::sleep(POLL);
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(CliError::Failed(format!(
                    "cannot lock {} within {} s: another process holds it (another irqwise claim, or one that hangs); nothing claimed",
                    root.path(rel).display(),
                    patience.as_secs()
                )))
            }
            Err(e) => return Err(CliError::Failed(format!("cannot lock {}: {e}", root.path(rel).display()))),
        }
    }
}

/// The refusal `claim` would get as the newest claim, beside the live claims of other owners
/// (oldest first) and what the configuration and the isolation keep free, as the daemon
/// decides it ([`hold_claims`]).
fn refused_beside_the_others(root: &Root, config: &Config, topo: &Topology, claim: &Claim) -> Option<RefusedClaim> {
    let kubelet = config.global.kubelet_cpu_manager_state.as_deref();
    let (mut isolation, _) = read_isolation_configured(root, topo, kubelet, &mut KubeletMemory::default());
    let mine = |c: &ClaimRead| c.claim.owner == claim.owner;
    isolation.claims.retain(|c| !mine(c));
    isolation.sources.retain(|s| s.claim_owner() != Some(claim.owner.as_str()));
    isolation.claims.push(ClaimRead { claim: claim.clone(), path: String::new(), ended: None, written: None });
    let (_, refused) = hold_claims(&isolation, config, topo);
    refused.into_iter().find(|r| r.owner == claim.owner)
}

/// `irqwise release`: exit 0 once the daemon no longer holds the claim (or no daemon runs), 1
/// when there is no such claim or the daemon did not release it in time.
pub fn release(root: &Root, owner: &str, timeout: Duration) -> Result<Outcome, CliError> {
    if let Some(problem) = owner_problem(owner) {
        return Err(CliError::Usage(format!("--owner: {problem}")));
    }
    let rel = format!("{CLAIMS_DIR}/{owner}");
    if !root.exists(&rel) {
        let names = root.list_dir_optional(CLAIMS_DIR).unwrap_or_default();
        let names: Vec<String> = names.into_iter().filter(|n| !n.starts_with('.')).collect();
        let known = if names.is_empty() { "there is none".to_string() } else { names.join(", ") };
        return Err(CliError::Failed(format!(
            "no claim of {owner} in {} (claims: {known})",
            root.path(CLAIMS_DIR).display()
        )));
    }
    let daemon = running_daemon(root);
    root.remove_own_file(Path::new(&rel))
        .map_err(|(path, e)| CliError::Failed(format!("cannot remove {}: {e}", path.display())))?;
    let said = format!("released the claim of {owner}");
    finish(root, daemon, timeout, &said, owner, |s: &StateFile<'static>| !s.claims.iter().any(|c| c.owner == owner))
}

/// After the file changed: waits for the daemon's pass that shows it (`done`), and says so.
fn finish(
    root: &Root,
    daemon: Option<StateFile<'static>>,
    timeout: Duration,
    said: &str,
    owner: &str,
    done: impl Fn(&StateFile<'static>) -> bool,
) -> Result<Outcome, CliError> {
    let Some(before) = daemon else {
        if let Some(pid) = daemon_without_state(root) {
            return wait_without_state(root, pid, timeout, said, &done);
        }
        return Ok(Outcome::ok(format!("{said}; no irqwise daemon runs here: its first pass takes it\n")));
    };
    if timeout.is_zero() {
        return Ok(Outcome::ok(format!("{said}; irqwise (pid {}) takes it at its next pass\n", before.pid)));
    }
    let state = wait_for(root, before.pid, before.passes, timeout, &done)
        .map_err(|e| CliError::Failed(format!("{said}, but {e}")))?;
    // The plan's warnings that name the owner (a node left without a usable CPU, a void claim).
    let stderr: String = state
        .plan
        .warnings
        .iter()
        .filter(|w| w.contains(owner))
        .fold(String::new(), |acc, w| acc + "warning: " + w + "\n");
    Ok(Outcome {
        text: format!("{said}; irqwise (pid {}) applied it in pass {}: {}\n", state.pid, state.passes, state.status),
        stderr,
        exit: 0,
    })
}

/// The state of the daemon that runs on `root`, when one does (its process is the one the
/// state file names).
pub(super) fn running_daemon(root: &Root) -> Option<StateFile<'static>> {
    let (_, view) = read_state(root).ok().flatten()?;
    let now = process_identity(view.pid)?;
    is_writer(&view, &now).then_some(view)
}

/// A daemon runs (`pid`, by its lock) but its state file names no running daemon: waits up to
/// `timeout` for a state of `pid` that satisfies `done` (a daemon starting writes its first);
/// otherwise says why it cannot tell, exit 1 (exit 0 without waiting: it takes it at its next
/// pass).
fn wait_without_state(
    root: &Root,
    pid: u32,
    timeout: Duration,
    said: &str,
    done: &impl Fn(&StateFile<'static>) -> bool,
) -> Result<Outcome, CliError> {
    let why = || match read_state(root) {
        Ok(None) => "there is none yet".to_string(),
        Ok(Some(_)) => "it is another process's".to_string(),
        Err(e) => e.to_string(),
    };
    if timeout.is_zero() {
        return Ok(Outcome::ok(format!(
            "{said}; irqwise (pid {pid}) takes it at its next pass (its state file cannot be read now: {})\n",
            why()
        )));
    }
    let state = wait_for(root, pid, 0, timeout, done).map_err(|_| {
        CliError::Failed(format!(
            "{said}, but irqwise (pid {pid}) runs and its state file cannot tell whether it took it: {}",
            why()
        ))
    })?;
    Ok(Outcome::ok(format!("{said}; irqwise (pid {pid}) applied it in pass {}: {}\n", state.passes, state.status)))
}

/// The pid of an irqwise daemon of `root` whose state file gave no running daemon (unreadable,
/// damaged, not written yet): the pid its instance lock names, when that process is irqwise.
fn daemon_without_state(root: &Root) -> Option<u32> {
    let text = root.read_small_optional(crate::daemon::lock::LOCK_FILE).ok().flatten()?;
    let pid: u32 = text.trim().parse().ok()?;
    (crate::sysfs::processes::process_name(pid).as_deref() == Some(crate::sysfs::processes::DAEMON_NAME)).then_some(pid)
}

/// Polls the state file until a pass of daemon `pid` later than pass `after` satisfies `done`.
fn wait_for(
    root: &Root,
    pid: u32,
    after: u64,
    timeout: Duration,
    done: &impl Fn(&StateFile<'static>) -> bool,
) -> Result<StateFile<'static>, String> {
    let deadline = super::deadline_after(timeout);
    loop {
        if let Some((_, s)) = read_state(root).ok().flatten() {
            if s.pid == pid && s.passes > after && done(&s) {
                return Ok(s);
            }
        }
        if process_identity(pid).is_none() {
            return Err(format!("irqwise (pid {pid}) exited before it took the change"));
        }
        if super::is_past(deadline) {
            return Err(format!("irqwise (pid {pid}) shows no pass that took it after {} s", timeout.as_secs()));
        }
        std::thread::sleep(POLL);
    }
}
