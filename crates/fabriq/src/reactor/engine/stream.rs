//! ZMTP over a byte stream (tcp, ipc): readiness, `read(2)` into the
//! protocol's buffer, vectored writes of the encoder's batches.

use std::io::{self, IoSlice};
use std::time::Instant;

use bytes::Bytes;

use fabriq_zmtp::{AuthReply, Connection, Event as ZEvent, PeerInfo, ProtocolError, UsageError};

use crate::pipe::{Item, Queue};
use crate::topics::Topics;
use crate::transport::{Poller, Stream};

use super::{record_subscription, Delivery, End, Engine, Input, Pulled, Reads, SocketWrites};

/// Reads the socket's thread may do before it hands the rest to the session.
const PULL_READS: usize = 4;
/// Pieces per vectored write.
const MAX_IOV: usize = 64;
/// Encoded bytes gathered before a write (opportunistic batching: a write
/// happens as soon as the pipe runs dry, this only caps a batch).
pub(crate) const MAX_BATCH: usize = 256 * 1024;

#[derive(Debug)]
pub(crate) struct StreamEngine {
    stream: Box<dyn Stream>,
    conn: Connection,
    handshaken: bool,
    /// The stream may have bytes to read (cleared on `WouldBlock`, and
    /// on a short read of a stream whose short reads drain it).
    readable: bool,
    /// The poller reported the peer's close or an error: read on until
    /// `WouldBlock` or the end, short reads or not.
    hung_up: bool,
    /// The stream may take bytes (cleared on `WouldBlock`).
    writable: bool,
    /// How the socket's thread found the connection ended.
    ended: Option<End>,
    /// What the socket's thread may write.
    socket_writes: SocketWrites,
    /// Keep the commands ZMTP leaves to the caller (`Event::Command`), for
    /// an engine that uses this one as its control channel.
    keep_commands: bool,
    commands: Vec<(Bytes, Bytes)>,
    /// Items decoded by the current read, not yet pushed to the inbound
    /// queue (see [`Queue::push_all`]); empty between reads.
    decoded: Vec<Item>,
}

impl StreamEngine {
    /// An engine for a connected, registered stream, starting the ZMTP
    /// greeting now.
    pub(crate) fn new(
        stream: Box<dyn Stream>,
        conn: Connection,
        socket_writes: SocketWrites,
    ) -> Self {
        StreamEngine {
            stream,
            conn,
            handshaken: false,
            readable: true,
            hung_up: false,
            writable: true,
            ended: None,
            socket_writes,
            keep_commands: false,
            commands: Vec::new(),
            decoded: Vec::new(),
        }
    }

    /// Keeps the commands ZMTP leaves to the caller for
    /// [`StreamEngine::take_commands`] (otherwise they are ignored, as
    /// libzmq ignores unknown commands).
    pub(crate) fn keep_commands(&mut self, keep: bool) {
        self.keep_commands = keep;
    }

    /// The commands kept since the last call.
    pub(crate) fn take_commands(&mut self) -> Vec<(Bytes, Bytes)> {
        std::mem::take(&mut self.commands)
    }

    /// Queues a command of the caller's own on the connection.
    pub(crate) fn send_command(
        &mut self,
        name: &[u8],
        body: Bytes,
    ) -> Result<(), fabriq_zmtp::UsageError> {
        self.conn.send_command(name, body)
    }
}

impl Engine for StreamEngine {
    fn ready(&mut self, readable: bool, writable: bool) {
        self.readable |= readable;
        self.writable |= writable;
    }

    fn hung_up(&mut self) {
        self.hung_up = true;
        self.readable = true;
    }

