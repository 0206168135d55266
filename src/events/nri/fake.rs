//! A fake runtime for the tests, written from the protocol's definitions and sharing no code
//! with the plugin's: protobuf fields built byte by byte, frames and ttrpc headers put by hand,
//! and the runtime's side of a connection (accept, take the registration, call the plugin).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// One protobuf field.
pub(crate) enum F<'a> {
    /// A varint.
    V(u32, u64),
    /// A string.
    S(u32, &'a str),
    /// An embedded message (or bytes).
    M(u32, Vec<u8>),
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// A message of `fields`, in order.
pub(crate) fn msg(fields: &[F<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        match f {
            F::V(n, v) => {
                varint(&mut out, u64::from(*n) << 3);
                varint(&mut out, *v);
            }
            F::S(n, s) => {
                varint(&mut out, (u64::from(*n) << 3) | 2);
                varint(&mut out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            F::M(n, m) => {
                varint(&mut out, (u64::from(*n) << 3) | 2);
                varint(&mut out, m.len() as u64);
                out.extend_from_slice(m);
            }
        }
    }
    out
}

/// A map entry `{1 key, 2 value}`.
pub(crate) fn map_entry(field: u32, key: &str, value: &str) -> F<'static> {
    F::M(field, msg(&[F::S(1, key), F::S(2, value)]))
}

/// A pod as containerd sends it: every field it fills, the annotations given.
pub(crate) fn pod(id: &str, namespace: &str, name: &str, cgroup_parent: &str, annotations: &[(&str, &str)]) -> Vec<u8> {
    let mut fields =
        vec![F::S(1, id), F::S(2, name), F::S(3, "6f1c-uid"), F::S(4, namespace), map_entry(5, "app", "web")];
    fields.extend(annotations.iter().map(|(k, v)| map_entry(6, k, v)));
    fields.push(F::S(7, "runc"));
    let overhead = msg(&[F::M(2, msg(&[F::M(1, msg(&[F::V(1, 1024)])), F::S(6, "")]))]);
    fields.push(F::M(8, msg(&[F::M(1, overhead), F::S(3, cgroup_parent), F::S(4, "kubepods.slice:cri-containerd:x")])));
    fields.push(F::V(9, 4000));
    fields.push(F::S(10, "10.0.0.7"));
    msg(&fields)
}

/// A container as containerd sends it: `cpus` its cpuset (empty: none), `shares` its CPU
/// shares (0: none), `pid` (0: none).
pub(crate) fn container(id: &str, pod: &str, name: &str, state: u64, cpus: &str, shares: u64, pid: u64) -> Vec<u8> {
    let mut cpu = Vec::new();
    if shares > 0 {
        cpu.push(F::M(1, msg(&[F::V(1, shares)])));
    }
    cpu.push(F::M(2, msg(&[F::V(1, 200_000)])));
    cpu.push(F::M(3, msg(&[F::V(1, 100_000)])));
    cpu.push(F::S(6, cpus));
    cpu.push(F::S(7, "0"));
    let resources = msg(&[F::M(1, msg(&[F::M(1, msg(&[F::V(1, 1 << 30)]))])), F::M(2, msg(&cpu))]);
    let linux = msg(&[
        F::M(1, msg(&[F::S(1, "pid"), F::S(2, "")])),
        F::M(2, msg(&[F::S(1, "/dev/null"), F::S(2, "c"), F::V(3, 1), F::V(4, 3)])),
        F::M(3, resources),
        F::S(5, "kubepods.slice:cri-containerd:y"),
    ]);
    msg(&[
        F::S(1, id),
        F::S(2, pod),
        F::S(3, name),
        F::V(4, state),
        map_entry(5, "io.kubernetes.container.name", name),
        map_entry(6, "io.kubernetes.cri.container-type", "container"),
        F::S(7, "/app"),
        F::S(8, "DB_PASSWORD=hunter2"),
        F::M(9, msg(&[F::S(1, "/data"), F::S(2, "bind"), F::S(3, "/srv"), F::S(4, "rbind")])),
        F::M(11, linux),
        F::V(12, pid),
    ])
}

/// `{1 event, 2 pod, 3 container}` (StateChangeEvent), the container optional.
pub(crate) fn state_change(event: u64, pod: Vec<u8>, container: Option<Vec<u8>>) -> Vec<u8> {
    let mut fields = vec![F::V(1, event), F::M(2, pod)];
    if let Some(c) = container {
        fields.push(F::M(3, c));
    }
    msg(&fields)
}

/// A ttrpc message with its mux frames as Go's writer sends them: the first frame at most
/// 4,096 bytes, the rest in one frame.
pub(crate) fn framed(conn: u32, stream: u32, kind: u8, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut message = Vec::new();
    message.extend_from_slice(&(data.len() as u32).to_be_bytes());
    message.extend_from_slice(&stream.to_be_bytes());
    message.extend_from_slice(&[kind, flags]);
    message.extend_from_slice(data);
    let (first, rest) = message.split_at(message.len().min(4096));
    let mut out = Vec::new();
    for piece in [first, rest] {
        if piece.is_empty() && !out.is_empty() {
            continue;
        }
        out.extend_from_slice(&conn.to_be_bytes());
        out.extend_from_slice(&(piece.len() as u32).to_be_bytes());
        out.extend_from_slice(piece);
    }
    out
}

/// A request's data: `{1 service, 2 method, 3 payload, 4 timeout_nano}`.
pub(crate) fn request(service: &str, method: &str, payload: Vec<u8>) -> Vec<u8> {
    msg(&[F::S(1, service), F::S(2, method), F::M(3, payload), F::V(4, 2_000_000_000)])
}

pub(crate) const PLUGIN: &str = "nri.pkg.api.v1alpha1.Plugin";

/// The runtime's side of one connection.
pub(crate) struct FakeRuntime {
    pub stream: UnixStream,
    next_stream: u32,
    buf: Vec<u8>,
    /// Messages read per conn: (stream, type, data).
    got: Vec<(u32, u32, u8, Vec<u8>)>,
}

/// How long the fake waits for the plugin before failing the test.
const PATIENCE: Duration = Duration::from_secs(20);

impl FakeRuntime {
    /// Accepts the plugin's connection.
    pub async fn accept(listener: &UnixListener) -> FakeRuntime {
        let (stream, _) =
            tokio::time::timeout(PATIENCE, listener.accept()).await.expect("the plugin connects").unwrap();
        FakeRuntime { stream, next_stream: 3, buf: Vec::new(), got: Vec::new() }
    }

    /// Reads until a whole ttrpc message arrived on `conn`: (stream, type, data).
    pub async fn read_message(&mut self, conn: u32) -> Option<(u32, u8, Vec<u8>)> {
        loop {
            if let Some(at) = self.got.iter().position(|m| m.0 == conn) {
                let (_, stream, kind, data) = self.got.remove(at);
                return Some((stream, kind, data));
            }
            // Frames are whole here: the plugin's messages are small.
            while self.buf.len() >= 8 {
                let len = u32::from_be_bytes(self.buf[4..8].try_into().unwrap()) as usize;
                if self.buf.len() < 8 + len {
                    break;
                }
                let c = u32::from_be_bytes(self.buf[0..4].try_into().unwrap());
                let p: Vec<u8> = self.buf.drain(..8 + len).skip(8).collect();
                let n = u32::from_be_bytes(p[0..4].try_into().unwrap()) as usize;
                assert_eq!(p.len(), 10 + n, "a plugin message is one frame");
                let stream = u32::from_be_bytes(p[4..8].try_into().unwrap());
                self.got.push((c, stream, p[8], p[10..].to_vec()));
            }
            if self.got.iter().any(|m| m.0 == conn) {
                continue;
            }
            let mut chunk = [0u8; 4096];
            let n =
                tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk)).await.expect("the plugin answers").ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Takes the plugin's RegisterPlugin call and answers it OK: the request's payload.
    pub async fn registration(&mut self) -> Vec<u8> {
        let (stream, kind, data) = self.read_message(2).await.expect("RegisterPlugin");
        assert_eq!((stream, kind), (1, 1), "a request on stream 1");
        self.write(&framed(2, stream, 2, 0, &msg(&[F::M(1, Vec::new())]))).await;
        data
    }

    /// Calls `method` of the plugin (streams 3, 5, ...: 1 is the recorded Configure's): the
    /// response's data.
    pub async fn call(&mut self, method: &str, payload: Vec<u8>) -> Option<Vec<u8>> {
        let stream = self.next_stream;
        self.next_stream += 2;
        self.write(&framed(1, stream, 1, 1, &request(PLUGIN, method, payload))).await;
        let (got, kind, data) = self.read_message(1).await?;
        assert_eq!((got, kind), (stream, 2), "the response to stream {stream}");
        Some(data)
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }
}
