//! fabriq: ZeroMQ's messaging patterns over TCP, IPC and inproc, and over
//! RDMA fabrics through libfabric (`ofi+PROVIDER://`, a first cut: see
//! docs/fabric.md), with the API of the `zmq` crate and the ZMTP 3.x wire
//! protocol.
//!
//! `use fabriq as zmq;` is meant to be the whole migration:
//!
//! ```
//! use fabriq as zmq;
//!
//! let ctx = zmq::Context::new();
//! let publisher = ctx.socket(zmq::PUB).unwrap();
//! publisher.bind("inproc://weather").unwrap();
//! let subscriber = ctx.socket(zmq::SUB).unwrap();
//! subscriber.connect("inproc://weather").unwrap();
//! subscriber.set_subscribe(b"10001 ").unwrap();
//! // inproc subscriptions take effect when the publisher next sends.
//! publisher.send("10001 21C", 0).unwrap();
//! publisher.send("10001 22C", 0).unwrap();
//! assert_eq!(subscriber.recv_string(0).unwrap().unwrap(), "10001 21C");
//! ```
//!
//! Sockets talk to libzmq peers (pyzmq, czmq, the `zmq` crate) on `tcp://`
//! and `ipc://`. See `docs/api.md` for what differs from the zmq crate and
//! what is extra.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod context;
mod draft;
mod endpoint;
mod error;
mod inproc;
mod keys;
mod mailbox;
mod message;
mod monitor;
mod options;
mod pattern;
mod pipe;
mod poll;
mod proxy;
mod reactor;
mod security;
mod signal;
mod socket;
mod spin;
mod sync;
#[cfg(not(loom))]
mod thread_safe;
mod topics;
mod transport;
mod turns;
mod zap;

pub mod auth;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

#[cfg(all(feature = "tokio", not(loom)))]
pub mod asynchronous;

pub use context::Context;
pub use error::{last_error_detail, Error, Result};
/// Where message bytes are copied in user space, counted when fabriq is
/// built with the `copy-count` feature (the copy-budget test's; see
/// `docs/performance.md`, "The copy budget"). Without it [`copies::snapshot`] reads
/// zeros and counting costs nothing.
pub use fabriq_zmtp::copies;
pub use keys::{z85_decode, z85_encode, CurveKeyPair, DecodeError, EncodeError};
pub use message::{Message, GROUP_MAX_LENGTH};
pub use poll::{poll, PollEvents, PollItem, POLLERR, POLLIN, POLLOUT};
pub use proxy::{proxy, proxy_steerable, proxy_steerable_with_capture, proxy_with_capture};
pub use socket::{Sendable, Socket};
#[cfg(not(loom))]
pub use thread_safe::ThreadSafeSocket;

/// Send flag: do not block; fail with `EAGAIN` instead.
pub const DONTWAIT: i32 = 1;
/// Send flag: more frames of this message follow.
pub const SNDMORE: i32 = 2;

