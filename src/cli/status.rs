//! `irqwise status [--json]`: what the running daemon last did, from its state file.

use super::{CliError, Outcome};
use crate::daemon::peers::process_exists;
use crate::daemon::state::STATE_FILE;
use crate::daemon::state_view::{read_state, render_status};
use crate::daemon::unix_now;
use crate::sysfs::Root;

/// `irqwise status [--json]`, with `systemctl status`'s exit codes: 0 when the daemon that wrote
/// the state file runs and does its job, 3 when it does not run (no state file, or its process
/// is gone), 1 when it runs degraded (its last pass failed, or every write of it did) or the
/// state file cannot be read.
pub fn status(root: &Root, json: bool) -> Result<Outcome, CliError> {
    const NOT_RUNNING: u8 = 3;
    const DEGRADED: u8 = 1;
    let Some((text, view)) = read_state(root).map_err(|e| CliError::Failed(e.to_string()))? else {
        let stderr = format!("irqwise is not running (no {})\n", root.path(STATE_FILE).display());
        return Ok(Outcome { text: String::new(), stderr, exit: NOT_RUNNING });
    };
    let alive = i32::try_from(view.pid).is_ok_and(process_exists);
    let exit = match (alive, &view.degraded) {
        (false, _) => NOT_RUNNING,
        (true, Some(_)) => DEGRADED,
        (true, None) => 0,
    };
    if json {
        return Ok(Outcome::with_exit(text, exit));
    }
    Ok(Outcome::with_exit(render_status(&view, unix_now(), alive), exit))
}
