//! What the kernel says of a NIC's queues and NAPI instances through the `netdev` generic-netlink
//! family (Documentation/netlink/specs/netdev.yaml): which NAPI instance serves each queue
//! (`queue-get`, 6.8 and later) and each instance's IRQ and thread (`napi-get`, 6.9 and later,
//! for the drivers that register them) and, from 6.17, whether the instance itself runs threaded
//! (`threaded`, set per instance with `napi-set`). Where it is given, it is the authority on which
//! IRQ serves which queue; IRQ names are read only where it is not.
//!
//! Pure: the replies' bytes in, data out; `discover::netdev_netlink` asks the kernel.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::devices::QueueRole;

/// What a pass reads of one network interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterfaceState {
    /// `ifindex`; `None` when unreadable.
    pub ifindex: Option<u32>,
    /// `threaded`: whether the interface runs threaded NAPI; `None` where the kernel has no
    /// such file (before 5.12) or it is unreadable.
    pub threaded: Option<bool>,
}

/// One NAPI instance (`napi-get` reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NapiInstance {
    pub ifindex: u32,
    pub id: u32,
    /// The IRQ that schedules it, where the driver says (`netif_napi_set_irq()`).
    pub irq: Option<u32>,
    /// The pid of its thread, when the interface or the instance runs threaded NAPI.
    pub pid: Option<u32>,
    /// Its own threaded mode (6.17 and later: `napi-set` sets it per instance, and the
    /// interface's `threaded` file does not show it); `None` where the kernel does not say.
    pub threaded: Option<NapiThreaded>,
    /// Its interrupt mitigation (6.13 and later); all `None` before.
    pub settings: NapiSettings,
}

/// An instance's interrupt mitigation as `napi-get` reports it (6.13 and later), or as
/// `napi-set` is to write it: each `None` where the kernel leaves it out (or nothing is to be
/// written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NapiSettings {
    /// How many times the instance re-arms its timer instead of its IRQ after an empty poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_hard_irqs: Option<u32>,
    /// The timer's timeout, in nanoseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro_flush_timeout: Option<u64>,
    /// How long, in nanoseconds, the IRQ stays suspended while a busy-polling application finds
    /// events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub irq_suspend_timeout: Option<u64>,
}

impl NapiSettings {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        *self == NapiSettings::default()
    }
}

/// An instance's `threaded` attribute (`enum netdev_napi_threaded`), written as the kernel's
/// spec names it (`disabled`, `enabled`, `busy-poll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NapiThreaded {
    Disabled,
    Enabled,
    /// 6.19: the thread also busy-polls.
    BusyPoll,
    /// A value this irqwise does not know, kept as sent.
    Other(u64),
}

impl serde::Serialize for NapiThreaded {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl NapiThreaded {
    pub fn of(value: u64) -> NapiThreaded {
        match value {
            0 => NapiThreaded::Disabled,
            1 => NapiThreaded::Enabled,
            2 => NapiThreaded::BusyPoll,
            v => NapiThreaded::Other(v),
        }
    }

    /// The word the kernel's netdev spec uses (`disabled`, `enabled`, `busy-poll`).
    pub fn as_str(self) -> &'static str {
        match self {
            NapiThreaded::Disabled => "disabled",
            NapiThreaded::Enabled => "enabled",
            NapiThreaded::BusyPoll => "busy-poll",
            NapiThreaded::Other(_) => "unknown",
        }
    }

    /// The value `napi-set` takes (`enum netdev_napi_threaded`).
    pub fn value(self) -> u64 {
        match self {
            NapiThreaded::Disabled => 0,
            NapiThreaded::Enabled => 1,
            NapiThreaded::BusyPoll => 2,
            NapiThreaded::Other(v) => v,
        }
    }

    /// Whether the instance's work runs in its own thread.
    pub fn is_threaded(self) -> bool {
        !matches!(self, NapiThreaded::Disabled)
    }
}

/// Which way a queue carries packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueKind {
    Rx,
    Tx,
}

