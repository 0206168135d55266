//! Event sources: everything that can make the daemon run a pass, merged into one stream of
//! [`Trigger`]s.
//!
//! Sources and what each guarantees:
//! - kernel uevents ([`uevent`]): CPU hotplug and `pci`/`net`/`nvme`/`block`/`queues` device
//!   events, read from the kernel's own netlink source (works without udevd);
//! - rtnetlink link messages ([`rtnetlink`]): link up/down, which emits no uevent although many NIC
//!   drivers allocate their IRQs at link up;
//! - signals: `SIGHUP` → [`Trigger::Reload`], `SIGTERM`/`SIGINT` → [`Trigger::Stop`];
//! - a reconcile timer → [`Trigger::Reconcile`] every `reconcile_interval`;
//! - inotify on the files that isolate CPUs ([`inotify`]) → [`Trigger::Isolation`];
//! - (`run --watch-config`) inotify on what the configuration's loader reads ([`config_watch`])
//!   → [`Trigger::Config`];
//! - (driven by the daemon) the exit of a claim's process ([`pidfd`]).
//!
//! No event is lost silently: when a netlink socket overflows (ENOBUFS) the source sends one
//! [`Trigger::Overflow`], which asks for a full rescan, after it has drained the socket (so after
//! every loss of that episode), and carries on. A full channel makes the sources wait rather than
//! drop: the kernel keeps buffering, and reports an overflow if its buffer fills too.
//! [`Debouncer`] coalesces bursts into one [`Batch`] per pass without ever delaying a stop.

mod cgroup_tree;
pub(crate) mod config_watch;
pub mod debounce;
pub(crate) mod inotify;
pub mod nri;
pub(crate) mod pidfd;
pub mod rtnetlink;
mod ticks;
pub mod uevent;

use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

use nix::sys::socket::{getsockopt, setsockopt, sockopt};

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

pub(crate) use debounce::Debouncer;
pub use debounce::{Batch, LinkState};

/// One reason to look at the system again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// A CPU was onlined, offlined, added or removed (`SUBSYSTEM=cpu`, `DEVPATH=…/cpuN`).
    Cpu { cpu: u32, action: UeventAction },
    /// A device of a watched subsystem changed. `name` is the interface name (`INTERFACE`), else
    /// the last component of `devpath` (`nvme0n1`, `0000:00:03.0`).
    Device { subsystem: String, action: UeventAction, devpath: String, name: Option<String> },
    /// A network link appeared or changed (`up` = administratively up, `IFF_UP`), or was deleted
    /// (`up` = false).
    Link { ifindex: u32, name: Option<String>, up: bool },
    /// Events were lost (a socket overflowed with ENOBUFS, or a message could not be read):
    /// rescan everything.
    Overflow,
    /// `SIGHUP`: reload the configuration.
    Reload,
    /// `SIGTERM` or `SIGINT`: shut down.
    Stop,
    /// The reconcile timer fired: re-read current masks and re-apply drift.
    Reconcile,
    /// A file that isolates or bans CPUs changed (`None`: the watch overflowed, any may have).
    Isolation { path: Option<std::path::PathBuf> },
    /// Something the configuration's loader reads changed (`run --watch-config`), at `path`
    /// (`None`: the watch overflowed, anything may have): reload.
    Config { path: Option<std::path::PathBuf> },
}

/// The `ACTION` of a kernel uevent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UeventAction {
    Add,
    Remove,
    Bind,
    Unbind,
    Move,
    Change,
    Online,
    Offline,
    /// Any other action, kept verbatim; [`uevent::classify`] drops such events.
    Other(String),
}

impl UeventAction {
    /// Maps the kernel's action string; unknown strings are kept verbatim in `Other`.
    pub(crate) fn from_kernel(action: &str) -> UeventAction {
        match action {
            "add" => UeventAction::Add,
            "remove" => UeventAction::Remove,
            "bind" => UeventAction::Bind,
            "unbind" => UeventAction::Unbind,
            "move" => UeventAction::Move,
            "change" => UeventAction::Change,
            "online" => UeventAction::Online,
            "offline" => UeventAction::Offline,
            other => UeventAction::Other(other.to_string()),
        }
    }
}

