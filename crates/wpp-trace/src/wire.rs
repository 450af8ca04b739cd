//! Checked little-endian and LEB128 encoding shared by every wpp file format.
//!
//! Readers never trust a length: every read names what it was reading, and a failure reports that
//! name with the absolute byte offset in the file, so `truncated while reading rule 7 body at byte
//! 1234` is what a user sees instead of a panic.
//!
//! Varints are unsigned LEB128: seven bits per byte, least significant group first, high bit set
//! on every byte but the last. `300` encodes as `ac 02`. A `u64` takes at most ten bytes; an
//! eleventh byte, or a tenth byte above `0x01`, is rejected as an overlong encoding.

/// Where and why a read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} while reading {what} at byte offset {offset}")]
pub struct WireError {
    /// What was being read, e.g. `"chunk length"`.
    pub what: &'static str,
    /// Absolute byte offset in the file where the failing item starts.
    pub offset: u64,
    /// What went wrong.
    pub kind: WireErrorKind,
}

/// The kinds of [`WireError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireErrorKind {
    /// The input ended before the item was complete.
    #[error("unexpected end of data")]
    Truncated,
    /// A varint has more bytes than its type allows.
    #[error("overlong varint")]
    Overlong,
    /// A value is outside the range the format allows.
    #[error("value {value} out of range (limit {limit})")]
    OutOfRange {
        /// The value read.
        value: u64,
        /// The largest value allowed.
        limit: u64,
    },
    /// A count or length says more than the rest of the input can hold: the file is cut short
    /// (or the count is damaged).
    #[error(
        "truncated: {count} items need at least {needed} bytes, but only {remaining} bytes \
         remain"
    )]
    TooFewBytes {
        /// The count read.
        count: u64,
        /// The fewest bytes those items take.
        needed: u64,
        /// The bytes left in the input from the count on.
        remaining: u64,
    },
}

/// Appends `v` as an unsigned LEB128 varint.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The number of bytes `write_varint` uses for `v`.
#[inline]
pub fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A cursor over a byte slice that reads checked values and knows its absolute file offset.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`, whose first byte is at absolute offset `base` in its file.
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// The absolute offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn error(&self, what: &'static str, kind: WireErrorKind) -> WireError {
        WireError {
            what,
            offset: self.offset(),
            kind,
        }
    }

    /// An error of kind `kind` at the current offset (for checks made by the caller).
    pub fn fail(&self, what: &'static str, kind: WireErrorKind) -> WireError {
        self.error(what, kind)
    }

    /// Reads `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(self.error(what, WireErrorKind::Truncated));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads one byte.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.bytes(1, what)?[0])
    }

    /// Reads a little-endian `u32`.
    #[inline]
    pub fn u32_le(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().unwrap()))
    }

    /// Reads a little-endian `u64`.
    #[inline]
    pub fn u64_le(&mut self, what: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().unwrap()))
    }

    /// Reads an unsigned LEB128 varint of at most 64 bits.
    #[inline]
    pub fn varint(&mut self, what: &'static str) -> Result<u64, WireError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                self.pos = start;
                return Err(self.error(what, WireErrorKind::Truncated));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                self.pos = start;
                return Err(self.error(what, WireErrorKind::Overlong));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.pos = start;
        Err(self.error(what, WireErrorKind::Overlong))
    }

    /// Reads a varint and checks it is at most `limit`.
    #[inline]
    pub fn varint_max(&mut self, limit: u64, what: &'static str) -> Result<u64, WireError> {
        let start = self.pos;
        let v = self.varint(what)?;
        if v > limit {
            self.pos = start;
            return Err(self.error(what, WireErrorKind::OutOfRange { value: v, limit }));
        }
        Ok(v)
    }

    /// Reads a varint count of items that each take at least `min_item_bytes` bytes, rejecting a
    /// count the remaining input cannot hold. Use it before allocating for the items, so a
    /// hostile count never sizes an allocation.
    /// A count beyond that is reported as [`WireErrorKind::TooFewBytes`], which says
    /// "truncated" (issue 14: a cut `.wpp` used to say "value 181848 out of range").
    pub fn count(&mut self, min_item_bytes: usize, what: &'static str) -> Result<usize, WireError> {
        // The bytes from the count on, as the bound has always been computed.
        let (start, remaining) = (self.pos, self.remaining() as u64);
        let min = min_item_bytes.max(1) as u64;
        let count = self.varint(what)?;
        if count > remaining / min {
            self.pos = start;
            let kind = WireErrorKind::TooFewBytes {
                count,
                needed: count.saturating_mul(min),
                remaining,
            };
            return Err(self.error(what, kind));
        }
        Ok(count as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14 item 5: a count the rest of the input cannot hold (a cut file) says
    /// "truncated", with the bytes it needs, instead of "value … out of range".
    #[test]
    fn a_count_beyond_the_input_says_truncated() {
        let mut bytes = Vec::new();
        write_varint(&mut bytes, 181_848);
        bytes.extend_from_slice(&[0; 10]);
        let e = Reader::new(&bytes, 100)
            .count(2, "section length")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "truncated: 181848 items need at least 363696 bytes, but only 13 bytes remain \
             while reading section length at byte offset 100"
        );
        // A count the input can hold reads.
        let mut r = Reader::new(&[5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0);
        assert_eq!(r.count(2, "n").unwrap(), 5);
    }

    #[test]
    fn varint_round_trip_and_lengths() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut r = Reader::new(&out, 0);
            assert_eq!(r.varint("v").unwrap(), v);
            assert!(r.is_empty());
        }
        let mut out = Vec::new();
        write_varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
    }

    #[test]
    fn truncated_and_overlong_varints_are_errors_with_offsets() {
        let mut r = Reader::new(&[0x80, 0x80], 100);
        let e = r.varint("thing").unwrap_err();
        assert_eq!(e.kind, WireErrorKind::Truncated);
        assert_eq!(e.offset, 100);
        assert_eq!(
            e.to_string(),
            "unexpected end of data while reading thing at byte offset 100"
        );
        let eleven = [0xffu8; 11];
        assert_eq!(
            Reader::new(&eleven, 0).varint("x").unwrap_err().kind,
            WireErrorKind::Overlong
        );
        let tenth_too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(
            Reader::new(&tenth_too_big, 0).varint("x").unwrap_err().kind,
            WireErrorKind::Overlong
        );
    }

    #[test]
    fn counts_are_bounded_by_remaining_input() {
        let mut buf = Vec::new();
        write_varint(&mut buf, 1_000_000);
        buf.extend_from_slice(&[0; 10]);
        let e = Reader::new(&buf, 0).count(1, "rule count").unwrap_err();
        assert!(matches!(e.kind, WireErrorKind::TooFewBytes { .. }));
    }
}
