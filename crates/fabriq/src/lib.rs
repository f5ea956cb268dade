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

mod accept_filter;
mod chunked;
mod context;
mod endpoint;
mod error;
mod flags;
mod inproc;
#[cfg(all(test, not(loom)))]
mod interleave;
mod keys;
mod mailbox;
mod mechanism;
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
mod socket_type;
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
pub use flags::{DONTWAIT, SNDMORE};
pub use keys::{z85_decode, z85_encode, CurveKeyPair, DecodeError, EncodeError};
pub use mechanism::Mechanism;
pub use message::{Message, GROUP_MAX_LENGTH};
pub use monitor::SocketEvent;
pub use poll::{poll, PollEvents, PollItem, POLLERR, POLLIN, POLLOUT};
pub use proxy::{proxy, proxy_steerable, proxy_steerable_with_capture, proxy_with_capture};
pub use socket::{Sendable, Socket};
pub use socket_type::SocketType;
#[cfg(not(loom))]
pub use thread_safe::ThreadSafeSocket;
pub use SocketType::*;

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
