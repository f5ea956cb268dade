//! Output: what the socket sends (messages, its own commands,
//! subscriptions), sealed where the mechanism says, and the transmit
//! queue's views.

use bytes::{BufMut, Bytes, BytesMut};

use crate::command::Command;
use crate::encoder::Encoder;
use crate::error::{ProtocolError, UsageError};
use crate::frame::Frame;
use crate::greeting::{Version, OUR_VERSION};
use crate::part::Part;
use crate::socket_type::SocketType;

use super::{Connection, State};

impl Connection {
    fn check_sendable(&self) -> Result<(), UsageError> {
        match self.state {
            State::Active => Ok(()),
            State::Failed(_) => Err(UsageError::Closed),
            _ => Err(UsageError::NotReady),
        }
    }

    /// Queues a message (all its frames).
    ///
    /// Fails with [`UsageError::NotReady`] before the handshake, with
    /// [`UsageError::Closed`] once the connection has failed, and with
    /// [`UsageError::EmptyMessage`] for no frames. If the mechanism cannot
    /// seal a frame the connection fails ([`Connection::poll_event`] then
    /// says why) and this returns [`UsageError::Closed`]; frames of the
    /// message queued before that may still be written, as with any
    /// connection that dies mid-message.
    pub fn send(&mut self, parts: &[Part]) -> Result<(), UsageError> {
        self.check_sendable()?;
        let (last, rest) = parts.split_last().ok_or(UsageError::EmptyMessage)?;
        for part in rest {
            let queued = self.queue_data(part, true);
            self.or_close(queued)?;
        }
        let queued = self.queue_data(last, false);
        self.or_close(queued)
    }

    /// Queues one data frame after the handshake, sealed if the mechanism
    /// transforms frames.
    #[inline]
    fn queue_data(&mut self, body: &Part, more: bool) -> Result<(), ProtocolError> {
        if self.sealing {
            self.seal_and_queue(Frame {
                more,
                command: false,
                data: body.to_bytes(),
            })
        } else {
            self.tx.push_frame(body, more);
            Ok(())
        }
    }

    /// Queues one command after the handshake, sealed if the mechanism
    /// transforms frames. (Handshake commands are the mechanism's own and
    /// go out as they are.)
    #[inline]
    pub(super) fn queue_command(&mut self, cmd: &Command) -> Result<(), ProtocolError> {
        if self.sealing {
            let mut body = BytesMut::with_capacity(cmd.encoded_len());
            cmd.encode(&mut body);
            self.seal_and_queue(Frame {
                more: false,
                command: true,
                data: body.freeze(),
            })
        } else {
            self.tx.push_command(cmd);
            Ok(())
        }
    }

    /// The one place where [`Mechanism::seal`](crate::mechanism::Mechanism::seal) is called.
    fn seal_and_queue(&mut self, plain: Frame) -> Result<(), ProtocolError> {
        let wire = self.mechanism.seal(plain)?;
        self.tx.push_wire(&wire);
        Ok(())
    }

    /// A local sealing failure ends the connection; the caller sees
    /// [`UsageError::Closed`] and `poll_event` the reason.
    fn or_close(&mut self, queued: Result<(), ProtocolError>) -> Result<(), UsageError> {
        queued.map_err(|e| {
            self.fail(e);
            UsageError::Closed
        })
    }

    /// Queues a command of the caller's own (see [`Event::Command`](super::Event::Command)), after
    /// the handshake. The names this crate speaks itself (READY, ERROR,
    /// SUBSCRIBE, CANCEL, PING, PONG) and those of the security mechanisms
    /// are refused with [`UsageError::ReservedCommand`], as is a name longer
    /// than 255 bytes.
    pub fn send_command(&mut self, name: &[u8], body: Bytes) -> Result<(), UsageError> {
        const RESERVED: [&[u8]; 12] = [
            b"READY",
            b"ERROR",
            b"SUBSCRIBE",
            b"CANCEL",
            b"PING",
            b"PONG",
            b"HELLO",
            b"WELCOME",
            b"INITIATE",
            b"MESSAGE",
            b"JOIN",
            b"LEAVE",
        ];
        if name.is_empty()
            || name.len() > 255
            || RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
        {
            return Err(UsageError::ReservedCommand);
        }
        self.check_sendable()?;
        let cmd = Command::Other {
            name: Bytes::copy_from_slice(name),
            body,
        };
        let queued = self.queue_command(&cmd);
        self.or_close(queued)
    }

