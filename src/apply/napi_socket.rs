//! The socket the daemon and `irqwise apply` write NAPI instances' settings through: the
//! kernel's `netdev` generic-netlink family, asked as device discovery asks it
//! ([`crate::devices::discover::netdev_netlink`]), but for one instance at a time: `napi-set`
//! and the `napi-get` that reads it back.

use std::os::fd::OwnedFd;

use crate::devices::discover::netdev_netlink::{ask_netdev, open_netdev, Asked, NETDEV_CMD_NAPI_GET};
use crate::devices::napi::NapiThreaded;
use crate::devices::napi::{napi_set_attributes, napis_of, parse_genl_messages, NapiInstance, NapiSettings};

/// `NETDEV_CMD_NAPI_SET`.
const NETDEV_CMD_NAPI_SET: u8 = 14;
const NLM_F_ACK: u16 = 4;
/// `NETDEV_A_NAPI_ID`: which instance a `napi-get` asks for.
const NAPI_ID_ATTR: u16 = 2;

/// Why a `napi-set` or a `napi-get` of one instance failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NapiSocketError {
    /// The kernel refused it: `errno` is positive (`ENOENT`: no such instance now; `EPERM`:
    /// no `CAP_NET_ADMIN`; `EINVAL`: a value or attribute this kernel does not take).
    #[error("the kernel refused napi-{op} of NAPI instance {id}: {}", nix::errno::Errno::from_raw(*errno))]
    Refused { op: &'static str, id: u32, errno: i32 },
    /// The socket could not be opened or asked.
    #[error("{0}")]
    Socket(String),
}

impl NapiSocketError {
    /// Whether it fails every instance alike: the socket, or no `CAP_NET_ADMIN`.
    pub fn is_machine_wide(&self) -> bool {
        match self {
            NapiSocketError::Socket(_) => true,
            NapiSocketError::Refused { errno, .. } => *errno == nix::errno::Errno::EPERM as i32,
        }
    }

    /// The failure said without its instance when it fails every instance alike (the same
    /// problem for each, so said once); as it is otherwise.
    pub fn problem(&self) -> String {
        match self {
            NapiSocketError::Refused { op, errno, .. } if self.is_machine_wide() => {
                format!("the kernel refused napi-{op}: {}", nix::errno::Errno::from_raw(*errno))
            }
            _ => self.to_string(),
        }
    }

    /// Whether the instance is gone (recreated under another id, or its interface removed).
    pub fn is_gone(&self) -> bool {
        matches!(self, NapiSocketError::Refused { errno, .. } if *errno == nix::errno::Errno::ENOENT as i32)
    }
}

/// One socket to the kernel's `netdev` family for writing instances' settings (`napi-set`,
/// which needs `CAP_NET_ADMIN`) and reading one instance back (`napi-get` of its id). Every
/// request waits for the kernel's acknowledgement, within discovery's [`TIMEOUT`](crate::devices::discover::netdev_netlink::TIMEOUT).
pub struct NapiSocket {
    fd: OwnedFd,
    family: u16,
    seq: u32,
}

impl NapiSocket {
    /// Opens the socket and asks for the family's id.
    pub fn open() -> Result<NapiSocket, NapiSocketError> {
        let (fd, family) = open_netdev().map_err(NapiSocketError::Socket)?;
        Ok(NapiSocket { fd, family, seq: 100 })
    }

    /// Writes `settings` (the keys set) and `threaded` to instance `id`.
    pub fn set(
        &mut self,
        id: u32,
        settings: &NapiSettings,
        threaded: Option<NapiThreaded>,
    ) -> Result<(), NapiSocketError> {
        let attrs = napi_set_attributes(id, settings, threaded);
        let attrs: Vec<(u16, &[u8])> = attrs.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        self.ask("set", id, NETDEV_CMD_NAPI_SET, NLM_F_ACK, &attrs).map(drop)
    }

    /// Instance `id` as the kernel reports it now.
    pub fn get(&mut self, id: u32) -> Result<NapiInstance, NapiSocketError> {
        // No acknowledgement asked: the reply is the answer (an ack after it would be read as
        // the next request's).
        let answer = self.ask("get", id, NETDEV_CMD_NAPI_GET, 0, &[(NAPI_ID_ATTR, &id.to_ne_bytes())])?;
        let (messages, _) = parse_genl_messages(&answer).map_err(|e| NapiSocketError::Socket(e.to_string()))?;
        napis_of(&messages)
            .into_iter()
            .find(|n| n.id == id)
            .ok_or_else(|| NapiSocketError::Socket(format!("napi-get of NAPI instance {id} answered no instance")))
    }

    /// One request and its one answer (the ack of a `set`, the reply of a `get`).
    fn ask(
        &mut self,
        op: &'static str,
        id: u32,
        cmd: u8,
        flags: u16,
        attrs: &[(u16, &[u8])],
    ) -> Result<Vec<u8>, NapiSocketError> {
        self.seq = self.seq.wrapping_add(1);
        match ask_netdev(&self.fd, self.family, (cmd, flags, self.seq), attrs) {
            Ok(bytes) => Ok(bytes),
            Err(Asked::Kernel(errno)) => Err(NapiSocketError::Refused { op, id, errno: -errno }),
            Err(Asked::Failed(why)) => Err(NapiSocketError::Socket(why)),
        }
    }
}
