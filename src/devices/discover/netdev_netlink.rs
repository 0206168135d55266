//! Asking the running kernel's `netdev` generic-netlink family which NAPI instance serves each
//! queue and which IRQ and thread each instance has (see [`crate::devices::napi`]).
//!
//! One blocking `NETLINK_GENERIC` socket per read, with a receive timeout: the family's id from
//! the controller (`CTRL_CMD_GETFAMILY`), then a `napi-get` and a `queue-get` dump. A kernel
//! without the family (before 6.3), without one of the two commands (6.3 to 6.7), or a sandbox
//! that refuses the socket gives what it can, or [`NetdevView::Unavailable`] with why: never an
//! error of the pass.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use nix::sys::socket::{bind, recv, send, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr};
use nix::sys::socket::{SockFlag, SockProtocol, SockType};
use nix::sys::time::TimeVal;

use crate::devices::napi::{napis_of, parse_genl_messages, queues_of, NetdevReport, NetdevView};

/// The generic-netlink controller's family id (`GENL_ID_CTRL`) and what is asked of it.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// `NETDEV_CMD_QUEUE_GET` and `NETDEV_CMD_NAPI_GET`.
const NETDEV_CMD_QUEUE_GET: u8 = 10;
const NETDEV_CMD_NAPI_GET: u8 = 11;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
/// How long one answer may take: the kernel answers at once, a hung socket must not hang a pass.
const TIMEOUT: Duration = Duration::from_secs(1);
/// The most bytes a dump may take: a machine with 64 NICs of 128 queues answers in ~1 MB.
const MAX_DUMP: usize = 16 << 20;

/// What this machine's kernel reports (see the module documentation).
pub fn read_netdev() -> NetdevView {
    match ask() {
        Ok(report) => NetdevView::Reported(report),
        Err(why) => NetdevView::Unavailable(why),
    }
}

fn ask() -> Result<NetdevReport, String> {
    let fd = socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkGeneric)
        .map_err(|e| format!("cannot open a generic netlink socket ({e})"))?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(|e| format!("cannot bind a generic netlink socket ({e})"))?;
    let _ = setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(TIMEOUT.as_secs() as i64, 0));
    let family = family_id(&fd)?;
    let napis = match dump(&fd, family, NETDEV_CMD_NAPI_GET, 2) {
        Ok(m) => m,
        // A kernel with the family but not the command (6.3 to 6.7): nothing of that part.
        Err(Asked::Kernel(_)) => Vec::new(),
        Err(Asked::Failed(why)) => return Err(why),
    };
    let queues = match dump(&fd, family, NETDEV_CMD_QUEUE_GET, 3) {
        Ok(m) => m,
        Err(Asked::Kernel(_)) => Vec::new(),
        Err(Asked::Failed(why)) => return Err(why),
    };
    Ok(NetdevReport { napis, queues })
}

/// A failed question: the kernel's answer was an error (errno), or the socket failed (why).
enum Asked {
    Kernel(i32),
    Failed(String),
}

/// A request of `cmd` to `family` with attributes, flags and sequence number.
fn request(family: u16, cmd: u8, flags: u16, seq: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut body = vec![cmd, 1, 0, 0];
    for (kind, value) in attrs {
        let len = 4 + value.len();
        body.extend_from_slice(&(len as u16).to_ne_bytes());
        body.extend_from_slice(&kind.to_ne_bytes());
        body.extend_from_slice(value);
        body.resize((body.len() + 3) & !3, 0);
    }
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&family.to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&body);
    msg
}