    /// Queues a subscription: a SUBSCRIBE command to a ZMTP 3.1 peer, the
    /// 3.0 `0x01 + topic` frame to a 3.0 peer.
    pub fn subscribe(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.subscription(topic, true)
    }

    /// Queues a cancellation, in the form the peer's version expects.
    pub fn cancel(&mut self, topic: &[u8]) -> Result<(), UsageError> {
        self.subscription(topic, false)
    }

    fn subscription(&mut self, topic: &[u8], subscribe: bool) -> Result<(), UsageError> {
        self.check_sendable()?;
        let topic = Bytes::copy_from_slice(topic);
        if self.config.socket_type == SocketType::Dish {
            // libzmq's DISH sends JOIN/LEAVE commands whatever the peer's
            // version (there is no 3.0 form).
            let cmd = if subscribe {
                Command::Join(topic)
            } else {
                Command::Leave(topic)
            };
            let queued = self.queue_command(&cmd);
            return self.or_close(queued);
        }
        if self.peer_version().has_commands_3_1() {
            let cmd = if subscribe {
                Command::Subscribe(topic)
            } else {
                Command::Cancel(topic)
            };
            let queued = self.queue_command(&cmd);
            self.or_close(queued)
        } else {
            let mut frame = BytesMut::with_capacity(topic.len() + 1);
            frame.extend_from_slice(&[u8::from(subscribe)]);
            frame.extend_from_slice(&topic);
            let queued = self.queue_data(&Part::from(frame.freeze()), false);
            self.or_close(queued)
        }
    }

    /// The negotiated version (ours until the peer's greeting is in).
    pub(super) fn peer_version(&self) -> Version {
        self.version.unwrap_or(OUR_VERSION)
    }

    /// Bytes waiting to be written, as pieces for a vectored write.
    pub fn pending(&self) -> &Encoder {
        &self.tx
    }

    /// Drops `n` bytes that the transport has written.
    pub fn advance_tx(&mut self, n: usize) {
        self.tx.advance(n);
    }

    /// Takes the next whole piece of output, for transports that move
    /// owned buffers.
    pub fn pop_tx_chunk(&mut self) -> Option<Bytes> {
        self.tx.pop_chunk()
    }

    /// Moves up to `max` bytes of pending output (greeting, commands,
    /// frames, in order) into `buf`, never more than `buf` has room for
    /// (`BufMut::remaining_mut`), and returns how many. `0` means nothing
    /// is pending, or no room. The bytes leave the same queue that
    /// [`Connection::pending`] shows and [`Connection::advance_tx`] and
    /// [`Connection::pop_tx_chunk`] consume, so the styles can be mixed:
    /// the stream is the same byte for byte. Every byte is copied, large
    /// bodies included; transports that can write from the connection's
    /// own buffers should prefer [`Connection::pending`].
    pub fn poll_transmit<B: BufMut + ?Sized>(&mut self, buf: &mut B, max: usize) -> usize {
        self.tx.copy_into(buf, max)
    }

    /// Fills `out` (say, a registered page of fixed size) with pending
    /// output and returns how many bytes were written at its start: all
    /// of `out` unless less was pending. The same as
    /// [`Connection::poll_transmit`] with `out` as the buffer.
    ///
    /// ```
    /// use std::time::Instant;
    /// use fabriq_zmtp::{Config, Connection, SocketType};
    ///
    /// let mut conn = Connection::new(Config::new(SocketType::Push), Instant::now()).unwrap();
    /// let mut page = [0u8; 48];
    /// let mut stream = Vec::new();
    /// loop {
    ///     let n = conn.encode_into(&mut page);
    ///     if n == 0 {
    ///         break;
    ///     }
    ///     stream.extend_from_slice(&page[..n]); // post the page
    /// }
    /// assert_eq!(stream.len(), 64); // the greeting, in two pages
    /// assert!(conn.pending().is_empty());
    /// ```
    pub fn encode_into(&mut self, out: &mut [u8]) -> usize {
        let mut dst = out;
        self.tx.copy_into(&mut dst, usize::MAX)
    }
}
