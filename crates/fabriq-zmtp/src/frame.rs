//! Frame headers and the zero-copy frame decoder.
//!
//! ```text
//! short frame:  flags(1) size(1)            body
//! long frame:   flags(1) size(8, big endian) body
//! flags: bit0 MORE, bit1 LONG, bit2 COMMAND; other bits reserved (ignored)
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::ProtocolError;

/// Flag bit: more frames of this message follow.
pub const FLAG_MORE: u8 = 0x01;
/// Flag bit: the size field is 8 bytes.
pub const FLAG_LONG: u8 = 0x02;
/// Flag bit: this frame is a command.
pub const FLAG_COMMAND: u8 = 0x04;

/// Largest header: flags byte plus 8-byte size.
pub const MAX_HEADER_LEN: usize = 9;

/// One decoded frame. `data` is a slice of the connection's read buffer
/// when the whole frame arrived in one read: no copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// More frames of the same message follow.
    pub more: bool,
    /// This frame is a command, not message data.
    pub command: bool,
    /// The frame body.
    pub data: Bytes,
}

/// Writes a frame header for a body of `size` bytes.
pub fn encode_header(dst: &mut BytesMut, size: usize, more: bool, command: bool) {
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

/// A parsed header: flags and announced body size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    flags: u8,
    size: u64,
    len: usize,
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

/// Cuts frames out of a read buffer.
///
/// The size limits are checked when a header is parsed, before any memory
/// is set aside for the body. The decoder never reserves the announced
/// size up front: [`FrameDecoder::read_hint`] grows the buffer in step with
/// what has actually arrived, so a peer claiming a 2^64-byte frame costs
/// nothing until it sends the bytes.
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
        let Some(header) = parse_header(buf) else {
            return Ok(None);
        };
        let size = self.check_size(header)?;
        if buf.len() - header.len < size {
            return Ok(None);
        }
        buf.advance(header.len);
        let data = buf.split_to(size).freeze();
        Ok(Some(Frame {
            more: header.flags & FLAG_MORE != 0,
            command: header.flags & FLAG_COMMAND != 0,
            data,
        }))
    }

    /// How many bytes of spare capacity the read buffer should have before
    /// the next read. For a partly received large frame this is at most the
    /// number of bytes already buffered (geometric growth), so memory
    /// tracks bytes actually received, never the announced size.
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
                    missing.min(buf.len().max(chunk))
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
    fn read_hint_grows_geometrically() {
        let dec = FrameDecoder::new(None, 1024);
        let mut buf = BytesMut::new();
        buf.put_u8(FLAG_LONG);
        buf.put_u64(u64::MAX);
        // 9 bytes buffered, huge frame announced: ask for one chunk only.
        assert_eq!(dec.read_hint(&buf, 4096), 4096);
        buf.extend_from_slice(&[0; 10_000]);
        assert_eq!(dec.read_hint(&buf, 4096), 10_009);
    }
}
