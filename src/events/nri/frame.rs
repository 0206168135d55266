//! NRI's connection multiplexing: one Unix socket carries several logical connections, every
//! write a frame `[conn id u32 BE][length u32 BE][payload]`. Conn 1 carries the plugin's
//! service (the runtime calls the plugin), conn 2 the runtime's (the plugin registers). Pure.
//!
//! Guarantees:
//! - a frame's length is checked against [`MAX_PAYLOAD`] before anything is allocated for it: a
//!   header claiming 4 GiB is an error, not an allocation;
//! - [`frames`] cuts a message as the runtime's Go reader needs it: that reader takes one whole
//!   frame per read and fails ("cannot allocate memory") when the frame is longer than its
//!   4,096-byte buffer, so a message goes as its first [`FIRST_FRAME_MAX`] bytes, then the rest
//!   in one frame (as Go's own writer sends them).

/// The conn of the plugin's service: the runtime's requests, the plugin's answers.
pub(crate) const PLUGIN_CONN: u32 = 1;
/// The conn of the runtime's service: the plugin's registration and the runtime's answer.
pub(crate) const RUNTIME_CONN: u32 = 2;
/// A frame's header: conn id and payload length.
pub(crate) const HEADER: usize = 8;
/// The longest payload: a ttrpc message (10-byte header and at most 4 MiB).
pub(crate) const MAX_PAYLOAD: usize = 10 + (4 << 20);
/// The most bytes the first frame of a message may hold (the Go reader's buffer).
pub(crate) const FIRST_FRAME_MAX: usize = 4096;

/// Why the byte stream is not frames.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("a frame of {len} bytes (at most {MAX_PAYLOAD})")]
    TooLong { len: u32 },
}

/// A frame's header: its conn and its payload length, checked.
pub(crate) fn header(bytes: [u8; HEADER]) -> Result<(u32, usize), FrameError> {
    let conn = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    match usize::try_from(len) {
        Ok(n) if n <= MAX_PAYLOAD => Ok((conn, n)),
        _ => Err(FrameError::TooLong { len }),
    }
}

/// Appends one frame of `payload` (at most [`MAX_PAYLOAD`] bytes) on `conn`.
fn put_frame(out: &mut Vec<u8>, conn: u32, payload: &[u8]) {
    out.extend_from_slice(&conn.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
}

/// The bytes that send `message` (a whole ttrpc message, at most [`MAX_PAYLOAD`] bytes) on
/// `conn`: one frame when it fits in [`FIRST_FRAME_MAX`], else its first `FIRST_FRAME_MAX`
/// bytes, then the rest in one frame.
pub(crate) fn frames(conn: u32, message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 2 * HEADER);
    let (first, rest) = message.split_at(message.len().min(FIRST_FRAME_MAX));
    put_frame(&mut out, conn, first);
    if !rest.is_empty() {
        put_frame(&mut out, conn, rest);
    }
    out
}

/// Frames out of a byte stream read in pieces of any size.
#[derive(Debug, Default)]
pub(crate) struct Demux {
    buf: Vec<u8>,
}

impl Demux {
    /// Takes bytes read from the socket.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame (conn, payload), `None` until one is complete. The buffer holds at
    /// most one frame beyond what was pushed last.
    pub fn next_frame(&mut self) -> Result<Option<(u32, Vec<u8>)>, FrameError> {
        let Some(head) = self.buf.first_chunk::<HEADER>() else { return Ok(None) };
        let (conn, len) = header(*head)?;
        if self.buf.len() < HEADER + len {
            return Ok(None);
        }
        let payload = self.buf[HEADER..HEADER + len].to_vec();
        self.buf.drain(..HEADER + len);
        Ok(Some((conn, payload)))
    }

    /// Bytes held that make no whole frame yet.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_message_is_one_frame_and_a_long_one_its_first_4096_bytes_then_the_rest() {
        assert_eq!(frames(2, b"abc"), [0, 0, 0, 2, 0, 0, 0, 3, b'a', b'b', b'c']);
        let long: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let out = frames(1, &long);
        assert_eq!(&out[..8], &[0, 0, 0, 1, 0, 0, 0x10, 0x00], "4096 bytes first");
        assert_eq!(&out[8..8 + 4096], &long[..4096]);
        assert_eq!(&out[8 + 4096..16 + 4096], &[0, 0, 0, 1, 0, 0, 0x03, 0x88], "then 904");
        assert_eq!(&out[16 + 4096..], &long[4096..]);
        // Exactly 4096: one frame.
        assert_eq!(frames(1, &long[..4096]).len(), 8 + 4096);
    }

    #[test]
    fn frames_come_out_whole_however_the_stream_is_cut() {
        let mut stream = frames(1, b"hello");
        stream.extend(frames(2, &[7u8; 4100]));
        stream.extend(frames(9, b""));
        for cut in [1, 3, 8, 13, 4096, stream.len()] {
            let mut d = Demux::default();
            let mut got = Vec::new();
            for piece in stream.chunks(cut) {
                d.push(piece);
                while let Some(f) = d.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(d.pending(), 0);
            let lens: Vec<(u32, usize)> = got.iter().map(|(c, p)| (*c, p.len())).collect();
            assert_eq!(lens, [(1, 5), (2, 4096), (2, 4), (9, 0)], "cut {cut}");
        }
    }

    #[test]
    fn a_header_claiming_more_than_a_message_is_refused_before_any_allocation() {
        let mut d = Demux::default();
        d.push(&[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(d.next_frame(), Err(FrameError::TooLong { len: u32::MAX }));
        let just = (MAX_PAYLOAD as u32).to_be_bytes();
        assert_eq!(header([0, 0, 0, 1, just[0], just[1], just[2], just[3]]), Ok((1, MAX_PAYLOAD)));
        let over = (MAX_PAYLOAD as u32 + 1).to_be_bytes();
        assert!(header([0, 0, 0, 1, over[0], over[1], over[2], over[3]]).is_err());
    }
}