/// One queue and the NAPI instance serving it (`queue-get` reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNapi {
    pub ifindex: u32,
    /// The queue's index (`rx-N`, `tx-N`).
    pub id: u32,
    pub kind: QueueKind,
    /// `None` where the driver links no NAPI instance to the queue.
    pub napi: Option<u32>,
}

/// What the kernel reported, for every interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetdevReport {
    pub napis: Vec<NapiInstance>,
    pub queues: Vec<QueueNapi>,
}

/// Where a NAPI instance sits on its interface, as a reset leaves it: a driver that renumbers
/// its instances (`ethtool -L`, a link flap) gives the queue's new instance the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NapiSlot {
    /// It serves receive queue N (its lowest).
    Rx(u32),
    /// It serves transmit queue N (its lowest) and no receive queue.
    Tx(u32),
    /// It serves no queue the kernel names (a driver that does not link them, as veth): its rank
    /// by id among the interface's instances that serve none (drivers add them in queue order).
    Position(u32),
}

/// Whether and how the kernel reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetdevView {
    Reported(NetdevReport),
    /// Not read: the root is not this machine's (`--root`), so its netlink answers would not be.
    NotThisMachine,
    /// The kernel has no `netdev` family, or a sandbox refuses the socket: why, for a notice.
    Unavailable(String),
}

impl NetdevView {
    /// The report, when there is one.
    pub fn report(&self) -> Option<&NetdevReport> {
        match self {
            NetdevView::Reported(r) => Some(r),
            _ => None,
        }
    }
}

/// The queue an IRQ serves as the kernel says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelQueue {
    /// The lowest receive queue its NAPI instance serves (a transmit queue when it serves none).
    pub queue: u32,
    /// `RxTx` when the instance serves the receive and the transmit queue of that index, else
    /// `Rx` or `Tx`.
    pub role: QueueRole,
    pub napi: u32,
}

impl NetdevReport {
    /// Interface `ifindex`'s instances and the queues each serves, indexed once (a report may
    /// hold hundreds of thousands of entries: every lookup of a plan goes through this).
    pub fn interface(&self, ifindex: u32) -> InterfaceNapis<'_> {
        let mut by_id: BTreeMap<u32, &NapiInstance> = BTreeMap::new();
        for n in self.napis.iter().filter(|n| n.ifindex == ifindex) {
            by_id.entry(n.id).or_insert(n);
        }
        let mut served: BTreeMap<u32, Vec<(QueueKind, u32)>> = BTreeMap::new();
        for q in self.queues.iter().filter(|q| q.ifindex == ifindex) {
            if let Some(napi) = q.napi {
                served.entry(napi).or_default().push((q.kind, q.id));
            }
        }
        for list in served.values_mut() {
            list.sort_unstable();
        }
        InterfaceNapis { by_id, served }
    }
}

/// One interface's part of a [`NetdevReport`]: its instances by id and, for each, the queues it
/// serves, ascending (receive before transmit).
#[derive(Debug, Clone, Default)]
pub struct InterfaceNapis<'r> {
    by_id: BTreeMap<u32, &'r NapiInstance>,
    served: BTreeMap<u32, Vec<(QueueKind, u32)>>,
}

impl<'r> InterfaceNapis<'r> {
    /// The ids of the instances, ascending (the order a driver that adds one per queue added
    /// them in).
    pub fn ids(&self) -> Vec<u32> {
        self.by_id.keys().copied().collect()
    }

    /// Every instance, by id.
    pub fn instances(&self) -> impl Iterator<Item = &'r NapiInstance> + '_ {
        self.by_id.values().copied()
    }

