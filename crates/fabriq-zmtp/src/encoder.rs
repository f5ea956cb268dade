//! The outgoing side: frames queued as one contiguous batch, with large
//! payloads kept by reference for vectored writes.
//!
//! Small frames (header and body) are copied into a batch buffer, so a
//! thousand 8-byte messages leave in one `write`. A body of at least
//! `by_ref_threshold` bytes is not copied: the batch so far is sealed, the
//! body's `Bytes` handle is queued after it, and the transport writes the
//! pieces with one `writev` ([`Encoder::io_slices`]), hands them on one
//! by one ([`Encoder::pop_chunk`], for transports that move whole buffers),
//! or copies the byte stream into buffers it provides
//! ([`Encoder::copy_into`], for transports that fill fixed-size pages).
//! All three take from the same queue, in order, and can be mixed.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::command::Command;
use crate::copies::{self, Site};
use crate::frame::{encode_header, header_len, Frame, FLAG_MORE};
use crate::part::{Part, INLINE_MAX};

/// Default size from which bodies are sent by reference (libzmq uses its
/// 8 KiB batch size for the same cut).
pub const DEFAULT_BY_REF_THRESHOLD: usize = 8 * 1024;

/// Queue of encoded bytes waiting for the transport.
///
/// ```
/// use bytes::Bytes;
/// use fabriq_zmtp::{Encoder, Part};
/// let mut enc = Encoder::new(1024);
/// enc.push_frame(&Part::from_static(b"small"), false);
/// enc.push_frame(&Part::from(Bytes::from(vec![7u8; 4096])), false); // by reference
/// let mut slices = [std::io::IoSlice::new(&[]); 8];
/// let n = enc.io_slices(&mut slices);
/// assert_eq!(n, 2); // [hdr small hdr] [4096-byte body]
/// assert_eq!(enc.len(), 2 + 5 + 9 + 4096);
/// enc.advance(enc.len());
/// assert!(enc.is_empty());
/// ```
#[derive(Debug)]
pub struct Encoder {
    /// Sealed pieces, oldest first; all precede `batch`.
    queue: VecDeque<Bytes>,
    /// Bytes being accumulated after the last sealed piece.
    batch: BytesMut,
    len: usize,
    by_ref_threshold: usize,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new(DEFAULT_BY_REF_THRESHOLD)
    }
}

impl Encoder {
    /// An empty encoder that sends bodies of `by_ref_threshold` bytes or
    /// more by reference.
    pub fn new(by_ref_threshold: usize) -> Self {
        Encoder {
            queue: VecDeque::new(),
            batch: BytesMut::new(),
            len: 0,
            by_ref_threshold: by_ref_threshold.max(1),
        }
    }

