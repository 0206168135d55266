//! ttrpc, containerd's small RPC protocol, on one multiplexed conn: messages
//! `[length u32 BE][stream id u32 BE][type u8][flags u8][data]`, requests
//! `{1 service, 2 method, 3 payload, 4 timeout_nano, 5 metadata}`, responses
//! `{1 status {1 code, 2 message}, 2 payload}`. Pure.
//!
//! Guarantees: a message's length is checked against [`MAX_MESSAGE`] before its bytes are kept;
//! a conn's bytes are reassembled into messages whatever the frames' cuts.

use super::proto::{fields, put_bytes, put_uint, WireError};

/// A message's header.
pub(crate) const HEADER: usize = 10;
/// The longest message data ttrpc sends or takes.
pub(crate) const MAX_MESSAGE: usize = 4 << 20;
/// Message types.
pub(crate) const REQUEST: u8 = 1;
pub(crate) const RESPONSE: u8 = 2;
/// The flag of a client's request that sends no more data (a unary call).
pub(crate) const REMOTE_CLOSED: u8 = 1;
/// gRPC status codes the plugin answers with.
pub(crate) const INVALID_ARGUMENT: u32 = 3;
pub(crate) const UNIMPLEMENTED: u32 = 12;

/// Why a conn's bytes are not ttrpc.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TtrpcError {
    #[error("a ttrpc message of {len} bytes (at most {MAX_MESSAGE})")]
    TooLong { len: u32 },
    #[error("a ttrpc {what} that is not protobuf: {source}")]
    Decode { what: &'static str, source: WireError },
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    pub stream: u32,
    pub kind: u8,
    pub flags: u8,
    pub data: Vec<u8>,
}

/// The bytes of `message`: header then data (at most [`MAX_MESSAGE`] bytes).
pub(crate) fn encode(message: &Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + message.data.len());
    out.extend_from_slice(&(message.data.len() as u32).to_be_bytes());
    out.extend_from_slice(&message.stream.to_be_bytes());
    out.push(message.kind);
    out.push(message.flags);
    out.extend_from_slice(&message.data);
    out
}

/// Messages out of one conn's frames.
#[derive(Debug, Default)]
pub(crate) struct Reassembly {
    buf: Vec<u8>,
}

impl Reassembly {
    /// Takes one frame's payload.
    pub fn push(&mut self, payload: &[u8]) {
        self.buf.extend_from_slice(payload);
    }

    /// The next whole message, `None` until one is complete.
    pub fn next_message(&mut self) -> Result<Option<Message>, TtrpcError> {
        let Some(head) = self.buf.first_chunk::<HEADER>() else { return Ok(None) };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let n = usize::try_from(len).ok().filter(|n| *n <= MAX_MESSAGE).ok_or(TtrpcError::TooLong { len })?;
        if self.buf.len() < HEADER + n {
            return Ok(None);
        }
        let message = Message {
            stream: u32::from_be_bytes([head[4], head[5], head[6], head[7]]),
            kind: head[8],
            flags: head[9],
            data: self.buf[HEADER..HEADER + n].to_vec(),
        };
        self.buf.drain(..HEADER + n);
        Ok(Some(message))
    }
}

/// A request's call: which service and method, with what payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Request {
    pub service: String,
    pub method: String,
    pub payload: Vec<u8>,
}

/// Reads a request's data (its timeout and metadata are not kept).
pub(crate) fn decode_request(data: &[u8]) -> Result<Request, TtrpcError> {
    let mut r = Request::default();
    for f in fields(data) {
        let (n, v) = f.map_err(|source| TtrpcError::Decode { what: "request", source })?;
        match n {
            1 => r.service = String::from_utf8_lossy(v.bytes()).into_owned(),
            2 => r.method = String::from_utf8_lossy(v.bytes()).into_owned(),
            3 => r.payload = v.bytes().to_vec(),
            _ => {}
        }
    }
    Ok(r)
}

/// A request's data.
pub(crate) fn encode_request(service: &str, method: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, service.as_bytes());
    put_bytes(&mut out, 2, method.as_bytes());
    put_bytes(&mut out, 3, payload);
    out
}

/// A response's data: `status` `None` is OK (written as an empty status, as Go's server does).
pub(crate) fn encode_response(status: Option<(u32, &str)>, payload: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    if let Some((code, message)) = status {
        put_uint(&mut s, 1, u64::from(code));
        put_bytes(&mut s, 2, message.as_bytes());
    }
    let mut out = Vec::new();
    put_bytes(&mut out, 1, &s);
    if !payload.is_empty() {
        put_bytes(&mut out, 2, payload);
    }
    out
}

/// A response's status (code 0: OK, and its message) and payload.
pub(crate) fn decode_response(data: &[u8]) -> Result<(u32, String, Vec<u8>), TtrpcError> {
    let (mut code, mut message, mut payload) = (0, String::new(), Vec::new());
    let bad = |source| TtrpcError::Decode { what: "response", source };
    for f in fields(data) {
        match f.map_err(bad)? {
            (1, v) => {
                for s in fields(v.bytes()) {
                    match s.map_err(bad)? {
                        (1, c) => code = c.varint() as u32,
                        (2, m) => message = String::from_utf8_lossy(m.bytes()).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, v) => payload = v.bytes().to_vec(),
            _ => {}
        }
    }
    Ok((code, message, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_whatever_the_cuts_and_a_long_header_is_refused() {
        let m = Message { stream: 3, kind: REQUEST, flags: REMOTE_CLOSED, data: vec![1, 2, 3] };
        let bytes = encode(&m);
        assert_eq!(bytes, [0, 0, 0, 3, 0, 0, 0, 3, 1, 1, 1, 2, 3]);
        let mut r = Reassembly::default();
        for b in &bytes {
            assert_eq!(r.next_message(), Ok(None));
            r.push(&[*b]);
        }
        assert_eq!(r.next_message(), Ok(Some(m)));
        assert_eq!(r.next_message(), Ok(None));
        r.push(&[0x00, 0x40, 0x00, 0x01, 0, 0, 0, 1, 1, 0]);
        assert_eq!(r.next_message(), Err(TtrpcError::TooLong { len: (4 << 20) + 1 }));
    }

    #[test]
    fn requests_and_responses_read_back() {
        let data = encode_request("nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin", b"\x0a\x01x");
        let r = decode_request(&data).unwrap();
        assert_eq!(
            (r.service.as_str(), r.method.as_str(), r.payload.as_slice()),
            ("nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin", b"\x0a\x01x".as_slice())
        );
        assert_eq!(encode_response(None, b""), [0x0a, 0x00], "OK: an empty status, no payload");
        let refused = encode_response(Some((UNIMPLEMENTED, "no")), b"");
        assert_eq!(decode_response(&refused), Ok((12, "no".to_string(), Vec::new())));
        assert_eq!(decode_response(&encode_response(None, b"\x10\x02")), Ok((0, String::new(), vec![0x10, 0x02])));
    }
}
