//! rtnetlink link messages: a pure parser for `RTM_NEWLINK`/`RTM_DELLINK` and the link source.
//!
//! Many NIC drivers allocate their IRQs when the link is brought up (`ndo_open`), which emits no
//! uevent; this source sees it. It guarantees: every link message becomes one
//! [`Trigger::Link`]; an overflow (ENOBUFS), a truncated datagram or one that does not parse
//! becomes one [`Trigger::Overflow`] (a full rescan), sent once the socket is drained, and the
//! source carries on.
//!
//! Layout (all integers in host byte order, every item padded to 4 bytes):
//! `nlmsghdr { u32 len; u16 type; u16 flags; u32 seq; u32 pid }`, then for link messages
//! `ifinfomsg { u8 family; u8 pad; u16 type; i32 index; u32 flags; u32 change }`, then attributes
//! `rtattr { u16 len; u16 type }` + data, `IFLA_IFNAME` holding the NUL-terminated name.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{bind, recv, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::mpsc;

use super::{set_recv_buffer, EventsError, Trigger};

pub(crate) const RTM_NEWLINK: u16 = 16;
pub(crate) const RTM_DELLINK: u16 = 17;
pub(crate) const IFLA_IFNAME: u16 = 3;
pub const IFF_UP: u32 = 0x1;
#[cfg(test)]
pub(crate) const IFF_LOWER_UP: u32 = 0x1_0000;
/// The multicast group of link notifications.
pub(crate) const RTMGRP_LINK: u32 = 1;
const NLMSG_HDRLEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
const RTA_HDRLEN: usize = 4;

/// Errors of parsing an rtnetlink datagram; `offset` is the byte offset in the datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RtnetlinkParseError {
    #[error("netlink message at offset {offset}: length {len} does not fit the {remaining} bytes left (minimum 16)")]
    MessageLength { offset: usize, len: usize, remaining: usize },
    #[error("link message at offset {offset}: {len}-byte payload is shorter than ifinfomsg (16 bytes)")]
    ShortIfinfo { offset: usize, len: usize },
    #[error(
        "link message at offset {offset}: attribute length {len} does not fit the {remaining} bytes left (minimum 4)"
    )]
    AttributeLength { offset: usize, len: usize, remaining: usize },
    #[error("link message at offset {offset}: interface index {index} is not positive")]
    Index { offset: usize, index: i32 },
}

/// One link notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkMessage {
    /// `RTM_DELLINK`: the link is gone.
    pub deleted: bool,
    pub ifindex: u32,
    /// `IFLA_IFNAME`, when present.
    pub name: Option<String>,
    /// `ifi_flags` (`IFF_UP`, `IFF_LOWER_UP`, …).
    pub flags: u32,
}

impl LinkMessage {
    /// The trigger: `up` is administratively up (`IFF_UP`, when drivers open the device and
    /// allocate IRQs) on a link that still exists; carrier (`IFF_LOWER_UP`) does not matter.
    pub fn trigger(&self) -> Trigger {
        Trigger::Link { ifindex: self.ifindex, name: self.name.clone(), up: !self.deleted && self.flags & IFF_UP != 0 }
    }
}

