//! Kernel uevents: the filter of what matters and the kernel monitor source (libudev parses the
//! datagrams; the raw parser here is the tests' way to make events).
//!
//! The source listens to the kernel's netlink source (`MonitorBuilder::new_kernel()`), never the
//! udev source, which stays silent when systemd-udevd is not running. It guarantees: every event
//! of a watched subsystem with a known action becomes one trigger, in kernel order; an overflow of
//! the socket buffer (ENOBUFS) becomes one [`Trigger::Overflow`], sent after the events still
//! queued, and the source carries on.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::socket::{recv, MsgFlags};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::mpsc;

use super::{set_recv_buffer, EventsError, Trigger, UeventAction};

/// Subsystems whose events can change IRQ placement; everything else is dropped.
pub(crate) const WATCHED_SUBSYSTEMS: [&str; 6] = ["cpu", "pci", "net", "nvme", "block", "queues"];

/// Errors of parsing a raw uevent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UeventParseError {
    #[cfg(test)]
    #[error("uevent header {header:?}: expected ACTION@DEVPATH (a kernel uevent, not a libudev one)")]
    Header { header: String },
    #[cfg(test)]
    #[error("uevent {header:?}: field {field:?} is not KEY=VALUE")]
    Field { header: String, field: String },
    #[error("uevent {header:?}: no {key}= field")]
    Missing { header: String, key: &'static str },
}

/// One kernel uevent: its action, device path, subsystem and every `KEY=VALUE` pair (including
/// `ACTION`, `DEVPATH` and `SUBSYSTEM` themselves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Uevent {
    pub action: UeventAction,
    pub devpath: String,
    pub subsystem: String,
    pub properties: BTreeMap<String, String>,
}

impl Uevent {
    /// Builds an event from its `KEY=VALUE` pairs; `ACTION`, `DEVPATH` and `SUBSYSTEM` must be
    /// among them. `header` only names the event in errors.
    pub(crate) fn from_properties(
        header: &str,
        properties: BTreeMap<String, String>,
    ) -> Result<Uevent, UeventParseError> {
        let get = |key: &'static str| {
            properties.get(key).cloned().ok_or(UeventParseError::Missing { header: header.to_string(), key })
        };
        let action = UeventAction::from_kernel(&get("ACTION")?);
        let devpath = get("DEVPATH")?;
        let subsystem = get("SUBSYSTEM")?;
        Ok(Uevent { action, devpath, subsystem, properties })
    }
}

/// Parses a kernel uevent datagram `ACTION@DEVPATH\0KEY=VALUE\0…`. Guarantees: every field after
/// the header is split at its first `=`; one trailing newline is removed from each value (the
/// kernel sends `MODALIAS` with one); empty fields are skipped; `ACTION`/`DEVPATH` missing from
/// the fields are taken from the header. Invalid UTF-8 is replaced, never rejected.
#[cfg(test)]
pub(crate) fn parse_uevent(datagram: &[u8]) -> Result<Uevent, UeventParseError> {
    let text = String::from_utf8_lossy(datagram);
    let mut fields = text.split('\0');
    let header = fields.next().unwrap_or_default();
    let Some((action, devpath)) = header.split_once('@').filter(|(a, d)| !a.is_empty() && d.starts_with('/')) else {
        return Err(UeventParseError::Header { header: header.to_string() });
    };
    let mut properties = BTreeMap::new();
    for field in fields.filter(|f| !f.is_empty()) {
        let (key, value) = field
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| UeventParseError::Field { header: header.to_string(), field: field.to_string() })?;
        properties.insert(key.to_string(), value.strip_suffix('\n').unwrap_or(value).to_string());
    }
    properties.entry("ACTION".to_string()).or_insert_with(|| action.to_string());
    properties.entry("DEVPATH".to_string()).or_insert_with(|| devpath.to_string());
    Uevent::from_properties(header, properties)
}

/// The trigger for an event, or `None` when it cannot matter: a subsystem outside
/// [`WATCHED_SUBSYSTEMS`] or an action outside the known set. A `cpu` event whose device path
/// ends in `cpuN` becomes [`Trigger::Cpu`]; every other kept event becomes [`Trigger::Device`].
pub(crate) fn classify(event: &Uevent) -> Option<Trigger> {
    if !WATCHED_SUBSYSTEMS.contains(&event.subsystem.as_str()) || matches!(event.action, UeventAction::Other(_)) {
        return None;
    }
    let last = event.devpath.rsplit('/').next().filter(|s| !s.is_empty());
    if event.subsystem == "cpu" {
        if let Some(cpu) = last.and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse().ok()) {
            return Some(Trigger::Cpu { cpu, action: event.action.clone() });
        }
    }
    let name = event.properties.get("INTERFACE").cloned().or_else(|| last.map(str::to_string));
    Some(Trigger::Device {
        subsystem: event.subsystem.clone(),
        action: event.action.clone(),
        devpath: event.devpath.clone(),
        name,
    })
}

