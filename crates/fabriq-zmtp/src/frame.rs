//! Frame headers and the zero-copy frame decoder.
//!
//! ```text
//! short frame:  flags(1) size(1)            body
//! long frame:   flags(1) size(8, big endian) body
//! flags: bit0 MORE, bit1 LONG, bit2 COMMAND; other bits reserved (ignored)
//! ```

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::copies::{self, Site};
use crate::error::ProtocolError;
use crate::part::{Part, INLINE_MAX};

/// Flag bit: more frames of this message follow.
pub const FLAG_MORE: u8 = 0x01;
/// Flag bit: the size field is 8 bytes.
pub const FLAG_LONG: u8 = 0x02;
/// Flag bit: this frame is a command.
pub const FLAG_COMMAND: u8 = 0x04;

/// Largest header: flags byte plus 8-byte size.
pub const MAX_HEADER_LEN: usize = 9;

/// One frame: flags and body. A decoded frame's `data` is a slice of the
/// buffer it was decoded from (the connection's read buffer, or a buffer
/// the caller handed in) when the whole frame lay in it: no copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// More frames of the same message follow.
    pub more: bool,
    /// This frame is a command, not message data.
    pub command: bool,
    /// The frame body.
    pub data: Bytes,
}

/// Writes a frame header for a body of `size` bytes into any buffer: the
/// encoder's batch, or a caller's memory (a fabric page) that has room
/// for [`header_len`]`(size)` bytes.
///
/// ```
/// use fabriq_zmtp::frame::{encode_header, header_len};
/// let mut page = [0u8; 16];
/// let mut dst = &mut page[..];
/// encode_header(&mut dst, 300, true, false);
/// assert_eq!(header_len(300), 9);
/// assert_eq!(&page[..9], &[0x03, 0, 0, 0, 0, 0, 0, 1, 44]);
/// ```
pub fn encode_header<B: BufMut + ?Sized>(dst: &mut B, size: usize, more: bool, command: bool) {
    let mut flags = 0;
    if more {
        flags |= FLAG_MORE;
    }
    if command {
        flags |= FLAG_COMMAND;
    }
    if size <= u8::MAX as usize {
        dst.put_u8(flags);
        dst.put_u8(size as u8);
    } else {
        dst.put_u8(flags | FLAG_LONG);
        dst.put_u64(size as u64);
    }
}

/// Length of the header [`encode_header`] writes for `size`.
pub fn header_len(size: usize) -> usize {
    if size <= u8::MAX as usize {
        2
    } else {
        MAX_HEADER_LEN
    }
}

/// The whole length (header and body) of the frame at the front of
/// `buf`, once its header is there; `None` before. Nothing is checked
/// against a size limit: for sizing a buffer that gathers the frame
/// (clamp it), not for trusting the peer.
///
/// ```
/// use fabriq_zmtp::frame::frame_len;
/// assert_eq!(frame_len(&[0, 5, b'a']), Some(7));
/// assert_eq!(frame_len(&[2, 0, 0, 0, 0, 0, 0, 1, 0]), Some(9 + 256));
/// assert_eq!(frame_len(&[2, 0, 0]), None); // a long header, cut short
/// assert_eq!(frame_len(&[2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), Some(u64::MAX));
/// ```
pub fn frame_len(buf: &[u8]) -> Option<u64> {
    let header = parse_header(buf)?;
    Some((header.len as u64).saturating_add(header.size))
}

/// A parsed header: flags and announced body size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    flags: u8,
    size: u64,
    len: usize,
}

impl Header {
    fn frame(self, data: Bytes) -> Frame {
        Frame {
            more: self.flags & FLAG_MORE != 0,
            command: self.flags & FLAG_COMMAND != 0,
            data,
        }
    }
}

