//! `irqwise reload --pid PID`, the unit's `ExecReload=`: a reload that needs no other program
//! and tells the truth. The configuration is checked first, exactly as `check-config` checks it,
//! so an invalid one fails the reload (exit 2, every error on stderr, which systemd puts in the
//! journal) and the daemon is not even signalled. Otherwise the daemon gets `SIGHUP`, and the
//! command waits until the daemon's state file records the pass of that reload, so that
//! `systemctl reload` returns once the new placement is applied (systemd.service(5) asks
//! `ExecReload=` to be synchronous).

use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::{check_config, CliError, Outcome};
use crate::config::ConfigPaths;
use crate::daemon::state::STATE_FILE;
use crate::daemon::state::{read_state, StateFile};
use crate::sysfs::processes::{process_name, DAEMON_NAME};
use crate::sysfs::Root;

/// How often the state file is polled while waiting for the reload pass.
const POLL: Duration = Duration::from_millis(20);

/// `irqwise reload --pid PID [--timeout SECONDS]`: check, signal, wait (`timeout` zero: do not
/// wait). Exit 0 when the daemon applied the new configuration, 2 when the configuration is
/// invalid (the daemon was not signalled, or rejected it itself), 1 when the daemon could not
/// be signalled or recorded no reload in time.
pub fn reload(root: &Root, paths: &ConfigPaths, pid: u32, timeout: Duration) -> Result<Outcome, CliError> {
    let checked = check_config(root, paths, &[], false, false)?;
    if checked.exit != 0 {
        return Err(CliError::ConfigRejected(format!(
            "configuration invalid; irqwise (pid {pid}) was not signalled and keeps the configuration it has:\n{}{}",
            checked.stderr,
            checked.text.trim_end()
        )));
    }
    let target = daemon_pid(pid)?;
    let before = current_state(root).filter(|s| s.pid == pid).map(|s| s.passes);
    kill(target, Signal::SIGHUP).map_err(|e| CliError::Failed(format!("cannot signal irqwise (pid {pid}): {e}")))?;
    let summary = checked.text.lines().last().unwrap_or_default().to_string();
    // The configuration's warnings (CPUs this machine lacks, ...) go where check-config puts them.
    let warnings = checked.stderr;
    if timeout.is_zero() {
        let text = format!("sent SIGHUP to irqwise (pid {pid}); {summary}\n");
        return Ok(Outcome { text, stderr: warnings, exit: 0 });
    }
    let state = wait_for_reload(root, pid, before, timeout)?;
    if let Some(errors) = state.config_error {
        return Err(CliError::ConfigRejected(format!(
            "irqwise (pid {pid}) rejected the configuration and keeps the previous one:\n{errors}"
        )));
    }
    // A claim the new bans leave no room for is refused from this pass on: said here too.
    let refused = state
        .refused_claims
        .iter()
        .fold(String::new(), |acc, r| acc + "warning: " + &r.reason + ": the claim is refused\n");
    Ok(Outcome {
        text: format!(
            "irqwise (pid {pid}) reloaded the configuration ({summary}); pass {}: {}\n",
            state.passes, state.status
        ),
        stderr: warnings + &refused,
        exit: 0,
    })
}

/// `pid` as a signal target, once `/proc/PID/comm` says it is irqwise (`--pid 1` must not
/// make systemd reload itself).
fn daemon_pid(pid: u32) -> Result<Pid, CliError> {
    let raw = i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| CliError::Failed(format!("--pid {pid}: not a process id")))?;
    match process_name(pid) {
        None => Err(CliError::Failed(format!("--pid {pid}: no such process (no /proc/{pid}/comm)"))),
        Some(name) if name != DAEMON_NAME => {
            Err(CliError::Failed(format!("--pid {pid}: the process is {name:?}, not {DAEMON_NAME}; not signalled")))
        }
        Some(_) => Ok(Pid::from_raw(raw)),
    }
}

/// The state file, when there is a readable one (a missing or foreign file counts as none).
fn current_state(root: &Root) -> Option<StateFile<'static>> {
    read_state(root).ok().flatten().map(|(_, view)| view)
}

/// Whether `state` is what daemon `pid` wrote after a pass that includes a reload, later than
/// pass `before` (the last pass of `pid` seen before the signal, if any).
pub(crate) fn reload_recorded(state: &StateFile<'static>, pid: u32, before: Option<u64>) -> bool {
    state.pid == pid && before.is_none_or(|b| state.passes > b) && state.triggers.iter().any(|t| t == "reload")
}

/// Polls the state file until [`reload_recorded`]; fails when `pid` exits or `timeout` passes.
fn wait_for_reload(
    root: &Root,
    pid: u32,
    before: Option<u64>,
    timeout: Duration,
) -> Result<StateFile<'static>, CliError> {
    let deadline = super::deadline_after(timeout);
    loop {
        if let Some(state) = current_state(root).filter(|s| reload_recorded(s, pid, before)) {
            return Ok(state);
        }
        if std::fs::metadata(format!("/proc/{pid}")).is_err() {
            return Err(CliError::Failed(format!("irqwise (pid {pid}) exited before it recorded the reload")));
        }
        if super::is_past(deadline) {
            return Err(CliError::Failed(format!(
                "sent SIGHUP to irqwise (pid {pid}), but {} records no reload pass after {} s",
                root.path(STATE_FILE).display(),
                timeout.as_secs()
            )));
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pid: u32, passes: u64, triggers: &[&str]) -> StateFile<'static> {
        serde_json::from_value(serde_json::json!({
            "pid": pid, "started": 1, "last_pass": 2, "passes": passes, "triggers": triggers,
            "summary": crate::plan::Summary::default(), "status": "s", "error": null,
            "plan": {"devices": []},
        }))
        .unwrap()
    }

    #[test]
    fn only_a_later_reload_pass_of_the_same_daemon_counts() {
        assert!(reload_recorded(&state(7, 5, &["reload"]), 7, Some(4)));
        assert!(reload_recorded(&state(7, 5, &["cpu", "reload"]), 7, Some(4)), "coalesced with other triggers");
        assert!(reload_recorded(&state(7, 1, &["reload"]), 7, None), "no earlier state of this daemon");
        assert!(!reload_recorded(&state(7, 4, &["reload"]), 7, Some(4)), "the pass seen before the signal");
        assert!(!reload_recorded(&state(7, 5, &["cpu"]), 7, Some(4)), "a pass for another reason");
        assert!(!reload_recorded(&state(8, 9, &["reload"]), 7, None), "another daemon's state");
    }

    #[test]
    fn a_state_file_without_config_error_reads_as_none() {
        assert_eq!(state(7, 1, &["start"]).config_error, None);
    }
}