fn u16_at(buf: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([buf[at], buf[at + 1]])
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

fn align4(len: usize) -> usize {
    (len + 3) & !3
}

/// Parses every message of a datagram, keeping the link messages in order and skipping the
/// others (`NLMSG_DONE`, errors, other families). Any length that does not fit is an error: the
/// caller cannot know what was lost.
pub(crate) fn parse_link_messages(datagram: &[u8]) -> Result<Vec<LinkMessage>, RtnetlinkParseError> {
    let mut links = Vec::new();
    let mut offset = 0;
    while offset < datagram.len() {
        let remaining = datagram.len() - offset;
        let len = if remaining >= 4 { u32_at(datagram, offset) as usize } else { remaining };
        if remaining < NLMSG_HDRLEN || len < NLMSG_HDRLEN || len > remaining {
            return Err(RtnetlinkParseError::MessageLength { offset, len, remaining });
        }
        let kind = u16_at(datagram, offset + 4);
        if kind == RTM_NEWLINK || kind == RTM_DELLINK {
            let payload = &datagram[offset + NLMSG_HDRLEN..offset + len];
            links.push(parse_ifinfo(payload, offset, kind == RTM_DELLINK)?);
        }
        offset += align4(len).min(remaining);
    }
    Ok(links)
}

/// Parses `ifinfomsg` and its attributes (the payload of one link message at `offset`).
fn parse_ifinfo(payload: &[u8], offset: usize, deleted: bool) -> Result<LinkMessage, RtnetlinkParseError> {
    if payload.len() < IFINFOMSG_LEN {
        return Err(RtnetlinkParseError::ShortIfinfo { offset, len: payload.len() });
    }
    let index = u32_at(payload, 4) as i32;
    let ifindex = u32::try_from(index).ok().filter(|&i| i > 0).ok_or(RtnetlinkParseError::Index { offset, index })?;
    let flags = u32_at(payload, 8);
    let mut name = None;
    let mut at = IFINFOMSG_LEN;
    while at < payload.len() {
        let remaining = payload.len() - at;
        let len = if remaining >= 2 { u16_at(payload, at) as usize } else { remaining };
        if remaining < RTA_HDRLEN || len < RTA_HDRLEN || len > remaining {
            return Err(RtnetlinkParseError::AttributeLength { offset, len, remaining });
        }
        if u16_at(payload, at + 2) == IFLA_IFNAME {
            let data = &payload[at + RTA_HDRLEN..at + len];
            let text = data.split(|&b| b == 0).next().unwrap_or_default();
            name = Some(String::from_utf8_lossy(text).into_owned());
        }
        at += align4(len).min(remaining);
    }
    Ok(LinkMessage { deleted, ifindex, name, flags })
}

/// The rtnetlink socket, bound to the link group and registered with the tokio reactor.
pub(crate) struct LinkMonitor {
    socket: AsyncFd<OwnedFd>,
}

/// Large enough for a link message with VF information; longer datagrams count as overflows.
const RECV_BUFFER: usize = 128 * 1024;

impl LinkMonitor {
    /// Opens a `NETLINK_ROUTE` socket bound to `RTMGRP_LINK` with a receive buffer of
    /// `recv_buffer_bytes`. Must be called inside a tokio runtime.
    pub fn open(recv_buffer_bytes: usize) -> Result<LinkMonitor, EventsError> {
        let flags = SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC;
        let fd = socket(AddressFamily::Netlink, SockType::Raw, flags, SockProtocol::NetlinkRoute)
            .map_err(|e| EventsError::Rtnetlink(e.into()))?;
        bind(fd.as_raw_fd(), &NetlinkAddr::new(0, RTMGRP_LINK)).map_err(|e| EventsError::Rtnetlink(e.into()))?;
        set_recv_buffer(std::os::fd::AsFd::as_fd(&fd), recv_buffer_bytes);
        // SAFETY: an OwnedFd stays open and returns the same descriptor until the AsyncFd drops it.
        #[allow(unsafe_code)]
        let socket = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(|e| EventsError::Register { what: "the rtnetlink socket", source: e.into_parts().1 })?;
        Ok(LinkMonitor { socket })
    }

    /// Forwards triggers until the receiver is dropped. On each readiness, reads every pending
    /// datagram before waiting again. Like the uevent source, an overflow is reported once the
    /// socket is drained, after every message lost in that episode.
    pub async fn run(self, tx: mpsc::Sender<Trigger>) {
        let mut buf = vec![0u8; RECV_BUFFER];
        let mut overflowed = false;
        loop {
            let mut guard = match self.socket.readable().await {
                Ok(guard) => guard,
                Err(err) => {
                    tracing::error!("rtnetlink source stopped: waiting for readiness failed: {err}");
                    let _ = tx.send(Trigger::Overflow).await;
                    return;
                }
            };
            loop {
                let links = match recv(guard.get_inner().as_raw_fd(), &mut buf, MsgFlags::MSG_TRUNC) {
                    Ok(len) if len > buf.len() => {
                        tracing::warn!("rtnetlink datagram of {len} bytes truncated: asking for a full rescan");
                        overflowed = true;
                        continue;
                    }
                    Ok(len) => match parse_link_messages(&buf[..len]) {
                        Ok(links) => links,
                        Err(err) => {
                            tracing::warn!("unparsable rtnetlink datagram ({err}): asking for a full rescan");
                            overflowed = true;
                            continue;
                        }
                    },
                    Err(Errno::EAGAIN) => {
                        guard.clear_ready();
                        break;
                    }
                    Err(Errno::EINTR) => continue,
                    Err(Errno::ENOBUFS) => {
                        overflowed = true;
                        continue;
                    }
                    Err(err) => {
                        tracing::error!("rtnetlink source stopped: receive failed: {}", io::Error::from(err));
                        let _ = tx.send(Trigger::Overflow).await;
                        return;
                    }
                };
                for link in &links {
                    if tx.send(link.trigger()).await.is_err() {
                        return;
                    }
                }
            }
            if std::mem::take(&mut overflowed) {
                tracing::warn!("rtnetlink socket overflowed (ENOBUFS): asking for a full rescan");
                if tx.send(Trigger::Overflow).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One netlink message built from the documented layout: header, ifinfomsg, attributes.
    fn link_message(kind: u16, index: i32, flags: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&[0u8 /* AF_UNSPEC */, 0]);
        body.extend_from_slice(&1u16.to_ne_bytes()); // ARPHRD_ETHER
        body.extend_from_slice(&index.to_ne_bytes());
        body.extend_from_slice(&flags.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes()); // ifi_change
        for (kind, data) in attrs {
            body.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
            body.extend_from_slice(&kind.to_ne_bytes());
            body.extend_from_slice(data);
            body.resize(align4(body.len()), 0);
        }
        let mut msg = Vec::new();
        msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&0u16.to_ne_bytes()); // flags
        msg.extend_from_slice(&0u32.to_ne_bytes()); // seq
        msg.extend_from_slice(&0u32.to_ne_bytes()); // pid
        msg.extend_from_slice(&body);
        msg
    }

    const IFLA_MTU: u16 = 4;

    #[test]
    fn newlink_with_name_and_flags_after_other_attributes() {
        let msg = link_message(
            RTM_NEWLINK,
            7,
            IFF_UP | IFF_LOWER_UP | 0x1000, /* IFF_MULTICAST */
            &[(IFLA_MTU, &1500u32.to_ne_bytes()), (IFLA_IFNAME, b"eth0\0")],
        );
        let links = parse_link_messages(&msg).unwrap();
        let want = LinkMessage { deleted: false, ifindex: 7, name: Some("eth0".into()), flags: 0x1_1001 };
        assert_eq!(links, vec![want]);
        assert_eq!(links[0].trigger(), Trigger::Link { ifindex: 7, name: Some("eth0".into()), up: true });
    }

    #[test]
    fn up_follows_iff_up_and_dellink_is_down() {
        let admin_up_no_carrier = link_message(RTM_NEWLINK, 3, IFF_UP, &[(IFLA_IFNAME, b"veth0\0")]);
        let carrier_only = link_message(RTM_NEWLINK, 3, IFF_LOWER_UP, &[]);
        let deleted = link_message(RTM_DELLINK, 3, IFF_UP | IFF_LOWER_UP, &[(IFLA_IFNAME, b"veth0\0")]);
        let datagram = [admin_up_no_carrier, carrier_only, deleted].concat();
        let ups: Vec<_> = parse_link_messages(&datagram)
            .unwrap()
            .iter()
            .map(|m| match m.trigger() {
                Trigger::Link { up, .. } => up,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ups, [true, false, false]);
    }

    #[test]
    fn name_with_odd_length_is_padded_and_the_next_message_still_parses() {
        // "abcde\0" is 6 bytes: the attribute is 10 bytes, padded to 12.
        let first = link_message(RTM_NEWLINK, 1, 0, &[(IFLA_IFNAME, b"abcde\0"), (IFLA_MTU, &9000u32.to_ne_bytes())]);
        let second = link_message(RTM_NEWLINK, 2, 0, &[(IFLA_IFNAME, b"x\0")]);
        let links = parse_link_messages(&[first, second].concat()).unwrap();
        let names: Vec<_> = links.iter().map(|l| (l.ifindex, l.name.clone().unwrap())).collect();
        assert_eq!(names, [(1, "abcde".to_string()), (2, "x".to_string())]);
    }

    #[test]
    fn other_message_types_are_skipped() {
        let mut done = link_message(3 /* NLMSG_DONE */, 0, 0, &[]);
        done.truncate(20);
        done[..4].copy_from_slice(&20u32.to_ne_bytes());
        let newaddr = link_message(20 /* RTM_NEWADDR */, 5, 0, &[]);
        let link = link_message(RTM_DELLINK, 9, 0, &[]);
        let links = parse_link_messages(&[done, newaddr, link].concat()).unwrap();
        assert_eq!(links, vec![LinkMessage { deleted: true, ifindex: 9, name: None, flags: 0 }]);
    }

    #[test]
    fn lengths_that_do_not_fit_are_errors() {
        let mut msg = link_message(RTM_NEWLINK, 4, 0, &[(IFLA_IFNAME, b"eth1\0")]);
        let full = msg.len();
        let cut = &msg[..full - 4];
        assert_eq!(
            parse_link_messages(cut),
            Err(RtnetlinkParseError::MessageLength { offset: 0, len: full, remaining: full - 4 })
        );
        // The attribute claims 40 bytes but only 8 follow the ifinfomsg.
        msg[32..34].copy_from_slice(&40u16.to_ne_bytes());
        assert_eq!(
            parse_link_messages(&msg),
            Err(RtnetlinkParseError::AttributeLength { offset: 0, len: 40, remaining: 12 })
        );
        let short = link_message(RTM_NEWLINK, 4, 0, &[]);
        let mut short = short[..24].to_vec();
        short[..4].copy_from_slice(&24u32.to_ne_bytes());
        assert_eq!(parse_link_messages(&short), Err(RtnetlinkParseError::ShortIfinfo { offset: 0, len: 8 }));
        let negative = link_message(RTM_NEWLINK, -2, 0, &[]);
        assert_eq!(parse_link_messages(&negative), Err(RtnetlinkParseError::Index { offset: 0, index: -2 }));
    }
}