/// The kernel uevent monitor, registered with the tokio reactor.
pub(crate) struct KernelUevents {
    socket: AsyncFd<udev::MonitorSocket>,
}

/// What one receive attempt gave.
enum Received {
    Event(Uevent),
    /// Nothing to report (a datagram the filter dropped, or a retry after EINTR): read on.
    Nothing,
    /// Events were lost: ENOBUFS, or a datagram libudev consumed but could not read.
    Lost,
    /// The socket is empty.
    Drained,
    Failed(io::Error),
}

impl KernelUevents {
    /// Opens the kernel source, filtered to [`WATCHED_SUBSYSTEMS`], with a receive buffer of
    /// `recv_buffer_bytes`. Must be called inside a tokio runtime.
    pub fn open(recv_buffer_bytes: usize) -> Result<KernelUevents, EventsError> {
        let mut builder = udev::MonitorBuilder::new_kernel().map_err(EventsError::UeventMonitor)?;
        for subsystem in WATCHED_SUBSYSTEMS {
            builder = builder.match_subsystem(subsystem).map_err(EventsError::UeventMonitor)?;
        }
        let socket = builder.listen().map_err(EventsError::UeventMonitor)?;
        set_recv_buffer(socket.as_fd(), recv_buffer_bytes);
        // SAFETY: the descriptor is owned by the libudev monitor inside `socket`, which the AsyncFd
        // owns: it stays open, and `as_raw_fd` returns the same descriptor, until the AsyncFd drops.
        #[allow(unsafe_code)]
        let socket = unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }
            .map_err(|e| EventsError::Register { what: "the kernel uevent socket", source: e.into_parts().1 })?;
        Ok(KernelUevents { socket })
    }

    /// Forwards triggers until the receiver is dropped. On each readiness, reads every pending
    /// event before waiting again. An overflow is reported once the socket is drained: the kernel
    /// drops events silently until a read finds the queue empty, so every event lost in that
    /// episode happened before the `Overflow` was sent, and a rescan started after it sees them.
    pub async fn run(self, tx: mpsc::Sender<Trigger>) {
        let mut overflowed = false;
        loop {
            let mut guard = match self.socket.readable().await {
                Ok(guard) => guard,
                Err(err) => {
                    tracing::error!("kernel uevent source stopped: waiting for readiness failed: {err}");
                    let _ = tx.send(Trigger::Overflow).await;
                    return;
                }
            };
            loop {
                let trigger = match receive(guard.get_inner()) {
                    Received::Event(event) => classify(&event),
                    Received::Nothing => None,
                    Received::Lost => {
                        overflowed = true;
                        None
                    }
                    Received::Drained => {
                        guard.clear_ready();
                        break;
                    }
                    Received::Failed(err) => {
                        tracing::error!("kernel uevent source stopped: receive failed: {err}");
                        let _ = tx.send(Trigger::Overflow).await;
                        return;
                    }
                };
                if let Some(trigger) = trigger {
                    if tx.send(trigger).await.is_err() {
                        return;
                    }
                }
            }
            if std::mem::take(&mut overflowed) {
                tracing::warn!("kernel uevents were lost (socket overflow, ENOBUFS): asking for a full rescan");
                if tx.send(Trigger::Overflow).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Receives one event. libudev reports failures through `errno` with a null device; EAGAIN also
/// stands for a datagram it ignored, so a peek at the socket tells "drained" from "more to read".
fn receive(socket: &udev::MonitorSocket) -> Received {
    if let Some(event) = socket.iter().next() {
        let properties = event
            .properties()
            .map(|p| (p.name().to_string_lossy().into_owned(), p.value().to_string_lossy().into_owned()))
            .collect();
        let header = event.devpath().to_string_lossy().into_owned();
        return match Uevent::from_properties(&header, properties) {
            Ok(uevent) => Received::Event(uevent),
            Err(err) => {
                tracing::debug!("ignoring kernel uevent: {err}");
                Received::Nothing
            }
        };
    }
    match Errno::last() {
        Errno::ENOBUFS | Errno::EINVAL | Errno::ENOMEM => Received::Lost,
        Errno::EAGAIN => peek(socket.as_fd()),
        Errno::EINTR => Received::Nothing,
        other => Received::Failed(io::Error::from_raw_os_error(other as i32)),
    }
}

/// Whether a datagram (or a pending overflow) is still waiting on the socket, without consuming it.
fn peek(fd: BorrowedFd<'_>) -> Received {
    let mut byte = [0u8; 1];
    match recv(fd.as_raw_fd(), &mut byte, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT) {
        Ok(_) | Err(Errno::EINTR) => Received::Nothing,
        Err(Errno::EAGAIN) => Received::Drained,
        Err(Errno::ENOBUFS) => Received::Lost,
        Err(other) => Received::Failed(io::Error::from_raw_os_error(other as i32)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(subsystem: &str, action: UeventAction, devpath: &str, name: &str) -> Option<Trigger> {
        Some(Trigger::Device { subsystem: subsystem.into(), action, devpath: devpath.into(), name: Some(name.into()) })
    }

    #[test]
    fn cpu_offline_datagram_becomes_a_cpu_trigger() {
        let raw = b"offline@/devices/system/cpu/cpu3\0ACTION=offline\0DEVPATH=/devices/system/cpu/cpu3\0\
                    SUBSYSTEM=cpu\0SEQNUM=4711\0";
        let event = parse_uevent(raw).unwrap();
        assert_eq!(event.action, UeventAction::Offline);
        assert_eq!(event.subsystem, "cpu");
        assert_eq!(event.properties["SEQNUM"], "4711");
        assert_eq!(classify(&event), Some(Trigger::Cpu { cpu: 3, action: UeventAction::Offline }));
    }

    #[test]
    fn modalias_trailing_newline_is_removed_and_next_field_still_parses() {
        let raw = b"add@/devices/pci0000:00/0000:00:03.0\0ACTION=add\0DEVPATH=/devices/pci0000:00/0000:00:03.0\0\
                    SUBSYSTEM=pci\0MODALIAS=pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00\n\0\
                    PCI_SLOT_NAME=0000:00:03.0\0SEQNUM=12\0";
        let event = parse_uevent(raw).unwrap();
        assert_eq!(event.properties["MODALIAS"], "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00");
        assert_eq!(event.properties["PCI_SLOT_NAME"], "0000:00:03.0");
        let path = "/devices/pci0000:00/0000:00:03.0";
        assert_eq!(classify(&event), device("pci", UeventAction::Add, path, "0000:00:03.0"));
    }

    #[test]
    fn net_device_is_named_by_its_interface_and_values_keep_inner_equals_signs() {
        let raw = b"move@/devices/virtual/net/eth7\0ACTION=move\0DEVPATH=/devices/virtual/net/eth7\0\
                    SUBSYSTEM=net\0DEVPATH_OLD=/devices/virtual/net/ens3\0INTERFACE=renamed\0IFINDEX=9\0X=a=b\0";
        let event = parse_uevent(raw).unwrap();
        assert_eq!(event.properties["X"], "a=b");
        assert_eq!(classify(&event), device("net", UeventAction::Move, "/devices/virtual/net/eth7", "renamed"));
    }

    #[test]
    fn header_supplies_action_and_devpath_when_fields_lack_them() {
        let event = parse_uevent(b"unbind@/devices/pci0000:00/0000:00:05.0\0SUBSYSTEM=pci\0").unwrap();
        assert_eq!(event.action, UeventAction::Unbind);
        assert_eq!(event.devpath, "/devices/pci0000:00/0000:00:05.0");
    }

    #[test]
    fn unwatched_subsystems_and_unknown_actions_are_dropped() {
        let usb =
            b"add@/devices/pci0000:00/usb1/1-1\0ACTION=add\0DEVPATH=/devices/pci0000:00/usb1/1-1\0SUBSYSTEM=usb\0";
        assert_eq!(classify(&parse_uevent(usb).unwrap()), None);
        let odd = b"frobnicate@/devices/virtual/net/lo\0ACTION=frobnicate\0DEVPATH=/devices/virtual/net/lo\0\
                    SUBSYSTEM=net\0";
        let event = parse_uevent(odd).unwrap();
        assert_eq!(event.action, UeventAction::Other("frobnicate".into()));
        assert_eq!(classify(&event), None);
    }

    #[test]
    fn every_watched_subsystem_is_kept() {
        for subsystem in WATCHED_SUBSYSTEMS {
            let raw = format!("change@/devices/x/thing\0SUBSYSTEM={subsystem}\0");
            let trigger = classify(&parse_uevent(raw.as_bytes()).unwrap());
            assert!(trigger.is_some(), "{subsystem} dropped");
        }
    }

    #[test]
    fn cpu_subsystem_device_that_is_not_a_cpu_stays_a_device_trigger() {
        let raw = b"add@/devices/system/cpu/cpufreq\0SUBSYSTEM=cpu\0";
        assert_eq!(
            classify(&parse_uevent(raw).unwrap()),
            device("cpu", UeventAction::Add, "/devices/system/cpu/cpufreq", "cpufreq")
        );
    }

    #[test]
    fn malformed_datagrams_are_errors_naming_the_problem() {
        let libudev = b"libudev\0\xfe\xed\xca\xfe";
        assert!(matches!(parse_uevent(libudev), Err(UeventParseError::Header { .. })));
        let no_subsystem = b"add@/devices/virtual/net/lo\0ACTION=add\0";
        assert_eq!(
            parse_uevent(no_subsystem),
            Err(UeventParseError::Missing { header: "add@/devices/virtual/net/lo".into(), key: "SUBSYSTEM" })
        );
        let bad_field = b"add@/devices/virtual/net/lo\0SUBSYSTEM=net\0garbage\0";
        let err = parse_uevent(bad_field).unwrap_err();
        assert!(err.to_string().contains("\"garbage\""), "{err}");
    }
}