    /// Instance `napi`.
    pub fn instance(&self, napi: u32) -> Option<&'r NapiInstance> {
        self.by_id.get(&napi).copied()
    }

    /// The lowest queue instance `napi` serves (receive before transmit).
    pub fn lowest_queue(&self, napi: u32) -> Option<(QueueKind, u32)> {
        self.served.get(&napi).and_then(|l| l.first().copied())
    }

    /// The queues instance `napi` serves, ascending.
    pub fn served(&self, napi: u32) -> &[(QueueKind, u32)] {
        self.served.get(&napi).map_or(&[], Vec::as_slice)
    }

    /// Every instance's slot, by id. Guarantees: every instance has one; instances serving
    /// queues are told by their lowest queue, the others numbered 0, 1, ... in id order.
    pub fn slots(&self) -> BTreeMap<u32, NapiSlot> {
        let mut unlinked = 0;
        self.by_id
            .keys()
            .map(|&id| {
                let slot = match self.lowest_queue(id) {
                    Some((QueueKind::Rx, q)) => NapiSlot::Rx(q),
                    Some((QueueKind::Tx, q)) => NapiSlot::Tx(q),
                    None => {
                        unlinked += 1;
                        NapiSlot::Position(unlinked - 1)
                    }
                };
                (id, slot)
            })
            .collect()
    }
}

impl NetdevReport {
    /// The instance now in each slot of each interface, by (ifindex, slot); where two share
    /// one, the lowest id.
    pub fn by_slot(&self) -> BTreeMap<(u32, NapiSlot), u32> {
        let ifindexes: std::collections::BTreeSet<u32> = self.napis.iter().map(|n| n.ifindex).collect();
        let mut out = BTreeMap::new();
        for ifindex in ifindexes {
            for (id, slot) in self.interface(ifindex).slots() {
                out.entry((ifindex, slot)).or_insert(id);
            }
        }
        out
    }
}

/// Which queue each IRQ of interface `ifindex` serves, as the kernel says: through the NAPI
/// instance that names the IRQ and the queues that name the instance. Guarantees: only IRQs
/// whose NAPI instance names them and serves a queue; one queue per IRQ.
pub fn queues_by_irq(report: &NetdevReport, ifindex: u32) -> BTreeMap<u32, KernelQueue> {
    let index = report.interface(ifindex);
    let mut out = BTreeMap::new();
    for napi in index.instances() {
        let Some(irq) = napi.irq else { continue };
        let served = index.served(napi.id);
        let Some(&(kind, queue)) = served.first() else { continue };
        let role = match kind {
            QueueKind::Rx if served.binary_search(&(QueueKind::Tx, queue)).is_ok() => QueueRole::RxTx,
            QueueKind::Rx => QueueRole::Rx,
            QueueKind::Tx => QueueRole::Tx,
        };
        out.entry(irq).or_insert(KernelQueue { queue, role, napi: napi.id });
    }
    out
}

/// A NAPI thread (`napi/IF-ID`, a kernel thread of an interface running threaded NAPI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NapiThread {
    pub pid: u32,
    pub interface: String,
    /// The id of its NAPI instance (the number its name ends in).
    pub napi_id: u32,
    /// Its `Cpus_allowed_list`; `None` when unreadable.
    pub current: Option<CpuSet>,
    /// The CPU it last ran on (`/proc/PID/stat`'s `processor`).
    pub last_cpu: Option<u32>,
}

/// The interface and NAPI id a NAPI thread's name (`napi/eth0-8193`) gives; `None` for any other
/// name.
pub fn parse_thread_name(name: &str) -> Option<(&str, u32)> {
    let (interface, id) = name.strip_prefix("napi/")?.rsplit_once('-')?;
    let id = id.parse().ok()?;
    (!interface.is_empty()).then_some((interface, id))
}

/// A generic-netlink reply that could not be read: where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetlinkReplyError {
    #[error("netlink reply truncated at byte {offset} (a length of {len}, {remaining} bytes left)")]
    Truncated { offset: usize, len: usize, remaining: usize },
    /// The kernel answered with an error (a negative errno).
    #[error("the kernel answered error {errno}")]
    Kernel { errno: i32 },
}

