//! The `run` and `status` commands.

use crate::cli::args::LogFormatArg;
use crate::cli::{CliError, Outcome};
use crate::config::{ConfigPaths, LogFormat};
use crate::sysfs::Root;

use super::state::{read_state, render_status, STATE_FILE};
use super::{load_config, logging, Daemon, DaemonError};

impl From<LogFormatArg> for LogFormat {
    fn from(f: LogFormatArg) -> LogFormat {
        match f {
            LogFormatArg::Journal => LogFormat::Journal,
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        }
    }
}

fn cli_error(e: DaemonError) -> CliError {
    match e {
        DaemonError::Config(errors) => CliError::Config(errors),
        other => CliError::Failed(other.to_string()),
    }
}

/// `irqwise run [--once]`: loads the config (invalid → exit 2), sets up logging (`--log-format`
/// over the config's `log_format`), then runs until stopped. `--once` runs the initial pass and
/// exits (exit 1 if a write failed), without the systemd protocol.
pub fn run(root: &Root, paths: &ConfigPaths, format: Option<LogFormatArg>, once: bool) -> Result<Outcome, CliError> {
    let config = load_config(root, paths).map_err(cli_error)?;
    let format = format.map_or(config.global.log_format, LogFormat::from);
    logging::init(format).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut daemon = Daemon::new(root.clone(), paths.clone(), config);
    if once {
        daemon.pass(vec!["once".into()]);
        let exit = if daemon.last_report().all_ok() && daemon.last_error.is_none() { 0 } else { 1 };
        return Ok(Outcome { text: String::new(), exit });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the tokio runtime: {e}")))?;
    runtime.block_on(daemon.run()).map_err(cli_error)?;
    Ok(Outcome { text: String::new(), exit: 0 })
}

/// `irqwise status [--json]`: the state file as written, or a human summary of it.
pub fn status(root: &Root, json: bool) -> Result<Outcome, CliError> {
    let Some((text, view)) = read_state(root).map_err(|e| CliError::Failed(e.to_string()))? else {
        return Err(CliError::Failed(format!("irqwise is not running (no {})", root.path(STATE_FILE).display())));
    };
    if json {
        return Ok(Outcome { text, exit: 0 });
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let alive = pid_alive(view.pid);
    Ok(Outcome { text: render_status(&view, now, alive), exit: 0 })
}

/// Whether a process `pid` exists (signal 0; EPERM means it exists but is not ours).
fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else { return false };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}
