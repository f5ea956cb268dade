//! Socket monitoring: events in libzmq's numbering and frame format,
//! delivered to a PAIR socket connected to an inproc endpoint.
//!
//! Each event is a two-frame message: 6 bytes (event number as u16 and
//! value as u32, both little endian, as libzmq writes them on x86) and the
//! endpoint the event concerns.

use std::sync::{Arc, Mutex};

use bytes::{BufMut, BytesMut};
use fabriq_zmtp::{Multipart, ProtocolError};

use crate::pipe::{Item, PipeEnd};
use crate::signal::Signal;

/// Socket monitor events, with libzmq's numbers.
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketEvent {
    /// A connect succeeded.
    CONNECTED = 0x0001,
    /// A connect is in progress.
    CONNECT_DELAYED = 0x0002,
    /// A reconnect is scheduled (value: the interval in ms).
    CONNECT_RETRIED = 0x0004,
    /// A bind succeeded.
    LISTENING = 0x0008,
    /// A bind failed.
    BIND_FAILED = 0x0010,
    /// A connection was accepted.
    ACCEPTED = 0x0020,
    /// An accept failed.
    ACCEPT_FAILED = 0x0040,
    /// A listener was closed.
    CLOSED = 0x0080,
    /// Closing failed.
    CLOSE_FAILED = 0x0100,
    /// A connection ended.
    DISCONNECTED = 0x0200,
    /// Monitoring stopped.
    MONITOR_STOPPED = 0x0400,
    /// A handshake failed without detail (value: errno).
    HANDSHAKE_FAILED_NO_DETAIL = 0x0800,
    /// A ZMTP handshake succeeded.
    HANDSHAKE_SUCCEEDED = 0x1000,
    /// A handshake failed on a protocol error (value: the error code).
    HANDSHAKE_FAILED_PROTOCOL = 0x2000,
    /// A handshake failed authentication.
    HANDSHAKE_FAILED_AUTH = 0x4000,
    /// Every event.
    ALL = 0xFFFF,
}

impl SocketEvent {
    /// The event number.
    pub fn to_raw(self) -> u16 {
        self as u16
    }

    /// The event for a number (`ALL` for unknown numbers).
    pub fn from_raw(raw: u16) -> SocketEvent {
        use SocketEvent::*;
        [
            CONNECTED,
            CONNECT_DELAYED,
            CONNECT_RETRIED,
            LISTENING,
            BIND_FAILED,
            ACCEPTED,
            ACCEPT_FAILED,
            CLOSED,
            CLOSE_FAILED,
            DISCONNECTED,
            MONITOR_STOPPED,
            HANDSHAKE_FAILED_NO_DETAIL,
            HANDSHAKE_SUCCEEDED,
            HANDSHAKE_FAILED_PROTOCOL,
            HANDSHAKE_FAILED_AUTH,
        ]
        .into_iter()
        .find(|e| e.to_raw() == raw)
        .unwrap_or(ALL)
    }
}

/// The events, with libzmq's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub(crate) enum Event {
    Connected = 0x1,
    ConnectDelayed = 0x2,
    ConnectRetried = 0x4,
    Listening = 0x8,
    BindFailed = 0x10,
    Accepted = 0x20,
    AcceptFailed = 0x40,
    Closed = 0x80,
    Disconnected = 0x200,
    MonitorStopped = 0x400,
    HandshakeFailedNoDetail = 0x800,
    HandshakeSucceeded = 0x1000,
    HandshakeFailedProtocol = 0x2000,
    HandshakeFailedAuth = 0x4000,
}

