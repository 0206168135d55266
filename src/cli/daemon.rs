//! The daemon's commands: `run` starts it, `status` reads what it last did.

use super::{CliError, Outcome};
use crate::config::{ConfigPaths, LogFormat};
use crate::daemon::files::process_exists;
use crate::daemon::state::{read_state, render_status, STATE_FILE};
use crate::daemon::{logging, unix_now, Daemon, DaemonError};
use crate::engine::{load_config_with_warnings, EngineError};
use crate::sysfs::Root;

fn cli_error(e: DaemonError) -> CliError {
    match e {
        DaemonError::Engine(e) => CliError::Engine(e),
        other => CliError::Failed(other.to_string()),
    }
}

/// `irqwise run [--once]`: loads the config (invalid → exit 2), sets up logging (`--log-format`
/// over the config's `log_format`), then runs until stopped. `--once` runs the initial pass and
/// exits (exit 1 if a write failed), without the systemd protocol.
pub fn run(root: &Root, paths: &ConfigPaths, format: Option<LogFormat>, once: bool) -> Result<Outcome, CliError> {
    crate::daemon::malloc::one_arena();
    let (config, warnings) = load_config_with_warnings(root, paths).map_err(|e| match e {
        EngineError::Topology(t) => {
            CliError::Failed(format!("cannot read the possible CPUs (needed to validate the configuration): {t}"))
        }
        other => CliError::Engine(other),
    })?;
    let pinned = format.is_some();
    let format = format.unwrap_or(config.global.log_format);
    logging::init(format).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut daemon = Daemon::new(root.clone(), paths.clone(), config);
    if pinned {
        daemon.pin_log_format();
    }
    daemon.note_config_warnings(&warnings);
    if once {
        daemon.pass(vec!["once".into()]);
        let exit = if daemon.last_report().all_ok() && daemon.last_error().is_none() { 0 } else { 1 };
        return Ok(Outcome::with_exit(String::new(), exit));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the tokio runtime: {e}")))?;
    runtime.block_on(daemon.run()).map_err(cli_error)?;
    Ok(Outcome::default())
}

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