    /// Bytes waiting to be written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits to be written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues raw bytes (the greeting).
    pub fn push_raw(&mut self, bytes: &[u8]) {
        self.batch.extend_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Queues one data frame.
    #[inline]
    pub fn push_frame(&mut self, body: &Part, more: bool) {
        let len = body.len();
        if len >= self.by_ref_threshold {
            // A handle to the body (an inline one is copied into one only
            // if the threshold was set below the inline size).
            self.push(&body.to_bytes(), more, false);
            return;
        }
        if let Some((data, len)) = body.inline_buffer() {
            // Header and body in one fixed-size buffer, appended at once:
            // one capacity check, where the header's two `put_u8` and
            // the body's `put_slice` made three.
            let mut frame = [0u8; 2 + INLINE_MAX];
            frame[0] = if more { FLAG_MORE } else { 0 };
            frame[1] = len as u8;
            frame[2..].copy_from_slice(data);
            self.batch.extend_from_slice(&frame[..2 + len]);
            copies::count(Site::Batch, len);
            self.len += 2 + len;
            return;
        }
        let hlen = header_len(len);
        self.batch.reserve(hlen + len);
        encode_header(&mut self.batch, len, more, false);
        self.batch.put_slice(body);
        copies::count(Site::Batch, len);
        self.len += hlen + len;
    }

    /// Queues a command frame.
    pub fn push_command(&mut self, cmd: &Command) {
        let body_len = cmd.encoded_len();
        self.batch.reserve(header_len(body_len) + body_len);
        encode_header(&mut self.batch, body_len, false, true);
        cmd.encode(&mut self.batch);
        self.len += header_len(body_len) + body_len;
    }

    /// Queues a frame with the flags it carries: a data frame or a
    /// command, MORE set or not. This is how frames a mechanism has
    /// sealed are queued.
    pub fn push_wire(&mut self, frame: &Frame) {
        self.push(&frame.data, frame.more, frame.command);
    }

    fn push(&mut self, body: &Bytes, more: bool, command: bool) {
        let hlen = header_len(body.len());
        if body.len() >= self.by_ref_threshold {
            self.batch.reserve(hlen);
            encode_header(&mut self.batch, body.len(), more, command);
            self.seal();
            self.queue.push_back(body.clone());
        } else {
            self.batch.reserve(hlen + body.len());
            encode_header(&mut self.batch, body.len(), more, command);
            self.batch.put_slice(body);
            if !command {
                copies::count(Site::Batch, body.len());
            }
        }
        self.len += hlen + body.len();
    }

    fn seal(&mut self) {
        if !self.batch.is_empty() {
            self.queue.push_back(self.batch.split().freeze());
        }
    }

    /// Fills `dst` with the pending pieces in order and returns how many
    /// were filled. Pass them to `write_vectored`, then call
    /// [`Encoder::advance`] with the number of bytes written.
    pub fn io_slices<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let pieces = self
            .queue
            .iter()
            .map(|b| &b[..])
            .chain((!self.batch.is_empty()).then_some(&self.batch[..]));
        let mut n = 0;
        for (slot, piece) in dst.iter_mut().zip(pieces) {
            *slot = IoSlice::new(piece);
            n += 1;
        }
        n
    }

    /// Removes `n` written bytes from the front.
    ///
    /// # Panics
    /// If `n` exceeds [`Encoder::len`] (a transport bug, not peer input).
    pub fn advance(&mut self, mut n: usize) {
        assert!(n <= self.len, "advance past the end of the encoder");
        self.len -= n;
        while n > 0 {
            match self.queue.front_mut() {
                Some(front) if n >= front.len() => {
                    n -= front.len();
                    self.queue.pop_front();
                }
                Some(front) => {
                    front.advance(n);
                    n = 0;
                }
                None => {
                    self.batch.advance(n);
                    n = 0;
                }
            }
        }
    }

    /// Copies up to `max` bytes from the front of the queue into `dst`
    /// (never more than `dst.remaining_mut()`), removes them from the
    /// queue, and returns how many were copied. The bytes are the ones
    /// [`Encoder::io_slices`] would have shown, in the same order; large
    /// bodies kept by reference are copied too, since the destination is
    /// the caller's.
    ///
    /// ```
    /// use fabriq_zmtp::{Encoder, Part};
    /// let mut enc = Encoder::new(1024);
    /// enc.push_frame(&Part::from_static(b"hello"), false);
    /// let mut page = [0u8; 4];
    /// assert_eq!(enc.copy_into(&mut &mut page[..], usize::MAX), 4);
    /// assert_eq!(&page, b"\x00\x05he");
    /// let mut rest = Vec::new();
    /// assert_eq!(enc.copy_into(&mut rest, usize::MAX), 3);
    /// assert_eq!(rest, b"llo");
    /// assert!(enc.is_empty());
    /// ```
    pub fn copy_into<B: BufMut + ?Sized>(&mut self, dst: &mut B, max: usize) -> usize {
        let total = max.min(dst.remaining_mut()).min(self.len);
        let mut left = total;
        while left > 0 {
            match self.queue.front_mut() {
                Some(front) => {
                    let n = left.min(front.len());
                    dst.put_slice(&front[..n]);
                    if n == front.len() {
                        self.queue.pop_front();
                    } else {
                        front.advance(n);
                    }
                    left -= n;
                }
                None => {
                    // Whatever is left lies in the batch (`total <= len`).
                    dst.put_slice(&self.batch[..left]);
                    self.batch.advance(left);
                    left = 0;
                }
            }
        }
        self.len -= total;
        copies::count(Site::Page, total);
        total
    }