/// `struct nlmsghdr` (16 bytes) + `struct genlmsghdr` (4 bytes).
const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;
/// `NLMSG_ERROR` and `NLMSG_DONE`.
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// One generic-netlink message's attributes, as (type without flags, payload).
pub type Attributes<'a> = Vec<(u16, &'a [u8])>;

/// The generic-netlink messages of `bytes` (one or more datagrams of a dump, concatenated), each
/// as its attributes (type, payload) after the generic header, and whether the dump's end
/// (`NLMSG_DONE`) was among them. An `NLMSG_ERROR` with a non-zero code is an error; its
/// acknowledgement (code 0) is skipped.
pub fn parse_genl_messages(bytes: &[u8]) -> Result<(Vec<Attributes<'_>>, bool), NetlinkReplyError> {
    let mut messages = Vec::new();
    let mut offset = 0;
    while offset + NLMSG_HDRLEN <= bytes.len() {
        let remaining = bytes.len() - offset;
        let len = u32_at(bytes, offset) as usize;
        if len < NLMSG_HDRLEN || len > remaining {
            return Err(NetlinkReplyError::Truncated { offset, len, remaining });
        }
        let kind = u16_at(bytes, offset + 4);
        let body = &bytes[offset + NLMSG_HDRLEN..offset + len];
        match kind {
            NLMSG_DONE => return Ok((messages, true)),
            NLMSG_ERROR => {
                let errno = if body.len() >= 4 { u32_at(body, 0) as i32 } else { -1 };
                if errno != 0 {
                    return Err(NetlinkReplyError::Kernel { errno });
                }
            }
            _ if body.len() >= GENL_HDRLEN => messages.push(attributes(&body[GENL_HDRLEN..], offset)?),
            _ => {}
        }
        offset += align4(len).min(remaining);
    }
    Ok((messages, false))
}

/// The attributes of a message body, as (type without flags, payload).
fn attributes(mut b: &[u8], offset: usize) -> Result<Vec<(u16, &[u8])>, NetlinkReplyError> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let len = u16_at(b, 0) as usize;
        if len < 4 || len > b.len() {
            return Err(NetlinkReplyError::Truncated { offset, len, remaining: b.len() });
        }
        out.push((u16_at(b, 2) & 0x3fff, &b[4..len]));
        b = &b[align4(len).min(b.len())..];
    }
    Ok(out)
}

/// The `u32` attribute `kind` of `attrs`, if present and 4 bytes long.
pub fn attr_u32(attrs: &[(u16, &[u8])], kind: u16) -> Option<u32> {
    attrs.iter().find(|(k, _)| *k == kind).and_then(|(_, v)| (v.len() == 4).then(|| u32_at(v, 0)))
}

/// The `uint` attribute `kind` of `attrs` (`NLA_UINT`: 4 or 8 bytes, as the value needs), if
/// present and of either length.
pub fn attr_uint(attrs: &[(u16, &[u8])], kind: u16) -> Option<u64> {
    let (_, v) = attrs.iter().find(|(k, _)| *k == kind)?;
    match v.len() {
        4 => Some(u64::from(u32_at(v, 0))),
        8 => Some(u64::from_ne_bytes(v[..8].try_into().ok()?)),
        _ => None,
    }
}

/// `NETDEV_A_NAPI_*` and `NETDEV_A_QUEUE_*` (include/uapi/linux/netdev.h).
const NAPI_IFINDEX: u16 = 1;
const NAPI_ID: u16 = 2;
const NAPI_IRQ: u16 = 3;
const NAPI_PID: u16 = 4;
pub const NAPI_DEFER_HARD_IRQS: u16 = 5;
pub const NAPI_GRO_FLUSH_TIMEOUT: u16 = 6;
pub const NAPI_IRQ_SUSPEND_TIMEOUT: u16 = 7;
pub const NAPI_THREADED: u16 = 8;
const QUEUE_ID: u16 = 1;
const QUEUE_IFINDEX: u16 = 2;
const QUEUE_TYPE: u16 = 3;
const QUEUE_NAPI_ID: u16 = 4;