/// The event and value libzmq reports for a failed handshake.
pub(crate) fn handshake_failure(e: &ProtocolError) -> (Event, u32) {
    use ProtocolError::*;
    let code = match e {
        // The peer closed before the handshake was done: libzmq's
        // tcp_read turns the end of stream into EPIPE, which its engine
        // reports (test_security_zap's handlers that never answer).
        Truncated { stage, .. } if matches!(*stage, "greeting" | "handshake") => {
            return (Event::HandshakeFailedNoDetail, libc::EPIPE as u32);
        }
        BadSignature { .. }
        | UnsupportedVersion { .. }
        | BadAsServer(_)
        | Truncated { .. }
        | HandshakeTimeout => {
            return (Event::HandshakeFailedNoDetail, libc::EPROTO as u32);
        }
        AuthFailed { status, .. } | PeerRefusedAuth { status } => {
            return (Event::HandshakeFailedAuth, u32::from(*status));
        }
        NoAuthenticator(_) => return (Event::HandshakeFailedNoDetail, libc::EFAULT as u32),
        UnknownMechanism(_) | MechanismMismatch { .. } | MechanismNotSupported(_) => 0x1100_0002,
        Cryptographic(_) => 0x1100_0001,
        BadNonce { .. } => 0x1000_0002,
        NonceExhausted => 0x1000_0000,
        UnexpectedCommand(_) | DataBeforeHandshake | MultipartCommand => 0x1000_0001,
        MalformedCommand { command, .. } if command == "READY" => 0x1000_0016,
        MalformedCommand { command, .. } if command == "ERROR" => 0x1000_0015,
        MalformedCommand { .. } => 0x1000_0011,
        MalformedProperty(_)
        | MissingSocketType
        | UnknownSocketType(_)
        | IncompatibleSocketType { .. }
        | IdentityTooLong(_) => 0x1000_0018,
        PeerError(_) | FrameTooLarge { .. } | HeartbeatExpired(_) => 0x1000_0000,
    };
    (Event::HandshakeFailedProtocol, code)
}

/// Where a socket's events go: the pipes of PAIR sockets connected to the
/// monitor endpoint.
#[derive(Debug)]
pub(crate) struct Sink {
    pub signal: Arc<Signal>,
    pipes: Mutex<Vec<PipeEnd>>,
}

impl Sink {
    /// A sink with no watcher yet.
    pub(crate) fn new() -> std::io::Result<Sink> {
        Ok(Sink {
            signal: Arc::new(Signal::new()?),
            pipes: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn attach(&self, end: PipeEnd) {
        self.pipes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(end);
    }

    fn send(&self, msg: Multipart) {
        let mut pipes = self.pipes.lock().unwrap_or_else(|p| p.into_inner());
        pipes.retain(|p| !p.is_dead());
        for p in pipes.iter() {
            // A monitor that does not keep up loses events, never blocks
            // the socket.
            if p.tx.has_room() {
                p.tx.push(Item::Msg(msg.clone()));
            }
        }
    }

    fn close(&self) {
        for p in self
            .pipes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            p.tx.close_writer();
        }
    }
}

/// A running monitor: where events go, which ones, and how to give its
/// endpoint back when it stops.
pub(crate) struct Active {
    pub sink: Arc<Sink>,
    pub mask: u32,
    /// Unbinds the monitor's inproc endpoint.
    pub release: Box<dyn FnOnce() + Send>,
}

impl std::fmt::Debug for Active {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Active(mask {:#x})", self.mask)
    }
}

/// A socket's monitor, if any.
#[derive(Debug, Default)]
pub(crate) struct MonitorSlot {
    active: Mutex<Option<Active>>,
}

impl MonitorSlot {
    /// Reports `event` about `endpoint` if the monitor wants it.
    pub(crate) fn emit(&self, event: Event, value: u32, endpoint: &str) {
        let active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = active.as_ref() {
            if a.mask & event as u32 != 0 {
                a.sink.send(frames(event, value, endpoint));
            }
        }
    }

    /// Starts sending events to `active` (after [`MonitorSlot::stop`]).
    pub(crate) fn start(&self, active: Active) {
        *self.active.lock().unwrap_or_else(|p| p.into_inner()) = Some(active);
    }

    /// Whether a monitor is running.
    pub(crate) fn is_active(&self) -> bool {
        self.active
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Ends monitoring with MONITOR_STOPPED.
    pub(crate) fn stop(&self) {
        let old = self.active.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(a) = old {
            if a.mask & Event::MonitorStopped as u32 != 0 {
                a.sink.send(frames(Event::MonitorStopped, 0, ""));
            }
            a.sink.close();
            (a.release)();
        }
    }
}

fn frames(event: Event, value: u32, endpoint: &str) -> Multipart {
    let mut head = BytesMut::with_capacity(6);
    head.put_u16_le(event as u16);
    head.put_u32_le(value);
    [
        fabriq_zmtp::Part::from(head.freeze()),
        fabriq_zmtp::Part::copy_from_slice(endpoint.as_bytes()),
    ]
    .into_iter()
    .collect()
}