    /// Takes the next whole piece (sealing the current batch), for
    /// transports that move owned buffers rather than write into a stream.
    pub fn pop_chunk(&mut self) -> Option<Bytes> {
        if self.queue.is_empty() {
            self.seal();
        }
        let chunk = self.queue.pop_front()?;
        self.len -= chunk.len();
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(enc: &mut Encoder) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(c) = enc.pop_chunk() {
            out.extend_from_slice(&c);
        }
        out
    }

    #[test]
    fn small_frames_share_one_batch() {
        let mut enc = Encoder::new(64);
        for _ in 0..100 {
            enc.push_frame(&Part::from_static(b"12345678"), false);
        }
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(enc.io_slices(&mut slices), 1);
        assert_eq!(slices[0].len(), 1000);
    }

    #[test]
    fn large_bodies_are_not_copied() {
        let big = Bytes::from(vec![1u8; 100]);
        let mut enc = Encoder::new(64);
        enc.push_frame(&Part::from_static(b"a"), true);
        enc.push_frame(&Part::from(big.clone()), true);
        enc.push_frame(&Part::from_static(b"z"), false);
        let mut slices = [IoSlice::new(&[]); 4];
        assert_eq!(enc.io_slices(&mut slices), 3);
        assert_eq!(slices[1].as_ptr(), big.as_ptr());
        assert_eq!(&slices[0][..], &[1, 1, b'a', 1, 100]);
        assert_eq!(&slices[2][..], &[0, 1, b'z']);
    }

    #[test]
    fn partial_advance_keeps_order() {
        let mut enc = Encoder::new(4);
        enc.push_frame(&Part::from_static(b"abcdef"), false);
        enc.push_frame(&Part::from_static(b"x"), false);
        let expected = [&[0u8, 6][..], b"abcdef", &[0, 1, b'x']].concat();
        let mut written = Vec::new();
        while !enc.is_empty() {
            let mut first = [IoSlice::new(&[])];
            enc.io_slices(&mut first);
            let piece = &first[0][..];
            let n = piece.len().min(3);
            written.extend_from_slice(&piece[..n]);
            enc.advance(n);
        }
        assert_eq!(written, expected);
        enc.push_raw(b"more");
        assert_eq!(drain(&mut enc), b"more");
    }

    #[test]
    fn copy_into_fills_pages_across_pieces() {
        let big = Bytes::from((0..=255u8).cycle().take(300).collect::<Vec<u8>>());
        let mut enc = Encoder::new(64);
        enc.push_raw(b"greeting");
        enc.push_frame(&Part::from_static(b"a"), true);
        enc.push_frame(&Part::from(big.clone()), false);
        enc.push_frame(&Part::from_static(b"z"), false);
        let mut expected = b"greeting\x01\x01a\x02".to_vec();
        expected.extend_from_slice(&300u64.to_be_bytes());
        expected.extend_from_slice(&big);
        expected.extend_from_slice(b"\x00\x01z");
        assert_eq!(enc.len(), expected.len());

        let mut out = Vec::new();
        let mut page = [0u8; 7];
        loop {
            let n = enc.copy_into(&mut &mut page[..], usize::MAX);
            if n == 0 {
                break;
            }
            out.extend_from_slice(&page[..n]);
        }
        assert_eq!(out, expected);
        assert!(enc.is_empty());

        // `max` bounds a growable destination; an empty queue copies nothing.
        enc.push_raw(b"0123456789");
        let mut grow = Vec::new();
        assert_eq!(enc.copy_into(&mut grow, 4), 4);
        assert_eq!(enc.copy_into(&mut grow, 0), 0);
        assert_eq!(enc.copy_into(&mut grow, 100), 6);
        assert_eq!(enc.copy_into(&mut grow, 100), 0);
        assert_eq!(grow, b"0123456789");
    }
}