/// Errors of the event sources (setting them up; running sources report through triggers).
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("cannot open the kernel uevent monitor (netlink NETLINK_KOBJECT_UEVENT): {0}")]
    UeventMonitor(io::Error),
    #[error("cannot open the rtnetlink socket (NETLINK_ROUTE, group RTMGRP_LINK): {0}")]
    Rtnetlink(io::Error),
    #[error("cannot register {what} with the tokio reactor: {source}")]
    Register { what: &'static str, source: io::Error },
    #[error("cannot install the handler for {signal}: {source}")]
    Signal { signal: &'static str, source: io::Error },
    #[error("invalid event configuration: {0}")]
    Config(&'static str),
    #[error("cannot watch the isolation files (inotify): {0}")]
    Inotify(io::Error),
    #[error("cannot watch the configuration files (inotify): {0}")]
    ConfigWatch(io::Error),
}

/// Which sources to start and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventConfig {
    /// Listen to kernel uevents.
    pub kernel_uevents: bool,
    /// Listen to rtnetlink link messages.
    pub rtnetlink: bool,
    /// Turn SIGHUP/SIGTERM/SIGINT into triggers (this replaces their default action).
    pub signals: bool,
    /// Period of [`Trigger::Reconcile`]; `None` disables the timer.
    pub reconcile_interval: Option<Duration>,
    /// Whether the reconcile timer is the kernel's (a `timerfd`: one wake-up per tick, the
    /// daemon's choice) rather than tokio's (which tests with a paused clock need).
    pub kernel_timer: bool,
    /// Receive buffer requested for the netlink sockets, in bytes (the kernel doubles it).
    pub recv_buffer_bytes: usize,
    /// Capacity of the trigger channel; a full channel makes the sources wait, so the kernel
    /// buffers events and reports an overflow if that buffer fills too.
    pub channel_capacity: usize,
    /// Files whose changes run a pass (inotify); none: no watch.
    pub watch_files: Vec<inotify::WatchTarget>,
    /// What the configuration's loader reads, watched for [`Trigger::Config`]
    /// (`run --watch-config`); `None`: not watched.
    pub watch_config: Option<config_watch::ConfigWatchSpec>,
}

impl Default for EventConfig {
    fn default() -> Self {
        EventConfig {
            kernel_uevents: true,
            rtnetlink: true,
            signals: true,
            reconcile_interval: Some(Duration::from_secs(60)),
            kernel_timer: false,
            recv_buffer_bytes: 16 * 1024 * 1024,
            channel_capacity: 4096,
            watch_files: Vec::new(),
            watch_config: None,
        }
    }
}

/// The running sources. Dropping it stops them all; the receiver then yields `None` once every
/// injector clone is dropped too.
pub struct EventSources {
    injector: mpsc::Sender<Trigger>,
    tasks: Vec<JoinHandle<()>>,
}

impl EventSources {
    /// Opens and registers every configured source, then spawns one task per source. Must be called
    /// inside a tokio runtime. When this returns, every socket is bound and every signal handler is
    /// installed: an event that happens afterwards is delivered (or reported as an overflow).
    pub fn start(config: &EventConfig) -> Result<(EventSources, mpsc::Receiver<Trigger>), EventsError> {
        EventSources::start_adjustable(config, None)
    }

    /// [`EventSources::start`], with the reconcile period following `period` when given (the
    /// daemon's `reconcile_interval` after a reload; `config.reconcile_interval` must then be set
    /// and is ignored).
    pub(crate) fn start_adjustable(
        config: &EventConfig,
        period: Option<watch::Receiver<Duration>>,
    ) -> Result<(EventSources, mpsc::Receiver<Trigger>), EventsError> {
        if config.channel_capacity == 0 {
            return Err(EventsError::Config("channel_capacity must be at least 1"));
        }
        if config.reconcile_interval.is_some_and(|d| d.is_zero()) {
            return Err(EventsError::Config("reconcile_interval must be longer than zero"));
        }
        let (tx, rx) = mpsc::channel(config.channel_capacity);
        let mut tasks = Vec::new();
        if config.kernel_uevents {
            let source = uevent::KernelUevents::open(config.recv_buffer_bytes)?;
            tasks.push(tokio::spawn(source.run(tx.clone())));
        }
        if config.rtnetlink {
            let source = rtnetlink::LinkMonitor::open(config.recv_buffer_bytes)?;
            tasks.push(tokio::spawn(source.run(tx.clone())));
        }
        if config.signals {
            let hup = install(SignalKind::hangup(), "SIGHUP")?;
            let term = install(SignalKind::terminate(), "SIGTERM")?;
            let int = install(SignalKind::interrupt(), "SIGINT")?;
            tasks.push(tokio::spawn(forward_signal(hup, Trigger::Reload, tx.clone())));
            tasks.push(tokio::spawn(forward_signal(term, Trigger::Stop, tx.clone())));
            tasks.push(tokio::spawn(forward_signal(int, Trigger::Stop, tx.clone())));
        }
        if let Some(initial) = config.reconcile_interval {
            let period = period.unwrap_or_else(|| watch::channel(initial).1);
            tasks.push(tokio::spawn(reconcile_timer(period, config.kernel_timer, tx.clone())));
        }
        if !config.watch_files.is_empty() {
            let watch = inotify::FileWatch::open(&config.watch_files)?;
            tracing::debug!("watching {} path(s) for isolation changes", watch.watched());
            tasks.push(tokio::spawn(watch.run(tx.clone())));
        }
        if let Some(spec) = &config.watch_config {
            let watch = config_watch::ConfigWatch::open(spec.clone())?;
            tracing::debug!("watching {} directories for configuration changes", watch.watched());
            tasks.push(tokio::spawn(watch.run(tx.clone())));
        }
        Ok((EventSources { injector: tx, tasks }, rx))
    }

    /// A sender into the same stream, for in-process triggers (tests, or the daemon itself).
    pub fn injector(&self) -> mpsc::Sender<Trigger> {
        self.injector.clone()
    }
}

impl Drop for EventSources {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Asks for a receive buffer of `bytes` on a netlink socket: SO_RCVBUFFORCE (needs CAP_NET_ADMIN,
/// ignores `net.core.rmem_max`), else SO_RCVBUF (capped by `rmem_max`). Returns what the kernel
/// granted. A smaller buffer is not an error: overflows are still reported as [`Trigger::Overflow`].
pub(crate) fn set_recv_buffer(fd: BorrowedFd<'_>, bytes: usize) -> Option<usize> {
    if setsockopt(&fd, sockopt::RcvBufForce, &bytes).is_err() {
        if let Err(err) = setsockopt(&fd, sockopt::RcvBuf, &bytes) {
            tracing::warn!("cannot set a {bytes}-byte receive buffer on a netlink socket: {err}");
        }
    }
    let granted = getsockopt(&fd, sockopt::RcvBuf).ok();
    tracing::debug!("netlink receive buffer: asked {bytes} bytes, granted {granted:?}");
    granted
}

fn install(kind: SignalKind, name: &'static str) -> Result<Signal, EventsError> {
    signal(kind).map_err(|source| EventsError::Signal { signal: name, source })
}

/// Sends `trigger` once per delivery of the signal; several deliveries before a read may merge
/// into one (signals are not queued), which is harmless for reload and stop.
async fn forward_signal(mut sig: Signal, trigger: Trigger, tx: mpsc::Sender<Trigger>) {
    while sig.recv().await.is_some() {
        if tx.send(trigger.clone()).await.is_err() {
            return;
        }
    }
}

/// A periodic tick: the kernel's timer when asked for and available, else tokio's.
enum Rhythm {
    /// The kernel's timer, and its period (for the fallback).
    Kernel(ticks::KernelTicks, Duration),
    Tokio(tokio::time::Interval),
}

impl Rhythm {
    /// The first tick one `every` from now.
    fn every(every: Duration, kernel: bool) -> Rhythm {
        if kernel {
            match ticks::KernelTicks::every(every) {
                Ok(t) => return Rhythm::Kernel(t, every),
                Err(e) => tracing::debug!("no kernel timer for the reconcile rhythm ({e}); using the runtime's"),
            }
        }
        let mut timer = interval_at(Instant::now() + every, every);
        timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Rhythm::Tokio(timer)
    }

    /// The next tick; a kernel timer that fails falls back to the runtime's for good.
    async fn tick(&mut self) {
        match self {
            Rhythm::Kernel(t, every) => {
                if let Err(e) = t.tick().await {
                    tracing::warn!("the kernel timer of the reconcile rhythm failed ({e}); using the runtime's");
                    *self = Rhythm::every(*every, false);
                }
            }
            Rhythm::Tokio(t) => {
                t.tick().await;
            }
        }
    }
}

/// Sends `Reconcile` every `period`, first one `period` after start; ticks missed while the
/// receiver was busy are not replayed (one late tick, then the regular rhythm again). A new
/// period restarts the rhythm from the moment it arrives; once the sender is gone the last
/// period holds.
async fn reconcile_timer(mut period: watch::Receiver<Duration>, kernel: bool, tx: mpsc::Sender<Trigger>) {
    let mut adjustable = true;
    loop {
        let every = (*period.borrow_and_update()).max(Duration::from_millis(1));
        let mut timer = Rhythm::every(every, kernel);
        loop {
            let changed = async {
                if adjustable {
                    period.changed().await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                () = timer.tick() => {
                    if tx.send(Trigger::Reconcile).await.is_err() {
                        return;
                    }
                }
                result = changed => {
                    adjustable = result.is_ok();
                    if adjustable {
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_action_maps_to_its_variant() {
        let cases = [
            ("add", UeventAction::Add),
            ("remove", UeventAction::Remove),
            ("bind", UeventAction::Bind),
            ("unbind", UeventAction::Unbind),
            ("move", UeventAction::Move),
            ("change", UeventAction::Change),
            ("online", UeventAction::Online),
            ("offline", UeventAction::Offline),
        ];
        for (text, action) in cases {
            assert_eq!(UeventAction::from_kernel(text), action, "{text}");
        }
        assert_eq!(UeventAction::from_kernel("Add"), UeventAction::Other("Add".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn reconcile_timer_ticks_once_per_period_and_not_at_start() {
        let config = EventConfig {
            kernel_uevents: false,
            rtnetlink: false,
            signals: false,
            reconcile_interval: Some(Duration::from_secs(30)),
            ..EventConfig::default()
        };
        let (_sources, mut rx) = EventSources::start(&config).unwrap();
        let start = Instant::now();
        assert_eq!(rx.recv().await, Some(Trigger::Reconcile));
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        assert_eq!(rx.recv().await, Some(Trigger::Reconcile));
        assert_eq!(start.elapsed(), Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_reconcile_period_restarts_the_rhythm_when_it_arrives() {
        let config = EventConfig {
            kernel_uevents: false,
            rtnetlink: false,
            signals: false,
            reconcile_interval: Some(Duration::from_secs(3600)),
            ..EventConfig::default()
        };
        let (period, rx_period) = watch::channel(Duration::from_secs(3600));
        let (_sources, mut rx) = EventSources::start_adjustable(&config, Some(rx_period)).unwrap();
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(10)).await;
        period.send_replace(Duration::from_secs(5));
        assert_eq!(rx.recv().await, Some(Trigger::Reconcile));
        assert_eq!(start.elapsed(), Duration::from_secs(15), "5 s after the change, not an hour after start");
        assert_eq!(rx.recv().await, Some(Trigger::Reconcile));
        assert_eq!(start.elapsed(), Duration::from_secs(20));
        drop(period);
        assert_eq!(rx.recv().await, Some(Trigger::Reconcile), "the last period holds once the sender is gone");
        assert_eq!(start.elapsed(), Duration::from_secs(25));
    }

    #[tokio::test]
    async fn injected_triggers_arrive_in_order_and_sources_stop_on_drop() {
        let config = EventConfig {
            kernel_uevents: false,
            rtnetlink: false,
            signals: false,
            reconcile_interval: None,
            ..EventConfig::default()
        };
        let (sources, mut rx) = EventSources::start(&config).unwrap();
        let inject = sources.injector();
        inject.send(Trigger::Reload).await.unwrap();
        inject.send(Trigger::Stop).await.unwrap();
        assert_eq!(rx.recv().await, Some(Trigger::Reload));
        assert_eq!(rx.recv().await, Some(Trigger::Stop));
        drop(inject);
        drop(sources);
        assert_eq!(rx.recv().await, None, "no sender may outlive EventSources and its injectors");
    }

    #[tokio::test]
    async fn sighup_reloads_and_sigterm_sigint_stop() {
        use nix::sys::signal::{raise, Signal as Sig};
        let config = EventConfig {
            kernel_uevents: false,
            rtnetlink: false,
            signals: true,
            reconcile_interval: None,
            ..EventConfig::default()
        };
        let (_sources, mut rx) = EventSources::start(&config).unwrap();
        let patience = Duration::from_secs(10);
        for (sig, want) in [(Sig::SIGHUP, Trigger::Reload), (Sig::SIGTERM, Trigger::Stop), (Sig::SIGINT, Trigger::Stop)]
        {
            raise(sig).unwrap();
            let got = tokio::time::timeout(patience, rx.recv()).await;
            assert_eq!(got, Ok(Some(want)), "after {sig}");
        }
    }

    #[test]
    fn zero_capacity_and_zero_interval_are_rejected() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let bad = EventConfig { channel_capacity: 0, ..EventConfig::default() };
        assert!(matches!(EventSources::start(&bad), Err(EventsError::Config(_))));
        let bad = EventConfig { reconcile_interval: Some(Duration::ZERO), ..EventConfig::default() };
        assert!(matches!(EventSources::start(&bad), Err(EventsError::Config(_))));
    }
}
