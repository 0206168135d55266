//! Asking the running kernel's `netdev` generic-netlink family which NAPI instance serves each
//! queue and which IRQ and thread each instance has (see [`crate::devices::napi`]).
//!
//! One blocking `NETLINK_GENERIC` socket per read, with a receive timeout: the family's id from
//! the controller (`CTRL_CMD_GETFAMILY`), then a `napi-get` and a `queue-get` dump. A kernel
//! without the family (before 6.3), without one of the two commands (6.3 to 6.7), or a sandbox
//! that refuses the socket gives what it can, or [`NetdevView::Unavailable`] with why: never an
//! error of the pass. A snapshot keeps the raw answers ([`capture_netdev`]) below its root, where
//! [`read_captured_netdev`] finds them.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use nix::sys::socket::{bind, recv, send, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr};
use nix::sys::socket::{SockFlag, SockProtocol, SockType};
use nix::sys::time::TimeVal;

use crate::devices::napi::{parse_genl_messages, NetdevDumps, NetdevView};
use crate::sysfs::Root;

/// The generic-netlink controller's family id (`GENL_ID_CTRL`) and what is asked of it.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// `NETDEV_CMD_QUEUE_GET` and `NETDEV_CMD_NAPI_GET`.
const NETDEV_CMD_QUEUE_GET: u8 = 10;
pub(crate) const NETDEV_CMD_NAPI_GET: u8 = 11;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
/// How long one answer may take: the kernel answers at once, a hung socket must not hang a pass.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(1);
/// The most bytes a dump may take: a machine with 64 NICs of 128 queues answers in ~1 MB.
const MAX_DUMP: usize = 16 << 20;

/// Where a snapshot keeps the family's answers, below its root: a plan of the snapshot reads
/// them as the source machine's kernel gave them.
pub const CAPTURED_NAPI_GET: &str = "irqwise-snapshot/netdev-napi-get.bin";
pub const CAPTURED_QUEUE_GET: &str = "irqwise-snapshot/netdev-queue-get.bin";
/// The largest kept answer read: 8 MiB is over 100,000 queues or instances (a machine of 8,192
/// CPUs with four NICs of a queue pair per CPU answers about 4 MiB); past it the snapshot is
/// not a machine's, and its answers are not read.
pub const CAPTURED_LIMIT: u64 = 8 << 20;

/// What this machine's kernel reports (see the module documentation).
pub fn read_netdev() -> NetdevView {
    match capture_netdev().and_then(|dumps| dumps.report().map_err(|e| format!("its answer cannot be read ({e})"))) {
        Ok(report) => NetdevView::Reported(report),
        Err(why) => NetdevView::Unavailable(why),
    }
}

/// What a snapshot's kernel reported, from the answers it kept below `root`
/// ([`CAPTURED_NAPI_GET`], [`CAPTURED_QUEUE_GET`]): `NotThisMachine` when it kept none (the
/// source's kernel could not be asked, or an older snapshot), `Unavailable` naming the file that
/// cannot be read.
pub fn read_captured_netdev(root: &Root) -> NetdevView {
    let read = |rel: &str| root.read_bytes_limited_optional(rel, CAPTURED_LIMIT).map_err(|e| e.to_string());
    let (napi_get, queue_get) = match (read(CAPTURED_NAPI_GET), read(CAPTURED_QUEUE_GET)) {
        (Ok(None), Ok(None)) => return NetdevView::NotThisMachine,
        (Ok(n), Ok(q)) => (n.unwrap_or_default(), q.unwrap_or_default()),
        (Err(e), _) | (_, Err(e)) => return NetdevView::Unavailable(e),
    };
    match (NetdevDumps { napi_get, queue_get }).report() {
        Ok(report) => NetdevView::Reported(report),
        Err(e) => NetdevView::Unavailable(format!(
            "{} or {}: {e}",
            root.path(CAPTURED_NAPI_GET).display(),
            root.path(CAPTURED_QUEUE_GET).display()
        )),
    }
}

