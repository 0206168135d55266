//! The daemon's event sources: kernel uevents, rtnetlink, inotify on the isolation files, the
//! signals and the reconcile timer ([`crate::events`]), started with what this machine allows.

use tokio::sync::{mpsc, watch};

use crate::config::LoadError;
use crate::events::config_watch::{self, ConfigWatchSpec};
use crate::events::inotify::{WatchHow, WatchTarget};
use crate::events::{EventConfig, EventSources, EventsError, Trigger};
use crate::sysfs::Root;

/// Why the daemon could not start or go on: its configuration, or its event sources.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] LoadError),
    #[error(transparent)]
    Events(#[from] EventsError),
}

/// The files whose changes run a pass: irqbalance's environment files (in their directories,
/// so that files created later are seen), the root cgroup's isolated CPUs, every cgroup's
/// partition file (the root's list is not notified: a partition made or removed at run time is
/// seen through the cgroup's own file), every claim, and the kubelet's checkpoint when
/// configured (`kubelet`: in its directory, where the kubelet renames each new version in).
pub(crate) fn isolation_files(root: &Root, kubelet: Option<&std::path::Path>) -> Vec<WatchTarget> {
    use crate::topology::discover::claims::CLAIMS_DIR;
    use crate::topology::discover::isolation::{CGROUP_ISOLATED, IRQBALANCE_FILES};
    let mut targets: Vec<WatchTarget> =
        IRQBALANCE_FILES.iter().map(|f| WatchTarget { path: root.path(f), how: WatchHow::InDirectory }).collect();
    targets.push(WatchTarget { path: root.path(CGROUP_ISOLATED), how: WatchHow::Itself });
    if let Some(tree) = std::path::Path::new(CGROUP_ISOLATED).parent() {
        targets.push(WatchTarget { path: root.path(tree), how: WatchHow::CgroupTree });
    }
    targets.push(WatchTarget { path: root.path(CLAIMS_DIR), how: WatchHow::EveryFile });
    targets.extend(kubelet.map(|path| WatchTarget { path: root.path(path), how: WatchHow::InDirectory }));
    targets
}

/// What the loader reads, for `run --watch-config`: the main file, the drop-in directories and
/// the loader's own rule for drop-in names.
pub(crate) fn config_watch(paths: &crate::config::ConfigPaths) -> ConfigWatchSpec {
    ConfigWatchSpec {
        main: paths.main.clone(),
        dropin_dirs: paths.dropin_dirs.clone(),
        dropin_name: crate::config::is_dropin_name,
    }
}

/// Starts the sources; a netlink source that cannot be opened (not root, no netlink in this
/// namespace) is dropped with a warning, and the daemon runs on the rest.
pub(super) fn start(
    mut events: EventConfig,
    reconcile: &watch::Sender<std::time::Duration>,
) -> Result<(EventSources, mpsc::Receiver<Trigger>), DaemonError> {
    loop {
        match EventSources::start_adjustable(&events, Some(reconcile.subscribe())) {
            Ok(started) => return Ok(started),
            Err(e @ EventsError::UeventMonitor(_)) if events.kernel_uevents => {
                tracing::warn!(
                    "{e}; running without kernel uevents (CPU and device hotplug are seen by the reconcile timer only)"
                );
                events.kernel_uevents = false;
            }
            Err(e @ EventsError::Rtnetlink(_)) if events.rtnetlink => {
                tracing::warn!("{e}; running without link events");
                events.rtnetlink = false;
            }
            Err(e @ (EventsError::Inotify(_) | EventsError::Register { what: "the inotify descriptor", .. }))
                if !events.watch_files.is_empty() =>
            {
                tracing::warn!("{e}; isolation changes are seen by the reconcile timer only");
                events.watch_files.clear();
            }
            Err(e @ (EventsError::ConfigWatch(_) | EventsError::Register { what: config_watch::DESCRIPTOR, .. }))
                if events.watch_config.is_some() =>
            {
                tracing::warn!("{e}; configuration changes are applied by `irqwise reload` only");
                events.watch_config = None;
            }
            Err(e) => return Err(e.into()),
        }
    }
}
