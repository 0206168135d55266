//! `irqwise status [--json]`: what the running daemon last did, from its state file.

use super::{CliError, Outcome};
use crate::daemon::state::read_state;
use crate::daemon::state::STATE_FILE;
use crate::daemon::state_view::{is_writer, render_status};
use crate::daemon::unix_now;
use crate::sysfs::processes::{process_identity, ProcessIdentity};
use crate::sysfs::Root;

/// `irqwise status [--json]`, with `systemctl status`'s exit codes: 0 when the daemon that wrote
/// the state file runs and does its job, 3 when it does not run (no state file, or its process
/// is gone or is another program), 1 when it runs degraded (its last pass failed, or every write of it did) or the
/// state file cannot be read.
pub fn status(root: &Root, json: bool) -> Result<Outcome, CliError> {
    const NOT_RUNNING: u8 = 3;
    const DEGRADED: u8 = 1;
    let mut stderr = String::new();
    let Some((text, view)) = read_state(root).map_err(|e| CliError::Failed(e.to_string()))? else {
        let stderr = format!("irqwise is not running (no {})\n", root.path(STATE_FILE).display());
        return Ok(Outcome { text: String::new(), stderr, exit: NOT_RUNNING });
    };
    // A pid reused by another program (pid 1 after a reboot without /run cleared, a state file
    // copied from another machine) is not the daemon: the process must be the one the state
    // file names (its name and start time), or, in a file that names none, be irqwise.
    let alive = match process_identity(view.pid) {
        Some(now) if is_writer(&view, &now) => true,
        Some(ProcessIdentity { comm: other, .. }) => {
            stderr = format!(
                "process {} named in {} is not the daemon that wrote it (it runs {other:?}): that daemon is gone\n",
                view.pid,
                root.path(STATE_FILE).display()
            );
            false
        }
        None => false,
    };
    let exit = match (alive, &view.degraded) {
        (false, _) => NOT_RUNNING,
        (true, Some(_)) => DEGRADED,
        (true, None) => 0,
    };
    if json {
        // The daemon's own JSON, with DEL and C1 characters of names escaped like every `--json`.
        let text = crate::text::json_escaped_controls(&text).into_owned();
        return Ok(Outcome { text, stderr, exit });
    }
    Ok(Outcome { text: render_status(&view, unix_now(), alive), stderr, exit })
}