/// Sends `msg` and reads answers until the end of a dump (or the one answer of a plain request).
fn exchange(fd: &OwnedFd, msg: &[u8], dumping: bool) -> Result<Vec<u8>, Asked> {
    send(fd.as_raw_fd(), msg, MsgFlags::empty()).map_err(|e| Asked::Failed(format!("netlink send failed ({e})")))?;
    let mut all = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())
            .map_err(|e| Asked::Failed(format!("no netlink answer ({e})")))?;
        all.extend_from_slice(&buf[..n]);
        match parse_genl_messages(&all) {
            Err(crate::devices::napi::NetlinkReplyError::Kernel { errno }) => return Err(Asked::Kernel(errno)),
            Err(e) => return Err(Asked::Failed(e.to_string())),
            Ok((_, true)) => return Ok(all),
            Ok(_) if !dumping => return Ok(all),
            Ok(_) if all.len() > MAX_DUMP => return Err(Asked::Failed(format!("a dump over {MAX_DUMP} bytes"))),
            Ok(_) => {}
        }
    }
}

/// The `netdev` family's id.
fn family_id(fd: &OwnedFd) -> Result<u16, String> {
    let msg = request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 1, &[(CTRL_ATTR_FAMILY_NAME, b"netdev\0")]);
    let answer = match exchange(fd, &msg, false) {
        Ok(a) => a,
        Err(Asked::Kernel(errno)) if errno == -(nix::errno::Errno::ENOENT as i32) => {
            return Err("the kernel has no netdev netlink family (it came with 6.3)".into())
        }
        Err(Asked::Kernel(errno)) => return Err(format!("the netlink controller answered error {errno}")),
        Err(Asked::Failed(why)) => return Err(why),
    };
    let (messages, _) = parse_genl_messages(&answer).map_err(|e| e.to_string())?;
    messages
        .iter()
        .find_map(|attrs| attrs.iter().find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID).map(|(_, v)| v))
        .filter(|v| v.len() >= 2)
        .map(|v| u16::from_ne_bytes([v[0], v[1]]))
        .ok_or_else(|| "the netlink controller named no id for the netdev family".into())
}

/// A dump of `cmd`, as the messages' decoded items.
fn dump<T>(fd: &OwnedFd, family: u16, cmd: u8, seq: u32) -> Result<Vec<T>, Asked>
where
    T: FromMessages,
{
    let answer = exchange(fd, &request(family, cmd, NLM_F_DUMP, seq, &[]), true)?;
    let (messages, _) = parse_genl_messages(&answer).map_err(|e| Asked::Failed(e.to_string()))?;
    Ok(T::from_messages(&messages))
}

/// How a dump's messages become items.
trait FromMessages: Sized {
    fn from_messages(messages: &[Vec<(u16, &[u8])>]) -> Vec<Self>;
}

impl FromMessages for crate::devices::napi::NapiInstance {
    fn from_messages(messages: &[Vec<(u16, &[u8])>]) -> Vec<Self> {
        napis_of(messages)
    }
}

impl FromMessages for crate::devices::napi::QueueNapi {
    fn from_messages(messages: &[Vec<(u16, &[u8])>]) -> Vec<Self> {
        queues_of(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::napi::attr_u32;

    #[test]
    fn a_request_is_laid_out_as_the_kernel_reads_it() {
        let msg = request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 7, &[(CTRL_ATTR_FAMILY_NAME, b"netdev\0")]);
        assert_eq!(msg.len(), 16 + 4 + 4 + 8, "header, genl header, attribute header, name padded to 8");
        assert_eq!(u32::from_ne_bytes([msg[0], msg[1], msg[2], msg[3]]) as usize, msg.len());
        assert_eq!(&msg[24..31], b"netdev\0");
        assert_eq!(attr_u32(&[(1, &7u32.to_ne_bytes()[..])], 1), Some(7));
    }

    /// The real kernel of this machine, when it has the family: the read works and gives
    /// consistent data (every queue's NAPI instance exists), or says why not.
    #[test]
    fn this_machines_kernel_answers_or_says_why_not() {
        match read_netdev() {
            NetdevView::Reported(r) => {
                for q in r.queues.iter().filter_map(|q| q.napi.map(|n| (q.ifindex, n))) {
                    assert!(r.napis.is_empty() || r.napis.iter().any(|n| (n.ifindex, n.id) == q), "{q:?}: {r:?}");
                }
            }
            NetdevView::Unavailable(why) => assert!(!why.is_empty()),
            NetdevView::NotThisMachine => unreachable!(),
        }
    }
}