/// The raw answers of this machine's kernel to the two dumps, or why it cannot be asked.
pub fn capture_netdev() -> Result<NetdevDumps, String> {
    let fd = open_socket()?;
    let family = family_id(&fd)?;
    let dump = |cmd: u8, seq: u32| match exchange(&fd, &request(family, cmd, NLM_F_DUMP, seq, &[]), true) {
        Ok(bytes) => Ok(bytes),
        // A kernel with the family but not the command (6.3 to 6.7): nothing of that part.
        Err(Asked::Kernel(_)) => Ok(Vec::new()),
        Err(Asked::Failed(why)) => Err(why),
    };
    Ok(NetdevDumps { napi_get: dump(NETDEV_CMD_NAPI_GET, 2)?, queue_get: dump(NETDEV_CMD_QUEUE_GET, 3)? })
}

/// A socket to the `netdev` family and the family's id, for asking one thing at a time
/// ([`ask_netdev`]): the writes of [`crate::apply::napi_socket`].
pub(crate) fn open_netdev() -> Result<(OwnedFd, u16), String> {
    let fd = open_socket()?;
    let family = family_id(&fd)?;
    Ok((fd, family))
}

/// One request of `cmd` to the `netdev` family (id `family`) and its one answer.
pub(crate) fn ask_netdev(
    fd: &OwnedFd,
    family: u16,
    (cmd, flags, seq): (u8, u16, u32),
    attrs: &[(u16, &[u8])],
) -> Result<Vec<u8>, Asked> {
    exchange(fd, &request(family, cmd, flags, seq, attrs), false)
}

/// A bound generic-netlink socket with the receive timeout.
fn open_socket() -> Result<OwnedFd, String> {
    let fd = socket(AddressFamily::Netlink, SockType::Raw, SockFlag::SOCK_CLOEXEC, SockProtocol::NetlinkGeneric)
        .map_err(|e| format!("cannot open a generic netlink socket ({e})"))?;
    bind(fd.as_raw_fd(), &NetlinkAddr::new(0, 0)).map_err(|e| format!("cannot bind a generic netlink socket ({e})"))?;
    let _ = setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(TIMEOUT.as_secs() as i64, 0));
    Ok(fd)
}

/// A failed question: the kernel's answer was an error (errno), or the socket failed (why).
pub(crate) enum Asked {
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

    fn hex(text: &str) -> Vec<u8> {
        let t: String = text.split_whitespace().collect();
        (0..t.len()).step_by(2).map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn a_snapshots_kept_answers_are_read_as_its_kernel_gave_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        assert_eq!(read_captured_netdev(&root), NetdevView::NotThisMachine, "an older snapshot kept none");
        std::fs::create_dir_all(dir.path().join("irqwise-snapshot")).unwrap();
        let napi = hex(include_str!("../../../tests/data/netlink/napi-get-6.18-virtio.hex"));
        let queue = hex(include_str!("../../../tests/data/netlink/queue-get-6.18-virtio.hex"));
        std::fs::write(dir.path().join(CAPTURED_NAPI_GET), &napi).unwrap();
        std::fs::write(dir.path().join(CAPTURED_QUEUE_GET), &queue).unwrap();
        let NetdevView::Reported(r) = read_captured_netdev(&root) else { panic!("not read") };
        assert_eq!(r.napis.iter().map(|n| (n.ifindex, n.id)).collect::<Vec<_>>(), vec![(4, 257)]);
        assert_eq!(r.queues.iter().filter(|q| q.napi == Some(257)).count(), 1, "rx-0 of ifindex 4");
        // A kernel without queue-get kept an empty answer: the instances alone.
        std::fs::write(dir.path().join(CAPTURED_QUEUE_GET), b"").unwrap();
        let NetdevView::Reported(r) = read_captured_netdev(&root) else { panic!("not read") };
        assert!(r.queues.is_empty() && r.napis.len() == 1);
        std::fs::write(dir.path().join(CAPTURED_NAPI_GET), &napi[..napi.len() - 3]).unwrap();
        let NetdevView::Unavailable(why) = read_captured_netdev(&root) else { panic!("a cut answer was read") };
        assert!(why.contains("netdev-napi-get.bin"), "{why}");
        // Past the limit: not read at all (a 128 MiB answer took a plan past 1 GiB).
        let big = std::fs::File::create(dir.path().join(CAPTURED_NAPI_GET)).unwrap();
        big.set_len(CAPTURED_LIMIT + 1).unwrap();
        let NetdevView::Unavailable(why) = read_captured_netdev(&root) else { panic!("a huge answer was read") };
        assert!(
            why.contains("netdev-napi-get.bin") && why.contains(&format!("longer than {CAPTURED_LIMIT} bytes")),
            "{why}"
        );
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