/// Socket types, named as in the zmq crate.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SocketType {
    /// Exclusive pair.
    PAIR,
    /// Publisher.
    PUB,
    /// Subscriber.
    SUB,
    /// Requester.
    REQ,
    /// Replier.
    REP,
    /// Asynchronous requester.
    DEALER,
    /// Asynchronous replier with routing.
    ROUTER,
    /// Pipeline sink.
    PULL,
    /// Pipeline source.
    PUSH,
    /// Publisher that sees subscriptions.
    XPUB,
    /// Subscriber with subscriptions as messages.
    XSUB,
    /// Raw TCP peers (tcp and ipc endpoints): messages are `[routing id,
    /// data]`, `[id, ""]` when a peer connects or goes away; sending
    /// `[id, data]` writes the bytes, `[id, ""]` closes the connection. See
    /// docs/api.md.
    ///
    /// ```
    /// use std::io::Write;
    ///
    /// let ctx = fabriq::Context::new();
    /// let stream = ctx.socket(fabriq::STREAM).unwrap();
    /// stream.set_rcvtimeo(5000).unwrap();
    /// stream.bind("tcp://127.0.0.1:*").unwrap();
    /// let endpoint = stream.get_last_endpoint().unwrap().unwrap();
    /// let mut peer = std::net::TcpStream::connect(&endpoint["tcp://".len()..]).unwrap();
    /// let notice = stream.recv_multipart(0).unwrap();
    /// assert!(notice[1].is_empty());
    /// peer.write_all(b"x").unwrap();
    /// assert_eq!(stream.recv_multipart(0).unwrap(), [notice[0].clone(), b"x".to_vec()]);
    /// ```
    STREAM,
    // ---- libzmq's draft socket types: extras, not in the zmq crate 0.10
    // (see docs/api.md, "Draft sockets"). All are single-part.
    /// Draft (extra): replies to CLIENTs by routing id
    /// ([`Message::routing_id`]).
    SERVER,
    /// Draft (extra): single-part requester, load-balanced over SERVERs.
    CLIENT,
    /// Draft (extra): publishes to the DISHes that joined a message's
    /// group ([`Message::set_group`]).
    RADIO,
    /// Draft (extra): receives the groups it joined ([`Socket::join`]).
    DISH,
    /// Draft (extra): single-part pipeline sink, fed by SCATTERs.
    GATHER,
    /// Draft (extra): single-part pipeline source, to GATHERs.
    SCATTER,
    /// Draft (extra): single-part exclusive pair.
    CHANNEL,
    /// Draft (extra): SERVER's routing in both directions, plus
    /// [`Socket::connect_peer`], which connects and returns the new peer's
    /// routing id. Talks to PEERs only.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let a = ctx.socket(fabriq::PEER).unwrap();
    /// a.set_rcvtimeo(5000).unwrap();
    /// a.bind("tcp://127.0.0.1:*").unwrap();
    /// let endpoint = a.get_last_endpoint().unwrap().unwrap();
    /// let b = ctx.socket(fabriq::PEER).unwrap();
    /// b.set_rcvtimeo(5000).unwrap();
    /// let to_a = b.connect_peer(&endpoint).unwrap();
    /// let mut hello = fabriq::Message::from("hello");
    /// hello.set_routing_id(to_a).unwrap();
    /// b.send(hello, 0).unwrap();
    /// let got = a.recv_msg(0).unwrap();
    /// let mut reply = fabriq::Message::from("hi");
    /// reply.set_routing_id(got.routing_id().unwrap()).unwrap();
    /// a.send(reply, 0).unwrap();
    /// assert_eq!(&b.recv_msg(0).unwrap()[..], b"hi");
    /// ```
    PEER,
    /// Draft (extra): raw UDP datagrams over `udp://` (bind only). Each
    /// message is two frames, the peer's `"IP:PORT"` (`"[IP]:PORT"` for
    /// IPv6, with the `ipv6` option) and the body; a send gives the address
    /// frame with `SNDMORE`. See docs/api.md.
    ///
    /// ```
    /// let ctx = fabriq::Context::new();
    /// let a = ctx.socket(fabriq::DGRAM).unwrap();
    /// a.set_rcvtimeo(5000).unwrap();
    /// a.bind("udp://127.0.0.1:0").unwrap();
    /// let at = a.get_last_endpoint().unwrap().unwrap();
    /// let b = ctx.socket(fabriq::DGRAM).unwrap();
    /// b.bind("udp://127.0.0.1:0").unwrap();
    /// b.send(&at["udp://".len()..], fabriq::SNDMORE).unwrap();
    /// b.send("ping", 0).unwrap();
    /// let from = a.recv_bytes(0).unwrap();
    /// assert!(from.starts_with(b"127.0.0.1:"));
    /// assert_eq!(a.recv_bytes(0).unwrap(), b"ping");
    /// ```
    DGRAM,
}

pub use SocketType::*;

impl SocketType {
    pub(crate) fn to_zmtp(self) -> Option<fabriq_zmtp::SocketType> {
        use fabriq_zmtp::SocketType as Z;
        Some(match self {
            PAIR => Z::Pair,
            PUB => Z::Pub,
            SUB => Z::Sub,
            REQ => Z::Req,
            REP => Z::Rep,
            DEALER => Z::Dealer,
            ROUTER => Z::Router,
            PULL => Z::Pull,
            PUSH => Z::Push,
            XPUB => Z::XPub,
            XSUB => Z::XSub,
            SERVER => Z::Server,
            CLIENT => Z::Client,
            RADIO => Z::Radio,
            DISH => Z::Dish,
            GATHER => Z::Gather,
            SCATTER => Z::Scatter,
            CHANNEL => Z::Channel,
            PEER => Z::Peer,
            DGRAM => Z::Dgram,
            STREAM => Z::Stream,
        })
    }
}

impl From<fabriq_zmtp::SocketType> for SocketType {
    fn from(t: fabriq_zmtp::SocketType) -> Self {
        use fabriq_zmtp::SocketType as Z;
        match t {
            Z::Pair => PAIR,
            Z::Pub => PUB,
            Z::Sub => SUB,
            Z::Req => REQ,
            Z::Rep => REP,
            Z::Dealer => DEALER,
            Z::Router => ROUTER,
            Z::Pull => PULL,
            Z::Push => PUSH,
            Z::XPub => XPUB,
            Z::XSub => XSUB,
            Z::Stream => STREAM,
            Z::Server => SERVER,
            Z::Client => CLIENT,
            Z::Radio => RADIO,
            Z::Dish => DISH,
            Z::Gather => GATHER,
            Z::Scatter => SCATTER,
            Z::Channel => CHANNEL,
            Z::Peer => PEER,
            Z::Dgram => DGRAM,
        }
    }
}

/// Security mechanisms, named as in the zmq crate.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// No security.
    ZMQ_NULL,
    /// User name and password.
    ZMQ_PLAIN,
    /// CurveZMQ.
    ZMQ_CURVE,
    /// GSSAPI.
    ZMQ_GSSAPI,
}

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

/// The libzmq API level fabriq implements: (4, 3, 5).
pub fn version() -> (i32, i32, i32) {
    (4, 3, 5)
}

/// Whether a capability is available: `ipc`, `curve` and `plain` yes;
/// `pgm`, `tipc`, `norm`, `gssapi`, `draft` not in this release.
///
/// ```
/// assert_eq!(fabriq::has("curve"), Some(true));
/// assert_eq!(fabriq::has("gssapi"), Some(false));
/// ```
pub fn has(capability: &str) -> Option<bool> {
    Some(matches!(capability, "ipc" | "curve" | "plain"))
}
