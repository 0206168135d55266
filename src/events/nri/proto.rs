//! The protocol buffers wire format, as much as NRI's few messages need: reading a message's
//! fields one by one (unknown fields skipped, as every protobuf reader must), and writing
//! varint and length-delimited fields. Pure.
//!
//! Guarantees: reading never allocates and never reads past the slice; a truncated or
//! malformed field (a varint of more than 10 bytes, a length past the end, a group) is an
//! error naming the field, never a panic.

/// Why a message's bytes are not protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    #[error("field {field}: truncated ({needed} bytes needed, {left} left)")]
    Truncated { field: u32, needed: u64, left: usize },
    #[error("a varint longer than 10 bytes")]
    LongVarint,
    #[error("field {field}: wire type {wire} (groups and unknown types are not read)")]
    WireType { field: u32, wire: u8 },
    #[error("field number 0")]
    FieldZero,
}

/// One field's value as written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Varint(u64),
    /// Length-delimited: a string, bytes, an embedded message, a packed list.
    Bytes(&'a [u8]),
    Fixed64(u64),
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The varint's value; 0 for another wire type (a reader takes what it can).
    pub fn varint(self) -> u64 {
        match self {
            Value::Varint(v) => v,
            _ => 0,
        }
    }

    /// The length-delimited bytes; empty for another wire type.
    pub fn bytes(self) -> &'a [u8] {
        match self {
            Value::Bytes(b) => b,
            _ => &[],
        }
    }
}

/// The fields of one message, in the order written.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
    failed: bool,
}

/// Reads the fields of `message`.
pub(crate) fn fields(message: &[u8]) -> Fields<'_> {
    Fields { rest: message, failed: false }
}

/// Reads one varint from the front of `buf`: its value and its length.
fn varint(buf: &[u8]) -> Option<Result<(u64, usize), WireError>> {
    let mut value = 0u64;
    for (i, byte) in buf.iter().enumerate() {
        if i == 10 {
            return Some(Err(WireError::LongVarint));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(Ok((value, i + 1)));
        }
    }
    None
}

impl<'a> Fields<'a> {
    fn take(&mut self, field: u32, n: u64) -> Result<&'a [u8], WireError> {
        let left = self.rest.len();
        let n_usize = usize::try_from(n).ok().filter(|n| *n <= left);
        let n_usize = n_usize.ok_or(WireError::Truncated { field, needed: n, left })?;
        let (taken, rest) = self.rest.split_at(n_usize);
        self.rest = rest;
        Ok(taken)
    }

    fn next_field(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let (key, len) = varint(self.rest).unwrap_or(Err(WireError::Truncated { field: 0, needed: 1, left: 0 }))?;
        self.rest = &self.rest[len..];
        let field = u32::try_from(key >> 3).map_err(|_| WireError::FieldZero)?;
        if field == 0 {
            return Err(WireError::FieldZero);
        }
        let wire = (key & 7) as u8;
        match wire {
            0 => {
                let (v, len) = varint(self.rest).unwrap_or(Err(WireError::Truncated { field, needed: 1, left: 0 }))?;
                self.rest = &self.rest[len..];
                Ok((field, Value::Varint(v)))
            }
            1 => {
                let b = self.take(field, 8)?;
                Ok((field, Value::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))))
            }
            2 => {
                let (n, len) = varint(self.rest).unwrap_or(Err(WireError::Truncated { field, needed: 1, left: 0 }))?;
                self.rest = &self.rest[len..];
                Ok((field, Value::Bytes(self.take(field, n)?)))
            }
            5 => {
                let b = self.take(field, 4)?;
                Ok((field, Value::Fixed32(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))))
            }
            _ => Err(WireError::WireType { field, wire }),
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    /// The next field; after an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let next = self.next_field();
        self.failed = next.is_err();
        Some(next)
    }
}

/// Appends `v` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `field` as a varint (proto3 writes no zero: the caller skips it).
pub(crate) fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(out, u64::from(field) << 3);
    put_varint(out, v);
}

/// Appends field `field` as length-delimited bytes (a string, bytes or an embedded message).
pub(crate) fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_as_written_and_unknown_types_are_skipped() {
        let mut m = Vec::new();
        put_uint(&mut m, 1, 300);
        put_bytes(&mut m, 2, b"runc");
        m.extend_from_slice(&[(3 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8]); // fixed64
        m.extend_from_slice(&[(4 << 3) | 5, 9, 0, 0, 0]); // fixed32
        put_uint(&mut m, 100_000, u64::MAX);
        let got: Vec<_> = fields(&m).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                (1, Value::Varint(300)),
                (2, Value::Bytes(b"runc")),
                (3, Value::Fixed64(0x0807_0605_0403_0201)),
                (4, Value::Fixed32(9)),
                (100_000, Value::Varint(u64::MAX)),
            ]
        );
        // 300 is 0xac 0x02 on the wire; u64::MAX takes ten bytes.
        assert_eq!(&m[..3], &[0x08, 0xac, 0x02]);
        assert_eq!(m.len(), 3 + 6 + 9 + 5 + 3 + 10);
    }

    #[test]
    fn every_malformed_field_is_an_error_and_ends_the_reading() {
        let cases: [(&[u8], WireError); 6] = [
            (&[0x0a, 5, b'a'], WireError::Truncated { field: 1, needed: 5, left: 1 }),
            (&[0x08], WireError::Truncated { field: 1, needed: 1, left: 0 }),
            (&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], WireError::LongVarint),
            (&[0x0b], WireError::WireType { field: 1, wire: 3 }),
            (&[0x00, 0x01], WireError::FieldZero),
            (&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f], WireError::Truncated { field: 1, needed: 0xffff_ffff, left: 0 }),
        ];
        for (bytes, want) in cases {
            let mut it = fields(bytes);
            assert_eq!(it.next(), Some(Err(want)), "{bytes:?}");
            assert_eq!(it.next(), None, "nothing after an error");
        }
    }
}
