//! A fake container runtime speaking NRI to the real daemon (`nri = true`): a Unix socket at
//! `ROOT/var/run/nri/nri.sock`, written from the protocol's definitions (containerd/nri
//! `pkg/api/api.proto`, ttrpc's `request.proto`, NRI's multiplexing), sharing no code with
//! irqwise's: protobuf fields built byte by byte, frames put by hand, blocking I/O on threads'
//! deadlines.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the daemon looks by default, below its root.
pub const SOCKET: &str = "var/run/nri/nri.sock";
/// How long the fake waits for the daemon.
const PATIENCE: Duration = Duration::from_secs(60);

/// One protobuf field.
pub enum F<'a> {
    V(u32, u64),
    S(u32, &'a str),
    M(u32, Vec<u8>),
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A message of `fields`.
pub fn msg(fields: &[F<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        let (n, wire) = match f {
            F::V(n, _) => (*n, 0),
            F::S(n, _) | F::M(n, _) => (*n, 2),
        };
        varint(&mut out, (u64::from(n) << 3) | wire);
        match f {
            F::V(_, v) => varint(&mut out, *v),
            F::S(_, s) => {
                varint(&mut out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            F::M(_, m) => {
                varint(&mut out, m.len() as u64);
                out.extend_from_slice(m);
            }
        }
    }
    out
}

/// `PodSandbox {1 id, 2 name, 4 namespace, 6 annotations, 8 linux {3 cgroup_parent}}`, with a
/// label and an annotation that must never reach a log.
pub fn pod(id: &str, namespace: &str, name: &str, annotations: &[(&str, &str)]) -> Vec<u8> {
    let mut fields = vec![F::S(1, id), F::S(2, name), F::S(3, "uid-1"), F::S(4, namespace)];
    fields.push(F::M(5, msg(&[F::S(1, "app"), F::S(2, name)])));
    fields.push(F::M(6, msg(&[F::S(1, "vault.example/token"), F::S(2, "s3cret-token")])));
    for (k, v) in annotations {
        fields.push(F::M(6, msg(&[F::S(1, k), F::S(2, v)])));
    }
    fields.push(F::M(8, msg(&[F::S(3, "kubepods-pod1.slice")])));
    msg(&fields)
}

/// `Container {1 id, 2 pod_sandbox_id, 3 name, 4 state, 8 env, 11 linux {3 resources {2 cpu
/// {1 shares {1 value}, 6 cpus}}}, 12 pid}` (pid 0: none).
pub fn container(id: &str, pod: &str, name: &str, state: u64, cpus: &str, pid: u32) -> Vec<u8> {
    let cpu = msg(&[F::M(1, msg(&[F::V(1, 2048)])), F::S(6, cpus)]);
    let linux = msg(&[F::M(3, msg(&[F::M(2, cpu)]))]);
    msg(&[
        F::S(1, id),
        F::S(2, pod),
        F::S(3, name),
        F::V(4, state),
        F::S(8, "DB_PASSWORD=hunter2"),
        F::M(11, linux),
        F::V(12, u64::from(pid)),
    ])
}

/// `StateChangeEvent {1 event, 2 pod, 3 container}`: how an nri v0.8 runtime sends
/// StartContainer (6), StopContainer goes as its own call.
pub fn state_change(event: u64, pod: Vec<u8>, container: Vec<u8>) -> Vec<u8> {
    msg(&[F::V(1, event), F::M(2, pod), F::M(3, container)])
}

/// `{1 pod, 2 container}`: the dedicated calls' message.
pub fn pod_and_container(pod: Vec<u8>, container: Vec<u8>) -> Vec<u8> {
    msg(&[F::M(1, pod), F::M(2, container)])
}

/// A ttrpc message in mux frames as Go sends them (first frame at most 4,096 bytes).
pub fn framed(conn: u32, stream: u32, kind: u8, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(&stream.to_be_bytes());
    m.extend_from_slice(&[kind, flags]);
    m.extend_from_slice(data);
    let (first, rest) = m.split_at(m.len().min(4096));
    let mut out = Vec::new();
    for piece in [first, rest] {
        if !piece.is_empty() {
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&(piece.len() as u32).to_be_bytes());
            out.extend_from_slice(piece);
        }
    }
    out
}

/// The runtime's socket.
pub struct FakeRuntime {
    listener: UnixListener,
    pub path: PathBuf,
}

impl FakeRuntime {
    /// Listens at `ROOT/var/run/nri/nri.sock`.
    pub fn bind(root: &Path) -> FakeRuntime {
        let path = root.join(SOCKET);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        FakeRuntime { listener, path }
    }

    /// The plugin's next connection.
    pub fn accept(&self) -> Conn {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    stream.set_read_timeout(Some(PATIENCE)).unwrap();
                    return Conn { stream, next: 1, buf: Vec::new() };
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "the daemon did not connect");
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

/// One connection, the runtime's side.
pub struct Conn {
    pub stream: UnixStream,
    next: u32,
    buf: Vec<u8>,
}

impl Conn {
    /// The next ttrpc message of the plugin (conn, stream, type, data); `None` at its close.
    pub fn read(&mut self) -> Option<(u32, u32, u8, Vec<u8>)> {
        loop {
            if self.buf.len() >= 8 {
                let len = u32::from_be_bytes(self.buf[4..8].try_into().unwrap()) as usize;
                if self.buf.len() >= 8 + len {
                    let conn = u32::from_be_bytes(self.buf[0..4].try_into().unwrap());
                    let p: Vec<u8> = self.buf.drain(..8 + len).skip(8).collect();
                    let stream = u32::from_be_bytes(p[4..8].try_into().unwrap());
                    return Some((conn, stream, p[8], p[10..].to_vec()));
                }
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Takes RegisterPlugin and answers it OK.
    pub fn registration(&mut self) {
        let (conn, stream, kind, _) = self.read().expect("RegisterPlugin");
        assert_eq!((conn, kind), (2, 1), "a request on the runtime's conn");
        self.write(&framed(2, stream, 2, 0, &msg(&[F::M(1, Vec::new())])));
    }

    /// Calls `method` of the plugin: the response's data, `None` when the connection closed.
    pub fn call(&mut self, method: &str, payload: Vec<u8>) -> Option<Vec<u8>> {
        let stream = self.next;
        self.next += 2;
        let request =
            msg(&[F::S(1, "nri.pkg.api.v1alpha1.Plugin"), F::S(2, method), F::M(3, payload), F::V(4, 2_000_000_000)]);
        self.write(&framed(1, stream, 1, 1, &request));
        let (conn, got, kind, data) = self.read()?;
        assert_eq!((conn, got, kind), (1, stream, 2), "{method}: its response");
        Some(data)
    }

    /// Registration, Configure and a Synchronize of `pods` and `containers`.
    pub fn handshake(&mut self, pods: Vec<Vec<u8>>, containers: Vec<Vec<u8>>) {
        self.registration();
        let configure = msg(&[F::S(2, "containerd"), F::S(3, "v2.1.9"), F::V(4, 5000), F::V(5, 2000)]);
        self.call("Configure", configure).expect("Configure answered");
        let mut sync: Vec<F<'_>> = pods.into_iter().map(|p| F::M(1, p)).collect();
        sync.extend(containers.into_iter().map(|c| F::M(2, c)));
        self.call("Synchronize", msg(&sync)).expect("Synchronize answered");
    }

    pub fn write(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes);
    }
}
