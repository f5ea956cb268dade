//! Input: the bytes handed in (`handle_input`, `recv_buf` and
//! `input_received`, `feed`) and the end of the peer's stream.

use std::time::Instant;

use bytes::{Bytes, BytesMut};

use crate::copies::{self, Site};
use crate::error::ProtocolError;

use super::{Connection, State};

impl Connection {
    /// The read buffer, with spare capacity for the next read. Append the
    /// bytes read (e.g. with `BufMut` methods) and call
    /// [`Connection::input_received`]. The spare room follows what has
    /// arrived: a frame that announces gigabytes gets buffer space only
    /// as its bytes come in.
    ///
    /// Buffers given to [`Connection::handle_input`] and not yet decoded
    /// are first copied into this buffer, so input stays in order however
    /// the styles are mixed.
    pub fn recv_buf(&mut self) -> &mut BytesMut {
        self.take_owned_input();
        let want = self.read_size();
        // Grow only when less than a read chunk is left: growing whenever
        // the spare room fell short of `want` let the allocator's doubling
        // overshoot the frame's trusted size. And not when more than a
        // chunk of a large frame is buffered and the room left holds its
        // rest: growing then moved all of it for its last few bytes (a
        // 300 kB frame moved 289 kB). A shorter read costs less than that
        // copy; for small frames the copy is the cheaper one.
        //
        // Between small frames, a buffer that cannot be reused in place is
        // read into until less than a quarter chunk is left: the frames
        // decoded from it are slices of it, and while any is still queued
        // growing allocates a new chunk, leaving the room left in this one
        // pinned, unused, by those frames. A receiver whose reads came in
        // a few kB at a time while its messages queued held a whole 64 KiB
        // chunk per read (libzmq's are 8 KiB).
        let chunk = self.config.read_chunk;
        let spare = self.rx.capacity() - self.rx.len();
        let rest_fits = self.rx.len() > chunk
            && self
                .decoder
                .missing(&self.rx)
                .is_some_and(|m| m > 0 && m <= spare);
        if spare < want.min(chunk) && !rest_fits {
            let before = self.rx.as_ptr();
            let tail_will_do = want <= chunk && spare >= chunk / 4;
            if !self.rx.try_reclaim(want) && !tail_will_do {
                self.rx.reserve(want);
            }
            // Growing moves what is buffered (the start of a frame) to the
            // new memory, or to the front of the old.
            if self.rx.as_ptr() != before {
                copies::count(Site::Regrow, self.rx.len());
            }
        }
        &mut self.rx
    }

    /// How many bytes the next read should ask for: one read chunk, or
    /// the rest of a large frame that is arriving, as far as the decoder
    /// trusts its announced size (see [`crate::frame::FrameDecoder`]).
    /// [`Connection::recv_buf`] leaves at least this much spare room, or
    /// at least a read chunk's worth, or the rest of a large frame.
    pub fn read_size(&self) -> usize {
        self.decoder.read_hint(&self.rx, self.config.read_chunk)
    }

    /// Records that bytes were appended to [`Connection::recv_buf`] at
    /// `now` (any traffic proves the peer alive).
    pub fn input_received(&mut self, now: Instant) {
        self.last_rx = now;
        self.ping_unanswered_since = None;
    }

    /// Copies `data` into the read buffer and records it: for transports
    /// that receive owned buffers, and for tests.
    pub fn feed(&mut self, data: &[u8], now: Instant) {
        self.take_owned_input();
        self.rx.extend_from_slice(data);
        copies::count(Site::Gather, data.len());
        self.input_received(now);
    }

    /// Hands over a buffer of received bytes that the caller owns (for
    /// example a registered page that a fabric transport received whole)
    /// and records it at `now`. Nothing is copied here: decoding happens
    /// in [`Connection::poll_event`], which returns every frame lying
    /// wholly inside `data` as a slice of it (`Bytes` sharing its memory),
    /// so the buffer stays alive as long as any such frame, or the
    /// connection, holds it. (A small message thus keeps its whole page:
    /// a transport that must recycle pages quickly copies such messages
    /// out.)
    ///
    /// A frame cut by the end of one buffer is assembled by copying, once
    /// the next buffer arrives: its bytes (and only its bytes) go to the
    /// internal read buffer, and decoding goes back to slicing the caller's
    /// buffers right after it. Size limits are checked on the header,
    /// before anything is copied.
    ///
    /// The input styles can be mixed at any point, even in the middle of
    /// a frame: bytes count in the order they were handed in. Calling
    /// [`Connection::recv_buf`] or [`Connection::feed`] while buffers from
    /// this method are still undecoded copies those into the read buffer
    /// first, so for zero copy poll events until `Ok(None)` before
    /// switching.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bytes::Bytes;
    /// use fabriq_zmtp::{Config, Connection, Event, SocketType};
    ///
    /// let now = Instant::now();
    /// let mut pull = Connection::new(Config::new(SocketType::Pull), now).unwrap();
    /// // A PUSH peer's greeting and READY, then two one-frame messages,
    /// // all in one received page.
    /// let mut wire = vec![0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1];
    /// wire.extend_from_slice(b"NULL");
    /// wire.resize(64, 0);
    /// wire.extend_from_slice(b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH");
    /// let at = wire.len();
    /// wire.extend_from_slice(b"\x00\x05hello\x00\x02hi");
    /// let page = Bytes::from(wire);
    ///
    /// pull.handle_input(page.clone(), now);
    /// assert_eq!(pull.poll_event(), Ok(Some(Event::HandshakeComplete)));
    /// let Ok(Some(Event::Message(m))) = pull.poll_event() else { panic!() };
    /// assert_eq!(&m[0][..], b"hello");
    /// assert_eq!(m[0].as_ptr(), page[at + 2..].as_ptr()); // a slice of the page
    /// assert!(matches!(pull.poll_event(), Ok(Some(Event::Message(_)))));
    /// assert_eq!(pull.poll_event(), Ok(None));
    /// ```
    pub fn handle_input(&mut self, data: Bytes, now: Instant) {
        if !data.is_empty() {
            self.owned.push_back(data);
        }
        self.input_received(now);
    }

    /// Moves undecoded [`Connection::handle_input`] buffers behind the read
    /// buffer's contents (a copy), before more bytes are appended there.
    fn take_owned_input(&mut self) {
        for data in self.owned.drain(..) {
            self.rx.extend_from_slice(&data);
            copies::count(Site::Gather, data.len());
        }
    }

    /// Received bytes not yet decoded, in both buffers.
    fn buffered(&self) -> usize {
        self.rx.len() + self.owned.iter().map(Bytes::len).sum::<usize>()
    }

    /// Tells the connection that the peer closed its side (end of stream),
    /// after every buffered event has been polled. Returns the
    /// [`ProtocolError::Truncated`] error if the stream stopped inside the
    /// greeting, the handshake, a frame or a multipart message, and `None`
    /// for a clean close between messages.
    pub fn end_of_input(&mut self) -> Option<ProtocolError> {
        let stage = match self.state {
            State::Failed(_) => return None,
            State::Greeting => "greeting",
            State::Handshake => "handshake",
            State::Active if self.buffered() > 0 => "frame",
            State::Active if !self.partial.is_empty() => "multipart message",
            State::Active => return None,
        };
        let error = ProtocolError::Truncated {
            stage,
            buffered: self.buffered(),
        };
        self.state = State::Failed(error.clone());
        Some(error)
    }
}