fn parse_header(buf: &[u8]) -> Option<Header> {
    let flags = *buf.first()?;
    if flags & FLAG_LONG != 0 {
        let size: [u8; 8] = buf.get(1..MAX_HEADER_LEN)?.try_into().ok()?;
        Some(Header {
            flags,
            size: u64::from_be_bytes(size),
            len: MAX_HEADER_LEN,
        })
    } else {
        Some(Header {
            flags,
            size: u64::from(*buf.get(1)?),
            len: 2,
        })
    }
}

/// Frames with bodies of up to this size are read into a buffer of their
/// full size (header included) as soon as their header has arrived. The
/// body, not the frame: a 1 MiB message trusted short of its last nine
/// bytes grew its buffer once more at the end, a copy of the whole
/// megabyte (found by the copy-budget test, crates/fabriq-copy-budget).
pub const TRUSTED_FRAME: usize = 1 << 20;

/// Beyond [`TRUSTED_FRAME`], the read buffer of a frame grows to at most
/// this many times the bytes that have arrived.
pub const TRUST_FACTOR: usize = 16;

/// Cuts frames out of a read buffer.
///
/// The size limits are checked when a header is parsed, before any memory
/// is set aside for the body. The decoder trusts an announced size only
/// so far: [`FrameDecoder::read_hint`] asks for the whole rest of a frame
/// of up to [`TRUSTED_FRAME`] bytes at once, and for larger ones at most
/// [`TRUST_FACTOR`] times what has arrived, so a peer claiming a 2^64-byte
/// frame gets a buffer of 1 MiB (address space: untouched pages cost no
/// memory) until it sends the bytes, and a frame that really is large is
/// read straight into its final buffer, with few regrowths.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_data: Option<u64>,
    max_command: u64,
}

impl FrameDecoder {
    /// A decoder that refuses data frames above `max_data` bytes (no limit
    /// if `None`) and command frames above `max_command` bytes.
    pub fn new(max_data: Option<u64>, max_command: u64) -> Self {
        FrameDecoder {
            max_data,
            max_command,
        }
    }

    /// Changes the command-size limit (the handshake uses a tighter one).
    pub fn set_max_command(&mut self, max_command: u64) {
        self.max_command = max_command;
    }

