//! The engine of a STREAM socket's connections: raw bytes, no ZMTP, as
//! libzmq's raw_engine.cpp. The connection is "handshaken" at once (its
//! peer has no identity, so the STREAM pattern generates one); the first
//! thing delivered is an empty message, the connect notice; each read is
//! one message; each message the socket queues is written as it is. When
//! the socket closes its side of the pipe (a `[id, ""]` message), what was
//! queued before is written and the connection is closed.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use fabriq_zmtp::{Part, PeerInfo, Properties, ProtocolError, SocketType, Version};

use super::{End, Engine, Input, Pulled, Reads, SocketWrites};
use crate::pipe::{Item, Queue};
use crate::topics::Topics;
use crate::transport::{Poller, Stream};

/// Bytes asked for per read.
const READ_SIZE: usize = 64 * 1024;
/// Pieces per vectored write.
const MAX_IOV: usize = 64;

/// Bytes taken from the pipe ahead of the wire: beyond this, messages
/// stay in the pipe, where its high-water mark counts them.
const TAKE_AHEAD: usize = 256 * 1024;

/// Why a STREAM connection ended when the application closed it: the
/// session then ends too, without reconnecting (libzmq terminates a raw
/// session whose pipe the socket closed).
#[derive(Debug)]
pub(super) struct ClosedByApplication;

impl std::fmt::Display for ClosedByApplication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("STREAM: closed by the application")
    }
}

impl std::error::Error for ClosedByApplication {}

/// Whether an I/O error is [`ClosedByApplication`].
pub(crate) fn closed_by_application(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<ClosedByApplication>())
}

#[derive(Debug)]
pub(crate) struct RawEngine {
    stream: Box<dyn Stream>,
    peer: PeerInfo,
    /// `Input::Handshake` was returned (the session made the pipe).
    started: bool,
    /// The connect notice was delivered.
    notified: bool,
    readable: bool,
    writable: bool,
    ended: Option<End>,
    rx: BytesMut,
    /// Data taken from the pipe and not written yet; `tx_off` of the
    /// first is written.
    tx: VecDeque<Bytes>,
    tx_off: usize,
    unsent: usize,
    /// What the socket's thread may write (`make.rs` decides it): a
    /// STREAM socket's is its full pipe, never each message.
    socket_writes: SocketWrites,
}

impl RawEngine {
    pub(crate) fn new(stream: Box<dyn Stream>, socket_writes: SocketWrites) -> RawEngine {
        RawEngine {
            socket_writes,
            stream,
            peer: PeerInfo {
                version: Version { major: 3, minor: 1 },
                socket_type: SocketType::Stream,
                identity: Bytes::new(),
                properties: Properties::new(),
                user_id: Bytes::new(),
                auth_metadata: Properties::new(),
            },
            started: false,
            notified: false,
            readable: true,
            writable: true,
            ended: None,
            rx: BytesMut::new(),
            tx: VecDeque::new(),
            tx_off: 0,
            unsent: 0,
        }
    }
}

impl Engine for RawEngine {
    fn ready(&mut self, readable: bool, writable: bool) {
        self.readable |= readable;
        self.writable |= writable;
    }

    fn read(&mut self, inbound: Option<&Queue>, reads: Reads, _now: Instant) -> (Input, usize) {
        if let Some(end) = self.ended.take() {
            return (Input::Ended(end), 0);
        }
        if !self.started {
            self.started = true;
            return (Input::Handshake, 0);
        }
        let Some(q) = inbound else {
            return (Input::Idle, 0);
        };
        let mut delivered = 0;
        if !self.notified {
            self.notified = true;
            q.push(Item::Msg([Part::new()].into_iter().collect()));
            delivered += 1;
        }
        let mut done = 0;
        loop {
            if !q.has_room() {
                return (Input::Full, delivered);
            }
            if !(self.readable || (reads.speculative && done == 0)) {
                return (Input::Idle, delivered);
            }
            if done == reads.max {
                return (Input::More, delivered);
            }
            done += 1;
            self.rx.reserve(READ_SIZE);
            match self.stream.read_into(&mut self.rx, READ_SIZE) {
                Ok(0) => return (Input::Ended(End::Eof), delivered),
                Ok(_) => {
                    self.readable = true;
                    let data = self.rx.split().freeze();
                    q.push(Item::Msg([Part::from(data)].into_iter().collect()));
                    delivered += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return (Input::Ended(End::Io(e)), delivered),
            }
        }
    }

    fn write(
        &mut self,
        outbound: Option<&Queue>,
        _subs: Option<&mut Topics>,
        _now: Instant,
    ) -> io::Result<()> {
        loop {
            if let Some(q) = outbound {
                while self.unsent < TAKE_AHEAD {
                    let Some(item) = q.pop() else { break };
                    if let Item::Msg(m) = item {
                        for frame in m {
                            self.unsent += frame.len();
                            self.tx.push_back(frame.into_bytes());
                        }
                    }
                }
            }
            if self.tx.is_empty() {
                break;
            }
            if !self.writable {
                return Ok(());
            }
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let mut n = 0;
            for (i, b) in self.tx.iter().take(MAX_IOV).enumerate() {
                let from = if i == 0 { self.tx_off } else { 0 };
                slices[n] = IoSlice::new(&b[from..]);
                n += 1;
            }
            match self.stream.write_vectored(&slices[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(mut k) => {
                    self.unsent -= k;
                    while k > 0 {
                        let left = self.tx[0].len() - self.tx_off;
                        if k >= left {
                            k -= left;
                            self.tx.pop_front();
                            self.tx_off = 0;
                        } else {
                            self.tx_off += k;
                            k = 0;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        // Everything written: a pipe the socket closed ([id, ""]) closes
        // the connection.
        if outbound.is_some_and(Queue::is_finished) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                ClosedByApplication,
            ));
        }
        Ok(())
    }

    fn unsent(&self) -> usize {
        self.unsent
    }

    fn is_active(&self) -> bool {
        self.started && self.ended.is_none()
    }

    fn handshaken(&self) -> bool {
        self.started
    }

    fn peer(&self) -> Option<&PeerInfo> {
        self.started.then_some(&self.peer)
    }

    fn peer_address(&self) -> String {
        self.stream.peer_address()
    }

    fn subscribe(&mut self, _topic: &[u8]) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) -> Result<(), ProtocolError> {
        Ok(())
    }

    fn end_of_input(&mut self) -> Option<ProtocolError> {
        None
    }

    fn monitor_value(&self) -> u32 {
        self.stream.monitor_value()
    }

    fn deregister(&mut self, poller: &mut Poller<'_>) {
        self.stream.deregister(poller);
    }

    fn pull(&mut self, _inbound: &Queue, _now: Instant) -> Pulled {
        // Reads happen on the I/O thread only.
        Pulled::default()
    }

    fn output_ready(&mut self, _outbound: &Queue, _now: Instant) -> bool {
        false
    }

    fn can_flush(&self) -> bool {
        self.socket_writes != SocketWrites::Never
    }

    /// Writes what the wire takes on the socket's thread (a STREAM socket
    /// whose pipe to this peer is full). An error ends the connection at
    /// the session's next read.
    fn flush(&mut self, outbound: &Queue, now: Instant) -> bool {
        if !self.is_active() || !self.writable {
            return false;
        }
        if let Err(e) = self.write(Some(outbound), None, now) {
            self.ended = Some(End::Io(e));
            return false;
        }
        true
    }
}