/// The NAPI instances of a `napi-get` dump's messages; a message without an ifindex or id is
/// left out.
pub fn napis_of(messages: &[Vec<(u16, &[u8])>]) -> Vec<NapiInstance> {
    messages
        .iter()
        .filter_map(|a| {
            Some(NapiInstance {
                ifindex: attr_u32(a, NAPI_IFINDEX)?,
                id: attr_u32(a, NAPI_ID)?,
                irq: attr_u32(a, NAPI_IRQ),
                pid: attr_u32(a, NAPI_PID).filter(|&p| p > 0),
                threaded: attr_uint(a, NAPI_THREADED).map(NapiThreaded::of),
                settings: NapiSettings {
                    defer_hard_irqs: attr_u32(a, NAPI_DEFER_HARD_IRQS),
                    gro_flush_timeout: attr_uint(a, NAPI_GRO_FLUSH_TIMEOUT),
                    irq_suspend_timeout: attr_uint(a, NAPI_IRQ_SUSPEND_TIMEOUT),
                },
            })
        })
        .collect()
}

/// The attributes of a `napi-set` of instance `id`: its id, then each key to write (`threaded`
/// as the `u32` the kernel's policy takes; the timeouts as 8-byte `uint`s).
pub fn napi_set_attributes(id: u32, settings: &NapiSettings, threaded: Option<NapiThreaded>) -> Vec<(u16, Vec<u8>)> {
    let mut attrs = vec![(NAPI_ID, id.to_ne_bytes().to_vec())];
    if let Some(v) = settings.defer_hard_irqs {
        attrs.push((NAPI_DEFER_HARD_IRQS, v.to_ne_bytes().to_vec()));
    }
    if let Some(v) = settings.gro_flush_timeout {
        attrs.push((NAPI_GRO_FLUSH_TIMEOUT, v.to_ne_bytes().to_vec()));
    }
    if let Some(v) = settings.irq_suspend_timeout {
        attrs.push((NAPI_IRQ_SUSPEND_TIMEOUT, v.to_ne_bytes().to_vec()));
    }
    if let Some(t) = threaded {
        attrs.push((NAPI_THREADED, (t.value() as u32).to_ne_bytes().to_vec()));
    }
    attrs
}

/// The queues of a `queue-get` dump's messages; one without an ifindex, id or known type is left
/// out.
pub fn queues_of(messages: &[Vec<(u16, &[u8])>]) -> Vec<QueueNapi> {
    messages
        .iter()
        .filter_map(|a| {
            let kind = match attr_u32(a, QUEUE_TYPE)? {
                0 => QueueKind::Rx,
                1 => QueueKind::Tx,
                _ => return None,
            };
            Some(QueueNapi {
                ifindex: attr_u32(a, QUEUE_IFINDEX)?,
                id: attr_u32(a, QUEUE_ID)?,
                kind,
                napi: attr_u32(a, QUEUE_NAPI_ID),
            })
        })
        .collect()
}

/// The raw answers of one read of the family, as a snapshot keeps them: the bytes of the
/// `napi-get` and `queue-get` dumps (empty for a command the kernel does not have).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetdevDumps {
    pub napi_get: Vec<u8>,
    pub queue_get: Vec<u8>,
}