    /// Cuts the next complete frame off the front of `buf`, or returns
    /// `Ok(None)` when more bytes are needed.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Frame>, ProtocolError> {
        let Some((header, size)) = self.complete(buf)? else {
            return Ok(None);
        };
        buf.advance(header.len);
        let data = buf.split_to(size).freeze();
        Ok(Some(header.frame(data)))
    }

    /// The data frame at the front of `buf` if it is complete and its body
    /// fits inline in a [`Part`]: the body copied out, `buf` advanced past
    /// the frame, and the MORE flag. `None` (and `buf` untouched) for
    /// anything else, a command, a larger or incomplete frame, or one over
    /// the size limit, which [`FrameDecoder::decode`] then handles (and
    /// refuses) as before.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use fabriq_zmtp::frame::FrameDecoder;
    /// let mut buf = BytesMut::from(&b"\x01\x02hi\x00\x03you\x04\x00"[..]);
    /// let dec = FrameDecoder::new(None, 1024);
    /// let (hi, more) = dec.decode_small(&mut buf).unwrap();
    /// assert!(more && hi.is_inline() && &hi[..] == b"hi");
    /// assert_eq!(&dec.decode_small(&mut buf).unwrap().0[..], b"you");
    /// assert!(dec.decode_small(&mut buf).is_none()); // a command
    /// assert_eq!(&buf[..], b"\x04\x00");
    /// ```
    #[inline]
    pub fn decode_small(&self, buf: &mut BytesMut) -> Option<(Part, bool)> {
        let (&flags, rest) = buf.split_first()?;
        if flags & (FLAG_LONG | FLAG_COMMAND) != 0 {
            return None;
        }
        let (&size, rest) = rest.split_first()?;
        let size = usize::from(size);
        if size > INLINE_MAX || rest.len() < size {
            return None;
        }
        if self.max_data.is_some_and(|max| size as u64 > max) {
            return None;
        }
        let part = Part::inline(&rest[..size])?;
        copies::count(Site::Inline, size);
        buf.advance(2 + size);
        Some((part, flags & FLAG_MORE != 0))
    }

    /// [`FrameDecoder::decode`] for an immutable, shared buffer (one the
    /// caller received whole, such as a registered page): the frame's
    /// body is a slice of `buf`'s memory, and `buf` is advanced past the
    /// frame. Leaves `buf` as it is and returns `Ok(None)` when the frame
    /// at its front is incomplete.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use fabriq_zmtp::frame::FrameDecoder;
    /// let page = Bytes::from_static(b"\x01\x02hi\x00\x03you\x00\x09cut");
    /// let mut rest = page.clone();
    /// let dec = FrameDecoder::new(None, 1024);
    /// let hi = dec.decode_bytes(&mut rest).unwrap().unwrap();
    /// assert!(hi.more && &hi.data[..] == b"hi");
    /// assert_eq!(hi.data.as_ptr(), page[2..].as_ptr()); // no copy
    /// let you = dec.decode_bytes(&mut rest).unwrap().unwrap();
    /// assert_eq!(&you.data[..], b"you");
    /// assert_eq!(dec.decode_bytes(&mut rest), Ok(None)); // frame goes on
    /// assert_eq!(&rest[..], b"\x00\x09cut");
    /// ```
    pub fn decode_bytes(&self, buf: &mut Bytes) -> Result<Option<Frame>, ProtocolError> {
        let Some((header, size)) = self.complete(buf)? else {
            return Ok(None);
        };
        buf.advance(header.len);
        let data = buf.split_to(size);
        Ok(Some(header.frame(data)))
    }

    /// The header of the frame at the front of `buf` and its body size,
    /// if the whole frame is there. The size limit is checked as soon as
    /// the header is.
    #[inline]
    fn complete(&self, buf: &[u8]) -> Result<Option<(Header, usize)>, ProtocolError> {
        let Some(header) = parse_header(buf) else {
            return Ok(None);
        };
        let size = self.check_size(header)?;
        if buf.len() - header.len < size {
            return Ok(None);
        }
        Ok(Some((header, size)))
    }

    /// Copies bytes from the front of `more` to the end of `buf` until
    /// `buf` holds the whole frame that starts it, or `more` runs out. Never
    /// copies past the end of that frame, so the next frame can again be
    /// decoded from `more` without a copy. The size limits are checked as
    /// soon as the header is in `buf`, before any body byte is copied.
    pub(crate) fn assemble(
        &self,
        buf: &mut BytesMut,
        more: &mut VecDeque<Bytes>,
    ) -> Result<(), ProtocolError> {
        let mut available: usize = more.iter().map(Bytes::len).sum();
        let mut reserved = false;
        loop {
            let need = match parse_header(buf) {
                Some(header) => {
                    // At most isize::MAX + 9: no overflow.
                    let total = header.len + self.check_size(header)?;
                    if buf.len() >= total {
                        return Ok(());
                    }
                    if !reserved {
                        // Room for the rest of the frame, as far as it
                        // has arrived: never the announced size alone.
                        buf.reserve((total - buf.len()).min(available));
                        reserved = true;
                    }
                    total
                }
                // A frame is at least two bytes; a long header is nine.
                None if buf.first().is_some_and(|f| f & FLAG_LONG != 0) => MAX_HEADER_LEN,
                None => 2,
            };
            let Some(front) = more.front_mut() else {
                return Ok(());
            };
            let take = (need - buf.len()).min(front.len());
            buf.extend_from_slice(&front[..take]);
            copies::count(Site::Gather, take);
            front.advance(take);
            available -= take;
            if front.is_empty() {
                more.pop_front();
            }
        }
    }

    /// How many more bytes the frame at the front of `buf` needs to be
    /// whole, once its header is there (`None` before; `Some(0)` when it is
    /// whole already).
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use fabriq_zmtp::frame::FrameDecoder;
    ///
    /// let dec = FrameDecoder::new(None, 1024);
    /// let mut buf = BytesMut::from(&[0u8, 5, b'a', b'b'][..]);
    /// assert_eq!(dec.missing(&buf), Some(3));
    /// buf.extend_from_slice(b"cde");
    /// assert_eq!(dec.missing(&buf), Some(0));
    /// assert_eq!(dec.missing(&BytesMut::from(&[2u8, 0, 0][..])), None);
    /// ```
    pub fn missing(&self, buf: &BytesMut) -> Option<usize> {
        let header = parse_header(buf)?;
        let missing = (header.len as u64)
            .saturating_add(header.size)
            .saturating_sub(buf.len() as u64);
        Some(usize::try_from(missing).unwrap_or(usize::MAX))
    }

    /// How many bytes of spare capacity the read buffer should have before
    /// the next read. For a partly received frame larger than `chunk`, the
    /// rest of it, up to [`TRUSTED_FRAME`] or [`TRUST_FACTOR`] times the
    /// bytes already buffered, whichever is more: reads then land in the
    /// frame's final buffer, which grows (and is copied) only for frames
    /// above 1 MiB, by a factor of 16 each time. The memory a peer can make
    /// us set aside stays bounded by what it really sent.
    ///
    /// (It used to grow by doubling from the first read: a 1 MiB frame was
    /// copied about twice over on its way in, half the copying of a 1 MiB
    /// REQ/REP round trip under callgrind.)
    pub fn read_hint(&self, buf: &BytesMut, chunk: usize) -> usize {
        match parse_header(buf) {
            Some(header) => {
                let missing = (header.len as u64)
                    .saturating_add(header.size)
                    .saturating_sub(buf.len() as u64);
                let missing = usize::try_from(missing).unwrap_or(usize::MAX);
                if missing <= chunk {
                    chunk
                } else {
                    // The buffer as a whole stays within the trust.
                    let trusted = (TRUSTED_FRAME + MAX_HEADER_LEN)
                        .max(buf.len().saturating_mul(TRUST_FACTOR));
                    missing.min(trusted - buf.len().min(trusted)).max(chunk)
                }
            }
            None => chunk,
        }
    }

    fn check_size(&self, header: Header) -> Result<usize, ProtocolError> {
        let limit = if header.flags & FLAG_COMMAND != 0 {
            self.max_command
        } else {
            self.max_data.unwrap_or(u64::MAX)
        };
        // Whatever the configured limit, a frame must fit in memory.
        let limit = limit.min(isize::MAX as u64);
        if header.size > limit {
            return Err(ProtocolError::FrameTooLarge {
                size: header.size,
                limit,
            });
        }
        Ok(header.size as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(body: &[u8], more: bool, command: bool) -> BytesMut {
        let mut b = BytesMut::new();
        encode_header(&mut b, body.len(), more, command);
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn short_and_long_headers() {
        let mut b = BytesMut::new();
        encode_header(&mut b, 255, true, false);
        assert_eq!(&b[..], &[0x01, 0xFF]);
        b.clear();
        encode_header(&mut b, 256, false, true);
        assert_eq!(&b[..], &[0x06, 0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(header_len(255), 2);
        assert_eq!(header_len(256), 9);
    }

    #[test]
    fn decodes_in_pieces_without_copying() {
        let dec = FrameDecoder::new(None, 1024);
        let full = encoded(b"hello", true, false);
        let mut buf = BytesMut::new();
        for (i, byte) in full.iter().enumerate() {
            buf.extend_from_slice(&[*byte]);
            let got = dec.decode(&mut buf).unwrap();
            assert_eq!(got.is_some(), i == full.len() - 1);
            if let Some(f) = got {
                assert!(f.more && !f.command);
                assert_eq!(&f.data[..], b"hello");
            }
        }
        assert!(buf.is_empty());

        // Two frames in one buffer: the payload points into that buffer.
        let mut buf = encoded(b"abc", false, false);
        buf.extend_from_slice(&encoded(b"def", false, false));
        let base = buf.as_ptr() as usize;
        let f = dec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(f.data.as_ptr() as usize, base + 2);
    }

    #[test]
    fn reserved_flag_bits_are_ignored() {
        let dec = FrameDecoder::new(None, 1024);
        let mut buf = BytesMut::from(&[0xF1u8, 1, b'x'][..]);
        let f = dec.decode(&mut buf).unwrap().unwrap();
        assert!(f.more && !f.command);
    }

    #[test]
    fn limits_are_checked_on_the_header_alone() {
        let dec = FrameDecoder::new(Some(10), 20);
        let mut buf = BytesMut::from(&[0x00u8, 11][..]);
        assert_eq!(
            dec.decode(&mut buf),
            Err(ProtocolError::FrameTooLarge {
                size: 11,
                limit: 10
            })
        );
        let mut buf = BytesMut::from(&[0x04u8, 21][..]);
        assert!(matches!(
            dec.decode(&mut buf),
            Err(ProtocolError::FrameTooLarge { size: 21, .. })
        ));
    }

    #[test]
    fn assemble_copies_exactly_one_frame() {
        let dec = FrameDecoder::new(None, 1024);
        let mut wire = encoded(&[7u8; 300], true, false); // long header
        wire.extend_from_slice(&encoded(b"next", false, false));
        let wire = wire.freeze();
        // Cut inside the long header, then inside the body.
        let mut more: VecDeque<Bytes> = [wire.slice(..4), wire.slice(4..100), wire.slice(100..)]
            .into_iter()
            .collect();
        let mut buf = BytesMut::new();
        dec.assemble(&mut buf, &mut more).unwrap();
        assert_eq!(buf.len(), 9 + 300);
        let f = dec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&f.data[..], &[7u8; 300][..]);
        assert!(buf.is_empty());
        // What is left is the next frame, untouched, still in the caller's
        // buffer.
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].as_ptr(), wire[309..].as_ptr());
        let next = dec.decode_bytes(&mut more[0]).unwrap().unwrap();
        assert_eq!(next.data.as_ptr(), wire[311..].as_ptr());

        // Limits hold before the body is copied.
        let dec = FrameDecoder::new(Some(10), 20);
        let mut more: VecDeque<Bytes> =
            [Bytes::from_static(b"\x00"), Bytes::from_static(b"\x0bxyz")]
                .into_iter()
                .collect();
        let mut buf = BytesMut::new();
        assert!(matches!(
            dec.assemble(&mut buf, &mut more),
            Err(ProtocolError::FrameTooLarge { size: 11, .. })
        ));
        assert_eq!(&buf[..], b"\x00\x0b");
    }

    #[test]
    fn read_hint_trusts_a_frame_only_as_far_as_its_bytes_arrived() {
        let dec = FrameDecoder::new(None, 1024);
        let mut buf = BytesMut::new();
        buf.put_u8(FLAG_LONG);
        buf.put_u64(u64::MAX);
        // 9 bytes buffered, a huge frame announced: 1 MiB in all.
        assert_eq!(dec.read_hint(&buf, 4096), TRUSTED_FRAME);
        buf.extend_from_slice(&[0; 100_000]);
        assert_eq!(dec.read_hint(&buf, 4096), 100_009 * (TRUST_FACTOR - 1));
        // A frame of 300 kB: all of its rest at once.
        let mut buf = BytesMut::new();
        buf.put_u8(FLAG_LONG);
        buf.put_u64(300_000);
        buf.extend_from_slice(&[0; 5000]);
        assert_eq!(dec.read_hint(&buf, 4096), 295_000);
        // Small frames: one chunk.
        let mut buf = BytesMut::new();
        buf.put_u8(0);
        buf.put_u8(200);
        assert_eq!(dec.read_hint(&buf, 4096), 4096);
    }
}
