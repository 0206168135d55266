//! `irqwise run [--once]`: the daemon.

use super::{CliError, Outcome};
use crate::config::{load_config_with_warnings, ConfigPaths, LoadError, LogFormat};
use crate::daemon::lock::{self, LockError};
use crate::daemon::{logging, Daemon, DaemonError};
use crate::sysfs::Root;

fn cli_error(e: DaemonError) -> CliError {
    match e {
        DaemonError::Config(e) => CliError::Config(e),
        other @ DaemonError::Events(_) => CliError::Failed(other.to_string()),
    }
}

/// `irqwise run [--once] [--watch-config]`: loads the config (invalid → exit 2), sets up logging (`--log-format`
/// over the config's `log_format`), then runs until stopped. `--once` runs the initial pass and
/// exits (exit 1 if a write failed), without the systemd protocol.
pub fn run(
    root: &Root,
    paths: &ConfigPaths,
    format: Option<LogFormat>,
    once: bool,
    watch_config: bool,
) -> Result<Outcome, CliError> {
    crate::daemon::malloc::one_arena();
    // Held until this function returns: the daemon's whole life.
    let _lock = lock::acquire(root).map_err(|e| match e {
        held @ LockError::Held { .. } => CliError::AlreadyRunning(held.to_string()),
        other => CliError::Failed(other.to_string()),
    })?;
    let (config, warnings) = load_config_with_warnings(root, paths).map_err(|e| match e {
        LoadError::Machine(t) => {
            CliError::Failed(format!("cannot read the possible CPUs (needed to validate the configuration): {t}"))
        }
        other @ LoadError::Invalid(_) => CliError::Config(other),
    })?;
    let pinned = format.is_some();
    let format = format.unwrap_or(config.global.log_format);
    logging::init(format).map_err(|e| CliError::Failed(e.to_string()))?;
    let mut daemon = Daemon::new(root.clone(), paths.clone(), config);
    if pinned {
        daemon.pin_log_format();
    }
    if watch_config {
        daemon.watch_config();
    }
    daemon.note_config_warnings(&warnings);
    if once {
        daemon.pass(vec!["once".into()]);
        let exit = u8::from(!(daemon.last_report().all_ok() && daemon.last_error().is_none()));
        return Ok(Outcome::with_exit(String::new(), exit));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_park(crate::daemon::resident::on_park)
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the tokio runtime: {e}")))?;
    runtime.block_on(daemon.run()).map_err(cli_error)?;
    Ok(Outcome::default())
}