impl NetdevDumps {
    /// What the two dumps report. Guarantees: an empty dump reports nothing; a malformed one, or
    /// one holding the kernel's error, is an error.
    pub fn report(&self) -> Result<NetdevReport, NetlinkReplyError> {
        let (napis, _) = parse_genl_messages(&self.napi_get)?;
        let (queues, _) = parse_genl_messages(&self.queue_get)?;
        Ok(NetdevReport { napis: napis_of(&napis), queues: queues_of(&queues) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes the hex of a capture.
    fn hex(text: &str) -> Vec<u8> {
        let t: String = text.split_whitespace().collect();
        (0..t.len()).step_by(2).map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn a_captured_napi_and_queue_dump_reads_as_the_kernel_sent_it() {
        // Captured from a 6.18 kernel (virtio_net, one queue pair, no IRQ reported).
        let napi = hex(include_str!("../../tests/data/netlink/napi-get-6.18-virtio.hex"));
        let (msgs, done) = parse_genl_messages(&napi).unwrap();
        assert!(done);
        // 6.17 and later say each instance's own threaded mode.
        let threaded = Some(NapiThreaded::Disabled);
        // 6.13 and later say its mitigation: the kernel's defaults, nothing deferred.
        let zeros = NapiSettings { defer_hard_irqs: Some(0), gro_flush_timeout: Some(0), irq_suspend_timeout: Some(0) };
        assert_eq!(
            napis_of(&msgs),
            [NapiInstance { ifindex: 4, id: 257, irq: None, pid: None, threaded, settings: zeros }]
        );
        let queue = hex(include_str!("../../tests/data/netlink/queue-get-6.18-virtio.hex"));
        let (msgs, done) = parse_genl_messages(&queue).unwrap();
        assert!(done);
        let q = queues_of(&msgs);
        assert_eq!(q.len(), 4);
        assert_eq!(q[2], QueueNapi { ifindex: 4, id: 0, kind: QueueKind::Rx, napi: Some(257) });
        assert_eq!(q[3], QueueNapi { ifindex: 4, id: 0, kind: QueueKind::Tx, napi: None });
        let report = NetdevReport { napis: napis_of(&parse_genl_messages(&napi).unwrap().0), queues: q };
        assert!(queues_by_irq(&report, 4).is_empty(), "no IRQ reported: nothing to take from it");
        assert_eq!(parse_thread_name("napi/eth0-8193"), Some(("eth0", 8193)));
        assert_eq!(parse_thread_name("napi/br-lan-12"), Some(("br-lan", 12)));
        assert_eq!(parse_thread_name("napi/eth0-"), None);
        assert_eq!(parse_thread_name("kworker/0:1"), None);
    }

    #[test]
    fn a_72_e1000e_names_the_irq_of_its_receive_instance() {
        // Captured from Debian's 7.2 (tests/vm's netdev survey): e1000e hot-added as ifindex 2
        // beside vmxnet3; its one receive instance names IRQ 42 and its own threaded mode.
        let napi = hex(include_str!("../../tests/data/netlink/napi-get-7.2-e1000e.hex"));
        let (msgs, done) = parse_genl_messages(&napi).unwrap();
        assert!(done);
        let napis = napis_of(&msgs);
        let with_irq: Vec<&NapiInstance> = napis.iter().filter(|n| n.irq.is_some()).collect();
        assert_eq!(with_irq.len(), 1, "{napis:?}");
        let e1000e = with_irq[0];
        assert_eq!((e1000e.irq, e1000e.threaded, e1000e.pid), (Some(42), Some(NapiThreaded::Disabled), None));
        assert!(napis.iter().all(|n| n.threaded == Some(NapiThreaded::Disabled)));
        let queue = hex(include_str!("../../tests/data/netlink/queue-get-7.2-e1000e.hex"));
        let report = report_of(&napi, &queue);
        let by_irq = queues_by_irq(&report, e1000e.ifindex);
        assert_eq!(by_irq.get(&42).map(|q| (q.queue, q.napi)), Some((0, e1000e.id)), "{by_irq:?}");
    }

    fn report_of(napi: &[u8], queue: &[u8]) -> NetdevReport {
        NetdevDumps { napi_get: napi.to_vec(), queue_get: queue.to_vec() }.report().unwrap()
    }

    #[test]
    fn threaded_is_a_uint_of_four_or_eight_bytes() {
        let four = 1u32.to_ne_bytes();
        let eight = 2u64.to_ne_bytes();
        let attrs: Vec<(u16, &[u8])> = vec![(NAPI_THREADED, &four), (9, &eight), (10, &[1, 2])];
        assert_eq!(attr_uint(&attrs, NAPI_THREADED).map(NapiThreaded::of), Some(NapiThreaded::Enabled));
        assert_eq!(attr_uint(&attrs, 9).map(NapiThreaded::of), Some(NapiThreaded::BusyPoll));
        assert_eq!(attr_uint(&attrs, 10), None, "neither 4 nor 8 bytes");
        assert_eq!(NapiThreaded::of(7), NapiThreaded::Other(7));
        assert!(NapiThreaded::Enabled.is_threaded() && !NapiThreaded::Disabled.is_threaded());
    }

    #[test]
    fn an_error_or_a_truncated_reply_is_an_error() {
        // NLMSG_ERROR with -EOPNOTSUPP (95).
        let mut err = vec![0u8; 20];
        err[0..4].copy_from_slice(&20u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-95i32).to_ne_bytes());
        assert_eq!(parse_genl_messages(&err), Err(NetlinkReplyError::Kernel { errno: -95 }));
        let mut short = err.clone();
        short[0..4].copy_from_slice(&64u32.to_ne_bytes());
        assert!(matches!(parse_genl_messages(&short), Err(NetlinkReplyError::Truncated { offset: 0, .. })));
    }

    #[test]
    fn an_irq_serves_the_lowest_rx_queue_of_its_napi_instance() {
        let napi = |id, irq| NapiInstance {
            ifindex: 3,
            id,
            irq,
            pid: None,
            threaded: None,
            settings: NapiSettings::default(),
        };
        let queue = |id, kind, napi| QueueNapi { ifindex: 3, id, kind, napi };
        let report = NetdevReport {
            napis: vec![napi(8193, Some(40)), napi(8194, Some(41)), napi(8195, None), napi(8196, Some(43))],
            queues: vec![
                queue(0, QueueKind::Rx, Some(8194)),
                queue(1, QueueKind::Rx, Some(8193)),
                queue(0, QueueKind::Tx, Some(8194)),
                queue(1, QueueKind::Tx, Some(8193)),
                queue(2, QueueKind::Tx, Some(8196)),
                queue(2, QueueKind::Rx, Some(8195)),
            ],
        };
        let by_irq = queues_by_irq(&report, 3);
        let q = |queue, role, napi| Some(KernelQueue { queue, role, napi });
        assert_eq!(by_irq.get(&40).copied(), q(1, QueueRole::RxTx, 8193));
        assert_eq!(by_irq.get(&41).copied(), q(0, QueueRole::RxTx, 8194));
        assert_eq!(by_irq.get(&43).copied(), q(2, QueueRole::Tx, 8196), "a tx-only instance");
        assert_eq!(by_irq.len(), 3);
        assert!(queues_by_irq(&report, 9).is_empty(), "another interface");
    }

    #[test]
    fn a_report_of_two_hundred_thousand_instances_is_indexed_once() {
        // Each lookup went through every entry (hundreds of thousands of instances and queues
        // from a snapshot made a plan take minutes): now one index per interface.
        let n = 200_000u32;
        let napis = (0..n)
            .map(|i| NapiInstance {
                ifindex: 3,
                id: i,
                irq: Some(i),
                pid: None,
                threaded: None,
                settings: NapiSettings::default(),
            })
            .collect();
        let queues = (0..n)
            .flat_map(|i| {
                [QueueKind::Rx, QueueKind::Tx].map(|kind| QueueNapi { ifindex: 3, id: i, kind, napi: Some(i) })
            })
            .collect();
        let report = NetdevReport { napis, queues };
        let by_irq = queues_by_irq(&report, 3);
        assert_eq!(by_irq.len(), n as usize);
        assert_eq!(by_irq.get(&(n - 1)), Some(&KernelQueue { queue: n - 1, role: QueueRole::RxTx, napi: n - 1 }));
        let index = report.interface(3);
        assert_eq!(index.ids().len(), n as usize);
        assert_eq!(index.lowest_queue(7), Some((QueueKind::Rx, 7)));
        assert!(report.interface(4).ids().is_empty());
    }
}