    /// Reads, decodes and delivers until the stream would block, the
    /// queue is full, the handshake completes, or `reads` are done.
    ///
    /// A conflating queue gets only the newest message of what one read
    /// decoded, as libzmq conflates per read batch: pushing each one would
    /// wake the socket at the first and let it take messages while the
    /// rest are still being decoded.
    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, now: Instant) -> (Input, usize) {
        if let Some(end) = self.ended.take() {
            return (Input::Ended(end), 0);
        }
        let mut delivered = 0;
        let mut done = 0;
        loop {
            // First what is already decoded.
            let mut out = inbound.map(|q| Delivery::new(q, &mut self.decoded));
            let stop = loop {
                if let Some(out) = out.as_mut().filter(|_| self.handshaken) {
                    if !out.has_room() {
                        break Some(Input::Full);
                    }
                }
                let item = match self.conn.poll_event() {
                    Ok(None) => break None,
                    Ok(Some(ZEvent::HandshakeComplete)) => {
                        self.handshaken = true;
                        break Some(Input::Handshake);
                    }
                    Ok(Some(ZEvent::Message(m))) => Item::Msg(m),
                    Ok(Some(ZEvent::Subscribe(t))) => Item::Subscribe(t),
                    Ok(Some(ZEvent::Cancel(t))) => Item::Cancel(t),
                    Ok(Some(ZEvent::Command { name, body })) => {
                        if self.keep_commands {
                            self.commands.push((name, body));
                        }
                        continue;
                    }
                    Ok(Some(ZEvent::AuthRequest(r))) => break Some(Input::Auth(r)),
                    Err(e) => break Some(Input::Ended(End::Protocol(e))),
                };
                if let Some(out) = out.as_mut() {
                    out.push(item);
                }
            };
            delivered += out.map_or(0, Delivery::finish);
            if let Some(input) = stop {
                return (input, delivered);
            }
            let may_read = self.readable || (reads.speculative && done == 0);
            if !may_read {
                return (Input::Idle, delivered);
            }
            if done == reads.max {
                return (Input::More, delivered);
            }
            done += 1;
            let want = self.conn.read_size();
            let buf = self.conn.recv_buf();
            let asked = want.min(buf.capacity() - buf.len());
            match self.stream.read_into(buf, want) {
                Ok(0) => return (Input::Ended(End::Eof), delivered),
                Ok(n) => {
                    // A short read took all the kernel had, and the next
                    // bytes will be reported anew: another read now would
                    // only say WouldBlock (one system call per wake-up
                    // saved; libzmq reads once per event too). Not after a
                    // hang-up: the close came with an event already seen.
                    self.readable = n == asked || self.hung_up || !self.stream.short_read_drains();
                    self.conn.input_received(now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Input::Ended(End::Io(e)), delivered),
            }
        }
    }

    /// Encodes what `outbound` holds, a batch at a time, and writes until
    /// everything is out or the stream would block.
    fn write(
        &mut self,
        outbound: Option<&Queue>,
        mut subs: Option<&mut Topics>,
        _now: Instant,
    ) -> io::Result<()> {
        let conn = &mut self.conn;
        if let Some(q) = outbound {
            encode_queued(conn, q, subs.as_deref_mut());
        }
        while !conn.pending().is_empty() && self.writable {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = conn.pending().io_slices(&mut slices);
            match self.stream.write_vectored(&slices[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(k) => conn.advance_tx(k),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            // Refill between writes, so a large backlog streams out.
            if conn.pending().len() < MAX_BATCH / 2 {
                if let Some(q) = outbound {
                    encode_queued(conn, q, subs.as_deref_mut());
                }
            }
        }
        Ok(())
    }

    fn unsent(&self) -> usize {
        self.conn.pending().len()
    }

    fn is_active(&self) -> bool {
        self.handshaken && self.ended.is_none()
    }

    fn handshaken(&self) -> bool {
        self.handshaken
    }

    fn peer(&self) -> Option<&PeerInfo> {
        self.conn.peer()
    }

    fn peer_address(&self) -> String {
        self.stream.peer_address()
    }

    fn subscribe(&mut self, topic: &[u8]) {
        let _ = self.conn.subscribe(topic);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), ProtocolError> {
        self.conn.handle_timeout(now)
    }

    fn end_of_input(&mut self) -> Option<ProtocolError> {
        self.conn.end_of_input()
    }

    fn auth_reply(&mut self, reply: AuthReply) -> Result<(), UsageError> {
        self.conn.auth_reply(reply)
    }

    fn monitor_value(&self) -> u32 {
        self.stream.monitor_value()
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        self.stream.deregister(poller);
    }

    fn pull(&mut self, inbound: &Queue, now: Instant) -> Pulled {
        if !self.is_active() || inbound.is_conflate() {
            return Pulled::default();
        }
        let unsent = self.unsent();
        let reads = Reads {
            max: PULL_READS,
            speculative: true,
        };
        let (input, delivered) = self.read(Some(inbound), reads, now);
        let mut hand_over = match input {
            Input::Idle | Input::Full => false,
            // (No Auth here: this runs only after the handshake.)
            Input::More | Input::Handshake | Input::Auth(_) => true,
            Input::Ended(end) => {
                self.ended = Some(end);
                true
            }
        };
        // A PING read here queued a PONG: the session writes it.
        hand_over |= self.unsent() > unsent;
        Pulled {
            delivered,
            hand_over,
        }
    }

    fn output_ready(&mut self, outbound: &Queue, now: Instant) -> bool {
        if self.socket_writes != SocketWrites::WhenIdle || self.unsent() > 0 {
            return false;
        }
        self.write_here(outbound, now)
    }

    fn can_flush(&self) -> bool {
        self.socket_writes != SocketWrites::Never
    }

    fn flush(&mut self, outbound: &Queue, now: Instant) -> bool {
        if self.socket_writes == SocketWrites::Never {
            return false;
        }
        // Bytes still unsent go first, in order: `write` sends them before
        // it encodes more.
        self.write_here(outbound, now)
    }
}

impl StreamEngine {
    /// Writes on the socket's thread what the wire takes; false if the
    /// engine may not (not active, the wire full) or the write failed
    /// (then the session, woken by the caller, ends the connection).
    fn write_here(&mut self, outbound: &Queue, now: Instant) -> bool {
        if !self.is_active() || !self.writable {
            return false;
        }
        if let Err(e) = self.write(Some(outbound), None, now) {
            self.ended = Some(End::Io(e));
            return false;
        }
        // A write the stream did not take whole finishes when the session
        // sees the stream writable again.
        true
    }
}

/// Encodes what the socket has queued, up to one batch.
fn encode_queued(conn: &mut Connection, outbound: &Queue, mut subs: Option<&mut Topics>) {
    if !conn.is_ready() {
        return;
    }
    if conn.pending().len() >= MAX_BATCH {
        return;
    }
    outbound.pop_each(|item| {
        record_subscription(&item, subs.as_deref_mut());
        let sent = match item {
            Item::Msg(m) => conn.send(&m),
            Item::Subscribe(t) => conn.subscribe(&t),
            Item::Cancel(t) => conn.cancel(&t),
        };
        if let Err(e) = sent {
            tracing::debug!("dropped an outgoing message: {e}");
        }
        conn.pending().len() < MAX_BATCH
    });
}
